#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Two bgafs builds against each other in one run, the order alternating
# per repetition, each on a fresh image: a sequential write of WRITE_MB
# (dd, 1 MiB blocks, fsync at the end), an fallocate of FALLOC_MB, and an
# fallocate of nearly all the free space of an image whose free space is
# AGED one-block holes (every other block of a written file punched) and
# one free run.  Medians of the times, B's over A's as ratios, and the
# extents each file ended with (bgafs map, from B: A may not have it; the
# on-disk format is the same).
#   bench/fs/bgafs_ab.sh BGAFS_A BGAFS_B [REPS]
# Environment: AB_SIZE (image, 3G), WRITE_MB (1024), FALLOC_MB (1024),
# AGED_HOLES (2000), AB_DIR (a temporary directory under /tmp).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: bench/fs/bgafs_ab.sh BGAFS_A BGAFS_B [REPS]" >&2; exit 2; }
A=$(realpath "$1")
B=$(realpath "$2")
reps=${3:-5}
SIZE=${AB_SIZE:-3G}
WMB=${WRITE_MB:-1024}
FMB=${FALLOC_MB:-1024}
AGED=${AGED_HOLES:-2000}
# shellcheck source-path=SCRIPTDIR source=../support/fuse_mount.sh
. "$(dirname "$0")/../support/fuse_mount.sh"
# shellcheck source-path=SCRIPTDIR source=../support/fsload.sh
. "$(dirname "$0")/../support/fsload.sh"
fuse_setup "${AB_DIR:-$(mktemp -d /tmp/bgafs-ab.XXXXXX)}"

mount_fs() { # mount_fs BGAFS SIZE: a fresh image, mounted
	bgafs_mount_fresh "$1" "$2" "$work/daemon.log"
}

secs() { # secs COMMAND...: wall seconds
	local t0 t1
	t0=$(date +%s%N)
	"$@"
	t1=$(date +%s%N)
	awk -v d=$((t1 - t0)) 'BEGIN { printf "%.3f", d / 1e9 }'
}

extents() { # extents INODE: of the unmounted image
	"$B" map "$work/img" "$1" | sed -n 's/^bgafs map: inode [0-9]*: \([0-9]*\) extents.*/\1/p'
}

one() { # one BGAFS: "write_s write_extents falloc_s falloc_extents aged_s aged_extents"
	local fs=$1 w f ag ino1 ino2 ino3 avail
	mount_fs "$fs" "$SIZE"
	w=$(secs dd if=/dev/zero of="$mnt/w" bs=1M count="$WMB" conv=fsync status=none)
	f=$(secs fallocate -l "${FMB}M" "$mnt/f")
	ino1=$(stat -c %i "$mnt/w")
	ino2=$(stat -c %i "$mnt/f")
	umount_fs
	local e1 e2
	e1=$(extents "$ino1")
	e2=$(extents "$ino2")
	mount_fs "$fs" 256M
	# one-block holes: every other block of a written file punched out
	dd if=/dev/urandom of="$mnt/h" bs=4k count=$((2 * AGED)) conv=fsync status=none
	punch_every_other "$mnt/h" "$AGED"
	avail_settled "$mnt" "$mnt/h" 0.5 # the punches' frees count once their commit is done
	ag=$(secs fallocate -l $(((avail - 1024) * 1024)) "$mnt/g")
	ino3=$(stat -c %i "$mnt/g")
	umount_fs
	echo "$w $e1 $f $e2 $ag $(extents "$ino3")"
}

declare -A t
for ((r = 0; r < reps; r++)); do
	order="A B"
	[ $((r % 2)) = 1 ] && order="B A"
	for side in $order; do
		bin=$A
		[ $side = B ] && bin=$B
		t[$side.$r]=$(one "$bin")
		echo "bgafs_ab: rep $r $side: ${t[$side.$r]}" >&2
	done
done

med() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { # col SIDE FIELD
	for ((r = 0; r < reps; r++)); do awk -v f="$2" '{ print $f }' <<<"${t[$1.$r]}"; done | med
}
echo "bgafs_ab: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, image $SIZE, medians of $reps, A=$A B=$B"
printf '%-44s | %-10s | %-10s | %s\n' "load" "A" "B" "B / A"
for spec in "1:dd ${WMB} MiB, 1 MiB writes + fsync (s)" "2:  its extents" "3:fallocate ${FMB} MiB (s)" \
	"4:  its extents" "5:fallocate of free space in $AGED holes (s)" "6:  its extents"; do
	f=${spec%%:*}
	a=$(col A "$f")
	b=$(col B "$f")
	printf '%-44s | %-10s | %-10s | %s\n' "${spec#*:}" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { if (a > 0) printf "%.3f", b / a; else print "-" }')"
done
