#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bga-lab --plugin (examples/lab/bga_lab_plugin.h): the example plug-in's
# ck locks and counter run beside the built-in ones with both verdict lines;
# a plug-in whose counter loses adds fails the check (exit 1, verdicts
# inconclusive); a missing file or one without bga_lab_plugin_init is
# refused with a message and exit 2 before anything runs.
#   lab_plugin_test.sh BGA_LAB BGA_LAB_CK_SO LAB_BAD_PLUGIN_SO
set -uo pipefail
lab=$1 ck=$2 bad=$3
fail() { echo "lab_plugin_test: $*" >&2; exit 1; }

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
echo "lab_plugin_test: passed"
