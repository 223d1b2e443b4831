#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bga-inspect on an image of known layout (inspect_image.c): every
# command's output and exit status, then the same image damaged.
#   tests/system/inspect_test.sh BGA_INSPECT INSPECT_IMAGE
set -u
INSPECT=$1 IMAGE=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
img=$dir/img
fail() { echo "inspect_test: $*"; exit 1; }
# shellcheck source=tests/system/expect.sh
. "$(dirname "$0")/expect.sh"
"$IMAGE" "$img" || fail "cannot write the image"

expect 0 ': generation 1, 256 blocks, 181 free, 4 groups \(0 quarantined, 0 counts repaired\): clean$' -- "$INSPECT" check "$img"
expect 0 '^Free blocks: 181 ' -- "$INSPECT" freefrag "$img"
expect 0 '^ +32- +63 : +2 +103 ' -- "$INSPECT" freefrag "$img"
# the shortest and longest free extents themselves (64-69 of group 1, all
# of group 2), in blocks, as the label says: not their orders
expect 0 '^Min\. free extent: 6 blocks$' -- "$INSPECT" freefrag "$img"
expect 0 '^Max\. free extent: 64 blocks$' -- "$INSPECT" freefrag "$img"
expect 0 '^group +0 +full ' -- "$INSPECT" dump "$img"
expect 0 '^group +2 +uninit ' -- "$INSPECT" dump "$img"
expect 0 '^group +1 +bitmap .* free 54$' -- "$INSPECT" dump "$img"
expect 0 '^  free 64-69 \(6 blocks\)$' -- "$INSPECT" dump "$img" --group 1
expect 0 '^  free 80-127 \(48 blocks\)$' -- "$INSPECT" dump "$img" --group 1
expect 0 '"free_blocks": 181,' -- "$INSPECT" stats "$img" --json
"$INSPECT" stats "$img" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["groups"] == 4 and sum(h["blocks"] for h in d["histogram"]) == 181' ||
	fail "stats --json is not the JSON expected"

# usage and I/O errors: 2
expect 2 'usage' -- "$INSPECT"
expect 2 'usage' -- "$INSPECT" stats "$img"
expect 2 '' -- "$INSPECT" check "$dir/missing"

# group 1's descriptors damaged: quarantined, named with its byte offset
cp "$img" "$dir/bad"
printf '\xff' | dd of="$dir/bad" bs=1 seek=$((4096 + 64 + 12)) conv=notrunc status=none
expect 1 'byte 4160: group 1: no valid descriptor \(quarantined\)' -- "$INSPECT" check "$dir/bad"
expect 1 '1 quarantined.*NOT CLEAN' -- "$INSPECT" check "$dir/bad"
# the superblock damaged: the load fails, the offset is named
cp "$img" "$dir/badsb"
printf '\x00' | dd of="$dir/badsb" bs=1 seek=$((512 + 40)) conv=notrunc status=none
expect 1 'byte 512: superblock slot 1: bad superblock checksum' -- "$INSPECT" check "$dir/badsb"
# --help on stdout with status 0, --version names the library's version
expect 0 '^usage: bga-inspect check' -- "$INSPECT" --help
[ -z "$("$INSPECT" --help 2>&1 >/dev/null)" ] || fail "--help wrote to stderr"
expect 0 '^bga-inspect \(bgalloc\) [0-9]+\.[0-9]+\.[0-9]+$' -- "$INSPECT" --version
expect 2 'unknown option' -- "$INSPECT" check "$img" --bogus
expect 2 'bad offset' -- "$INSPECT" check "$img" --offset 12x

# no superblock at all: its own message, not "failed an invariant check"
: >"$dir/empty"
head -c 65536 /dev/urandom >"$dir/garbage"
for f in empty garbage; do
	expect 1 'does not load: ENODATA: no bgalloc superblock' -- "$INSPECT" check "$dir/$f"
done
# the area 8192 bytes in, as in a bgafs image: named, with the option to use
{ head -c 8192 /dev/zero; cat "$img"; } >"$dir/at8192"
expect 1 'starts at byte 8192 \(a bgafs image keeps it there\): try --offset 8192' -- "$INSPECT" check "$dir/at8192"
expect 1 'try --offset 8192' -- "$INSPECT" dump "$dir/at8192"
expect 0 ': generation 1, 256 blocks, 181 free' -- "$INSPECT" check "$dir/at8192" --offset 8192

# JSON stays valid for any file name: quotes, backslashes, control
# characters, a newline, bytes that are not UTF-8
odd=$(printf '%s/q"b\\s\tt\nn\001\377\303x.img' "$dir")
cp "$img" "$odd"
"$INSPECT" stats "$odd" --json | python3 -c '
import json, os, sys
d = json.load(sys.stdin)
want = sys.argv[1].encode("utf-8", "surrogateescape").decode("utf-8", "replace")
assert d["file"] == want, (d["file"], want)
assert d["free_blocks"] == 181' "$odd" || fail "stats --json of an odd file name is not valid JSON with that name"
echo "inspect_test: ok"
