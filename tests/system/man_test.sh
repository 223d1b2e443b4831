#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every function the shared library exports, and every BGA_EXTERN function
# of the public headers, has a man(3) page (scripts/mkman.py), and every
# page, man(1), the structs' 3type and bgalloc(7) included, renders with no
# groff warning; man_check.py checks each page's sections, ERRORS and NAME
# against the headers.
#   tests/system/man_test.sh LIBBGALLOC.SO MANDIR INCLUDEDIR
set -euo pipefail
lib=$1 man=$2 inc=$3
fail() { echo "man_test: $*"; exit 1; }
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" {sub(/@.*/, "", $3); print $3}' | sort -u)
# every declaration that starts with BGA_EXTERN (export.h only defines it)
declared=$(ls "$inc"/bgalloc.h "$inc"/bgalloc/*.h | grep -v '/export\.h$' | xargs cat | tr '\n' ' ' |
	grep -oE 'BGA_EXTERN[[:space:]][^;]*;' |
	sed -E 's/^([^(]*[^A-Za-z0-9_(])?([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\(.*/\2/' | sort -u)
[ -n "$exported" ] && [ -n "$declared" ] || fail "no functions found in $lib or $inc"
missing=0
set -f
for f in $exported $declared; do
	[ -f "$man/man3/$f.3" ] || { echo "man_test: no page for $f"; missing=1; }
done
[ $missing = 0 ] || fail "functions without a man(3) page"
set +f
for f in "$man"/man3/*.3 "$man"/man3/*.3type "$man"/man7/*.7 "$man"/man1/*.1; do
	[ -e "$f" ] || continue
	w=$(groff -man -Tutf8 -ww -z "$f" 2>&1) || fail "$f: groff failed: $w"
	[ -z "$w" ] || fail "$f: $w"
	grep -q '^\.SH DESCRIPTION' "$f" || fail "$f: no DESCRIPTION"
done
python3 "$(dirname "$0")/man_check.py" "$man" "$inc" || fail "the pages do not say what the headers say (above)"
echo "man_test: $(wc -w <<<"$exported") exported functions, $(ls "$man"/man3 | wc -l) pages, all render"
