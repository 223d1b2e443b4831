#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What recording costs: dbench on bgafs mounted with -o trace=FILE against
# the same without, in one sitting, alternating run by run (which goes
# first alternates too), each run on a fresh image.  Prints MB/s of every
# run, the medians, traced/plain as a ratio with the range of the per-pair
# ratios, and the traces' sizes and records per second.
#   bench/fs/trace_cost.sh [--runs N] [--clients C] [--seconds S] [--size SIZE] [--build DIR]
# Defaults: 5 runs, 4 clients, 10 s, 1G images, build/release.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench/support/fsload.sh
. bench/support/fsload.sh
runs=5 clients=4 secs=10 size=1G build=build/release
dbench_opts 10 "$@"
[ ${#rest[@]} = 0 ] || { echo "trace_cost: unknown argument '${rest[0]}' (--help)" >&2; exit 2; }
BGAFS=$(realpath "$build/tools/bgafs/bgafs" 2>/dev/null || true)
R=$(realpath "$build/tools/replay/bga-replay" 2>/dev/null || true)
[ -x "$BGAFS" ] && [ -x "$R" ] || { echo "trace_cost: no bgafs or bga-replay in $build" >&2; exit 2; }
command -v dbench >/dev/null || { echo "trace_cost: dbench missing (scripts/deps.sh fscompare)" >&2; exit 2; }
# shellcheck source=bench/support/fuse_mount.sh
. bench/support/fuse_mount.sh
fuse_setup "$(mktemp -d /tmp/trace_cost.XXXXXX)"

one() { # one plain|traced: prints MB/s
	local opt=() mbs
	rm -f "$work/t.trace"
	[ "$1" = traced ] && opt=(-o "trace=$work/t.trace")
	bgafs_mount_fresh "$BGAFS" "$size" "$work/log" "${opt[@]}"
	mbs=$(dbench_run "$mnt" "$secs" "$clients" | sed -n 's/^Throughput \([0-9.]*\) MB\/sec.*/\1/p')
	umount_fs
	[ -n "$mbs" ] || { echo "trace_cost: dbench printed no throughput" >&2; exit 1; }
	if [ "$1" = traced ]; then
		local recs
		recs=$("$R" text "$work/t.trace" | grep -cvE '^[a-z#]')
		echo "$(stat -c %s "$work/t.trace") $recs" >>"$work/sizes"
	fi
	echo "$mbs"
}

echo "trace_cost: dbench $clients clients, $secs s, $size images, $runs runs a side, $(git rev-parse --short HEAD) $(date -u +%F)"
: >"$work/plain"
: >"$work/traced"
for i in $(seq "$runs"); do
	if [ $((i % 2)) = 1 ]; then order="plain traced"; else order="traced plain"; fi
	for m in $order; do
		v=$(one $m)
		echo "$v" >>"$work/$m"
		echo "run $i $m: $v MB/s"
	done
done
python3 - "$work/plain" "$work/traced" "$work/sizes" "$secs" <<'PY'
import statistics, sys
p = [float(x) for x in open(sys.argv[1])]
t = [float(x) for x in open(sys.argv[2])]
sizes = [tuple(map(int, l.split())) for l in open(sys.argv[3])]
secs = float(sys.argv[4])
r = [b / a for a, b in zip(p, t)]
print("plain:  median %.1f MB/s (%s)" % (statistics.median(p), " ".join("%.1f" % x for x in p)))
print("traced: median %.1f MB/s (%s)" % (statistics.median(t), " ".join("%.1f" % x for x in t)))
print("traced/plain: %.3fx of the medians; per pair %.3f-%.3f" % (statistics.median(t) / statistics.median(p), min(r), max(r)))
print("traces: median %.0f KiB, %.0f records/s" % (statistics.median(s for s, _ in sizes) / 1024,
      statistics.median(n for _, n in sizes) / secs))
PY
