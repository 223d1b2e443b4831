#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The machine's own scaling ceiling: one single-thread churn alone, then two
# that share nothing (separate processes, separate volumes) pinned to CPU 0
# and CPU 1 at once.  Their summed throughput over the lone one is the most
# any 2-thread run can reach here, whatever the allocator does.
#   bench/ceiling.sh BUILD_DIR [REPS [JSON]]
# With JSON, also writes {"ceiling", "alone_ops_per_s", "both_ops_per_s",
# ...} there (bench/demo.sh measures the ceiling this way in every run).
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
run=(-w "$wl" -t 1 -V bgalloc -r "$reps" -q --no-pin)
taskset -c "${cpus[0]}" "$scale" "${run[@]}" -j "$tmp/alone.json" >/dev/null
taskset -c "${cpus[0]}" "$scale" "${run[@]}" -j "$tmp/a.json" >/dev/null &
taskset -c "${cpus[1]}" "$scale" "${run[@]}" -j "$tmp/b.json" >/dev/null
wait
"$py" - "$tmp" "$reps" "${cpus[0]},${cpus[1]}" "$json" "$wl" <<'PY'
import json, statistics, sys
tmp, reps, cpus, out, wl = sys.argv[1:6]
def med(name):
    d = json.load(open("%s/%s.json" % (tmp, name)))
    return sum(statistics.median(c["ops_per_s"]) for w in d["workloads"] for c in w["cells"])
alone, both = med("alone"), med("a") + med("b")
print("one %s alone: %.2fM ops/s; two independent at once: %.2fM ops/s in all; ceiling %.2fx"
      % (wl, alone / 1e6, both / 1e6, both / alone))
if out:
    with open(out, "w") as f:
        json.dump({"ceiling": both / alone, "alone_ops_per_s": alone, "both_ops_per_s": both,
                   "workload": wl + ", bgalloc, 1 thread per process", "reps": int(reps), "cpus": cpus}, f)
        f.write("\n")
PY
