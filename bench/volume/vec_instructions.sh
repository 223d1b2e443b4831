#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Instructions of one bga_alloc_vec returning N extents against N bga_alloc
# calls on the same free space (bga-units ins: each side on a fresh
# volume, from the same goal, each bga_alloc from the end of the last),
# counted by callgrind: the count repeats exactly, where the time ratio
# (bga-units vec) moves by 20% from run to run on this machine.
#   bench/volume/vec_instructions.sh BUILD_DIR [N]
# Shapes (bench/volume/units.c): runs of 8 in used space, 8-block pieces of one
# empty run, and whole 256-block groups.  Each count is the inclusive
# cost of vec_call or alloc_calls, per extent.  Under valgrind rseq is not
# registered, so both sides pay the CPU id's fallback alike (see
# bench/volume/instructions.sh).
set -euo pipefail
build=${1:?usage: bench/volume/vec_instructions.sh BUILD_DIR [N]}
n=${2:-256}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run() { # run SHAPE FUNCTION: the instructions of that function's one call
	local fn=$2
	valgrind --tool=callgrind --toggle-collect="$fn" --callgrind-out-file="$out" \
		"$build/bench/bga-units" ins "$n" "$1" >/dev/null 2>&1
	callgrind_annotate "$out" | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}'
}
names=("runs of 8 in used space, extents of 8" "one free run, extents of 8" "free 256-block groups, extents of 256")
echo "bga_alloc_vec returning $n extents against $n bga_alloc calls, instructions per extent (callgrind):"
for shape in 0 1 2; do
	v=$(run $shape vec_call)
	a=$(run $shape alloc_calls)
	awk -v s="${names[$shape]}" -v v="$v" -v a="$a" -v n="$n" \
		'BEGIN { printf "  %-42s bga_alloc_vec %7.1f, bga_alloc x%d %7.1f, ratio %.3f\n", s ":", v / n, n, a / n, v / a }'
done
