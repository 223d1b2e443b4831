#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The fuzzing guide's example harness (docs/FUZZING.md, "Writing your
# own harness") is the file
# tests/fuzz/fuzz_example.c, byte for byte, so the copy users read is the
# one the build compiles and ctest replays (fuzz_replay_example).
set -euo pipefail
root=${1:-$(dirname "$0")/../..}
block=$(awk '/^##+ Writing your own harness/ { s = 1 } s && /^```c$/ { c = 1; next } c && /^```$/ { exit } c' "$root/docs/FUZZING.md")
if [ "$block" != "$(cat "$root/tests/fuzz/fuzz_example.c")" ]; then
	echo "docs/FUZZING.md's example harness differs from tests/fuzz/fuzz_example.c:" >&2
	diff <(printf '%s\n' "$block") "$root/tests/fuzz/fuzz_example.c" >&2 || true
	exit 1
fi
echo "readme_example_test: the fuzzing guide's harness is tests/fuzz/fuzz_example.c"
