#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The machine's own scaling ceiling: one single-thread churn alone, then two
# that share nothing (separate processes, separate volumes) pinned to CPU 0
# and CPU 1 at once.  Their summed throughput over the lone one is the most
# any 2-thread run can reach here, whatever the allocator does.
#   bench/ceiling.sh BUILD_DIR [REPS [JSON]]
# REPS rounds (default 5), after one thrown-away run: each measures one
# process alone on each CPU and the two at once, in alternating order; the
# ceiling is the median of the rounds' ratios, without the rounds whose
# processes lost CPU time to another program (a CPU share below 0.8) or
# whose ratio exceeds 2 (a lone run measured slow).  Exits 1 when no round is left.
# With JSON, also writes {"ceiling", "alone_ops_per_s", "both_ops_per_s",
# ...} there (bench/scale/demo.sh measures the ceiling this way in every run).
# BGA_CEILING_WORKLOAD=appenders-own (any bga-scale workload) measures the
# ceiling of that workload instead of churn's: what two copies of exactly
# that work, sharing nothing, reach here.
set -euo pipefail
build=${1:?usage: bench/ceiling.sh BUILD_DIR [REPS [JSON]]}
[ -d "$build/bench" ] || { echo "bench/ceiling.sh: no $build/bench (BUILD_DIR: a cmake -DBGA_BENCH=ON build); usage: bench/ceiling.sh BUILD_DIR [REPS [JSON]]" >&2; exit 2; }
reps=${2:-5}
json=${3:-}
scale=$build/bench/bga-scale
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
[ -x "$py" ] || py=python3
cpus=($(taskset -pc $$ | sed 's/.*: //' | "$py" -c 'import sys
out = []
for part in sys.stdin.read().strip().split(","):
    lo, _, hi = part.partition("-")
    out += range(int(lo), int(hi or lo) + 1)
print(" ".join(map(str, out[:2])))'))
if [ ${#cpus[@]} -lt 2 ]; then
	echo "ceiling: fewer than 2 CPUs allowed; no ceiling" >&2
	exit 1
fi
wl=${BGA_CEILING_WORKLOAD:-churn}
run=(-w "$wl" -t 1 -V bgalloc -r 3 -q --no-pin)
alone() { taskset -c "${cpus[$1]}" "$scale" "${run[@]}" -j "$tmp/$2.json" >/dev/null 2>>"$tmp/log"; }
both() {
	taskset -c "${cpus[0]}" "$scale" "${run[@]}" -j "$tmp/a$1.json" >/dev/null 2>>"$tmp/log" &
	taskset -c "${cpus[1]}" "$scale" "${run[@]}" -j "$tmp/b$1.json" >/dev/null 2>>"$tmp/log"
	wait
}
# a first run warms what a first run pays for (the binary's pages, the
# CPUs' clocks), and is thrown away
alone 0 warm
for ((r = 1; r <= reps; r++)); do
	# each round alternates its order, so a drift over the rounds
	# weighs on both sides alike
	if ((r % 2)); then
		alone 0 l0_$r
		alone 1 l1_$r
		both $r
	else
		both $r
		alone 1 l1_$r
		alone 0 l0_$r
	fi
done
"$py" - "$tmp" "$reps" "${cpus[0]},${cpus[1]}" "$json" "$wl" <<'PY'
import json, statistics, sys
tmp, reps, cpus, out, wl = sys.argv[1:6]
def med(name):
    """median ops/s of the file's cell, and its least CPU share"""
    d = json.load(open("%s/%s.json" % (tmp, name)))
    cells = [c for w in d["workloads"] for c in w["cells"]]
    return (sum(statistics.median(c["ops_per_s"]) for c in cells),
            min(min(c.get("cpu_share") or [1.0]) for c in cells))
rounds = []
for r in range(1, int(reps) + 1):
    (l0, s0), (l1, s1), (a, sa), (b, sb) = (med(n % r) for n in ("l0_%d", "l1_%d", "a%d", "b%d"))
    alone = (l0 + l1) / 2
    rounds.append({"ceiling": (a + b) / alone, "alone_ops_per_s": alone, "both_ops_per_s": a + b,
                   "cpu_share": min(s0, s1, sa, sb)})
# A round whose threads lost their CPU to another program (share below
# 0.8, bga-scale's own bar for a 2-thread figure) says nothing of the machine; one above 2.05 measured its lone run
# slow (two CPUs cannot do more than twice one): both are set aside.
kept = [x for x in rounds if x["cpu_share"] >= 0.8 and x["ceiling"] <= 2.05]
if not kept:
    print("ceiling: no round of %d had its CPUs to itself and a ceiling of 2 or less (%s); no ceiling"
          % (len(rounds), ", ".join("%.2fx share %.2f" % (x["ceiling"], x["cpu_share"]) for x in rounds)),
          file=sys.stderr)
    sys.exit(1)
c = statistics.median(x["ceiling"] for x in kept)
alone = statistics.median(x["alone_ops_per_s"] for x in kept)
both = statistics.median(x["both_ops_per_s"] for x in kept)
print("one %s alone: %.2fM ops/s; two independent at once: %.2fM ops/s in all; ceiling %.2fx (median of %d rounds of %d: %s)"
      % (wl, alone / 1e6, both / 1e6, c, len(kept), len(rounds), " ".join("%.2f" % x["ceiling"] for x in rounds)))
if out:
    with open(out, "w") as f:
        json.dump({"ceiling": c, "alone_ops_per_s": alone, "both_ops_per_s": both,
                   "workload": wl + ", bgalloc, 1 thread per process", "reps": int(reps), "cpus": cpus,
                   "rounds": rounds, "kept": len(kept)}, f)
        f.write("\n")
PY
