#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Build and run the fuzz harnesses in tests/fuzz/ with clang.
#
#   scripts/fuzz.sh libfuzzer SECONDS [HARNESS...]  libFuzzer + ASan + UBSan (make fuzz)
#   scripts/fuzz.sh afl SECONDS [HARNESS...]        AFL++ persistent mode + ASan + UBSan (make fuzz-afl)
#   scripts/fuzz.sh build [libfuzzer|afl] [HARNESS...]  build only
#   scripts/fuzz.sh run HARNESS FILE|DIR...         run inputs through the libFuzzer build; a
#                                                   directory is replayed (-runs=0), never added to
#   scripts/fuzz.sh repro HARNESS FILE [NAME]       minimise a crash into tests/fuzz/regress/HARNESS/
#   scripts/fuzz.sh merge [HARNESS...]              minimise the working corpora (make fuzz-merge)
#   scripts/fuzz.sh cov [HARNESS...]                HTML coverage of lib/ by the corpora (make fuzz-cov)
#   scripts/fuzz.sh floor                           the library's own cost per input shape (bench/fuzz/fuzz_floor.c)
#   scripts/fuzz.sh share HARNESS SECONDS           the harness's share of a run from the seeds, and the
#                                                   ceiling libFuzzer's own work leaves (bench/fuzz/fuzz_share.c)
#   scripts/fuzz.sh --help                          this text
#
# HARNESS: fuzz_ops fuzz_mt fuzz_load (default: those three), any other
# tests/fuzz/NAME.c by its NAME (fuzz_example), or a path to your own
# harness PATH/NAME.c (with any PATH/NAME_*.c beside it).  Each runs for
# SECONDS (a whole number > 0), one after the other (the machine has 2
# cores); a finding in one does not stop the others.  Seeds come from
# tests/fuzz/corpus/NAME/ (or PATH/corpus/NAME/) when it exists.
#
# A crashing input is replayed and its report reduced to a signature (the
# harness's message, or the sanitizer's summary and the top frames of its
# stack, numbers left out): one file per signature,
# tests/fuzz/crashes/NAME-SIG, the smallest input kept;
# <workdir>/crashes.txt lists each crashing input of the last run and its
# signature.
# `repro` minimises one into tests/fuzz/regress/NAME/, which ctest replays.
#
# One summary line per harness (the fuzzer's own execs/s, cov and ft, corpus
# size, crashes and where they went) goes to <workdir>/summary.txt and
# stdout.  Work directories: build/fuzz-libfuzzer, build/fuzz-afl
# (FUZZ_WORKDIR replaces either).  AFL++'s output (build/fuzz-afl/out/NAME)
# is kept: the next run resumes its queue.
#
# Environment: FUZZ_ARGS, more libFuzzer flags (-jobs=2, -dict=F, -fork=2);
# AFL_ARGS, more afl-fuzz flags (-M main, -S s1, -x dict); FUZZ_NO_BUILD=1,
# use the binaries already in the work directory; FUZZ_CHECK_ONLY=1, check
# the command line, say so and exit 0 (what the docs' test runs).  Through make:
# make fuzz FUZZ_SECONDS=60 FUZZ_ARGS='-jobs=2'.
# Exit status: 0 when no harness found anything, 1 when one did, 2 for a
# bad command line or a build that failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
DEFAULT_HARNESSES=(fuzz_ops fuzz_mt fuzz_load)
CRASHES=${FUZZ_CRASHES:-$ROOT/tests/fuzz/crashes}
JOBS=${JOBS:-$(nproc)}

die() { echo "fuzz.sh: $*" >&2; exit 2; }
usage() { echo "usage: scripts/fuzz.sh COMMAND ..."; sed -n '3,/^# Exit status/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
try() { "$@" || die "failed: $*"; }

libs() { pkg-config --libs ck liburcu-bp; echo -lisal -lpthread; }

# seconds S: S when it is a whole number of seconds above 0.
seconds() {
	if ! [[ ${1:-} =~ ^[0-9]{1,9}$ ]] || [ "$((10#$1))" -eq 0 ]; then
		die "SECONDS must be a whole number from 1 to 999999999, not '${1:-}' (scripts/fuzz.sh --help)"
	fi
	echo "$((10#$1))"
}

# A harness: its name, its sources and its seeds, found once by resolve().
declare -A H_SRC H_SEEDS
# resolve ARG: sets NAME, H_SRC[NAME] and H_SEEDS[NAME], or dies.
NAME=
resolve() {
	local a=$1 name dir
	case $a in
	*.c)
		[ -f "$a" ] || die "no harness file '$a'"
		name=$(basename "$a" .c); dir=$(cd "$(dirname "$a")" && pwd)
		;;
	*)
		if ! [[ $a =~ ^[A-Za-z0-9_]+$ ]] || ! [ -f "tests/fuzz/$a.c" ]; then
			die "unknown harness '$a': name tests/fuzz/NAME.c (fuzz_ops fuzz_mt fuzz_load fuzz_example) or give PATH/NAME.c"
		fi
		name=$a; dir=$ROOT/tests/fuzz
		;;
	esac
	grep -q LLVMFuzzerTestOneInput "$dir/$name.c" || die "$dir/$name.c has no LLVMFuzzerTestOneInput"
	H_SRC[$name]="$dir/$name.c $(compgen -G "$dir/${name}_*.c" | tr '\n' ' ')"
	H_SEEDS[$name]=$dir/corpus/$name
	NAME=$name
}

# harnesses ARG...: the names, every argument checked before any build.
HARNESSES=()
harnesses() {
	local a
	HARNESSES=()
	[ $# -gt 0 ] || set -- "${DEFAULT_HARNESSES[@]}"
	for a in "$@"; do
		resolve "$a"
		HARNESSES+=("$NAME")
	done
}

# build_lib <dir> <cc> <cflags>: the static library through the normal CMake lists.
build_lib() {
	local dir=$1 cc=$2 cflags=$3 cxx=clang++
	[ "$cc" = afl-clang-fast ] && cxx=afl-clang-fast++
	try cmake -S "$ROOT" -B "$dir/lib" -DCMAKE_BUILD_TYPE=Debug -DBGA_DEBUG=ON -DBGA_EXAMPLES=OFF \
		-DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_FLAGS="$cflags" >/dev/null
	try cmake --build "$dir/lib" -j "$JOBS" --target bgalloc_static >/dev/null
}

INCS="-Iinclude -Itests/support"
for l in base prim core alloc persist inspect; do INCS+=" -Ilib/$l"; done

LF_DIR=${FUZZ_WORKDIR:-$ROOT/build/fuzz-libfuzzer}
AFL_DIR=${FUZZ_WORKDIR:-$ROOT/build/fuzz-afl}
COV_DIR=${FUZZ_WORKDIR:-$ROOT/build/fuzz-cov}
LF_SAN="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
LF_SAN+=" -fsanitize-ignorelist=$ROOT/tests/fuzz/sanitize-ignore.txt"
LF_ENV=(ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)

# link <cc> <harness> <out> [cflags/objects...]: one harness of a build.
link() {
	local cc=$1 h=$2 out=$3; shift 3
	# shellcheck disable=SC2086,SC2046
	try $cc -std=gnu11 -Wall -Wextra -DBGA_DEBUG=1 "$@" $INCS ${H_SRC[$h]} \
		"$(dirname "$out")"/refmodel*.o "$(dirname "$out")/lib/libbgalloc.a" $(libs) -o "$out"
}

# model <dir> <cc> <flags>: the reference model, the oracle, not the code
# under test: built without coverage instrumentation (still under the
# sanitizers), so libFuzzer's callbacks are not paid on every block it
# compares and its branches do not count as features.
model() {
	local m
	for m in tests/support/refmodel*.c; do
		# shellcheck disable=SC2086
		try $2 -std=gnu11 -Wall -Wextra $3 -DBGA_DEBUG=1 -Iinclude -Itests/support -c "$m" -o "$1/$(basename "$m" .c).o"
	done
}

build_libfuzzer() {
	local dir=$LF_DIR h
	[ -n "${FUZZ_NO_BUILD:-}" ] && return 0
	# The checker (bga_check) is the oracle too: left out of the coverage
	# instrumentation of the library, not of the sanitizers (why, and the
	# measured gain: tests/fuzz/coverage-ignore.txt,
	# docs/HISTORY.md#the-first-round-0b7aa7f-and-before).
	local cov="-fsanitize-coverage-ignorelist=$ROOT/tests/fuzz/coverage-ignore.txt"
	command -v clang >/dev/null || die "clang is missing (scripts/deps.sh fuzz)"
	echo "== fuzz: building libFuzzer targets in $dir"
	mkdir -p "$dir"
	build_lib "$dir" clang "$LF_SAN $cov -fsanitize=fuzzer-no-link"
	model "$dir" clang "$LF_SAN"
	for h in "${HARNESSES[@]}"; do
		# shellcheck disable=SC2086
		link clang "$h" "$dir/$h" $LF_SAN -fsanitize=fuzzer
	done
	# The floor of an input: the library alone in this build (bench/fuzz/fuzz_floor.c).
	# shellcheck disable=SC2046,SC2086
	try clang -std=gnu11 -Wall -Wextra $LF_SAN -fsanitize=fuzzer-no-link -Iinclude -Itests/support bench/fuzz/fuzz_floor.c \
		"$dir/lib/libbgalloc.a" $(libs) -o "$dir/fuzz_floor"
}

build_afl() {
	local dir=$AFL_DIR h
	[ -n "${FUZZ_NO_BUILD:-}" ] && return 0
	command -v afl-clang-fast >/dev/null || die "afl-clang-fast is missing (scripts/deps.sh fuzz)"
	echo "== fuzz: building AFL++ targets in $dir"
	mkdir -p "$dir"
	export AFL_USE_ASAN=1 AFL_USE_UBSAN=1 AFL_QUIET=1
	local ign="-g -O1 -fsanitize-ignorelist=$ROOT/tests/fuzz/sanitize-ignore.txt"
	build_lib "$dir" afl-clang-fast "$ign"
	model "$dir" afl-clang-fast "$ign"
	for h in "${HARNESSES[@]}"; do
		# shellcheck disable=SC2086
		link afl-clang-fast "$h" "$dir/$h" $ign tests/fuzz/afl_driver.c
	done
	unset AFL_USE_ASAN AFL_USE_UBSAN AFL_QUIET
}

# signature <report>: what names a bug in a crash report, numbers left out:
# the harness's own message (a line "NAME: ..."), or the sanitizer's kind
# and the first three frames in this project's code.
signature() {
	local msg frames
	msg=$(grep -m1 -E '^(fuzz_[A-Za-z0-9_]*|bgalloc|bga_[a-z_]*): ' "$1")
	[ -n "$msg" ] || msg=$(grep -m1 -E 'runtime error: ' "$1" | sed -E 's/^.*runtime error: //')
	[ -n "$msg" ] || msg=$(grep -m1 -E '==[0-9]+==ERROR: ' "$1" | sed -E 's/^==[0-9]+==ERROR: //; s/ on (address|unknown address).*//')
	# frames in this tree's files only (not libFuzzer's, the sanitizers' or libc's)
	frames=$(grep -E '^ *#[0-9]+ 0x[0-9a-f]+ in ' "$1" | grep -E " in [^ ]+ ${ROOT//./\\.}/[^ (]+:[0-9]+" |
		sed -E 's/^ *#[0-9]+ 0x[0-9a-f]+ in ([^ ]+).*/\1/' | head -3 | tr '\n' ' ')
	[ -n "$msg$frames" ] || msg=$(grep -m1 -iE 'deadly signal|timeout|out-of-memory|abort' "$1")
	printf '%s | %s\n' "$msg" "$frames" | sed -E 's/0x[0-9a-fA-F]+/N/g; s/[0-9]+/N/g'
}

# route <harness> <replay-command...> -- <files...>: each crashing input
# replayed once for its report, then kept as tests/fuzz/crashes/H-SIG, the
# smallest input of its signature.  Prints "FOUND DISTINCT FILES...".
route() {
	local h=$1; shift
	local cmd=() f sig id dst n=0 names=() log=$WORKDIR/replay.log
	while [ "$1" != -- ]; do cmd+=("$1"); shift; done; shift
	mkdir -p "$CRASHES"
	for f in "$@"; do
		[ -f "$f" ] || continue
		n=$((n + 1))
		if "${cmd[@]}" "$f" >"$log" 2>&1 </dev/null; then
			# AFL++'s persistent mode runs many inputs in one process:
			# such an input needed the state the ones before it left.
			sig="(no crash when replayed alone: state from earlier inputs, or a race)"
		else
			sig=$(signature "$log")
		fi
		id=$(printf '%s' "$sig" | sha1sum | cut -c1-12)
		dst=$CRASHES/$h-$id
		if [ ! -f "$dst" ] || [ "$(stat -c %s "$f")" -lt "$(stat -c %s "$dst")" ]; then
			cp "$f" "$dst"
		fi
		printf '%s\t%s\t%s\n' "$h-$id" "$sig" "$f" >>"$WORKDIR/crashes.txt"
		case " ${names[*]} " in *" $dst "*) ;; *) names+=("$dst") ;; esac
	done
	echo "$n ${#names[@]} ${names[*]}"
}

# finds <harness>: each bug of this run's crashes.txt, once: "!! find: SIG -> FILE".
finds() {
	[ -f "$WORKDIR/crashes.txt" ] || return 0
	awk -F'\t' -v h="$1" -v dir="$CRASHES" 'index($1, h "-") == 1 && !seen[$1]++ {
		printf "!! %s find: %s -> %s/%s\n", h, $2, dir, $1 }' "$WORKDIR/crashes.txt"
}

# lf_replay <harness> <file>: the libFuzzer build on one input.
lf_replay() { env "${LF_ENV[@]}" "$LF_DIR/$1" -runs=1 "$2"; }
# afl_replay <harness> <file>: the AFL++ build reads its input on stdin.
afl_replay() { ASAN_OPTIONS=abort_on_error=1:symbolize=1:detect_leaks=0 "$AFL_DIR/$1" <"$2"; }

run_libfuzzer() {
	local secs=$1 h log rc status=0 eps runs took last cov ft corp art found
	WORKDIR=$LF_DIR
	: >"$LF_DIR/summary.txt"
	: >"$LF_DIR/crashes.txt"
	for h in "${HARNESSES[@]}"; do
		mkdir -p "$LF_DIR/corpus/$h" "$LF_DIR/artifacts/$h"
		rm -f "$LF_DIR/artifacts/$h"/*
		log=$LF_DIR/$h.log
		echo "== fuzz: libFuzzer $h for ${secs}s (log $log)"
		rc=0
		local seeds=()
		[ -d "${H_SEEDS[$h]}" ] && seeds=("${H_SEEDS[$h]}")
		# shellcheck disable=SC2086
		rm -f "$LF_DIR"/fuzz-[0-9]*.log # -jobs=N: a log per job, here
		(cd "$LF_DIR" && env "${LF_ENV[@]}" "$LF_DIR/$h" -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 \
			-print_final_stats=1 -artifact_prefix="$LF_DIR/artifacts/$h/" ${FUZZ_ARGS:-} \
			"$LF_DIR/corpus/$h" "${seeds[@]}") >"$log" 2>&1 || rc=$?
		# libFuzzer's own figures: its final stats, else its last status
		# line; with -jobs, the jobs' own logs, summed (they ran at once).
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
		eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
		if [ -z "$eps" ] && compgen -G "$LF_DIR/fuzz-[0-9]*.log" >/dev/null; then
			runs=$(cat "$LF_DIR"/fuzz-[0-9]*.log | awk '/^stat::number_of_executed_units:/ { s += $2 } END { print s + 0 }')
			eps=$(cat "$LF_DIR"/fuzz-[0-9]*.log | awk '/^stat::average_exec_per_sec:/ { s += $2 } END { print s + 0 }')
			cat "$LF_DIR"/fuzz-[0-9]*.log >>"$log"
		fi
		last=$(grep -E '^#[0-9]+[[:space:]]+(DONE|NEW|REDUCE|pulse|INITED|RELOAD)|^#[0-9]+: cov:' "$log" | tail -1)
		[ -n "$eps" ] || eps=$(sed -n 's/.* exec\/s: \([0-9]*\).*/\1/p' <<<"$last")
		[ -n "$runs" ] || runs=$(sed -n 's/^#\([0-9]*\).*/\1/p' <<<"$last")
		took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
		cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
		ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
		corp=$(find "$LF_DIR/corpus/$h" -type f | wc -l)
		art=()
		# crash-, leak-, timeout-, oom-: findings; slow-unit- is not one
		for f in "$LF_DIR/artifacts/$h"/{crash,leak,timeout,oom}-*; do [ -f "$f" ] && art+=("$f"); done
		found="0 0"
		if [ ${#art[@]} -gt 0 ]; then
			found=$(route "$h" lf_replay "$h" -- "${art[@]}")
		fi
		if [ "$rc" -ne 0 ] || [ ${#art[@]} -gt 0 ]; then
			status=1
			echo "!! $h FOUND A PROBLEM (exit $rc):"
			grep -E '^(fuzz_|bgalloc:|==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -5
			[ ${#art[@]} -gt 0 ] || tail -5 "$log"
		fi
		read -r nfound ndistinct where <<<"$found"
		# A run a crash ended prints no "Done ... in N second(s)".
		[ -n "$took" ] || took=$(awk -v r="${runs:-0}" -v e="${eps:-0}" 'BEGIN { printf "~%d", (e > 0 ? r / e + 0.5 : 0) }')
		finds "$h"
		printf '%-10s libfuzzer %8s execs in %4ss = %7s execs/s  cov %s ft %s  corpus %s (%s)  crashes %s (%s distinct)%s  exit %d\n' \
			"$h" "${runs:-?}" "$took" "${eps:-?}" "${cov:-?}" "${ft:-?}" \
			"$corp" "$LF_DIR/corpus/$h" "$nfound" "$ndistinct" "${where:+ -> $where}" "$rc" |
			tee -a "$LF_DIR/summary.txt"
	done
	return $status
}

run_afl() {
	local secs=$1 h out eps execs stab status=0 f seeds found
	WORKDIR=$AFL_DIR
	: >"$AFL_DIR/summary.txt"
	: >"$AFL_DIR/crashes.txt"
	for h in "${HARNESSES[@]}"; do
		out=$AFL_DIR/out/$h
		mkdir -p "$out"
		seeds=${H_SEEDS[$h]}
		if [ ! -d "$seeds" ]; then
			seeds=$AFL_DIR/seeds/$h
			mkdir -p "$seeds"
			[ -n "$(ls -A "$seeds")" ] || printf '\0' >"$seeds/zero"
		fi
		echo "== fuzz: AFL++ $h for ${secs}s (output $out, resumed when it holds a queue)"
		# AFL_AUTORESUME: a kept output directory is resumed, its queue reused.
		# shellcheck disable=SC2086
		AFL_AUTORESUME=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_AFFINITY=1 AFL_NO_UI=1 \
		AFL_SKIP_CRASHES=0 ASAN_OPTIONS=abort_on_error=1:symbolize=0:detect_leaks=0 \
			timeout -k 10 $((secs + 60)) afl-fuzz -V "$secs" -m none -t 2000 ${AFL_ARGS:-} -i "$seeds" \
			-o "$out" -- "$AFL_DIR/$h" >"$AFL_DIR/$h.log" 2>&1
		# afl-fuzz exits 1 when -V ends the run: judge by its stats file.
		local stats
		stats=$(compgen -G "$out/*/fuzzer_stats" | head -1)
		if [ -z "$stats" ]; then
			echo "!! afl-fuzz did not run, see $AFL_DIR/$h.log"
			tail -5 "$AFL_DIR/$h.log"
			status=1
			continue
		fi
		eps=$(sed -n 's/^execs_per_sec *: *//p' "$stats")
		execs=$(sed -n 's/^execs_done *: *//p' "$stats")
		stab=$(sed -n 's/^stability *: *//p' "$stats")
		local crashes=()
		for f in "$(dirname "$stats")"/crashes/id*; do [ -f "$f" ] && crashes+=("$f"); done
		found="0 0"
		[ ${#crashes[@]} -eq 0 ] || found=$(route "$h" afl_replay "$h" -- "${crashes[@]}")
		read -r nfound ndistinct where <<<"$found"
		[ "$nfound" -eq 0 ] || { status=1; echo "!! $h: $nfound crashing inputs, $ndistinct distinct"; finds "$h"; }
		# Stability below 90%: the same input takes other paths on a rerun
		# (fuzz_mt's threads interleave differently by design).
		local note=
		[ -n "$stab" ] && [ "${stab%%.*}" -lt 90 ] 2>/dev/null && note="  (stability $stab: paths vary between runs of one input)"
		# execs_done and the crashes count the output directory's whole life (resumed runs too)
		printf '%-10s afl       %7s execs/s in %4ss (%s execs since the queue began)  stability %s  queue %s  crashes %s (%s distinct)%s%s\n' \
			"$h" "$eps" "$secs" "$execs" "${stab:-?}" "$(dirname "$stats")/queue" "$nfound" "$ndistinct" \
			"${where:+ -> $where}" "$note" | tee -a "$AFL_DIR/summary.txt"
	done
	return $status
}

# cov: the libFuzzer main with clang's source-based coverage replays each
# corpus (-runs=0) into one profile; llvm-cov writes the HTML report.
run_cov() {
	local dir=$COV_DIR h bins=() dirs profdata=llvm-profdata llvmcov=llvm-cov
	command -v llvm-profdata-14 >/dev/null && profdata=llvm-profdata-14
	command -v llvm-cov-14 >/dev/null && llvmcov=llvm-cov-14
	command -v "$llvmcov" >/dev/null || die "llvm-cov is missing (apt-get install llvm)"
	local flags="-g -O1 -fprofile-instr-generate -fcoverage-mapping"
	mkdir -p "$dir"
	rm -f "$dir"/*.profraw
	if [ -z "${FUZZ_NO_BUILD:-}" ]; then
		echo "== fuzz: building coverage targets in $dir"
		build_lib "$dir" clang "$flags -fsanitize=fuzzer-no-link"
		model "$dir" clang "-g -O1"
	fi
	for h in "${HARNESSES[@]}"; do
		# shellcheck disable=SC2086
		[ -n "${FUZZ_NO_BUILD:-}" ] || link clang "$h" "$dir/$h" $flags -fsanitize=fuzzer
		dirs=()
		for d in "$LF_DIR/corpus/$h" "${H_SEEDS[$h]}" "$ROOT/tests/fuzz/regress/$h" ${FUZZ_COV_CORPUS:-}; do
			[ -d "$d" ] && dirs+=("$d")
		done
		[ ${#dirs[@]} -gt 0 ] || die "$h has no corpus to measure"
		echo "== fuzz: $h replays ${dirs[*]}"
		LLVM_PROFILE_FILE="$dir/$h-%p.profraw" ASAN_OPTIONS=detect_leaks=0 \
			"$dir/$h" -runs=0 "${dirs[@]}" >"$dir/$h.log" 2>&1 || echo "!! $h failed on its corpus, see $dir/$h.log"
		bins+=("$dir/$h")
	done
	try "$profdata" merge -sparse "$dir"/*.profraw -o "$dir/fuzz.profdata"
	local objs=("${bins[0]}") b
	for b in "${bins[@]:1}"; do objs+=(-object "$b"); done
	rm -rf "$dir/html"
	try "$llvmcov" show "${objs[@]}" -instr-profile="$dir/fuzz.profdata" -format=html \
		-output-dir="$dir/html" "$ROOT/lib" >/dev/null
	"$llvmcov" report "${objs[@]}" -instr-profile="$dir/fuzz.profdata" "$ROOT/lib" | tail -1 |
		awk '{ printf "lib/ covered by %s: regions %s, functions %s, lines %s, branches %s\n", "'"${HARNESSES[*]}"'", $4, $7, $10, $13 }' |
		tee "$dir/summary.txt"
	echo "fuzz.sh: report $dir/html/index.html"
}

# checked: the command line is fine; with FUZZ_CHECK_ONLY, that is all.
checked() {
	[ -z "${FUZZ_CHECK_ONLY:-}" ] || { echo "fuzz.sh: the command line is fine"; exit 0; }
}

main() {
	local mode=${1:-} secs h f name out
	[ $# -gt 0 ] && shift
	case $mode in
	-h | --help | help)
		usage
		exit 0
		;;
	libfuzzer | afl)
		[ $# -gt 0 ] || die "$mode SECONDS [HARNESS...]: how many seconds? (scripts/fuzz.sh --help)"
		secs=$(seconds "$1") || exit 2; shift
		harnesses "$@"
		checked
		if [ "$mode" = libfuzzer ]; then
			build_libfuzzer
			run_libfuzzer "$secs"
		else
			build_afl
			run_afl "$secs"
		fi
		;;
	build)
		local which=${1:-libfuzzer}
		[ $# -gt 0 ] && shift
		harnesses "$@"
		case $which in
		libfuzzer) build_libfuzzer ;;
		afl) build_afl ;;
		*) die "build libfuzzer|afl [HARNESS...], not '$which'" ;;
		esac
		checked
		;;
	run)
		[ $# -ge 2 ] || die "run HARNESS FILE|DIR...: a harness and at least one input"
		resolve "$1"; h=$NAME; shift
		for f in "$@"; do [ -e "$f" ] || die "no input '$f'"; done
		HARNESSES=("$h")
		checked
		[ -x "$LF_DIR/$h" ] || build_libfuzzer
		# -runs=0: a directory is replayed, every file once, and nothing is
		# added to it (without it libFuzzer fuzzes into the directory).
		local dirs=() files=()
		for f in "$@"; do if [ -d "$f" ]; then dirs+=("$f"); else files+=("$f"); fi; done
		rc=0
		if [ ${#files[@]} -gt 0 ]; then
			# shellcheck disable=SC2086
			ASAN_OPTIONS=detect_leaks=1:symbolize=1 "$LF_DIR/$h" ${FUZZ_ARGS:-} "${files[@]}" || rc=1
		fi
		if [ ${#dirs[@]} -gt 0 ]; then
			# shellcheck disable=SC2086
			ASAN_OPTIONS=detect_leaks=1:symbolize=1 "$LF_DIR/$h" -runs=0 ${FUZZ_ARGS:-} "${dirs[@]}" || rc=1
		fi
		exit $rc
		;;
	repro)
		# Minimise a crashing input (it must still crash) into
		# tests/fuzz/regress/HARNESS/, where ctest's fuzz_replay_* replays it.
		[ $# -ge 2 ] || die "repro HARNESS FILE [NAME]"
		resolve "$1"; h=$NAME
		f=$2; name=${3:-$(basename "$f")}
		[ -f "$f" ] || die "no input file '$f'"
		[[ $name =~ ^[A-Za-z0-9._-]+$ ]] || die "NAME '$name': letters, digits, . _ - only"
		HARNESSES=("$h")
		checked
		[ -x "$LF_DIR/$h" ] || build_libfuzzer
		mkdir -p "tests/fuzz/regress/$h"
		out=tests/fuzz/regress/$h/$name
		if env "${LF_ENV[@]}" "$LF_DIR/$h" -runs=1 "$f" >"$LF_DIR/$h-repro.log" 2>&1; then
			die "$f does not crash $h (nothing to minimise): $LF_DIR/$h-repro.log"
		fi
		ASAN_OPTIONS=detect_leaks=1:symbolize=0 "$LF_DIR/$h" -minimize_crash=1 -max_total_time=60 \
			-exact_artifact_path="$out" "$f" >>"$LF_DIR/$h-repro.log" 2>&1
		[ -s "$out" ] || die "minimising $f gave nothing: $LF_DIR/$h-repro.log"
		echo "fuzz.sh: $out ($(stat -c %s "$out") bytes, was $(stat -c %s "$f")); fix the bug, then: ctest -R fuzz_replay"
		;;
	share)
		# The harness's share of a run from the seeds, and the ceiling
		# libFuzzer's own work per input leaves (bench/fuzz/fuzz_share.c).
		[ $# -eq 2 ] || die "share HARNESS SECONDS"
		resolve "$1"; h=$NAME
		secs=$(seconds "$2") || exit 2
		HARNESSES=("$h")
		checked
		[ -f "$LF_DIR/refmodel.o" ] || build_libfuzzer
		# shellcheck disable=SC2086
		try clang -std=gnu11 -Wall -Wextra $LF_SAN -c bench/fuzz/fuzz_share.c -o "$LF_DIR/share.o"
		# shellcheck disable=SC2086
		link clang "$h" "$LF_DIR/$h-share" $LF_SAN -fsanitize=fuzzer -DLLVMFuzzerTestOneInput=fz_share_harness "$LF_DIR/share.o"
		local d=$LF_DIR/share-corpus/$h
		rm -rf "$d" && mkdir -p "$d"
		[ -d "${H_SEEDS[$h]}" ] && cp "${H_SEEDS[$h]}"/* "$d"/
		ASAN_OPTIONS=detect_leaks=1 "$LF_DIR/$h-share" -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 "$d" 2>&1 |
			grep -E '^(share:|#[0-9]+[[:space:]]+DONE)'
		;;
	floor)
		[ $# -eq 0 ] || die "floor takes no arguments"
		harnesses
		checked
		[ -x "$LF_DIR/fuzz_floor" ] || build_libfuzzer
		ASAN_OPTIONS=detect_leaks=1 "$LF_DIR/fuzz_floor"
		;;
	merge)
		# Minimise each harness's working corpus (libFuzzer -merge=1): the
		# units of build/fuzz-libfuzzer/corpus/H and its seeds that add
		# coverage, into a fresh working corpus.
		harnesses "$@"
		checked
		build_libfuzzer
		local d=$LF_DIR/corpus seeds
		for h in "${HARNESSES[@]}"; do
			rm -rf "$d/$h.merged" && mkdir -p "$d/$h.merged" "$d/$h"
			seeds=()
			[ -d "${H_SEEDS[$h]}" ] && seeds=("${H_SEEDS[$h]}")
			"$LF_DIR/$h" -merge=1 "$d/$h.merged" "$d/$h" "${seeds[@]}" >"$LF_DIR/$h-merge.log" 2>&1 ||
				die "merging $h failed: $LF_DIR/$h-merge.log"
			echo "fuzz.sh: $h corpus $(find "$d/$h" -type f | wc -l) -> $(find "$d/$h.merged" -type f | wc -l) units"
			rm -rf "${d:?}/$h" && mv "$d/$h.merged" "$d/$h"
		done
		;;
	cov)
		harnesses "$@"
		checked
		run_cov
		;;
	'')
		usage >&2
		exit 2
		;;
	*)
		die "unknown command '$mode' (scripts/fuzz.sh --help)"
		;;
	esac
}

main "$@"
