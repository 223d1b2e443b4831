# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash disable=SC2154 # $work, $mnt and the rest: record_traces.sh sets them
# The applications' histories record_traces.sh records: a database
# (lsm), a build cache (ccache) and backups (archive), one function a
# history as in record_histories.sh, whose helpers (used_pct, ...) they
# use, and the peak poller they share.  Sourced by record_traces.sh after
# record_histories.sh, never run alone.

# The held-out histories recorded with the library of 91c78c8 and the
# bgafs of c2e8457 (lsm and the ones after it below), held out from the
# placement work after it.
# peak_start / peak_stop: the highest used_pct while a history runs,
# polled every 0.2 s in the background (a peak between two polls missed;
# the poller ends by itself once $mnt is unmounted, as when a history fails)
peak_start() {
	echo 0 >"$work/peak"
	(
		local p=0 u
		while mountpoint -q "$mnt"; do
			u=$(used_pct 2>/dev/null) || u=0
			[ "$u" -gt "$p" ] && p=$u && echo "$p" >"$work/peak"
			sleep 0.2
		done
	) &
	peak_pid=$!
}
peak_stop() { # peak_stop WHO
	kill "$peak_pid" 2>/dev/null
	wait "$peak_pid" 2>/dev/null || true
	echo "record_traces: $1: $(cat "$work/peak")% full at the peak (polled)"
}
# lsm: RocksDB's db_bench (rocksdb-tools), an LSM store whose SSTs are
# written whole (fallocate'd ahead, RocksDB's default, the rest given
# back at close) and deleted in waves as compactions replace them,
# beside its WAL: no compression, 4 MiB memtables and SSTs, 16 MiB
# level 1, one writer, values of 400 B: 250,000 keys filled at random
# and overwritten; overwrites at random over 400,000 keys; 400,000
# deletes at random, then a full compaction; overwrites of 1,000 B
# values over 200,000 keys; 300,000 deletes, a full compaction (the
# volume 87% full at its peak)
lsm_bench() { # lsm_bench ARGS...: db_bench on $mnt/db, its results line printed
	db_bench --db="$mnt/db" --compression_type=none --write_buffer_size=4194304 \
		--target_file_size_base=4194304 --max_bytes_for_level_base=16777216 --threads=1 \
		--histogram=0 --statistics=0 --value_size=400 "$@" >"$work/lsm.out" 2>&1 ||
		{ cat "$work/lsm.out" >&2; echo "record_traces: lsm: db_bench $* failed" >&2; exit 1; }
	echo "record_traces: lsm: $(grep -E '^[a-z]+ +:' "$work/lsm.out" | awk '{printf "%s%s", s, $1; s = ", "}'), $(used_pct)% full"
}
lsm() {
	peak_start
	lsm_bench --benchmarks=fillrandom,overwrite --num=250000 --seed=81
	lsm_bench --use_existing_db=1 --benchmarks=overwrite --num=400000 --seed=82
	lsm_bench --use_existing_db=1 --benchmarks=deleterandom,compact --num=400000 --seed=83
	lsm_bench --use_existing_db=1 --benchmarks=overwrite --num=200000 --value_size=1000 --seed=84
	lsm_bench --use_existing_db=1 --benchmarks=deleterandom,compact --num=300000 --seed=85
	peak_stop lsm
}
# ccache: a CI machine building this project again and again: five
# commits of its first-parent history (the 500th, 555th, 610th, 665th and
# 720th from the first) in turn, each one's sources unpacked onto bgafs
# (git archive, but tests/data) and built there in a new build directory
# (cmake, RelWithDebInfo, the tests on, make -j2) through ccache, whose
# cache is on bgafs too (its files written to a temporary name and
# renamed; past CCACHE_MAXSIZE of 24 MiB the oldest deleted); before each,
# the sources and build two commits back deleted; the third built a
# second time after make clean (from the cache); then all but the last
# build deleted, and what the cache has not used since the third's second
# build evicted (ccache --evict-older-than)
ccache_build() { # ccache_build N: sources and build N on $mnt
	local s=$mnt/src$1 b=$mnt/build$1
	mkdir "$s"
	git -C "$ccache_top" archive "$(sed -n "${1}p" "$work/ccrevs")" -- . ':!tests/data' | tar -x -C "$s"
	cmake -S "$s" -B "$b" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBGA_TESTS=ON \
		-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
	make -s -C "$b" -j2 >/dev/null 2>"$work/ccache.err" ||
		{ cat "$work/ccache.err" >&2; echo "record_traces: ccache: build $1 failed" >&2; exit 1; }
	sync -f "$mnt"
	echo "record_traces: ccache: build $1 done, $(used_pct)% full, $(ccache -s | grep -E 'Hits:' | head -1 | tr -s ' ')"
}
ccache_ci() {
	ccache_top=$(git rev-parse --show-toplevel)
	git -C "$ccache_top" rev-list --reverse --first-parent HEAD | awk 'NR == 500 || NR == 555 || NR == 610 || NR == 665 || NR == 720' >"$work/ccrevs"
	[ "$(wc -l <"$work/ccrevs")" = 5 ] || { echo "record_traces: ccache: fewer than 720 commits" >&2; exit 2; }
	export CCACHE_DIR=$mnt/ccache CCACHE_MAXSIZE=24M
	peak_start
	local i
	for i in 1 2 3 4 5; do
		rm -rf "$mnt/src$((i - 2))" "$mnt/build$((i - 2))"
		ccache_build $i
		if [ $i = 3 ]; then
			make -s -C "$mnt/build3" clean
			make -s -C "$mnt/build3" -j2 >/dev/null 2>"$work/ccache.err" || { cat "$work/ccache.err" >&2; exit 1; }
			echo "record_traces: ccache: build 3 again, $(used_pct)% full"
			ccache_mid=$(date +%s)
		fi
	done
	rm -rf "$mnt/src4" "$mnt/build4"
	ccache --evict-older-than "$(($(date +%s) - ccache_mid))s" >/dev/null
	peak_stop ccache
	unset CCACHE_DIR CCACHE_MAXSIZE
}
# archive: nightly backups by tar and zstd, rotated: a tree on bgafs
# changed each day and archived beside it (tar --listed-incremental,
# piped to zstd -3: a full archive every fourth day, incrementals
# between), for 14 days; the cycles before the last two deleted when a
# full one is made; at the end of each cycle (days 4, 8, 12) the last
# cycle restored into the volume (zstd -dc | tar -x, each archive in
# turn) and the restored copy deleted.  The tree: drivers/scsi, usb and
# misc of linux-source-6.1 copied in; each day after the first a subtree
# of drivers/ added (staging, clk, pinctrl, infiniband, media, iio,
# input, tty, crypto, video, mfd, hid, mtd in turn), every third day the
# one there longest deleted, and every fifth C file of one of them (the
# day's number picks) edited by sed -i
archive_dirs=(scsi usb misc staging clk pinctrl infiniband media iio input tty crypto video mfd hid mtd)
archive_src=$work/archive-src/linux-source-6.1/drivers
archive_backup() { # archive_backup DAY: the day's archive, full every fourth day
	local d=$1 o
	o=$mnt/backup/d$(printf %02d "$d")
	if [ $((d % 4)) = 1 ]; then
		# a full one: the cycles before the last two deleted, the new cycle begun
		find "$mnt/backup" -name '*.tar.zst' | LC_ALL=C sort | awk -v c="$((d - 8))" '{
			n = $0; sub(/.*\/d/, "", n); sub(/[.-].*/, "", n); if (n + 0 < c) print }' | xargs -r -d '\n' rm -f
		rm -f "$mnt/backup/snar"
		o=$o-full
	fi
	tar --listed-incremental="$mnt/backup/snar" -C "$mnt" -cf - tree | zstd -q -3 -T1 -o "$o.tar.zst"
	sync -f "$mnt"
	echo "record_traces: archive: day $d, $(basename "$o").tar.zst of $(du -k "$o.tar.zst" | cut -f1) KiB, $(used_pct)% full"
}
archive_restore() { # the last cycle extracted into $mnt/restore, each archive in turn, then deleted
	local a full
	full=$(find "$mnt/backup" -name '*-full.tar.zst' | LC_ALL=C sort | tail -1)
	mkdir "$mnt/restore"
	for a in $(find "$mnt/backup" -name '*.tar.zst' | LC_ALL=C sort | awk -v f="$full" '$0 >= f'); do
		zstd -q -dc "$a" | tar --listed-incremental=/dev/null -C "$mnt/restore" -xf -
	done
	sync -f "$mnt"
	echo "record_traces: archive: restored $(basename "$full") on, $(used_pct)% full"
	rm -rf "$mnt/restore"
}
archive() {
	if [ ! -d "$archive_src" ]; then
		mkdir -p "$work/archive-src"
		tar -xf /usr/src/linux-source-6.1.tar.xz -C "$work/archive-src" "${archive_dirs[@]/#/linux-source-6.1/drivers/}"
	fi
	peak_start
	mkdir -p "$mnt/tree" "$mnt/backup"
	local d n have=(scsi usb misc) add=(staging clk pinctrl infiniband media iio input tty crypto video mfd hid mtd)
	for n in "${have[@]}"; do cp -a "$archive_src/$n" "$mnt/tree/"; done
	for d in $(seq 14); do
		if [ "$d" -gt 1 ]; then
			cp -a "$archive_src/${add[d - 2]}" "$mnt/tree/"
			have+=("${add[d - 2]}")
			if [ $((d % 3)) = 0 ]; then
				rm -rf "${mnt:?}/tree/${have[0]}"
				have=("${have[@]:1}")
			fi
			n=${have[d % ${#have[@]}]}
			find "$mnt/tree/$n" -name '*.c' | LC_ALL=C sort | awk -v d="$d" 'NR % 5 == d % 5' |
				xargs -r -d '\n' sed -i -e 's/^\t*return 0;$/&\n\t\/* day '"$d"' *\//'
		fi
		archive_backup "$d"
		case $d in 4 | 8 | 12) archive_restore ;; esac
	done
	peak_stop archive
}
