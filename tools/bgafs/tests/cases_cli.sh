# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# bgafs_test.sh's cases: the command line as a user meets it.
# Sourced by bgafs_test.sh, which defines the helpers they call.

# The command line as a user meets it: --help and --version, mkfs that
# will not overwrite a file system without -f, fsck that refuses a mounted
# image at once.
case_cli() {
	local out
	out=$("$BGAFS" --help 2>"$work/err") || fail "bgafs --help exited $?"
	grep -q '^usage: bgafs mkfs' <<<"$out" && [ ! -s "$work/err" ] || fail "bgafs --help: no usage on stdout"
	out=$("$BGAFS" --version) && grep -qE '^bgafs \(bgalloc\) [0-9]+\.[0-9]+\.[0-9]+$' <<<"$out" || fail "bgafs --version"
	out=$("$BGAFS" mkfs --help) && grep -q '^usage:' <<<"$out" || fail "bgafs mkfs --help"
	out=$("$BGAFS" mount --help) && grep -q '^usage:' <<<"$out" || fail "bgafs mount --help"
	out=$("$BGAFS" map --help) && grep -q '^usage:' <<<"$out" && grep -q 'bgafs map IMAGE INODE' <<<"$out" || fail "bgafs map --help"
	local rc=0
	"$BGAFS" mkfs "$img" 2>/dev/null || rc=$?
	[ $rc = 2 ] || fail "bgafs mkfs with no size exited $rc, not 2"
	rc=0
	"$BGAFS" frob 2>/dev/null || rc=$?
	[ $rc = 2 ] || fail "an unknown command exited $rc, not 2"

	"$BGAFS" mkfs "$img" 64M >/dev/null
	mount_fs
	echo kept >"$mnt/f"
	# a mounted image: fsck refuses at once, not after the 30 s wait for the
	# image's lock it used to make (the bound is half that wait, so that an
	# ASan build on a loaded machine cannot fail it: 2 s once did)
	local t0 t1
	t0=$(date +%s%N)
	expect_err "is mounted at $mnt" "$BGAFS" fsck "$img"
	t1=$(date +%s%N)
	[ $(((t1 - t0) / 1000000)) -lt 15000 ] || fail "fsck of a mounted image took $(((t1 - t0) / 1000000)) ms"
	expect_err "in use by a mounted bgafs" "$BGAFS" mkfs -f "$img" 64M
	umount_fs
	out=$("$BGAFS" fsck "$img") && grep -q ': clean, .* superblock sequence [0-9]*$' <<<"$out" || fail "fsck's summary line"
	# an existing file system: refused without -f, and left as it was
	expect_err "already holds a bgafs file system.*-f overwrites it" "$BGAFS" mkfs "$img" 64M
	mount_fs
	[ "$(cat "$mnt/f")" = kept ] || fail "a refused mkfs changed the file system"
	umount_fs
	"$BGAFS" mkfs -f "$img" 32M >/dev/null || fail "bgafs mkfs -f"
	mount_fs
	[ ! -e "$mnt/f" ] || fail "mkfs -f left the old file system"
	umount_fs
	fsck_clean "after mkfs -f"
	# map: the root's extents (none), a bad number (2), no such inode (1)
	out=$("$BGAFS" map "$img" 1) && grep -q '^bgafs map: inode 1: 0 extents, 0 blocks' <<<"$out" ||
		fail "bgafs map of the root: '$out'"
	rc=0
	"$BGAFS" map "$img" 1x 2>/dev/null || rc=$?
	[ $rc = 2 ] || fail "bgafs map with a bad inode number exited $rc, not 2"
	rc=0
	"$BGAFS" map "$img" 999999 2>/dev/null || rc=$?
	[ $rc = 1 ] || fail "bgafs map of a missing inode exited $rc, not 1"
}
