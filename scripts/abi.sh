#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The kept ABI of libbgalloc.so.0 (docs/ABI.md):
#   scripts/abi.sh check BUILD   compare the build with the baseline in abi/;
#                                status 0 only when nothing differs (make test)
#   scripts/abi.sh update BUILD  write the baseline from the build.  Only with
#                                a version bump in <bgalloc.h> (bgalloc/version.h) and its
#                                CHANGELOG.md entry: an ABI that changes
#                                without one is what this check exists for.
#                                BUILD is make test's build/test.
# Two halves:
#  - abi/libbgalloc.so.0.abi: abidw of tests/libbgalloc_abi_probe.so, which
#    defines every BGA_EXTERN function as the public headers declare it
#    (scripts/abiprobe.py), compared with abidiff: each function's
#    signature and every type the headers define, and nothing of lib/
#    (struct bga_volume is as opaque as the headers make it).  Not the
#    library itself: libabigail loses track of a function whose name two
#    symbol versions share (it files bga_alloc@@BGA_0.2 as having no debug
#    information, so the struct it takes could grow unseen), and it would
#    see lib/'s private structs behind every opaque pointer;
#  - abi/libbgalloc.so.0.symbols: every symbol the real library exports,
#    with its version, compared exactly.
set -euo pipefail
cmd=${1:-} build=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
lib=$build/libbgalloc.so probe=$build/tests/libbgalloc_abi_probe.so
base=$root/abi/libbgalloc.so.0.abi syms=$root/abi/libbgalloc.so.0.symbols
usage() { echo "usage: scripts/abi.sh check|update BUILD_DIR (with libbgalloc.so and tests/libbgalloc_abi_probe.so)" >&2; exit 2; }
[ -n "$build" ] && [ -f "$lib" ] && [ -f "$probe" ] || usage
symbols() { nm -D --defined-only --with-symbol-versions "$lib" | awk '$2 ~ /^[TDBR]$/ {print $2, $3}' | sort; }
case $cmd in
update)
	version=$(sed -n 's/^#define BGA_VERSION_STRING "\(.*\)"/\1/p' "$root/include/bgalloc/version.h")
	abidw --no-corpus-path --no-comp-dir-path "$probe" | sed "s|$root/||g" >"$base"
	symbols >"$syms"
	echo "$version" >"$root/abi/VERSION"
	echo "abi: baseline of $version written (abi/libbgalloc.so.0.abi, abi/libbgalloc.so.0.symbols)"
	;;
check)
	[ -f "$base" ] && [ -f "$syms" ] || { echo "abi: no baseline in abi/" >&2; exit 1; }
	rc=0
	out=$(abidiff "$base" "$probe") || rc=$?
	sdiff=$(diff -u "$syms" <(symbols)) || rc=$((rc | 64))
	if [ $rc != 0 ]; then
		[ -z "$out" ] || echo "$out"
		[ -z "$sdiff" ] || echo "$sdiff"
		echo "abi: the build's ABI differs from the baseline in abi/ (abidiff status $((rc & 63)), symbols $((rc >> 6)))."
		echo "abi: an intended change needs a version bump, compat forms for what old programs"
		echo "abi: pass (lib/abi/), a CHANGELOG.md entry, then scripts/abi.sh update build/test."
		exit 1
	fi
	echo "abi: the ABI of bgalloc $(cat "$root/abi/VERSION"): $(wc -l <"$syms") exported symbols, the public types unchanged"
	;;
*) usage ;;
esac
