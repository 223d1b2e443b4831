# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash disable=SC2154 # $work, $mnt and the rest: record_traces.sh sets them
# A second batch of held-out histories of programs nobody here wrote:
# a content-addressed backup repository of encrypted, compressed packs
# (restic), a live-streaming origin's HLS rings and recordings (hls),
# a documentation site of many small files built again and again
# (dox) and a time-series database's log and blocks (prom), one
# function a history as in record_held.sh, whose helpers
# (held_src, borg_in, borg_edit) and those before it (used_pct, settled,
# the peak poller) they use.  Sourced by record_traces.sh after
# record_held.sh, never run alone.

# Recorded with the library and the bgafs of b1a9cbe, held out from the
# placement work after it.

# the servers stopped before the image is unmounted when a step fails
# (record_held.sh's and record_more.sh's too)
fuse_cleanup_extra() {
	pg_stop 2>/dev/null || true
	redis_stop 2>/dev/null || true
	my_stop 2>/dev/null || true
	prom_stop 2>/dev/null || true
}

# restic: a restic 0.14 repository (restic; format 2: packs of the
# default size, zstd "auto", encrypted) and its cache on bgafs
# (RESTIC_CACHE_DIR), backing up a tree on the machine's own disk that
# changes daily (borg_days's tree and helpers, another schedule): eight
# days, each a "restic backup" of the day's tree (day 1: sound/, net/
# and Documentation/ of linux-source-6.1; then in turn: every seventh
# text or C file of sound/ and Documentation/ edited, fs/ in and net/
# out, drivers/net/wireless in and fs/ edited, Documentation/ out and
# drivers/net/ethernet in, net/ in again and drivers/net/wireless
# edited, sound/ out and fs/ and drivers/net/ethernet edited,
# Documentation/ in again); from day 3 "restic forget --keep-last 2
# --prune --max-unused 0" (the packs that hold a forgotten blob written
# again without it, the old deleted); after days 4 and 7 the latest
# snapshot restored onto bgafs (restic restore), the restore before it
# deleted; at the end the last restore deleted and a "restic check".
# 352M image, 89.5% full at the peak (bga-replay -a ext2's "at most"
# line; in day 7's restore; the repository alone stays under 20%);
# three minutes to record.
rs_do() { RESTIC_REPOSITORY=$mnt/repo RESTIC_PASSWORD=record RESTIC_CACHE_DIR=$mnt/cache restic -q "$@"; }
restic_days() {
	held_src
	peak_start
	rm -rf "$work/day"
	mkdir -p "$work/day"
	rs_do init --repository-version 2 >/dev/null
	local d
	for d in 1 2 3 4 5 6 7 8; do
		case $d in
		1) borg_in sound net Documentation ;;
		2) borg_edit 2 sound Documentation ;;
		3) rm -rf "$work/day/net" && borg_in fs ;;
		4) borg_in drivers/net/wireless && borg_edit 4 fs ;;
		5) rm -rf "$work/day/Documentation" && borg_in drivers/net/ethernet ;;
		6) borg_in net && borg_edit 6 drivers/net/wireless ;;
		7) rm -rf "$work/day/sound" && borg_edit 7 fs drivers/net/ethernet ;;
		8) borg_in Documentation ;;
		esac
		(cd "$work/day" && rs_do backup --host record --tag "day-$d" .)
		[ $d -ge 3 ] && rs_do forget --keep-last 2 --prune --max-unused 0 >/dev/null
		if [ $d = 4 ] || [ $d = 7 ]; then
			rm -rf "$mnt"/restore*
			rs_do restore latest --target "$mnt/restore$d"
		fi
		settled
		echo "record_traces: restic: day $d backed up, $(used_pct)% full"
	done
	rm -rf "$mnt"/restore*
	rs_do check
	peak_stop restic
}

# held_trim WHO MIB GLOB...: the oldest file or directory of the first
# GLOB that has one (in name order) deleted, then of the next, until MIB
# fit above 12% free (the room a step about to write needs)
held_trim() {
	local who=$1 mib=$2 g f
	shift 2
	while :; do
		settled
		stat -f -c '%b %f %S' "$mnt" | awk -v n="$mib" '{exit !(($2 - 0.12 * $1) * $3 / 1048576 < n)}' || return 0
		f=
		for g in "$@"; do
			# shellcheck disable=SC2086 # the glob expanded here
			f=$(find $g -maxdepth 0 2>/dev/null | LC_ALL=C sort | head -1)
			[ -n "$f" ] && break
		done
		[ -n "$f" ] || return 0
		rm -rf "$f"
		echo "record_traces: $who: $(basename "$f") deleted"
	done
}

# hls: a live-streaming origin and its recorder: ffmpeg 5.1 (ffmpeg)
# encoding generated channels (lavfi: testsrc2 at 854x480 and 25 fps
# with a sine tone; channel 2 testsrc) as fast as it can, two
# channels at once, each into an HLS ladder of three variants (MPEG-2
# video at 2 Mbit/s 854x480, 800 kbit/s 640x360 and 300 kbit/s 320x180,
# MP2 audio at 128 kbit/s; 2 s MPEG-TS segments written to a temporary
# name and renamed, each variant's playlist of 15 written again at each
# segment, the segments that fall off it deleted: a ring) beside a
# recording of the whole session (one MPEG-TS file at 2 Mbit/s growing
# to its end): six sessions of 90-240 s of programme (the lengths below,
# per session and channel); a channel's HLS directory deleted as its
# next session starts; before sessions 3 and 5 the recordings of the
# session two back transcoded to 500 kbit/s archive copies (ffmpeg
# reading them from bgafs).  Before each session, while the room left above 12%
# free is under what the session will write (each channel's programme
# at the bytes a second of its last recording, and 30 MiB for the
# rings), the oldest recording (then the oldest archive) deleted.  At
# the end the HLS directories and the oldest half of the recordings
# deleted.  336M image, 86.5% full at the peak (in session 4; a
# recording deleted whole moves the level a tenth, so the image and the
# 30 MiB were chosen together: 80.7% with 32 MiB on 320M, 90.7% with a
# rate for both channels at once); four to six minutes to record.
hls_channel() { # hls_channel CH SESSION SECONDS: one channel's session, its ladder and its recording
	local d=$mnt/live/ch$1 src="testsrc2=size=854x480:rate=25"
	[ "$1" = 2 ] && src="testsrc=size=854x480:rate=25"
	rm -rf "$d"
	mkdir -p "$d"
	ffmpeg -nostdin -hide_banner -loglevel error -f lavfi -i "$src" \
		-f lavfi -i "sine=frequency=$((330 * $1)):sample_rate=48000" \
		-filter_complex "[0:v]split=4[a][b][c][r];[b]scale=640:360[b2];[c]scale=320:180[c2]" \
		-map '[a]' -map 1:a -map '[b2]' -map 1:a -map '[c2]' -map 1:a -t "$3" \
		-c:v mpeg2video -g 50 -c:a mp2 -b:a 128k -b:v:0 2M -b:v:1 800k -b:v:2 300k \
		-f hls -hls_time 2 -hls_list_size 15 -hls_flags delete_segments+temp_file+independent_segments \
		-var_stream_map 'v:0,a:0 v:1,a:1 v:2,a:2' -hls_segment_filename "$d/v%v/seg%05d.ts" \
		-master_pl_name master.m3u8 "$d/v%v/index.m3u8" \
		-map '[r]' -map 1:a -t "$3" -c:v mpeg2video -g 50 -b:v 2M -c:a mp2 -b:a 128k \
		-f mpegts "$mnt/dvr/rec-$2-ch$1.ts" 2>"$work/hls-$1.err" ||
		{ cat "$work/hls-$1.err" >&2; echo "record_traces: hls: ffmpeg on channel $1 failed" >&2; exit 1; }
}
hls_archive() { # hls_archive SESSION: that session's recordings transcoded into archive/
	local f
	for f in "$mnt/dvr/rec-$1"-ch*.ts; do
		[ -f "$f" ] || continue
		ffmpeg -nostdin -hide_banner -loglevel error -i "$f" -c:v mpeg2video -b:v 500k -c:a mp2 -b:a 96k \
			-f mpegts "$mnt/archive/$(basename "$f")" || { echo "record_traces: hls: transcoding $f failed" >&2; exit 1; }
	done
}
hls_sessions() {
	peak_start
	mkdir -p "$mnt/live" "$mnt/dvr" "$mnt/archive"
	local s p len1=(0 120 180 90 240 150 200) len2=(0 150 100 210 120 180 90)
	for s in 1 2 3 4 5 6; do
		case $s in 3 | 5) hls_archive $((s - 2)) ;; esac
		# what the session will write: each channel's recording at the
		# rate of its last one (bytes a second of programme: the encoder
		# undershoots its rate on a generated picture, each by its own),
		# two rings and the segments deleted from them whose frees are
		# not yet committed
		# shellcheck disable=SC2017 # whole bytes a second first, as recorded
		[ $s = 1 ] || held_trim hls $((($(stat -c %s "$mnt/dvr/rec-$((s - 1))-ch1.ts") / len1[s - 1] * len1[s] +
			$(stat -c %s "$mnt/dvr/rec-$((s - 1))-ch2.ts") / len2[s - 1] * len2[s]) / 1048576 + 30)) \
			"$mnt/dvr/rec-*.ts" "$mnt/archive/rec-*.ts"
		hls_channel 1 "$s" "${len1[s]}" &
		p=$!
		hls_channel 2 "$s" "${len2[s]}"
		wait "$p" || exit 1
		settled
		echo "record_traces: hls: session $s, $(used_pct)% full"
	done
	rm -rf "$mnt/live"
	find "$mnt/dvr" -name 'rec-*.ts' | LC_ALL=C sort | awk 'NR % 2' | xargs -d '\n' rm -f
	peak_stop hls
}

# dox: a documentation site built by doxygen 1.9 (doxygen; HTML only,
# every entity extracted, its search index; many small files, all
# written again at each run) for four projects, kernel subtrees copied
# onto bgafs (fs/btrfs, fs/xfs, net/ipv4, net/netfilter): seven rounds,
# each every fifth C or header file of two projects edited (sed -i;
# from the second round: fs/btrfs and net/ipv4 in even rounds, fs/xfs
# and the fourth project in odd ones, a different fifth each time),
# then the four built again into their output directories (two doxygen
# at once), then the site published: the four outputs copied to
# site/rN (cp -a).  Before each round, while the room left above 12%
# free is under what the last round published and a tenth, the oldest
# published project deleted (site/r1's first, in name order).  In round
# 4 net/netfilter moved out of the site and fs/smb in (its source
# copied, its output started afresh); at the end all sites but the last
# deleted.  480M image, 88.7% full at the peak; four minutes to record;
# the largest of these traces (370,000 records, 2.7 MB of xz in parts).
dox_build() { # dox_build PROJECT: PROJECT's sources under $mnt/src documented into $mnt/out/PROJECT
	mkdir -p "$mnt/out/$1"
	printf '%s\n' "PROJECT_NAME = $1" "INPUT = $mnt/src/$1" "RECURSIVE = YES" "OUTPUT_DIRECTORY = $mnt/out/$1" \
		"EXTRACT_ALL = YES" "EXTRACT_STATIC = YES" "GENERATE_LATEX = NO" \
		"HAVE_DOT = NO" "QUIET = YES" "WARNINGS = NO" | doxygen - >"$work/dox-${1//\//-}.out" 2>&1 ||
		{ tail "$work/dox-${1//\//-}.out" >&2; echo "record_traces: dox: doxygen on $1 failed" >&2; exit 1; }
}
dox_edit() { # dox_edit ROUND PROJECT...: every fifth C or header file of each PROJECT edited
	local p
	for p in "${@:2}"; do
		find "$mnt/src/$p" -type f -name '*.[ch]' | LC_ALL=C sort | awk -v n="$1" 'NR % 5 == n % 5' |
			xargs -d '\n' sed -i -e '1i\/* round '"$1"' */' -e 's/^static int /static  int /'
	done
}
dox_site() {
	more_src
	peak_start
	local r p q projects=(fs/btrfs fs/xfs net/ipv4 net/netfilter)
	for p in "${projects[@]}"; do mkdir -p "$mnt/src/$(dirname "$p")" && cp -a "$src/$p" "$mnt/src/$p"; done
	mkdir -p "$mnt/site"
	for r in 1 2 3 4 5 6 7; do
		[ $r = 1 ] || held_trim dox $(($(du -sm "$mnt/site/r$((r - 1))" | cut -f1) * 11 / 10)) "$mnt/site/r*/*/*"
		if [ $r = 4 ]; then
			rm -rf "$mnt/src/net/netfilter" "$mnt/out/net/netfilter"
			cp -a "$src/fs/smb" "$mnt/src/fs/smb"
			projects=(fs/btrfs fs/xfs net/ipv4 fs/smb)
		fi
		if [ $((r % 2)) = 0 ]; then dox_edit $r fs/btrfs net/ipv4; elif [ $r -gt 1 ]; then dox_edit $r fs/xfs "${projects[3]}"; fi
		dox_build "${projects[0]}" &
		p=$!
		dox_build "${projects[1]}"
		wait "$p" || exit 1
		dox_build "${projects[2]}" &
		p=$!
		dox_build "${projects[3]}"
		wait "$p" || exit 1
		mkdir -p "$mnt/site/r$r"
		for q in "${projects[@]}"; do mkdir -p "$mnt/site/r$r/$(dirname "$q")" && cp -a "$mnt/out/$q" "$mnt/site/r$r/$q"; done
		settled
		echo "record_traces: dox: round $r built and published, $(used_pct)% full"
	done
	find "$mnt/site" -mindepth 1 -maxdepth 1 ! -name r7 -exec rm -rf {} +
	peak_stop dox
}

# prom: a Prometheus 2.42 server (prometheus) whose TSDB is on bgafs,
# scraping a generated exporter (prom_exporter, python3: four targets,
# each 6,000 series of counters that grow by random steps and gauges
# that wander, every 10th series of the first target renamed each 90
# scrapes: churn) every second, run for seven minutes by the clock: the
# write-ahead log in segments of 10 MiB, checkpointed and truncated as
# the head is cut; head chunks memory-mapped into files of their own;
# the head cut into blocks of a minute each (--storage.tsdb.min- and
# max-block-duration=1m, the hidden flags, as a short-lived test server
# does; their chunk files preallocated 16 MiB at a time, not the
# default 512; no leveled compaction, whose transient copy would make
# the peak depend on when it falls); past the size-based retention
# (80 MB: blocks, log and head chunks) the oldest blocks deleted, each
# minute.  Stopped by SIGTERM.  The server cuts blocks and applies
# retention by its own clock, so a recording again differs.  114M
# image, 89.7% full at the peak (the retention keeps it near 45%
# between cuts; the peak is a new block's preallocated chunk file beside
# the log before the oldest block goes; 79.3% on a 124M image); seven
# minutes to record.
prom_exporter() { # prom_exporter PORT...: the targets, in the background
	python3 - "$@" <<'PY' >"$work/prom-exporter.log" 2>&1 &
import http.server, random, sys, threading
class Target:
    def __init__(self, i):
        self.i, self.n, self.g = i, 0, random.Random(f"prom {i}")
        self.v = [0.0] * 6000
    def text(self):
        g, out = self.g, []
        self.n += 1
        for k in range(6000):
            if k % 2:
                self.v[k] += g.expovariate(0.05)
                name = "app_requests_total"
            else:
                self.v[k] = round(self.v[k] * 0.9 + g.gauss(50, 20), 3)
                name = "app_latency_ms"
            gen = self.n // 90 if self.i == 0 and k % 10 == 0 else 0
            out.append('%s{shard="%d",path="/api/v1/r%d",gen="%d"} %s' % (name, k % 16, k, gen, self.v[k]))
        return ("\n".join(out) + "\n").encode()
def serve(port, t):
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = t.text()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass
    http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
for i, p in enumerate(sys.argv[1:]):
    threading.Thread(target=serve, args=(int(p), Target(i)), daemon=True).start()
threading.Event().wait()
PY
	prom_exp_pid=$!
}
prom_stop() { # the server (SIGTERM: it closes the TSDB) and the exporter stopped
	local p
	for p in ${prom_pid:-} ${prom_exp_pid:-}; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	prom_pid='' prom_exp_pid=''
}
prom_tsdb() {
	peak_start
	local t
	prom_exporter 19101 19102 19103 19104
	printf '%s\n' "global: {scrape_interval: 1s, scrape_timeout: 900ms}" "scrape_configs:" \
		"- job_name: app" "  static_configs:" \
		"  - targets: ['127.0.0.1:19101', '127.0.0.1:19102', '127.0.0.1:19103', '127.0.0.1:19104']" >"$work/prom.yml"
	prometheus --config.file="$work/prom.yml" --web.listen-address=127.0.0.1:19090 \
		--storage.tsdb.path="$mnt/prom" --storage.tsdb.retention.time=1d --storage.tsdb.retention.size=80MB \
		--storage.tsdb.min-block-duration=1m --storage.tsdb.max-block-duration=1m \
		--storage.tsdb.max-block-chunk-segment-size=16MB --storage.tsdb.wal-segment-size=10MB >"$work/prom.log" 2>&1 &
	prom_pid=$!
	for t in 1 2 3 4 5 6 7; do
		sleep 60
		kill -0 "$prom_pid" 2>/dev/null || { tail "$work/prom.log" >&2; echo "record_traces: prom: the server stopped" >&2; exit 1; }
		echo "record_traces: prom: minute $t, $(find "$mnt/prom" -maxdepth 1 -name '01*' | wc -l) blocks, $(used_pct)% full"
	done
	prom_stop
	peak_stop prom
}
