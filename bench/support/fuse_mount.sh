# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by the benches that mount a FUSE file system (fscompare.sh,
# dbench_counters.sh, bgafs_ab.sh, trace_cost.sh) and by
# tools/replay/record_traces.sh: their work directory and mount point,
# the EXIT trap that unmounts and reaps whatever is left, the wait for a
# daemon started in the background to mount, a fresh bgafs mounted, and
# the unmount.  (The loads they run are bench/support/fsload.sh's.)
#   fuse_setup WORKDIR        sets work, mnt (WORKDIR/mnt) and pid; traps EXIT
#   fuse_wait_mounted WHO LOG after `daemon ... &`: pid=$!, waits up to 10 s,
#                             exits 1 with LOG printed when it does not mount
#   bgafs_mount_fresh BGAFS SIZE LOG [OPTION...]
#                             a new image of SIZE at $work/img (bgafs mkfs; the
#                             environment reaches it), mounted on $mnt with the
#                             mount OPTIONs, the daemon's stderr added to LOG
#   umount_fs                 unmounts and reaps the daemon
# A caller with more to clean up defines fuse_cleanup_extra, run first.

fuse_cleanup() {
	cd /
	if declare -F fuse_cleanup_extra >/dev/null; then fuse_cleanup_extra || true; fi
	if mountpoint -q "$mnt"; then fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" || true; fi
	[ -n "$pid" ] && { wait "$pid" 2>/dev/null || true; }
	rm -rf "$work"
}

fuse_setup() {
	work=$1
	mnt=$work/mnt
	pid=
	mkdir -p "$mnt"
	trap fuse_cleanup EXIT
}

fuse_wait_mounted() {
	pid=$!
	for _ in $(seq 200); do mountpoint -q "$mnt" && return 0; sleep 0.05; done
	echo "$1 did not mount" >&2
	cat "$2" >&2
	exit 1
}

bgafs_mount_fresh() {
	local bgafs=$1 size=$2 log=$3
	shift 3
	rm -f "$work/img"
	"$bgafs" mkfs "$work/img" "$size" >/dev/null
	"$bgafs" mount -f "$@" "$work/img" "$mnt" 2>>"$log" &
	fuse_wait_mounted "$(basename "$0"): $bgafs" "$log"
}

umount_fs() {
	fusermount3 -u "$mnt"
	wait "$pid" || true
	pid=
}
