#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The house outside lib/ as callcycles.py checks lib/: no circle of files,
and no include or call up a layer, counting bench/, tests/, examples/ and tools/.

    scripts/treecycles.py [--known FILE] [ROOT]   # ROOT: the source tree (default: this one)

Reads the C sources and headers under ROOT's include/, lib/, bench/,
tests/, examples/ and tools/ (not the 0.1.0 headers of tests/abi, nor the
deliberate cycles of tests/cycles).  The layers, from the bottom up:

  0 include/                      the public headers
  1 lib/                          the library (callcycles.py checks inside it)
  2 tests/support/, bench/support/  what the programs share
  3 the rest of tests/, bench/, examples/, tools/: the programs

A file may include or call its own layer and those below it; an include
or a call into a higher layer is reported ("up: ...").

A unit is a source file with the headers of its stem in its folder
(scale_ctx.h with scale_ctx.c, as callcycles.py joins them); A depends on
B when A includes a header of B, or calls a function that B alone defines
(a function defined outside every static scope, or a static inline one
in a header, whose name only one file of the tree defines; main and the
library's bga_ names left out) and that A sees declared, in itself or in
a header of the tree it includes (a runtime that defines malloc for its
own program ties no caller of malloc to it).  Among the units of layers 2 and 3, every
circle (a strongly connected set of two or more units) is reported
("cycle: ..."), with what ties it.

--known FILE lists the circles that are there today and are to go, one a
line, its units joined by " <-> " in sorted order as the report writes
them ('#' starts a comment): those are reported as known and pass, a
circle not in the list fails, and so does a listed circle that is gone
(take it off the list), so that the list only shrinks.

Exits 1 when it reports anything but known circles, 0 otherwise.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import libgraph  # noqa: E402
import callcycles  # noqa: E402
from callcycles import sccs  # noqa: E402

TOPS = ("include", "lib", "bench", "tests", "examples", "tools")
SKIP = ("tests/abi/include-0.1.0", "tests/cycles", "tests/fuzz/corpus", "tests/fuzz/regress",
        "tests/fuzz/crashes", "tests/data")
SUPPORT = ("tests/support", "bench/support")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
NOT_TIES = {"main", "LLVMFuzzerTestOneInput", "LLVMFuzzerInitialize"}


def layer(path):
    top = path.split("/")[0]
    if top == "include":
        return 0
    if top == "lib":
        return 1
    if any(path.startswith(s + "/") for s in SUPPORT):
        return 2
    return 3


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
    edges, why = {}, {}

    def tie(a, b, what):
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
    return out, circles, len(outer)


def main(argv):
    args, known_path = argv[1:], None
    if args[:1] == ["--known"]:
        known_path, args = args[1], args[2:]
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    known = set()
    if known_path:
        for line in open(known_path, encoding="utf-8"):
            line = line.split("#", 1)[0].strip()
            if line:
                known.add(line)
    out, circles, n = check(root)
    bad = list(out)
    for c, lines in sorted(circles.items()):
        if c in known:
            print(f"treecycles: known cycle (to go): {c}")
        else:
            bad += ["cycle: " + c] + lines
    bad += [f"gone: {c} is no circle any more: take it off {known_path}" for c in sorted(known - set(circles))]
    for line in bad:
        print("treecycles: " + line, file=sys.stderr)
    if bad:
        return 1
    print(f"treecycles: {n} units outside lib/, no new circle ({len(known)} known), no include or call up a layer")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
