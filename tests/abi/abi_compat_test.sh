#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A program built against the 0.1.0 header and library runs against the
# library of this build.  "Built against the 0.1.0 library" is made
# exact without building 0.1.0: the program is linked against a stub
# libbgalloc.so.0 that defines the 0.1.0 functions with no symbol
# versions, as the 0.1.0 library did, so its references are unversioned,
# exactly as a real 0.1.0 binary's; then it runs against LIBDIR's
# libbgalloc.so.0.
#   tests/abi/abi_compat_test.sh LIBDIR SOURCE_DIR
set -euo pipefail
libdir=$1 src=$2
fix=$src/tests/abi/include-0.1.0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "abi_compat_test: $*"; exit 1; }
cat "$fix"/bgalloc.h "$fix"/bgalloc/counter.h "$fix"/bgalloc/bitmap.h "$fix"/bgalloc/locktab.h | tr '\n' ' ' |
	grep -oE 'BGA_EXTERN[[:space:]][^;]*;' |
	sed -E 's/^([^(]*[^A-Za-z0-9_(])?([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\(.*/void \2(void) {}/' >"$tmp/stub.c"
[ "$(wc -l <"$tmp/stub.c")" -ge 60 ] || fail "found only $(wc -l <"$tmp/stub.c") 0.1.0 functions"
mkdir "$tmp/stub"
cc -shared -fPIC -o "$tmp/stub/libbgalloc.so.0" -Wl,-soname,libbgalloc.so.0 "$tmp/stub.c"
ln -s libbgalloc.so.0 "$tmp/stub/libbgalloc.so"
cc -O1 -Wall -Werror -fPIE -pie -I "$fix" -o "$tmp/consumer" "$src/tests/abi/consumer_0_1.c" -L"$tmp/stub" -lbgalloc -ldl
# its references to bgalloc carry no version, as a 0.1.0 binary's
out=$(readelf -V "$tmp/consumer") && ! grep -q 'BGA_' <<<"$out" || fail "the 0.1.0 consumer was linked with versioned references"
# it checks that they bind to the 0.1.0 forms, then uses every struct
LD_LIBRARY_PATH=$libdir "$tmp/consumer" || fail "the 0.1.0 consumer failed against $libdir/libbgalloc.so.0"
