#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Print the primitive ratios the design asks for, from ONE bga-micro run.

Usage:
    bga-micro --benchmark_filter='^bm_bitmap_next_zero_(auto|ext2)' \\
              --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true \\
              --benchmark_out=micro.json --benchmark_out_format=json
    bench/report/micro_ratios.py micro.json

Every figure is a ratio of two medians from the same file.  Throughput is
items_per_second (all threads, wall clock); the bitmap scans are compared
on time per scan.  The script reports PASS/FAIL beside each target; it is
not a test and exits 0 unless the file cannot be read.  Counter modes and
lock kinds are compared by bga-lab (tools/lab), with verdicts.
"""

import json
import re
import sys

NAME = re.compile(r"^(?P<bench>[\w]+?)(?:/(?P<arg>\d+))?/real_time(?:/threads:(?P<t>\d+))?$")


def medians(path):
    with open(path) as f:
        doc = json.load(f)
    ctx = doc.get("context", {})
    if "counter_path" in ctx:
        print("counter: per-CPU path %s, CPU-id source %s" % (ctx["counter_path"], ctx.get("counter_cpu_source", "?")))
    med = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        m = NAME.match(b["run_name"] if "run_name" in b else b["name"])
        if not m:
            continue
        key = (m["bench"], int(m["arg"] or -1), int(m["t"] or 1))
        if b.get("run_type") == "aggregate" or key not in med:
            med[key] = b
    return med


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    med = medians(sys.argv[1])

    def ns(bench, arg, t=1):
        b = med.get((bench, arg, t))
        return b["real_time"] if b else None

    rows = []

    def ratio(what, num, den, target, higher=True):
        if num is None or den is None or den == 0:
            rows.append((what, None, target, "MISSING"))
            return
        r = num / den
        ok = r >= target if higher else r <= target
        rows.append((what, r, target, "PASS" if ok else "FAIL"))

    for arg, desc in ((0, "full group, last bit free"), (1, "first half set"), (2, "half random")):
        ratio(f"next-zero scan, libext2fs time / ours ({desc})", ns("bm_bitmap_next_zero_ext2", arg),
              ns("bm_bitmap_next_zero_auto", arg), 2.0)
    print(f"{'ratio':58} {'value':>8} {'target':>8}")
    for what, r, target, verdict in rows:
        val = f"{r:8.2f}" if r is not None else "       -"
        print(f"{what:58} {val} {'>=' + format(target, 'g'):>8}  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
