#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Record the traces of tests/data/traces/ again (docs/TRACE.md), as root
# with /dev/fuse, dbench, postmark, git, fio, xz, linux-source-6.1, what a
# kernel build needs (gcc, make, flex, bison, bc), dpkg, gzip, sqlite3,
# rsync, savelog (debianutils), db_bench (rocksdb-tools), ccache, cmake,
# zstd, squashfs-tools, bonnie++, mercurial, postgresql-15, dovecot-core,
# redis-server, redis-tools, borgbackup, xapian-omega, xapian-tools and
# lmdb-utils, mariadb-server and sysbench, restic, ffmpeg, doxygen and
# prometheus (scripts/deps.sh record):
#   bgafs-dbench.trace     bgafs (mount -o trace=) under dbench, 2 clients, 3 s, 256M image
#   bgafs-dbench8.trace.xz bgafs under dbench, 8 clients, 10 s, 1G image
#   bgafs-exerciser.trace  bgafs under the data-integrity exerciser (bgafs_exerciser,
#                          seed 1, 4 processes, 500 ops each, 32M image: it fills the
#                          image), then two of its four process directories removed,
#                          so that the trace ends with free space to judge
#   bgafs-kernel.trace.xz  bgafs, 2G image: fs/, net/ and drivers/net/ of linux-source-6.1
#                          copied in, every other file of drivers/net/ deleted, postmark
#                          (5,000 files of 500 B-64 KiB, 20,000 transactions, seed 42),
#                          a git clone of fs/ and net/ committed to a local repository,
#                          fs/ deleted
#   bgafs-aged.trace.xz    bgafs, 512M image, aged (after "File Systems Fated for
#                          Senescence?", FAST 2017): see aged() in record_histories.sh
#   bgafs-git.trace.xz     bgafs, 256M image: this repository cloned, checked out at
#                          every 60th commit, back at HEAD, git gc (see gitrevs() in record_histories.sh)
#   bgafs-gitaged.trace.xz bgafs, 64M image: this repository checked out at every 5th
#                          commit beside a file that holds the volume at 88% full
#                          (see gitaged() in record_histories.sh)
#   bgafs-fio.trace.xz     bgafs, 256M image: fio, writers at random offsets beside a
#                          sequential one, nothing preallocated (see fio_random() in record_histories.sh)
#   bgafs-kbuild.trace.xz  bgafs, 512M image: a tinyconfig kernel built with its output
#                          on bgafs, then make clean (see kbuild() in record_histories.sh)
#   bgafs-pylib.trace.xz   held out (see pylib() in record_histories.sh), 224M image: python3.11's
#                          standard library extracted in rounds, half deleted, again
#   bgafs-pmbig.trace.xz   held out, 512M image: two postmarks of 4 KiB-1 MiB files at
#                          once beside the standard library (see pmbig() in record_histories.sh)
#   bgafs-fioseq.trace     held out, 120M image: fio, sequential writers of three sizes
#                          at once, deletes, the same again (see fioseq() in record_histories.sh)
#   bgafs-usrinc.trace.xz  held out, 256M image: /usr/include by tar to 89% full, every
#                          third directory deleted, rsync again (see usrinc() in record_histories.sh)
#   bgafs-debs.trace.xz    held out, 256M image: .debs of the apt cache unpacked (dpkg -x)
#                          to 88% full, every third deleted and refilled, three times
#                          (see debs() in record_histories.sh)
#   bgafs-gzip.trace.xz    held out, 208M image: kernel text trees copied in, gzip and
#                          gunzip in place near full, one archived by tar -czf
#                          (see gzip_trees() in record_histories.sh)
#   bgafs-sqlite.trace.xz  held out, 160M image: three sqlite3 databases (rollback
#                          journal, WAL, auto_vacuum) grown at once to 88% full with
#                          deletes, then one deleted, one vacuumed (see sqlite_dbs() in record_histories.sh)
#   bgafs-sort.trace.xz    held out, 180M image: GNU sort's external merge of 40 MiB of
#                          kernel sources, its runs on bgafs, three times, outputs kept
#                          to 88% full (see sort_runs() in record_histories.sh)
#   bgafs-fiomix.trace.xz  held out, 128M image: fio, two writers at random offsets across
#                          files of 64 KiB-3 MiB in 4-64 KiB blocks, half deleted,
#                          refilled to 89% full (see fiomix() in record_histories.sh)
#   bgafs-torrent.trace    held out, 256M image: fio as a BitTorrent-like download, four
#                          writers of pieces at random offsets across sparse files of
#                          1-64 MiB, deletes and appends, two more to 90% (see torrent() in record_histories.sh)
#   bgafs-gitgc.trace.xz   held out, 128M image: a clone of sound/ beside other data, six
#                          rounds of commits each packed again (repack, gc, gc --aggressive)
#                          near 88% full (see gitgc() in record_histories.sh)
#   bgafs-logs.trace.xz    held out, 64M image: six logs appended to a line at a time and
#                          rotated by savelog while written, the older archives deleted
#                          past 88% full, three times (see logs() in record_histories.sh)
#   bgafs-rsync.trace.xz   held out, 128M image: drivers/net/ethernet kept in step with
#                          three snapshots by rsync --inplace --delete beside other data,
#                          near 88% full (see rsync_inplace() in record_histories.sh)
#   bgafs-lsm.trace        held out, 264M image: RocksDB's db_bench, an LSM store filled,
#                          overwritten, deleted from and compacted, twice, 87% full at
#                          its peak (see lsm() in record_apps.sh)
#   bgafs-ccache.trace.xz  held out, 200M image: five commits of this project built one
#                          after another, sources, builds and ccache's cache on bgafs,
#                          the older builds deleted (see ccache_ci() in record_apps.sh)
#   bgafs-archive.trace.xz held out, 424M image: a tree changed daily for 14 days and
#                          backed up by tar and zstd, full and incremental archives
#                          rotated, restored thrice, 87% full at the peak
#                          (see archive() in record_apps.sh)
#   bgafs-squashfs.trace.xz, bgafs-bonnie.trace.xz, bgafs-hg.trace.xz: held out,
#                          images squashed and unpacked, bonnie++, a Mercurial
#                          repository (see record_more.sh)
#   bgafs-pgbench.trace.xz, bgafs-maildir.trace.xz: held out, a PostgreSQL
#                          cluster under pgbench, a Maildir store that
#                          dovecot-lda delivers into (see record_more.sh)
#   bgafs-redis.trace.xz, bgafs-borg.trace.xz, bgafs-xapian.trace.xz,
#   bgafs-lmdb.trace.xz, bgafs-mariadb.trace.xz: held out (recorded at
#                          7b1bb5a), redis-server's AOF and snapshots under
#                          redis-benchmark, a borg repository backing up a
#                          changing tree, omindex's search index of a tree
#                          of small files, LMDB environments loaded, copied
#                          and rebuilt, MariaDB under sysbench (see record_held.sh)
#   bgafs-restic.trace.xz, bgafs-hls.trace.xz, bgafs-dox.trace.xz,
#   bgafs-prom.trace.xz: held out (recorded at b1a9cbe), a restic
#                          repository backing up a changing tree, ffmpeg's
#                          HLS rings and recordings, doxygen's HTML sites,
#                          Prometheus's TSDB scraping generated targets
#                          (see record_held2.sh)
#   objects.trace          bga-rec-objects: Ceph-like objects at a 64 KiB unit to 90% full
# (each took 1-2 minutes to record on this project's 2-core machine, and
# the kernel build and ccache 6-7, maildir 5, xapian and lmdb 2-3, restic 3,
# dox 4, hls 5 and prom 7 on a busy one).  Each bgafs trace is checked: applied with its recorded results
# (bga-replay run --verify), it ends in the free map of the image the
# unmount left.  Then the hashes (tests/data/traces/regen_hashes.sh).
# A trace past 1 MiB is kept xz-compressed.  RECORD_KEEP=DIR keeps each
# bgafs trace uncompressed in DIR too.
#   tools/replay/record_traces.sh [BUILD [dbench|dbench8|exerciser|kernel|aged|git|gitaged|fio|kbuild|pylib|pmbig|fioseq|usrinc|debs|gzip|sqlite|sort|fiomix|torrent|gitgc|logs|rsync|lsm|ccache|archive|squashfs|bonnie|hg|pgbench|maildir|redis|borg|xapian|lmdb|mariadb|restic|hls|dox|prom|objects]...]
# (default build/test, all of them)
#
# A new history:
#   1. a function NAME in record_apps.sh (new ones at its end) that
#      runs programs on $mnt, and a comment above it that says what ran,
#      in what order, with what seeds: the trace is remade from it;
#   2. its line in the case below, `NAME) record bgafs-NAME SIZE NAME ;;`,
#      NAME in the usage above, in $which's default and in the error, its
#      programs in $cmds and in scripts/deps.sh record;
#   3. the image SIZE so that the history passes 80% full, and better
#      88%, at some point without running out (peak_start and peak_stop
#      poll the peak; `bga-replay run TRACE -a ext2` prints the true one
#      in its "at most N of M blocks in use" line), and a few hundred
#      thousand records at most (its first line counts them);
#   4. `tools/replay/record_traces.sh build/test NAME`: the trace (kept
#      as record() says, --verify'd) and hashes.txt written again; its
#      diff adds NAME's three lines and changes no other;
#   5. the trace, hashes.txt and a row of docs/TRACE.md "The histories
#      kept" committed; make test's replay test finds it by its name.
#   A held-out history is replayed by whoever judges the placement, not
#   by those who tune it: record it with the library of a named commit,
#   and say which in record_histories.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/test}
[ $# -gt 0 ] && shift
which=${*:-dbench dbench8 exerciser kernel aged git gitaged fio kbuild pylib pmbig fioseq usrinc debs gzip sqlite sort fiomix torrent gitgc logs rsync lsm ccache archive squashfs bonnie hg pgbench maildir redis borg xapian lmdb mariadb restic hls dox prom objects}
R=$build/tools/replay/bga-replay
BGAFS=$build/tools/bgafs/bgafs
out=tests/data/traces
ex=$build/tools/bgafs/tests/bgafs_exerciser
# the exerciser is a test program (BGA_TESTS): only its history needs it
needs=("$R" "$BGAFS" "$build/tools/replay/bga-rec-objects")
case " $which " in *" exerciser "*) needs+=("$ex") ;; esac
for x in "${needs[@]}"; do
	[ -x "$x" ] || { echo "record_traces: no $x (build it first)" >&2; exit 2; }
done
cmds=(dbench postmark git fio xz)
# sqlite3 only the sqlite history needs
case " $which " in *" sqlite "*) cmds+=(sqlite3) ;; esac
# and savelog the logs history, rsync the usrinc and rsync ones
case " $which " in *" logs "*) cmds+=(savelog) ;; esac
case " $which " in *" usrinc "* | *" rsync "*) cmds+=(rsync) ;; esac
# db_bench the lsm history, ccache and cmake the ccache one, zstd the archive one
case " $which " in *" lsm "*) cmds+=(db_bench) ;; esac
case " $which " in *" ccache "*) cmds+=(ccache cmake) ;; esac
case " $which " in *" archive "*) cmds+=(zstd) ;; esac
# mksquashfs, unsquashfs and zstd the squashfs one, bonnie++ and hg theirs
case " $which " in *" squashfs "*) cmds+=(mksquashfs unsquashfs zstd) ;; esac
case " $which " in *" bonnie "*) cmds+=(bonnie++) ;; esac
case " $which " in *" hg "*) cmds+=(hg) ;; esac
# postgresql-15's programs (off the PATH) and dovecot's theirs, run as
# the users postgres and mail (runuser; python3 generates the mail)
case " $which " in *" pgbench "*) cmds+=(/usr/lib/postgresql/15/bin/pgbench /usr/lib/postgresql/15/bin/initdb runuser) ;; esac
case " $which " in *" maildir "*) cmds+=(/usr/lib/dovecot/dovecot-lda doveadm runuser python3) ;; esac
# record_held.sh's: redis's server and client, borg, xapian's, LMDB's
case " $which " in *" redis "*) cmds+=(redis-server redis-cli redis-benchmark) ;; esac
case " $which " in *" borg "*) cmds+=(borg) ;; esac
case " $which " in *" xapian "*) cmds+=(omindex xapian-compact) ;; esac
case " $which " in *" lmdb "*) cmds+=(mdb_load mdb_copy mdb_dump python3) ;; esac
case " $which " in *" mariadb "*) cmds+=(mariadbd mariadb-install-db mariadb mariadb-admin sysbench) ;; esac
# record_held2.sh's
case " $which " in *" restic "*) cmds+=(restic) ;; esac
case " $which " in *" hls "*) cmds+=(ffmpeg) ;; esac
case " $which " in *" dox "*) cmds+=(doxygen) ;; esac
case " $which " in *" prom "*) cmds+=(prometheus python3) ;; esac
for c in "${cmds[@]}"; do
	command -v "$c" >/dev/null || { echo "record_traces: $c missing (scripts/deps.sh record)" >&2; exit 2; }
done
# shellcheck source=bench/support/fuse_mount.sh
. bench/support/fuse_mount.sh
# shellcheck source=bench/support/fsload.sh
. bench/support/fsload.sh
fuse_setup "$(mktemp -d /tmp/record_traces.XXXXXX)"

record() { # record NAME SIZE COMMAND...: the command runs with $mnt mounted, traced
	local name=$1 size=$2
	shift 2
	# record_opts: more mount options, ",allow_other" for a history whose
	# programs run as other users than root (record_more.sh)
	bgafs_mount_fresh "$BGAFS" "$size" "$work/log" -o "trace=$work/$name.trace${record_opts:-}"
	"$@"
	umount_fs
	local want got
	want=$("$R" hash "$work/img" --offset 8192 | sed -n 's/^hash //p')
	got=$("$R" run "$work/$name.trace" --verify | sed -n 's/^hash [^ ]* --verify //p')
	[ "$want" = "$got" ] || { echo "record_traces: $name: --verify ends in $got, the image in $want" >&2; exit 1; }
	# a trace past 1 MiB is kept xz-compressed, and an xz past 1 MiB in
	# parts of 900 KiB, NAME.trace.xz.00, .01, ... (bga-replay reads all
	# three by the trace's name; trace.h, read_whole)
	local f=$out/$name.trace
	rm -f "$f" "$f.xz" "$f.xz".??
	if [ "$(stat -c %s "$work/$name.trace")" -gt 1048576 ]; then
		f=$f.xz
		xz -9 -T1 -c "$work/$name.trace" >"$f"
		if [ "$(stat -c %s "$f")" -gt 1048576 ]; then
			split -b 900K -d -a 2 "$f" "$f."
			rm "$f"
			f=$f.00
		fi
	else
		cp "$work/$name.trace" "$f"
	fi
	[ -z "${RECORD_KEEP:-}" ] || cp "$work/$name.trace" "$RECORD_KEEP/"
	echo "$f: $(stat -c %s "$f") bytes ($(stat -c %s "$work/$name.trace") uncompressed), --verify ends in the image's free map ($want)"
}

# The histories, a function each
# shellcheck source=tools/replay/record_histories.sh
. tools/replay/record_histories.sh
. tools/replay/record_apps.sh
. tools/replay/record_more.sh
. tools/replay/record_held.sh
. tools/replay/record_held2.sh

exerciser() {
	"$ex" -q -s 1 -n 500 -S "$work/state" "$mnt" || echo "record_traces: the exerciser exited with $?"
	rm -rf "$mnt/ex1/p1" "$mnt/ex1/p3"
}
for t in $which; do
	case $t in
	dbench) record bgafs-dbench 256M dbench2 ;;
	dbench8) record bgafs-dbench8 1G dbench8 ;;
	exerciser) record bgafs-exerciser 32M exerciser ;;
	kernel) kernel_src && record bgafs-kernel 2G kernel ;;
	aged) kernel_src && record bgafs-aged 512M aged ;;
	git) record bgafs-git 256M gitrevs ;;
	gitaged) record bgafs-gitaged 64M gitaged ;;
	kbuild) record bgafs-kbuild 512M kbuild ;;
	fio) record bgafs-fio 256M fio_random ;;
	pylib) record bgafs-pylib 224M pylib ;;
	pmbig) record bgafs-pmbig 512M pmbig ;;
	fioseq) record bgafs-fioseq 120M fioseq ;;
	usrinc) record bgafs-usrinc 256M usrinc ;;
	debs) record bgafs-debs 256M debs ;;
	gzip) record bgafs-gzip 208M gzip_trees ;;
	sqlite) record bgafs-sqlite 160M sqlite_dbs ;;
	sort) kernel_src && record bgafs-sort 180M sort_runs ;;
	fiomix) record bgafs-fiomix 128M fiomix ;;
	torrent) record bgafs-torrent 256M torrent ;;
	gitgc) record bgafs-gitgc 128M gitgc ;;
	logs) record bgafs-logs 64M logs ;;
	rsync) record bgafs-rsync 128M rsync_inplace ;;
	lsm) record bgafs-lsm 264M lsm ;;
	ccache) record bgafs-ccache 200M ccache_ci ;;
	archive) record bgafs-archive 424M archive ;;
	squashfs) record bgafs-squashfs 200M squash_images ;;
	bonnie) record bgafs-bonnie 192M bonnie ;;
	hg) record bgafs-hg 122M hg_rounds ;;
	pgbench) record_opts=,allow_other record bgafs-pgbench 296M pg_bench ;;
	maildir) record_opts=,allow_other record bgafs-maildir 112M maildir ;;
	redis) record bgafs-redis 340M redis_rounds ;;
	borg) record bgafs-borg 404M borg_days ;;
	xapian) record bgafs-xapian 800M xapian ;;
	lmdb) record bgafs-lmdb 950M lmdb_rounds ;;
	mariadb) record_opts=,allow_other record bgafs-mariadb 545M my_rounds ;;
	restic) record bgafs-restic 352M restic_days ;;
	hls) record bgafs-hls 336M hls_sessions ;;
	dox) record bgafs-dox 480M dox_site ;;
	prom) record bgafs-prom 114M prom_tsdb ;;
	objects) "$build/tools/replay/bga-rec-objects" "$out/objects.trace" 1 16384 ;;
	*) echo "record_traces: no trace '$t' (dbench, dbench8, exerciser, kernel, aged, git, gitaged, fio, kbuild, pylib, pmbig, fioseq, usrinc, debs, gzip, sqlite, sort, fiomix, torrent, gitgc, logs, rsync, lsm, ccache, archive, squashfs, bonnie, hg, pgbench, maildir, redis, borg, xapian, lmdb, mariadb, restic, hls, dox, prom, objects)" >&2; exit 2 ;;
	esac
done
tests/data/traces/regen_hashes.sh "$build"
