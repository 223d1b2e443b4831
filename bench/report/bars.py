#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The allocation-quality bars, a verdict per history and bar, read from bga-replay's output.

  bga-replay run TRACE... -a bgalloc -a ext2 [-a ...] [--markdown] | bench/report/bars.py [--alloc A] [--peer P] [--markdown]
  bench/report/bars.py [--alloc A] [--peer P] [--markdown] OUTPUT...

Reads what `bga-replay run` printed for one or more histories (from the
files named, or standard input): each history's table (the lines after
`trace NAME:`, and the `A: N failed, M partial, ...` lines under it), or,
where the output holds no such table, the side-by-side Markdown table of
--markdown.  Judges the allocator A (default bgalloc, bgalloc's defaults)
against the peer P (default ext2, libext2fs) on each bar:

  ext/file <= 1.05          extents per file (and whether any allocator
                            of the output but the oracles reaches 1.05
                            there)
  ext/file <= peer
  end score <= peer         the fragmentation score at the end
  end score <= 1.3x peer
  mean <= 2x peer or 0.05   the mean score over the trace
  shorts <= peer            requests failed or placed partly
  objects end <= 3x peer    in place of the ext/file and end bars on a
                            history of objects (no files: objects.trace)

and prints a line a history and bar, met or missed with the two figures
(A's, then the peer's or the limit), then how many were met, bar by bar
and in all; --markdown prints the same as a table instead, a row a
history and a column a bar ("-" where a bar does not apply).  Figures are compared as bga-replay printed them.  Exit 0
when every bar is met, 1 when one is missed, 2 when the output holds no
history or a history lacks A or P.

Where the output holds the clairvoyant references (-a oracle, -a
oracle,death: what the best placement that never moves data reaches), a
missed bar says whether the best of them meets it: "oracle reaches X
(WHO)", or "not even the oracle (WHO X)": a bar no oracle meets asks for
more than the history allows.  The oracles are never counted among the
allocators that reach 1.05.
"""
import argparse
import re
import sys

# a history's table row: allocator calls calls/s files ext/file objects ext/obj failures score ceph mean free
# (a score may print as -0.0000: a negative zero rounded, still a figure)
ROW = re.compile(r"^(\S+) +\d+ +\d+ +(\d+) +([0-9.]+) +(\d+) +[0-9.]+ +(\d+) +(-?[0-9.]+) +-?[0-9.]+ +(-?[0-9.]+) +\d+$")
SHORT = re.compile(r"^(\S+): (\d+) failed, (\d+) partial, ")
MD_ROW = re.compile(r"^\| *([^|]*?) *\| *(\S+) *\| *([0-9.]+)(/obj)? *\| *(-?[0-9.]+) *\| *(-?[0-9.]+) *\| *(\d+) \(\d+\) *\|")


def parse(lines):
    """[(history, {allocator: figures})] in the order the output gives them,
    from the text tables, else from the Markdown table."""
    hist, cur, in_table = [], None, False
    for line in lines:
        line = line.rstrip("\n")
        m = re.match(r"^trace (\S+): ", line)
        if m:
            cur = {}
            hist.append((m.group(1), cur))
            in_table = False
            continue
        if cur is None:
            continue
        if re.match(r"^allocator +calls +calls/s ", line):
            in_table = True
            continue
        m = ROW.match(line) if in_table else None
        if m:
            files, objects = int(m.group(2)), int(m.group(4))
            cur[m.group(1)] = {"objects": files == 0 and objects > 0, "ext": float(m.group(3)),
                               "end": float(m.group(6)), "mean": float(m.group(7)),
                               "short": int(m.group(5))}
            continue
        if in_table and not line.startswith("("):
            # a row this parser cannot read would leave its allocator out
            # of every bar without a word: refuse instead
            raise ValueError("%s: cannot read this row of its table: %r" % (hist[-1][0], line))
        in_table = False
        m = SHORT.match(line)
        if m and m.group(1) in cur:
            # the table's failures column counted the failed ones already
            cur[m.group(1)]["short"] += int(m.group(3))
    if hist:
        return hist
    name = None
    for line in lines:
        m = MD_ROW.match(line)
        if not m or m.group(2) == "allocator":
            continue
        if m.group(1):
            name = m.group(1)
            cur = {}
            hist.append((name, cur))
        if name is None:
            continue
        cur[m.group(2)] = {"objects": m.group(4) is not None, "ext": float(m.group(3)),
                           "end": float(m.group(5)), "mean": float(m.group(6)), "short": int(m.group(7))}
    return hist


def is_oracle(name):
    """The clairvoyant references (bga-replay -a oracle[,death]): what the
    best placement reaches, not an allocator a bar can ask for."""
    return name == "oracle" or name.startswith("oracle,")


def verdicts(name, allocs, a, p):
    """[(bar, met, figures)] for one history."""
    me, peer = allocs[a], allocs[p]
    online = [k for k in allocs if not is_oracle(k)]
    oracles = [k for k in allocs if is_oracle(k)]
    out = []

    def oracle_note(key, limit, fmt):
        """Where the output holds an oracle: whether the best of them meets
        limit on key, with its figure."""
        if not oracles:
            return ""
        who = min(oracles, key=lambda k: allocs[k][key])
        fig = fmt % allocs[who][key]
        if allocs[who][key] <= limit + 1e-9:
            return "; oracle reaches %s (%s)" % (fig, who)
        return "; not even the oracle (%s %s)" % (who, fig)

    def bar(title, met, mine, theirs, note="", key=None, limit=None, fmt="%.4f"):
        if not met and key:
            note += oracle_note(key, limit, fmt)
        out.append((title, met, "%s vs %s%s" % (mine, theirs, note)))

    if me["objects"]:
        bar("objects end <= 3x peer", me["end"] <= 3 * peer["end"] + 1e-9,
            "%.4f" % me["end"], "%.4f" % (3 * peer["end"]), " (3x %.4f)" % peer["end"], "end", 3 * peer["end"])
    else:
        best = min(online, key=lambda k: allocs[k]["ext"])
        reach = [k for k in online if allocs[k]["ext"] <= 1.05]
        note = ("; reached by %s" % ", ".join(reach)) if reach else \
            "; reached by none (best %s %.2f)%s" % (best, allocs[best]["ext"], oracle_note("ext", 1.05, "%.2f"))
        bar("ext/file <= 1.05", me["ext"] <= 1.05, "%.2f" % me["ext"], "1.05", note)
        bar("ext/file <= peer", me["ext"] <= peer["ext"], "%.2f" % me["ext"], "%.2f" % peer["ext"], "", "ext",
            peer["ext"], "%.2f")
        bar("end score <= peer", me["end"] <= peer["end"], "%.4f" % me["end"], "%.4f" % peer["end"], "", "end",
            peer["end"])
        bar("end score <= 1.3x peer", me["end"] <= 1.3 * peer["end"] + 1e-9,
            "%.4f" % me["end"], "%.4f" % (1.3 * peer["end"]), " (1.3x %.4f)" % peer["end"], "end", 1.3 * peer["end"])
    lim = max(2 * peer["mean"], 0.05)
    bar("mean <= 2x peer or 0.05", me["mean"] <= lim + 1e-9, "%.4f" % me["mean"], "%.4f" % lim,
        " (2x %.4f)" % peer["mean"] if 2 * peer["mean"] > 0.05 else " (0.05)", "mean", lim)
    bar("shorts <= peer", me["short"] <= peer["short"], "%d" % me["short"], "%d" % peer["short"], "", "short",
        peer["short"], "%d")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--alloc", default="bgalloc", help="the allocator judged (default bgalloc)")
    ap.add_argument("--peer", default="ext2", help="the peer it is judged against (default ext2)")
    ap.add_argument("--markdown", action="store_true", help="a table, a row a history and a column a bar")
    ap.add_argument("outputs", nargs="*", help="bga-replay's output (default: standard input)")
    a = ap.parse_args()
    lines = []
    try:
        for path in a.outputs or ["-"]:
            with (sys.stdin if path == "-" else open(path)) as f:
                lines += f.readlines()
    except OSError as e:
        print("bars: %s" % e, file=sys.stderr)
        return 2
    try:
        hist = parse(lines)
    except ValueError as e:
        print("bars: %s" % e, file=sys.stderr)
        return 2
    if not hist:
        print("bars: no history in the output (bga-replay run's tables, or its --markdown table)",
              file=sys.stderr)
        return 2
    for name, allocs in hist:
        for who in (a.alloc, a.peer):
            if who not in allocs:
                print("bars: %s: no row of %s (run it with -a %s)" % (name, who, who), file=sys.stderr)
                return 2
    width = max(len(name) for name, _ in hist)
    per_bar = {}
    rows = []
    met = total = 0
    for name, allocs in hist:
        rows.append((name, {}))
        for title, ok, figures in verdicts(name, allocs, a.alloc, a.peer):
            if not a.markdown:
                print("%-*s  %-23s  %-6s  %s" % (width, name, title, "met" if ok else "missed", figures))
            rows[-1][1][title] = "%s %s" % ("met" if ok else "**missed**", figures.replace(" vs ", " / "))
            n = per_bar.setdefault(title, [0, 0])
            n[0] += ok
            n[1] += 1
            met += ok
            total += 1
    if a.markdown:
        print("| history | %s |" % " | ".join(per_bar))
        print("|---|%s" % ("---|" * len(per_bar)))
        for name, cells in rows:
            print("| %s | %s |" % (name, " | ".join(cells.get(t, "-") for t in per_bar)))
    print("\n%s against %s on %d histories:" % (a.alloc, a.peer, len(hist)))
    for title, (ok, n) in per_bar.items():
        print("  %-23s  %d of %d met" % (title, ok, n))
    print("bars met: %d of %d, missed: %d" % (met, total, total - met))
    return 0 if met == total else 1


if __name__ == "__main__":
    sys.exit(main())
