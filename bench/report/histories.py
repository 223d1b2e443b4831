#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The allocation histories (BENCHMARKS.md#allocation-histories-bga-replay): every trace of
tests/data/traces/ played by bga-replay against bgalloc's defaults,
bgalloc with windows off and the libext2fs peer, side by side.

  bench/report/histories.py [--build DIR] [--out DIR] [--reps N] [--docs DIR] [--bars] [TRACE...]
      (defaults build/release, build/replay, 5, no copies; every trace of
      tests/data/traces, .trace and .trace.xz)

Runs `bga-replay run TRACE -a bgalloc -a bgalloc,windows=off -a ext2
-o OUT/NAME --reps N` for each trace (each writes OUT/NAME/replay.json and
the score-over-the-trace plot OUT/NAME/score.png), then prints the table
of BENCHMARKS.md (Markdown): extents per file (or per object), the score
at the end and its mean over the trace, the requests placed short, the
free extents and the largest request placed whole at the end, and the
score and the largest whole request when the volume first fills to 90%;
and, with gnuplot, draws OUT/histories.png: extents per file (or per
object), the score at the end and its mean, per trace and allocator.  --docs DIR
copies each trace's plot to DIR/replay-NAME.png and the summary to
DIR/replay-histories.png (the docs/ of BENCHMARKS.md).  --bars adds
bgalloc's defaults against libext2fs on the bars of the allocation-quality
issue, a row a trace.  Exit 1 when a replay fails.
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
    ap.add_argument("--docs", help="copy the plots here as replay-NAME.png and replay-histories.png")
    ap.add_argument("--bars", action="store_true",
                    help="also print bgalloc's defaults against the peer on the bars of the allocation-quality issue")
    ap.add_argument("traces", nargs="*", help="default: every trace of tests/data/traces")
    a = ap.parse_args()
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    tool = os.path.join(a.build, "tools/replay/bga-replay")
    if not os.access(tool, os.X_OK):
        sys.exit("histories: no %s (cmake --build %s --target bga-replay)" % (tool, a.build))
    rows = []
    # a trace kept in parts (NAME.trace.xz.00, .01, ...) goes by its name
    traces = a.traces or sorted(glob.glob(os.path.join(top, "tests/data/traces/*.trace")) +
                                glob.glob(os.path.join(top, "tests/data/traces/*.trace.xz")) +
                                [p[:-3] for p in glob.glob(os.path.join(top, "tests/data/traces/*.trace.xz.00"))])
    for trace in traces:
        name = os.path.basename(trace).split(".")[0]
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
          "mean score over the trace | requests placed short (blocks) | free extents at the end | "
          "largest whole request at the end | score at 90%% full | largest whole request at 90%% full | "
          "calls/s (median of %d) |" % a.reps)
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, j in rows:
        for i, (al, (_, label)) in enumerate(zip(j["allocators"], ALLOCS)):
            first = "%s (%d records)" % (name, j["records"]) if i == 0 else ""
            full = al.get("full")
            print("| %s | %s | %s | %s | %.4f | %.4f | %d (%d) | %d | %d | %s | %s | %.1fM |" % (
                first, label,
                "%.2f" % al["extents_per_file"] if al["files"] else "-",
                "%.2f" % al["extents_per_object"] if al["objects"] else "-",
                al["end"]["score"], al["mean_score"], al["failures"] + al["partial"], al["short_blocks"],
                al["end"]["free_extents"], al["end"]["largest_whole_request"],
                "%.4f" % full["score"] if full else "-",
                "%d" % full["largest_whole_request"] if full else "-",
                al["calls_per_second"] / 1e6))
    print("\n(blocks of 4 KiB in the bgafs traces, 64 KiB in objects; a largest whole request is at most a "
          "group, 32768 blocks; '-' at 90%: the trace never fills to 90%; most in use: " +
          ", ".join("%s %.0f%%" % (name, 100.0 * j["peak_used"] / j["capacity"]) for name, j in rows) + ")")
    plot(a.out, rows)
    if a.bars:
        bars(rows)
    if a.docs:
        for name, _ in rows:
            copy(os.path.join(a.out, name, "score.png"), os.path.join(a.docs, "replay-%s.png" % name))
        copy(os.path.join(a.out, "histories.png"), os.path.join(a.docs, "replay-histories.png"))


def bars(rows):
    """bgalloc's defaults (the first allocator) against libext2fs (the last)
    on each bar: extents per file at most 1.05 and at most the peer's;
    the score at the end at most the peer's (objects: at most 3x); the
    mean score at most twice the peer's or at most 0.05; no more requests
    placed short than the peer."""
    print("\n| trace | extents per file (<= 1.05, <= peer) | score at the end (<= peer) | "
          "mean score (<= 2x peer or <= 0.05) | requests placed short (<= peer) |")
    print("|---|---|---|---|---|")
    for name, j in rows:
        b, p = j["allocators"][0], j["allocators"][-1]
        cells = []
        if b["files"]:
            ext, pext = b["extents_per_file"], p["extents_per_file"]
            cells.append((ext <= 1.05 and ext <= pext, "%.2f / %.2f" % (ext, pext)))
        else:
            cells.append((True, "- (objects)"))
        k = 3 if not b["files"] else 1
        cells.append((b["end"]["score"] <= k * p["end"]["score"] + 1e-9,
                      "%.4f / %.4f%s" % (b["end"]["score"], p["end"]["score"], " (x3)" if k == 3 else "")))
        cells.append((b["mean_score"] <= max(2 * p["mean_score"], 0.05),
                      "%.4f / %.4f" % (b["mean_score"], p["mean_score"])))
        bs, ps = b["failures"] + b["partial"], p["failures"] + p["partial"]
        cells.append((bs <= ps, "%d / %d" % (bs, ps)))
        print("| %s | %s |" % (name, " | ".join(("" if ok else "**miss** ") + text for ok, text in cells)))
    print("(bgalloc / libext2fs; **miss**: the bar is not met)")


def copy(src, dst):
    if os.path.exists(src):
        shutil.copyfile(src, dst)
        print("copied: %s" % dst, file=sys.stderr)
    else:
        print("histories: no %s to copy (gnuplot missing?)" % src, file=sys.stderr)


def plot(out, rows):
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        print("histories: gnuplot not found (Debian: gnuplot-nox); no PNG", file=sys.stderr)
        return
    dat, gp, png = (os.path.join(out, "histories." + x) for x in ("dat", "gp", "png"))
    with open(dat, "w") as f:
        f.write("# trace, then per allocator: extents per file or object, score at the end, mean score\n")
        for name, j in rows:
            f.write('"%s"' % name)
            for al in j["allocators"]:
                ext = al["extents_per_file"] if al["files"] else al["extents_per_object"]
                f.write(" %.4f %.4f %.4f" % (ext, al["end"]["score"], al["mean_score"]))
            f.write("\n")
    cols = len(ALLOCS)
    with open(gp, "w") as f:
        f.write("# made by bench/report/histories.py; run gnuplot on it to redo the PNG\n"
                "set terminal pngcairo size 1500,500 font 'DejaVu Sans,10' noenhanced\n"
                "set output '%s'\nset multiplot layout 1,3\n"
                "set style data histograms\nset style histogram clustered gap 1\n"
                "set style fill solid 0.8 border -1\nset grid ytics\nset key top right\n"
                "set xtics rotate by -35\nset bmargin 6\n" % png)
        panels = [("extents per file (bgafs) or object, log scale", 0, "set logscale y\nset yrange [0.9:*]\n"),
                  ("score at the end", 1, "unset logscale y\nset yrange [0:*]\nunset key\n"),
                  ("mean score over the trace", 2, "set yrange [0:*]\n")]
        for title, off, setup in panels:
            f.write("set title '%s'\n%splot " % (title, setup))
            f.write(", ".join("'%s' using %d:xtic(1) title '%s'" % (dat, 2 + 3 * k + off, ALLOCS[k][1])
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
