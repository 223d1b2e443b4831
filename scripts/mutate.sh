#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# make mutate: plant each bug of tests/mutants/*.patch, one at a time, in a
# clean copy of the tree, and see whether make test's suites catch it.
#
#   scripts/mutate.sh [PATCH...]        (default: every tests/mutants/*.patch)
#
# The copy is build/mutate/src (the tracked files as they are in the work
# tree, synced before the run), built once in build/mutate/build with make
# test's configuration; each mutant is then applied, built incrementally
# (only the targets of its tests), its tests run, and the patch reverted.
# A mutant's header names the promise it breaks and the tests to run:
#
#   # promise: <bgalloc/alloc.h> bga_alloc_vec: ...
#   # tests: test_vec test_windows
#   # equivalent: why no test can tell   (only for a mutant written up so)
#
# MUTATE_ALL_TESTS=1 runs every ctest test but bgafs's for each mutant
# instead of its list (slow); MUTATE_FUZZ_SECONDS=N also runs each libFuzzer
# harness for N s on a mutant its tests missed (needs clang; make fuzz's
# build, in the copy).  Prints one line per mutant, KILLED (by which
# tests) or SURVIVED, then the kill rate and the survivors; exits 1 when a
# mutant not written up as equivalent survives.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=${JOBS:-2}
src=build/mutate/src
bld=build/mutate/build
log=build/mutate/log
mkdir -p "$src" "$bld" "$log"

patches=("$@")
[ ${#patches[@]} -gt 0 ] || patches=(tests/mutants/*.patch)

field() { sed -n "s/^# $1: *//p" "$2" | head -1; }

# The clean copy: tracked files as they are now; rsync keeps unchanged
# files' times, so the build stays incremental between runs.
git ls-files -z | rsync -a --checksum --from0 --files-from=- ./ "$src/"

# Tests -> build targets: a Criterion or stress test is its own target;
# fuzz_replay_<h> is fuzz_<h>_replay.
targets_of() {
	local t out=()
	for t in "$@"; do
		case $t in
		fuzz_replay_*) out+=("fuzz_${t#fuzz_replay_}_replay") ;;
		*) out+=("$t") ;;
		esac
	done
	echo "${out[@]}"
}

cmake -S "$src" -B "$bld" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBGA_TESTS=ON -DBGA_DEBUG=ON -DBGA_WERROR=ON \
	>"$log/configure.txt" 2>&1 || { cat "$log/configure.txt"; exit 2; }

all_tests=()
for p in "${patches[@]}"; do
	# shellcheck disable=SC2207
	all_tests+=($(field tests "$p"))
done
mapfile -t all_tests < <(printf '%s\n' "${all_tests[@]}" | sort -u)
regex_of() { local IFS='|'; echo "^($*)\$"; }

run_tests() { # name tests...: builds and runs; prints the failing tests
	local name=$1
	shift
	local tl
	if [ -n "${MUTATE_ALL_TESTS:-}" ]; then
		cmake --build "$bld" -j "$jobs" >"$log/$name.build.txt" 2>&1 || { echo "(build failed)"; return; }
		tl=(ctest --test-dir "$bld" -LE bgafs -j "$jobs" --timeout 300)
	else
		# shellcheck disable=SC2046
		cmake --build "$bld" -j "$jobs" --target $(targets_of "$@") >"$log/$name.build.txt" 2>&1 ||
			{ echo "(build failed)"; return; }
		tl=(ctest --test-dir "$bld" -R "$(regex_of "$@")" -j "$jobs" --timeout 300)
	fi
	"${tl[@]}" >"$log/$name.ctest.txt" 2>&1
	sed -n 's/^[[:space:]]*[0-9]* - \([A-Za-z0-9_]*\) (.*/\1/p' "$log/$name.ctest.txt" | tr '\n' ' '
}

start=$(date +%s)
echo "mutate: the clean copy, built and tested first (${#all_tests[@]} tests)"
failed=$(run_tests clean "${all_tests[@]}")
if [ -n "$failed" ]; then
	echo "mutate: the clean copy fails: $failed (build/mutate/log/clean.*)"
	exit 2
fi

killed=0 survived=0 equivalent=0
survivors=()
printf '%-44s %-9s %s\n' MUTANT RESULT "KILLED BY"
for p in "${patches[@]}"; do
	name=$(basename "$p" .patch)
	# shellcheck disable=SC2207
	tests=($(field tests "$p"))
	if ! patch -s -p1 -d "$src" --dry-run <"$p" >/dev/null 2>&1; then
		printf '%-44s %-9s %s\n' "$name" STALE "(does not apply: rewrite it)"
		survived=$((survived + 1))
		survivors+=("$name (stale)")
		continue
	fi
	patch -s -p1 -d "$src" <"$p"
	failed=$(run_tests "$name" "${tests[@]}")
	if [ -z "$failed" ] && [ -n "${MUTATE_FUZZ_SECONDS:-}" ]; then
		# the copy's own fuzz build (build/mutate/src/build/fuzz-libfuzzer);
		# a crash input lands in the copy's tests/fuzz/crashes
		(cd "$src" && JOBS=$jobs scripts/fuzz.sh libfuzzer "$MUTATE_FUZZ_SECONDS") >"$log/$name.fuzz.txt" 2>&1 ||
			failed="fuzz(build/mutate/log/$name.fuzz.txt)"
	fi
	patch -s -R -p1 -d "$src" <"$p"
	if [ -n "$failed" ]; then
		killed=$((killed + 1))
		printf '%-44s %-9s %s\n' "$name" KILLED "$failed"
	elif [ -n "$(field equivalent "$p")" ]; then
		equivalent=$((equivalent + 1))
		printf '%-44s %-9s %s\n' "$name" EQUIV "$(field equivalent "$p")"
	else
		survived=$((survived + 1))
		survivors+=("$name")
		printf '%-44s %-9s %s\n' "$name" SURVIVED "(ran: ${tests[*]})"
	fi
done
# leave the copy built clean for the next run
run_tests restore "${all_tests[@]:0:1}" >/dev/null
total=$((killed + survived))
echo "mutate: $killed of $total killed ($((total ? 100 * killed / total : 0))%), $equivalent equivalent" \
	"(written up in tests/mutants/README.md), in $(($(date +%s) - start)) s"
if [ ${#survivors[@]} -gt 0 ]; then
	echo "mutate: survivors: ${survivors[*]}"
	exit 1
fi
