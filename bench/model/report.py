#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The model's report (bench/model/model.sh gathers its inputs).

Counts -> throughput at N cores, the stated model:
  op time      t(N) = (I(N) + W(N)) * c
    I(N)  instructions per op: callgrind's count of one core (I1), times
          the instrumented accesses per op at N cores over those at 1
          (the code paths' share of extra work at N: a fold, a retry);
    c     ns per instruction: one core's CPU time per op here over I1
          (CPI = c * GHz);
    W(N)  the stall per op, in instruction times, of the modelled cores'
          clocks (bench/model/clock.h: x86-TSO's store buffer, a
          reorder buffer of misses in flight, locked instructions that
          drain, each rule with its reason), counted with one move
          costing x(N) / c instruction times (model.sh's --xfer);
    x(N)  ns per line moved: on the many-core server 100 ns within a
          socket and 300 ns across, two sockets of 32 cores, so a move
          crosses with probability (N/2)/(N-1) past 32 cores (a published
          cache-to-cache figure: one move); here, half of xfer.h's round
          trip measured between the same two CPUs right beside each
          slice of the check (bench/model/measure.c), over XFER_MOVES:
          that ping-pong, counted by the runtime's own rule, is a read of
          the line the other CPU wrote and then a write of a line the
          other CPU holds, two moves one after the other.
  each lock    that two cores or more take, a queueing server: demand per op D = holds/op * (its
          holds' time on the modelled clock, the acquisition's stall (the
          hand-off of its word) included, * c);
          the rest of t is think time Z; mean value analysis of the
          closed network with N customers gives the throughput X(N);
  each line    of the 40 most moved caps it: a line's writes take it one
          at a time and the reads after each write are answered together,
          so X(N) <= 1 / ((its write moves + its rounds of reads)/op * x).
  speedup      S(N) = X(N) / X(1).
"""
import json
import math
import os
import re
import subprocess
import sys

CORES = [1, 2, 4, 8, 16, 32, 64]
SOCKET = 32
# xfer.h's half round trip, in the runtime's moves (above)
XFER_MOVES = 2


# The check (measure.c's slices): a slice counts when each of its threads
# had at least SHARE_MIN of its CPU, its transfer times agree within
# X_STEADY (the host moves the vCPUs between placements) and its ceiling
# is at most CEILING_MAX; the prediction must be within TOLERANCE of the
# measure in every mode of the transfer time that has two slices or more
# (and one mode must).
SHARE_MIN = 0.9
X_STEADY = 1.5
CEILING_MAX = 2.05
TOLERANCE = 0.25


def median(v):
    v = sorted(v)
    n = len(v)
    return (v[n // 2] + v[(n - 1) // 2]) / 2 if n else None


def split_modes(kept):
    """The slices by transfer time: two modes where the widest gap between
    neighbouring x (sorted) is a factor above 1.6, else one."""
    k = sorted(kept, key=lambda r: r["x_ns"])
    if len(k) < 2:
        return [k] if k else []
    gaps = [(k[i + 1]["x_ns"] / k[i]["x_ns"], i) for i in range(len(k) - 1)]
    g, i = max(gaps)
    return [k[:i + 1], k[i + 1:]] if g > 1.6 else [k]


def x_server(n):
    if n <= SOCKET:
        return 100.0
    p = (n / 2) / (n - 1)
    return 100.0 * (1 - p) + 300.0 * p


def mva(n, z, demands):
    """Mean value analysis, exact for servers every core visits; a server
    only u of the cores use (a lock or line of a few) sees only the
    queue of the other u - 1: an arriving core finds Q(k-1) scaled by
    (u - 1) / (k - 1)."""
    q = [0.0] * len(demands)
    x = 0.0
    for k in range(1, n + 1):
        r = [d * (1 + (qq * (min(u, k) - 1) / (k - 1) if k > 1 else 0)) for (d, u), qq in zip(demands, q)]
        x = k / (z + sum(r))
        q = [x * rr for rr in r]
    return x


def per_op(d, i1, a1, c):
    """(Z, lock demands, line demands, I, M) of one count record, counted
    with a move of d["xfer"] instruction times (x = that times c): op time
    is the instructions plus the clocks' stall (clock.h).  A lock that two
    cores or more take is a server for its holds' clock time and the
    stall of each acquisition; the most moved lines bound the throughput,
    each by its writes and a round of reads after each, one at a time."""
    ops = d["ops"]
    acc = d["accesses"] / ops
    inst = i1 * acc / a1
    moves = (d["rmoves"] + d["wmoves"]) / ops
    x = d["xfer"] * c
    t = inst * c + d["stall"] / ops * c
    locks = []
    for lk in d["locks"]:
        # a lock only one core takes never makes another wait: its
        # critical sections stay in the op's own time
        if lk["cores"] < 2:
            continue
        s = (lk["cs_clk"] + lk["acq_stall"]) * c / lk["holds"]
        locks.append((lk["holds"] / ops * s, lk["cores"]))
    # a line's writes take it one at a time; the reads after one write
    # are answered together (each reader waits its own x, in its op's
    # time), so a line serialises its writes and one round of reads each
    lines = [(ln["wmoves"] + min(ln["rmoves"], ln["wmoves"] + 1)) / ops * x for ln in d["lines"]]
    z = max(t - sum(dd for dd, _ in locks), 0.0)
    return z, locks, lines, inst, moves


def is_group_lock(lk):
    return lk.get("where", "").startswith("obj:struct locktab_slot")


def bare_booking(rec2, rec64, every, word_moves, ipa):
    """A count record for the best a shared group's bookings can do: one
    booking every `every` ops under one lock that every core takes, each
    hold costing what a hold costs at 2 cores (no other file's window to
    look through), nothing shared outside the holds, and the hold's lines
    (its lock word `word_moves` a hold: 2 for the lock table's test and
    exchange, 1 for the least any lock moves it; the rest once) each
    capping the throughput.  The instructions per op are rec64's."""
    shared = [lk for lk in rec2["locks"] if lk["cores"] >= 2 and is_group_lock(lk)]
    holds2 = sum(lk["holds"] for lk in shared)
    if not holds2:
        return None
    acc_h = sum(lk["cs_acc"] for lk in shared) / holds2
    mv_h = sum(lk["cs_moves"] for lk in shared) / holds2
    ops = rec64["ops"]
    holds = ops / every
    lines = [{"rmoves": holds * (word_moves - 1), "wmoves": holds}]  # the lock word
    left = max(mv_h - 2, 0)
    while left > 0:
        lines.append({"rmoves": holds * min(left, 1), "wmoves": 0})
        left -= 1
    # each hold: its work, and its word's hand-off, its data overlapping
    # (clock.h's rule 4): the least a hold waits
    xf = rec64["xfer"]
    return {"ops": ops, "accesses": rec64["accesses"], "rmoves": holds * mv_h, "wmoves": 0, "xfer": xf,
            "stall": holds * xf,
            "locks": [{"holds": holds, "cs_acc": acc_h * holds, "cs_moves": mv_h * holds, "cores": rec64["cores"],
                       "cs_clk": acc_h * ipa * holds, "acq_stall": xf * holds}],
            "lines": lines, "hold_acc": acc_h, "hold_moves": mv_h}


def at_xfer(recs, xf, fn):
    """fn of the count records `recs` (one configuration counted with
    moves of several costs, model.sh's grid) at a move of xf instruction
    times: linear in log(xf) between the two records around it, the
    nearest one outside the grid."""
    rs = sorted(recs, key=lambda r: r["xfer"])
    if xf <= rs[0]["xfer"]:
        return fn(rs[0])
    for a, b in zip(rs, rs[1:]):
        if xf <= b["xfer"]:
            f = math.log(xf / a["xfer"]) / math.log(b["xfer"] / a["xfer"])
            return fn(a) * (1 - f) + fn(b) * f
    return fn(rs[-1])


def throughput(n, z, locks, lines):
    """Ops per ns at n cores: MVA over the locks, capped by the busiest line."""
    x = mva(n, z, locks)
    if lines and max(lines) > 0:
        x = min(x, 1.0 / max(lines))
    return x


class Names:
    """Shared lines by symbol and field: gdb's ptype/o for registered
    structs, addr2line for allocation sites and access points, nm for
    globals."""

    def __init__(self, exe):
        self.exe = exe
        self.types = {}
        self.cache = {}
        self.syms = None

    def gdb(self, *cmds):
        args = ["gdb", "-batch", "-nx"]
        for c in cmds:
            args += ["-ex", c]
        try:
            return subprocess.run(args + [self.exe], capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired):
            return ""

    def fields(self, t):
        if t not in self.types:
            rows = []
            for ln in self.gdb("ptype /o " + t).splitlines():
                m = re.match(r"/\*\s*(\d+)(?::\s*\d+)?\s*\|\s*(\d+)\s*\*/\s*(.*?);?\s*$", ln)
                if m:
                    txt = m.group(3).rstrip("{ ").strip()
                    name = re.findall(r"[A-Za-z_][A-Za-z_0-9]*(?:\[\d*\])?", txt)
                    rows.append((int(m.group(1)), int(m.group(2)), name[-1] if name else txt))
            self.types[t] = rows
        return self.types[t]

    def field(self, t, off):
        best = None
        for o, sz, n in self.fields(t):
            if o <= off < o + max(sz, 1):
                best = n  # the innermost member that covers off comes last
        return best or "+%d" % off

    def line(self, pc):
        if pc not in self.cache:
            try:
                out = subprocess.run(["addr2line", "-f", "-i", "-e", self.exe, hex(int(pc, 16) - 1)],
                                     capture_output=True, text=True, timeout=30).stdout.split("\n")
                self.cache[pc] = "%s (%s)" % (out[0], os.path.relpath(out[1], ROOT) if out[1].startswith("/") else out[1])
            except (OSError, IndexError, subprocess.TimeoutExpired):
                self.cache[pc] = pc
        return self.cache[pc]

    def sym(self, off):
        if self.syms is None:
            self.syms = []
            try:
                for ln in subprocess.run(["nm", "-S", "-C", self.exe], capture_output=True, text=True).stdout.splitlines():
                    p = ln.split()
                    if len(p) == 4:
                        self.syms.append((int(p[0], 16), int(p[1], 16), p[3]))
            except OSError:
                pass
        for a, s, n in self.syms:
            if a <= off < a + s:
                return "%s+%d" % (n, off - a)
        return hex(off)

    def where(self, w):
        kind, _, rest = w.partition(":")
        if kind == "obj":
            m = re.match(r"(.*?)(?:\[(\d+)\])?\+(\d+)$", rest)
            t, k, off = m.group(1), m.group(2), int(m.group(3))
            return "%s%s .%s" % (t, "[%s]" % k if k else "", self.field(t, off))
        if kind == "heap":
            m = re.match(r"0x([0-9a-f]+)\+(\d+)/(\d+)", rest)
            site = self.line(m.group(1))
            off = int(m.group(2))
            fn = site.split(" ")[0]
            if fn.startswith("bga__chunk_create"):
                g0 = self.gdb("print (long)&((struct bga_chunk *)0)->groups", "print sizeof(struct bga_group)")
                nums = re.findall(r"= (\d+)", g0)
                if len(nums) == 2 and off >= int(nums[0]):
                    k, r = divmod(off - int(nums[0]), int(nums[1]))
                    return "struct bga_chunk .groups[%d].%s" % (k, self.field("struct bga_group", r))
                return "struct bga_chunk .%s" % self.field("struct bga_chunk", off)
            return "heap block of %s bytes from %s, +%d" % (m.group(3), site, off)
        if kind == "exe":
            return self.sym(int(rest, 16))
        return w


def plot(dest, configs):
    """model.png with gnuplot, as the demo's plots (bench/report/report.py)."""
    dat = os.path.join(dest, "model.dat")
    with open(dat, "w") as f:
        for r in configs:
            f.write("# %s %s\n" % (r["workload"], r["variant"]))
            for n in CORES:
                f.write("%d %.4f\n" % (n, r["cores"][n]["speedup"]))
            f.write("\n\n")
    cmds = ["set terminal pngcairo size 900,600" if True else "", "set output '%s'" % os.path.join(dest, "model.png"),
            "set logscale xy 2", "set xrange [1:64]", "set yrange [0.01:128]", "set key left top font ',8'",
            "set xlabel 'modelled cores'", "set ylabel 'predicted speedup over 1 core'",
            "set title 'bga-model: lines moved and locks counted on lib/; 100/300 ns a line'"]
    parts = ["'%s' index %d with linespoints dt %d title '%s %s'" % (
        dat, i, 1 if r["variant"] in ("bgalloc", "percpu") else 2, r["workload"], r["variant"])
        for i, r in enumerate(configs)]
    parts.append("x with lines lc 'grey' title 'linear'")
    cmds.append("plot " + ", ".join(parts))
    try:
        subprocess.run(["gnuplot"], input="\n".join(cmds) + "\n", text=True, check=True,
                       capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        print("model: no plot (%s)" % e, file=sys.stderr)


ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def main():
    d = sys.argv[1]
    exe = sys.argv[2]
    dest = sys.argv[3] if len(sys.argv) > 3 else d
    # each (workload, variant, cores) counted at the moves of two costs
    # around the server's x / c (model.sh): every figure is taken between
    # them (at_xfer); `counts` keeps the nearer record, for the names
    every = {}
    for ln in open(os.path.join(d, "count.jsonl")):
        r = json.loads(ln)
        every.setdefault((r["workload"], r["variant"]), {}).setdefault(r["cores"], []).append(r)
    here2 = {}
    if os.path.exists(os.path.join(d, "count2.jsonl")):
        for ln in open(os.path.join(d, "count2.jsonl")):
            r = json.loads(ln)
            here2.setdefault((r["workload"], r["variant"]), []).append(r)
    instr = json.load(open(os.path.join(d, "instr.json")))
    times = json.load(open(os.path.join(d, "time.json")))

    def xf_of(key, n):
        return x_server(n) / (times["%s/%s" % key] / instr["%s/%s" % key])

    counts = {key: {n: min(rs, key=lambda r: abs(math.log(max(r["xfer"], 1e-9) / xf_of(key, n))))
                    for n, rs in byn.items()} for key, byn in every.items()}
    scale = None
    try:
        scale = json.load(open(os.path.join(d, "scale.json")))
    except (OSError, ValueError):
        pass
    ceiling = None
    try:
        ceiling = json.load(open(os.path.join(d, "ceiling.json")))["ceiling"]
    except (OSError, ValueError, KeyError):
        pass
    ghz = None
    try:
        ghz = float(re.search(r"cpu MHz\s*:\s*([\d.]+)", open("/proc/cpuinfo").read()).group(1)) / 1000
    except (OSError, AttributeError):
        pass
    names = Names(exe)
    out = {"constants": {"x_server_ns": "100 in a socket of %d cores, 300 across" % SOCKET, "ghz": ghz,
                         "xfer_moves": XFER_MOVES, "rob": 448, "store_queue": 104},
           "configs": []}
    lines_txt = []
    final = []
    for (w, v), recs in counts.items():
        key = "%s/%s" % (w, v)
        i1 = instr[key]
        c = times[key] / i1
        a1 = recs[1]["accesses"] / recs[1]["ops"]
        t1 = i1 * c
        row = {"workload": w, "variant": v, "instr_1": i1, "ns_per_op_1": times[key], "ns_per_instr": c,
               "cpi": c * ghz if ghz else None, "cores": {}}
        for n in CORES:
            if n not in recs:
                continue
            r = recs[n]
            rs, xf = every[(w, v)][n], xf_of((w, v), n)

            def between(fn):
                return at_xfer(rs, xf, fn)
            s = between(lambda rec: throughput(n, *per_op(rec, i1, a1, c)[:3]) * t1)
            top = sorted(r["locks"], key=lambda lk: -lk["holds"])
            row["cores"][n] = {
                "lines_per_op": between(lambda rec: per_op(rec, i1, a1, c)[4]),
                "read_moves_per_op": between(lambda rec: rec["rmoves"] / rec["ops"]),
                "write_moves_per_op": between(lambda rec: rec["wmoves"] / rec["ops"]),
                "instr_per_op": between(lambda rec: per_op(rec, i1, a1, c)[3]), "speedup": s,
                "xfer_instr": xf,
                "locks": len(r["locks"]),
                "lock_holds_per_op": between(lambda rec: sum(lk["holds"] for lk in rec["locks"]) / rec["ops"]),
                "busiest_lock": ({"where": names.where(top[0]["where"]), "holds_per_op": top[0]["holds"] / r["ops"],
                                  "cs_instr": top[0]["cs_acc"] / top[0]["holds"] * i1 / a1,
                                  "cs_moves": top[0]["cs_moves"] / top[0]["holds"], "cores": top[0]["cores"]}
                                 if top else None),
                "errors": r["errors"]}
        big = recs[max(recs)]
        row["shared_lines"] = [{"line": names.where(l["where"]), "moves_per_op": (l["rmoves"] + l["wmoves"]) / big["ops"],
                                "last_move_at": names.line(l["pc"])} for l in big["lines"][:8]]
        # where the clock waited (clock.h), in moves an op: the accesses
        # that stall, not only the lines that move
        row["waits"] = [{"at": names.line(pc), "moves_per_op": st / big["ops"] / big["xfer"]}
                        for pc, st in sorted(big.get("stall_pcs", []), key=lambda p: -p[1])[:4]
                        if big["xfer"] > 0 and st / big["ops"] / big["xfer"] >= 0.0005]
        if (w, v) in here2 and scale:
            xs = [x for x in scale["machine"]["line_transfer_ns"] if x > 0]
            xh = sum(xs) / len(xs) if xs else 100.0
            row["here"] = {"x_ns": xh, "speedup_2": at_xfer(here2[(w, v)], xh / XFER_MOVES / c,
                                                            lambda rec: throughput(2, *per_op(rec, i1, a1, c)[:3]) * t1)}
        out["configs"].append(row)
        cc = row["cores"]
        final.append("model %s %s lines/op=%.3f instr/op=%.0f %s" % (
            w, v, cc[64]["lines_per_op"], cc[64]["instr_per_op"],
            " ".join("x%d=%.1f" % (n, cc[n]["speedup"]) for n in CORES[1:])))
        lines_txt.append("%-14s %-9s CPI %.2f (%.1f ns/op, %d instr/op at 1 core)" % (
            w, v, row["cpi"] or 0, times[key], i1))
        for n in CORES:
            k = cc[n]
            bl = k["busiest_lock"]
            lines_txt.append("   %2d cores: %7.3f lines/op (%.3f read, %.3f written)  %5.0f instr/op  S=%5.1f  "
                             "locks %d, %.2f holds/op%s" % (
                                 n, k["lines_per_op"], k["read_moves_per_op"], k["write_moves_per_op"], k["instr_per_op"],
                                 k["speedup"], k["locks"], k["lock_holds_per_op"],
                                 "; busiest %s: %.3f/op, %.0f instr and %.2f moves a hold, %d cores" % (
                                     bl["where"], bl["holds_per_op"], bl["cs_instr"], bl["cs_moves"], bl["cores"]) if bl else ""))
        lines_txt.append("   shared lines at %d cores (moves/op, where the last move was):" % max(recs))
        for l in row["shared_lines"]:
            lines_txt.append("     %.4f  %s  [%s]" % (l["moves_per_op"], l["line"], l["last_move_at"]))
        if row["waits"]:
            lines_txt.append("   where a core waits at %d cores (moves waited an op, the access): %s" % (
                max(recs), "; ".join("%.3f %s" % (wt["moves_per_op"], wt["at"]) for wt in row["waits"])))
    # writers' bound: the best a booking in the shared directory's group
    # can do, at the booking rates the policy has and those it could have
    bound_txt = []
    if ("writers", "bgalloc") in counts and 2 in counts[("writers", "bgalloc")]:
        recs = counts[("writers", "bgalloc")]
        i1 = instr["writers/bgalloc"]
        c = times["writers/bgalloc"] / i1
        a1 = recs[1]["accesses"] / recs[1]["ops"]
        n = max(recs)
        rate = sum(lk["holds"] for lk in recs[n]["locks"] if lk["cores"] >= 2 and is_group_lock(lk)) / recs[n]["ops"]
        now = round(1 / rate) if rate else 0
        row = []
        for every in sorted({now, 256, 512, 1024} - {0}):
            ss = []
            for wm in (2, 1):
                b = bare_booking(recs[2], recs[n], every, wm, i1 / a1)
                if b is not None:
                    ss.append(throughput(n, *per_op(b, i1, a1, c)[:3]) * i1 * c)
            if len(ss) == 2:
                row.append((every, ss[0], ss[1]))
        if row:
            out["writers_bound"] = {"cores": n, "hold_instr": b["hold_acc"] * i1 / a1, "hold_moves": b["hold_moves"],
                                    "blocks_per_booking_now": now, "speedup_word2_word1": row}
            bound_txt.append("writers' bound at %d cores: a booking of the shared group as bare as at 2 cores "
                             "(%.0f instr, %.1f moves a hold), nothing shared outside it; S with the lock word "
                             "moving 2/1 times a hold, at a booking every B blocks: %s (B = %d: the policy's rate "
                             "here)" % (n, b["hold_acc"] * i1 / a1, b["hold_moves"],
                                        ", ".join("B=%d: %.1f/%.1f" % r for r in row), now))
    lines_txt += bound_txt
    # the demo's figure: bga-scale at 1 and 2 threads over the ceiling, with
    # bga-scale's own transfer time (the two sides of its run), for reference
    demo = {}
    if scale and ceiling:
        for wl in scale["workloads"]:
            cells = {(c["variant"], c["threads"]): c["median_ops_per_s"] for c in wl["cells"]}
            row = next((r for r in out["configs"] if r["workload"] == wl["name"] and r["variant"] == "bgalloc"), None)
            if not row or "here" not in row or ("bgalloc", 1) not in cells or ("bgalloc", 2) not in cells:
                continue
            demo[wl["name"]] = {"predicted": row["here"]["speedup_2"] / 2, "x_ns": row["here"]["x_ns"],
                                "measured": cells[("bgalloc", 2)] / cells[("bgalloc", 1)] / ceiling,
                                "ceiling": ceiling}
    # the check: each slice of measure.c predicted at its own transfer time
    # and one-core time, against its own 2T/1T over its own ceiling
    checks = []
    slices = {}
    try:
        for ln in open(os.path.join(d, "measure.jsonl")):
            r = json.loads(ln)
            slices.setdefault(r["workload"], []).append(r)
    except OSError:
        pass
    for w, sl in slices.items():
        key = (w, "bgalloc")
        if key not in here2 or key not in counts:
            continue
        i1 = instr["%s/bgalloc" % w]
        a1 = counts[key][1]["accesses"] / counts[key][1]["ops"]
        kept = []
        for r in sl:
            xs = r["x_ns"]
            # and two CPUs never do more than twice one: above, a run was slow
            if (min(r["cpu_share"]) < SHARE_MIN or min(xs) <= 0 or max(xs) > X_STEADY * min(xs)
                    or r["pair_ops_per_s"] > CEILING_MAX * r["one_ops_per_s"]):
                continue
            x = (xs[0] + xs[1]) / 2  # the two sides of the 2-thread phase
            t1 = 1e9 / r["one_ops_per_s"]
            c = t1 / i1
            p = at_xfer(here2[key], x / XFER_MOVES / c, lambda rec: throughput(2, *per_op(rec, i1, a1, c)[:3]) * t1 / 2)
            m = r["two_ops_per_s"] / r["pair_ops_per_s"]
            kept.append({"x_ns": x, "predicted": p, "measured": m, "ceiling": r["pair_ops_per_s"] / r["one_ops_per_s"],
                         "within": abs(p - m) <= TOLERANCE * m})
        modes = split_modes(kept)
        mm = []
        for md in modes:
            mm.append({"slices": len(md), "x_ns": median([k["x_ns"] for k in md]),
                       "predicted": median([k["predicted"] for k in md]),
                       "measured": median([k["measured"] for k in md]),
                       "ceiling": median([k["ceiling"] for k in md])})
            mm[-1]["within"] = abs(mm[-1]["predicted"] - mm[-1]["measured"]) <= TOLERANCE * mm[-1]["measured"]
        big = max(mm, key=lambda x: x["slices"]) if mm else None
        checks.append({"workload": w, "slices": len(sl), "kept": len(kept), "modes": mm,
                       "predicted": big["predicted"] if big else None, "measured": big["measured"] if big else None,
                       "within": any(x["slices"] >= 2 for x in mm) and all(x["within"] for x in mm if x["slices"] >= 2),
                       "slices_within": sum(k["within"] for k in kept), "per_slice": kept, "demo": demo.get(w)})
    out["checks"] = checks
    with open(os.path.join(dest, "model.json"), "w") as f:
        json.dump(out, f, indent=1)
    def mode_txt(ck):
        return "; ".join("x %.0f ns: %.2f/%.2f in %d slices (ceiling %.2f)" % (
            x["x_ns"], x["predicted"], x["measured"], x["slices"], x["ceiling"]) for x in ck["modes"])

    def demo_txt(ck):
        dm = ck["demo"]
        return ("the demo's bga-scale: %.2f measured over the ceiling %.2f, %.2f predicted at its x %.0f ns"
                % (dm["measured"], dm["ceiling"], dm["predicted"], dm["x_ns"])) if dm else "no demo figure"
    check_txt = ["check %s: 2 threads over the ceiling, predicted/measured per transfer mode: %s; %d of %d slices "
                 "kept, %d of them within %.0f%%; %s" % (ck["workload"], mode_txt(ck) or "none", ck["kept"],
                                                         ck["slices"], ck["slices_within"], TOLERANCE * 100,
                                                         demo_txt(ck)) for ck in checks]
    with open(os.path.join(dest, "model.txt"), "w") as f:
        f.write("\n".join(lines_txt + check_txt) + "\n")
    plot(dest, out["configs"])
    print("\n".join(lines_txt + check_txt))
    print("\n".join(final))
    for ck in checks:
        if ck["predicted"] is None:
            print("model-check %s predicted=- measured=- within=no (no slice had its CPUs and one transfer time)"
                  % ck["workload"])
            continue
        print("model-check %s predicted=%.2f measured=%.2f within=%s modes=%d (%s)" % (
            ck["workload"], ck["predicted"], ck["measured"], "yes" if ck["within"] else "no", len(ck["modes"]),
            ", ".join("x %.0f ns: %.2f/%.2f" % (x["x_ns"], x["predicted"], x["measured"]) for x in ck["modes"])))


if __name__ == "__main__":
    main()
