#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Check what the fast paths' machine code calls and saves.

    scripts/fastpath.py OBJECT.o FUNCTION CALLS MAXPUSH [OBJECT.o FUNCTION CALLS MAXPUSH ...]

For each FUNCTION of OBJECT.o (objdump -dr): every call instruction's
target must be in CALLS (a comma-separated list; "-" for none), and the
function must push at most MAXPUSH registers.  A jump to another function
(a tail call) is not a call: the fast paths leave by tail calls for
everything they cannot decide, so what they keep inline is what is
checked.  Prints each function's calls and pushes; exits 1 on a
violation, 2 on bad usage.

make test runs it on alloc.c and range.c built as Release builds them
(tests/CMakeLists.txt).  Both may call only the CPU id's path for a
thread without rseq (__tls_get_addr for the reused getcpu answer,
bga__cpu_fallback once in 32 lookups; with rseq the id is one inline
load), and bga_alloc also the window's append (handle_take_fast): so
a plain request at a goal and a one-word free make no call on a thread
with rseq.  The pushes: the callee-saved registers each saves for its
live values.
"""
import re
import subprocess
import sys


def body(obj, fn):
    out = subprocess.run(["objdump", "-dr", "--no-show-raw-insn", obj], capture_output=True, text=True,
                         check=True).stdout
    lines, inside = [], False
    for line in out.splitlines():
        if re.match(r"^[0-9a-f]+ <%s>:$" % re.escape(fn), line):
            inside = True
            continue
        if inside:
            if re.match(r"^[0-9a-f]+ <.*>:$", line) or line.startswith("Disassembly of section"):
                break
            lines.append(line)
    return lines if inside else None


def calls_and_pushes(lines):
    calls, pushes = [], 0
    for i, line in enumerate(lines):
        if re.search(r"\bpush\s+%r", line):
            pushes += 1
        if re.search(r"\bcall\s", line):
            # in a relocatable object the target is the relocation on the next line
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            m = re.search(r"R_X86_64_\w+\s+([\w.@]+?)(?:-0x[0-9a-f]+)?$", nxt.strip())
            if m:
                calls.append(m.group(1).split("@")[0])
            else:
                m = re.search(r"call\s+\S+\s+<([^>+]+)", line)
                calls.append(m.group(1) if m else line.split("call", 1)[1].strip())
    return calls, pushes


def main(argv):
    args = argv[1:]
    if not args or len(args) % 4:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    bad = 0
    for i in range(0, len(args), 4):
        obj, fn, allowed, maxpush = args[i], args[i + 1], args[i + 2], int(args[i + 3])
        allowed = set() if allowed == "-" else set(allowed.split(","))
        lines = body(obj, fn)
        if lines is None:
            print(f"fastpath: {fn} not found in {obj}", file=sys.stderr)
            bad = 1
            continue
        calls, pushes = calls_and_pushes(lines)
        print(f"{fn}: calls {', '.join(calls) or 'nothing'}; pushes {pushes}")
        for c in calls:
            if c not in allowed:
                print(f"fastpath: {fn} calls {c}, which its fast path must not", file=sys.stderr)
                bad = 1
        if pushes > maxpush:
            print(f"fastpath: {fn} pushes {pushes} registers, more than {maxpush}", file=sys.stderr)
            bad = 1
    if not bad:
        print("fastpath: ok")
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv))
