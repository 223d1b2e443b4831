# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# bgafs_test.sh's cases: the POSIX features through bgafs_posix (posix.c), each on a fresh
# image, then across a remount and (some) a SIGKILL.
# Sourced by bgafs_test.sh, which defines the helpers they call.

# One feature of tests/posix.c on a fresh image, then an unmount, fsck, a
# remount with every file's checksum unchanged, and the case's own check
# of what must have survived.  With crash=1 the case (which fsyncs what it
# made) is run a second time on a fresh image and the daemon SIGKILLed
# after it: the replay of the log must give the same.
posix_case() { # posix_case NAME [crash]   (POSIX_MOUNT: mount options, e.g. "-o noatime")
	[ -n "$POSIX" ] || fail "no bgafs_posix program given"
	local -a opts
	read -ra opts <<<"${POSIX_MOUNT:-}"
	"$BGAFS" mkfs "$img" 64M
	mount_fs "${opts[@]}"
	"$POSIX" "$1" "$mnt" || fail "bgafs_posix $1"
	local before
	before=$(sums)
	umount_fs
	fsck_clean "after $1"
	mount_fs "${opts[@]}"
	[ "$(sums)" = "$before" ] || fail "$1: checksums differ after a remount"
	"$POSIX" "$1" "$mnt" verify || fail "bgafs_posix $1 verify, after a remount"
	umount_fs
	fsck_clean "after $1 and a remount"
	[ "${2:-}" = crash ] || return 0
	rm -f "$img"
	"$BGAFS" mkfs "$img" 64M
	mount_fs "${opts[@]}"
	"$POSIX" "$1" "$mnt" || fail "bgafs_posix $1 (before the kill)"
	crash_fs
	mount_fs "${opts[@]}"
	"$POSIX" "$1" "$mnt" verify || fail "bgafs_posix $1 verify, after a SIGKILL and the replay"
	umount_fs
	fsck_clean "after $1, a SIGKILL and a remount"
}

case_falloc() { posix_case falloc; }
case_exchange() { posix_case exchange; }
case_atime() { posix_case atime; }
case_xattr() { posix_case xattr crash; }
case_special() { posix_case special crash; }
case_times() { posix_case times crash; }
case_sgid() { posix_case sgid crash; }
case_readdir() { posix_case readdir; }
case_killpriv() { POSIX_MOUNT="-o allow_other" posix_case killpriv; } # uid 65534 may use the mount
case_acl() { POSIX_MOUNT="-o allow_other" posix_case acl crash; }
case_strictatime() { POSIX_MOUNT="-o strictatime" posix_case strictatime; }
case_noatime() { POSIX_MOUNT="-o noatime" posix_case noatime; }
