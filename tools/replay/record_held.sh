# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash disable=SC2154 # $work, $mnt and the rest: record_traces.sh sets them
# Held-out histories of programs nobody here wrote: an in-memory store's
# append-only log and snapshots (redis), a deduplicating backup
# repository (borg), a search index of a tree of many small files
# (xapian), a copy-on-write B-tree key-value store rebuilt and copied
# (lmdb) and a relational database under sysbench (mariadb); one
# function a history as in record_histories.sh, whose helpers
# (used_pct, kernel_src, ...) they use, with record_apps.sh's peak
# poller and record_more.sh's more_src and settled.
# Sourced by record_traces.sh after record_more.sh, never run alone.

# Recorded with the library and the bgafs of 7b1bb5a, held out from the
# placement work after it.

# the servers stopped before the image is unmounted when a step fails
# (record_more.sh's PostgreSQL server too)
fuse_cleanup_extra() {
	pg_stop 2>/dev/null || true
	redis_stop 2>/dev/null || true
	my_stop 2>/dev/null || true
}

# redis: redis-server 7 (redis-server, redis-tools) with its append-only
# file on (appendfsync everysec; the multi-part AOF of Redis 7: a base
# file with an RDB preamble and incremental files appended to, written
# again whole by a rewrite once they double past 16 MiB) and RDB
# snapshots (rdbcompression off: redis-benchmark's values compress to
# nothing), loaded by redis-benchmark over a Unix socket (4 clients,
# pipelines of 16): eight rounds, each 60,000 SETs at random keys of
# 40,000 (values of 512, 1024, 768, 1536, 512, 1280, 1024, 640 B by
# round; in rounds 3 and 6 also 8,000 of 2 KiB over 5,000 keys of
# database 1), then 15,000 DELs of random keys, then a BGSAVE whose
# dump.rdb (written to a temporary file and renamed) is copied to
# backup/ as a nightly job would; after round 4 a BGREWRITEAOF.  Before
# each round, while the room left above 12% free is under four times
# the server's data (used_memory_dataset), the oldest backup deleted.
# At the end a FLUSHDB of database 1, a last BGREWRITEAOF, SHUTDOWN.
# 340M image, 87.8% full at the peak (bga-replay -a ext2's "at most"
# line); about a minute to record.  The server starts its AOF rewrites
# by its own clock, so a recording again differs: its peak came out
# from 84.6% (348M) to past 90% (330M, and 340M once on a busy machine).
redis_sock=$work/redis.sock
redis_do() { redis-cli -s "$redis_sock" "$@"; }
redis_stop() { [ -S "$redis_sock" ] && redis_do shutdown >/dev/null; }
redis_wait() { # redis_wait: until no BGSAVE or AOF rewrite runs
	while redis_do info persistence | grep -q -E '^(rdb_bgsave|aof_rewrite)_in_progress:1'; do sleep 0.2; done
}
redis_bench() { # redis_bench ARGS...: redis-benchmark on the socket, quiet
	redis-benchmark -s "$redis_sock" -c 4 -P 16 -q "$@" >"$work/redis-bench.out" 2>&1 ||
		{ cat "$work/redis-bench.out" >&2; echo "record_traces: redis: redis-benchmark $* failed" >&2; exit 1; }
}
redis_trim() { # redis_trim: the oldest backup deleted until three times the data fit above 12% free
	local mib f
	mib=$(redis_do info memory | sed -n 's/^used_memory_dataset:\([0-9]*\).*/\1/p' | awk '{print int($1 / 1048576) + 1}')
	while :; do
		settled
		stat -f -c '%b %f %S' "$mnt" | awk -v n="$mib" '{exit !(($2 - 0.12 * $1) * $3 / 1048576 < 4 * n)}' || return 0
		f=$(find "$mnt/backup" -name 'dump-*.rdb' | LC_ALL=C sort | head -1)
		[ -n "$f" ] || return 0
		rm -f "$f"
		echo "record_traces: redis: $(basename "$f") deleted"
	done
}
redis_rounds() {
	peak_start
	mkdir "$mnt/redis" "$mnt/backup"
	redis-server --daemonize yes --port 0 --unixsocket "$redis_sock" --dir "$mnt/redis" \
		--logfile "$work/redis.log" --pidfile "$work/redis.pid" --save '' --rdbcompression no \
		--appendonly yes --appendfsync everysec --auto-aof-rewrite-percentage 100 \
		--auto-aof-rewrite-min-size 16mb --maxmemory 0 >/dev/null
	for _ in $(seq 50); do [ -S "$redis_sock" ] && break; sleep 0.1; done
	local r size=(0 512 1024 768 1536 512 1280 1024 640)
	for r in 1 2 3 4 5 6 7 8; do
		redis_trim
		redis_bench -t set -n 60000 -r 40000 -d "${size[r]}"
		case $r in 3 | 6) redis_bench --dbnum 1 -t set -n 8000 -r 5000 -d 2048 ;; esac
		redis_bench -n 15000 -r 40000 DEL 'key:__rand_int__'
		redis_wait
		redis_do bgsave >/dev/null
		redis_wait
		cp "$mnt/redis/dump.rdb" "$mnt/backup/dump-$r.rdb"
		[ $r = 4 ] && redis_do bgrewriteaof >/dev/null && redis_wait
		settled
		echo "record_traces: redis: round $r, $(redis_do dbsize) keys, $(used_pct)% full"
	done
	redis_do -n 1 flushdb >/dev/null
	redis_do bgrewriteaof >/dev/null
	redis_wait
	redis_stop
	for _ in $(seq 100); do [ -S "$redis_sock" ] || break; sleep 0.1; done
	peak_stop redis
}

# The kernel subtrees the borg and xapian histories use: more_src's
# (fs/, net/, drivers/net/, sound/) and Documentation/, extracted once
held_src() {
	more_src
	[ -d "$src/Documentation" ] || tar -xf /usr/src/linux-source-6.1.tar.xz -C "$work" linux-source-6.1/Documentation
}

# borg: a BorgBackup 1.2 repository (borgbackup; unencrypted, lz4,
# segment files of at most 8 MiB appended to and compacted) on bgafs,
# its chunk cache there too (BORG_CACHE_DIR), backing up a tree on the
# machine's own disk that changes daily: ten days, each a "borg create"
# of the day's tree (day 1: fs/, net/ and sound/ of linux-source-6.1;
# then in turn: every seventh C file of fs/ edited (sed -i), net/ out
# and Documentation/ in, sound/ and Documentation/ edited,
# drivers/net/wireless in, fs/ out and drivers/net/ethernet in, net/ in
# again and drivers/net/wireless edited, sound/ out, Documentation/ and
# drivers/net/ethernet edited, fs/ in again), from day 4 "borg prune
# --keep-last 3", every third day "borg compact" (segments with deleted
# chunks written again, the old ones deleted); after days 5 and 8 the
# day's archive extracted onto bgafs (borg extract), the restore before
# it deleted; at the end the last restore deleted and a last compact.
# 404M image, 87.6% full at the peak (in day 8's restore; 89.3% when
# recorded again); a minute and a half to record.
borg_do() {
	BORG_REPO=$mnt/repo BORG_CACHE_DIR=$mnt/cache BORG_BASE_DIR=$work/borg \
		BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK=yes BORG_RELOCATED_REPO_ACCESS_IS_OK=yes borg "$@"
}
borg_edit() { # borg_edit DAY DIR...: every seventh C or text file under each DIR of the day's tree edited
	local d
	for d in "${@:2}"; do
		find "$work/day/$d" -type f \( -name '*.c' -o -name '*.rst' -o -name '*.txt' \) | LC_ALL=C sort |
			awk -v n="$1" 'NR % 7 == n % 7' | xargs -d '\n' sed -i -e '1i\/* day '"$1"' */' -e 's/^static int /static  int /'
	done
}
borg_in() { local d; for d in "$@"; do mkdir -p "$work/day/$(dirname "$d")" && cp -a "$src/$d" "$work/day/$d"; done; }
borg_days() {
	held_src
	peak_start
	rm -rf "$work/day"
	mkdir -p "$work/day" "$work/borg"
	borg_do init --encryption none
	borg_do config "$mnt/repo" max_segment_size 8388608
	local d
	for d in 1 2 3 4 5 6 7 8 9 10; do
		case $d in
		1) borg_in fs net sound ;;
		2) borg_edit 2 fs ;;
		3) rm -rf "$work/day/net" && borg_in Documentation ;;
		4) borg_edit 4 sound Documentation ;;
		5) borg_in drivers/net/wireless ;;
		6) rm -rf "$work/day/fs" && borg_in drivers/net/ethernet ;;
		7) borg_in net && borg_edit 7 drivers/net/wireless ;;
		8) rm -rf "$work/day/sound" ;;
		9) borg_edit 9 Documentation drivers/net/ethernet ;;
		10) borg_in fs ;;
		esac
		(cd "$work/day" && borg_do create --compression lz4 "::day-$d" .)
		[ $d -ge 4 ] && borg_do prune --keep-last 3
		[ $((d % 3)) = 0 ] && borg_do compact
		if [ $d = 5 ] || [ $d = 8 ]; then
			rm -rf "$mnt"/restore*
			mkdir "$mnt/restore$d"
			(cd "$mnt/restore$d" && borg_do extract "::day-$d")
		fi
		settled
		echo "record_traces: borg: day $d backed up, $(used_pct)% full"
	done
	rm -rf "$mnt"/restore*
	borg_do compact
	peak_stop borg
}

# xapian: a search index of a tree of many small files, as a site's or
# a desktop's: kernel subtrees copied onto bgafs (cp -a) as the
# documents, indexed by omindex (xapian-omega; its glass database on
# bgafs too; .rst, .txt, .c and .h as text/plain, the rest as libmagic
# says; what gives no text skipped) after each change of the tree, which omindex finds by mtime,
# adding, replacing and deleting documents: Documentation/ copied in;
# sound/ copied in; every fifth file of Documentation/ edited (sed -i);
# net/ copied in and every other file of sound/ deleted; the database
# compacted (xapian-compact into a new one, the old deleted); fs/
# copied in and every fifth C file of net/ edited; Documentation/
# deleted; drivers/net/wireless copied in, the database compacted
# again; at the end sound/ deleted and indexed once more.  The
# database is twice the text it indexes, so the volume is fullest while
# the second compaction writes the new beside the old: 800M image,
# 87.4% full at the peak, about 50% between compactions; two and a half
# minutes to record.
xap_index() { # xap_index WHAT: omindex over $mnt/docs, its database $mnt/db
	omindex -e skip -M rst:text/plain -M txt:text/plain -M c:text/plain -M h:text/plain \
		--db "$mnt/db" --url / "$mnt/docs" >"$work/omindex.out" 2>&1 ||
		{ tail "$work/omindex.out" >&2; echo "record_traces: xapian: omindex failed" >&2; exit 1; }
	settled
	echo "record_traces: xapian: $1, indexed, $(used_pct)% full"
}
xap_edit() { # xap_edit DIR N NAME: every fifth file NAME under $mnt/docs/DIR (sorted, from the Nth) edited
	find "$mnt/docs/$1" -type f -name "$3" | LC_ALL=C sort | awk -v n="$2" 'NR % 5 == n' |
		xargs -d '\n' sed -i -e '1i\.. edit '"$2"'' -e 's/^static int /static  int /'
}
xap_compact() {
	xapian-compact "$mnt/db" "$mnt/db.new" >/dev/null
	rm -rf "$mnt/db"
	mv "$mnt/db.new" "$mnt/db"
	settled
	echo "record_traces: xapian: database compacted, $(used_pct)% full"
}
xapian() {
	held_src
	peak_start
	mkdir -p "$mnt/docs"
	cp -a "$src/Documentation" "$mnt/docs/"
	xap_index "Documentation in"
	cp -a "$src/sound" "$mnt/docs/"
	xap_index "sound in"
	xap_edit Documentation 1 '*'
	xap_index "Documentation edited"
	cp -a "$src/net" "$mnt/docs/"
	delete_half "$mnt/docs/sound"
	xap_index "net in, half of sound out"
	xap_compact
	cp -a "$src/fs" "$mnt/docs/"
	xap_edit net 2 '*.c'
	xap_index "fs in, net edited"
	rm -rf "$mnt/docs/Documentation"
	xap_index "Documentation out"
	mkdir "$mnt/docs/drivers"
	cp -a "$src/drivers/net/wireless" "$mnt/docs/drivers/"
	xap_index "drivers/net/wireless in"
	xap_compact
	rm -rf "$mnt/docs/sound"
	xap_index "sound out"
	peak_stop xapian
}

# lmdb: a key-value store of LMDB 0.9 (lmdb-utils: mdb_load, mdb_copy,
# mdb_dump; each environment one file, -n), a copy-on-write B-tree
# whose pages are written in place at their offsets and reused once
# free, used as a cache whose keyspace slides: nine rounds, each 40,000
# records (keys at random in a window of 90,000 that moves 30,000 a
# round, values base64 of random bytes of log-normal length, about
# 1.3 KiB, at most 64 KiB before encoding; generated by lmdb_gen seeded
# by the round) loaded by mdb_load into the live environment (updates
# and inserts in key-random order), then a hot backup of it (mdb_copy,
# free pages and all) to backup/; every third round the keys behind the
# window expired by a rebuild (mdb_dump | awk | mdb_load into a new
# environment, the old deleted), every other round otherwise a
# compacting copy (mdb_copy -c, the old deleted).  Before each round,
# while the room left above 12% free is under three times the live
# environment, the oldest backup deleted.  At the end all backups but
# the newest deleted.  950M image, 86.8% full at the peak (in round 5),
# 35-75% at the ends of rounds; two minutes to record.
lmdb_gen() { # lmdb_gen ROUND LO: mdb_load's input, 40,000 records keyed in [LO, LO + 90,000)
	python3 - "$1" "$2" <<'PY'
import base64, random, sys
r, lo = int(sys.argv[1]), int(sys.argv[2])
g = random.Random(f"lmdb {r}")  # a str seed: the same stream on every Python 3
out = ["VERSION=3\nformat=print\ntype=btree\nmapsize=1073741824\nmaxreaders=126\nHEADER=END"]
for _ in range(40000):
    out.append(" k%09d\n %s" % (g.randrange(lo, lo + 90000),
               base64.b64encode(g.randbytes(min(65536, int(g.lognormvariate(6.5, 0.9))))).decode()))
out.append("DATA=END")
sys.stdout.write("\n".join(out) + "\n")
PY
}
lmdb_trim() { # lmdb_trim ENV: the oldest backup deleted until three times ENV fit above 12% free
	local mib f
	mib=$(($(stat -c %s "$1") / 1048576 + 1))
	while :; do
		settled
		stat -f -c '%b %f %S' "$mnt" | awk -v n="$mib" '{exit !(($2 - 0.12 * $1) * $3 / 1048576 < 3 * n)}' || return 0
		f=$(find "$mnt/backup" -name 'kv-*.mdb' | LC_ALL=C sort -t- -k2,2n | head -1)
		[ -n "$f" ] || return 0
		rm -f "$f"
		echo "record_traces: lmdb: $(basename "$f") deleted"
	done
}
lmdb_rounds() {
	peak_start
	mkdir "$mnt/kv" "$mnt/backup"
	local r lo cur=$mnt/kv/live-0.mdb new
	for r in 1 2 3 4 5 6 7 8 9; do
		lo=$(((r - 1) * 30000))
		[ -f "$cur" ] && lmdb_trim "$cur"
		lmdb_gen "$r" "$lo" | mdb_load -n -s data "$cur"
		mdb_copy -n "$cur" "$mnt/backup/kv-$r.mdb"
		new=$mnt/kv/live-$r.mdb
		if [ $((r % 3)) = 0 ]; then
			mdb_dump -p -n -s data "$cur" |
				awk -v lo="$lo" '/^DATA=END/ {p = 0} !p {print; if (/^HEADER=END/) p = 1; n = 0; next}
					++n % 2 {skip = substr($0, 3) + 0 < lo} !skip' | mdb_load -n -s data "$new" 2>/dev/null
		elif [ $((r % 2)) = 0 ]; then
			mdb_copy -c -n "$cur" "$new"
		else
			new=$cur
		fi
		if [ "$new" != "$cur" ]; then
			rm -f "$cur" "$cur-lock"
			cur=$new
		fi
		settled
		echo "record_traces: lmdb: round $r, $(($(stat -c %s "$cur") / 1048576)) MiB live, $(used_pct)% full"
	done
	find "$mnt/backup" -name 'kv-*.mdb' ! -name "kv-9.mdb" -delete
	peak_stop lmdb
}

# mariadb: a MariaDB 10.11 server (mariadb-server; InnoDB, a file a
# table, each grown by its own extension steps; a redo log of 32 MiB
# written round; the binary log in files of at most 16 MiB) on bgafs,
# run as the user mysql (record_traces.sh mounts it with allow_other),
# under sysbench (1.0) over a Unix socket: databases a (4 tables of
# 60,000 rows) and b (2 of 40,000) prepared; oltp_read_write on a
# (2 threads) beside oltp_insert on b (1 thread), 20,000 and 20,000
# events, seeds 1 and 2; the binary logs purged and a's first two
# tables rebuilt (OPTIMIZE TABLE: a new file written, the old deleted);
# oltp_delete on a beside oltp_insert on b (seeds 3, 4); b dropped and c
# (3 tables of 80,000 rows) prepared; oltp_write_only on a and on c at
# once (seeds 5, 6); the binary logs purged, c's first table rebuilt, a
# dropped; the server shut down.  545M image, 87.4% full at the peak
# (in the oltp_write_only runs; the binary logs in ROW format are most
# of it); a minute and a half to record.
my_sock=$work/mysqld/sock # in a directory of mysql's own, as its pid file and log
my_do() { mariadb -S "$my_sock" -u root -e "$1"; } # my_do SQL: SQL run as root
my_bench() { # my_bench DB TEST SEED THREADS ACTION [ARGS...]: sysbench's TEST on DB
	sysbench "$2" --db-driver=mysql --mysql-socket="$my_sock" --mysql-user=root --mysql-db="$1" \
		--rand-seed="$3" --threads="$4" --time=0 "${@:6}" "$5" >"$work/sb-$1-$3.out" 2>&1 ||
		{ cat "$work/sb-$1-$3.out" >&2; echo "record_traces: mariadb: sysbench $2 $5 on $1 failed" >&2; exit 1; }
}
my_both() { # my_both ARGS1... -- ARGS2...: two my_bench at once
	local a=() p
	while [ "$1" != -- ]; do a+=("$1") && shift; done
	shift
	my_bench "${a[@]}" &
	p=$!
	my_bench "$@"
	wait "$p" || exit 1
	settled
	echo "record_traces: mariadb: ${a[1]} on ${a[0]} and $2 on $1, $(used_pct)% full"
}
my_stop() { [ -S "$my_sock" ] && mariadb-admin -S "$my_sock" -u root shutdown; }
my_rounds() {
	peak_start
	chmod 711 "$work"
	mkdir "$mnt/mysql" "$work/mysqld"
	chown mysql:mysql "$mnt/mysql" "$work/mysqld"
	mariadb-install-db --user=mysql --datadir="$mnt/mysql" --skip-test-db \
		--auth-root-authentication-method=normal >"$work/my-install.out" 2>&1 ||
		{ cat "$work/my-install.out" >&2; echo "record_traces: mariadb: mariadb-install-db failed" >&2; exit 1; }
	mariadbd --no-defaults --user=mysql --datadir="$mnt/mysql" --socket="$my_sock" --skip-networking \
		--pid-file="$work/mysqld/pid" --log-error="$work/mysqld/err" --innodb-buffer-pool-size=64M \
		--innodb-log-file-size=32M --innodb-file-per-table=1 --innodb-flush-log-at-trx-commit=1 \
		--log-bin="$mnt/mysql/binlog" --server-id=1 --max-binlog-size=16M --binlog-format=ROW &
	my_pid=$!
	for _ in $(seq 300); do [ -S "$my_sock" ] && break; sleep 0.1; done
	[ -S "$my_sock" ] || { cat "$work/mysqld/err" >&2; echo "record_traces: mariadb: the server did not start" >&2; exit 1; }
	my_do 'CREATE DATABASE a; CREATE DATABASE b'
	my_both a oltp_read_write 0 2 prepare --tables=4 --table-size=60000 -- b oltp_insert 0 1 prepare --tables=2 --table-size=40000
	my_both a oltp_read_write 1 2 run --tables=4 --table-size=60000 --events=20000 -- b oltp_insert 2 1 run --tables=2 --table-size=40000 --events=20000
	my_do 'PURGE BINARY LOGS BEFORE NOW(); OPTIMIZE TABLE a.sbtest1, a.sbtest2' >/dev/null
	settled
	echo "record_traces: mariadb: binary logs purged, a.sbtest1-2 rebuilt, $(used_pct)% full"
	my_both a oltp_delete 3 2 run --tables=4 --table-size=60000 --events=20000 -- b oltp_insert 4 1 run --tables=2 --table-size=40000 --events=20000
	my_do 'DROP DATABASE b; CREATE DATABASE c'
	my_bench c oltp_write_only 0 2 prepare --tables=3 --table-size=80000
	my_both a oltp_write_only 5 2 run --tables=4 --table-size=60000 --events=10000 -- c oltp_write_only 6 2 run --tables=3 --table-size=80000 --events=10000
	my_do 'PURGE BINARY LOGS BEFORE NOW(); OPTIMIZE TABLE c.sbtest1; DROP DATABASE a' >/dev/null
	settled
	echo "record_traces: mariadb: binary logs purged, c.sbtest1 rebuilt, a dropped, $(used_pct)% full"
	my_stop
	wait "$my_pid" || true
	peak_stop mariadb
}
