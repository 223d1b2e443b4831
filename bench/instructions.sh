#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Instructions per single-thread churn operation (free one block, allocate
# one at a random goal, 2^20 blocks), counted by callgrind: unlike time,
# the count repeats exactly whatever else the machine does, so it tells
# whether a change to the hot path made it shorter.
#   bench/instructions.sh BUILD_DIR [OPS]
# Under valgrind rseq is not registered, so the CPU id comes from
# sched_getcpu(); its cost (bga__cpu_current) is shown and subtracted.
set -euo pipefail
build=${1:?usage: bench/instructions.sh BUILD_DIR [OPS]}
ops=${2:-100000}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
valgrind --tool=callgrind --toggle-collect=churn_loop --callgrind-out-file="$out" \
	"$build/bench/bga-share" --count "$ops" >/dev/null 2>&1
total=$(callgrind_annotate "$out" | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
cpu=$(callgrind_annotate --inclusive=yes "$out" | awk '/bga__cpu_current / {gsub(",", "", $1); print $1; exit}')
cpu=${cpu:-0}
echo "churn, 1 thread: $((total / ops)) instructions per operation, of which $((cpu / ops)) find the CPU" \
	"without rseq (valgrind only): $(((total - cpu) / ops)) without that"
