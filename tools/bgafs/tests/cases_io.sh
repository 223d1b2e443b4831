# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# bgafs_test.sh's cases: the data path under real programs: a tour of the basic calls (basic), dbench,
# fio with verification, large writes and fallocates through bga_alloc_vec (vec),
# stress-ng's filesystem class (stressng, make soak), a file written out of
# order and its window (window_shown).
# Sourced by bgafs_test.sh, which defines the helpers they call; the loads
# are bench/support/fsload.sh's (shared with the benches).
# shellcheck source=bench/support/fsload.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../../bench/support/fsload.sh"

case_basic() {
	"$BGAFS" mkfs "$img" 128M
	mount_fs
	cd "$mnt"
	echo hello >a
	[ "$(cat a)" = hello ] || fail "read back"
	mkdir -p d/e/f
	mv a d/e/b
	[ "$(cat d/e/b)" = hello ] && [ ! -e a ] || fail "rename"
	ln d/e/b hard
	[ "$(stat -c %h hard)" = 2 ] || fail "link count after link"
	rm hard
	ln -s d/e/b sym
	[ "$(readlink sym)" = d/e/b ] && [ "$(cat sym)" = hello ] || fail "symlink"
	dd if=/dev/urandom of=big bs=64k count=300 status=none
	cp big big2
	cmp big big2 || fail "copy differs"
	# holes read as zeros; truncate keeps the head, zeros the tail
	truncate -s 1M sparse
	printf x | dd of=sparse bs=1 seek=500000 conv=notrunc status=none
	cmp -n 500000 sparse /dev/zero || fail "hole is not zeros"
	[ "$(stat -c %b sparse)" -le 8 ] || fail "a sparse file took $(stat -c %b sparse) sectors"
	truncate -s 100000 big2
	truncate -s 200000 big2
	cmp -n 100000 big big2 || fail "truncate lost the head"
	cmp -i 100000:0 -n 100000 big2 /dev/zero || fail "bytes past a truncate are not zeros"
	# fallocate: mode 0 extends the size, KEEP_SIZE does not; both read zeros
	fallocate -l 1M fa
	[ "$(stat -c %s fa)" = 1048576 ] && [ "$(stat -c %b fa)" -ge 2048 ] || fail "fallocate mode 0"
	cmp fa <(head -c 1M /dev/zero) || fail "unwritten extent does not read zeros"
	dd if=/dev/urandom of=chunk bs=4k count=3 status=none
	dd if=chunk of=fa bs=4k seek=100 conv=notrunc status=none
	cmp -i 409600:0 -n 12288 fa chunk || fail "written part of a fallocated file"
	cmp -n 409600 fa /dev/zero || fail "unwritten head of a written fallocated file"
	: >keep
	fallocate -n -l 1M keep
	[ "$(stat -c %s keep)" = 0 ] && [ "$(stat -c %b keep)" -ge 2048 ] || fail "fallocate KEEP_SIZE"
	# errnos
	expect_err "File exists" mkdir d
	expect_err "Directory not empty" rmdir d
	expect_err "No such file" cat nothere
	expect_err "Not a directory" ls big/x
	expect_err "Is a directory" rm d/e
	expect_err "Not a directory" rmdir big
	expect_err "File too large" truncate -s 2T big
	expect_err "Invalid argument" perl -e 'rename("d", "d/e/g") or die "$!\n"'
	expect_err "File name too long" touch "$(printf 'n%.0s' $(seq 256))"
	expect_err "not supported" fallocate -c -o 0 -l 4096 big # COLLAPSE_RANGE: FUSE has no such request
	rm -r d
	[ ! -e d ] || fail "rm -r"
	df -k . >/dev/null
	before=$(sums)
	cd /
	umount_fs
	fsck_clean "after the first unmount"
	mount_fs
	[ "$(sums)" = "$before" ] || fail "checksums differ after a remount"
	umount_fs
	fsck_clean "after the remount"
}

case_dbench() {
	need dbench
	"$BGAFS" mkfs "$img" 1G
	mount_fs
	local out rc=0
	# (dbench_run says why a "failed to create barrier semaphore" line is
	# no error)
	out=$(dbench_run "$mnt" "${BGAFS_DBENCH_SECONDS:-20}" 4) || rc=$?
	grep -E "^ *Operation|^ *[A-Z][A-Za-z]+ +[0-9]+ +[0-9.]+ +[0-9.]+$|Throughput" <<<"$out"
	[ $rc = 0 ] || fail "dbench exited with $rc: $(tail -5 <<<"$out")"
	# What dbench itself counts as an error: an operation whose result
	# differs from the load file's prints "... failed ... - expected ..."
	# and then "ERROR: child N failed at line L", and that child exits 1;
	# the parent then prints "Child failed with status N" and exits 1.
	if grep -qE "^ERROR: |Child failed with status| - expected " <<<"$out"; then
		grep -E "^ERROR: |Child failed with status| - expected " <<<"$out" | head
		fail "dbench reported errors"
	fi
	grep -q "^Throughput" <<<"$out" || fail "no throughput line"
	umount_fs
	fsck_clean "after dbench"
}

case_fio() {
	need fio
	"$BGAFS" mkfs "$img" 512M
	mount_fs
	# 4 jobs of 4 KiB random writes and one sequential writer, 256 MiB in
	# all, every block verified; fio's default fallocate (native).
	fio_job "$work/job.fio" "$mnt" "${BGAFS_FIO_RAND:-48m}" "${BGAFS_FIO_SEQ:-64m}"
	local out rc=0
	out=$(fio --output-format=normal "$work/job.fio" 2>&1) || rc=$?
	grep -E "WRITE:|READ:|verify|err=" <<<"$out" || true
	[ $rc = 0 ] || { tail -30 <<<"$out"; fail "fio exited with $rc"; }
	if grep -E "err= *[1-9]|verify.*(bad|fail)" <<<"$out"; then fail "fio reported errors"; fi
	before=$(sums)
	umount_fs
	fsck_clean "after fio"
	mount_fs
	[ "$(sums)" = "$before" ] || fail "fio's files differ after a remount"
	umount_fs
}

# Large writes and fallocate through bga_alloc_vec: a 64 MiB write and a
# 128 MiB fallocate end up as the few extents the groups allow (bgafs map
# on the unmounted image); an fallocate past the free space is ENOSPC
# with nothing changed, on a new file and on a partly written one (POSIX
# fallocate); on free space in 400 one-block holes, an fallocate of
# nearly all of it succeeds (more extents than one call returns), reads
# zeros, and leaves the blocks around the holes alone.
case_vec() {
	"$BGAFS" mkfs "$img" 256M >/dev/null
	mount_fs
	dd if=/dev/urandom of="$mnt/big" bs=1M count=64 status=none || fail "the 64 MiB write"
	fallocate -l 128M "$mnt/fa" || fail "fallocate of 128 MiB"
	local sum ibig ifa avail0 avail blocks0 map0
	sum=$(md5sum <"$mnt/big")
	ibig=$(stat -c %i "$mnt/big")
	ifa=$(stat -c %i "$mnt/fa")
	sync "$mnt/big" "$mnt/fa" "$mnt"
	avail0=$(df -k --output=avail "$mnt" | tail -1)
	expect_err "No space left on device" fallocate -l $(((avail0 + 4096) * 1024)) "$mnt/huge"
	[ "$(stat -c %s:%b "$mnt/huge")" = 0:0 ] || fail "an ENOSPC fallocate left $(stat -c %s:%b "$mnt/huge") (size:sectors)"
	blocks0=$(stat -c %s:%b "$mnt/big")
	expect_err "No space left on device" fallocate -l $(((avail0 + 64 * 1024 + 4096) * 1024)) "$mnt/big"
	[ "$(stat -c %s:%b "$mnt/big")" = "$blocks0" ] ||
		fail "an ENOSPC fallocate over a written file left $(stat -c %s:%b "$mnt/big"), not $blocks0"
	avail=$(df -k --output=avail "$mnt" | tail -1)
	[ "$avail" = "$avail0" ] || fail "ENOSPC fallocates took space: ${avail}K available, ${avail0}K before"
	rm "$mnt/huge"
	umount_fs
	fsck_clean "after the large write and fallocate"
	local out n
	out=$("$BGAFS" map "$img" "$ibig") || fail "bgafs map of the written file"
	n=$(sed -n 's/^bgafs map: inode [0-9]*: \([0-9]*\) extents, 16384 blocks, size 67108864$/\1/p' <<<"$out")
	[ -n "$n" ] && [ "$n" -le 2 ] && ! grep -q unwritten <<<"$out" || fail "the 64 MiB write mapped as: $out"
	map0=$out
	out=$("$BGAFS" map "$img" "$ifa") || fail "bgafs map of the fallocated file"
	n=$(sed -n 's/^bgafs map: inode [0-9]*: \([0-9]*\) extents, 32768 blocks, size 134217728$/\1/p' <<<"$out")
	[ -n "$n" ] && [ "$n" -le 3 ] && ! grep -q " written" <<<"$out" || fail "the 128 MiB fallocate mapped as: $out"
	echo "64 MiB write: $(grep -c written <<<"$map0") extents; 128 MiB fallocate: $n extents"

	# 400 one-block holes (every other block of a written file punched),
	# then all the free space but 64 blocks in one fallocate: 336 holes
	# at least, more than one call's 256 extents
	"$BGAFS" mkfs -f "$img" 64M >/dev/null
	mount_fs
	head -c $((800 * 4096)) /dev/urandom >"$work/h"
	cp "$work/h" "$mnt/h"
	local i
	punch_every_other "$mnt/h" 400
	avail_settled "$mnt" "$mnt/h" 0.2 # until the punches' commit has freed them
	fallocate -l $(((avail - 256) * 1024)) "$mnt/frag" || fail "fallocate of all but 256K of ${avail}K in pieces"
	cmp -n $(((avail - 256) * 1024)) "$mnt/frag" /dev/zero || fail "the fallocated file does not read zeros"
	ifa=$(stat -c %i "$mnt/frag")
	for i in 0 1 200 399; do # what the punches left
		cmp -s -i $((8192 * i + 4096)) -n 4096 "$work/h" "$mnt/h" || fail "block $((2 * i + 1)) of h changed"
	done
	umount_fs
	fsck_clean "after the fallocate in pieces"
	out=$("$BGAFS" map "$img" "$ifa") || fail "bgafs map of the scattered file"
	n=$(sed -n 's/^bgafs map: inode [0-9]*: \([0-9]*\) extents.*/\1/p' <<<"$out")
	[ -n "$n" ] && [ "$n" -gt 336 ] || fail "the fallocate over 400 holes took $n extents, not more than 336"
	echo "fallocate of ${avail}K less 256K over 400 holes: $n extents"
}

# stress-ng's filesystem class, one stressor at a time, each for
# BGAFS_STRESSNG_SECONDS (make soak sets it; 2 s by default) with
# --verify: a FAIL line or a failed count fails the test; stressors for
# what FUSE or this kernel lacks (fanotify, fiemap, leases, verity...)
# skip themselves, as stress-ng decides.
case_stressng() {
	need stress-ng
	"$BGAFS" mkfs "$img" 1G
	mount_fs
	mkdir "$mnt/s"
	local out rc=0
	# binderfs mounts a kernel file system of its own (none here: ENODEV),
	# nothing of the temp path; iomix and hdd write 1 GiB by default, more
	# than the image holds beside the others' files.
	out=$(cd "$mnt/s" && stress-ng --class filesystem --exclude binderfs --sequential 1 \
		--timeout "${BGAFS_STRESSNG_SECONDS:-2}" --verify --temp-path "$mnt/s" --oom-avoid \
		--iomix-bytes 128m --hdd-bytes 128m 2>&1) || rc=$?
	grep -E "dispatching|skipping|aborted|FAIL|untrustworthy|completed" <<<"$out" || true
	if grep -E "FAIL|failed: [1-9]" <<<"$out"; then
		grep -iE "fail|error" <<<"$out" | head -40
		fail "stress-ng reported failures"
	fi
	# 0: all passed; 2: a stressor failed; 3: one ran out of resources
	# (ENOSPC, EMFILE...); 4: not implemented -- only 0 and 4 are clean.
	[ $rc = 0 ] || [ $rc = 4 ] || { tail -30 <<<"$out"; fail "stress-ng exited with $rc"; }
	grep -q "successful run completed" <<<"$out" || fail "stress-ng did not complete its run"
	umount_fs
	fsck_clean "after stress-ng"
}

# A file written out of order has its window sized by the size it has
# shown (place.c, window_by_shown_size; -o window=shown, the default):
# 16 MiB written in 128 KiB pieces, the piece at 12 MiB first, records
# rsv_set_size for the blocks it has shown it still needs (12 MiB and
# the piece, at most the file), and the file is then at most two
# physical runs (that window, and what the file showed past it); the
# same file written in order records none, nor does window=doubling.
# Each file reads back what was written.
window_write() { # window_write FILE ORDER: ORDER "scrambled" or "in order"
	python3 - "$1" "$2" <<'PY'
import os, sys
path, order = sys.argv[1], sys.argv[2]
piece, n = 128 << 10, 128
idx = list(range(n)) if order == "in order" else [96] + list(range(96)) + list(range(97, n))
fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
for i in idx:
    os.pwrite(fd, bytes([i % 251 + 1]) * piece, i * piece)
os.close(fd)
PY
}
window_check() { # window_check FILE: every piece holds its byte
	python3 - "$1" <<'PY' || fail "$1 does not read back"
import sys
data = open(sys.argv[1], "rb").read()
piece = 128 << 10
assert len(data) == 128 * piece
for i in range(128):
    assert data[i * piece:(i + 1) * piece] == bytes([i % 251 + 1]) * piece, i
PY
}
case_window_shown() {
	local replay
	replay=$(dirname "$BGAFS")/../replay/bga-replay
	[ -x "$replay" ] || skip "no bga-replay beside bgafs ($replay)"
	"$BGAFS" mkfs "$img" 128M >/dev/null
	local mode order sizes ino runs
	for mode in shown doubling; do
		for order in "in order" scrambled; do
			mount_fs -o "trace=$work/t,window=$mode"
			window_write "$mnt/f" "$order"
			window_check "$mnt/f"
			ino=$(stat -c %i "$mnt/f")
			umount_fs
			sizes=$("$replay" text "$work/t" | awk '$4 == "rsv_set_size" {print $NF}' | tr '\n' ' ')
			echo "window=$mode, $order: rsv_set_size ${sizes:-none}"
			# physical runs: the extents (lblk pblk len state) by pblk, merged
			runs=$("$BGAFS" map "$img" "$ino" | awk '$4 ~ /written/ {print $2, $3}' | sort -n |
				awk 'BEGIN {n = 0; e = -1} {if ($1 != e) n++; e = $1 + $2} END {print n}')
			echo "  $runs physical runs"
			if [ "$mode" = shown ] && [ "$order" = scrambled ]; then
				local first=${sizes%% *}
				[ -n "$first" ] || fail "a file written out of order recorded no rsv_set_size"
				[ "$first" -gt $((12 << 8)) ] && [ "$first" -le $((16 << 8)) ] ||
					fail "its first window size $first is not what it showed (12 MiB and a piece, at most 16 MiB)"
				[ "$runs" -le 2 ] || fail "a file written out of order into its sized window is $runs physical runs"
			else
				[ -z "$sizes" ] || fail "window=$mode, $order: rsv_set_size $sizes"
			fi
			mount_fs
			window_check "$mnt/f"
			rm "$mnt/f"
			umount_fs
		done
	done
	fsck_clean "after the window cases"
}
