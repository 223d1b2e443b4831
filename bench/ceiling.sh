#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The machine's own scaling ceiling: one single-thread churn alone, then two
# that share nothing (separate processes, separate volumes) pinned to CPU 0
# and CPU 1 at once.  Their summed throughput over the lone one is the most
# any 2-thread run can reach here, whatever the allocator does.
#   bench/ceiling.sh BUILD_DIR [REPS]
set -euo pipefail
build=${1:?usage: bench/ceiling.sh BUILD_DIR [REPS]}
reps=${2:-5}
scale=$build/bench/bga-scale
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
[ -x "$py" ] || py=python3
median() { "$py" -c 'import json,statistics,sys
v=[statistics.median(c["ops_per_s"]) for f in sys.argv[1:] for w in json.load(open(f))["workloads"] for c in w["cells"]]
print(sum(v))' "$@"; }
run=(-w churn -t 1 -V bgalloc -r "$reps" -q --no-pin)
taskset -c 0 "$scale" "${run[@]}" -j "$tmp/alone.json" >/dev/null
taskset -c 0 "$scale" "${run[@]}" -j "$tmp/a.json" >/dev/null &
taskset -c 1 "$scale" "${run[@]}" -j "$tmp/b.json" >/dev/null
wait
alone=$(median "$tmp/alone.json")
both=$(median "$tmp/a.json" "$tmp/b.json")
"$py" -c "print(f'one churn alone: {$alone/1e6:.2f}M ops/s; two independent at once: {$both/1e6:.2f}M ops/s in all; ceiling {$both/$alone:.2f}x')"
