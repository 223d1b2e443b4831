#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bga-lab's tools for users who compare: --format json|csv on stdout,
# `bga-lab compare A.json B.json`, and --plugin
# (tools/lab/bga_lab_plugin.h): the example plug-in's
# ck locks and counter run beside the built-in ones with both verdict lines;
# a plug-in whose counter loses adds fails the check (exit 1, verdicts
# inconclusive); a missing file or one without bga_lab_plugin_init is
# refused with a message and exit 2 before anything runs.
#   lab_tools_test.sh BGA_LAB BGA_LAB_CK_SO LAB_BAD_PLUGIN_SO
set -uo pipefail
lab=$1 ck=$2 bad=$3
fail() { echo "lab_tools_test: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --format json: stdout is the JSON alone (file names on stderr); csv: a row per sample
# shellcheck disable=SC2054 # the commas are the option's
run=(counter --threads 1 --modes atomic,percpu --ops 2000 --reps 5 --quiet)
"$lab" "${run[@]}" --out "$tmp/runs" --format json >"$tmp/a.json" || fail "--format json: exit $?"
python3 - "$tmp/a.json" <<'PY' || fail "--format json: not the run's JSON: $(head -c 300 "$tmp/a.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["tool"] == "bga-lab" and len(d["cells"]) == 2 and len(d["verdicts"]) == 1
v = d["verdicts"][0]
assert "p_holm" in v and v["cpu"]["valid"] is True and d["thresholds"]["correction"] == "holm"
PY
"$lab" "${run[@]}" --no-files --format csv >"$tmp/a.csv" || fail "--format csv: exit $?"
[ "$(head -1 "$tmp/a.csv")" = "command,variant,where,threads,rep,ops_per_s,cpu_share,wall_s,cpu_s,steal,ops" ] &&
	[ "$(grep -c '^counter,\(atomic\|percpu\),public API,1,[0-4],' "$tmp/a.csv")" = 10 ] ||
	fail "--format csv: $(cat "$tmp/a.csv")"

# compare: the run's file against the one --out wrote, cell by cell
out=$("$lab" compare "$tmp/a.json" "$(ls "$tmp"/runs/*.json)") || fail "compare: exit $?: $out"
[ "$(grep -cE '^compare(-cpu)? threads=1 (atomic|percpu) B/A=[0-9.]+x( per CPU-second)? reps=5/5 p=[0-9.]+ (p_holm=[0-9.]+: (B faster|B slower|no difference shown|inconclusive .*)|cpu_share=.*: inconclusive .*)$' <<<"$out")" = 4 ] ||
	fail "compare: $out"
for args in "$tmp/a.json" "$tmp/a.json /nonexistent" "$tmp/a.json $tmp/a.csv"; do
	rc=0; out=$("$lab" compare $args 2>&1) || rc=$?
	[ $rc = 2 ] && [ -n "$out" ] || fail "compare $args: exit $rc, '$out'"
done

out=$("$lab" lock --plugin "$ck" --kinds fas,ck-clh,ck-anderson,ck-rwlock --threads 1,2 --ops 500 --reps 5 \
	--no-files 2>&1) || fail "ck locks: exit $?: $out"
for k in ck-clh ck-anderson ck-rwlock; do
	[ "$(grep -cE "^verdict(-cpu)? threads=[12] $k/fas=" <<<"$out")" = 4 ] || fail "$k: not 4 verdict lines: $out"
	grep -q "plug-in $k, 64 slots (plug-in)" <<<"$out" || fail "$k: no table row: $out"
done
out=$("$lab" counter --plugin "$ck" --modes atomic,own-slots --threads 1,2 --ops 5000 --reps 5 --no-files 2>&1) ||
	fail "own-slots: exit $?: $out"
[ "$(grep -cE '^verdict(-cpu)? threads=[12] own-slots/atomic=' <<<"$out")" = 4 ] || fail "own-slots: $out"

rc=0; out=$("$lab" counter --plugin "$bad" --modes atomic,lossy --threads 1 --ops 100 --reps 5 --no-files 2>&1) || rc=$?
[ $rc = 1 ] || fail "a lossy counter: exit $rc, not 1: $out"
grep -q "lossy: sum 0 after" <<<"$out" || fail "a lossy counter: no message: $out"
grep -q "^verdict threads=1 lossy/atomic=.*: inconclusive (a check failed" <<<"$out" || fail "lossy verdict: $out"

for args in "--plugin /nonexistent.so" "--plugin /etc/passwd" "--plugin $ck --modes atomic,ck-clh"; do
	rc=0; out=$("$lab" counter $args --ops 100 --reps 5 --no-files 2>&1 </dev/null) || rc=$?
	[ $rc = 2 ] && [ -n "$out" ] || fail "bga-lab counter $args: exit $rc, '$out'"
done
echo "lab_tools_test: passed"
