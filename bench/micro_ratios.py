#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Print the primitive ratios the design asks for, from ONE bga-micro run.

Usage:
    bga-micro --benchmark_filter='^(counter_add_(percpu|atomic)|locktab_default_contended|bm_bitmap_next_zero_(auto|ext2))' \\
              --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true \\
              --benchmark_out=micro.json --benchmark_out_format=json
    bench/micro_ratios.py micro.json

Every figure is a ratio of two medians from the same file.  Throughput is
items_per_second (all threads, wall clock); the bitmap scans are compared
on time per scan.  The script reports PASS/FAIL beside each target; it is
not a test and exits 0 unless the file cannot be read.
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

    def ips(bench, t, arg=-1):
        b = med.get((bench, arg, t))
        return b.get("items_per_second") if b else None

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

    ratio("counter add at 2 threads, per-CPU / atomic", ips("counter_add_percpu", 2), ips("counter_add_atomic", 2), 3.0)
    # Issue 14 (rseq): present when the run included these benchmarks.
    if ips("counter_add_limited_percpu", 2):
        ratio("counter add at 1 thread, per-CPU / atomic", ips("counter_add_percpu", 1), ips("counter_add_atomic", 1), 1.5)
        ratio("counter add at 2 threads, per-CPU / atomic (issue 14)", ips("counter_add_percpu", 2),
              ips("counter_add_atomic", 2), 4.0)
        ratio("limited add far from limit, 2 threads, per-CPU / atomic", ips("counter_add_limited_percpu", 2),
              ips("counter_add_limited_atomic", 2), 3.0)
    ratio("default lock, contended, 64 threads / 2 threads", ips("locktab_default_contended", 64),
          ips("locktab_default_contended", 2), 0.8)
    for arg, desc in ((0, "full group, last bit free"), (1, "first half set"), (2, "half random")):
        ratio(f"next-zero scan, libext2fs time / ours ({desc})", ns("bm_bitmap_next_zero_ext2", arg),
              ns("bm_bitmap_next_zero_auto", arg), 2.0)
    print(f"{'ratio':58} {'value':>8} {'target':>8}")
    for what, r, target, verdict in rows:
        val = f"{r:8.2f}" if r is not None else "       -"
        print(f"{what:58} {val} {'>=' + format(target, 'g'):>8}  {verdict}")
    print()
    print("counter adds (items/s, median):")
    for t in (1, 2, 4, 16, 64):
        p, a, c = ips("counter_add_percpu", t), ips("counter_add_atomic", t), ips("counter_add_percpu_cas", t)
        if p and a:
            cas = f"  (CAS path {c / 1e6:7.1f} M/s, {c / a:5.2f})" if c else ""
            print(f"  {t:3} threads  per-CPU {p / 1e6:8.1f} M/s  atomic {a / 1e6:8.1f} M/s  ratio {p / a:5.2f}{cas}")
    for t in (1, 2):
        p, a, c = (ips("counter_add_limited_percpu", t), ips("counter_add_limited_atomic", t),
                   ips("counter_add_limited_percpu_cas", t))
        if p and a:
            cas = f"  (CAS path {c / 1e6:7.1f} M/s, {c / a:5.2f})" if c else ""
            print(f"  {t:3} threads  limited: per-CPU {p / 1e6:8.1f} M/s  atomic {a / 1e6:8.1f} M/s  ratio {p / a:5.2f}{cas}")
    print("locks, contended (items/s, median):")
    for kind in ("default", "fas", "mutex", "ticket", "mcs"):
        vals = [ips(f"locktab_{kind}_contended", t) for t in (1, 2, 4, 16, 64)]
        if any(vals):
            print(f"  {kind:8} " + "  ".join(f"{(v or 0) / 1e6:7.1f}M" for v in vals) + "   (1, 2, 4, 16, 64 threads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
