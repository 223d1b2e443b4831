#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The 2006 ext3 experiment with a conclusion: dbench on bgafs with the
# allocator's counters atomic (BGA_ATOMIC_COUNTERS, chosen at mkfs through
# BGAFS_ATOMIC_COUNTERS=1 and stored in the image) and per-CPU, on images of
# the same size, the two modes alternating run by run (which goes first
# alternates too), N runs each.  For each client count it prints MB/s per
# run, the ratio of medians with a paired bootstrap CI, the Mann-Whitney p,
# the share of the daemon's CPU samples in counter code (perf record -e
# cpu-clock), how many runs per side would detect a 5% difference at the
# spread seen, and one verdict line:
#   verdict clients=4 percpu/atomic=1.01x ci=0.95-1.08 p=0.7000 runs=3: no significant difference
# (the last field as bga-lab's: percpu faster, atomic faster, no
# significant difference, or inconclusive (REASON)).
#
#   bench/fs/dbench_counters.sh [--runs N] [--clients LIST] [--seconds S] [--size SIZE]
#                            [--build DIR] [--no-perf] [--json FILE]
# Defaults: 3 runs, 4 clients, 10 s per dbench run, 2G images, build/release.
# Packages: scripts/deps.sh fscompare (dbench, fuse3) and perf (linux-perf).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench/support/fsload.sh
. bench/support/fsload.sh
runs=3 clients=4 secs=10 size=2G build=build/release perf=1 json=
dbench_opts 21 "$@"
set -- "${rest[@]}"
while [ $# -gt 0 ]; do
	case $1 in
	--no-perf) perf=0; shift ;;
	--json) json=$2; shift 2 ;;
	*) echo "dbench_counters: unknown argument '$1' (--help)" >&2; exit 2 ;;
	esac
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "dbench_counters: --runs takes a positive number" >&2; exit 2; }
[[ $clients =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || { echo "dbench_counters: --clients takes a list like 1,4" >&2; exit 2; }
BGAFS=$(realpath "$build/tools/bgafs/bgafs" 2>/dev/null || true)
[ -x "$BGAFS" ] || { echo "dbench_counters: no bgafs in $build (cmake --build $build --target bgafs)" >&2; exit 2; }
for c in dbench fusermount3; do
	command -v $c >/dev/null || { echo "dbench_counters: $c missing (scripts/deps.sh fscompare)" >&2; exit 2; }
done
if [ $perf = 1 ] && ! command -v perf >/dev/null; then
	echo "dbench_counters: perf missing (Debian: linux-perf); running without the profile" >&2
	perf=0
fi
py=/usr/bin/python3
"$py" -c 'import scipy' 2>/dev/null || { echo "dbench_counters: needs python3-scipy" >&2; exit 2; }

# shellcheck source=bench/support/fuse_mount.sh
. bench/support/fuse_mount.sh # (the script runs from the top directory)
fuse_setup "$(mktemp -d /tmp/dbench_counters.XXXXXX)"
perfpid=
fuse_cleanup_extra() { [ -z "$perfpid" ] || kill -INT "$perfpid" 2>/dev/null; }

mount_fs() { # mount_fs atomic|percpu
	local a=0
	[ "$1" = atomic ] && a=1
	BGAFS_ATOMIC_COUNTERS=$a bgafs_mount_fresh "$BGAFS" "$size" "$work/bgafs.log"
}

# The image's stored flags say which counter mode the mount ran.
image_flags() {
	local inspect=$build/tools/inspect/bga-inspect
	[ -x "$inspect" ] || { echo "?"; return; }
	"$inspect" dump "$work/img" --offset 8192 2>/dev/null | sed -n 's/.*flags \(0x[0-9a-f]*\|0\),.*/\1/p' | head -1
}

results=$work/results.tsv
: >"$results"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
IFS=, read -ra clist <<<"$clients"
for c in "${clist[@]}"; do
	for i in $(seq "$runs"); do
		if [ $((i % 2)) = 1 ]; then order="atomic percpu"; else order="percpu atomic"; fi
		for mode in $order; do
			mount_fs "$mode"
			flags=$(image_flags)
			prof=-
			if [ $perf = 1 ]; then
				prof=$work/perf.$c.$mode.$i.data
				perf record -q -e cpu-clock -F 2000 -p "$pid" -o "$prof" 2>>"$work/perf.log" &
				perfpid=$!
			fi
			out=$(dbench_run "$mnt" "$secs" "$c") || true
			echo "$out" >>"$work/dbench.log"
			if [ -n "$perfpid" ]; then
				kill -INT "$perfpid" 2>/dev/null || true
				wait "$perfpid" 2>/dev/null || true
				perfpid=
			fi
			mbs=$(awk '/^Throughput/ {printf "%.2f\n", $2}' <<<"$out" | tail -1)
			umount_fs
			share=-
			if [ "$prof" != - ] && [ -s "$prof" ]; then
				# Symbols of the counter's own code (bga_counter_*, the
				# fold and rseq helpers); adds inlined into callers are
				# counted under the callers, so this is a lower bound.
				share=$(perf report -i "$prof" --stdio --no-children --sort symbol 2>/dev/null |
					awk '/^# Samples:/ { n = $3 }
						/^ *[0-9.]+%/ { p = $1; sub("%", "", p); tot += p;
						if ($0 ~ /bga_counter|counter_add|counter_flush|counter_lock|ctr_rseq|counter_sum|counter_read/) cnt += p }
						END { if (tot > 0) printf "%.3f\t%s", cnt, n; else print "-" }')
			fi
			nsamp=-
			if [ "$share" != - ]; then nsamp=${share#*$'\t'}; share=${share%%$'\t'*}; fi
			echo "dbench_counters: clients=$c run $i $mode: ${mbs:-?} MB/s (image flags ${flags:-?}, counter code ${share}% of ${nsamp} samples)" >&2
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$i" "$mode" "${mbs:-nan}" "$share" "${flags:-?}" >>"$results"
		done
	done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

"$py" - "$results" "$runs" "$secs" "$size" "$load0" "$load1" "$json" "$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)" <<'PY'
import json, math, random, statistics, sys
from scipy.stats import mannwhitneyu, norm
path, runs, secs, size, load0, load1, out, rev = sys.argv[1:9]
rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
by = {}
for c, i, mode, mbs, share, flags in rows:
    d = by.setdefault(int(c), {"atomic": {}, "percpu": {}, "share": {"atomic": [], "percpu": []}, "flags": {}})
    d[mode][int(i)] = float(mbs)
    if share not in ("-", ""):
        d["share"][mode].append(float(share))
    d["flags"].setdefault(mode, set()).add(flags)
print("dbench_counters: dbench %s s per run, images of %s, bgafs, runs alternating; load average %s before, %s after; commit %s"
      % (secs, size, load0, load1, rev))
report = {"tool": "bench/fs/dbench_counters.sh", "commit": rev, "seconds": float(secs), "size": size,
          "loadavg": [load0, load1], "clients": []}
for c in sorted(by):
    d = by[c]
    idx = sorted(set(d["atomic"]) & set(d["percpu"]))
    a = [d["atomic"][i] for i in idx]
    b = [d["percpu"][i] for i in idx]
    bad = [x for x in a + b if not x == x or x <= 0]
    print("clients=%d atomic MB/s: %s" % (c, " ".join("%.1f" % x for x in a)))
    print("clients=%d percpu MB/s: %s" % (c, " ".join("%.1f" % x for x in b)))
    n = len(idx)
    if n == 0 or bad:
        print("verdict clients=%d percpu/atomic=nanx ci=nan-nan p=nan runs=%d: inconclusive (a dbench run failed)" % (c, n))
        continue
    ratio = statistics.median(b) / statistics.median(a)
    rnd = random.Random(1)
    boots = []
    for _ in range(4000):
        s = [rnd.randrange(n) for _ in range(n)]
        boots.append(statistics.median([b[k] for k in s]) / statistics.median([a[k] for k in s]))
    boots.sort()
    lo, hi = boots[int(0.025 * len(boots))], boots[int(0.975 * len(boots)) - 1]
    p = mannwhitneyu(b, a, alternative="two-sided").pvalue if n > 1 else 1.0
    # the spread: each side's coefficient of variation, pooled
    cv = math.sqrt((statistics.pvariance(a) / statistics.mean(a) ** 2 + statistics.pvariance(b) / statistics.mean(b) ** 2) / 2) if n > 1 else float("nan")
    # runs per side for a two-sided 5% test with 80% power to see a 5%
    # difference (normal approximation, /0.955 for Mann-Whitney's efficiency)
    need = math.ceil(2 * (norm.ppf(0.975) + norm.ppf(0.8)) ** 2 * (cv / 0.05) ** 2 / 0.955) if cv == cv else None
    sa, sb = d["share"]["atomic"], d["share"]["percpu"]
    min_p = 2.0 / math.comb(2 * n, n) if n > 0 else 1
    alpha = 0.05
    if min_p >= alpha:
        outcome = "inconclusive (%d runs per side cannot reach p < %.2f: the least p is %.2f)" % (n, alpha, min_p)
        if lo >= 0.95 and hi <= 1.05:
            outcome = "inconclusive (%d runs per side cannot reach p < %.2f, but the ci lies within 5%% of 1)" % (n, alpha)
    elif p < alpha and lo > 1:
        outcome = "percpu faster"
    elif p < alpha and hi < 1:
        outcome = "atomic faster"
    elif p >= alpha and lo >= 0.95 and hi <= 1.05:
        outcome = "no significant difference"
    else:
        outcome = "inconclusive (p=%.3f, ci %.2f-%.2f: neither a difference nor its absence within 5%%)" % (p, lo, hi)
    print("clients=%d counter code in the daemon's CPU samples (perf, cpu-clock): atomic %s, percpu %s"
          % (c, "%.2f%%" % statistics.median(sa) if sa else "-", "%.2f%%" % statistics.median(sb) if sb else "-"))
    print("clients=%d spread (pooled CV) %.1f%%: %s runs per side would detect a 5%% difference (alpha 0.05, power 0.8)"
          % (c, 100 * cv, need if need is not None else "?"))
    print("verdict clients=%d percpu/atomic=%.2fx ci=%.2f-%.2f p=%.4f runs=%d: %s" % (c, ratio, lo, hi, p, n, outcome))
    report["clients"].append({"clients": c, "atomic_mbs": a, "percpu_mbs": b, "ratio": ratio, "ci": [lo, hi], "p": p,
                              "cv": cv, "runs_for_5pct": need, "counter_share_pct": {"atomic": sa, "percpu": sb},
                              "image_flags": {k: sorted(v) for k, v in d["flags"].items()}, "outcome": outcome})
if out:
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
PY
