#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The kept ABI of libbgalloc.so.0 (CHANGELOG.md, "ABI"), with libabigail:
#   scripts/abi.sh check LIB   abidiff of abi/libbgalloc.so.0.abi against LIB
#                              (a built libbgalloc.so): status 0 only when
#                              they have the same ABI; run by `make test`
#   scripts/abi.sh update LIB  write the baseline (and abi/VERSION) from LIB.  Only with a
#                              version bump in <bgalloc.h> and its
#                              CHANGELOG.md entry: an ABI that changes
#                              without one is the bug this check exists for.
#                              Take LIB from `make test`'s build/test.
# Only what the public headers define counts (abi/private.suppr): struct
# bga_volume and the rest of lib/ live behind opaque pointers.
set -euo pipefail
cmd=${1:-} lib=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
base=$root/abi/libbgalloc.so.0.abi
[ -n "$lib" ] && [ -f "$lib" ] || { echo "usage: scripts/abi.sh check|update LIBBGALLOC.SO" >&2; exit 2; }
case $cmd in
update)
	version=$(sed -n 's/^#define BGA_VERSION_STRING "\(.*\)"/\1/p' "$root/include/bgalloc.h")
	abidw --no-corpus-path --no-comp-dir-path "$lib" | sed "s|$root/||g" >"$base"
	echo "$version" >"$root/abi/VERSION"
	echo "abi: baseline of $version written to abi/libbgalloc.so.0.abi"
	;;
check)
	[ -f "$base" ] || { echo "abi: no baseline abi/libbgalloc.so.0.abi" >&2; exit 1; }
	rc=0
	out=$(abidiff --suppressions "$root/abi/private.suppr" "$base" "$lib") || rc=$?
	if [ $rc != 0 ]; then
		echo "$out"
		echo "abi: $lib differs from abi/libbgalloc.so.0.abi (abidiff status $rc)."
		echo "abi: an intended change needs a version bump, compat symbols for what"
		echo "abi: old programs pass (lib/abi/), a CHANGELOG.md entry, then scripts/abi.sh update."
		exit 1
	fi
	echo "abi: $(basename "$lib") has the ABI of abi/libbgalloc.so.0.abi (bgalloc $(cat "$root/abi/VERSION"))"
	;;
*) echo "usage: scripts/abi.sh check|update LIBBGALLOC.SO" >&2; exit 2 ;;
esac
