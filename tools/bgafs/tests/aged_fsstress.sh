#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# aged_fsstress.sh BGAFS FSSTRESS [SIZE [OPS [SEEDS...]]]: the aged fsstress
# run of issue 37.  On one fresh image of SIZE (2G), for each seed (1 2 3)
# in turn: xfstests' fsstress -n OPS (10000) -p 4 -s SEED in its own
# directory; a listing of the whole tree (type, mode, links, size, owner,
# mtime, ctime, symlink target, sha256 of every file); a clean unmount,
# fsck, a remount, and the listing again, which must be the same.  (atime
# is left out: the listing's own reads move it under relatime.)  fsstress
# is not part of this project: build xfstests outside it and pass the
# path of ltp/fsstress (a copy under another name, since some xfstests
# tests `pkill fsstress`).  Exit 0 when every seed's listings match and
# fsck is clean; the differing lines are printed otherwise.
set -euo pipefail
BGAFS=$(realpath "$1")
FSSTRESS=$(realpath "$2")
SIZE=${3:-2G}
OPS=${4:-10000}
SEEDS=("${@:5}")
[ ${#SEEDS[@]} -gt 0 ] || SEEDS=(1 2 3)
work=$(mktemp -d /tmp/bgafs-aged.XXXXXX)
img=$work/img mnt=$work/mnt log=$work/daemon.log
mkdir -p "$mnt"
pid=
cleanup() {
	cd /
	mountpoint -q "$mnt" 2>/dev/null && { fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" || true; }
	[ -z "$pid" ] || wait "$pid" 2>/dev/null || true
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
mount_fs() {
	"$BGAFS" mount "$img" "$mnt" -f 2>>"$log" &
	pid=$!
	for _ in $(seq 200); do mountpoint -q "$mnt" && return 0; sleep 0.05; done
	echo "bgafs did not mount"
	exit 1
}
umount_fs() {
	local tries=0
	until fusermount3 -u "$mnt" 2>/dev/null; do
		[ $((tries += 1)) -lt 300 ] || { echo "unmount: still busy after 30 s"; exit 1; }
		sleep 0.1
	done
	wait "$pid"
	pid=
}
listing() {
	(cd "$mnt" && find . -printf '%y %m %n %s %U:%G %T@ %C@ %p -> %l\n' | sort -k8 &&
		find . -type f -print0 | sort -z | xargs -0r sha256sum)
}
"$BGAFS" mkfs "$img" "$SIZE" >/dev/null
bad=0
for seed in "${SEEDS[@]}"; do
	mount_fs
	mkdir "$mnt/s$seed"
	t0=$(date +%s)
	"$FSSTRESS" -d "$mnt/s$seed" -n "$OPS" -p 4 -s "$seed" >"$work/fsstress.$seed" 2>&1 || true
	listing >"$work/before.$seed"
	echo "seed $seed: fsstress $(($(date +%s) - t0)) s; $(df -k --output=used,size,pcent "$mnt" | tail -1 | awk '{print $1 " of " $2 " KiB used, " $3}')"
	umount_fs
	"$BGAFS" fsck "$img" | tail -1
	mount_fs
	listing >"$work/after.$seed"
	umount_fs
	if cmp -s "$work/before.$seed" "$work/after.$seed"; then
		echo "seed $seed: listings identical across unmount and remount ($(grep -c . "$work/before.$seed") lines)"
	else
		bad=1
		echo "seed $seed: $(diff "$work/before.$seed" "$work/after.$seed" | grep -c '^>') lines differ after the remount; the first:"
		diff "$work/before.$seed" "$work/after.$seed" | head -20
	fi
done
"$BGAFS" fsck "$img" | tail -1 || bad=1
exit $bad
