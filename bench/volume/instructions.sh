#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Instructions per single-thread churn operation (free one block, allocate
# one at a random goal, 2^20 blocks), counted by callgrind: unlike time,
# the count repeats exactly whatever else the machine does, so it tells
# whether a change to the hot path made it shorter.
#   bench/volume/instructions.sh BUILD_DIR [OPS]
# The count has three parts, printed apart:
#  - the harness: churn_loop's own instructions (the loop, two random
#    numbers, the calls), which any caller pays in some form;
#  - the CPU id without rseq: under valgrind rseq is not registered, so
#    a lookup reads the thread's reused getcpu answer (cpu.h), and one
#    in 32 calls bga__cpu_fallback (sched_getcpu); a thread with rseq
#    replaces both by one inline load from its rseq area (the inline
#    reuse is counted with --groups only; the rseq read stays in the
#    library's count);
#  - the library: the rest.
# With --groups (after BUILD_DIR and OPS), also the count per group of
# work (lock, counter, bitmap, ...; BENCHMARKS.md#where-the-instructions-go):
# each source
# line with its count (callgrind_annotate --auto, inlined code at its own
# line) goes to one group by its file and text, so a line that does two
# things counts for the first that matches below.
set -euo pipefail
build=${1:?usage: bench/volume/instructions.sh BUILD_DIR [OPS] [--groups]}
[ -d "$build/bench" ] || { echo "bench/volume/instructions.sh: no $build/bench (BUILD_DIR: a cmake -DBGA_BENCH=ON build); usage: bench/volume/instructions.sh BUILD_DIR [OPS] [--groups]" >&2; exit 2; }
ops=${2:-100000}
groups=${3:-}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
valgrind --tool=callgrind --toggle-collect=churn_loop --callgrind-out-file="$out" \
	"$build/bench/bga-share" --count "$ops" >/dev/null 2>&1
self=$(callgrind_annotate --threshold=100 "$out")
incl=$(callgrind_annotate --inclusive=yes --threshold=100 "$out")
total=$(awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}' <<<"$self")
# Exclusive costs of churn_loop and of what was inlined into it (rng.h).
harness=$(awk '/:churn_loop( \[|$)/ {gsub(",", "", $1); s += $1} END {print s + 0}' <<<"$self")
# bga__cpu_fallback with what it calls, plus bga__cpu_current's own part;
# in builds before bga__cpu_fallback existed, bga__cpu_current whole.
fb=$(awk '/:bga__cpu_fallback \[/ {gsub(",", "", $1); print $1; exit}' <<<"$incl")
if [ -n "$fb" ]; then
	cur=$(awk '/:bga__cpu_current \[/ {gsub(",", "", $1); print $1; exit}' <<<"$self")
else
	cur=$(awk '/:bga__cpu_current \[/ {gsub(",", "", $1); print $1; exit}' <<<"$incl")
fi
cpu=$((${fb:-0} + ${cur:-0}))
lib=$((total - harness - cpu))
echo "churn, 1 thread: $((total / ops)) instructions per operation:" \
	"library $((lib / ops)), harness (churn_loop) $((harness / ops)), CPU id without rseq" \
	"(valgrind only) $((cpu / ops)); without the last: $(((total - cpu) / ops))"
[ "$groups" = --groups ] || exit 0
callgrind_annotate --auto=yes --threshold=100 "$out" | python3 -c '
import re, sys
ops = int(sys.argv[1])
# (group, file pattern, line pattern): the first match wins.
rules = [
    ("harness", r"bench/", r""),
    ("CPU id without rseq (valgrind only)", r"cpu\.h$", r"fallback|cpu_current|cpu_reuse"),
    ("CPU id, inline (rseq area read)", r"cpu\.h$", r""),
    ("counter", r"counter", r""),
    ("lock", r"locktab|ck_pr\.h$|lockdep", r""),
    ("steering", r"steer\.h$", r""),
    ("steering", r"internal\.h$", r"percpu|ncpu|vol->cpu"),
    ("counter", r"", r"counter|charge|\bcap\b"),
    ("lock", r"", r"lock_at|unlock|trylock|locktab|group_slot|\bslot\b"),
    ("calls (entry, exit, argument moves)", r"alloc\.c$|range\.c$", r"^\s*[{}]\s*$|^\s*return -E|^\s*int rc = free_in_group"),
    ("validation", r"", r"NULL|req->|min - 1|len != 0|max_len|first_data_block|floor|off < grp->hi|->ext|grp->hi"),
    ("bitmap", r"", r"bitmap|UINT64_C\(0\)|word_run|word_mask|in_one_word|off / 64|\*w|room|skip|\brun\b|ctzll|\*start|\*len|w >>="),
    ("finding the group (block to descriptor)", r"", r"chunk|groups\[|group_of|group_first|bpg_shift|blocks_per_group|off ="),
    ("bookkeeping (free count, flags, extent)", r"", r"free|flags|max_run|out|got|hit"),
]
slow = re.compile(r"search\.c|charge\.c|group\.c|bitmap\.c|deferred\.c|window|urcu|avx")
tot, cur = {}, None
for line in sys.stdin:
    m = re.match(r"-- Auto-annotated source: (.*)", line)
    if m:
        cur = m.group(1).strip()
        continue
    m = re.match(r"\s*([0-9,]+) \(\s*[0-9.]+%\)\s(.*)", line)
    if cur is None or not m or "=>" in line or "events annotated" in line:
        continue
    n, text = int(m.group(1).replace(",", "")), m.group(2)
    if re.search(r"cpu\.c$", cur):
        continue  # bga__cpu_fallback: counted whole, with getcpu, below
    if slow.search(cur):
        g = "slow path (the few allocations the fast path misses)"
    else:
        g = next((g for g, f, t in rules if re.search(f, cur) and re.search(t, text)), "other")
    tot[g] = tot.get(g, 0) + n
    if sys.argv[3:] and n >= ops:
        print("%6.1f %-12s %-40s %s" % (n / ops, cur[-12:], g[:40], text.strip()[:70]), file=sys.stderr)
g = "CPU id without rseq (valgrind only)"
tot[g] = tot.get(g, 0) + int(sys.argv[2])  # bga__cpu_fallback with getcpu
for g, n in sorted(tot.items(), key=lambda x: -x[1]):
    print("%8.1f  %s" % (n / ops, g))
print("%8.1f  total" % (sum(tot.values()) / ops))
' "$ops" "$cpu" ${BGA_GROUPS_LINES:+lines}
