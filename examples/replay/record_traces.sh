#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Record the traces of tests/data/traces/ again (docs/TRACE.md), as root
# with /dev/fuse and dbench:
#   bgafs-dbench.trace     bgafs (mount -o trace=) under dbench, 2 clients, 3 s, 256M image
#   bgafs-exerciser.trace  bgafs under the data-integrity exerciser (bgafs_exerciser,
#                          seed 1, 1500 ops, 48M image); where the build has none,
#                          bgafs-churn.trace: bgafs under bgafs_churn (seed 1, 2000 ops to 90%)
#   objects.trace          bga-rec-objects: Ceph-like objects at a 64 KiB unit to 90% full
# Each bgafs trace is checked: applied with its recorded results
# (bga-replay run --verify), it ends in the free map of the image the
# unmount left.  Then the hashes (tests/data/traces/regen_hashes.sh).
#   examples/replay/record_traces.sh [BUILD]      (default build/test)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/test}
R=$build/examples/replay/bga-replay
BGAFS=$build/examples/bgafs/bgafs
out=tests/data/traces
for x in "$R" "$BGAFS" "$build/examples/replay/bga-rec-objects"; do
	[ -x "$x" ] || { echo "record_traces: no $x (build it first)" >&2; exit 2; }
done
command -v dbench >/dev/null || { echo "record_traces: dbench missing (scripts/deps.sh fscompare)" >&2; exit 2; }
. bench/support/fuse_mount.sh
fuse_setup "$(mktemp -d /tmp/record_traces.XXXXXX)"

record() { # record NAME SIZE COMMAND...: the command runs with $mnt mounted, traced
	local name=$1 size=$2
	shift 2
	rm -f "$work/img"
	"$BGAFS" mkfs "$work/img" "$size" >/dev/null
	"$BGAFS" mount -f -o "trace=$work/$name.trace" "$work/img" "$mnt" 2>"$work/log" &
	fuse_wait_mounted bgafs "$work/log"
	"$@"
	umount_fs
	local want got
	want=$("$R" hash "$work/img" --offset 8192 | sed -n 's/^hash //p')
	got=$("$R" run "$work/$name.trace" --verify | sed -n 's/^hash [^ ]* --verify //p')
	[ "$want" = "$got" ] || { echo "record_traces: $name: --verify ends in $got, the image in $want" >&2; exit 1; }
	cp "$work/$name.trace" "$out/$name.trace"
	echo "$out/$name.trace: $(stat -c %s "$out/$name.trace") bytes, --verify ends in the image's free map ($want)"
}

ns=()
if unshare -i true 2>/dev/null; then ns=(unshare -i); fi # dbench's semaphore (bgafs_test.sh says why)
dbench2() { "${ns[@]}" dbench -c /usr/share/dbench/client.txt -t 3 2 -D "$mnt" | grep -E '^Throughput|ERROR'; }
record bgafs-dbench 256M dbench2
ex=$build/examples/bgafs/tests/bgafs_exerciser
if [ -x "$ex" ]; then
	rm -f "$out/bgafs-churn.trace"
	record bgafs-exerciser 48M "$ex" -s 1 -n 1500 -S "$work/state" "$mnt"
else
	echo "record_traces: no $ex: bgafs under bgafs_churn instead"
	record bgafs-churn 48M "$build/examples/bgafs/tests/bgafs_churn" "$mnt" 1 2000 90
fi
"$build/examples/replay/bga-rec-objects" "$out/objects.trace" 1 16384
tests/data/traces/regen_hashes.sh "$build"
