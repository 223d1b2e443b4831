#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Print the volume benchmark ratios the design asks for, from ONE run.

Usage:
    bga-bench --benchmark_repetitions=5 --benchmark_out=vol.json \
              --benchmark_out_format=json
    bench/report/volume_ratios.py vol.json

Every figure is a ratio of two medians (items_per_second over the
repetitions) taken from the same JSON file, so machine load that changes
between runs cannot enter it.  Without aggregates (repetitions 1) the single
run's value stands in for the median.  Each ratio is printed with its target
and PASS/FAIL: this script reports, it is not a test, and it exits 0 unless
the file cannot be read.
"""

import json
import re
import statistics
import sys

NAME = re.compile(r"^(?P<bench>\w+?)__(?P<var>bgalloc|baseline|ext2)/.*threads:(?P<t>\d+)$")


def load(path):
    """({(bench, variant, threads): median items_per_second},
    {(bench, variant, 1): median CPU ns per item})."""
    with open(path) as f:
        doc = json.load(f)
    medians, samples, cpu, cpu_samples = {}, {}, {}, {}
    for b in doc.get("benchmarks", []):
        m = NAME.match(b.get("run_name", b["name"]))
        if not m or b.get("error_occurred") or "items_per_second" not in b:
            continue
        key = (m["bench"], m["var"], int(m["t"]))
        # One thread's CPU time per item: immune to the time slices a
        # loaded machine steals, so it cross-checks single-thread ratios.
        per_item = None
        if key[2] == 1 and b.get("cpu_time") and b.get("real_time"):
            # seconds of CPU per item: (CPU time / wall time) / items per wall second
            per_item = b["cpu_time"] / b["real_time"] / b["items_per_second"]
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                medians[key] = b["items_per_second"]
                if per_item:
                    cpu[key] = per_item
        else:
            samples.setdefault(key, []).append(b["items_per_second"])
            if per_item:
                cpu_samples.setdefault(key, []).append(per_item)
    for key, v in samples.items():
        medians.setdefault(key, statistics.median(v))
    for key, v in cpu_samples.items():
        cpu.setdefault(key, statistics.median(v))
    return doc.get("context", {}), medians, cpu


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        ctx, med, cpu = load(argv[1])
    except (OSError, ValueError, KeyError) as e:
        print(f"{argv[1]}: {e}", file=sys.stderr)
        return 2

    def ips(bench, var, t):
        return med.get((bench, var, t))

    rows = []

    def ratio(label, num, den, op, target, cpu_keys=None):
        """num/den against target; op is '>=' or '<='.  cpu_keys: the
        (numerator, denominator) single-thread runs whose CPU-time ratio
        is shown beside it."""
        if num is None or den is None or den == 0:
            rows.append((label, None, op, target, "MISSING", None))
            return
        r = num / den
        ok = r >= target if op == ">=" else r <= target
        c = None
        if cpu_keys and cpu.get(cpu_keys[0]) and cpu.get(cpu_keys[1]):
            c = cpu[cpu_keys[1]] / cpu[cpu_keys[0]]
        rows.append((label, r, op, target, "PASS" if ok else "FAIL", c))

    for fill in ("empty", "half"):
        b = f"churn_{fill}"
        ratio(f"churn {fill:5} 1 thr: bgalloc / libext2fs",
              ips(b, "bgalloc", 1), ips(b, "ext2", 1), ">=", 4.0,
              ((b, "bgalloc", 1), (b, "ext2", 1)))
    for fill in ("empty", "half"):
        b = f"churn_{fill}"
        ratio(f"churn {fill:5} 2 thr / 1 thr (bgalloc)",
              ips(b, "bgalloc", 2), ips(b, "bgalloc", 1), ">=", 1.8)
        ratio(f"churn {fill:5} 2 thr: bgalloc / baseline",
              ips(b, "bgalloc", 2), ips(b, "baseline", 2), ">=", 2.0)
        ratio(f"churn {fill:5} 2 thr: bgalloc / libext2fs",
              ips(b, "bgalloc", 2), ips(b, "ext2", 2), ">=", 15.0)
        ratio(f"churn {fill:5} 64 thr / 2 thr (bgalloc)",
              ips(b, "bgalloc", 64), ips(b, "bgalloc", 2), ">=", 0.8)
    ratio("hot-group churn 2 thr / 1 thr (bgalloc)",
          ips("hot", "bgalloc", 2), ips("hot", "bgalloc", 1), ">=", 1.5)
    # Cost ratio: time per allocation full-but-one over empty, i.e. the
    # inverse of the throughput ratio.
    for var in ("bgalloc", "baseline"):
        ratio(f"sparse search 1 thr cost, full-but-one / empty ({var})",
              ips("sparse_empty", var, 1), ips("sparse_full", var, 1), "<=", 10.0,
              (("sparse_empty", var, 1), ("sparse_full", var, 1)))

    print(f"host {ctx.get('host_name', '?')}, {ctx.get('num_cpus', '?')} CPUs, "
          f"{ctx.get('date', '?')}; medians of items_per_second\n")
    w = max(len(r[0]) for r in rows)
    for label, r, op, target, verdict, c in rows:
        val = "    n/a" if r is None else f"{r:6.2f}x"
        extra = "" if c is None else f"  [1-thread CPU time: {c:.2f}x]"
        print(f"{label:<{w}}  {val}  (target {op} {target:g}x)  {verdict:<7}{extra}")

    # Context for the ratios: every variant's throughput as ns/op.
    benches = sorted({k[0] for k in med})
    threads = sorted({k[2] for k in med})
    if benches:
        print("\nns per item (1e9 / median items_per_second, wall clock, all threads);"
              " cpu@1: CPU ns per item at 1 thread:")
        print(f"{'benchmark':<28}" + "".join(f"{t:>10}" for t in threads) + f"{'cpu@1':>10}")
        for bench in benches:
            for var in ("bgalloc", "baseline", "ext2"):
                vals = [ips(bench, var, t) for t in threads]
                if all(v is None for v in vals):
                    continue
                cells = "".join(f"{1e9 / v:10.1f}" if v else f"{'-':>10}" for v in vals)
                c = cpu.get((bench, var, 1))
                cells += f"{c * 1e9:10.1f}" if c else f"{'-':>10}"
                print(f"{bench + '__' + var:<28}{cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
