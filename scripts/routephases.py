#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The route's phases are named once, in `enum bga_route_phase`
(lib/alloc/route.h), and the code and the map follow that enum:

  - lib/alloc/route.c marks where each phase begins with one comment
    `BGA_ROUTE_X:`, exactly once a phase;
  - inside each function that runs phases (route_once, route), the marks
    come in the enum's order;
  - lib/README.md's route paragraph names every phase (CHECK, EXACT, ...)
    in the enum's order.

So a phase added, dropped or moved in one place and not the others fails.

  scripts/routephases.py ROOT      exit 0, or 1 with what is out of step
  scripts/routephases.py --self-test
"""
import os
import re
import shutil
import sys
import tempfile


def enum_members(route_h):
    m = re.search(r"enum bga_route_phase\s*\{(.*?)\};", route_h, re.S)
    if not m:
        return None
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    return [x.strip().split("=")[0].strip() for x in body.split(",") if x.strip()]


def function_body(src, name):
    m = re.search(r"^static int\s+" + re.escape(name) + r"\(", src, re.M)
    if not m:
        return None
    end = src.find("\n}\n", m.end())
    return src[m.start():end if end >= 0 else len(src)]


def check(root):
    errs = []
    read = lambda p: open(os.path.join(root, p)).read()
    members = enum_members(read("lib/alloc/route.h"))
    if not members:
        return ["lib/alloc/route.h: no enum bga_route_phase"]
    rank = {m: i for i, m in enumerate(members)}
    route = read("lib/alloc/route.c")
    marks = re.findall(r"\b(BGA_ROUTE_[A-Z]+):", route)
    for m in members:
        n = marks.count(m)
        if n != 1:
            errs.append("lib/alloc/route.c: %s marked %d times (once, where the phase begins)" % (m, n))
    for m in set(marks) - set(members):
        errs.append("lib/alloc/route.c: %s: marked, but not in enum bga_route_phase" % m)
    for fn in ("route_once", "route"):
        body = function_body(route, fn)
        if body is None:
            errs.append("lib/alloc/route.c: no function %s" % fn)
            continue
        seq = [m for m in re.findall(r"\b(BGA_ROUTE_[A-Z]+):", body) if m in rank]
        if seq != sorted(seq, key=rank.get):
            errs.append("lib/alloc/route.c: %s marks %s, not in the enum's order" % (fn, " ".join(seq)))
    readme = read("lib/README.md")
    at = readme.find("enum bga_route_phase")
    if at < 0:
        errs.append("lib/README.md: the route paragraph does not name enum bga_route_phase")
    else:
        para = readme[at:readme.find("\n\n", at)]
        pos = -1
        for m in members:
            short = m[len("BGA_ROUTE_"):]
            p = para.find(short, pos + 1)
            if p < 0:
                errs.append("lib/README.md: the route paragraph names %s out of the enum's order, or not at all" % short)
            else:
                pos = p
    return errs


def self_test():
    """A copy of the tree whose route.c marks two phases out of order must
    fail, and so must one missing a phase; the tree itself must pass."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if check(root):
        print("routephases --self-test: the tree itself fails")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        for p in ("lib/alloc/route.h", "lib/alloc/route.c", "lib/README.md"):
            os.makedirs(os.path.join(tmp, os.path.dirname(p)), exist_ok=True)
            shutil.copy(os.path.join(root, p), os.path.join(tmp, p))
        sp = os.path.join(tmp, "lib/alloc/route.c")
        src = open(sp).read()
        swapped = src.replace("BGA_ROUTE_STEER:", "@@").replace("BGA_ROUTE_WALK:", "BGA_ROUTE_STEER:").replace("@@", "BGA_ROUTE_WALK:")
        open(sp, "w").write(swapped)
        if not any("not in the enum's order" in e for e in check(tmp)):
            print("routephases --self-test: two phases swapped in route_once went unseen")
            return 1
        open(sp, "w").write(src.replace("BGA_ROUTE_LOCAL:", "BGA_ROUTE_LOCAL -"))
        if not any("BGA_ROUTE_LOCAL marked 0 times" in e for e in check(tmp)):
            print("routephases --self-test: a phase without its mark went unseen")
            return 1
    print("routephases --self-test: a swapped and a missing phase both fail")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print("usage: scripts/routephases.py ROOT | --self-test", file=sys.stderr)
        return 2
    errs = check(sys.argv[1])
    for e in errs:
        print("routephases: " + e)
    if not errs:
        print("routephases: the route's phases follow enum bga_route_phase in route.c and lib/README.md")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
