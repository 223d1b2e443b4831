#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Tables, statistics and plots for bga-scale results (bench/scale/scale.c).

  report.py RESULT.json [--out DIR] [--no-plot] [--alpha A]
      Print one table per workload in the layout of the classic kernel
      scalability reports (rows = threads, columns = variants, throughput
      as a percentage of the baseline with the spread of the repetitions
      and a Mann-Whitney U test against the baseline), the counter table,
      every 2-thread/1-thread ratio also as a fraction of the machine's
      ceiling C (two independent single-thread processes over one alone,
      measured in the same run by bench/scale/demo.sh: the JSON's "ceiling"; or
      --ceiling C), the scaling under oversubscription and the project's
      targets.  The plots draw the ceiling: C times each variant's
      1-thread figure.
      Writes DIR/report.txt, DIR/summary.json, and with gnuplot
      DIR/scale.png (every workload) and DIR/scale-<workload>.png.

  report.py --compare OLD.json NEW.json [--alpha A] [--fail-on-regression PCT]
      Per-cell change between two results and whether it is significant
      (Mann-Whitney U on the raw repetitions), for before/after and
      bisection.  With --fail-on-regression, exits 1 when some cell got
      significantly slower by more than PCT percent (git bisect run: 0 good,
      1 bad).

Python 3 with scipy (Debian python3-scipy).  Why Mann-Whitney U: it
assumes nothing about the shape of the noise, which on a shared 2-core
machine is anything but normal (a repetition that lost the CPU to another
process is an outlier, not a sample from a bell).  With 5 repetitions per
side the smallest two-sided p it can give is 2/252 = 0.0079, so p < 0.05
is reachable; with 3 it is 0.1 and nothing can be called significant.
"""
import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys

try:
    import numpy as np
    from scipy.stats import mannwhitneyu
except ImportError as e:  # pragma: no cover - a setup problem, said plainly
    sys.exit("report.py: needs scipy (Debian: apt-get install python3-scipy; "
             "run it with /usr/bin/python3): %s" % e)


# ---- statistics ----------------------------------------------------------

def median(xs):
    return float(np.median(xs)) if len(xs) else float("nan")


def cv_pct(xs):
    """Sample standard deviation as a percentage of the mean."""
    if len(xs) < 2:
        return float("nan")
    m = float(np.mean(xs))
    return float(np.std(xs, ddof=1)) / m * 100 if m else float("nan")


def mwu(a, b):
    """Two-sided Mann-Whitney U p-value, or nan when it cannot be computed."""
    if len(a) < 1 or len(b) < 1:
        return float("nan")
    if len(set(a) | set(b)) == 1:
        return 1.0
    return float(mannwhitneyu(a, b, alternative="two-sided").pvalue)


def min_mwu_p(n1, n2):
    """The smallest two-sided p an exact U test can reach with these sizes."""
    return 2.0 / math.comb(n1 + n2, n1) if n1 and n2 else 1.0


def ratio_ci(num, den, n=4000, seed=1):
    """Percentile bootstrap 95% interval of median(num) / median(den)."""
    if len(num) < 2 or len(den) < 2:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    a = rng.choice(np.asarray(num, float), (n, len(num)))
    b = rng.choice(np.asarray(den, float), (n, len(den)))
    r = np.median(a, axis=1) / np.median(b, axis=1)
    return (float(np.percentile(r, 2.5)), float(np.percentile(r, 97.5)))


def fmt_rate(x):
    if not x == x:
        return "-"
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= div:
            return "%.3g%s" % (x / div, unit)
    return "%.3g" % x


def fmt_p(p):
    if not p == p:
        return "p=  -  "
    return "p=%.4f" % p if p >= 0.0001 else "p<.0001"


# ---- loading -------------------------------------------------------------

def load(path):
    with open(path) as f:
        d = json.load(f)
    if d.get("tool") != "bga-scale":
        sys.exit("report.py: %s is not a bga-scale result" % path)
    return d


def cells_by_key(d):
    """{(workload, variant, threads): cell}"""
    out = {}
    for w in d["workloads"]:
        for c in w["cells"]:
            out[(w["name"], c["variant"], c["threads"])] = c
    return out


# ---- the report ------------------------------------------------------------

def ceiling_of(d, override=None):
    """The machine's ceiling C for d: --ceiling, the JSON's "ceiling" (from
    bench/scale/demo.sh), or a --meta ceiling=C given to bga-scale; None if none."""
    if override:
        return override
    c = (d.get("ceiling") or {}).get("value")
    if c is None:
        try:
            c = float((d.get("meta") or {}).get("ceiling"))
        except (TypeError, ValueError):
            c = None
    return c if c and c > 0 else None


def speedup(cells, v, hi=2, lo=1):
    """median(v at hi threads) / median(v at lo threads), or None."""
    a, b = cells.get((v, hi)), cells.get((v, lo))
    if not a or not b or not median(b["ops_per_s"]):
        return None
    return median(a["ops_per_s"]) / median(b["ops_per_s"])


def fmt_vs_ceiling(r, c):
    """'1.71x = 0.94 C' (or '1.71x' without a ceiling)."""
    if r is None:
        return "-"
    return "%.2fx = %.2f C" % (r, r / c) if c else "%.2fx" % r


class Report:
    def __init__(self, d, alpha, ceiling=None):
        self.d = d
        self.alpha = alpha
        self.ceiling = ceiling_of(d, ceiling)
        self.lines = []
        self.summary = {"alpha": alpha, "test": "Mann-Whitney U, two-sided, scipy.stats.mannwhitneyu",
                        "ceiling": self.ceiling, "workloads": {}, "scaling": [], "targets": []}

    def p(self, s=""):
        self.lines.append(s)

    def header(self):
        d, cfg, m = self.d, self.d["config"], self.d["machine"]
        self.p("bga-scale: allocator scalability, %s" % d["started"])
        self.p("machine: %d CPUs online (%s), Linux %s %s" % (m["nproc"], m["cpu_model"], m["kernel"], m["arch"]))
        xfer = m.get("line_transfer_ns")
        if xfer and min(xfer) > 0:
            self.p("         one cache line between the first two CPUs: %.0f ns at the start, %.0f ns at the end"
                   % tuple(xfer))
            self.p("         (bench/support/xfer.h; every cell whose threads share lines moves with it)")
        if m.get("counter_path"):
            self.p("counter: per-CPU adds on %s, CPU-id source %s (bga_counter_mode_name)"
                   % (m["counter_path"], m.get("cpu_source", "?")))
        runs = (d.get("ceiling") or {}).get("runs") or []
        if self.ceiling:
            self.p("ceiling: C = %.2fx: two independent single-thread processes at once over one alone%s"
                   % (self.ceiling, " (bench/ceiling.sh, runs: %s)" % ", ".join("%.2fx" % r["ceiling"] for r in runs)
                      if runs else ""))
            self.p("         the most any 2-thread figure can reach on this machine now; '0.94 C' = 94% of it")
        else:
            self.p("ceiling: not measured (bench/scale/demo.sh measures it; report.py --ceiling C to give one)")
        meta = d.get("meta") or {}
        if meta:
            self.p("build: " + ", ".join("%s=%s" % kv for kv in sorted(meta.items())))
        self.p("method: each cell is the median of %d repetitions of %g s (fixed wall time, start barrier, "
               "repetitions interleaved across variants);" % (cfg["reps"], cfg["duration_s"]))
        self.p("        ops/s = all threads' operations / (stop signal - first thread's start).  sd = standard deviation "
               "of the repetitions, % of their mean.")
        self.p("        p = Mann-Whitney U, two-sided, against the baseline column; sig = p < %g." % self.alpha)
        self.p("        threads beyond %d are oversubscription (%d CPUs): measured all the same."
               % (m["nproc"], m["nproc"]))
        if cfg.get("pinning") == "round-robin":
            self.p("        workers are bound round-robin to the %d allowed CPUs (as will-it-scale binds its "
                   "tasks); --no-pin to unbind." % cfg.get("cpus_allowed", m["nproc"]))
        elif cfg.get("pinning"):
            self.p("        workers are not bound to CPUs (--no-pin).")
        self.p("        cpu = CPU time the process got in the window / (window x min(threads, CPUs)); well below "
               "100% means")
        self.p("        other work shared the machine, and the cell measured the scheduler as much as the "
               "allocator.")
        shares = [x for w in d["workloads"] for c in w["cells"] for x in c.get("cpu_share", [])]
        if shares and median(shares) < 0.8:
            self.p("        WARNING: median cpu share of this run is %.0f%%: the machine was busy; expect noise "
                   "and weak contention." % (median(shares) * 100))
        if cfg.get("timer_policy") and cfg["timer_policy"] != "SCHED_FIFO":
            self.p("        (timer thread not SCHED_FIFO: repetitions may run longer than %g s under "
                   "oversubscription; figures unaffected)" % cfg["duration_s"])
        if cfg["reps"] < 4:
            self.p("        NOTE: with %d repetitions the smallest possible p is %.3f: nothing can be "
                   "significant at %g." % (cfg["reps"], min_mwu_p(cfg["reps"], cfg["reps"]), self.alpha))
        self.p("        Many cells are tested: at p < %g about one in twenty true non-differences will "
               "still read 'sig'." % self.alpha)
        seen = {v for w in d["workloads"] for v in w["variants"]}
        if d.get("variants"):
            self.p("variants:")
            for v, doc in d["variants"].items():
                if v in seen:
                    self.p("  %-14s %s" % (v, doc))
        self.p()

    def workload_table(self, w):
        name, base, variants = w["name"], w["baseline"], w["variants"]
        cells = {(c["variant"], c["threads"]): c for c in w["cells"]}
        threads = sorted({c["threads"] for c in w["cells"]})
        others = [v for v in variants if v != base]
        have_base = base in variants
        ws = {"title": w["title"], "baseline": base, "rows": []}

        self.p("=" * 100)
        self.p("%s: %s" % (name, w["title"]))
        self.p("one op = %s; throughput as %% of %s (= 100%%), sd in %%, p vs %s" % (w["op"], base, base))
        if w.get("notes"):
            self.p("(%s)" % w["notes"])
        self.p("-" * 100)
        colw = 29
        hdr = "threads |" + "".join(("%-*s" % (colw, " " + v)) for v in ([base] if have_base else []) + others)
        self.p(hdr)
        sub = "        |"
        if have_base:
            sub += "%-*s" % (colw, "  tput    sd")
        for _ in others:
            sub += "%-*s" % (colw, "  tput    sd   p       sig")
        self.p(sub)
        for t in threads:
            bc = cells.get((base, t))
            bx = bc["ops_per_s"] if bc else []
            bm = median(bx)
            line = "%7d |" % t
            row = {"threads": t, "variants": {}}
            if have_base:
                line += "%-*s" % (colw, " %6.1f%% %5.1f" % (100.0 if bc else float("nan"), cv_pct(bx)))
                row["variants"][base] = {"median": bm, "sd_pct": cv_pct(bx), "pct_of_baseline": 100.0,
                                         "ops_per_s": bx}
            for v in others:
                c = cells.get((v, t))
                if not c:
                    line += "%-*s" % (colw, " %10s" % "-")
                    continue
                x = c["ops_per_s"]
                vm = median(x)
                pct = vm / bm * 100 if bm else float("nan")
                pv = mwu(x, bx) if bx else float("nan")
                sig = "-" if pv != pv else ("sig" if pv < self.alpha else "ns")
                line += "%-*s" % (colw, " %6.1f%% %5.1f %s %s" % (pct, cv_pct(x), fmt_p(pv), sig))
                row["variants"][v] = {"median": vm, "sd_pct": cv_pct(x), "pct_of_baseline": pct, "p": pv,
                                      "significant": bool(pv < self.alpha), "ops_per_s": x}
            ws["rows"].append(row)
            self.p(line)
        self.p("-" * 100)
        self.p("median ops/s (cpu: share of the CPUs the run got, see above):")
        for t in threads:
            line = "%7d |" % t
            for v in ([base] if have_base else []) + others:
                c = cells.get((v, t))
                if c:
                    cpu = c.get("cpu_share")
                    cs = "  cpu %3.0f%%" % (median(cpu) * 100) if cpu else ""
                    line += "%-*s" % (colw, " %10s%s" % (fmt_rate(median(c["ops_per_s"])), cs))
                else:
                    line += "%-*s" % (colw, " %10s" % "-")
            self.p(line)
        for key, label in (("lock_wait_pct", "lock acquisitions in the window that found the lock held, % (median):"),
                           ("rsv_hit_pct", "allocations served from the file's window, % (median):")):
            if not any(key in c for c in w["cells"]):
                continue
            self.p(label)
            for t in threads:
                line = "%7d |" % t
                for v in ([base] if have_base else []) + others:
                    c = cells.get((v, t))
                    line += "%-*s" % (colw, " %10.2f" % median(c[key]) if c and key in c else " %10s" % "-")
                self.p(line)
        if any("median_extents_per_file" in c for c in w["cells"]):
            self.p("extents per completed file (median; 1.0 = every file contiguous):")
            for t in threads:
                line = "%7d |" % t
                for v in ([base] if have_base else []) + others:
                    c = cells.get((v, t))
                    e = c.get("median_extents_per_file") if c else None
                    line += "%-*s" % (colw, " %10.2f" % e if e is not None else " %10s" % "-")
                    if e is not None:
                        for row in ws["rows"]:
                            if row["threads"] == t and v in row["variants"]:
                                row["variants"][v]["extents_per_file"] = e
                self.p(line)
        if 1 in threads and 2 in threads:
            self.p("scaling: 2 threads over 1%s; 64 threads as %% of 2:" % (
                " (C = %.2fx, this run's ceiling)" % self.ceiling if self.ceiling else ""))
            for v in ([base] if have_base else []) + others:
                r, r64 = speedup(cells, v), speedup(cells, v, 64, 2)
                if r is None:
                    continue
                self.p("  %-14s 2T/1T %-16s%s" % (v, fmt_vs_ceiling(r, self.ceiling),
                                                  "  64T/2T %5.1f%%" % (r64 * 100) if r64 is not None else ""))
        errs = sum(c.get("errors", 0) for c in w["cells"])
        if errs:
            self.p("WARNING: %d failed allocator calls in this workload (see the JSON's 'errors')" % errs)
        self.p()
        self.summary["workloads"][name] = ws

    def ceiling_table(self):
        """Every workload and variant: 1, 2, 16, 64 threads, 2T/1T against C,
        extents per file at 16 threads, 64T/2T."""
        rows = []
        for w in self.d["workloads"]:
            cells = {(c["variant"], c["threads"]): c for c in w["cells"]}
            for v in w["variants"]:
                r = speedup(cells, v)
                if r is None:
                    continue
                r64 = speedup(cells, v, 64, 2)
                e16 = (cells.get((v, 16)) or {}).get("median_extents_per_file")
                rate = [fmt_rate(median(cells[(v, t)]["ops_per_s"])) if (v, t) in cells else "-"
                        for t in (1, 2, 16, 64)]
                rows.append("%-16s %-14s %7s %7s %7s %7s  %6.2fx %6s  %8s  %6s" % (
                    w["name"], v, *rate, r, "%.2f" % (r / self.ceiling) if self.ceiling else "-",
                    "%.2f" % e16 if e16 is not None else "-", "%.0f%%" % (r64 * 100) if r64 is not None else "-"))
                self.summary["scaling"].append({
                    "workload": w["name"], "variant": v, "two_over_one": r,
                    "fraction_of_ceiling": r / self.ceiling if self.ceiling else None,
                    "t64_over_t2": r64, "extents_per_file_16": e16})
        if not rows:
            return
        self.p("=" * 100)
        self.p("Scaling against the machine's ceiling (C = %s): median ops/s at 1, 2, 16 and 64 threads;"
               % ("%.2fx" % self.ceiling if self.ceiling else "not measured"))
        self.p("2T/1T, and as a fraction of C; extents per completed file at 16 threads; 64 threads as % of 2")
        self.p("-" * 100)
        self.p("%-16s %-14s %7s %7s %7s %7s  %7s %6s  %8s  %6s" % ("workload", "variant", "1T", "2T", "16T", "64T",
                                                                "2T/1T", "of C", "ext@16T", "64/2T"))
        for r in rows:
            self.p(r)
        self.p()

    def scaling_table(self):
        """Throughput at high thread counts as a share of the 2-thread figure."""
        rows = []
        for w in self.d["workloads"]:
            cells = {(c["variant"], c["threads"]): c for c in w["cells"]}
            threads = sorted({c["threads"] for c in w["cells"]})
            if 2 not in threads:
                continue
            for v in w["variants"]:
                ref = cells.get((v, 2))
                if not ref:
                    continue
                parts = []
                for t in (64, 128):
                    c = cells.get((v, t))
                    if not c:
                        continue
                    pct = median(c["ops_per_s"]) / median(ref["ops_per_s"]) * 100
                    parts.append("%3d: %6.1f%% %s" % (t, pct, fmt_p(mwu(c["ops_per_s"], ref["ops_per_s"]))))
                if parts:
                    rows.append("%-16s %-14s %s" % (w["name"], v, "   ".join(parts)))
        if not rows:
            return
        self.p("=" * 100)
        self.p("Oversubscription: throughput at 64 and 128 threads as % of the same variant at 2 threads")
        self.p("(p: Mann-Whitney U of the repetitions at N threads against those at 2; a collapse is a small %)")
        self.p("-" * 100)
        for r in rows:
            self.p(r)
        self.p()

    def target(self, desc, value, ok, extra):
        self.summary["targets"].append({"target": desc, "value": value, "met": ok, **extra})
        return ok

    def targets(self):
        by = cells_by_key(self.d)
        self.p("=" * 100)
        self.p("Targets")
        self.p("-" * 100)
        b2, g2 = by.get(("churn", "baseline", 2)), by.get(("churn", "bgalloc", 2))
        if b2 and g2:
            pct = median(g2["ops_per_s"]) / median(b2["ops_per_s"]) * 100
            pv = mwu(g2["ops_per_s"], b2["ops_per_s"])
            lo, hi = ratio_ci(g2["ops_per_s"], b2["ops_per_s"])
            ok = pct >= 180 and pv < self.alpha
            self.target("churn, 2 threads: bgalloc >= 180% of baseline, p < 0.05", pct, ok,
                        {"p": pv, "ci95": [lo * 100, hi * 100]})
            self.p("churn @ 2 threads: bgalloc = %.1f%% of baseline (bootstrap 95%% CI %.0f%%..%.0f%%), "
                   "Mann-Whitney %s  -> %s (needs >= 180%%, p < %g)"
                   % (pct, lo * 100, hi * 100, fmt_p(pv), "MET" if ok else "NOT MET", self.alpha))
        else:
            self.p("churn @ 2 threads: not measured (needs -w churn, -t including 2)")
        g64 = by.get(("churn", "bgalloc", 64))
        if g2 and g64:
            pct = median(g64["ops_per_s"]) / median(g2["ops_per_s"]) * 100
            pv = mwu(g64["ops_per_s"], g2["ops_per_s"])
            lo, hi = ratio_ci(g64["ops_per_s"], g2["ops_per_s"])
            ok = pct >= 80
            self.target("churn, bgalloc at 64 threads >= 80% of its own 2-thread throughput", pct, ok,
                        {"p_vs_2_threads": pv, "ci95": [lo * 100, hi * 100]})
            self.p("churn @ 64 threads: bgalloc = %.1f%% of its 2-thread throughput (bootstrap 95%% CI "
                   "%.0f%%..%.0f%%; 64 vs 2 threads %s)  -> %s (needs >= 80%%)"
                   % (pct, lo * 100, hi * 100, fmt_p(pv), "MET" if ok else "NOT MET"))
        else:
            self.p("churn @ 64 threads: not measured (needs -w churn, -t including 2 and 64)")
        self.ceiling_targets(by)
        self.p()

    def ceiling_targets(self, by):
        """Issue 13's: appenders against the ceiling, windows at 1 thread,
        and 64 threads against 2 in every workload."""
        c = self.ceiling

        def vs_c(wl, v, need):
            r = speedup({(vv, t): x for (w, vv, t), x in by.items() if w == wl}, v)
            desc = "%s, %s: 2T/1T >= %.2f C" % (wl, v, need)
            if r is None:
                self.p("%s @ 2 threads, %s: not measured (needs -w %s, -t including 1 and 2)" % (wl, v, wl))
            elif not c:
                self.p("%s @ 2 threads, %s: 2T/1T %.2fx; no ceiling measured, so no verdict (needs >= %.2f C)"
                       % (wl, v, r, need))
            else:
                ok = r / c >= need
                self.target(desc, r / c, ok, {"two_over_one": r, "ceiling": c})
                self.p("%s @ 2 threads, %s: 2T/1T %s  -> %s (needs >= %.2f C)"
                       % (wl, v, fmt_vs_ceiling(r, c), "MET" if ok else "NOT MET", need))

        for v in ("bgalloc", "bgalloc-nowin"):
            vs_c("appenders-own", v, 0.9)
        vs_c("appenders-shared", "bgalloc", 0.75)
        e = by.get(("appenders-shared", "bgalloc", 16))
        if e and "median_extents_per_file" in e:
            x = e["median_extents_per_file"]
            ok = x <= 1.5
            self.target("appenders-shared, bgalloc: extents per file at 16 threads <= 1.5", x, ok, {})
            self.p("appenders-shared @ 16 threads, bgalloc: %.2f extents per file  -> %s (needs <= 1.5)"
                   % (x, "MET" if ok else "NOT MET"))
        for wl in ("appenders-own", "appenders-shared"):
            win, nowin = by.get((wl, "bgalloc", 1)), by.get((wl, "bgalloc-nowin", 1))
            if not win or not nowin:
                continue
            pct = median(win["ops_per_s"]) / median(nowin["ops_per_s"]) * 100
            pv = mwu(win["ops_per_s"], nowin["ops_per_s"])
            ok = pct >= 100
            self.target("%s @ 1 thread: an append through a window costs no more than one without" % wl, pct, ok,
                        {"p": pv})
            self.p("%s @ 1 thread: bgalloc (window) = %.1f%% of bgalloc-nowin (%s, %s)  -> %s (needs >= 100%%)"
                   % (wl, pct, fmt_p(pv), "significant" if pv < self.alpha else "not significant",
                      "MET" if ok else "NOT MET"))
        # every workload's own variants: the library's, not the peers'
        ours = ("bgalloc", "bgalloc-nowin", "percpu")
        for w in self.d["workloads"]:
            for v in w["variants"]:
                a, b = by.get((w["name"], v, 64)), by.get((w["name"], v, 2))
                if v not in ours or not a or not b:
                    continue
                pct = median(a["ops_per_s"]) / median(b["ops_per_s"]) * 100
                ok = pct >= 80
                self.target("%s, %s: 64 threads >= 80%% of 2" % (w["name"], v), pct, ok, {})
                self.p("%s @ 64 threads, %s: %.1f%% of its 2-thread throughput  -> %s (needs >= 80%%)"
                       % (w["name"], v, pct, "MET" if ok else "NOT MET"))

    def build(self):
        self.header()
        for w in self.d["workloads"]:
            self.workload_table(w)
        self.ceiling_table()
        self.scaling_table()
        self.targets()
        return "\n".join(self.lines) + "\n"


# ---- plots ---------------------------------------------------------------

PALETTE = {"bgalloc": "#1f77b4", "baseline": "#d62728", "ext2": "#2ca02c", "bgalloc-nowin": "#9467bd",
           "percpu": "#1f77b4", "atomic": "#d62728"}


def gp_quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def plot(d, out, ceiling=None):
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        print("report.py: gnuplot not found (Debian: gnuplot-nox); no PNG", file=sys.stderr)
        return []
    nproc = d["machine"]["nproc"]
    panels = []
    ymax = {}
    for w in d["workloads"]:
        threads = sorted({c["threads"] for c in w["cells"]})
        cells = {(c["variant"], c["threads"]): c for c in w["cells"]}
        dat = os.path.join(out, "plot-%s.dat" % w["name"])
        scale = 1e6
        with open(dat, "w") as f:
            f.write("# threads, then per variant: median min max (Mops/s): %s; then per variant the ceiling "
                    "(1 thread's median, C times it from 2 threads on; NaN past 2 threads on a machine of more "
                    "than 2 CPUs, where C says nothing)\n" % " ".join(w["variants"]))
            for t in threads:
                cols = [str(t)]
                for v in w["variants"]:
                    c = cells.get((v, t))
                    if c:
                        x = c["ops_per_s"]
                        cols += ["%.6g" % (median(x) / scale), "%.6g" % (min(x) / scale), "%.6g" % (max(x) / scale)]
                    else:
                        cols += ["NaN"] * 3
                for v in w["variants"]:
                    one = cells.get((v, 1))
                    k = 1 if t == 1 else ceiling if ceiling and (t == 2 or nproc <= 2) else None
                    cols.append("%.6g" % (median(one["ops_per_s"]) * k / scale) if one and k else "NaN")
                f.write(" ".join(cols) + "\n")
                vals = [float(x) for x in cols[1:] if x != "NaN"]
                if vals:
                    ymax[w["name"]] = max(ymax.get(w["name"], 0), max(vals))
        panels.append((w, dat, threads))
    if not panels:
        return []

    def panel_cmds(w, dat, threads, small):
        lines = []
        title = "%s: %s" % (w["name"], w["title"])
        if small and len(title) > 60:
            title = title[:57] + "..."
        lines.append("set title %s" % gp_quote(title))
        lines.append("set logscale x 2")
        lines.append("set xrange [%g:%g]" % (threads[0] / 1.3, threads[-1] * 1.3))
        lines.append("set xtics (%s)" % ", ".join('"%d" %d' % (t, t) for t in threads))
        # The top is set from the data, ceilings included, so no line
        # leaves the frame; the key sits outside the plotted area, right of
        # it, so no line runs under it.
        lines.append("set yrange [0:%g]" % (ymax[w["name"]] * 1.08 if ymax.get(w["name"]) else 1))
        lines.append("set xlabel 'threads (log2)'")
        lines.append("set ylabel 'Mops/s (median; bars: min..max)'")
        lines.append("set grid")
        lines.append("set key outside right top vertical Left reverse box")
        lines.append("unset arrow")
        lines.append("unset label")
        if threads[0] <= nproc <= threads[-1]:
            lines.append("set arrow from %d, graph 0 to %d, graph 1 nohead dt 2 lc 'gray40'" % (nproc, nproc))
            lines.append("set label 'CPUs = %d' at %d, graph 0.05 offset 0.5,0 tc 'gray40'" % (nproc, nproc))
        plots = []
        for i, v in enumerate(w["variants"]):
            col = 2 + 3 * i
            color = PALETTE.get(v, "black")
            plots.append("%s using 1:%d:%d:%d with yerrorlines lw 2 pt 7 ps 0.8 lc rgb '%s' title %s"
                         % (gp_quote(dat), col, col + 1, col + 2, color, gp_quote(v)))
        if ceiling and 1 in threads:
            # the ceiling's line per variant: where its 1-thread figure
            # would go if it scaled as two independent processes do
            for i, v in enumerate(w["variants"]):
                col = 2 + 3 * len(w["variants"]) + i
                title = gp_quote("ceiling: C x 1 thread, C=%.2f" % ceiling) if i == 0 else "notitle"
                plots.append("%s using 1:%d with linespoints dt 2 lw 1 pt 6 ps 0.6 lc rgb '%s' %s"
                             % (gp_quote(dat), col, PALETTE.get(v, "black"),
                                "title " + title if i == 0 else title))
        lines.append("plot " + ", \\\n     ".join(plots))
        return lines

    script = ["# made by bench/report/report.py; run with gnuplot to redo the PNGs", "set encoding utf8"]
    files = []
    for w, dat, threads in panels:
        png = os.path.join(out, "scale-%s.png" % w["name"])
        script.append("set terminal pngcairo size 1000,650 font 'DejaVu Sans,11' noenhanced")
        script.append("set output %s" % gp_quote(png))
        script += panel_cmds(w, dat, threads, False)
        script.append("unset output")
        files.append(png)
    ncol = 3 if len(panels) > 4 else 2 if len(panels) > 1 else 1
    nrow = (len(panels) + ncol - 1) // ncol
    png = os.path.join(out, "scale.png")
    script.append("set terminal pngcairo size %d,%d font 'DejaVu Sans,10' noenhanced" % (700 * ncol, 480 * nrow))
    script.append("set output %s" % gp_quote(png))
    script.append("set multiplot layout %d,%d title %s" % (
        nrow, ncol, gp_quote("bga-scale, %d CPUs (%s), median of %d x %g s" % (
            nproc, d["machine"]["cpu_model"], d["config"]["reps"], d["config"]["duration_s"]))))
    for w, dat, threads in panels:
        script += panel_cmds(w, dat, threads, True)
    script.append("unset multiplot")
    script.append("unset output")
    files.insert(0, png)
    gp = os.path.join(out, "scale.gp")
    with open(gp, "w") as f:
        f.write("\n".join(script) + "\n")
    r = subprocess.run([gnuplot, gp], capture_output=True, text=True)
    if r.returncode:
        print("report.py: gnuplot failed:\n" + r.stderr, file=sys.stderr)
        return []
    return files


# ---- compare ---------------------------------------------------------------

def compare(old_path, new_path, alpha, fail_pct):
    a, b = load(old_path), load(new_path)
    ca, cb = cells_by_key(a), cells_by_key(b)

    def ident(d, path):
        meta = d.get("meta") or {}
        rev = meta.get("git", "?")
        return "%s (%s, %s, %d CPUs, %d reps x %g s)" % (path, rev, d["started"], d["machine"]["nproc"],
                                                       d["config"]["reps"], d["config"]["duration_s"])

    print("old: " + ident(a, old_path))
    print("new: " + ident(b, new_path))
    for k in ("nproc", "cpu_model", "kernel"):
        if a["machine"].get(k) != b["machine"].get(k):
            print("WARNING: machine differs in %s: %r vs %r" % (k, a["machine"].get(k), b["machine"].get(k)))
    for k in ("duration_s", "volume_blocks", "append_blocks", "working_set", "file_blocks", "commit_every"):
        if a["config"].get(k) != b["config"].get(k):
            print("WARNING: config differs in %s: %r vs %r" % (k, a["config"].get(k), b["config"].get(k)))
    sa = [x for w in a["workloads"] for c in w["cells"] for x in c.get("cpu_share", [])]
    sb = [x for w in b["workloads"] for c in w["cells"] for x in c.get("cpu_share", [])]
    if sa and sb and abs(median(sa) - median(sb)) > 0.2:
        print("WARNING: the two runs got different shares of the CPUs (median %.0f%% vs %.0f%%): other load "
              "on the machine differed, and so will the figures" % (median(sa) * 100, median(sb) * 100))
    print("change = median(new) / median(old) - 1; p = Mann-Whitney U, two-sided, on the raw repetitions; "
          "alpha = %g" % alpha)
    print()
    keys = [k for k in ca if k in cb]
    if not keys:
        print("no cell in common")
        return 2
    order = {w["name"]: i for i, w in enumerate(b["workloads"])}
    keys.sort(key=lambda k: (order.get(k[0], 99), k[1], k[2]))
    print("%-16s %-14s %7s %12s %12s %9s %9s  %s" % ("workload", "variant", "threads", "old ops/s", "new ops/s",
                                                   "change", "p", "verdict"))
    worst, nsig_up, nsig_down, regress = 0.0, 0, 0, []
    for k in keys:
        xo, xn = ca[k]["ops_per_s"], cb[k]["ops_per_s"]
        mo, mn = median(xo), median(xn)
        ch = (mn / mo - 1) * 100 if mo else float("nan")
        pv = mwu(xn, xo)
        if pv < alpha and ch < 0:
            verdict = "SLOWER"
            nsig_down += 1
            if fail_pct is not None and -ch > fail_pct:
                regress.append(k)
                verdict += "  <- regression"
        elif pv < alpha:
            verdict = "faster"
            nsig_up += 1
        else:
            verdict = "no significant change"
        worst = min(worst, ch)
        print("%-16s %-14s %7d %12s %12s %+8.1f%% %9s  %s" % (k[0], k[1], k[2], fmt_rate(mo), fmt_rate(mn), ch,
                                                            fmt_p(pv)[2:] if pv == pv else "-", verdict))
    print()
    reps = min(len(ca[k]["ops_per_s"]) for k in keys), min(len(cb[k]["ops_per_s"]) for k in keys)
    print("%d cells compared: %d significantly faster, %d significantly slower (smallest reachable p with %d vs "
          "%d repetitions: %.4f; at alpha %g expect ~%.1f false calls by chance)"
          % (len(keys), nsig_up, nsig_down, reps[0], reps[1], min_mwu_p(*reps), alpha, alpha * len(keys)))
    missing = sorted(set(ca) ^ set(cb))
    if missing:
        print("%d cells in only one of the two results (not compared)" % len(missing))
    if regress:
        print("regression: %d cells significantly slower by more than %g%%" % (len(regress), fail_pct))
        return 1
    return 0


# ---- main --------------------------------------------------------------------

def no_nan(x):
    """NaN is not JSON: null instead."""
    if isinstance(x, float) and x != x:
        return None
    if isinstance(x, dict):
        return {k: no_nan(v) for k, v in x.items()}
    if isinstance(x, list):
        return [no_nan(v) for v in x]
    return x


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends quietly
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("result", nargs="?", help="bga-scale JSON")
    ap.add_argument("--out", help="directory for report.txt, summary.json and the PNGs (default: the JSON's)")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--ceiling", type=float, metavar="C",
                    help="the machine's ceiling, when the JSON has none (bench/ceiling.sh prints it)")
    ap.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"))
    ap.add_argument("--fail-on-regression", type=float, metavar="PCT", default=None)
    args = ap.parse_args()

    if args.compare:
        sys.exit(compare(args.compare[0], args.compare[1], args.alpha, args.fail_on_regression))
    if not args.result:
        ap.error("a result JSON is needed (or --compare OLD NEW)")
    d = load(args.result)
    out = args.out or os.path.dirname(os.path.abspath(args.result))
    os.makedirs(out, exist_ok=True)
    rep = Report(d, args.alpha, args.ceiling)
    text = rep.build()
    sys.stdout.write(text)
    with open(os.path.join(out, "report.txt"), "w") as f:
        f.write(text)
    files = [] if args.no_plot else plot(d, out, rep.ceiling)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(no_nan({"source": os.path.abspath(args.result), **rep.summary}), f, indent=1)
    print("files: %s" % ", ".join([os.path.abspath(args.result), os.path.join(out, "report.txt"),
                                   os.path.join(out, "summary.json")] + files))


if __name__ == "__main__":
    main()
