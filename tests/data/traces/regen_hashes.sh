#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Write tests/data/traces/hashes.txt: the end hash of every trace here
# replayed against each allocator make test checks (tests/system/replay_test.sh).
# A change to where bgalloc places blocks changes them: rerun this, look
# at the diff, and commit it with that change.
#   tests/data/traces/regen_hashes.sh [BUILD]      (default build/test)
set -euo pipefail
cd "$(dirname "$0")"
R=../../../${1:-build/test}/tools/replay/bga-replay
case ${1:-} in /*) R=$1/tools/replay/bga-replay ;; esac
[ -x "$R" ] || { echo "regen_hashes: no $R" >&2; exit 2; }
{
	echo "# trace allocator hash: written by regen_hashes.sh, checked by tests/system/replay_test.sh"
	# a trace kept in parts (NAME.trace.xz.00, .01, ...: each under 1 MiB)
	# goes by its name; bga-replay reads the parts
	for t in *.trace *.trace.xz *.trace.xz.00; do
		t=${t%.00}
		"$R" run "$t" -a bgalloc -a bgalloc,windows=off -a ext2 | sed -n "s|^hash |$t |p"
	done
} >hashes.txt.new
mv hashes.txt.new hashes.txt
cat hashes.txt
