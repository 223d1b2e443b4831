# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# bgafs_test.sh's cases: the data itself, checked byte for byte (exerciser).

# The data-integrity exerciser (exerciser.c): four processes age a small
# image past full; every byte is checked mounted (buffered and O_DIRECT
# reads), after a clean remount, and after a SIGKILL of the daemon in the
# middle of a second run (what was fsynced).  BGAFS_EXER_SEED, _OPS (a
# process), _SIZE (the image) and _CRASH_AFTER (seconds) change the run;
# `make soak` runs it long.  A failure names the file, the offset and the
# operation that last touched it; the seed repeats the run.
case_exerciser() {
	local ex=${BGAFS_EXERCISER:-$(dirname "$BGAFS")/tests/bgafs_exerciser} seed=${BGAFS_EXER_SEED:-1}
	local ops=${BGAFS_EXER_OPS:-1500} st=$work/state
	"$BGAFS" mkfs "$img" "${BGAFS_EXER_SIZE:-32M}"
	mount_fs
	"$ex" -s "$seed" -n "$ops" -S "$st" "$mnt" || fail "the exerciser (seed $seed) found a difference while mounted"
	umount_fs
	fsck_clean "after the exerciser"
	mount_fs
	"$ex" -s "$seed" -S "$st" --verify "$mnt" || fail "the exerciser's files (seed $seed) changed across a remount"
	# a second run on top, the daemon killed in the middle of it
	"$ex" -s $((seed + 1)) -n 1000000 -S "$st.crash" "$mnt" &
	local exp=$!
	sleep "${BGAFS_EXER_CRASH_AFTER:-3}"
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
	wait "$exp" || fail "the exerciser (seed $((seed + 1))) found a difference before the crash"
	fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" || fail "cannot unmount the dead mount"
	mount_fs
	"$ex" -s $((seed + 1)) -S "$st.crash" --verify-crash "$mnt" || fail "fsynced data lost in the crash"
	"$ex" -s "$seed" -S "$st" --verify "$mnt" || fail "the first run's files changed in the crash"
	umount_fs
	fsck_clean "after the crash and a remount"
}
