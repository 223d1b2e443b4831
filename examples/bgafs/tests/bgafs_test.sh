#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bgafs_test.sh BGAFS CASE [POSIX [CHURN]]: one bgafs test on a fresh image, mounted under
# a temporary directory.  Cases: basic dbench fio crash enospc crash_idle
# enospc_rm cli vec aging fullcreate fsck_old replay loggrow commit_size exerciser crashloop (make soak;
# BGAFS_CRASH_ITERS rounds), and the POSIX features through bgafs_posix
# (its path the third argument): falloc exchange atime.  The fourth: the
# churn of aging and crashloop (churn.c).
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
	local out rc=0 ns=()
	# dbench 4.0 checks its barrier semaphore with `!semget(...)`, so it
	# prints "failed to create barrier semaphore" whenever semget returns
	# id 0 -- a valid id, the first set created in an IPC namespace (a
	# fresh boot or container) -- and then runs normally: that line is no
	# error.  A semget that really fails (-1) makes the next semop fail,
	# and dbench exits 1.  Where a private IPC namespace can be had, the
	# run takes id 0 every time, so this path is always exercised.
	if unshare -i true 2>/dev/null; then ns=(unshare -i); fi
	out=$("${ns[@]}" dbench -c /usr/share/dbench/client.txt -t "${BGAFS_DBENCH_SECONDS:-20}" 4 -D "$mnt" 2>&1) || rc=$?
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
	cat >"$work/job.fio" <<EOF
[global]
directory=$mnt
ioengine=psync
verify=crc32c
do_verify=1
verify_fatal=1
verify_state_save=0
[rand]
rw=randwrite
bs=4k
size=${BGAFS_FIO_RAND:-48m}
numjobs=4
[seq]
rw=write
bs=1m
size=${BGAFS_FIO_SEQ:-64m}
EOF
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

# SIGKILL the daemon during a write load, at several points; after each,
# remount (the reconcile runs), every file fsynced before the kill reads
# back intact, and fsck is clean after the unmount.
case_crash() {
	"$BGAFS" mkfs "$img" 256M
	head -c 300000 /dev/urandom >"$work/src"
	local want
	want=$(md5sum <"$work/src" | cut -d' ' -f1)
	for round in 1 2 3 4; do
		mount_fs
		mkdir -p "$mnt/r$round"
		: >"$work/synced.$round"
		(
			i=0
			while :; do
				i=$((i + 1))
				dd if="$work/src" of="$mnt/r$round/s$i" bs=64k conv=fsync status=none 2>/dev/null || exit 0
				echo "r$round/s$i" >>"$work/synced.$round"
				dd if=/dev/urandom of="$mnt/r$round/u$i" bs=16k count=8 status=none 2>/dev/null || exit 0
				rm -f "$mnt/r$round/u$((i - 2))" 2>/dev/null || exit 0
				if [ $((i % 5)) = 0 ]; then # off the list first: it will no longer match
					sed -i "/^r$round\/s$((i - 3))\$/d" "$work/synced.$round"
					truncate -s 7000 "$mnt/r$round/s$((i - 3))" 2>/dev/null || exit 0
				fi
			done
		) &
		local writer=$!
		sleep "0.$((round * 2))"
		sleep 0.$((RANDOM % 5))
		crash_fs
		wait "$writer" 2>/dev/null || true
		echo "round $round: killed after $(wc -l <"$work/synced.$round") fsynced files"
		# Before the reconcile, the only thing fsck may find is blocks the
		# allocator on disk took after the last commit (leaked).
		local out
		out=$("$BGAFS" fsck "$img" 2>&1) || true
		if grep "bgafs fsck: " <<<"$out" | grep -vE "leaked|not unmounted cleanly|NOT CLEAN|: clean"; then
			fail "round $round: fsck before the remount found more than leaks"
		fi
		mount_fs
		while read -r f; do
			[ "$(md5sum <"$mnt/$f" | cut -d' ' -f1)" = "$want" ] || fail "round $round: fsynced $f is not intact"
		done <"$work/synced.$round"
		umount_fs
		fsck_clean "after crash round $round and a remount"
	done
}

# Fill the disk: ENOSPC to the writer, the file system still consistent;
# delete: the space is back after the next commit; df follows the files.
case_enospc() {
	"$BGAFS" mkfs "$img" 64M
	mount_fs
	local out total avail0 used
	read -r total avail0 < <(df -k --output=size,avail "$mnt" | tail -1)
	if out=$(dd if=/dev/zero of="$mnt/fill" bs=1M 2>&1); then fail "filling the disk did not fail"; fi
	grep -q "No space left on device" <<<"$out" || fail "filling gave '$out', not ENOSPC"
	expect_err "No space left on device" dd if=/dev/zero of="$mnt/more" bs=4k count=16
	echo ok >"$mnt/small" 2>/dev/null || true # a file may or may not fit
	ls -l "$mnt" >/dev/null
	sync "$mnt/fill"
	used=$(df -k --output=used "$mnt" | tail -1)
	local fk
	fk=$(du -k "$mnt/fill" | cut -f1)
	# df counts what the files hold, the namespace tables (a few blocks)
	# and the free counter's error: at most (slots + 1) * (batch - 1)
	# blocks, slots = CPUs, batch = max(32, 2 * CPUs) (<bgalloc/counter.h>).
	local n bound
	n=$(nproc)
	bound=$(( ((n + 1) * ($((2 * n > 32 ? 2 * n : 32)) - 1) + 64) * 4 ))
	[ $((used - fk)) -ge $((-bound)) ] && [ $((used - fk)) -le $bound ] ||
		fail "df used ${used}K, the file holds ${fk}K (bound ${bound}K)"
	[ "$fk" -ge $((total * 9 / 10)) ] || fail "the file got ${fk}K of ${total}K before ENOSPC"
	rm "$mnt/fill" "$mnt/more"
	# The blocks are freed in the transaction of the unlink, or of the
	# release when the kernel's asynchronous release of the writer's file
	# comes after it; either commits within a second or two.
	local avail i
	for i in $(seq 50); do
		sync "$mnt" # fsync of the directory: commits the unlinks
		avail=$(df -k --output=avail "$mnt" | tail -1)
		[ $((avail0 - avail)) -le $bound ] && break
		sleep 0.1
	done
	[ $((avail0 - avail)) -le $bound ] || fail "5 s after deleting: ${avail}K available, ${avail0}K at the start"
	echo "space back after $((i - 1)) polls of 0.1 s"
	dd if=/dev/zero of="$mnt/again" bs=1M count=$((total / 1024 / 2)) status=none || fail "the space did not come back"
	umount_fs
	fsck_clean "after ENOSPC"
}

# fsync after idle: the committer has found nothing to do for a second or
# more, then a file is written and it and its directory are fsynced; the
# daemon is killed at once.  After the remount every such file is there.
case_crash_idle() {
	"$BGAFS" mkfs "$img" 64M
	head -c 4096 /dev/urandom >"$work/src"
	local want round f
	want=$(md5sum <"$work/src" | cut -d' ' -f1)
	: >"$work/synced"
	for round in 1 2 3 4; do
		mount_fs
		sleep 2.2 # two idle ticks of the committer
		if [ $((round % 2)) = 1 ]; then
			f=f$round
			dd if="$work/src" of="$mnt/$f" bs=4k conv=fsync status=none
			sync "$mnt"
		else # a new directory too: the file, its directory and the root
			mkdir "$mnt/d$round"
			f=d$round/g
			dd if="$work/src" of="$mnt/$f" bs=4k conv=fsync status=none
			sync "$mnt/d$round" "$mnt"
		fi
		echo "$f" >>"$work/synced"
		crash_fs
		mount_fs
		while read -r f; do
			[ -f "$mnt/$f" ] || fail "round $round: $f was fsynced after an idle gap and is gone after a crash"
			[ "$(md5sum <"$mnt/$f" | cut -d' ' -f1)" = "$want" ] || fail "round $round: $f is not intact"
		done <"$work/synced"
		umount_fs
	done
	fsck_clean "after the idle crashes"
}

# Space freed by rm after an idle second is there for the next write at
# once: the writer's -EAGAIN waits for the commit that releases it.
case_enospc_rm() {
	"$BGAFS" mkfs "$img" 128M
	mount_fs
	local out
	if out=$(dd if=/dev/zero of="$mnt/fill" bs=1M 2>&1); then fail "filling the disk did not fail"; fi
	grep -q "No space left on device" <<<"$out" || fail "filling gave '$out', not ENOSPC"
	sleep 2.2 # the committer finds nothing to do
	rm "$mnt/fill"
	dd if=/dev/zero of="$mnt/again" bs=1M count=64 conv=fsync status=none ||
		fail "64 MiB after removing a full disk's file: ENOSPC"
	umount_fs
	fsck_clean "after ENOSPC and rm"
}

# The SIGKILL loop: BGAFS_CRASH_ITERS (20) rounds on one image.  Each
# round a writer creates files (fsync of the file and its directory, some
# after idle gaps of 1-2.5 s) among deletes, renames and symlinks, the
# churn (churn.c) loads the file system beside it, and the daemon is killed
# at a random moment; after the remount every file ever
# fsynced (this round and the earlier ones) must read back intact.
lines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }

case_crashloop() {
	local iters=${BGAFS_CRASH_ITERS:-20} it lost=0 total
	"$BGAFS" mkfs "$img" 256M
	: >"$work/synced"
	for it in $(seq "$iters"); do
		mount_fs
		mkdir -p "$mnt/i$it"
		(
			set +e
			i=0
			while :; do
				i=$((i + 1))
				idle=0
				case $((RANDOM % 4)) in
				0) sleep 2.$((RANDOM % 5)) && idle=1 ;;
				1) sleep 1.$((RANDOM % 5)) && idle=1 ;;
				esac
				f=i$it/s$i
				head -c $((4096 + RANDOM % 60000)) /dev/urandom >"$work/w.$it"
				dd if="$work/w.$it" of="$mnt/$f" bs=64k conv=fsync status=none 2>/dev/null || exit 0
				sync "$mnt/i$it" 2>/dev/null || exit 0
				echo "$f $(md5sum <"$work/w.$it" | cut -d' ' -f1)" >>"$work/synced"
				[ $idle = 0 ] || echo "$f" >>"$work/after_idle.$it"
				head -c $((RANDOM * 2)) /dev/urandom >"$mnt/i$it/t$i" 2>/dev/null || exit 0
				ln -s "s$i" "$mnt/i$it/l$i" 2>/dev/null || exit 0
				mv "$mnt/i$it/t$i" "$mnt/i$it/m$i" 2>/dev/null || exit 0
				rm -f "$mnt/i$it/m$((i - 2))" "$mnt/i$it/l$((i - 3))" 2>/dev/null || exit 0
			done
		) &
		local writer=$! load=
		if [ -x "$CHURN" ]; then # metadata churn beside the writer, unverified
			mkdir -p "$mnt/load$it"
			"$CHURN" "$mnt/load$it" "$it" 1000000 80 >/dev/null 2>&1 &
			load=$!
		fi
		sleep $((1 + RANDOM % 3)).$((RANDOM % 10))
		if [ $((it % 2)) = 0 ]; then # kill right after a file fsynced after an idle gap
			local seen k
			seen=$(lines "$work/after_idle.$it")
			for k in $(seq 300); do
				[ "$(lines "$work/after_idle.$it")" -gt "$seen" ] && break
				sleep 0.02
			done
		fi
		crash_fs
		wait "$writer" 2>/dev/null || true
		[ -z "$load" ] || wait "$load" 2>/dev/null || true
		mount_fs
		local n=0 bad=0 f sum
		: >"$work/synced.next"
		while read -r f sum; do
			n=$((n + 1))
			if [ ! -f "$mnt/$f" ] || [ "$(md5sum <"$mnt/$f" | cut -d' ' -f1)" != "$sum" ]; then
				echo "iteration $it: fsynced $f lost or changed"
				bad=$((bad + 1))
			else
				echo "$f $sum" >>"$work/synced.next"
			fi
		done <"$work/synced"
		mv "$work/synced.next" "$work/synced" # a loss is counted once
		umount_fs
		fsck_clean "after crash iteration $it and a remount"
		echo "iteration $it: $n fsynced files verified, $bad lost"
		lost=$((lost + bad))
	done
	total=$(($(wc -l <"$work/synced") + lost))
	echo "crashloop: $iters iterations, $total fsynced files, $lost lost"
	[ "$lost" = 0 ] || fail "$lost fsynced files lost"
}

# One feature of tests/posix.c on a fresh image, then an unmount, fsck, a
# remount with every file's checksum unchanged, and the case's own check
# of what must have survived.  With crash=1 the case (which fsyncs what it
# made) is run a second time on a fresh image and the daemon SIGKILLed
# after it: the replay of the log must give the same.
posix_case() { # posix_case NAME [crash]
	[ -n "$POSIX" ] || fail "no bgafs_posix program given"
	"$BGAFS" mkfs "$img" 64M
	mount_fs
	"$POSIX" "$1" "$mnt" || fail "bgafs_posix $1"
	local before
	before=$(sums)
	umount_fs
	fsck_clean "after $1"
	mount_fs
	[ "$(sums)" = "$before" ] || fail "$1: checksums differ after a remount"
	"$POSIX" "$1" "$mnt" verify || fail "bgafs_posix $1 verify, after a remount"
	umount_fs
	fsck_clean "after $1 and a remount"
	[ "${2:-}" = crash ] || return 0
	rm -f "$img"
	"$BGAFS" mkfs "$img" 64M
	mount_fs
	"$POSIX" "$1" "$mnt" || fail "bgafs_posix $1 (before the kill)"
	crash_fs
	mount_fs
	"$POSIX" "$1" "$mnt" verify || fail "bgafs_posix $1 verify, after a SIGKILL and the replay"
	umount_fs
	fsck_clean "after $1, a SIGKILL and a remount"
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

case_falloc() { posix_case falloc; }
case_exchange() { posix_case exchange; }
case_atime() { posix_case atime; }
case_xattr() { posix_case xattr crash; }
case_special() { posix_case special crash; }

walk() { # every name with its type, mode, size, links and target, then every file's sum
	(cd "$mnt" && find . -printf '%y %m %s %n %l %p\n' | LC_ALL=C sort && sums)
}

# Aging: the churn (creates, writes, truncates, links, renames of files,
# symlinks and directories, symlinks of up to 3000 bytes, deletes) on a
# small image up to 98% full and around it, then a clean unmount: the tree
# is the same after a remount and fsck is clean.
case_aging() {
	[ -x "$CHURN" ] || skip "no bgafs_churn at $CHURN"
	"$BGAFS" mkfs "$img" 48M
	mount_fs
	local seed out
	for seed in 1 2; do
		out=$("$CHURN" "$mnt" "$seed" "${BGAFS_CHURN_OPS:-2500}" 98) || fail "churn seed $seed: $out"
		echo "seed $seed: $out"
	done
	grep -qE "highest use (9[5-9]|100)" <<<"$out" || fail "the churn did not fill the disk: $out"
	walk >"$work/walk1"
	umount_fs
	fsck_clean "after the aging churn"
	mount_fs
	walk >"$work/walk2"
	diff "$work/walk1" "$work/walk2" >/dev/null || { diff "$work/walk1" "$work/walk2" | head || true; fail "the tree changed across a remount"; }
	echo "tree identical across the remount: $(wc -l <"$work/walk1") lines"
	umount_fs
	fsck_clean "after the remount"
}

# A full disk: creates and symlinks either fail with ENOSPC at the call or
# survive a clean unmount (metadata room is reserved at create).
case_fullcreate() {
	need python3
	"$BGAFS" mkfs "$img" 64M
	mount_fs
	dd if=/dev/zero of="$mnt/fill" bs=1M 2>/dev/null && fail "filling the disk did not fail"
	python3 - "$mnt" "$work/made" <<'PY' || fail "a create on a full disk failed with something else than ENOSPC"
import errno, os, sys
mnt, made = sys.argv[1], open(sys.argv[2], "w")
os.mkdir(os.path.join(mnt, "d"))
fails = {"file": 0, "link": 0}
for i in range(2000):
    try:
        os.close(os.open(os.path.join(mnt, "d", "e%d" % i), os.O_CREAT | os.O_WRONLY, 0o644))
        made.write("f d/e%d\n" % i)
    except OSError as e:
        if e.errno != errno.ENOSPC: raise
        fails["file"] += 1
for i in range(1000):
    t = ("t%d-" % i) + "x" * 2990
    try:
        os.symlink(t, os.path.join(mnt, "d", "s%d" % i))
        made.write("l d/s%d %s\n" % (i, t))
    except OSError as e:
        if e.errno != errno.ENOSPC: raise
        fails["link"] += 1
print("full disk: ENOSPC for %d of 2000 files and %d of 1000 symlinks of 3 KB" % (fails["file"], fails["link"]))
if not fails["link"]: sys.exit("3 MB of symlinks all fitted a full 64 MiB disk's metadata log")
PY
	umount_fs
	fsck_clean "after creates on a full disk"
	mount_fs
	local kind f t n=0
	while read -r kind f t; do
		n=$((n + 1))
		if [ "$kind" = f ]; then [ -f "$mnt/$f" ] || fail "$f was created (0) on a full disk and is gone after a clean unmount"
		else [ "$(readlink "$mnt/$f")" = "$t" ] || fail "symlink $f was created (0) on a full disk and is gone after a clean unmount"; fi
	done <"$work/made"
	[ "$(find "$mnt/d" -mindepth 1 | wc -l)" = "$n" ] || fail "names that failed with ENOSPC are there"
	echo "all $n names that were created are there after the remount"
	umount_fs
}

# fsck notices a namespace older than the allocator's last committed
# transaction: commits, each fsynced, then SIGKILL; the first delta record
# after the checkpoint is damaged, so the replay stops before acknowledged
# changes.
case_fsck_old() {
	need python3
	"$BGAFS" mkfs "$img" 64M
	mount_fs
	local i out
	for i in 1 2 3 4 5; do
		echo "$i" >"$mnt/f$i"
		sync "$mnt/f$i" "$mnt"
	done
	crash_fs
	"$BGAFS" fsck "$img" >/dev/null 2>&1 || true # leaks only (not unmounted)
	python3 - "$img" <<'PY'
import struct, sys
f = open(sys.argv[1], "r+b")
best = None
for slot in (0, 1):
    f.seek(slot * 4096); sb = f.read(512)
    if struct.unpack_from("<Q", sb, 0)[0] != 0x3153464147424742: continue
    gen = struct.unpack_from("<Q", sb, 16)[0]
    if best is None or gen > best[0]: best = (gen, sb)
sb = best[1]
start = struct.unpack_from("<Q", sb, 72)[0]          # log[0].start
pos = struct.unpack_from("<Q", sb, 328)[0]           # ckpt_pos
f.seek((start + pos) * 4096); hdr = f.read(64)
nb = (64 + struct.unpack_from("<Q", hdr, 24)[0] + 4095) // 4096
f.seek((start + pos + nb) * 4096); f.write(b"\xff" * 64)  # the first delta's header
PY
	if out=$("$BGAFS" fsck "$img" 2>&1); then fail "fsck is clean on a namespace that lost durable records"; fi
	grep -q "older than the last committed transaction" <<<"$out" || fail "fsck did not name the loss: $out"
	echo "fsck: $(grep older <<<"$out")"
}

# Replay: a tree committed, then every kind of change to it, made durable
# by an fsync of each directory, then SIGKILL: the remount replays the log's deltas (no checkpoint since
# the mount) and the tree is the one before the kill.  Three rounds on one
# image, so inos are reused (a file's ino for a directory, in one commit).
case_replay() {
	need python3
	"$BGAFS" mkfs "$img" 64M
	local round
	for round in 1 2 3; do
		mount_fs
		python3 - "$mnt" "$round" <<'PY' || fail "round $round: the changes failed"
import ctypes, os, sys
m, r = sys.argv[1], sys.argv[2]
j = lambda *a: os.path.join(m, *a)
libc = ctypes.CDLL(None, use_errno=True)
def exchange(a, b):  # renameat2(RENAME_EXCHANGE)
    if libc.renameat2(-100, a.encode(), -100, b.encode(), 2):
        raise OSError(ctypes.get_errno(), "renameat2 " + a)
for old in os.listdir(m):  # the last round's tree goes: its inos come back
    if old.startswith("r"):
        for root, dirs, files in os.walk(j(old), topdown=False):
            for f in files: os.unlink(os.path.join(root, f))
            for d in dirs: os.rmdir(os.path.join(root, d))
        os.rmdir(j(old))
d = "r" + r
os.makedirs(j(d, "a", "deep"))
os.mkdir(j(d, "b"))
for i in range(40):
    with open(j(d, "a", "f%d" % i), "wb") as f: f.write(os.urandom(100 + 3000 * i))
os.link(j(d, "a", "f1"), j(d, "b", "hard"))
os.symlink("x" * (500 * int(r)), j(d, "a", "sym"))
fd = os.open(m, os.O_RDONLY); os.fsync(fd); os.close(fd)  # the changes below in later deltas
os.rename(j(d, "a", "f2"), j(d, "b", "moved"))
os.rename(j(d, "a", "f3"), j(d, "a", "f4"))          # over an existing name
exchange(j(d, "a", "f5"), j(d, "b"))                  # a file and a directory swap
os.rename(j(d, "a", "deep"), j(d, "deeper"))          # a directory moves up
os.truncate(j(d, "a", "f6"), 5000)
os.chmod(j(d, "a", "f7"), 0o600)
os.utime(j(d, "a", "f8"), (1000000000, 1000000000))
for i in range(10, 20): os.unlink(j(d, "a", "f%d" % i))
os.mkdir(j(d, "a", "f10"))                            # likely the ino of a file just unlinked
os.mkdir(j(d, "gone")); open(j(d, "gone", "x"), "w").close()
os.unlink(j(d, "gone", "x")); os.rmdir(j(d, "gone"))
for root, dirs, files in os.walk(j(d)):  # each changed directory, as POSIX asks
    fd = os.open(root, os.O_RDONLY); os.fsync(fd); os.close(fd)
PY
		(cd "$mnt" && find . -printf '%y %m %s %n %l %T@ %p\n' | LC_ALL=C sort && sums) >"$work/before"
		crash_fs
		mount_fs
		(cd "$mnt" && find . -printf '%y %m %s %n %l %T@ %p\n' | LC_ALL=C sort && sums) >"$work/after"
		diff "$work/before" "$work/after" >/dev/null ||
			{ diff "$work/before" "$work/after" | head || true; fail "round $round: the replayed tree differs"; }
		echo "round $round: $(wc -l <"$work/after") lines identical after the replay"
		umount_fs
		fsck_clean "after replay round $round"
	done
}

# The log area grows with the namespace: 20,000 names on a 64 MiB image
# (a 2 MiB area, room for 768 KiB of namespace) move the log twice into a
# larger area; after a SIGKILL the replay finds every name, and after a
# clean unmount fsck owns exactly the last area.
case_loggrow() {
	need python3
	"$BGAFS" mkfs "$img" 64M
	mount_fs
	local size0 size1 n
	size0=$(df -k --output=size "$mnt" | tail -1)
	python3 - "$mnt/many" <<'PY' || fail "20,000 creates on a 64 MiB image"
import os, sys
os.mkdir(sys.argv[1])
for i in range(20000):
    os.close(os.open(os.path.join(sys.argv[1], "file%06d" % i), os.O_CREAT | os.O_WRONLY, 0o644))
fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd); os.close(fd)
PY
	size1=$(df -k --output=size "$mnt" | tail -1)
	[ "$size1" -lt "$size0" ] || fail "the log area did not grow (df size ${size0}K, then ${size1}K)"
	crash_fs
	mount_fs
	n=$(find "$mnt/many" -type f | wc -l)
	[ "$n" = 20000 ] || fail "$n of 20,000 fsynced names after the crash"
	umount_fs
	fsck_clean "after the log moved to a larger area"
	echo "log area grew: df size ${size0}K -> ${size1}K; 20,000 names after a crash"
}

# The cost of one small change (a new 4 KiB file, fsync of it and of its
# directory) in bytes the daemon writes (/proc/PID/io wchar: data, metadata
# log, allocator and FUSE replies), with 10,000 and with 100,000 files in
# that directory, each right after a remount (so no checkpoint is due).
# It must not grow with the namespace: at most 256 KiB at 100,000 files,
# and less than twice what it is at 10,000.
case_commit_size() {
	need python3
	"$BGAFS" mkfs "$img" 4G # sparse
	local n k w0 w1 b med10=0 med100=0
	mount_fs
	for n in 10000 100000; do
		python3 - "$mnt/many" "$n" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(d, exist_ok=True)
have = sum(1 for x in os.listdir(d) if x.startswith("file"))
for i in range(have, n):
    os.close(os.open(os.path.join(d, "file%06d" % i), os.O_CREAT | os.O_WRONLY, 0o644))
PY
		umount_fs
		mount_fs
		local all=()
		for k in 1 2 3; do
			w0=$(awk '/^wchar/ {print $2}' "/proc/$pid/io")
			python3 - "$mnt/many" "c$n.$k" <<'PY'
import os, sys
d, name = sys.argv[1], sys.argv[2]
fd = os.open(os.path.join(d, name), os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"x" * 4096)
os.fsync(fd)
os.close(fd)
dfd = os.open(d, os.O_RDONLY)
os.fsync(dfd)
os.close(dfd)
PY
			w1=$(awk '/^wchar/ {print $2}' "/proc/$pid/io")
			all+=($((w1 - w0)))
		done
		b=$(printf '%s\n' "${all[@]}" | sort -n | sed -n 2p)
		echo "commit size with $n files: ${all[*]} bytes (median $b)"
		[ "$n" = 10000 ] && med10=$b || med100=$b
	done
	umount_fs
	fsck_clean "after the commit-size runs"
	[ "$med100" -le $((256 * 1024)) ] || fail "one small change costs $med100 bytes with 100,000 files (> 256 KiB)"
	[ "$med100" -lt $((2 * med10)) ] || fail "one small change: $med100 bytes at 100,000 files, $med10 at 10,000"
}

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
	local i prev=-1
	for i in $(seq 0 399); do fallocate -p -o $((8192 * i)) -l 4096 "$mnt/h"; done
	for i in $(seq 50); do # until the punches' commit has freed them
		sync "$mnt/h" "$mnt"
		avail=$(df -k --output=avail "$mnt" | tail -1)
		[ "$avail" = "$prev" ] && break
		prev=$avail
		sleep 0.2
	done
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

"case_$CASE"
echo "PASS: bgafs $CASE"
