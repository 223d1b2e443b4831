#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Instructions per single-thread churn operation (free one block, allocate
# one at a random goal, 2^20 blocks), counted by callgrind: unlike time,
# the count repeats exactly whatever else the machine does, so it tells
# whether a change to the hot path made it shorter.
#   bench/instructions.sh BUILD_DIR [OPS]
# The count has three parts, printed apart:
#  - the harness: churn_loop's own instructions (the loop, two random
#    numbers, the calls), which any caller pays in some form;
#  - the CPU id without rseq: under valgrind rseq is not registered, so
#    each lookup is a call to bga__cpu_fallback (sched_getcpu), which a
#    thread with rseq replaces by one inline load from its rseq area
#    (the inline part, cpu.h, stays in the library's count);
#  - the library: the rest.
set -euo pipefail
build=${1:?usage: bench/instructions.sh BUILD_DIR [OPS]}
ops=${2:-100000}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
valgrind --tool=callgrind --toggle-collect=churn_loop --callgrind-out-file="$out" \
	"$build/bench/bga-share" --count "$ops" >/dev/null 2>&1
self=$(callgrind_annotate --threshold=100 "$out")
incl=$(callgrind_annotate --inclusive=yes --threshold=100 "$out")
total=$(awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}' <<<"$self")
# Exclusive costs of churn_loop and of what was inlined into it (rng.h).
harness=$(awk '/:churn_loop( \[|$)/ {gsub(",", "", $1); s += $1} END {print s + 0}' <<<"$self")
# bga__cpu_fallback with what it calls, plus bga__cpu_current's own part;
# in builds before bga__cpu_fallback (issue 14), bga__cpu_current whole.
fb=$(awk '/:bga__cpu_fallback \[/ {gsub(",", "", $1); print $1; exit}' <<<"$incl")
if [ -n "$fb" ]; then
	cur=$(awk '/:bga__cpu_current \[/ {gsub(",", "", $1); print $1; exit}' <<<"$self")
else
	cur=$(awk '/:bga__cpu_current \[/ {gsub(",", "", $1); print $1; exit}' <<<"$incl")
fi
cpu=$((${fb:-0} + ${cur:-0}))
lib=$((total - harness - cpu))
echo "churn, 1 thread: $((total / ops)) instructions per operation:" \
	"library $((lib / ops)), harness (churn_loop) $((harness / ops)), CPU id without rseq" \
	"(valgrind only) $((cpu / ops)); without the last: $(((total - cpu) / ops))"
