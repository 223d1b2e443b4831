# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# bgafs_test.sh's cases: a full disk and a growing namespace: ENOSPC and the space coming back
# (enospc, enospc_rm), creates on a full disk (fullcreate), aging to 98%
# full (aging), the log area's growth (loggrow) and the cost of one small
# change at 100,000 files (commit_size).
# Sourced by bgafs_test.sh, which defines the helpers they call.

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
