#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every "what it must show" ratio of the primitives, the volume and the
# aging workload, each measured in one run (ratios of medians, so machine
# load that changes between runs cannot enter them).  The scalability
# report is `make demo` (bench/scale/demo.sh).
#   bench/report/ratios.sh BUILD_DIR [OUT_DIR]     BUILD_DIR from cmake -DBGA_BENCH=ON
set -euo pipefail
build=${1:?usage: bench/report/ratios.sh BUILD_DIR [OUT_DIR]}
[ -d "$build/bench" ] || { echo "bench/report/ratios.sh: no $build/bench (BUILD_DIR: a cmake -DBGA_BENCH=ON build); usage: bench/report/ratios.sh BUILD_DIR [OUT_DIR]" >&2; exit 2; }
out=${2:-$build/ratios}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
gb=(--benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
	--benchmark_report_aggregates_only=true --benchmark_out_format=json)

echo "== primitives: counter modes and lock kinds (bga-lab, verdicts), bitmap scan vs libext2fs"
lab=$build/tools/lab/bga-lab
"$lab" counter --modes atomic,percpu,percpu-cas --threads 1,2,64 --reps 9 --out "$out" | tee "$out/lab-counter.txt"
"$lab" counter --modes atomic,percpu --limited --threads 1,2 --reps 9 --out "$out" | tee "$out/lab-limited.txt"
"$lab" lock --kinds fas,mutex,default,ticket,mcs --threads 1,2,64 --hold 0 --reps 5 --out "$out" | tee "$out/lab-lock.txt"
"$build/bench/bga-micro" "${gb[@]}" --benchmark_out="$out/micro.json" \
	--benchmark_filter='^bm_bitmap_next_zero_(auto|ext2)' >"$out/micro.txt"
"$py" "$here/micro_ratios.py" "$out/micro.json" | tee "$out/micro-ratios.txt"

echo
echo "== volume: churn, hot group, sparse search against the baseline and libext2fs"
"$build/bench/bga-bench" "${gb[@]}" --benchmark_out="$out/volume.json" \
	--benchmark_filter='^(churn_(empty|half)__.*threads:(1|2|64)|hot__bgalloc/.*threads:(1|2)|sparse_(empty|full)__.*threads:1)$' \
	>"$out/volume.txt"
"$py" "$here/volume_ratios.py" "$out/volume.json" | tee "$out/volume-ratios.txt"

echo
echo "== aging: fragmentation against libext2fs on the same sequence"
"$build/bench/bga-aging" --json "$out/aging.json" | tee "$out/aging.txt"

echo
echo "== sharing: one line between the CPUs, churn with shared and with disjoint groups"
"$build/bench/bga-share" 5 1000000 | tee "$out/share.txt"
