#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The command lines the documents show for the tools of those who fuzz and
# who compare (README.md, docs/*.md, CONTRIBUTING.md, the man pages of
# examples/ and tools/), run as written, with small sizes:
#   bga-lab ...                 + --ops 300 --reps 5 --no-files --quiet (the last
#                               --ops/--reps win; the threads and variants stay)
#   counter_bench, lock_bench   as written (their defaults are small)
#   scripts/fuzz.sh ...         with FUZZ_CHECK_ONLY=1: the command line is checked
#   make fuzz|fuzz-afl|fuzz-cov|fuzz-merge|micro ...   make -n: the target and variables exist
# Each must exit 0.  A line with a placeholder (FILE, HARNESS, SECONDS, "...")
# is skipped and counted.
#   doc_commands_test.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
ran=0 fails=0 placeholders=0

# lines: every code line of a document, continuations joined, comments cut.
lines() {
	case $1 in
	*.md) awk '/^```/ { c = !c; next } c' "$1" ;;
	*.[1-8]) awk '/^\.(nf|EX)/ { c = 1; next } /^\.(fi|EE)/ { c = 0 } c' "$1" | sed 's/\\-/-/g; s/\\(em/--/g' ;;
	esac | sed -e ':a' -e '/\\$/N; s/\\\n */ /; ta' | sed -E 's/[[:space:]]+#[[:space:]].*$//; s/^[$] //'
}

run() { # run DOC LINE DIR CMD...: CMD in DIR
	local doc=$1 line=$2 dir=$3 out rc; shift 3
	ran=$((ran + 1))
	out=$(cd "$dir" && timeout -k 2 120 "$@" 2>&1 </dev/null)
	rc=$?
	if [ $rc = 0 ]; then
		echo "ok   ${doc#"$src"/}: $line"
	else
		echo "FAIL ${doc#"$src"/}: $line: exit $rc: $(tail -3 <<<"$out")"
		fails=$((fails + 1))
	fi
}

docs=("$src/README.md" "$src/CONTRIBUTING.md")
for d in "$src"/docs/*.md "$src"/examples/*.1 "$src"/tools/*/*.1; do [ -f "$d" ] && docs+=("$d"); done
for doc in "${docs[@]}"; do
	[ -f "$doc" ] || continue
	while IFS= read -r line; do
		read -r -a w <<<"$line"
		[ ${#w[@]} -gt 0 ] || continue
		case ${w[0]} in
		bga-lab | counter_bench | ./counter_bench | lock_bench | ./lock_bench | scripts/fuzz.sh | make) ;;
		*) continue ;;
		esac
		if [ "${w[0]}" = make ] && ! [[ ${w[1]:-} =~ ^(fuzz|fuzz-afl|fuzz-cov|fuzz-merge|micro)$ ]]; then
			continue
		fi
		if grep -qE '\.\.\.|path/to/|\b(FILE|HARNESS|SECONDS|DIR|NAME|N|X|A\.json|B\.json)\b|[<>]' <<<"$line"; then
			placeholders=$((placeholders + 1))
			continue
		fi
		# bga-lab in the build's tools/lab/ (where the man page's
		# ./bga-lab-ck.so is; a path into build/release/tools/lab/ is this
		# build's), the user benchmarks in its bench/user/, scripts and make
		# in the source tree
		case ${w[0]} in
		bga-lab)
			w=("${w[@]//build\/release\/tools\/lab\//$build/tools/lab/}")
			run "$doc" "$line" "$build/tools/lab" "$build/tools/lab/${w[0]}" "${w[@]:1}" --ops 300 --reps 5 --no-files --quiet ;;
		*counter_bench | *lock_bench)
			run "$doc" "$line" "$build/bench/user" "$build/bench/user/${w[0]#./}" "${w[@]:1}" ;;
		scripts/fuzz.sh)
			run "$doc" "$line" "$src" env FUZZ_CHECK_ONLY=1 "$src/scripts/fuzz.sh" "${w[@]:1}" ;;
		make)
			run "$doc" "$line" "$src" make -n -s -C "$src" "${w[@]:1}" ;;
		esac
	done < <(lines "$doc")
done
echo "doc_commands: $ran command lines run, $fails failed, $placeholders with placeholders skipped"
[ $fails = 0 ] && [ $ran -gt 0 ]
