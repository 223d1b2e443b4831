#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# scripts/fuzz.sh's reporting, without clang: stand-in harnesses (shell
# scripts that print what libFuzzer prints) in a scratch work directory
# (FUZZ_WORKDIR, FUZZ_NO_BUILD=1).  Checks that a crash in one harness does
# not stop the others, that execs/s is libFuzzer's own figure, that crashes
# are kept one file per bug, that `run` replays a directory (-runs=0)
# instead of fuzzing into it, that FUZZ_ARGS reaches libFuzzer, and that a
# harness of your own, named by its path, gets the same.
set -uo pipefail
root=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # check WHAT COND...
	local what=$1; shift
	if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}

wd=$tmp/work
mkdir -p "$wd" "$tmp/crashes" "$tmp/mine"
# fake NAME EXECS_PER_SEC MESSAGE: a libFuzzer stand-in.  With
# -max_total_time it "fuzzes": finds MESSAGE (two inputs of one bug) or,
# when MESSAGE is empty, nothing; with -runs=N it replays its files.
fake() {
	cat >"$wd/$1" <<EOF
#!/usr/bin/env bash
echo "\$*" >>"$wd/$1.args"
prefix=; fuzzing=0
for a in "\$@"; do
	case \$a in
	-artifact_prefix=*) prefix=\${a#-artifact_prefix=} ;;
	-max_total_time=*) fuzzing=1 ;;
	esac
done
if [ \$fuzzing = 0 ]; then
	[ -z "$3" ] && exit 0
	for a in "\$@"; do [ -f "\$a" ] && echo "$3 \$(wc -c <"\$a")"; done
	printf '    #0 0x4f00 in abort\n    #1 0x4f10 in fail $root/tests/fuzz/$1.c:40:2\n' >&2
	exit 1
fi
echo "INFO: Seed: 1"
case " \$* " in *" -jobs=2 "*)
	for j in 0 1; do printf 'stat::number_of_executed_units: 100\nstat::average_exec_per_sec:     $2\n' >fuzz-\$j.log; done
	echo "Job 0 exited with exit code 0"; exit 0 ;;
esac
if [ -n "$3" ]; then
	printf 'a' >"\${prefix}crash-1"; printf 'bbbb' >"\${prefix}crash-2"
	echo "$3 \$RANDOM"
	echo "==12==ERROR: AddressSanitizer: ABRT on unknown address"
	echo "stat::number_of_executed_units: \$(( $2 * 3 ))"
	echo "stat::average_exec_per_sec:     $2"
	exit 1
fi
echo "#2 INITED cov: 10 ft: 20 corp: 1/1b exec/s: 0 rss: 30Mb"
echo "#5000 DONE cov: 12 ft: 30 corp: 2/2b lim: 4 exec/s: $2 rss: 30Mb"
echo "Done 5000 runs in 2 second(s)"
echo "stat::number_of_executed_units: 5000"
echo "stat::average_exec_per_sec:     $2"
EOF
	chmod +x "$wd/$1"
}
fake fuzz_ops 335 'fuzz_ops: block free in the model, used in the volume:'
fake fuzz_mt 2500 ''
fake fuzz_load 295 'fuzz_load: bga_load accepted a damaged image:'

export FUZZ_WORKDIR=$wd FUZZ_NO_BUILD=1 FUZZ_CRASHES=$tmp/crashes
out=$("$root/scripts/fuzz.sh" libfuzzer 1 2>&1)
rc=$?
echo "$out" | sed 's/^/  | /'
sum=$(grep -E '^fuzz_(ops|mt|load) +libfuzzer' <<<"$out")
check "exit 1 when a harness found something" [ $rc = 1 ]
check "one summary line per harness" [ "$(wc -l <<<"$sum")" = 3 ]
check "summary.txt holds the same lines" [ "$(cat "$wd/summary.txt")" = "$sum" ]
check "fuzz_ops's execs/s is libFuzzer's own (335)" grep -qE '^fuzz_ops .* 335 execs/s' <<<"$sum"
check "fuzz_load's execs/s is libFuzzer's own (295)" grep -qE '^fuzz_load .* 295 execs/s' <<<"$sum"
check "fuzz_mt ran after fuzz_ops crashed" grep -qE '^fuzz_mt .* 2500 execs/s .*crashes 0 ' <<<"$sum"
check "two crashes of one bug are one find" grep -qE '^fuzz_ops .*crashes 2 \(1 distinct\)' <<<"$sum"
check "the find is named" grep -q 'fuzz_ops: block free in the model' <<<"$out"
check "one file per bug in crashes/" [ "$(find "$tmp/crashes" -type f | wc -l)" = 2 ]
check "the smallest input of a bug is kept" [ "$(cat "$tmp/crashes"/fuzz_ops-*)" = a ]

# run HARNESS DIR: replayed with -runs=0, nothing added to DIR.
mkdir -p "$tmp/corpus"
printf x >"$tmp/corpus/one"
: >"$wd/fuzz_mt.args"
FUZZ_ARGS='-dict=my.dict' "$root/scripts/fuzz.sh" run fuzz_mt "$tmp/corpus" >/dev/null 2>&1
check "run DIR replays with -runs=0" grep -qE -- "-runs=0 .*$tmp/corpus" "$wd/fuzz_mt.args"
check "FUZZ_ARGS reaches libFuzzer" grep -q -- '-dict=my.dict' "$wd/fuzz_mt.args"
check "run DIR adds nothing to DIR" [ "$(ls "$tmp/corpus")" = one ]
check "run on a missing input fails" bash -c "! '$root/scripts/fuzz.sh' run fuzz_mt /nonexistent 2>/dev/null"

# -jobs=2: the jobs' logs in the work directory, their execs/s summed.
out=$(FUZZ_ARGS=-jobs=2 "$root/scripts/fuzz.sh" libfuzzer 1 fuzz_mt 2>&1)
check "-jobs=2: the jobs' execs/s summed" grep -qE '^fuzz_mt +libfuzzer +200 execs .* 5000 execs/s' <<<"$out"

# A harness of your own, by its path, with its corpus beside it.
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\n' >"$tmp/mine/fuzz_mine.c"
fake fuzz_mine 77 ''
out=$("$root/scripts/fuzz.sh" libfuzzer 1 "$tmp/mine/fuzz_mine.c" 2>&1)
check "your own harness gets a summary line" grep -qE '^fuzz_mine +libfuzzer .* 77 execs/s' <<<"$out"

# AFL++: a stand-in afl-fuzz on PATH writes what afl-fuzz writes; the
# output directory must be kept (and resumed) and its crashes kept one
# file per bug, an input that does not crash alone named so.
mkdir -p "$tmp/bin" "$tmp/afl"
cat >"$tmp/bin/afl-fuzz" <<'EOF2'
#!/usr/bin/env bash
out=
while [ $# -gt 0 ]; do case $1 in -o) out=$2; shift ;; --) break ;; esac; shift; done
d=$out/default
[ -f "$d/fuzzer_stats" ] && [ "${AFL_AUTORESUME:-}" = 1 ] && echo resumed >>"$out/../resumes"
mkdir -p "$d/queue" "$d/crashes"
printf 'a' >"$d/crashes/id:000000,sig:06"; printf 'bb' >"$d/crashes/id:000001,sig:06"
printf 'zzz' >"$d/crashes/id:000002,sig:06"
printf 'execs_done        : 90279\nexecs_per_sec     : 3006.69\nstability         : 11.00%%\n' >"$d/fuzzer_stats"
exit 1
EOF2
cat >"$tmp/afl/fuzz_mt" <<'EOF2'
#!/usr/bin/env bash
in=$(cat)
[ ${#in} -lt 3 ] || exit 0
echo "fuzz_mt: free_exact ${#in}, expected 9" >&2
exit 1
EOF2
chmod +x "$tmp/bin/afl-fuzz" "$tmp/afl/fuzz_mt"
for _ in 1 2; do
	out=$(PATH=$tmp/bin:$PATH FUZZ_WORKDIR=$tmp/afl FUZZ_CRASHES=$tmp/afl-crashes "$root/scripts/fuzz.sh" afl 1 fuzz_mt 2>&1)
	rc=$?
done
echo "$out" | sed 's/^/  | /'
check "afl: exit 1 after a find" [ $rc = 1 ]
check "afl: afl-fuzz's own execs/s and stability" grep -qE '^fuzz_mt +afl +3006.69 execs/s .*stability 11.00%' <<<"$out"
check "afl: a stability under 90% is pointed out" grep -q 'paths vary between runs of one input' <<<"$out"
check "afl: three crashing inputs, two files" grep -qE 'crashes 3 \(2 distinct\)' <<<"$out"
check "afl: one file per bug" [ "$(find "$tmp/afl-crashes" -type f | wc -l)" = 2 ]
check "afl: an input that does not crash alone is named so" grep -q 'no crash when replayed alone' <<<"$out"
check "afl: the second run resumed the kept output" [ "$(cat "$tmp/afl/out/resumes" 2>/dev/null)" = resumed ]

if [ $fails -ne 0 ]; then echo "fuzz_sh_test: $fails failed"; exit 1; fi
echo "fuzz_sh_test: all passed"
