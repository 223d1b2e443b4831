# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash disable=SC2154 # $work, $mnt and the rest: record_traces.sh sets them
# More histories of programs nobody here wrote, held out from the
# placement work: images squashed and extracted (squashfs), a disk
# benchmark's files (bonnie) and a Mercurial repository (hg), one
# function a history as in record_histories.sh, whose helpers (used_pct,
# kernel_src, delete_half, ...) they use, with record_apps.sh's peak
# poller.  Sourced by record_traces.sh after record_apps.sh, never run
# alone.

# Recorded with the library and the bgafs of ab0bc23, held out from the
# placement work after it.

# The kernel subtrees the squashfs and hg histories copy: fs/, net/ and
# drivers/net/ (kernel_src's) and sound/, extracted once
more_src() {
	kernel_src
	[ -d "$src/sound" ] || tar -xf /usr/src/linux-source-6.1.tar.xz -C "$work" linux-source-6.1/sound
}
# settled: the deferred frees committed, so that statfs counts them free
# (debs() in record_histories.sh says why)
settled() { avail_settled "$mnt" "$mnt" 1; }

# squashfs: images of trees made and unpacked by squashfs-tools, as an
# image build does.  Eight rounds, each: a staging tree on bgafs (cp -a
# of the round's kernel subtree: fs, net, sound, drivers/net/wireless, fs,
# sound, net, drivers/net/wireless) squashed by mksquashfs (2 threads;
# gzip in odd rounds, a new image, -noappend; zstd in even rounds
# appended to the last image, which grows at its end and has its tables
# written again), the staging tree
# deleted, the round's tree extracted from the image by unsquashfs
# (2 threads) into a new directory.  Before each round, while the room
# left above 12% free is under 1.3 times the round's tree, the oldest
# extraction or image (by round; an extraction before the image of its
# round; never the image the round appends to) is deleted.  At the end
# every other file of the newest extraction deleted.  200M image, 85%
# full at the peak (bga-replay -a ext2's "at most" line).
squash_dirs=(fs net sound drivers/net/wireless fs sound net drivers/net/wireless)
squash_trim() { # squash_trim MIB KEEP: the oldest extraction or image deleted until 1.3 MIB fit above 12% free, KEEP kept
	local f
	while :; do
		settled
		stat -f -c '%b %f %S' "$mnt" | awk -v n="$1" '{exit !(($2 - 0.12 * $1) * $3 / 1048576 < 1.3 * n)}' || return 0
		f=$(find "$mnt" -mindepth 1 -maxdepth 1 \( -name 'x*' -o -name 'img*' \) ! -path "$2" |
			awk '{n = $0; sub(/.*\/(x|img)/, "", n); sub(/[.].*/, "", n); print n, ($0 ~ /\/x[0-9]*$/ ? 0 : 1), $0}' |
			sort -n -k1,1 -k2,2 | head -1 | cut -d' ' -f3-)
		[ -n "$f" ] || { echo "record_traces: squashfs: nothing left to delete" >&2; exit 1; }
		rm -rf "$f"
		echo "record_traces: squashfs: $(basename "$f") deleted"
	done
}
squash_images() {
	more_src
	peak_start
	local r d img=
	for r in 1 2 3 4 5 6 7 8; do
		d=${squash_dirs[r - 1]}
		[ $((r % 2)) = 1 ] && img=$mnt/img$r.sqfs
		squash_trim "$(du -sm "$src/$d" | cut -f1)" "$img"
		mkdir "$mnt/stage"
		cp -a "$src/$d" "$mnt/stage/"
		if [ $((r % 2)) = 1 ]; then
			mksquashfs "$mnt/stage" "$img" -comp gzip -processors 2 -noappend -quiet -no-progress >/dev/null
		else
			mksquashfs "$mnt/stage" "$img" -comp zstd -processors 2 -quiet -no-progress >/dev/null
		fi
		rm -rf "$mnt/stage"
		settled # the staging tree's blocks free before the extraction takes them
		unsquashfs -q -n -processors 2 -d "$mnt/x$r" "$img" "$(basename "$d")" >/dev/null
		settled
		echo "record_traces: squashfs: round $r, $(basename "$img") of $(du -k "$img" | cut -f1) KiB, $(basename "$d") extracted, $(used_pct)% full"
	done
	delete_half "$mnt/x8"
	peak_stop squashfs
}

# bonnie: bonnie++ (as root, -u root; -f: no per-character tests), its
# files beside fs/ and net/ of linux-source-6.1 copied in first: a run of
# 3 threads at once (-c 3), each writing its own file sequentially in
# 8 KiB blocks, rewriting it in place, reading it and seeking at random,
# the three files together taking the volume to 88% full; then creating
# 3 x 2,048 files of 1-48 KiB in 8 directories in order, statting and
# deleting them, and again in random order (seed 44); then every other
# file of fs/ deleted and a second run of 2 threads, files to 88% full,
# 2 x 4,096 files of 0-16 KiB in 16 directories (seed 45); then net/
# deleted.  192M image, past 90% full in the first run's writes.
bonnie_run() { # bonnie_run THREADS FILES SEED: files to 88% full, FILES as -n, seed SEED
	settled
	local mib
	mib=$(stat -f -c '%b %f %S' "$mnt" | awk -v t="$1" '{print int(($2 - 0.12 * $1) * $3 / 1048576 / t)}')
	mkdir -p "$mnt/bonnie"
	bonnie++ -d "$mnt/bonnie" -u root -q -f -c "$1" -s "$mib" -r $((mib / 2)) -n "$2" -z "$3" >"$work/bonnie.out" 2>&1 ||
		{ cat "$work/bonnie.out" >&2; echo "record_traces: bonnie: bonnie++ failed" >&2; exit 1; }
	rm -rf "$mnt/bonnie"
	settled
	echo "record_traces: bonnie: $1 threads of $mib MiB and files $2 done, $(used_pct)% full"
}
bonnie() {
	more_src
	peak_start
	cp -a "$src/fs" "$src/net" "$mnt/"
	bonnie_run 3 2:49152:1024:8 44
	delete_half "$mnt/fs"
	bonnie_run 2 4:16384:0:16 45
	rm -rf "$mnt/net"
	peak_stop bonnie
}

# hg: a Mercurial repository (hg 6) grown on bgafs, its revlogs appended
# to by every commit, cloned and updated across its revisions.  sound/ of
# linux-source-6.1 but soc/ committed to a new repository; eight rounds of
# commits (a round: every fifth C file of a subtree edited by sed -i,
# a subtree of soc/ added or an old one removed); after round 4 a clone
# (hg clone --pull: no hard links) updated to revisions 0, 2 and 4 in
# turn; after round 8 the clone pulls and is updated to the tip, to 1,
# to 5 and to the tip; past 86% full after a round, the clone's working
# copy emptied (hg update null) and refilled at the next update; at the
# end the first repository deleted.  122M image, 89.9% full at the peak.
hg_do() { HGPLAIN=1 HGRCPATH='' hg --config ui.username=record --config ui.interactive=false "$@"; }
hg_edit() { # hg_edit DIR N: every fifth C file under $mnt/repo/sound/DIR (in sorted order, from the Nth) edited
	find "$mnt/repo/sound/$1" -name '*.c' | LC_ALL=C sort | awk -v n="$2" 'NR % 5 == n' |
		xargs -d '\n' sed -i -e 's/\t*return 0;$/&\n\t\/* round '"$2"' *\//' -e 's/^static int /static  int /'
}
hg_update() { # hg_update REV: the clone's working copy at REV
	hg_do -R "$mnt/clone" update -q -C "$1"
	settled
	echo "record_traces: hg: clone at $1, $(used_pct)% full"
}
hg_rounds() {
	more_src
	peak_start
	hg_do init "$mnt/repo"
	mkdir "$mnt/repo/sound"
	(cd "$src/sound" && find . -mindepth 1 -maxdepth 1 ! -name soc -exec cp -a {} "$mnt/repo/sound/" \;)
	mkdir "$mnt/repo/sound/soc"
	hg_do -R "$mnt/repo" commit -q -A -d '2026-01-01 00:00 +0000' -m 'sound/ but soc'
	local r
	for r in 1 2 3 4 5 6 7 8; do
		case $r in
		1) cp -a "$src/sound/soc/codecs" "$mnt/repo/sound/soc/" ;;
		2) hg_edit pci 2 && hg_edit soc/codecs 2 ;;
		3) cp -a "$src/sound/soc/intel" "$src/sound/soc/sof" "$mnt/repo/sound/soc/" && rm -rf "$mnt/repo/sound/isa" ;;
		4) hg_edit soc 4 ;;
		5) cp -a "$src/sound/soc/fsl" "$src/sound/soc/qcom" "$mnt/repo/sound/soc/" && hg_edit usb 0 ;;
		6) rm -rf "$mnt/repo/sound/soc/intel" && hg_edit soc/codecs 1 ;;
		7) hg_edit soc 3 && hg_edit pci 3 ;;
		8) rm -rf "$mnt/repo/sound/soc/codecs" && cp -a "$src/sound/soc/mediatek" "$mnt/repo/sound/soc/" ;;
		esac
		hg_do -R "$mnt/repo" commit -q -A -d "2026-01-0$((r + 1)) 00:00 +0000" -m "round $r"
		settled
		echo "record_traces: hg: round $r committed, $(used_pct)% full"
		if [ $r = 4 ]; then
			hg_do clone -q --pull -U "$mnt/repo" "$mnt/clone"
			hg_update 0
			hg_update 2
			hg_update 4
		fi
		if [ -d "$mnt/clone" ] && [ "$(used_pct)" -gt 86 ]; then
			hg_update null
		fi
	done
	hg_do -R "$mnt/clone" pull -q
	hg_update tip
	hg_update 1
	hg_update 5
	hg_update tip
	rm -rf "$mnt/repo"
	peak_stop hg
}

# Two more, recorded with the library and the bgafs of ab0bc23 too: a
# PostgreSQL cluster under pgbench (pgbench) and a mail store that
# dovecot's delivery agent writes (maildir).  Both run their programs
# as users of their own (postgres, mail: a database server does not run
# as root, and dovecot-lda run by root asks a running dovecot's auth
# service for its user), so record_traces.sh mounts them with
# allow_other, and $work is opened to them (its mode 711: searched, not
# listed).
pg_sock=$work/pgsock
pg_bin=/usr/lib/postgresql/15/bin # postgresql-15's programs, initdb and pg_ctl off the PATH
pg_do() { runuser -u postgres -- "$pg_bin/$1" "${@:2}"; } # pg_do PROGRAM ARGS...: run as postgres
pg_sql() { pg_do psql -h "$pg_sock" -X -q -v ON_ERROR_STOP=1 -d "$1" -c "$2" >/dev/null; } # pg_sql DB SQL
pg_init() { # pg_init DB SCALE FILLFACTOR: pgbench's tables of SCALE dropped and made again in DB
	pg_do pgbench -h "$pg_sock" -i -q -s "$2" -F "$3" "$1" >"$work/pg-init-$1.out" 2>&1 ||
		{ cat "$work/pg-init-$1.out" >&2; echo "record_traces: pgbench: pgbench -i $1 failed" >&2; exit 1; }
}
pg_run() { # pg_run DB SEED CLIENTS TXNS: TPC-B-like transactions, TXNS a client
	pg_do pgbench -h "$pg_sock" -c "$3" -j "$3" -t "$4" --random-seed="$2" "$1" >"$work/pg-run-$1.out" 2>&1 ||
		{ cat "$work/pg-run-$1.out" >&2; echo "record_traces: pgbench: pgbench $1 (seed $2) failed" >&2; exit 1; }
}
pg_both() { # pg_both BENCH... -- SHOP...: two commands at once, pg_init or pg_run, the first on bench, the second on shop
	local a=() p
	while [ "$1" != -- ]; do a+=("$1") && shift; done
	shift
	"${a[@]}" &
	p=$!
	"$@"
	wait "$p" || exit 1
	settled
	echo "record_traces: pgbench: ${a[*]} and $*, $(used_pct)% full"
}
pg_stop() { [ -f "$mnt/pg/data/postmaster.pid" ] && pg_do pg_ctl -D "$mnt/pg/data" -m fast -w stop >/dev/null; }
# the server stopped before the image is unmounted when a step fails
fuse_cleanup_extra() { pg_stop 2>/dev/null || true; }

# pgbench: a PostgreSQL 15 cluster made by initdb on bgafs, its server
# (fsync on; WAL segments of 16 MiB, 32-48 MiB of them kept and
# recycled; a checkpoint every 30 s; autovacuum every second, at 2% of
# a table dead) serving two databases at once, bench and shop, whose
# relation files grow 8 KiB at a time as pgbench (postgresql-15)
# loads and updates them: pgbench -i of bench at scale 4 beside shop at
# scale 2 (fillfactor 80); TPC-B-like runs on both at once (bench: 4
# clients, shop: 2, 3,000 transactions a client, seeds 1 and 2; each
# after pgbench's own VACUUM of its small tables and TRUNCATE of its
# history table); VACUUM FULL of bench's accounts (the table and its
# index written again whole, the old files deleted); runs again (seeds 3, 4); CLUSTER of
# shop's accounts on its key; shop made again at scale 3 (fillfactor
# 90: its tables dropped) beside a run on bench (seed 5); runs again
# (seeds 6, 7); shop dropped (DROP DATABASE); a CHECKPOINT; the server
# stopped.  296M image, 87.9% full at the peak.
pg_bench() {
	peak_start
	chmod 711 "$work"
	mkdir -p "$pg_sock" "$mnt/pg"
	chown postgres:postgres "$pg_sock" "$mnt/pg"
	chmod 700 "$mnt/pg"
	pg_do initdb -D "$mnt/pg/data" --no-locale -E UTF8 -A trust >"$work/initdb.out" 2>&1 ||
		{ cat "$work/initdb.out" >&2; echo "record_traces: pgbench: initdb failed" >&2; exit 1; }
	pg_do pg_ctl -D "$mnt/pg/data" -l "$pg_sock/log" -w -o "-k $pg_sock -c listen_addresses= -c fsync=on \
-c shared_buffers=16MB -c max_wal_size=48MB -c min_wal_size=32MB -c checkpoint_timeout=30s \
-c autovacuum_naptime=1s -c autovacuum_vacuum_scale_factor=0.02" start >/dev/null ||
		{ cat "$pg_sock/log" >&2; echo "record_traces: pgbench: the server did not start" >&2; exit 1; }
	pg_do createdb -h "$pg_sock" bench
	pg_do createdb -h "$pg_sock" shop
	pg_both pg_init bench 4 100 -- pg_init shop 2 80
	pg_both pg_run bench 1 4 3000 -- pg_run shop 2 2 3000
	pg_sql bench 'VACUUM FULL pgbench_accounts'
	settled
	echo "record_traces: pgbench: bench's accounts vacuumed full, $(used_pct)% full"
	pg_both pg_run bench 3 4 3000 -- pg_run shop 4 2 3000
	pg_sql shop 'CLUSTER pgbench_accounts USING pgbench_accounts_pkey'
	pg_both pg_run bench 5 4 3000 -- pg_init shop 3 90
	pg_both pg_run bench 6 4 3000 -- pg_run shop 7 2 3000
	pg_sql bench 'DROP DATABASE shop'
	pg_sql bench 'CHECKPOINT'
	pg_stop
	peak_stop pgbench
}

# maildir: a mail store that dovecot-lda (dovecot-core) delivers into
# and doveadm expires, as a mail server's: six users' Maildirs (each
# message a file written once in tmp/, fsync'd and renamed into new/;
# beside it dovecot's index, cache and uid list, appended to and written
# again), delivered to by two streams at once (users 1-3 and 4-6, as an
# MTA's two delivery processes).  Twelve weeks of mail, 400 messages a
# week (sizes log-normal: 70% text of about 3 KiB, 25% HTML of about
# 30 KiB, 5% a base64 attachment of about 540 KiB before encoding, at
# most 4 MiB; a third of them into a folder, Lists, that delivery
# creates; their Date: in that week of 2026 from 5 January; generated
# by mail_week, each stream seeded by the week and its users, written
# only by dovecot-lda).  Before each week, when the volume is past 70%
# full, every user's mail sent more than five weeks before the week
# expunged (doveadm expunge ... sentbefore), and Lists' more than two
# (from week 6 on: every week).  At the end, user 6's store deleted
# whole (rm -rf, an account closed), and users 1-3's mail sent more
# than a week before the last week expunged.  112M image, 88.9% full at
# the peak (in week 11).
mail_conf=$work/dovecot.conf
mail_do() { # mail_do USER PROGRAM ARGS...: run as mail, USER's store at $mnt/mail/USER
	runuser -u mail -- env USER="$1" HOME="$mnt/mail/$1" "${@:2}"
}
mail_week() { # mail_week WEEK USER...: the week's messages to USERs, each given to dovecot-lda
	runuser -u mail -- python3 - "$1" "$mail_conf" "$mnt/mail" "${@:2}" <<'PY'
import base64, datetime, random, subprocess, sys
week, conf, root, users = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
r = random.Random(f"{100 + week} {' '.join(users)}")  # a str seed: the same stream on every Python 3
words = "the of and to in is for that on with as by at from this be are was it or an not have data file block".split()
start = datetime.datetime(2026, 1, 5, tzinfo=datetime.timezone.utc) + datetime.timedelta(weeks=week - 1)
for i in range(400 * len(users) // 6):
    user, kind = r.choice(users), r.random()
    if kind < 0.70:
        body = " ".join(r.choice(words) for _ in range(int(r.lognormvariate(6.3, 0.7)))).encode()
    elif kind < 0.95:
        body = ("<p>" + " ".join(r.choice(words) for _ in range(int(r.lognormvariate(8.6, 0.5)))) + "</p>").encode()
    else:
        body = base64.encodebytes(r.randbytes(min(4 << 20, int(r.lognormvariate(12.9, 0.8)))))
    date = start + datetime.timedelta(seconds=r.randrange(7 * 86400))
    head = (f"From: sender{r.randrange(50)}@example.org\nTo: {user}@example.net\n"
            f"Subject: week {week} message {i}\nDate: {date.strftime('%a, %d %b %Y %H:%M:%S +0000')}\n"
            f"Message-ID: <{week}.{i}.{user}@example.org>\n\n")
    box = "Lists" if r.random() < 1 / 3 else "INBOX"
    subprocess.run(["/usr/lib/dovecot/dovecot-lda", "-c", conf, "-e", "-m", box], input=head.encode() + body,
                   env={"USER": user, "HOME": f"{root}/{user}", "PATH": "/usr/bin:/bin"}, check=True,
                   stderr=subprocess.DEVNULL)
PY
}
mail_expire() { # mail_expire DAYS LISTDAYS DATE USER...: USERs' mail sent DAYS before DATE expunged, Lists' LISTDAYS
	local u
	for u in "${@:4}"; do
		mail_do "$u" doveadm -c "$mail_conf" expunge mailbox INBOX sentbefore "$(date -u -d "$3 - $1 days" +%Y-%m-%d)"
		mail_do "$u" doveadm -c "$mail_conf" expunge mailbox Lists sentbefore "$(date -u -d "$3 - $2 days" +%Y-%m-%d)"
	done
}
maildir() {
	peak_start
	chmod 711 "$work"
	printf '%s\n' 'mail_location = maildir:~/Maildir' 'log_path = /dev/stderr' 'ssl = no' \
		'lda_mailbox_autocreate = yes' >"$mail_conf"
	chmod 644 "$mail_conf"
	mkdir "$mnt/mail"
	chown mail:mail "$mnt/mail"
	local w p day
	for w in 1 2 3 4 5 6 7 8 9 10 11 12; do
		day=$(date -u -d "2026-01-05 + $((7 * w - 7)) days" +%Y-%m-%d)
		if [ "$(used_pct)" -gt 70 ]; then
			mail_expire 35 14 "$day" u1 u2 u3 u4 u5 u6
			settled
			echo "record_traces: maildir: mail sent before week $w expired, $(used_pct)% full"
		fi
		mail_week "$w" u1 u2 u3 &
		p=$!
		mail_week "$w" u4 u5 u6
		wait "$p" || { echo "record_traces: maildir: week $w's delivery failed" >&2; exit 1; }
		settled
		echo "record_traces: maildir: week $w delivered, $(used_pct)% full"
	done
	rm -rf "$mnt/mail/u6"
	mail_expire 7 7 "$day" u1 u2 u3
	peak_stop maildir
}
