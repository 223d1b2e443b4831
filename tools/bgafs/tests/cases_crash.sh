# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# bgafs_test.sh's cases: SIGKILL of the daemon and the replay of the metadata log: during writes
# (crash), after an idle committer (crash_idle), the loop of make soak
# (crashloop), every kind of namespace change (replay), and fsck's notice of a
# damaged log (fsck_old).
# Sourced by bgafs_test.sh, which defines the helpers they call.

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
