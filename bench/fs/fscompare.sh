#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bgafs against fuse2fs, one after the other in one run, on images of the
# same size: dbench with 1 and 4 clients, then the fio load of the bgafs
# tests (4 jobs of 4 KiB random writes and one sequential writer, 256 MiB,
# crc32c verify, fio's default fallocate).  Prints one table.
#
#   bench/fs/fscompare.sh [BUILD_DIR]     (default build/release; needs bgafs built)
#
# Environment: FSCOMPARE_SIZE (2G), DBENCH_SECONDS (20), FSCOMPARE_DIR
# (a temporary directory under /tmp).  Packages: scripts/deps.sh fscompare.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/release}
BGAFS=$(realpath "$build/tools/bgafs/bgafs" 2>/dev/null || true)
[ -x "$BGAFS" ] || { echo "fscompare: no bgafs in $build (cmake --build $build --target bgafs)" >&2; exit 2; }
for c in dbench fio fuse2fs mke2fs fusermount3; do
	command -v $c >/dev/null || { echo "fscompare: $c missing (scripts/deps.sh fscompare)" >&2; exit 2; }
done
SIZE=${FSCOMPARE_SIZE:-2G}
SECS=${DBENCH_SECONDS:-20}
# shellcheck source=bench/support/fuse_mount.sh
. bench/support/fuse_mount.sh # (the script runs from the top directory)
# shellcheck source=bench/support/fsload.sh
. bench/support/fsload.sh
fuse_setup "${FSCOMPARE_DIR:-$(mktemp -d /tmp/fscompare.XXXXXX)}"

mount_fs() { # mount_fs bgafs|fuse2fs: mount a fresh image
	if [ "$1" = bgafs ]; then
		bgafs_mount_fresh "$BGAFS" "$SIZE" "$work/$1.log"
		return
	fi
	rm -f "$work/img"
	truncate -s "$SIZE" "$work/img"
	mke2fs -q -F -t ext4 "$work/img"
	fuse2fs "$work/img" "$mnt" -f >>"$work/$1.log" 2>&1 &
	fuse_wait_mounted "fscompare: $1" "$work/$1.log"
}

dbench_mbs() { # dbench_mbs CLIENTS: MB/s
	local out
	out=$(dbench_run "$mnt" "$SECS" "$1") || true
	echo "$out" >>"$work/dbench.log"
	awk '/^Throughput/ {printf "%.1f\n", $2}' <<<"$out" | tail -1
}

fio_run() { # fio_run NAME: "MiB/s verify-result"
	fio_job "$work/job.fio" "$mnt"
	local out rc=0 bw verdict
	out=$(fio "$work/job.fio" 2>&1) || rc=$?
	echo "$out" >"$work/fio.$1.log"
	# WRITE: bw=33.7MiB/s (35.4MB/s) ... in MiB/s
	bw=$(awk '/WRITE: bw=/ { v = $2; sub("bw=", "", v); n = v + 0;
		if (v ~ /KiB/) n /= 1024; if (v ~ /GiB/) n *= 1024; printf "%.1f", n }' <<<"$out")
	local bad
	bad=$(grep -ciE "verify: bad|bad magic|crc32c: verify failed|verify failed" <<<"$out" || true)
	if [ $rc = 0 ] && [ "$bad" = 0 ]; then verdict="ok"; else verdict="FAILED:$bad-errors"; fi
	echo "${bw:-0} $verdict"
}

declare -A r
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for fs in bgafs fuse2fs; do
	echo "fscompare: $fs, dbench 1 client (${SECS} s)" >&2
	mount_fs $fs
	r[$fs.d1]=$(dbench_mbs 1)
	umount_fs
	echo "fscompare: $fs, dbench 4 clients (${SECS} s)" >&2
	mount_fs $fs
	r[$fs.d4]=$(dbench_mbs 4)
	umount_fs
	echo "fscompare: $fs, fio" >&2
	mount_fs $fs
	read -r r[$fs.fio] r[$fs.verify] < <(fio_run $fs)
	umount_fs
	if [ $fs = bgafs ]; then
		r[bgafs.fsck]=$("$BGAFS" fsck "$work/img" >/dev/null 2>&1 && echo clean || echo "NOT CLEAN")
	fi
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
echo
echo "fscompare: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, images of $SIZE, dbench $SECS s ($(dbench --help 2>&1 | head -1 | cut -d' ' -f1-3)), $(fio --version)"
echo "load average at the start: $load0, at the end: $(cut -d' ' -f1-3 /proc/loadavg) (a shared machine: other jobs move every cell)"
printf '%-24s | %-16s | %-16s | %s\n' "load" "bgafs" "fuse2fs" "bgafs / fuse2fs"
printf '%-24s-+-%-16s-+-%-16s-+-%s\n' "------------------------" "----------------" "----------------" "---------------"
printf '%-24s | %-16s | %-16s | %s\n' "dbench 1 client (MB/s)" "${r[bgafs.d1]}" "${r[fuse2fs.d1]}" "$(ratio "${r[bgafs.d1]}" "${r[fuse2fs.d1]}")"
printf '%-24s | %-16s | %-16s | %s\n' "dbench 4 clients (MB/s)" "${r[bgafs.d4]}" "${r[fuse2fs.d4]}" "$(ratio "${r[bgafs.d4]}" "${r[fuse2fs.d4]}")"
printf '%-24s | %-16s | %-16s |\n' "dbench 4 / 1 clients" "$(ratio "${r[bgafs.d4]}" "${r[bgafs.d1]}")" "$(ratio "${r[fuse2fs.d4]}" "${r[fuse2fs.d1]}")"
printf '%-24s | %-16s | %-16s | %s\n' "fio write (MiB/s)" "${r[bgafs.fio]}" "${r[fuse2fs.fio]}" "$(ratio "${r[bgafs.fio]}" "${r[fuse2fs.fio]}")"
printf '%-24s | %-16s | %-16s |\n' "fio verify (crc32c)" "${r[bgafs.verify]}" "${r[fuse2fs.verify]}"
printf '%-24s | %-16s | %-16s |\n' "bgafs fsck afterwards" "${r[bgafs.fsck]}" "-"
