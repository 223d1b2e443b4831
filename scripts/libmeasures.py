#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""No comment line in lib/ quotes a measurement: a figure goes in
BENCHMARKS.md, with its command, commit and date, and the comment cites
its anchor (BENCHMARKS.md#bit-search) instead, so that a figure is
written once and goes stale in one place (CONTRIBUTING.md, DESIGN.md).

    scripts/libmeasures.py [SRCDIR]      # lib/ of the tree (default: this one)
    scripts/libmeasures.py --self-test   # a quoted figure must fail

A measurement is a number with a unit of time (ns, us, ms, seconds...),
of work (cycles, instructions), of throughput (ops/s, M/s, MB/s...), a
ratio (1.8x) or a percentage, in the text of a C comment of a .c or .h
file under lib/.  Hexadecimal (0x1f), code outside comments and string
literals are not read.  ALLOW lists the few lines that state such a
number but measure nothing (a dependency's own constant), by file and
text.  Prints each line found with its file and number, and exits 1 if
there is one.
"""
import os
import re
import sys
import tempfile

NUM = r"(?<![\w.])\d+(?:\.\d+)?"
MEASURE = re.compile(
    NUM + r"\s*(?:ns|us|µs|ms|sec|secs|seconds?|minutes?|cycles?|instructions?|insns?)\b"
    r"|" + NUM + r"\s*[xX×](?![\w])"
    r"|" + NUM + r"\s*%"
    r"|" + NUM + r"\s*[kMG]?\s*(?:ops|adds|allocs|frees|calls|B|iB)/s\b"
    r"|" + NUM + r"\s*(?:ops|adds|allocs|frees|calls) per (?:second|s)\b"
)

# (file under lib/, text of the line): a number with a unit that quotes
# no measurement of ours.
ALLOW = {
    ("lib/core/grow.c", "urcu-bp then sleeps in 10 ms steps"),  # liburcu's own poll step
}


def comments(text):
    """(line number, text) of each comment line; strings skipped."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end
            for k, part in enumerate(text[i + 2:end].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, end)
            i = end + 2
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append((line, text[i + 2:end]))
            i = end
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            if text[i] == "\n":
                line += 1
            i += 1
    return out


def scan(root):
    found = []
    lib = os.path.join(root, "lib")
    for d, dirs, files in os.walk(lib):
        dirs.sort()
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            for ln, t in comments(text):
                if MEASURE.search(t) and not any(rel == a and s in t for a, s in ALLOW):
                    found.append(f"{rel}:{ln}: {t.strip()}")
    return found


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "lib", "core"))
        good = ("/* Groups of 32768 blocks (BENCHMARKS.md#bit-search); 0x7f masks;\n"
                " * slot s at + 32 s. */\nconst char *f = \"12 ns\"; // x2 and 3 slots\n")
        bad = ("/* The scan takes 12.5 ns a word,\n * 3.4x the old one, 40% fewer misses */\n"
               "int x; // 210M ops/s at 8 threads\n")
        with open(os.path.join(tmp, "lib", "core", "good.c"), "w") as fh:
            fh.write(good)
        if scan(tmp):
            print("libmeasures: self-test: a line with no figure was reported:", scan(tmp))
            return 1
        with open(os.path.join(tmp, "lib", "core", "bad.c"), "w") as fh:
            fh.write(bad)
        got = [g.split(":")[1] for g in scan(tmp)]
        if got != ["1", "2", "3"]:
            print("libmeasures: self-test: expected lines 1, 2 and 3 of bad.c, got", scan(tmp))
            return 1
    print("libmeasures: self-test: a time, a ratio, a percentage and a rate in a comment fail; "
          "hex, strings and plain numbers pass")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    found = scan(root)
    for f in found:
        print(f"libmeasures: a measurement quoted in a comment (cite a BENCHMARKS.md anchor instead): {f}")
    if not found:
        print("libmeasures: no comment line in lib/ quotes a measurement")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
