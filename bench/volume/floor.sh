#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Instructions per single-thread churn operation for each of bga-floor's
# variants (bench/volume/floor.c), counted by callgrind as bench/volume/instructions.sh
# counts bgalloc's: the whole loop (harness included), and the part outside
# the loop's own code (the two calls with all they run).
#   bench/volume/floor.sh BUILD_DIR [OPS]
# Under valgrind no thread has rseq, so the `counter` and `bgalloc` variants
# run the counter's CAS path and the CPU id's getcpu fallback (cpu.h).
set -euo pipefail
build=${1:?usage: bench/volume/floor.sh BUILD_DIR [OPS]}
[ -d "$build/bench" ] || { echo "bench/volume/floor.sh: no $build/bench (BUILD_DIR: a cmake -DBGA_BENCH=ON build); usage: bench/volume/floor.sh BUILD_DIR [OPS]" >&2; exit 2; }
ops=${2:-100000}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
printf '%-10s %12s %10s %10s\n' variant "per op" harness calls
for v in bgalloc counter biased unlocked locked lockfree plain; do
	valgrind --tool=callgrind "--toggle-collect=loop_$v*" --callgrind-out-file="$out" \
		"$build/bench/bga-floor" --count "$v" "$ops" >/dev/null 2>&1
	self=$(callgrind_annotate --threshold=100 "$out")
	total=$(awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}' <<<"$self")
	harness=$(awk '/:loop_'"$v"'[. ]/ {gsub(",", "", $1); s += $1} END {print s + 0}' <<<"$self")
	printf '%-10s %12d %10d %10d\n' "$v" $((total / ops)) $((harness / ops)) $(((total - harness) / ops))
done
