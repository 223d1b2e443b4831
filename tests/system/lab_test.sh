#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bga-lab and the two user-style benchmarks, as a user gets them: install
# the build into a scratch prefix, build bench/user/counter_bench.c and
# bench/user/lock_bench.c there with pkg-config only, run each briefly, and
# run the installed bga-lab: --help on stdout with status 0, its man page,
# one verdict line per thread count in the documented form, the JSON with
# every sample, bad input refused with status 2; and bga-micro's counter
# modes, inlined (not installed).  Checks forms, not speed.
#   tests/system/lab_test.sh <build dir> <source dir>
set -euo pipefail
build=$1 src=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(ls -d "$prefix"/lib*/ | head -1)
export PKG_CONFIG_PATH="$libdir/pkgconfig"
lab=$prefix/bin/bga-lab
fail() { echo "lab_test: $*" >&2; exit 1; }

[ -f "$prefix/share/man/man1/bga-lab.1" ] || fail "man page not installed"
"$lab" --help >"$prefix/help" 2>/dev/null || fail "--help did not exit 0"
grep -q "public API" "$prefix/help" || fail "--help does not say what it measures through"

for ex in counter_bench lock_bench; do
	cc -O2 -o "$prefix/$ex" "$src/bench/user/$ex.c" $(pkg-config --cflags --libs bgalloc) -pthread ||
		fail "$ex does not build against the installed library"
done
out=$(LD_LIBRARY_PATH=$libdir "$prefix/counter_bench" 2 20 2) && grep -qE "^median percpu/atomic at 2 threads: ([0-9.]+x|cannot decide)" <<<"$out" ||
	fail "counter_bench"
LD_LIBRARY_PATH=$libdir "$prefix/lock_bench" 2 20 4 >"$prefix/lock.out" || fail "lock_bench"
[ "$(grep -c "M lock/unlock pairs/s" "$prefix/lock.out")" = 4 ] || fail "lock_bench: not 4 kinds"

# The installed binary finds its library by itself (its rpath).
verdict='^verdict threads=[0-9]+ [a-z-]+/[a-z-]+=[0-9.]+x ci=[0-9.]+-[0-9.]+ p=[0-9.]+ p_holm=[0-9.]+ cpu_share=[0-9.]+: '
outcome='([a-z-]+ faster|no significant difference|inconclusive \(.+\))$'
vcpu='^verdict-cpu threads=[0-9]+ [a-z-]+/[a-z-]+=[0-9.]+x per CPU-second ci=[0-9.]+-[0-9.]+ p=[0-9.]+ p_holm=[0-9.]+: ([a-z-]+ faster|no significant difference|inconclusive \(.+\)|not valid \(.+\))$'
cd "$prefix"
"$lab" counter --threads 1,2 --modes atomic,percpu,percpu-cas,striped,tls-fold --ops 5000 --reps 5 \
	--out "$prefix/runs" >counter.out || fail "bga-lab counter failed: $(cat counter.out)"
[ "$(grep -cE "$verdict$outcome" counter.out)" = 8 ] || fail "bga-lab counter: not 8 verdict lines: $(cat counter.out)"
[ "$(grep -cE "$vcpu" counter.out)" = 8 ] || fail "bga-lab counter: not 8 verdict-cpu lines: $(cat counter.out)"
json=$(ls "$prefix"/runs/bga-lab-counter-*.json)
python3 - "$json" <<'PY' || fail "bga-lab counter: the JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["tool"] == "bga-lab" and d["command"] == "counter"
assert len(d["cells"]) == 10 and all(len(c["samples"]) == 5 for c in d["cells"])
assert all(s["ops"] == 5000 * c["threads"] for c in d["cells"] for s in c["samples"])
assert len(d["verdicts"]) == 8 and len(d["ceilings"]) == 1
PY
"$lab" lock --kinds fas,ticket,mcs,mutex,default --threads 1,2 --hold 50 --spread 4 --slots 2 --ops 100 --reps 5 \
	--no-files >lock.out || fail "bga-lab lock failed: $(cat lock.out)"
[ "$(grep -cE "$verdict$outcome" lock.out)" = 8 ] || fail "bga-lab lock: not 8 verdict lines: $(cat lock.out)"
grep -q "mutual exclusion failed" lock.out && fail "a lock kind let two holders in"

rc=0; "$lab" counter --modes striped --limited --no-files >/dev/null 2>&1 || rc=$?
[ $rc = 2 ] || fail "--limited with striped: status $rc, not 2"
rc=0; "$lab" lock --kinds fas,nosuch --no-files >/dev/null 2>&1 || rc=$?
[ $rc = 2 ] || fail "unknown kind: status $rc, not 2"
rc=0; "$lab" lock --slots 3 --no-files >/dev/null 2>&1 || rc=$?
[ $rc = 2 ] || fail "--slots 3: status $rc, not 2"

# The counter's modes called into the static library and inlined, as the
# library's own code adds, are bga-micro's (bench/micro/bench_counter_modes.c,
# not installed: it reaches inside): each of the 12 benchmarks at 1 and 2
# threads, the per-CPU ones at their 3 batches, the path in the label; a
# run whose sum misses its adds aborts.
micro=$build/bench/bga-micro
if [ -x "$micro" ]; then
	"$micro" --benchmark_filter=counter_mode_ --benchmark_min_time=0.001 --benchmark_format=json \
		>"$prefix/modes.json" 2>"$prefix/modes.err" || fail "bga-micro counter_mode_: exit $?: $(tail -3 "$prefix/modes.err")"
	python3 - "$prefix/modes.json" <<'PY' || fail "bga-micro counter_mode_: not the 56 runs"
import json, sys
runs = [b for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
assert len(runs) == 56, len(runs)
assert all(not b.get("error_occurred") and b["items_per_second"] > 0 for b in runs)
for b in runs:
    path = "inlined" if "_inline_" in b["name"] else "call"
    assert b["label"].endswith(", " + path), (b["name"], b["label"])
    assert ("percpu" in b["name"]) == ("batch" in b["label"]), (b["name"], b["label"])
assert sum("_inline_" in b["name"] for b in runs) == 28
PY
else
	echo "lab_test: no $micro (BGA_BENCH off): the counter's inlined modes not run"
fi
echo "lab_test: bga-lab, counter_bench and lock_bench built and ran against the installed library"
