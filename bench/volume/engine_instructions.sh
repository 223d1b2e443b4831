#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Instructions per pair (one bga_free_vec of a random object, one
# bga_alloc_vec at a random unit-aligned goal) of the storage-engine
# workload (bga-units engine-ins, units_engine.c), counted by callgrind
# as the difference of two step counts, so that what a run pays once (the
# scenario's fill, the first touch of a group, the thread's first calls)
# drops out.  The count includes the driver's own work (random numbers,
# the object table), as the comparison with Ceph's allocators did.
#   bench/volume/engine_instructions.sh BUILD_DIR [SCENARIO WANT]...
# Without SCENARIO WANT: empty 16, empty 64, empty 1024, fragmented 16.
# ENGINE_CALL=alloc|whole: requests made by bga_alloc calls (without or
# with BGA_WHOLE) instead of one bga_alloc_vec (units_engine.c, CALL).
# Under valgrind rseq is not registered: the CPU id's fallback is counted
# (see bench/volume/instructions.sh).
set -euo pipefail
build=${1:?usage: bench/volume/engine_instructions.sh BUILD_DIR [SCENARIO WANT]...}
shift
[ $# -gt 0 ] || set -- empty 16 empty 64 empty 1024 fragmented 16
n1=${ENGINE_STEPS1:-20000}
n2=${ENGINE_STEPS2:-60000}
call=${ENGINE_CALL:-vec}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
count() { # count SCENARIO WANT STEPS: engine_steps' instructions
	valgrind --tool=callgrind --toggle-collect=engine_steps --callgrind-out-file="$out" \
		"$build/bench/bga-units" engine-ins "$1" "$2" "$3" "$call" >/dev/null 2>&1
	callgrind_annotate "$out" | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}'
}
while [ $# -ge 2 ]; do
	a=$(count "$1" "$2" "$n1")
	b=$(count "$1" "$2" "$n2")
	awk -v c="$call" -v s="$1" -v w="$2" -v a="$a" -v b="$b" -v n1="$n1" -v n2="$n2" \
		'BEGIN { printf "  %-10s %5d KiB: %7.1f instructions per pair (steps %d and %d, %s)\n", s, w * 4, (b - a) / (n2 - n1), n1, n2, c }'
	shift 2
done
