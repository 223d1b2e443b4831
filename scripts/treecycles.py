#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The house outside lib/ as callcycles.py checks lib/: no circle of files,
no include or call up a layer, and none across or inside without leave,
counting bench/, tests/, examples/ and tools/.

    scripts/treecycles.py [--known FILE] [--reach FILE] [ROOT]   # ROOT: the source tree (default: this one)

Reads the C sources and headers under ROOT's include/, lib/, support/,
bench/, tests/, examples/ and tools/ (not the 0.1.0 headers of tests/abi,
nor the deliberate cycles of tests/cycles).  The layers, from the bottom up:

  0 include/                        the public headers
  1 lib/                            the library (callcycles.py checks inside it)
  2 support/                        what every folder of programs shares (the ext2 peer)
  3 tests/support/, bench/support/  what one folder's programs share
  4 the rest of tests/, bench/, examples/, tools/: the programs

A file may include or call its own layer and those below it; an include
or a call into a higher layer is reported ("up: ...").  Two more rules
hold between files, each file by its path:

  across  the folders of programs (bench/, tests/, examples/, tools/) are
          side by side: none includes or calls another's files, its
          support/ included; what two of them share lives in support/.
          tests/ alone may reach the others' files: it tests them.
  inside  bench/, examples/ and tools/ reach the library through its
          public headers (include/): an include of a header of lib/
          (quoted, or angled through an include path), or a call of a
          bga__ name, is reported.  tests/ may (white-box).

--reach FILE lists the exceptions, one a line, "FILE -> FILE" with the
reason after '#' ('#' at a line's start: a comment): an include of the
second by the first that the rule would report passes, and a file listed
with a header of lib/ may call bga__ names.  A listed pair that is no
longer there fails (take it off), so that the list only shrinks.

A unit is a source file with the headers of its stem in its folder
(scale_ctx.h with scale_ctx.c, as callcycles.py joins them); A depends on
B when A includes a header of B, or calls a function that B alone defines
(a function defined outside every static scope, or a static inline one
in a header, whose name only one file of the tree defines; main and the
library's bga_ names left out) and that A sees declared, in itself or in
a header of the tree it includes (a runtime that defines malloc for its
own program ties no caller of malloc to it).  Among the units of layers 2
to 4, every circle (a strongly connected set of two or more units) is
reported ("cycle: ..."), with what ties it.

--known FILE lists the circles that are there today and are to go, one a
line, its units joined by " <-> " in sorted order as the report writes
them ('#' starts a comment): those are reported as known and pass, a
circle not in the list fails, and so does a listed circle that is gone
(take it off the list), so that the list only shrinks.

Exits 1 when it reports anything but known circles and listed reaches,
0 otherwise.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import libgraph  # noqa: E402
import callcycles  # noqa: E402
from callcycles import sccs  # noqa: E402

TOPS = ("include", "lib", "support", "bench", "tests", "examples", "tools")
PROGRAMS = ("bench", "tests", "examples", "tools")  # side by side: none reaches another
PUBLIC_ONLY = ("bench", "examples", "tools")  # reach lib/ through include/ only
INTERNAL_CALL = re.compile(r"\bbga__\w+")
SKIP = ("tests/abi/include-0.1.0", "tests/cycles", "tests/fuzz/corpus", "tests/fuzz/regress",
        "tests/fuzz/crashes", "tests/data")
SUPPORT = ("tests/support", "bench/support")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ANGLED = re.compile(r'^\s*#\s*include\s+<([^>]+)>', re.M)
NOT_TIES = {"main", "LLVMFuzzerTestOneInput", "LLVMFuzzerInitialize"}


def layer(path):
    top = path.split("/")[0]
    if top == "include":
        return 0
    if top == "lib":
        return 1
    if top == "support":
        return 2
    if any(path.startswith(s + "/") for s in SUPPORT):
        return 3
    return 4


def reach(a, b):
    """Why an include or call of file b by file a needs leave, or None."""
    ta, tb = a.split("/")[0], b.split("/")[0]
    if ta in PROGRAMS and tb in PROGRAMS and ta != tb and ta != "tests":
        return "across"
    if ta in PUBLIC_ONLY and tb == "lib":
        return "inside"
    return None


def unit(path, files):
    """The unit a file counts in: callcycles.py's rule."""
    return callcycles.unit(path, files)[0]


def collect(root):
    files = {}
    for top in TOPS:
        for d, dirs, fs in os.walk(os.path.join(root, top)):
            rel = os.path.relpath(d, root).replace(os.sep, "/")
            if any(rel == s or rel.startswith(s + "/") for s in SKIP) or "/build" in "/" + rel:
                dirs[:] = []
                continue
            for f in sorted(fs):
                if f.endswith((".c", ".h", ".cc")):
                    p = f"{rel}/{f}"
                    with open(os.path.join(root, p), encoding="utf-8", errors="replace") as fh:
                        files[p] = fh.read()
    return files


def resolve(inc, src, files, bybase):
    here = os.path.normpath(os.path.join(os.path.dirname(src), inc)).replace(os.sep, "/")
    if here in files:
        return here
    cands = [f for f in bybase.get(os.path.basename(inc), []) if f.endswith("/" + inc) or "/" not in inc]
    if len(cands) > 1:  # the nearest: the same top folder, then the same program folder
        same = [c for c in cands if c.split("/")[0] == src.split("/")[0]]
        cands = same or cands
        if len(cands) > 1:
            near = [c for c in cands if os.path.dirname(c) == os.path.dirname(src)]
            cands = near or sorted(cands, key=lambda c: -len(os.path.commonprefix([c, src])))
    return cands[0] if cands else None


def declarations(text):
    """The names of the functions declared (a prototype ending in ';') at
    file scope."""
    out, depth = set(), 0
    for stmt in re.split(r"(?<=;)|(?<=\{)|(?<=\})", libgraph.strip(text)):
        if depth == 0 and stmt.rstrip().endswith(";"):
            h = re.sub(r"__attribute__\s*\(\(.*?\)\)", " ", stmt, flags=re.S)
            m = re.search(r"([A-Za-z_]\w*)\s*\([^;]*\)\s*;\s*$", h, flags=re.S)
            if m and m.group(1) not in libgraph.KEYWORDS:
                out.add(m.group(1))
        depth += stmt.count("{") - stmt.count("}")
    return out


def check(root):
    files = collect(root)
    bybase = {}
    for f in files:
        bybase.setdefault(os.path.basename(f), []).append(f)
    edges, why, reaches = {}, {}, {}

    def tie(a, b, what):
        kind = reach(a, b)
        if kind:
            reaches.setdefault((a, b), (kind, set()))[1].add(what)
        ua, ub = unit(a, files), unit(b, files)
        if ua == ub:
            return
        edges.setdefault(ua, set()).add(ub)
        why.setdefault((ua, ub), set()).add(what)
        edges.setdefault(ub, set())

    # includes
    for f, text in files.items():
        edges.setdefault(unit(f, files), set())
        for m in INCLUDE.finditer(text):
            g = resolve(m.group(1), f, files, bybase)
            if g:
                tie(f, g, f"includes {os.path.basename(g)}")
        # <counter_impl.h> through an include path is still lib/'s header
        if f.split("/")[0] in PUBLIC_ONLY:
            for m in ANGLED.finditer(text):
                libs = [g for g in bybase.get(os.path.basename(m.group(1)), [])
                        if g.startswith("lib/") and g.endswith("/" + m.group(1))]
                if len(libs) == 1:
                    tie(f, libs[0], f"includes <{m.group(1)}>")
    # calls: a name only one file defines (outside lib/ and include/: the
    # library's own calls are callcycles.py's)
    defs, bodies = {}, {}
    for f, text in files.items():
        if layer(f) < 2:
            continue
        fns = libgraph.functions(text)
        bodies[f] = fns
        for name, static, _, _ in fns:
            if name in NOT_TIES or name.startswith("bga_"):
                continue
            if static and not f.endswith(".h"):
                continue
            defs.setdefault(name, set()).add(f)
    owner = {n: next(iter(fs)) for n, fs in defs.items() if len(fs) == 1}
    # a call ties only through a declaration the caller sees: in itself or
    # in a header of the tree it includes (so a runtime that defines
    # malloc for its own program ties nobody else to it)
    declared = {f: declarations(text) for f, text in files.items()}
    for f, fns in bodies.items():
        local = {n for n, _, _, _ in fns}
        seen = set(declared[f])
        for m in INCLUDE.finditer(files[f]):
            g = resolve(m.group(1), f, files, bybase)
            if g:
                seen |= declared[g] | {n for n, _, _, _ in libgraph.functions(files[g])}
        for _, _, body, _ in fns:
            for c in set(libgraph.calls(body)):
                g = owner.get(c)
                if g and g != f and c not in local and c in seen:
                    tie(f, g, f"calls {c}")
    # a bga__ call in bench/, examples/ or tools/: reaching inside even
    # where the header that declares it came in some other way
    internal = {}
    for f, fns in bodies.items():
        if f.split("/")[0] in PUBLIC_ONLY:
            names = {n for _, _, body, _ in fns for n in libgraph.calls(body) if INTERNAL_CALL.match(n)}
            if names:
                internal[f] = names
    out = []
    for a in sorted(edges):
        for b in sorted(edges[a]):
            if layer(b) > layer(a):
                out.append(f"up: {a} -> {b}, a higher layer: {', '.join(sorted(why[(a, b)]))}")
    outer = {u for u in edges if layer(u) >= 2}
    sub = {u: {v for v in edges[u] if v in outer} for u in outer}
    circles = {}
    for comp in sccs(sub.keys(), sub):
        if len(comp) < 2:
            continue
        lines = []
        for a in comp:
            for b in comp:
                if (a, b) in why and b in sub[a]:
                    lines.append(f"  {a} -> {b}: {', '.join(sorted(why[(a, b)]))}")
        circles[" <-> ".join(sorted(comp))] = lines
    return out, circles, len(outer), reaches, internal


def read_list(path, sep):
    out = {}
    for line in open(path, encoding="utf-8"):
        if line.lstrip().startswith("#"):
            continue
        text, _, note = line.partition("#")
        text = text.strip()
        if text:
            out[text if sep is None else tuple(x.strip() for x in text.split(sep))] = note.strip()
    return out


def main(argv):
    args, known_path, reach_path = argv[1:], None, None
    while args[:1] in (["--known"], ["--reach"]):
        if args[0] == "--known":
            known_path = args[1]
        else:
            reach_path = args[1]
        args = args[2:]
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    known = set(read_list(known_path, None)) if known_path else set()
    allowed = read_list(reach_path, "->") if reach_path else {}
    out, circles, n, reaches, internal = check(root)
    bad = list(out)
    for c, lines in sorted(circles.items()):
        if c in known:
            print(f"treecycles: known cycle (to go): {c}")
        else:
            bad += ["cycle: " + c] + lines
    bad += [f"gone: {c} is no circle any more: take it off {known_path}" for c in sorted(known - set(circles))]
    for (a, b), (kind, what) in sorted(reaches.items()):
        if (a, b) not in allowed:
            bad.append(f"{kind}: {a} -> {b}: {', '.join(sorted(what))}"
                       + (" (a header of lib/: reach the library through include/)" if kind == "inside"
                          else " (what two folders share goes in support/)"))
    inside_ok = {a for (a, b) in allowed if b.startswith("lib/")}
    for f, names in sorted(internal.items()):
        if f not in inside_ok:
            bad.append(f"inside: {f} calls {', '.join(sorted(names))}, the library's internal names")
    bad += [f"gone: {a} -> {b} reaches no more: take it off {reach_path}" for (a, b) in sorted(set(allowed) - set(reaches))]
    for line in bad:
        print("treecycles: " + line, file=sys.stderr)
    if bad:
        return 1
    print(f"treecycles: {n} units outside lib/, no new circle ({len(known)} known), no include or call up a layer, "
          f"none across or inside but the {len(allowed)} listed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
