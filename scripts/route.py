#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Count the stays of a request's route through the library's files.

    scripts/route.py [--root lib] [--from bga_alloc --carry req] [--list]

The route: start in the function `--from` (bga_alloc), whose parameter
`--carry` (req) holds the request, and follow every call that passes the
request on: a call is on the route when one of its arguments names a
variable that carries the request (the parameter, a parameter that
received a carrier, a local assigned from one: `goal = req->goal`,
`ac.min = ...` makes `ac` one, each declarator of a list on its own; or
a local a call fills that was passed a carrier: `peek(vol, goal, &at)`
makes `at` one).  Calls are followed depth first, in the
order they are written; each function is followed once (a second call of
it is still a visit to its file, but is not followed again).  The route
is followed through the policy (lib/alloc) only: a call into a lower
layer (the group, window, counter and lock code) is one descent, a stay
in that file that is not followed further, as every request pays the
same descents.

A stay is a run of consecutive steps in one file: entering a function in
another file starts one, and so does coming back to the caller's file.
So `alloc.c -> search.c -> group.h -> search.c` is four stays.  The
count tells how often a reader of the route must change files.  Printed
beside it: the entries (stays begun by a call, not by a return: 3 in the
example), the policy's share of the stays, and the descents.  --list
prints the stays in order.

Reads the sources with scripts/libgraph.py (inline header functions
included; macros not expanded).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import libgraph  # noqa: E402

LEAF_LAYERS = ("base", "prim", "core", "persist", "inspect")


IDENT = re.compile(r"[A-Za-z_]\w*")


def expr_at(body, i):
    """The expression that starts at body[i]: up to the first `;`, or the
    first `,` or `)` outside brackets (so `a = x, b = f(a);` gives `x`)."""
    d, j = 0, i
    while j < len(body):
        c = body[j]
        if c in "([{":
            d += 1
        elif c in ")]}":
            if d == 0:
                break
            d -= 1
        elif c == ";" or (c == "," and d == 0):
            break
        j += 1
    return body[i:j]


def carriers(body, params):
    """The variables of body that carry the request, given the parameters
    that do: assigned from a carrier (`goal = req->goal`, each declarator
    of `a = x, b = f(a)` on its own, `ac.min = ...` makes `ac` one), or
    filled by a call that is passed a carrier (`f(vol, goal, &at)` makes
    `at` one)."""
    carry = set(params)
    # assignments and initialisations: NAME [.field...] = EXPR  (to a fixpoint)
    assigns = [(m.group(1), expr_at(body, m.end())) for m in
               re.finditer(r"\b([A-Za-z_]\w*)\b(?:\s*(?:\.|->)\s*\w+)*\s*=(?!=)\s*", body)]
    # out-parameters: &NAME among the arguments of a call
    outs = []
    for _, args in libgraph.call_sites(body):
        for a in args:
            m = re.match(r"\s*&\s*([A-Za-z_]\w*)\s*$", a)
            if m:
                outs.append((m.group(1), " ".join(x for x in args if x is not a)))
    changed = True
    while changed:
        changed = False
        for name, expr in assigns + outs:
            if name not in carry and carry & set(IDENT.findall(expr)):
                carry.add(name)
                changed = True
    return carry


ENTRIES = []


def route(lib, root_file, root, carry):
    steps = []
    seen = set()
    del ENTRIES[:]

    def visit(f, fn, tainted):
        if not steps or steps[-1][0] != f:
            ENTRIES.append(f)
        steps.append((f, fn))
        if (f, fn) in seen:
            return
        seen.add((f, fn))
        if f.split(os.sep)[0] in LEAF_LAYERS and len(steps) > 1:
            return
        body = lib.files[f][fn][1]
        names = lib.params[(f, fn)]
        carry_here = carriers(body, {names[i] for i in tainted if i < len(names) and names[i]})
        for c, args in libgraph.call_sites(body):
            g = lib.resolve(f, c)
            if g is None or (g == f and c == fn):
                continue
            hit = [i for i, a in enumerate(args) if carry_here & set(IDENT.findall(a))]
            if not hit:
                continue
            visit(g, c, hit)
            steps.append((f, fn))

    names = lib.params[(root_file, root)]
    visit(root_file, root, [names.index(carry)] if carry in names else [])
    stays = []
    for f, fn in steps:
        if not stays or stays[-1][0] != f:
            stays.append((f, [fn]))
        elif fn not in stays[-1][1]:
            stays[-1][1].append(fn)
    return stays


def main(argv):
    root, start, carry, show = "lib", "bga_alloc", "req", False
    it = iter(argv[1:])
    for a in it:
        if a == "--root":
            root = next(it)
        elif a == "--from":
            start = next(it)
        elif a == "--carry":
            carry = next(it)
        elif a == "--list":
            show = True
        else:
            print(__doc__.strip().splitlines()[2], file=sys.stderr)
            return 2
    lib = libgraph.Lib(root)
    owners = [f for f, fns in lib.files.items() if start in fns and (f.endswith(".h") or not fns[start][0])]
    if not owners:
        print(f"route: {start} is defined nowhere under {root}", file=sys.stderr)
        return 2
    stays = route(lib, owners[0], start, carry)
    if show:
        for i, (f, fns) in enumerate(stays, 1):
            print(f"{i:4} {f}: {', '.join(fns)}")
    policy = sum(1 for f, _ in stays if f.split(os.sep)[0] == "alloc")
    entries = len(ENTRIES)
    print(f"route of {start}: {len(stays)} stays ({policy} in lib/alloc, {len(stays) - policy} descents below it);"
          f" {entries} entries")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
