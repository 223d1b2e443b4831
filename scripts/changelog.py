#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""CHANGELOG.md is one line a change: the commit that made a change says
the rest, and how versions and the ABI are kept is docs/ABI.md's, not
the changelog's.

    scripts/changelog.py [SRCDIR]      # its CHANGELOG.md (default: this tree's)
    scripts/changelog.py --self-test   # an entry of two lines must fail

Checks that the text before the first version heading is at most INTRO
lines and points to docs/ABI.md, and that below it every line is blank, a
heading (## [VERSION], ### Added...), an entry of one line ("- ..."), or
one line of note right under a version heading; a line that continues an
entry fails.  Prints each line found with its number, and exits 1 if
there is one.
"""
import os
import re
import sys

INTRO = 15
VERSION = re.compile(r"^## \[[^\]]+\]")


def check(text):
    lines = text.split("\n")
    bad = []
    first = next((i for i, l in enumerate(lines) if VERSION.match(l)), None)
    if first is None:
        return ["no version heading (## [Unreleased], ## [0.1.0] - DATE)"]
    intro = lines[:first]
    if len([l for l in intro if l.strip()]) > INTRO:
        bad.append(f"1: the text before {lines[first]!r} is more than {INTRO} lines (the ABI policy is docs/ABI.md's)")
    if not any("docs/ABI.md" in l for l in intro):
        bad.append("1: the text before the first version does not point to docs/ABI.md")
    last = ""  # the last line that was not blank
    for n, l in enumerate(lines[first:], first + 1):
        entry = not l.strip() or l.startswith(("## ", "### ", "- "))
        note = VERSION.match(last) and not l.startswith((" ", "\t"))
        if not entry and not note:
            bad.append(f"{n}: not one line a change: {l.strip()[:80]}")
        if l.strip():
            last = l
    return bad


def self_test():
    good = ("# Changelog\n\nOne line a change; the ABI: `docs/ABI.md`.\n\n## [Unreleased]\n\n### Fixed\n\n"
            "- A fix.\n- Another.\n\n## [0.1.0] - 2026-12-01\n\nThe first release.\n\n### Added\n\n- All.\n")
    bad = good.replace("- A fix.\n", "- A fix,\n  said on two lines.\n")
    if check(good):
        print("changelog: self-test: a good changelog fails:", check(good))
        return 1
    if not check(bad) or not check(good.replace("`docs/ABI.md`", "below")):
        print("changelog: self-test: an entry of two lines, or no pointer to docs/ABI.md, passes")
        return 1
    print("changelog: self-test: an entry of two lines, or an intro without docs/ABI.md, fails")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    with open(os.path.join(root, "CHANGELOG.md"), encoding="utf-8") as fh:
        bad = check(fh.read())
    for b in bad:
        print(f"changelog: CHANGELOG.md:{b}")
    if not bad:
        print("changelog: CHANGELOG.md is one line a change, its ABI policy in docs/ABI.md")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
