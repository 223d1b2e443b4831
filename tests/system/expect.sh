# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by the system tests that check a program's exit status and
# output; the sourcing script defines fail MESSAGE (prints and exits 1).
expect() { # expect STATUS PATTERN -- command...: exit status and a line matching
	local want=$1 pat=$2 out rc
	shift 3
	out=$("$@" 2>&1); rc=$?
	[ "$rc" = "$want" ] || fail "'$*' exited $rc, expected $want: $out"
	[ -z "$pat" ] || grep -qE -- "$pat" <<<"$out" || fail "'$*' printed no line matching '$pat':
$out"
}
