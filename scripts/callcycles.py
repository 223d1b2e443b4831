#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Find call cycles between the source files of a library, and calls that
go up its layers.

    scripts/callcycles.py [--source ROOT [--layers L1,L2,...]] OBJECT.o|DIRECTORY...

(a directory stands for every *.o below it)

Reads each object's symbol table with `nm`: the global functions it defines
(T) and the symbols it uses (U).  File A depends on file B when A uses a
function B defines.  Only functions defined by the given objects count:
libc, ck, urcu and the like are not part of the graph.

--source ROOT also reads the sources under ROOT (scripts/libgraph.py), so
that the inline functions of headers count: a header is one file with the
.c file of its stem in the same folder (group.h with group.c,
counter_impl.h with counter.c), a file of its own otherwise (steer.h).

With --source, a header declares only what its own folder defines: a
prototype in a header whose function no file of the header's folder
defines is reported ("home: ...").

--layers names ROOT's folders from the bottom up: a file may call its own
layer and the layers below, and a call into a higher layer is reported
("up: ...").  A file outside every named folder is an error.

Prints the dependency edges, every cycle (a strongly connected set of two
or more files) and every upward call; exits 1 when there is one, 0 when
the files form a DAG that respects the layers, 2 on bad usage.
"""
import os
import subprocess
import sys


def symbols(obj):
    out = subprocess.run(["nm", "--defined-only", "-g", obj], capture_output=True, text=True, check=True).stdout
    defined = {line.split()[-1] for line in out.splitlines() if len(line.split()) == 3 and line.split()[1] in "TW"}
    out = subprocess.run(["nm", "-u", obj], capture_output=True, text=True, check=True).stdout
    used = {line.split()[-1] for line in out.splitlines() if line.strip()}
    return defined, used


def name(obj):
    base = os.path.basename(obj)
    return base[:-2] if base.endswith(".o") else base


def sccs(nodes, edges):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(root):
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        comp.append(x)
                        if x == v:
                            break
                    out.append(sorted(comp))
            elif w not in index:
                index[w] = low[w] = counter[0]
                counter[0] += 1
                stack.append(w)
                on.add(w)
                work.append((w, iter(sorted(edges[w]))))
            elif w in on:
                low[v] = min(low[v], index[w])

    for n in sorted(nodes):
        if n not in index:
            visit(n)
    return out


def unit(path, files=()):
    """The file a source path counts as: a header joins the .c of its stem
    when there is one."""
    d, f = os.path.split(path)
    if f.endswith(".h"):
        stem = f[:-2]
        if stem.endswith("_impl"):
            stem = stem[:-5]
        c = os.path.join(d, stem + ".c")
        if c in files:
            return c, path
    return path, path


def main(argv):
    source, layers, args = None, None, []
    it = iter(argv[1:])
    for a in it:
        if a == "--source":
            source = next(it, None)
        elif a == "--layers":
            layers = (next(it, None) or "").split(",")
        else:
            args.append(a)
    if (len(args) < 1 and source is None) or (layers and source is None):
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        return 2
    objs = []
    for a in args:
        if os.path.isdir(a):
            for root, _, files in os.walk(a):
                objs += [os.path.join(root, f) for f in sorted(files) if f.endswith(".o")]
        else:
            objs.append(a)
    if not objs and source is None:
        print("callcycles: no object files", file=sys.stderr)
        return 2
    defs, uses = {}, {}
    for o in objs:
        defs[name(o)], uses[name(o)] = symbols(o)
    owner = {}
    for f, ds in defs.items():
        for d in ds:
            owner[d] = f
    edges = {f: set() for f in defs}
    why = {}
    fixed = {}
    homeless = []
    if source is not None:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import libgraph
        lib = libgraph.Lib(source)
        homeless = lib.homeless()
        # objects are named by their file's base name; sources by their path
        byname = {}
        for f in lib.files:
            u = unit(f, lib.files)[0]
            byname.setdefault(os.path.basename(u), set()).add(u)
        fixed = {b: next(iter(us)) for b, us in byname.items() if len(us) == 1}
        edges = {fixed.get(f, f): set() for f in edges}
        for f in lib.files:
            edges.setdefault(unit(f, lib.files)[0], set())
        for (f, g), names in lib.edges().items():
            a, b = unit(f, lib.files)[0], unit(g, lib.files)[0]
            if a != b:
                edges[a].add(b)
                why.setdefault((a, b), []).extend(f"{n} ({os.path.basename(g)})" for n in sorted(names))
    for f, us in uses.items():
        for u in us:
            g = owner.get(u)
            if g is not None and g != f:
                a, b = fixed.get(f, f), fixed.get(g, g)
                edges.setdefault(a, set()).add(b)
                why.setdefault((a, b), []).append(u)
    cycles = [c for c in sccs(edges.keys(), edges) if len(c) > 1]
    up = []
    if layers:
        rank = {l: i for i, l in enumerate(layers)}

        def layer(f):
            top = f.split(os.sep)[0]
            if top not in rank:
                raise SystemExit(f"callcycles: {f} is in no layer of {','.join(layers)}")
            return rank[top]

        for f in sorted(edges):
            for g in sorted(edges[f]):
                if layer(g) > layer(f):
                    up.append((f, g))
    for f in sorted(edges):
        if edges[f]:
            print(f"{f} -> {', '.join(sorted(edges[f]))}")
    for c in cycles:
        print("cycle: " + " <-> ".join(c), file=sys.stderr)
        for f in c:
            for g in c:
                if (f, g) in why:
                    print(f"  {f} calls {g}: {', '.join(sorted(why[(f, g)]))}", file=sys.stderr)
    for f, g in up:
        print(f"up: {f} calls {g}, a higher layer: {', '.join(sorted(set(why[(f, g)])))}", file=sys.stderr)
    for h, nm, where in homeless:
        print(f"home: {h} declares {nm}, which {', '.join(where) if where else 'no file'} defines, "
              f"outside {os.path.dirname(h) or '.'}/", file=sys.stderr)
    if cycles or up or homeless:
        return 1
    print(f"callcycles: {len(edges)} files, no cycle" + (", no call up a layer" if layers else "")
          + (", every header's functions defined in its folder" if source is not None else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
