#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Find call cycles between the source files of a library (issue 15).

    scripts/callcycles.py OBJECT.o|DIRECTORY...

(a directory stands for every *.o below it)

Reads each object's symbol table with `nm`: the global functions it defines
(T) and the symbols it uses (U).  File A depends on file B when A uses a
function B defines.  Prints the dependency edges and every cycle (a
strongly connected set of two or more files, or a file that is part of a
loop), and exits 1 when there is one, 0 when the files form a DAG, 2 on bad
usage.  Only functions defined by the given objects count: libc, ck, urcu
and the like are not part of the graph.
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


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    objs = []
    for a in argv[1:]:
        if os.path.isdir(a):
            for root, _, files in os.walk(a):
                objs += [os.path.join(root, f) for f in sorted(files) if f.endswith(".o")]
        else:
            objs.append(a)
    if not objs:
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
    for f, us in uses.items():
        for u in us:
            g = owner.get(u)
            if g is not None and g != f:
                edges[f].add(g)
                why.setdefault((f, g), []).append(u)
    cycles = [c for c in sccs(edges.keys(), edges) if len(c) > 1]
    for f in sorted(edges):
        if edges[f]:
            print(f"{f} -> {', '.join(sorted(edges[f]))}")
    for c in cycles:
        print("cycle: " + " <-> ".join(c), file=sys.stderr)
        for f in c:
            for g in c:
                if (f, g) in why:
                    print(f"  {f} calls {g}: {', '.join(sorted(why[(f, g)]))}", file=sys.stderr)
    if cycles:
        return 1
    print(f"callcycles: {len(objs)} files, no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
