#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Build and run the fuzz harnesses in tests/fuzz/ with clang.
#
#   scripts/fuzz.sh libfuzzer SECONDS [harness...]   libFuzzer + ASan + UBSan (make fuzz)
#   scripts/fuzz.sh afl SECONDS [harness...]         AFL++ persistent mode + ASan + UBSan (make fuzz-afl)
#   scripts/fuzz.sh build [libfuzzer|afl]            build only
#   scripts/fuzz.sh run HARNESS FILE...              run inputs through the libFuzzer build
#   scripts/fuzz.sh repro HARNESS FILE [NAME]        minimise a crash into tests/fuzz/regress/HARNESS/
#   scripts/fuzz.sh merge [harness...]               minimise the working corpora (make fuzz-merge)
#   scripts/fuzz.sh floor                            the library's own cost per input shape (tests/fuzz/floor.c)
#   scripts/fuzz.sh share HARNESS SECONDS            the harness's share of a run from the seeds, and the
#                                                    ceiling libFuzzer's own work leaves (tests/fuzz/share.c)
#
# Harnesses: fuzz_ops fuzz_mt fuzz_load (default: all three).  Each runs for SECONDS,
# one after the other (the machine has 2 cores).  Inputs that crash are
# copied to tests/fuzz/crashes/<harness>-...; `repro` minimises one into
# tests/fuzz/regress/<harness>/, which ctest replays for good.  Work
# directories: build/fuzz-libfuzzer, build/fuzz-afl.  One summary line per
# harness (execs/s, cov and ft, corpus size, crashes and where they went)
# goes to <workdir>/summary.txt and stdout.
# Exit status: 0 when no harness found anything, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ALL_HARNESSES=(fuzz_ops fuzz_mt fuzz_load)
CRASHES=$ROOT/tests/fuzz/crashes
JOBS=${JOBS:-$(nproc)}

die() { echo "fuzz.sh: $*" >&2; exit 2; }

libs() { pkg-config --libs ck liburcu-bp; echo -lisal -lpthread; }

# srcs <harness>: its sources, <harness>.c and any <harness>_*.c beside it.
srcs() { echo "tests/fuzz/$1.c"; compgen -G "tests/fuzz/$1_*.c" || true; }

# build_lib <dir> <cc> <cflags>: the static library through the normal CMake lists.
build_lib() {
	local dir=$1 cc=$2 cflags=$3 cxx=clang++
	[ "$cc" = afl-clang-fast ] && cxx=afl-clang-fast++
	cmake -S "$ROOT" -B "$dir/lib" -DCMAKE_BUILD_TYPE=Debug -DBGA_DEBUG=ON -DBGA_EXAMPLES=OFF \
		-DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_FLAGS="$cflags" >/dev/null
	cmake --build "$dir/lib" -j "$JOBS" --target bgalloc_static >/dev/null
}

LF_DIR=$ROOT/build/fuzz-libfuzzer
LF_SAN="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
LF_SAN+=" -fsanitize-ignorelist=$ROOT/tests/fuzz/sanitize-ignore.txt"

# lf_link <harness> <out> [cflags/objects...]: a harness of the libFuzzer build.
lf_link() {
	local h=$1 out=$2; shift 2
	# shellcheck disable=SC2046
	clang -std=gnu11 -Wall -Wextra $LF_SAN -fsanitize=fuzzer -DBGA_DEBUG=1 "$@" \
		-Iinclude $(for l in base prim core alloc persist inspect; do printf -- '-Ilib/%s ' $l; done)-Itests/support $(srcs "$h") "$LF_DIR"/refmodel*.o \
		"$LF_DIR/lib/libbgalloc.a" $(libs) -o "$out"
}

build_libfuzzer() {
	local dir=$LF_DIR h san=$LF_SAN
	# The checker (bga_check) is the oracle too: left out of the coverage
	# instrumentation of the library, not of the sanitizers (why, and the
	# measured gain: tests/fuzz/coverage-ignore.txt,
	# docs/HISTORY.md#the-first-round-0b7aa7f-and-before).
	local cov="-fsanitize-coverage-ignorelist=$ROOT/tests/fuzz/coverage-ignore.txt"
	command -v clang >/dev/null || die "clang is missing (scripts/deps.sh fuzz)"
	echo "== fuzz: building libFuzzer targets in $dir"
	build_lib "$dir" clang "$san $cov -fsanitize=fuzzer-no-link"
	# The reference model is the oracle, not the code under test: built
	# without coverage instrumentation (still under the sanitizers), so
	# libFuzzer's callbacks are not paid on every block it compares and
	# its branches do not count as features.
	# (refmodel.c and the files beside it: refmodel_*.c)
	for m in tests/support/refmodel*.c; do
		clang -std=gnu11 -Wall -Wextra $san -DBGA_DEBUG=1 -Iinclude -Itests/support -c "$m" -o "$dir/$(basename "$m" .c).o"
	done
	for h in "${ALL_HARNESSES[@]}"; do
		lf_link "$h" "$dir/$h"
	done
	# The floor of an input: the library alone in this build (tests/fuzz/floor.c).
	# shellcheck disable=SC2046
	clang -std=gnu11 -Wall -Wextra $san -fsanitize=fuzzer-no-link -Iinclude -Itests/support tests/fuzz/floor.c \
		"$dir/lib/libbgalloc.a" $(libs) -o "$dir/fuzz_floor"
}

build_afl() {
	local dir=$ROOT/build/fuzz-afl h
	command -v afl-clang-fast >/dev/null || die "afl-clang-fast is missing (scripts/deps.sh fuzz)"
	echo "== fuzz: building AFL++ targets in $dir"
	export AFL_USE_ASAN=1 AFL_USE_UBSAN=1 AFL_QUIET=1
	local ign="-fsanitize-ignorelist=$ROOT/tests/fuzz/sanitize-ignore.txt"
	build_lib "$dir" afl-clang-fast "-g -O1 $ign"
	for h in "${ALL_HARNESSES[@]}"; do
		# shellcheck disable=SC2046
		afl-clang-fast -std=gnu11 -Wall -Wextra -g -O1 $ign -DBGA_DEBUG=1 \
			-Iinclude $(for l in base prim core alloc persist inspect; do printf -- '-Ilib/%s ' $l; done)-Itests/support tests/fuzz/afl_driver.c $(srcs "$h") tests/support/refmodel*.c \
			"$dir/lib/libbgalloc.a" $(libs) -o "$dir/$h"
	done
	unset AFL_USE_ASAN AFL_USE_UBSAN AFL_QUIET
}

run_libfuzzer() {
	local secs=$1; shift
	local dir=$ROOT/build/fuzz-libfuzzer h log runs took rc status=0
	: >"$dir/summary.txt"
	for h in "$@"; do
		mkdir -p "$dir/corpus/$h"
		log=$dir/$h.log
		echo "== fuzz: libFuzzer $h for ${secs}s (log $log)"
		rc=0
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
			"$dir/$h" -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
			-artifact_prefix="$CRASHES/$h-" "$dir/corpus/$h" "tests/fuzz/corpus/$h" >"$log" 2>&1 || rc=$?
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
		took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
		[ -n "$took" ] && [ "$took" -gt 0 ] || took=$secs
		if [ $rc -ne 0 ]; then
			status=1
			echo "!! $h FOUND A PROBLEM (exit $rc):"
			grep -E '^(fuzz_|bgalloc:|==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -5 || true
			grep -E 'Test unit written to' "$log" || true
		fi
		# libFuzzer's last status line: cov (edges), ft (features), corp (units/bytes)
		local last cov ft corp found where
		last=$(grep -E '^#[0-9]+[[:space:]]+(DONE|NEW|REDUCE|pulse|INITED)' "$log" | tail -1)
		cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
		ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
		corp=$(find "$dir/corpus/$h" -type f | wc -l)
		found=$(grep -c 'Test unit written to' "$log" || true)
		where=$(sed -n 's/.*Test unit written to \(.*\)/\1/p' "$log" | tr '\n' ' ')
		printf '%-10s libfuzzer %8s execs in %4ss = %7s execs/s  cov %s ft %s  corpus %s (%s)  crashes %s%s  exit %d\n' \
			"$h" "${runs:-?}" "$took" \
			"$(awk -v r="${runs:-0}" -v t="$took" 'BEGIN { printf "%.1f", r / t }')" "${cov:-?}" "${ft:-?}" \
			"$corp" "$dir/corpus/$h" "$found" "${where:+ -> $where}" "$rc" |
			tee -a "$dir/summary.txt"
	done
	return $status
}

run_afl() {
	local secs=$1; shift
	local dir=$ROOT/build/fuzz-afl h out eps execs n status=0 f
	: >"$dir/summary.txt"
	for h in "$@"; do
		out=$dir/out/$h
		rm -rf "$out"
		mkdir -p "$dir/out"
		echo "== fuzz: AFL++ $h for ${secs}s (output $out)"
		AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_AFFINITY=1 AFL_NO_UI=1 \
		AFL_SKIP_CRASHES=0 ASAN_OPTIONS=abort_on_error=1:symbolize=0:detect_leaks=0 \
			timeout -k 10 $((secs + 60)) afl-fuzz -V "$secs" -m none -t 2000 -i "tests/fuzz/corpus/$h" \
			-o "$out" -- "$dir/$h" >"$dir/$h.log" 2>&1 || true
		# afl-fuzz exits 1 when -V ends the run: judge by its stats file.
		if [ ! -f "$out/default/fuzzer_stats" ]; then
			echo "!! afl-fuzz did not run, see $dir/$h.log"
			tail -5 "$dir/$h.log"
			status=1
			continue
		fi
		eps=$(sed -n 's/^execs_per_sec *: *//p' "$out/default/fuzzer_stats")
		execs=$(sed -n 's/^execs_done *: *//p' "$out/default/fuzzer_stats")
		n=0
		for f in "$out"/default/crashes/id*; do
			[ -e "$f" ] || continue
			cp "$f" "$CRASHES/$h-afl-$(sha1sum "$f" | cut -c1-16)"
			n=$((n + 1))
		done
		[ $n -eq 0 ] || { status=1; echo "!! $h: $n crashing inputs copied to $CRASHES"; }
		printf '%-10s afl       %8s execs in %4ss = %7s execs/s  crashes %d\n' "$h" "$execs" "$secs" \
			"$eps" "$n" | tee -a "$dir/summary.txt"
	done
	return $status
}

pick() { if [ $# -gt 0 ]; then echo "$@"; else echo "${ALL_HARNESSES[@]}"; fi; }

mode=${1:-}; shift || true
case $mode in
libfuzzer)
	secs=${1:?seconds}; shift
	build_libfuzzer
	# shellcheck disable=SC2046
	run_libfuzzer "$secs" $(pick "$@")
	;;
afl)
	secs=${1:?seconds}; shift
	build_afl
	# shellcheck disable=SC2046
	run_afl "$secs" $(pick "$@")
	;;
build)
	case ${1:-libfuzzer} in
	libfuzzer) build_libfuzzer ;;
	afl) build_afl ;;
	*) die "build libfuzzer|afl" ;;
	esac
	;;
run)
	h=${1:?harness}; shift
	[ -x build/fuzz-libfuzzer/$h ] || build_libfuzzer
	ASAN_OPTIONS=detect_leaks=1:symbolize=1 build/fuzz-libfuzzer/$h "$@"
	;;
repro)
	# Minimise a crashing input (it must still crash) into
	# tests/fuzz/regress/HARNESS/, where ctest's fuzz_replay_* replays it.
	h=${1:?harness}; f=${2:?crashing input}; name=${3:-$(basename "$f")}
	[ -x build/fuzz-libfuzzer/$h ] || build_libfuzzer
	out=tests/fuzz/regress/$h/$name
	ASAN_OPTIONS=detect_leaks=1:symbolize=0 build/fuzz-libfuzzer/$h -minimize_crash=1 -max_total_time=60 \
		-exact_artifact_path="$out" "$f" >"build/fuzz-libfuzzer/$h-repro.log" 2>&1 || true
	[ -s "$out" ] || die "minimising $f gave nothing (not a crash?): build/fuzz-libfuzzer/$h-repro.log"
	echo "fuzz.sh: $out ($(stat -c %s "$out") bytes, was $(stat -c %s "$f")); fix the bug, then: ctest -R fuzz_replay"
	;;
share)
	# The harness's share of a run from the seeds, and the ceiling
	# libFuzzer's own work per input leaves (tests/fuzz/share.c).
	h=${1:?harness}; secs=${2:?seconds}
	[ -f "$LF_DIR/refmodel.o" ] || build_libfuzzer
	clang -std=gnu11 -Wall -Wextra $LF_SAN -c tests/fuzz/share.c -o "$LF_DIR/share.o"
	lf_link "$h" "$LF_DIR/$h-share" -DLLVMFuzzerTestOneInput=fz_share_harness "$LF_DIR/share.o"
	d=$LF_DIR/share-corpus/$h
	rm -rf "$d" && mkdir -p "$d" && cp tests/fuzz/corpus/"$h"/* "$d"/
	ASAN_OPTIONS=detect_leaks=1 "$LF_DIR/$h-share" -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 "$d" 2>&1 |
		grep -E '^(share:|#[0-9]+[[:space:]]+DONE)'
	;;
floor)
	# What the library alone costs per input shape in the libFuzzer build.
	[ -x build/fuzz-libfuzzer/fuzz_floor ] || build_libfuzzer
	ASAN_OPTIONS=detect_leaks=1 build/fuzz-libfuzzer/fuzz_floor
	;;
merge)
	# Minimise each harness's working corpus (libFuzzer -merge=1): the
	# units of build/fuzz-libfuzzer/corpus/H and tests/fuzz/corpus/H that
	# add coverage, into a fresh working corpus.
	build_libfuzzer
	for h in $(pick "$@"); do
		d=build/fuzz-libfuzzer/corpus
		rm -rf "$d/$h.merged" && mkdir -p "$d/$h.merged" "$d/$h"
		build/fuzz-libfuzzer/$h -merge=1 "$d/$h.merged" "$d/$h" "tests/fuzz/corpus/$h" >"build/fuzz-libfuzzer/$h-merge.log" 2>&1
		echo "fuzz.sh: $h corpus $(find "$d/$h" -type f | wc -l) -> $(find "$d/$h.merged" -type f | wc -l) units"
		rm -rf "$d/$h" && mv "$d/$h.merged" "$d/$h"
	done
	;;
*)
	sed -n '3,22p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
