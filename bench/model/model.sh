#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `make model`: the model of N cores (bench/model/model.c) for the demo's
# workloads and the counter modes, each against the baseline, and its
# check against what this machine measures in the same run.
#   bench/model/model.sh MODEL_BUILD RELEASE_BUILD
# MODEL_BUILD: cmake -DBGA_MODEL=ON (bga-model, bga-model-plain);
# RELEASE_BUILD: cmake -DBGA_BENCH=ON (bga-scale, for the check).
# Writes model.txt, model.json and model.png beside the demo's report
# (build/demo, or BGA_DEMO_OUT), the raw counts under model/ there, and
# ends with one `model ...` line per workload and variant and one
# `model-check ...` line per workload (report.py says how).
set -euo pipefail
mb=${1:?usage: bench/model/model.sh MODEL_BUILD RELEASE_BUILD}
rb=${2:?usage: bench/model/model.sh MODEL_BUILD RELEASE_BUILD}
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${BGA_DEMO_OUT:-$root/build/demo}
raw=$out/model
mkdir -p "$raw"
model=$mb/bench/model/bga-model
plain=$mb/bench/model/bga-model-plain
# the modelled CPU id lives in glibc's rseq area, which must stay unregistered
export GLIBC_TUNABLES=glibc.pthread.rseq=0
# BGA_MODEL_CONFIGS="writers:bgalloc counter:percpu ...": only those
# (the check then measures only their workloads)
configs=${BGA_MODEL_CONFIGS:-"churn:bgalloc churn:baseline writers:bgalloc writers:whole writers:baseline appenders-own:bgalloc appenders-own:baseline counter:percpu counter:limited counter:atomic"}
# the same addresses every run where setarch can turn ASLR off (which
# objects share a line depends on heap offsets, which it keeps anyway)
norand=
if setarch "$(uname -m)" -R true 2>/dev/null; then
	norand="setarch $(uname -m) -R"
fi
SECONDS=0
: >"$raw/count.jsonl"
: >"$raw/count2.jsonl"
echo "{" >"$raw/instr.json.tmp"
echo "{" >"$raw/time.json.tmp"
sep=
for c in $configs; do
	w=${c%:*} v=${c#*:}
	echo "model: $w $v" >&2
	# instructions per op of one core on the release library, by callgrind
	cg=$raw/callgrind.$w.$v
	toggle=model_op_measured
	[ "$v" = limited ] && toggle=model_op_limited_measured
	valgrind --tool=callgrind --toggle-collect=$toggle --callgrind-out-file="$cg" \
		"$plain" -w "$w" -v "$v" -t 1 >"$raw/plain.$w.$v.json" 2>/dev/null
	ops=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ops"])' "$raw/plain.$w.$v.json")
	ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$cg")
	i1=$(python3 -c "print($ir / $ops)")
	echo "$sep\"$w/$v\": $i1" >>"$raw/instr.json.tmp"
	# one core's CPU time per op, unmodelled, for the CPI
	# (BGA_MODEL_NS_PER_INSTR=c: that c instead of the measured one, so
	# that two trees' figures differ only by their counts, not by the
	# machine's load between the two runs)
	if [ -n "${BGA_MODEL_NS_PER_INSTR:-}" ]; then
		ns=$(python3 -c "print($i1 * $BGA_MODEL_NS_PER_INSTR)")
	else
		ns=$("$plain" --time -w "$w" -v "$v" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ns_per_op"])')
	fi
	echo "$sep\"$w/$v\": $ns" >>"$raw/time.json.tmp"
	sep=,
	# the clocks' constants (clock.h): instructions per instrumented
	# access (callgrind's over one core's count), and a move in
	# instruction times, x / c.  The counts are made at the two powers of
	# 2^(1/4) around x / c, and report.py takes every figure between them
	# (linear in log x / c): the counts, which a move's cost steers (a
	# lock found held), repeat exactly, and c, a CPU time that moves with
	# the machine's load, moves the figures only as much as it moves x / c
	a1=$($norand "$model" -w "$w" -v "$v" -t 1 | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["accesses"] / d["ops"])')
	ipa=$(python3 -c "print('%.4g' % ($i1 / $a1))")
	# the counts: 1..64 cores of a 64-CPU machine (a move of the server's
	# x), and 2 of a 2-CPU one at moves of 2^3.5 .. 2^12 instruction
	# times (the check's grid); a process each, so that no heap state of
	# one count (which thread freed what first) reaches the next
	for n in 1 2 4 8 16 32 64; do
		for xf in $(python3 -c "import math, sys; sys.path.insert(0, '$root/bench/model'); import report
k = math.floor(4 * math.log2(report.x_server($n) / ($ns / $i1)))
print('%.6g %.6g' % (2 ** (k / 4), 2 ** ((k + 1) / 4)))"); do
			$norand "$model" -w "$w" -v "$v" -t $n --ipa "$ipa" --xfer "$xf" >>"$raw/count.jsonl"
		done
	done
	case $w/$v in churn/bgalloc | writers/bgalloc | appenders-own/bgalloc)
		for k in 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24; do
			$norand "$model" --ncpus 2 -w "$w" -v "$v" -t 2 --ipa "$ipa" \
				--xfer "$(python3 -c "print('%.6g' % 2 ** ($k / 2))")" >>"$raw/count2.jsonl"
		done ;;
	esac
done
echo "}" >>"$raw/instr.json.tmp"
echo "}" >>"$raw/time.json.tmp"
mv "$raw/instr.json.tmp" "$raw/instr.json"
mv "$raw/time.json.tmp" "$raw/time.json"
# The check: the model's workloads in slices on the first two CPUs this
# process may use, the transfer time measured beside each (measure.c)
unset GLIBC_TUNABLES
cpus=$(taskset -pc $$ | sed 's/.*: //' | python3 -c 'import sys
out = []
for part in sys.stdin.read().strip().split(","):
    lo, _, hi = part.partition("-")
    out += range(int(lo), int(hi or lo) + 1)
print(",".join(map(str, out[:2])))')
: >"$raw/measure.jsonl"
if [ "${cpus#*,}" != "$cpus" ]; then
	# slices in batches of 8 until 16 had their CPUs (report.py's bar) or
	# BGA_MODEL_CHECK_S seconds (default 60) went by: a busy machine
	# leaves some slices out
	for w in churn writers appenders-own; do
		case " $configs" in *" $w:"*) ;; *) continue ;; esac
		t0=$SECONDS
		while :; do
			"$plain" --measure "$cpus" -w "$w" --slices 8 --slice-s 0.1 >>"$raw/measure.jsonl"
			kept=$(python3 -c 'import json, sys
print(sum(1 for ln in open(sys.argv[1]) for r in [json.loads(ln)] if r["workload"] == sys.argv[2] and min(r["cpu_share"]) >= 0.9))' "$raw/measure.jsonl" "$w")
			[ "$kept" -ge 16 ] || [ $((SECONDS - t0)) -ge "${BGA_MODEL_CHECK_S:-60}" ] && break
		done
	done
else
	echo "model: fewer than 2 CPUs allowed: no check" >&2
fi
# and the demo's measure at 1 and 2 threads, and the ceiling, for reference
if [ -x "$rb/bench/bga-scale" ]; then
	"$root/bench/ceiling.sh" "$rb" 5 "$raw/ceiling.json" >/dev/null ||
		echo "model: no ceiling measured; no check" >&2
	"$rb/bench/bga-scale" -q -w churn,writers,appenders-own -V bgalloc -t 1,2 -r 5 -d 0.2 \
		-j "$raw/scale.json" >/dev/null
else
	echo "model: $rb/bench/bga-scale is missing (cmake -DBGA_BENCH=ON): no check" >&2
fi
echo "model: counted and measured in ${SECONDS} s; the report: $out/model.txt, model.json, model.png" >&2
python3 "$root/bench/model/report.py" "$raw" "$model" "$out"
