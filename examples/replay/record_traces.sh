#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Record the traces of tests/data/traces/ again (docs/TRACE.md), as root
# with /dev/fuse and dbench:
#   bgafs-dbench.trace     bgafs (mount -o trace=) under dbench, 2 clients, 3 s, 256M image
#   bgafs-exerciser.trace  bgafs under the data-integrity exerciser (bgafs_exerciser,
#                          seed 1, 4 processes, 500 ops each, 32M image: it fills the
#                          image), then two of its four process directories removed,
#                          so that the trace ends with free space to judge
#   objects.trace          bga-rec-objects: Ceph-like objects at a 64 KiB unit to 90% full
# Each bgafs trace is checked: applied with its recorded results
# (bga-replay run --verify), it ends in the free map of the image the
# unmount left.  Then the hashes (tests/data/traces/regen_hashes.sh).
#   examples/replay/record_traces.sh [BUILD [dbench|exerciser|objects]...]
# (default build/test, all three)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/test}
[ $# -gt 0 ] && shift
which=${*:-dbench exerciser objects}
R=$build/examples/replay/bga-replay
BGAFS=$build/examples/bgafs/bgafs
out=tests/data/traces
ex=$build/examples/bgafs/tests/bgafs_exerciser
for x in "$R" "$BGAFS" "$build/examples/replay/bga-rec-objects" "$ex"; do
	[ -x "$x" ] || { echo "record_traces: no $x (build it first)" >&2; exit 2; }
done
command -v dbench >/dev/null || { echo "record_traces: dbench missing (scripts/deps.sh fscompare)" >&2; exit 2; }
# shellcheck source=bench/support/fuse_mount.sh
. bench/support/fuse_mount.sh
# shellcheck source=bench/support/fsload.sh
. bench/support/fsload.sh
fuse_setup "$(mktemp -d /tmp/record_traces.XXXXXX)"

record() { # record NAME SIZE COMMAND...: the command runs with $mnt mounted, traced
	local name=$1 size=$2
	shift 2
	bgafs_mount_fresh "$BGAFS" "$size" "$work/log" -o "trace=$work/$name.trace"
	"$@"
	umount_fs
	local want got
	want=$("$R" hash "$work/img" --offset 8192 | sed -n 's/^hash //p')
	got=$("$R" run "$work/$name.trace" --verify | sed -n 's/^hash [^ ]* --verify //p')
	[ "$want" = "$got" ] || { echo "record_traces: $name: --verify ends in $got, the image in $want" >&2; exit 1; }
	cp "$work/$name.trace" "$out/$name.trace"
	echo "$out/$name.trace: $(stat -c %s "$out/$name.trace") bytes, --verify ends in the image's free map ($want)"
}

dbench2() { dbench_run "$mnt" 3 2 | grep -E '^Throughput|ERROR'; }
exerciser() {
	"$ex" -q -s 1 -n 500 -S "$work/state" "$mnt" || echo "record_traces: the exerciser exited with $?"
	rm -rf "$mnt/ex1/p1" "$mnt/ex1/p3"
}
for t in $which; do
	case $t in
	dbench) record bgafs-dbench 256M dbench2 ;;
	exerciser) record bgafs-exerciser 32M exerciser ;;
	objects) "$build/examples/replay/bga-rec-objects" "$out/objects.trace" 1 16384 ;;
	*) echo "record_traces: no trace '$t' (dbench, exerciser, objects)" >&2; exit 2 ;;
	esac
done
tests/data/traces/regen_hashes.sh "$build"
