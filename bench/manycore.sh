#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# One command for a machine with many CPUs: the demo's workloads at 1, 2,
# 4, ... and nproc threads, bgalloc against the baseline (the counter:
# per-CPU against atomic), the ceiling measured before and after as the
# demo measures it (bench/ceiling.sh), and the measured curve beside the
# model's (build/demo/model.json, `make model`) where there is one.
#   bench/manycore.sh BUILD_DIR      (BUILD_DIR from cmake -DBGA_BENCH=ON)
# Writes $BGA_MANYCORE_OUT (default build/manycore): scale.json, the
# demo's report.txt and plots (bench/report/report.py), manycore.json and
# manycore.txt (measured and predicted speedup per thread count).  About
# 5 minutes on 16 CPUs: 5 thread counts, 14 cells each, 5 repetitions of
# 0.3 s, and a ceiling on each side; on 2 CPUs (threads 1 and 2) about
# one minute.  A shorter check that it runs: BGA_MANYCORE_REPS (default 5)
# repetitions of BGA_MANYCORE_SECONDS (default 0.3) each.
set -euo pipefail
build=${1:?usage: bench/manycore.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${BGA_MANYCORE_OUT:-$root/build/manycore}
scale=$build/bench/bga-scale
if [ ! -x "$scale" ]; then
	echo "manycore: $scale is missing: configure with -DBGA_BENCH=ON and build" >&2
	exit 1
fi
mkdir -p "$out"
n=$(nproc)
threads=1
for ((t = 2; t < n; t *= 2)); do threads=$threads,$t; done
[ "$n" -gt 1 ] && threads=$threads,$n
SECONDS=0
"$root/bench/ceiling.sh" "$build" "${BGA_MANYCORE_REPS:-5}" "$out/ceiling-before.json" >/dev/null || echo "manycore: no ceiling before" >&2
"$scale" -q -w churn,writers,appenders-own,script,counter -V bgalloc,baseline,percpu,atomic \
	-t "$threads" -r "${BGA_MANYCORE_REPS:-5}" -d "${BGA_MANYCORE_SECONDS:-0.3}" -j "$out/scale.json" --meta "git=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
"$root/bench/ceiling.sh" "$build" "${BGA_MANYCORE_REPS:-5}" "$out/ceiling-after.json" >/dev/null || echo "manycore: no ceiling after" >&2
/usr/bin/python3 - "$out" "$root/build/demo/model.json" <<'PY'
import json, os, statistics, sys
out, model_path = sys.argv[1], sys.argv[2]
d = json.load(open(os.path.join(out, "scale.json")))
ceil = []
for side in ("before", "after"):
    try:
        ceil.append(json.load(open(os.path.join(out, "ceiling-%s.json" % side))))
    except (OSError, ValueError, KeyError):
        pass
if ceil:
    d["ceiling"] = {"value": statistics.mean(r["ceiling"] for r in ceil), "runs": ceil,
                    "how": "bench/ceiling.sh before and after the run, as bench/scale/demo.sh"}
    json.dump(d, open(os.path.join(out, "scale.json"), "w"), indent=1)
model = {}
try:
    for r in json.load(open(model_path))["configs"]:
        model[(r["workload"], r["variant"])] = {int(k): v["speedup"] for k, v in r["cores"].items()}
except (OSError, ValueError, KeyError):
    pass
rows, lines = [], []
lines.append("measured speedup over 1 thread (median ops/s), the model's prediction beside it; ceiling %s"
             % ("%.2f" % d["ceiling"]["value"] if "ceiling" in d else "not measured"))
for wl in d["workloads"]:
    cells = {}
    for c in wl["cells"]:
        cells.setdefault(c["variant"], {})[c["threads"]] = c["median_ops_per_s"]
    for v, byt in cells.items():
        one = byt.get(1)
        for t in sorted(byt):
            s = byt[t] / one if one else None
            m = model.get((wl["name"], v), {}).get(t)
            rows.append({"workload": wl["name"], "variant": v, "threads": t, "ops_per_s": byt[t],
                         "speedup": s, "model": m})
            lines.append("%-16s %-9s %3d threads: %12.0f ops/s  x%6.2f  model x%s" % (
                wl["name"], v, t, byt[t], s or 0, "%.2f" % m if m is not None else " -"))
json.dump({"rows": rows, "ceiling": d.get("ceiling")}, open(os.path.join(out, "manycore.json"), "w"), indent=1)
open(os.path.join(out, "manycore.txt"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
/usr/bin/python3 "$root/bench/report/report.py" "$out/scale.json" --out "$out" >/dev/null || echo "manycore: the demo's report failed" >&2
echo "manycore: $threads threads measured in ${SECONDS} s; $out/manycore.txt, manycore.json, report.txt, scale.png"
