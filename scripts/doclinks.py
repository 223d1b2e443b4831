#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Every anchor the tree cites exists: a comment or a page that says
BENCHMARKS.md#bit-search or docs/HISTORY.md#locks must find that anchor
in that page, so that a heading renamed or moved breaks make test, not a
reader's search.

    scripts/doclinks.py [SRCDIR]          # the tree (default: this one)
    scripts/doclinks.py --self-test       # a cite that is wrong must fail

A page's anchors are its explicit ones (<a id="NAME"></a>) and the ids
GitHub derives from its headings (lower case, punctuation but - and _
dropped, spaces to -, -1, -2... after a repeat).  A cite is PAGE.md#NAME
anywhere in a text file that git tracks; PAGE is read from the source
tree's root, or, inside a page, also beside it (docs/FORMAT.md#... or
FORMAT.md#... from docs/).  A cite of BENCHMARKS.md by heading text
(BENCHMARKS.md, "Bit search"), the older form, must name a heading of
BENCHMARKS.md or docs/HISTORY.md.  Prints each broken cite with its file
and line, and exits 1 if there is one.
"""
import os
import re
import subprocess
import sys
import tempfile

CITE = re.compile(r"((?:[\w.-]+/)*[\w.-]+\.md)#([\w-]+)")
# BENCHMARKS.md, "Heading" (or without the comma), across comment lines
OLD = re.compile(r'BENCHMARKS\.md,?((?:\s|\*|#|//)+)"([^"]+)"')
ANCHOR = re.compile(r'<a id="([^"]+)"></a>')


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"<[^>]*>", "", s)
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    ids, seen, heads = set(), {}, set()
    in_code = False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        ids.update(ANCHOR.findall(line))
        m = re.match(r"^#{1,6} (.*?)\s*$", line)
        if m:
            heads.add(re.sub(r"\s+", " ", m.group(1)))
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            ids.add(base if n == 0 else f"{base}-{n}")
    return ids, heads


def tracked(root):
    try:
        out = subprocess.check_output(["git", "-C", root, "ls-files"], text=True, stderr=subprocess.DEVNULL)
        return [f for f in out.split("\n") if f]
    except (subprocess.CalledProcessError, FileNotFoundError):
        files = []
        for d, _, fs in os.walk(root):
            if "/build" in d or "/.git" in d:
                continue
            files += [os.path.relpath(os.path.join(d, f), root) for f in fs]
        return files


def check(root):
    cache = {}

    def page(rel):
        if rel not in cache:
            p = os.path.join(root, rel)
            cache[rel] = anchors(p) if os.path.isfile(p) else None
        return cache[rel]

    bad, ncites = [], 0
    for rel in tracked(root):
        if rel.startswith(("build/", "abi/")) or "/corpus/" in rel or "/regress/" in rel \
                or rel == "scripts/doclinks.py":  # its own examples
            continue
        path = os.path.join(root, rel)
        try:
            text = open(path, encoding="utf-8").read()
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue
        if ".md#" not in text and "BENCHMARKS.md" not in text:
            continue
        for m in CITE.finditer(text):
            target, name = m.group(1), m.group(2)
            line = text.count("\n", 0, m.start()) + 1
            cands = [target]
            if rel.endswith(".md"):
                cands.append(os.path.normpath(os.path.join(os.path.dirname(rel), target)))
            found = [page(c) for c in cands if page(c) is not None]
            if not found:
                continue  # a page outside the tree (an upstream project's)
            ncites += 1
            if not any(name in ids for ids, _ in found):
                bad.append(f"{rel}:{line}: {target}#{name}: no such anchor in {target}")
        for m in OLD.finditer(text):
            head = re.sub(r"(?:\s|\*|#|//)+", " ", m.group(2)).strip()
            line = text.count("\n", 0, m.start()) + 1
            ncites += 1
            heads = set()
            for p in ("BENCHMARKS.md", os.path.join("docs", "HISTORY.md")):
                if page(p):
                    heads |= page(p)[1]
            if not any(h == head or h.startswith(head) for h in heads):
                bad.append(f'{rel}:{line}: BENCHMARKS.md, "{head}": no such heading '
                           "(cite an anchor: BENCHMARKS.md#name)")
    return bad, ncites


def self_test():
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, "BENCHMARKS.md"), "w").write(
            "# B\n\n## Bit search\n\n<a id=\"kept\"></a>\n### Renamed, later\n")
        os.makedirs(os.path.join(d, "src"))
        open(os.path.join(d, "src", "ok.c"), "w").write(
            "/* BENCHMARKS.md#bit-search, BENCHMARKS.md#kept, BENCHMARKS.md#renamed-later,\n"
            " * (BENCHMARKS.md, \"Bit\n * search\") */\n")
        bad, n = check(d)
        assert not bad and n == 4, (bad, n)
        open(os.path.join(d, "src", "bad.c"), "w").write(
            "/* BENCHMARKS.md#bit-serch */\n/* (BENCHMARKS.md \"Volume creation\") */\n")
        bad, n = check(d)
        assert len(bad) == 2 and "bit-serch" in bad[0] and "Volume creation" in bad[1], bad
    print("doclinks: self-test: a good cite passes, a misspelt anchor and a missing heading fail")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bad, n = check(root)
    for b in bad:
        print("doclinks: " + b)
    if bad:
        return 1
    print(f"doclinks: {n} cited anchors, all found")
    return 0


if __name__ == "__main__":
    sys.exit(main())
