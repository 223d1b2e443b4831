#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The main job of `make demo`: measure the machine's ceiling (bench/ceiling.sh,
# before and after), run bga-scale and print the scalability report, every
# 2-thread figure also as a fraction of that ceiling.
#   bench/scale/demo.sh BUILD_DIR [bga-scale options...]
# e.g. bench/scale/demo.sh build/release --quick
#      bench/scale/demo.sh build/release -w churn -t 1,2,64 -r 9
# Writes build/demo/scale.json (and a copy under build/demo/runs/, named by
# time and commit, for bench/report/compare.sh), report.txt, summary.json, scale.png
# and scale-<workload>.png, and build/demo/replay/ (the recorded
# histories).  Set BGA_DEMO_OUT to write elsewhere, and BGA_DEMO_CEILING=0
# to skip the ceiling.
set -euo pipefail

if [ $# -lt 1 ] || [ ! -d "$1" ]; then
	echo "usage: bench/scale/demo.sh BUILD_DIR [bga-scale options]  (BUILD_DIR from cmake -DBGA_BENCH=ON)" >&2
	exit 2
fi
build=$1
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${BGA_DEMO_OUT:-$root/build/demo}
scale=$build/bench/bga-scale
if [ ! -x "$scale" ]; then
	echo "demo: $scale is missing: configure with -DBGA_BENCH=ON and build" >&2
	exit 1
fi
for a in "$@"; do
	case $a in -h | --help | --list) exec "$scale" "$@" ;; esac
done

# Debian's scipy is installed for the system python; a python3 earlier on
# PATH (pyenv, a venv) may not have it.
py=
for p in /usr/bin/python3 python3; do
	if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import scipy' 2>/dev/null; then
		py=$p
		break
	fi
done
if [ -z "$py" ]; then
	echo "demo: no python3 with scipy (Debian: apt-get install python3-scipy, or scripts/deps.sh demo)" >&2
	exit 1
fi

rev=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ "$rev" != unknown ] && [ -n "$(git -C "$root" status --porcelain -- lib include bench 2>/dev/null)" ]; then
	rev=$rev-dirty
fi
mkdir -p "$out/runs"
stamp=$(date -u +%Y%m%d-%H%M%S)
json=$out/scale.json
SECONDS=0
# The ceiling is measured on each side of the run, as close to it as it can
# be without sharing the CPUs with it; the report takes their mean.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ceiling() {
	if [ "${BGA_DEMO_CEILING:-1}" != 0 ] &&
		! "$root/bench/ceiling.sh" "$build" 5 "$tmp/ceiling-$1.json"; then
		echo "demo: the ceiling could not be measured ($1 the run); the report goes without it" >&2
	fi
}
ceiling before
"$scale" --json "$json" --meta "git=$rev" --meta "build=$build" "$@"
ceiling after
"$py" - "$json" "$tmp"/ceiling-*.json <<'PY'
import json, statistics, sys
runs = []
for p in sys.argv[2:]:
    try:
        runs.append(json.load(open(p)))
    except (OSError, ValueError):
        pass
if runs:
    with open(sys.argv[1]) as f:
        d = json.load(f)
    d["ceiling"] = {"value": statistics.mean(r["ceiling"] for r in runs), "runs": runs,
                    "how": "bench/ceiling.sh before and after the run: two single-thread churn processes "
                           "pinned to two CPUs at once over one alone; value = the mean of the runs"}
    with open(sys.argv[1], "w") as f:
        json.dump(d, f, indent=1)
        f.write("\n")
PY
cp "$json" "$out/runs/scale-$stamp-$rev.json"
"$py" "$root/bench/report/report.py" "$json" --out "$out"
# The recorded histories side by side (bga-replay(1), tests/data/traces):
# real programs through bgafs (a kernel tree, an aged volume, git
# checkouts, fio at random offsets, a kernel build, dbench, the exerciser)
# and Ceph-like objects to 90% full, on bgalloc, bgalloc without windows
# and libext2fs: each trace's table, its free extents by length at the
# end and its 90%-full moment, then every history side by side;
# $out/replay/NAME/replay.json and score.png a trace.
echo
# (a trace kept in parts, NAME.trace.xz.00, .01, ..., goes by its name)
parted=("$root"/tests/data/traces/*.trace.xz.00)
"$build/tools/replay/bga-replay" run "$root"/tests/data/traces/*.trace "$root"/tests/data/traces/*.trace.xz "${parted[@]%.00}" \
	-a bgalloc -a bgalloc,windows=off -a ext2 -o "$out/replay" || echo "demo: the replay failed" >&2
echo "demo: measured and reported in ${SECONDS} s; this run is also saved as $out/runs/scale-$stamp-$rev.json"
echo "demo: compare two runs with: bench/report/compare.sh OLD.json NEW.json"
