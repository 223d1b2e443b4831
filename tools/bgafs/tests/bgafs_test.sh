#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bgafs_test.sh BGAFS CASE [POSIX [CHURN]]: one bgafs test on a fresh image, mounted under
# a temporary directory.  The cases live beside this file, by what they test:
#   cases_io.sh     basic dbench fio vec stressng (make soak) window_shown
#   cases_crash.sh  crash crash_idle crashloop (make soak; BGAFS_CRASH_ITERS rounds) replay fsck_old
#   cases_space.sh  enospc enospc_rm fullcreate aging loggrow commit_size
#   cases_posix.sh  the POSIX features through bgafs_posix (its path the third
#                   argument): falloc exchange atime xattr special
#   cases_cli.sh    cli
#   cases_data.sh   exerciser (the data-integrity exerciser, exerciser.c)
# The fourth argument: the churn of aging and crashloop (churn.c).  This file
# holds what they share: the image, mount, unmount, kill and fsck helpers.
# Exit 0 pass, 1 fail, 77 skipped (no /dev/fuse, mounting not permitted,
# or a tool missing).  Whatever happens, the file system is unmounted and
# the daemon reaped (trap).
set -euo pipefail

BGAFS=$(realpath "$1")
CASE=$2
POSIX=${3:+$(realpath "$3")} # bgafs_posix, for the POSIX feature cases
CHURN=${4:-$(dirname "$BGAFS")/tests/bgafs_churn} # the aging load (churn.c)
SKIP=77
work=$(mktemp -d /tmp/bgafs-test.XXXXXX)
img=$work/img
mnt=$work/mnt
log=$work/daemon.log
mkdir -p "$mnt"
pid=

cleanup() {
	cd / # a shell inside the mount would keep it busy
	if mountpoint -q "$mnt" 2>/dev/null; then
		fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
	fi
	if [ -n "$pid" ]; then
		# A daemon that does not finish its final commit in 30 s is hung.
		for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	if [ -s "$log" ]; then
		echo "--- daemon log"
		cat "$log"
	fi
	rm -rf "$work"
}
trap cleanup EXIT

skip() { echo "SKIP: $*"; exit $SKIP; }
fail() {
	echo "FAIL: $*"
	if [ -n "${BGAFS_KEEP_FAILED:-}" ]; then cp "$img" "$BGAFS_KEEP_FAILED" && echo "image kept in $BGAFS_KEEP_FAILED"; fi
	exit 1
}
need() { command -v "$1" >/dev/null || skip "$1 is not installed (scripts/deps.sh test)"; }

need fusermount3
(exec 3<>/dev/fuse) 2>/dev/null || skip "/dev/fuse cannot be opened"

mount_fs() {
	"$BGAFS" mount "$img" "$mnt" -f "$@" 2>>"$log" &
	pid=$!
	for _ in $(seq 200); do
		mountpoint -q "$mnt" && return 0
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid" || true
			pid=
			if grep -qiE "not permitted|permission denied|fuse: device not found" "$log"; then
				skip "mounting a FUSE file system is not permitted here: $(tail -1 "$log")"
			fi
			fail "bgafs mount exited before mounting"
		fi
		sleep 0.05
	done
	fail "bgafs did not mount in 10 s"
}

# A reference to the mount can outlive the process that held it for a
# moment (seen once under ASan in a loaded CI-like run: "Device or resource
# busy" right after the last reader exited): "busy" is retried for 10 s,
# any other refusal fails at once.
umount_fs() {
	local out tries=0
	until out=$(fusermount3 -u "$mnt" 2>&1); do
		grep -qi busy <<<"$out" && [ $((tries += 1)) -lt 100 ] || fail "fusermount3 -u: $out"
		sleep 0.1
	done
	local rc=0
	wait "$pid" || rc=$?
	pid=
	[ $rc = 0 ] || fail "the daemon exited with $rc after unmount"
}

crash_fs() {
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
	fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" || fail "cannot unmount the dead mount"
}

fsck_clean() {
	"$BGAFS" fsck "$img" || fail "bgafs fsck is not clean ($*)"
}

# The errno a command fails with, from its message.
expect_err() { # expect_err "message" command...
	local want=$1 out
	shift
	if out=$("$@" 2>&1); then fail "'$*' succeeded, expected '$want'"; fi
	grep -q "$want" <<<"$out" || fail "'$*' said '$out', expected '$want'"
}

sums() { (cd "$mnt" && find . -type f -print0 | sort -z | xargs -0r md5sum); }

here=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
for cases in "$here"/cases_*.sh; do
	# shellcheck source=/dev/null
	. "$cases"
done
declare -F "case_$CASE" >/dev/null || { echo "bgafs_test.sh: no case '$CASE'"; exit 2; }
"case_$CASE"
echo "PASS: bgafs $CASE"
