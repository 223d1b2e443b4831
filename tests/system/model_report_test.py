#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The model's report (bench/model/report.py) on made-up count records:
a figure taken between two counts of different move costs, an op's time
from its instructions and its clock's stall, a line's cap by its writes
and a round of reads after each, and the check's move (x over 2).

    model_report_test.py SOURCE_DIR
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "bench", "model"))
import report  # noqa: E402

fails = 0


def expect(ok, what):
    global fails
    if not ok:
        print("FAIL", what)
        fails += 1


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


# between two counts, linear in log(x/c); the nearer one outside
recs = [{"xfer": 200.0, "v": 3.0}, {"xfer": 100.0, "v": 1.0}]
v = lambda r: r["v"]  # noqa: E731
expect(close(report.at_xfer(recs, 100.0, v), 1.0), "at the lower count")
expect(close(report.at_xfer(recs, 200.0, v), 3.0), "at the upper count")
expect(close(report.at_xfer(recs, 100.0 * math.sqrt(2), v), 2.0), "halfway in log")
expect(close(report.at_xfer(recs, 10.0, v), 1.0) and close(report.at_xfer(recs, 1e6, v), 3.0), "outside the grid")

# op time (I + W) c; a shared lock's demand its holds' clock time and its
# acquisitions' stall; a line's cap its writes and one round of reads each
rec = {"ops": 10, "accesses": 200, "rmoves": 6, "wmoves": 2, "stall": 400.0, "xfer": 100.0,
       "locks": [{"holds": 5, "cores": 2, "cs_clk": 150.0, "acq_stall": 50.0},
                 {"holds": 5, "cores": 1, "cs_clk": 999.0, "acq_stall": 999.0}],
       "lines": [{"rmoves": 6, "wmoves": 2}, {"rmoves": 1, "wmoves": 0}]}
i1, a1, c = 40.0, 10.0, 0.5  # 4 instructions an access
z, locks, lines, inst, moves = report.per_op(rec, i1, a1, c)
expect(close(inst, 80.0), "instructions: 20 accesses an op at 4 each")
expect(close(moves, 0.8), "lines moved an op")
expect(len(locks) == 1 and close(locks[0][0], 5 / 10 * (200.0 * c / 5)), "only the shared lock, its demand")
expect(close(z + locks[0][0], (80.0 + 40.0) * c), "the op's time is its work and its stall")
expect(close(lines[0], (2 + 3) / 10 * 100.0 * c), "a line: its writes and a round of reads after each")
expect(close(lines[1], 1 / 10 * 100.0 * c), "a line never written: one round of reads")
# one core alone: the throughput is one op per op time
expect(close(report.throughput(1, z, locks, []), 1 / (z + locks[0][0])), "one core")
expect(report.XFER_MOVES == 2, "xfer.h's half round trip is two moves")
print("model_report_test: %d failed" % fails if fails else "model_report_test: ok")
sys.exit(1 if fails else 0)
