# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash disable=SC2154 # $work, $mnt and the rest: record_traces.sh sets them
# The histories record_traces.sh records: one function a history, run with
# $mnt mounted and traced (record_traces.sh's record), and what they share.
# Sourced by record_traces.sh after its setup ($work, $mnt, $build, $R,
# $BGAFS, fsload.sh and fuse_mount.sh), never run alone.

# The kernel sources the kernel and aged histories copy: Debian's
# linux-source-6.1 (scripts/deps.sh record), its fs/, net/ and drivers/net/
# extracted once, and the same fs/ and net/ committed to a local git
# repository for the kernel history's clone.
src=$work/linux-source-6.1
kernel_src() {
	[ -d "$src" ] && return 0
	local tarball=/usr/src/linux-source-6.1.tar.xz
	[ -f $tarball ] || { echo "record_traces: no $tarball (scripts/deps.sh record)" >&2; exit 2; }
	tar -xf $tarball -C "$work" linux-source-6.1/fs linux-source-6.1/net linux-source-6.1/drivers/net
	git -C "$src" init -q -b main
	git -C "$src" add fs net
	git -C "$src" -c user.name=record -c user.email=record@localhost commit -q -m "fs and net of linux-source-6.1"
}
# postmark DIR FILES TRANSACTIONS SEED: postmark's files of 500 B to 64 KiB, written and read 4 KiB at a time
postmark_in() {
	mkdir -p "$1"
	printf '%s\n' "set location $1" "set number $2" "set transactions $3" "set size 500 65536" \
		"set read 4096" "set write 4096" "set seed $4" "set report terse" run quit | postmark >/dev/null
}
# every other file (in sorted order) under DIR removed
delete_half() { find "$1" -type f | LC_ALL=C sort | awk 'NR % 2' | xargs -d '\n' rm -f; }
# kernel: the sources copied, half of drivers/net/ deleted, postmark
# beside them, a git clone of fs/ and net/, then fs/ deleted
kernel() {
	cp -a "$src/fs" "$src/net" "$mnt/"
	mkdir -p "$mnt/drivers" && cp -a "$src/drivers/net" "$mnt/drivers/"
	delete_half "$mnt/drivers/net"
	postmark_in "$mnt/pm" 5000 20000 42
	git clone -q --no-hardlinks "$src" "$mnt/clone"
	rm -rf "$mnt/fs"
}
# aged: rounds, each fs/ copied into a round directory and postmark run
# in it (500 files, 2,000 transactions, seeded by the round); the first
# two times a round leaves the volume past 80% full, every other round
# directory still there is deleted (the oldest first); then rounds go on
# until the volume is past 90% full, and every other round is deleted once
# more, so that the trace ends with free space to judge
used_pct() { stat -f -c '%b %f' "$mnt" | awk '{print int(100 * ($1 - $2) / $1)}'; }
delete_every_other_round() { find "$mnt" -mindepth 1 -maxdepth 1 -name 'r*' | LC_ALL=C sort | awk 'NR % 2' | xargs -d '\n' rm -rf; }
aged() {
	local r=0 purges=0
	while :; do
		r=$((r + 1))
		local d=$mnt/r$(printf %03d $r)
		cp -a "$src/fs" "$d"
		postmark_in "$d/pm" 500 2000 "$r"
		local u
		u=$(used_pct)
		echo "record_traces: aged: round $r leaves the volume $u% full"
		if [ $purges -lt 2 ] && [ "$u" -gt 80 ]; then
			delete_every_other_round
			purges=$((purges + 1))
		elif [ $purges = 2 ] && [ "$u" -gt 90 ]; then
			break
		fi
	done
	delete_every_other_round
}
# git: this project's own repository cloned, then checked out at every
# 60th commit of its first-parent history from the first, then at HEAD
# again, and packed again (git gc)
gitrevs() {
	local top
	top=$(git rev-parse --show-toplevel)
	git clone -q --no-hardlinks "$top" "$mnt/repo"
	git -C "$mnt/repo" rev-list --reverse --first-parent HEAD | awk 'NR % 60 == 1' >"$work/revs"
	while read -r rev; do git -C "$mnt/repo" checkout -q "$rev"; done <"$work/revs"
	git -C "$mnt/repo" checkout -q -
	git -C "$mnt/repo" checkout -q "$(git -C "$top" rev-parse HEAD)"
	git -C "$mnt/repo" gc -q
}
# gitaged: aged by git, as "File Systems Fated for Senescence?" ages one:
# this repository cloned at its first commit's state on a small volume, a
# file written to bring it to 88% full, then checked out at every 5th
# commit of its first-parent history up to HEAD, then the file deleted
gitaged() {
	local top
	top=$(git rev-parse --show-toplevel)
	git clone -q --no-hardlinks "$top" "$mnt/repo"
	git -C "$mnt/repo" rev-list --reverse --first-parent HEAD | awk 'NR % 5 == 1' >"$work/revs"
	git -C "$mnt/repo" checkout -q "$(head -1 "$work/revs")"
	local fill
	sync -f "$mnt/repo" # the deferred frees committed, so that statfs counts them free
	fill=$(stat -f -c '%b %f %S' "$mnt" | awk '{n = int(($2 - 0.12 * $1) * $3 / 1048576); print (n > 0 ? n : 0)}')
	dd if=/dev/zero of="$mnt/fill" bs=1M count="$fill" status=none
	echo "record_traces: gitaged: $(used_pct)% full before the checkouts"
	while read -r rev; do git -C "$mnt/repo" checkout -q "$rev"; done <"$work/revs"
	git -C "$mnt/repo" checkout -q "$(git -C "$top" rev-parse HEAD)"
	echo "record_traces: gitaged: $(used_pct)% full after them"
	rm -f "$mnt/fill"
}
# fio: four writers of 4 KiB blocks at random offsets (24 MiB files)
# and one sequential writer (32 MiB), all at once, nothing preallocated;
# two of the random files deleted; then two writers of 16 KiB blocks at
# random offsets (16 MiB files)
fio_random() {
	cat >"$work/fio1" <<EOF2
[global]
directory=$mnt
ioengine=psync
fallocate=none
randseed=42
[rand]
rw=randwrite
bs=4k
size=24m
numjobs=4
[seq]
rw=write
bs=4k
size=32m
EOF2
	fio --output=/dev/null "$work/fio1"
	rm -f "$mnt/rand.1.0" "$mnt/rand.3.0"
	fio --output=/dev/null --name=rand16 --directory="$mnt" --ioengine=psync --fallocate=none --randseed=43 \
		--rw=randwrite --bs=16k --size=16m --numjobs=2
}
# kbuild: a tinyconfig kernel of linux-source-6.1 built (make -j2) with its
# output on bgafs (O=), the whole tree extracted outside it (LINUX_SRC, an
# extracted linux-source-6.1, saves the extraction), then make clean
kbuild() {
	local full=${LINUX_SRC:-$work/linux-full/linux-source-6.1}
	if [ ! -d "$full" ]; then
		mkdir -p "$work/linux-full"
		tar -xf /usr/src/linux-source-6.1.tar.xz -C "$work/linux-full"
	fi
	make -s -C "$full" O="$mnt/out" tinyconfig >/dev/null
	make -s -C "$full" O="$mnt/out" -j2 >/dev/null
	make -s -C "$full" O="$mnt/out" clean >/dev/null
}

# The held-out histories (docs/TRACE.md "The histories kept"): recorded
# after the placement policy was tuned, from workloads it never saw.
# pylib, pmbig, fioseq and usrinc were held out at 454cbac, and tuned on
# after; debs, gzip, sqlite, sort and fiomix (after usrinc below) were
# recorded with the library of bfeda60 and held out from the policy work
# that followed (tuned on since); torrent, gitgc, logs and rsync (after
# fiomix below) with that of b396e86, held out from the work after it.
# pylib: /usr/lib/python3.11 as installed (Debian's python3.11 standard
# library and its dist-packages) as a tarball, extracted into rounds r1-r3; every other
# file of r1 and r2 deleted; r1 extracted again over what is left; r4
# extracted; r2 deleted, so that the trace ends with free space to judge
pylib() {
	tar -C /usr/lib -cf "$work/pylib.tar" python3.11
	local r
	for r in 1 2 3; do mkdir "$mnt/r$r" && tar -C "$mnt/r$r" -xf "$work/pylib.tar"; done
	sync -f "$mnt" # the deferred frees committed, so that statfs counts them free
	echo "record_traces: pylib: $(used_pct)% full after three rounds"
	delete_half "$mnt/r1"
	delete_half "$mnt/r2"
	tar -C "$mnt/r1" -xf "$work/pylib.tar"
	mkdir "$mnt/r4" && tar -C "$mnt/r4" -xf "$work/pylib.tar"
	sync -f "$mnt"
	echo "record_traces: pylib: $(used_pct)% full after the fourth"
	rm -rf "$mnt/r2"
}
# pmbig: postmark with larger files than the kernel history's (4 KiB to
# 1 MiB, written and read 64 KiB at a time), two instances at once
# (250 files and 2,500 transactions each, seeds 7 and 8) beside a copy
# of the python3.11 standard library extracted first; postmark deletes
# its files at its end, then every other file of the library is deleted
pmbig_in() {
	mkdir -p "$1"
	printf '%s\n' "set location $1" "set number 250" "set transactions 2500" "set size 4096 1048576" \
		"set read 65536" "set write 65536" "set seed $2" "set report terse" run quit | postmark >/dev/null
}
pmbig() {
	tar -C /usr/lib -cf "$work/pylib.tar" python3.11
	tar -C "$mnt" -xf "$work/pylib.tar"
	pmbig_in "$mnt/pm7" 7 &
	local p7=$!
	pmbig_in "$mnt/pm8" 8
	wait $p7
	delete_half "$mnt/python3.11"
}
# fioseq: fio, sequential writers of several sizes at once, nothing
# preallocated, each writing its files one after another: 64 files of
# 16-256 KiB in 4 KiB writes, 8 of 2-6 MiB in 64 KiB writes, one of 48 MiB
# in 128 KiB writes; then every other small file, half the middle ones and
# the large one deleted; then the same jobs again in new files (seed 52)
fioseq_job() { # fioseq_job PREFIX SEED
	cat >"$work/fioseq" <<EOF2
[global]
directory=$mnt
ioengine=psync
fallocate=none
rw=write
file_service_type=sequential
randseed=$2
create_on_open=1
[${1}small]
bs=4k
nrfiles=64
filesize=16k-256k
size=16m
[${1}mid]
bs=64k
nrfiles=8
filesize=2m-6m
size=48m
[${1}big]
bs=128k
size=48m
EOF2
	fio --output=/dev/null "$work/fioseq"
}
fioseq() {
	fioseq_job a 51
	find "$mnt" -maxdepth 1 -name 'asmall*' | LC_ALL=C sort | awk 'NR % 2' | xargs -d '\n' rm -f
	find "$mnt" -maxdepth 1 -name 'amid*' | LC_ALL=C sort | awk 'NR % 2' | xargs -d '\n' rm -f
	rm -f "$mnt"/abig*
	sync -f "$mnt"
	echo "record_traces: fioseq: $(used_pct)% full after the deletes"
	fioseq_job b 52
	sync -f "$mnt"
	echo "record_traces: fioseq: $(used_pct)% full at the end"
}

# usrinc: /usr/include copied in with tar, one top-level entry after
# another in sorted order (one that would take the volume past 90% full
# passed over), until the volume is past 88% full; every third
# directory two levels down deleted; then rsync -a of the entries copied
# writes the deleted ones again (rsync's temporary file and rename)
usrinc() {
	local e n=0 room
	mkdir "$mnt/inc"
	: >"$work/usrinc"
	for e in $(LC_ALL=C ls /usr/include); do
		# an entry that would take the volume past 90% full is passed over
		room=$(stat -f -c '%b %f %S' "$mnt" | awk '{print int(($2 - 0.10 * $1) * $3 / 1024)}')
		[ "$(du -sk "/usr/include/$e" | cut -f1)" -lt "$room" ] || continue
		tar -C /usr/include -cf - "$e" | tar -C "$mnt/inc" -xf -
		echo "$e" >>"$work/usrinc"
		n=$((n + 1))
		sync -f "$mnt"
		[ "$(used_pct)" -gt 88 ] && break
	done
	echo "record_traces: usrinc: $n entries of /usr/include copied, $(used_pct)% full"
	find "$mnt/inc" -mindepth 2 -maxdepth 2 -type d | LC_ALL=C sort | awk 'NR % 3 == 1' | xargs -d '\n' rm -rf
	sync -f "$mnt"
	echo "record_traces: usrinc: $(used_pct)% full after the deletes"
	while read -r e; do rsync -a "/usr/include/$e" "$mnt/inc/"; done <"$work/usrinc"
	sync -f "$mnt"
	echo "record_traces: usrinc: $(used_pct)% full after rsync"
}

# debs: Debian packages from the apt cache (/var/cache/apt/archives: what
# this machine installed, so the list differs between machines) unpacked
# with dpkg -x, each into its own directory, in sorted order (one whose
# files would take the volume past 90% full passed over) until past 88%
# full; then three times every third package still there deleted and
# unpacking going on from where it stopped until past 88% again; then
# every other package deleted.  Shared objects and executables of MiBs
# beside small documents, in trees that come and go whole.
debs_fill() { # the next packages of $work/debs, from line $debs_at, until past 88% full
	local deb need room
	while [ "$debs_at" -le "$(wc -l <"$work/debs")" ]; do
		deb=$(sed -n "${debs_at}p" "$work/debs")
		debs_at=$((debs_at + 1))
		# the KiB its files take in 4 KiB blocks, and what is left under 90%
		need=$(dpkg-deb -c "$deb" | awk '$1 ~ /^-/ {k += 4 * int(($3 + 4095) / 4096)} END {print k + 0}')
		room=$(stat -f -c '%b %f %S' "$mnt" | awk '{print int(($2 - 0.10 * $1) * $3 / 1024)}')
		[ "$need" -lt "$room" ] || continue
		dpkg -x "$deb" "$mnt/p$(printf %04d $debs_at)"
		sync -f "$mnt" # the deferred frees committed, so that statfs counts them free
		[ "$(used_pct)" -gt 88 ] && return 0
	done
	echo "record_traces: debs: the apt cache ran out at $(used_pct)% full" >&2
}
debs() {
	find /var/cache/apt/archives -maxdepth 1 -name "*.deb" | LC_ALL=C sort >"$work/debs"
	debs_at=1
	debs_fill
	echo "record_traces: debs: $((debs_at - 1)) packages looked at, $(used_pct)% full"
	local _
	for _ in 1 2 3; do
		find "$mnt" -mindepth 1 -maxdepth 1 -name 'p*' | LC_ALL=C sort | awk 'NR % 3 == 1' | xargs -d '\n' rm -rf
		# bgafs frees a deleted file's blocks when the kernel forgets it,
		# after the rm: statfs counts them once it stops changing
		avail_settled "$mnt" "$mnt" 1
		echo "record_traces: debs: $(used_pct)% full after deleting every third"
		debs_fill
		echo "record_traces: debs: $((debs_at - 1)) packages looked at, $(used_pct)% full"
	done
	find "$mnt" -mindepth 1 -maxdepth 1 -name 'p*' | LC_ALL=C sort | awk 'NR % 2' | xargs -d '\n' rm -rf
}

# gzip: text trees compressed and uncompressed in place, as log rotation
# and archiving do: each file replaced by a new one of another size.
# Documentation/, include/ and sound/ of linux-source-6.1 copied in (cp -a;
# one that would take the volume past 90% full passed over); gzip of
# every file of Documentation/ and include/ (each written again as FILE.gz, then
# the original deleted); tools/, arch/arm64/, kernel/, lib/, mm/, arch/x86/,
# arch/powerpc/, block/, crypto/, security/ copied in, each that fits
# under 90% full, until past 88% full; sound/ deleted and gunzip of
# include/'s files; Documentation/ archived with tar -czf, then deleted
gzip_src=$work/lsrc/linux-source-6.1
gzip_copy() { # DIR...: each copied from $gzip_src that fits under 90% full, until past 88%
	local d need room
	for d in "$@"; do
		avail_settled "$mnt" "$mnt" 1 # what gzip deleted counted free (debs() says why)
		need=$(du -sk "$gzip_src/$d" | cut -f1)
		room=$(stat -f -c '%b %f %S' "$mnt" | awk '{print int(($2 - 0.10 * $1) * $3 / 1024)}')
		[ "$need" -lt "$room" ] || { echo "record_traces: gzip: $d passed over"; continue; }
		mkdir -p "$mnt/$(dirname "$d")"
		cp -a "$gzip_src/$d" "$mnt/$d"
		sync -f "$mnt"
		echo "record_traces: gzip: $d copied, $(used_pct)% full"
		if [ "$(used_pct)" -gt 88 ]; then return 0; fi
	done
}
gzip_trees() {
	if [ ! -d "$gzip_src" ]; then
		mkdir -p "$work/lsrc"
		tar -xf /usr/src/linux-source-6.1.tar.xz -C "$work/lsrc" linux-source-6.1/Documentation \
			linux-source-6.1/include linux-source-6.1/sound linux-source-6.1/tools linux-source-6.1/arch/arm64 \
			linux-source-6.1/kernel linux-source-6.1/lib linux-source-6.1/mm linux-source-6.1/arch/x86 \
			linux-source-6.1/arch/powerpc linux-source-6.1/block linux-source-6.1/crypto linux-source-6.1/security
	fi
	gzip_copy Documentation include sound
	# (the files only: gzip -r warns of the symbolic links, and exits 2)
	find "$mnt/Documentation" "$mnt/include" -type f -print0 | LC_ALL=C sort -z | xargs -0 gzip -6
	avail_settled "$mnt" "$mnt" 1
	echo "record_traces: gzip: $(used_pct)% full after gzip"
	gzip_copy tools arch/arm64 kernel lib mm arch/x86 arch/powerpc block crypto security
	rm -rf "$mnt/sound"
	avail_settled "$mnt" "$mnt" 1
	find "$mnt/include" -type f -name '*.gz' -print0 | LC_ALL=C sort -z | xargs -0 gunzip
	avail_settled "$mnt" "$mnt" 1
	echo "record_traces: gzip: $(used_pct)% full after gunzip"
	tar -C "$mnt" -czf "$mnt/Documentation.tar.gz" Documentation
	rm -rf "$mnt/Documentation"
}

# sqlite: three sqlite3 databases written at once, each by its own sqlite3
# process, in rounds of up to 20 transactions of 20 rows of random blobs
# of 100 B-16 KiB (the round smaller as the volume nears 90% full):
# a.db with a rollback journal (a file made and deleted each transaction),
# b.db in WAL mode (journal_size_limit 1 MiB: the WAL cut back after
# each checkpoint), c.db with auto_vacuum=full (truncated at each commit
# that frees pages); every other round, a third of the rows of each
# database's last two rounds deleted; until past 88% full; then b.db deleted, a.db vacuumed into a
# new file that replaces it (VACUUM INTO), and half of c.db's rows deleted
sqlite_round() { # DB PRAGMAS TXNS: TXNS transactions of 20 rows into DB
	{
		echo "$2"
		echo "CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, b BLOB);"
		local i
		for i in $(seq "$3"); do
			echo "WITH RECURSIVE c(i) AS (VALUES(1) UNION ALL SELECT i + 1 FROM c WHERE i < 20)" \
				"INSERT INTO t(b) SELECT randomblob(100 + abs(random()) % 16284) FROM c;"
		done
	} | sqlite3 "$1" >/dev/null
}
sqlite_dbs() {
	local r=0 n pa pb
	local -A mark=([a]=0 [b]=0 [c]=0)
	local A="PRAGMA journal_mode=delete;" B="PRAGMA journal_mode=wal; PRAGMA journal_size_limit=1048576;"
	local C="PRAGMA auto_vacuum=full;"
	while [ "$(used_pct)" -le 88 ]; do
		r=$((r + 1))
		# 3 databases x 20 rows x 8.3 KiB a transaction, under what is left to 90%
		n=$(stat -f -c '%b %f %S' "$mnt" | awk '{n = int(($2 - 0.10 * $1) * $3 / (3 * 20 * 8500)); print (n > 20 ? 20 : (n < 1 ? 1 : n))}')
		sqlite_round "$mnt/a.db" "$A" "$n" & pa=$!
		sqlite_round "$mnt/b.db" "$B" "$n" & pb=$!
		sqlite_round "$mnt/c.db" "$C" "$n"
		wait $pa
		wait $pb
		if [ $((r % 2)) = 0 ]; then
			local db del
			for db in a b c; do
				# mark[DB]: the last id before these two rounds
				del="DELETE FROM t WHERE id > ${mark[$db]} AND id % 3 = $((r / 2 % 3));"
				[ $db = b ] && del="$B $del"
				sqlite3 "$mnt/$db.db" "$del" >/dev/null
				mark[$db]=$(sqlite3 "$mnt/$db.db" "SELECT coalesce(max(id), 0) FROM t;")
			done
		fi
		sync -f "$mnt"
		echo "record_traces: sqlite: round $r ($n transactions a database) leaves the volume $(used_pct)% full"
	done
	rm -f "$mnt"/b.db*
	sqlite3 "$mnt/a.db" "VACUUM INTO '$mnt/a2.db';"
	mv "$mnt/a2.db" "$mnt/a.db"
	sqlite3 "$mnt/c.db" "DELETE FROM t WHERE id % 2 = 0;"
	sync -f "$mnt"
	echo "record_traces: sqlite: $(used_pct)% full at the end"
}

# sort: GNU sort's external merge sort, its temporary files on bgafs (-T):
# the C sources of linux-source-6.1's fs/ (40 MiB) concatenated into one
# file; sorted with a buffer of 8 MiB (LC_ALL=C -S 8M: a dozen runs of a
# few MiB written one after another, merged at once into the output, then
# deleted) by the whole line, then by the second field, each output kept;
# the first output deleted; the second sorted in reverse (the second and
# third sorts take the volume to 88% full); then the input and the
# second output deleted
sort_in() { # sort_in OUT ARGS...: INPUT sorted by ARGS into OUT, its runs in $mnt/tmp
	local o=$1
	shift
	LC_ALL=C sort -S 8M --batch-size=32 -T "$mnt/tmp" "$@" -o "$o"
	avail_settled "$mnt" "$mnt" 1 # the runs deleted counted free (debs() says why)
	echo "record_traces: sort: $(basename "$o") written, $(used_pct)% full"
}
sort_runs() {
	mkdir "$mnt/tmp"
	(cd "$src" && find fs -name '*.[ch]' -type f | LC_ALL=C sort | xargs cat) >"$mnt/in"
	sort_in "$mnt/o1" "$mnt/in"
	sort_in "$mnt/o2" -k2 "$mnt/in"
	rm "$mnt/o1"
	sort_in "$mnt/o3" -r "$mnt/o2"
	rm "$mnt/in" "$mnt/o2"
}

# fiomix: fio, two writers at once, each writing 4 KiB-64 KiB blocks
# (bssplit) at random offsets across its own files of 64 KiB-3 MiB, a
# file chosen at random for each write (file_service_type=random),
# nothing preallocated; every other file deleted; then two writers again
# on new files, as many as fill the room to 90% full; then every third
# file of the first round deleted
fiomix_job() { # fiomix_job PREFIX SEED FILES: two writers of FILES files each
	fio --output=/dev/null --directory="$mnt" --ioengine=psync --fallocate=none --randseed="$2" \
		--rw=randwrite --bssplit=4k/50:16k/30:64k/20 --file_service_type=random \
		--filesize=64k-3m --nrfiles="$3" --numjobs=2 --name="$1"
}
fiomix() {
	fiomix_job a 61 28
	sync -f "$mnt"
	echo "record_traces: fiomix: $(used_pct)% full after the first writers"
	find "$mnt" -maxdepth 1 -name 'a.*' | LC_ALL=C sort | awk 'NR % 2' | xargs -d '\n' rm -f
	avail_settled "$mnt" "$mnt" 1 # the deleted files counted free (debs() says why)
	echo "record_traces: fiomix: $(used_pct)% full after the deletes"
	# files of 1.56 MiB on average, two writers, to about 89% full
	local n
	n=$(stat -f -c '%b %f %S' "$mnt" | awk '{print int(($2 - 0.11 * $1) * $3 / (2 * 1.56 * 1048576))}')
	fiomix_job b 62 "$n"
	sync -f "$mnt"
	echo "record_traces: fiomix: $(used_pct)% full after $n files a writer"
	find "$mnt" -maxdepth 1 -name 'a.*' | LC_ALL=C sort | awk 'NR % 3 == 1' | xargs -d '\n' rm -f
}

# The held-out histories recorded with the library of b396e86.
# torrent: a BitTorrent-like download, by fio: four torrents at once, each
# a writer of whole pieces at random offsets across its own sparse files
# (fio's file made at its full size, nothing preallocated, a file at
# random each write): 3 files of 1-64 MiB in 256 KiB pieces, 6 of 1-16 MiB
# in 256 KiB, 2 of 4-32 MiB in 16 KiB blocks (a client that writes each
# block as it comes), 10 of 1-4 MiB in 256 KiB; the second torrent and
# every other file of the fourth deleted; 4 MiB appended to each file of
# the third and to the first file of the first (dd, 64 KiB writes); two
# torrents more, sized to bring the volume to 90% full (3 files in 256 KiB
# pieces, 6 in 16 KiB blocks); then the first torrent deleted and every
# third file still there
torrent_job() { # torrent_job FILE: a fio job file of the sections that follow it, on $mnt
	printf '%s\n' "[global]" "directory=$mnt" "ioengine=psync" "fallocate=none" "rw=randwrite" \
		"file_service_type=random" >"$1"
}
torrent_section() { # torrent_section FILE NAME BS FILES FILESIZE SEED: a torrent added to the job file FILE
	printf '%s\n' "[$2]" "bs=$3" "nrfiles=$4" "filesize=$5" "randseed=$6" >>"$1"
}
torrent() {
	torrent_job "$work/torrent1"
	torrent_section "$work/torrent1" ta 256k 3 1m-64m 71
	torrent_section "$work/torrent1" tb 256k 6 1m-16m 72
	torrent_section "$work/torrent1" tc 16k 2 4m-32m 73
	torrent_section "$work/torrent1" td 256k 10 1m-4m 74
	fio --output=/dev/null "$work/torrent1"
	sync -f "$mnt"
	echo "record_traces: torrent: $(used_pct)% full after four torrents"
	rm -f "$mnt"/tb.*
	find "$mnt" -maxdepth 1 -name 'td.*' | LC_ALL=C sort | awk 'NR % 2' | xargs -d '\n' rm -f
	avail_settled "$mnt" "$mnt" 1 # the deleted files counted free (debs() says why)
	local f
	for f in "$mnt"/tc.* "$mnt/ta.0.0"; do
		dd if=/dev/urandom of="$f" bs=64k count=64 oflag=append conv=notrunc status=none
	done
	sync -f "$mnt"
	echo "record_traces: torrent: $(used_pct)% full after the deletes and appends"
	# what is left to 90% full, in KiB: 60% to three files, 40% to six
	local room
	room=$(stat -f -c '%b %f %S' "$mnt" | awk '{print int(($2 - 0.10 * $1) * $3 / 1024)}')
	torrent_job "$work/torrent2"
	torrent_section "$work/torrent2" te 256k 3 $((room * 6 / 10 / 3 / 256 * 256))k 75
	torrent_section "$work/torrent2" tf 16k 6 $((room * 4 / 10 / 6 / 16 * 16))k 76
	fio --output=/dev/null "$work/torrent2"
	sync -f "$mnt"
	echo "record_traces: torrent: $(used_pct)% full after two more"
	rm -f "$mnt"/ta.*
	find "$mnt" -maxdepth 1 -type f | LC_ALL=C sort | awk 'NR % 3 == 1' | xargs -d '\n' rm -f
}

# gitgc: a repository's packs written again and again, near full: the
# sound/ tree of linux-source-6.1 but for sound/soc committed to a local
# bare repository (outside bgafs), cloned onto bgafs beside eight files
# of other data (1 to 8 parts in 36 of what is left to 70% full) that
# bring the volume there; then six
# rounds, each adding or deleting a subtree of sound/soc or editing every
# fifth C file (sed -i: a new file renamed over the old), committed (loose
# objects), then packed: git repack -d (rounds 1, 3), git gc (2, 4, with
# the unreachable pruned at once), git gc --aggressive (5), git repack
# -adf (6); before a round past 86% full, one file of other data deleted;
# then the working tree deleted and one git gc more
gitgc_src=$work/gitgc-src/linux-source-6.1
gitgc_edit() { # gitgc_edit DIR N: every fifth C file under $mnt/repo/sound/DIR (in sorted order, from the Nth) edited
	find "$mnt/repo/sound/$1" -name '*.c' | LC_ALL=C sort | awk -v n="$2" 'NR % 5 == n' |
		xargs -d '\n' sed -i -e 's/\t*return 0;$/&\n\t\/* round '"$2"' *\//' -e 's/^static int /static  int /'
}
gitgc() {
	if [ ! -d "$gitgc_src" ]; then
		mkdir -p "$work/gitgc-src"
		tar -xf /usr/src/linux-source-6.1.tar.xz -C "$work/gitgc-src" linux-source-6.1/sound
		git init -q --bare -b main "$work/gitgc.git"
		git -C "$gitgc_src" init -q -b main
		(cd "$gitgc_src" && git add sound ':!sound/soc' &&
			git -c user.name=record -c user.email=record@localhost commit -q -m "sound/ of linux-source-6.1 but soc" &&
			git push -q "$work/gitgc.git" main)
	fi
	git clone -q --no-hardlinks "$work/gitgc.git" "$mnt/repo"
	git -C "$mnt/repo" config user.name record
	git -C "$mnt/repo" config user.email record@localhost
	git -C "$mnt/repo" config pack.threads 2
	sync -f "$mnt"
	# the other data: eight files, to 70% full
	local room i
	room=$(stat -f -c '%b %f %S' "$mnt" | awk '{print int(($2 - 0.30 * $1) * $3 / 1048576)}')
	for i in 1 2 3 4 5 6 7 8; do
		dd if=/dev/urandom of="$mnt/other$i" bs=1M count=$((room * i / 36)) status=none
	done
	sync -f "$mnt"
	echo "record_traces: gitgc: $(used_pct)% full after the clone and the other data"
	local r f
	for r in 1 2 3 4 5 6; do
		avail_settled "$mnt" "$mnt" 1 # what the last pack deleted counted free (debs() says why)
		if [ "$(used_pct)" -gt 86 ]; then
			f=$(find "$mnt" -maxdepth 1 -name 'other*' | LC_ALL=C sort | head -1)
			rm -f "$f"
			avail_settled "$mnt" "$mnt" 1
			echo "record_traces: gitgc: $(basename "$f") deleted, $(used_pct)% full"
		fi
		case $r in
		1) mkdir "$mnt/repo/sound/soc" && cp -a "$gitgc_src/sound/soc/codecs" "$mnt/repo/sound/soc/" ;;
		2) gitgc_edit soc/codecs 2 && gitgc_edit pci 2 ;;
		3) cp -a "$gitgc_src/sound/soc/intel" "$gitgc_src/sound/soc/sof" "$mnt/repo/sound/soc/" && rm -rf "$mnt/repo/sound/isa" ;;
		4) gitgc_edit soc 4 ;;
		5) cp -a "$gitgc_src/sound/soc/fsl" "$gitgc_src/sound/soc/qcom" "$mnt/repo/sound/soc/" && gitgc_edit usb 0 ;;
		6) rm -rf "$mnt/repo/sound/soc/intel" && gitgc_edit soc/codecs 1 ;;
		esac
		git -C "$mnt/repo" add -A
		git -C "$mnt/repo" commit -q -m "round $r"
		sync -f "$mnt"
		echo "record_traces: gitgc: round $r committed, $(used_pct)% full"
		case $r in
		1 | 3) git -C "$mnt/repo" repack -d -q ;;
		2 | 4) git -C "$mnt/repo" -c gc.pruneExpire=now gc -q ;;
		5) git -C "$mnt/repo" -c gc.pruneExpire=now gc -q --aggressive ;;
		6) git -C "$mnt/repo" repack -adf -q ;;
		esac
		sync -f "$mnt"
		echo "record_traces: gitgc: round $r packed, $(used_pct)% full"
	done
	find "$mnt/repo" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
	avail_settled "$mnt" "$mnt" 1
	git -C "$mnt/repo" -c gc.pruneExpire=now gc -q
	echo "record_traces: gitgc: $(used_pct)% full at the end"
}

# logs: six services' logs appended to a line at a time, as syslog
# writes them, each rotated by Debian's savelog while its writer goes on.
# In turns: each service's writer (awk; each line written at once, the
# file closed and opened again every 64 lines as a daemon does after a
# rotation) appends 1,000 lines of about 100 B times the service's
# number (1-6), all six at once, and while they write, each log is
# rotated (savelog: log.0 kept plain, older ones gzip'ed, one service's
# with xz, one's left plain, 99 kept); after a turn past 88% full,
# the older half of each service's archives deleted; after the third
# such clean-up, the logs and archives of two services deleted
logs_append() { # logs_append FILE SERVICE TURN: the service's lines of the turn appended to FILE
	awk -v f="$1" -v s="$2" -v turn="$3" 'BEGIN {
		srand(100 * turn + s)
		for (i = 1; i <= 1000 * s; i++) {
			t = 2 * turn + int(i / (500 * s))
			printf "Dec  5 %02d:%02d:%02d host svc%d[%d]: request %d from 10.%d.%d.%d took %d ms status %d id %08x%04x\n",
				int(t / 3600) % 24, int(t / 60) % 60, t % 60, s, 1000 + s, i,
				int(rand() * 256), int(rand() * 256), int(rand() * 256), int(rand() * 900),
				(rand() < 0.9 ? 200 : 500), int(rand() * 2147483647), int(rand() * 65536) >>f
			if (rand() < 0.002)
				for (k = 0; k < 20; k++)
					printf "Dec  5 host svc%d[%d]:   at frame %d of request %d\n", s, 1000 + s, k, i >>f
			fflush(f)
			if (i % 64 == 0)
				close(f)
		}
	}'
}
logs() {
	mkdir "$mnt/log"
	local s turn=0 cleanups=0 pids
	while [ $cleanups -lt 3 ]; do
		turn=$((turn + 1))
		[ $turn -le 1000 ] || { echo "record_traces: logs: only $cleanups clean-ups in 1000 turns" >&2; break; }
		pids=()
		for s in 1 2 3 4 5 6; do
			logs_append "$mnt/log/svc$s.log" "$s" "$turn" &
			pids+=($!)
		done
		for s in 1 2 3 4 5 6; do
			case $s in
			2) savelog -q -c 99 -J "$mnt/log/svc$s.log" ;;
			5) savelog -q -c 99 -l "$mnt/log/svc$s.log" ;;
			*) savelog -q -c 99 "$mnt/log/svc$s.log" ;;
			esac
		done
		wait "${pids[@]}"
		if [ "$(used_pct)" -gt 88 ]; then
			# (NAME.log.N[.gz|.xz]: the older half of each service's N)
			find "$mnt/log" -name 'svc*.log.*' | LC_ALL=C sort | awk '{
				n = $0; sub(/.*\.log\./, "", n); sub(/\..*/, "", n); svc = $0; sub(/\.log\..*/, "", svc)
				path[NR] = $0; num[NR] = n + 0; of[NR] = svc; if (n + 0 > max[svc]) max[svc] = n + 0
			} END { for (i = 1; i <= NR; i++) if (num[i] > max[of[i]] / 2) print path[i] }' | xargs -d '\n' rm -f
			avail_settled "$mnt" "$mnt" 1 # the deleted archives counted free (debs() says why)
			cleanups=$((cleanups + 1))
			echo "record_traces: logs: turn $turn, clean-up $cleanups, $(used_pct)% full after it"
		fi
	done
	rm -f "$mnt"/log/svc3.log* "$mnt"/log/svc6.log*
	sync -f "$mnt"
	echo "record_traces: logs: $(used_pct)% full at the end"
}

# rsync: a tree kept in step with snapshots of it, rewritten in place
# (rsync -a --inplace --no-whole-file --delete: the changed pieces of a
# file written over it, a file that grows extended at its tail, one that
# shrinks cut, as a backup mirror is kept), beside other data (a file
# written, or the oldest deleted, before each snapshot, so that what the
# snapshot grows leaves the volume near 88% full).  The snapshots, made outside bgafs from
# drivers/net/ethernet of linux-source-6.1: s1, all but mellanox/ and
# sfc/; s2, s1 with every third C file grown (a comment line after each
# `return 0;`), every seventh header deleted and mellanox/ added; s3, s2
# with the block comments of every other C file of intel/ cut, sfc/
# added and broadcom/ deleted; then s1 again
rsync_snaps() { # the snapshots, in $work/snap/s1..s3
	local e=$work/snap/src/linux-source-6.1/drivers/net/ethernet
	[ -d "$work/snap/s3" ] && return 0
	mkdir -p "$work/snap/src"
	tar -xf /usr/src/linux-source-6.1.tar.xz -C "$work/snap/src" linux-source-6.1/drivers/net/ethernet
	cp -a "$e" "$work/snap/s1"
	rm -rf "$work/snap/s1/mellanox" "$work/snap/s1/sfc"
	cp -a "$work/snap/s1" "$work/snap/s2"
	find "$work/snap/s2" -name '*.c' | LC_ALL=C sort | awk 'NR % 3 == 1' |
		xargs -d '\n' sed -i 's/^\t*return 0;$/&\n\t\/* s2 *\//'
	find "$work/snap/s2" -name '*.h' | LC_ALL=C sort | awk 'NR % 7 == 1' | xargs -d '\n' rm -f
	cp -a "$e/mellanox" "$work/snap/s2/"
	cp -a "$work/snap/s2" "$work/snap/s3"
	find "$work/snap/s3/intel" -name '*.c' | LC_ALL=C sort | awk 'NR % 2' | xargs -d '\n' sed -i '/^[ \t]*\*/d'
	cp -a "$e/sfc" "$work/snap/s3/"
	rm -rf "$work/snap/s3/broadcom"
}
rsync_adds() { # rsync_adds SNAP: the KiB that SNAP rsync'ed over $mnt/tree adds at most (what grows, by 4 KiB)
	local len name cur kib=0
	while read -r len name; do
		case $len in *[!0-9]* | "") continue ;; esac # (a deletion)
		case $name in */) continue ;; esac
		cur=$(stat -c %s "$mnt/tree/$name" 2>/dev/null || echo 0)
		[ "$len" -le "$cur" ] || kib=$((kib + (len - cur) / 4096 * 4 + 4))
	done < <(rsync -a --inplace --no-whole-file --delete --dry-run --out-format='%l %n' "$work/snap/$1/" "$mnt/tree/")
	echo $kib
}
rsync_to() { # rsync_to SNAP: other data written or deleted to leave the volume near 88% full, then SNAP rsync'ed in place
	local room f
	avail_settled "$mnt" "$mnt" 1 # what the last rsync deleted counted free (debs() says why)
	# what SNAP adds, but not what it frees: rsync writes before its
	# deletes are committed
	room=$(stat -f -c '%b %f %S' "$mnt" | awk -v d="$(rsync_adds "$1")" '{print int(($2 - 0.12 * $1) * $3 / 1024) - d}')
	while [ "$room" -lt 0 ]; do
		f=$(find "$mnt" -maxdepth 1 -name 'other*' | LC_ALL=C sort | head -1)
		[ -n "$f" ] || break
		room=$((room + $(du -sk "$f" | cut -f1)))
		rm -f "$f"
	done
	if [ "$room" -ge 1024 ]; then
		rsync_other=$((rsync_other + 1))
		dd if=/dev/urandom of="$mnt/other$(printf %02d $rsync_other)" bs=1M count=$((room / 1024)) status=none
	fi
	avail_settled "$mnt" "$mnt" 1
	echo "record_traces: rsync: $(used_pct)% full before $1"
	rsync -a --inplace --no-whole-file --delete "$work/snap/$1/" "$mnt/tree/"
	sync -f "$mnt"
	echo "record_traces: rsync: $(used_pct)% full after $1"
}
rsync_inplace() {
	rsync_snaps
	rsync_other=0
	mkdir "$mnt/tree"
	rsync -a "$work/snap/s1/" "$mnt/tree/"
	rsync_to s2
	rsync_to s3
	rsync_to s1
	rsync_to s2
	rm -f "$mnt"/other*
}

dbench2() { dbench_run "$mnt" 3 2 | grep -E '^Throughput|ERROR'; }
dbench8() { dbench_run "$mnt" 10 8 | grep -E '^Throughput|ERROR'; }
