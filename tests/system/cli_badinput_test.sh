#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The command-line programs (bench/, tools/, scripts/) on bad input: each
# row must end within a few seconds, with an exit status in 1..125 (not 0,
# not a signal, not the timeout) and a message on stderr, before anything
# is measured.  A `help` row must exit 0 with its usage on stdout.
#   cli_badinput_test.sh BUILD_DIR SOURCE_DIR
# Rows whose program was not built (bench/ needs -DBGA_BENCH=ON) are
# counted as skipped and named.
set -uo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
fails=0 ran=0 skipped=()
# A path no one can create, even root: a directory below a regular file.
nodir=/etc/passwd/x

# bad PROGRAM ARGS...: refused with a message and a status in 1..125.
bad() {
	local prog=$1 path; shift
	case $prog in
	scripts/* | bench/*.sh) path=$src/$prog ;;
	*) path=$build/$prog ;;
	esac
	[ -x "$path" ] || { skipped+=("$prog"); return; }
	ran=$((ran + 1))
	local out err rc
	out=$(timeout -k 2 10 "$path" "$@" 2>/tmp/cli_badinput.$$ </dev/null)
	rc=$?
	err=$(cat /tmp/cli_badinput.$$)
	if [ $rc -lt 1 ] || [ $rc -gt 125 ] || [ $rc = 124 ] || [ -z "$err" ]; then
		echo "FAIL $prog $*: exit $rc, stderr '${err:0:200}', stdout '${out:0:200}'"
		fails=$((fails + 1))
	else
		echo "ok   $prog $*: exit $rc: ${err%%$'\n'*}"
	fi
}

# help PROGRAM ARGS...: exit 0, the usage on stdout.
help() {
	local prog=$1 path; shift
	case $prog in
	scripts/* | bench/*.sh) path=$src/$prog ;;
	*) path=$build/$prog ;;
	esac
	[ -x "$path" ] || { skipped+=("$prog"); return; }
	ran=$((ran + 1))
	local out rc
	out=$(timeout -k 2 10 "$path" "$@" 2>/dev/null </dev/null)
	rc=$?
	if [ $rc != 0 ] || ! grep -qi usage <<<"$out"; then
		echo "FAIL $prog $* (help): exit $rc, stdout '${out:0:200}'"
		fails=$((fails + 1))
	else
		echo "ok   $prog $*: exit 0 with its usage"
	fi
}

# bench/ (BGA_BENCH=ON)
bad bench/bga-micro --benchmark_repetitions=-1
bad bench/bga-micro --benchmark_repetitions=abc
bad bench/bga-micro --benchmark_min_time=-1
bad bench/bga-bench --benchmark_repetitions=0
bad bench/bga-share 1 -5
bad bench/bga-share 0
bad bench/bga-share abc
bad bench/bga-share --count -1
bad bench/bga-floor 1 -1
bad bench/bga-floor 65
bad bench/bga-floor --count nosuch 10
bad bench/bga-units bogus
bad bench/bga-units vec -3
bad bench/bga-units ins 0
bad bench/bga-units engine 0
bad bench/bga-units engine-ins sideways 1 1
bad bench/bga-units writers 1000
help bench/bga-units --help
bad bench/bga-aging --json $nodir.json
bad bench/bga-aging --repetitions 0
bad bench/bga-aging --rounds x
bad bench/bga-aging --bogus
bad bench/bga-create -n 0
bad bench/bga-create -r -1
bad bench/bga-create extra
bad bench/bga-scale -w bogus
bad bench/bga-scale -t 1,,2
bad bench/bga-scale -w churn,
bad bench/bga-scale -r 0
bad bench/bga-ab --bogus

bad bench/ceiling.sh --bogus
bad bench/volume/instructions.sh /nonexistent
bad bench/volume/floor.sh --bogus
bad bench/report/ratios.sh /nonexistent
bad bench/report/compare.sh --bogus
bad bench/scale/demo.sh --bogus
bad bench/fs/bgafs_ab.sh
bad bench/fs/trace_cost.sh --bogus
bad bench/fs/dbench_counters.sh --bogus

# bench/user/
bad bench/user/lock_bench 2 10 -1
bad bench/user/lock_bench 0
bad bench/user/lock_bench 2x
bad bench/user/counter_bench 0
bad bench/user/counter_bench 1 10 65
bad bench/user/counter_bench -1
# tools/
bad tools/lab/bga-lab counter --threads 1,,2
bad tools/lab/bga-lab counter --threads 0
bad tools/lab/bga-lab counter --ops 18446744073709551615
bad tools/lab/bga-lab counter --out $nodir
bad tools/lab/bga-lab counter --reps 0
bad tools/lab/bga-lab counter --seconds -1
bad tools/lab/bga-lab counter --modes bogus
bad tools/lab/bga-lab lock --kinds bogus
bad tools/lab/bga-lab lock --slots 3
bad tools/lab/bga-lab bogus
bad tools/lab/bga-lab
help tools/lab/bga-lab --help
bad tools/replay/bga-replay run "$src/tests/data/traces/objects.trace" -a bgalloc,windows=maybe
bad tools/replay/bga-replay run "$src/tests/data/traces/objects.trace" -a bgalloc,group=x
bad tools/replay/bga-replay run "$src/tests/data/traces/objects.trace" -a worstfit
bad tools/replay/bga-replay run "$src/tests/data/traces/objects.trace" --full 0
bad tools/replay/bga-replay run /nonexistent.trace
bad tools/replay/bga-replay bogus
help tools/replay/bga-replay --help
bad tools/inspect/bga-inspect --bogus
bad tools/inspect/bga-inspect check /nonexistent.img

# scripts/ (argument checks come before any build)
bad scripts/fuzz.sh libfuzzer 0
bad scripts/fuzz.sh libfuzzer -5
bad scripts/fuzz.sh libfuzzer abc
bad scripts/fuzz.sh libfuzzer
bad scripts/fuzz.sh libfuzzer 10 bogus
bad scripts/fuzz.sh afl 0
bad scripts/fuzz.sh run bogus
bad scripts/fuzz.sh run bogus x
bad scripts/fuzz.sh run fuzz_ops /nonexistent
bad scripts/fuzz.sh repro fuzz_ops /nonexistent
bad scripts/fuzz.sh share fuzz_ops -1
bad scripts/fuzz.sh bogus
bad scripts/fuzz.sh
help scripts/fuzz.sh --help

# fuzz_ops's trace (FUZZ_OPS_TRACE) names each call, not its byte.
replay=$build/tests/fuzz/fuzz_ops_replay
if [ -x "$replay" ]; then
	ran=$((ran + 1))
	trace=$(FUZZ_OPS_TRACE=1 BGA_STRESS_SECONDS=0.001 "$replay" "$src/tests/fuzz/corpus/fuzz_ops" 2>&1 >/dev/null | head -3)
	if grep -qE '^op [0-9]+: bga_[a-z_]+' <<<"$trace"; then
		echo "ok   FUZZ_OPS_TRACE names the calls: ${trace%%$'\n'*}"
	else
		echo "FAIL FUZZ_OPS_TRACE: '${trace:0:200}'"
		fails=$((fails + 1))
	fi
fi

rm -f /tmp/cli_badinput.$$
[ ${#skipped[@]} = 0 ] || echo "skipped (not built): $(printf '%s\n' "${skipped[@]}" | sort -u | tr '\n' ' ')"
echo "cli_badinput: $ran rows, $fails failed"
[ $fails = 0 ] && [ $ran -gt 0 ]
