#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The allocation histories (BENCHMARKS.md#allocation-histories-bga-replay): every trace of
tests/data/traces/ played by bga-replay against bgalloc's defaults,
bgalloc with windows off and the libext2fs peer, side by side.

  bench/histories.py [--build DIR] [--out DIR] [--reps N]
      (defaults build/release, build/replay, 5)

Runs `bga-replay run TRACE -a bgalloc -a bgalloc,windows=off -a ext2
-o OUT/NAME --reps N` for each trace (each writes OUT/NAME/replay.json and
the score-over-the-trace plot OUT/NAME/score.png), then prints the table
of BENCHMARKS.md (Markdown) and, with gnuplot, draws OUT/histories.png:
extents per file (or per object) and the score at the end, per trace and
allocator.  Exit 1 when a replay fails.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

ALLOCS = [("bgalloc", "bgalloc"), ("bgalloc,windows=off", "bgalloc, windows off"), ("ext2", "libext2fs")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--out", default="build/replay")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tool = os.path.join(a.build, "examples/replay/bga-replay")
    if not os.access(tool, os.X_OK):
        sys.exit("histories: no %s (cmake --build %s --target bga-replay)" % (tool, a.build))
    rows = []
    for trace in sorted(glob.glob(os.path.join(top, "tests/data/traces/*.trace"))):
        name = os.path.basename(trace)[:-len(".trace")]
        cmd = [tool, "run", trace, "--reps", str(a.reps), "-o", os.path.join(a.out, name)]
        for spec, _ in ALLOCS:
            cmd += ["-a", spec]
        r = subprocess.run(cmd, capture_output=True, text=True)
        sys.stderr.write(r.stdout + r.stderr)
        if r.returncode:
            sys.exit("histories: %s failed (%d)" % (" ".join(cmd), r.returncode))
        with open(os.path.join(a.out, name, "replay.json")) as f:
            rows.append((name, json.load(f)))
    print("| trace | allocator | extents per file | extents per object | score at the end | "
          "Ceph's score at the end | mean score over the trace | calls/s (median of %d) |" % a.reps)
    print("|---|---|---|---|---|---|---|---|")
    for name, j in rows:
        for i, (al, (_, label)) in enumerate(zip(j["allocators"], ALLOCS)):
            first = "%s (%d records)" % (name, j["records"]) if i == 0 else ""
            print("| %s | %s | %s | %s | %.4f | %.4f | %.4f | %.1fM |" % (
                first, label,
                "%.2f" % al["extents_per_file"] if al["files"] else "-",
                "%.2f" % al["extents_per_object"] if al["objects"] else "-",
                al["end"]["score"], al["end"]["ceph_score"], al["mean_score"], al["calls_per_second"] / 1e6))
    plot(a.out, rows)


def plot(out, rows):
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        print("histories: gnuplot not found (Debian: gnuplot-nox); no PNG", file=sys.stderr)
        return
    dat, gp, png = (os.path.join(out, "histories." + x) for x in ("dat", "gp", "png"))
    with open(dat, "w") as f:
        f.write("# trace, then per allocator: extents per file or object, score at the end\n")
        for name, j in rows:
            f.write('"%s"' % name)
            for al in j["allocators"]:
                ext = al["extents_per_file"] if al["files"] else al["extents_per_object"]
                f.write(" %.4f %.4f" % (ext, al["end"]["score"]))
            f.write("\n")
    cols = len(ALLOCS)
    with open(gp, "w") as f:
        f.write("# made by bench/histories.py; run gnuplot on it to redo the PNG\n"
                "set terminal pngcairo size 1100,450 font 'DejaVu Sans,10' noenhanced\n"
                "set output '%s'\nset multiplot layout 1,2\n"
                "set style data histograms\nset style histogram clustered gap 1\n"
                "set style fill solid 0.8 border -1\nset grid ytics\nset key top left\n" % png)
        for panel, (title, off) in enumerate([("extents per file (bgafs) or object", 0), ("score at the end", 1)]):
            f.write("set title '%s'\nset yrange [0:*]\nplot " % title)
            f.write(", ".join("'%s' using %d:xtic(1) title '%s'" % (dat, 2 + 2 * k + off, ALLOCS[k][1])
                              for k in range(cols)))
            f.write("\n")
        f.write("unset multiplot\n")
    r = subprocess.run([gnuplot, gp], capture_output=True, text=True)
    if r.returncode:
        print("histories: gnuplot failed:\n" + r.stderr, file=sys.stderr)
    else:
        print("plot: %s" % png, file=sys.stderr)


if __name__ == "__main__":
    main()
