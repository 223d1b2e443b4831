#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bench/report/bars.py: the fixture (tests/data/bars/replay.txt, a stored
# bga-replay output, so that a change of placement changes nothing here)
# judged bar by bar, a miss and a met each with their figures; the same
# verdicts from its Markdown table alone, and as a table (--markdown);
# every bar met exits 0, bad input exits 2; and bga-replay's output of
# today still parses, a line a bar (no verdict asserted: that is the
# policy's, not the script's).
#   tests/system/bars_test.sh PYTHON BARS_PY FIXTURE BGA_REPLAY TRACEDIR
set -u
PY=$1 BARS=$2 FIX=$3 R=$4 TRACES=$5
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "bars_test: $*"; exit 1; }
# shellcheck source=tests/system/expect.sh
. "$(dirname "$0")/expect.sh"

out=$("$PY" "$BARS" "$FIX")
[ $? = 1 ] || fail "a miss did not exit 1: $out"
has() { grep -qE -- "$1" <<<"$out" || fail "no line matching '$1' in:
$out"; }
# fioseq: bgalloc 1.56 extents a file against ext2's 17.39; its end score
# 0.1857 against 0.5404; two requests placed partly against none
has '^bgafs-fioseq\.trace +ext/file <= 1\.05 +missed +1\.56 vs 1\.05; reached by none \(best bgalloc 1\.56\)$'
has '^bgafs-fioseq\.trace +ext/file <= peer +met +1\.56 vs 17\.39$'
has '^bgafs-fioseq\.trace +end score <= peer +met +0\.1857 vs 0\.5404$'
has '^bgafs-fioseq\.trace +end score <= 1\.3x peer +met +0\.1857 vs 0\.7025 \(1\.3x 0\.5404\)$'
has '^bgafs-fioseq\.trace +mean <= 2x peer or 0\.05 +met +0\.1191 vs 0\.5230 \(2x 0\.2615\)$'
has '^bgafs-fioseq\.trace +shorts <= peer +missed +2 vs 0$'
# usrinc: every allocator at 1.00 extents a file; bgalloc ends at 0.2435
# against 0.1508, past 1.3x; one request failed against none
has '^bgafs-usrinc\.trace\.xz +ext/file <= 1\.05 +met +1\.00 vs 1\.05; reached by bgalloc, ext2, bgalloc,windows=off, bestfit$'
has '^bgafs-usrinc\.trace\.xz +end score <= peer +missed +0\.2435 vs 0\.1508$'
has '^bgafs-usrinc\.trace\.xz +end score <= 1\.3x peer +missed +0\.2435 vs 0\.1960 \(1\.3x 0\.1508\)$'
has '^bgafs-usrinc\.trace\.xz +shorts <= peer +missed +1 vs 0$'
# objects: the 3x bar in place of the file bars, 0.05 the mean's limit
has '^objects\.trace +objects end <= 3x peer +met +0\.0278 vs 0\.0834 \(3x 0\.0278\)$'
has '^objects\.trace +mean <= 2x peer or 0\.05 +met +0\.0089 vs 0\.0500 \(0\.05\)$'
! grep -qE '^objects\.trace +(ext/file|end score)' <<<"$out" || fail "objects judged on the file bars: $out"
has '^  shorts <= peer +1 of 3 met$'
has '^bars met: 10 of 15, missed: 5$'
[ "$(grep -cE ' (met|missed) ' <<<"$out")" = 15 ] || fail "not 15 verdicts: $out"

# the Markdown table alone gives the same verdicts
sed -n '/^| history/,/^$/p' "$FIX" >"$dir/md.txt"
grep -q '^trace ' "$dir/md.txt" && fail "the Markdown part holds a text table"
md=$("$PY" "$BARS" <"$dir/md.txt")
[ "$md" = "$out" ] || fail "the Markdown table judged apart: $(diff <(echo "$out") <(echo "$md"))"

# between the bars' limits: ext2 against bgalloc with windows off on
# usrinc ends within 1.3x (0.1508 against 0.1455) and its mean within
# 2x (0.0857 against 0.0603); against bgalloc on fioseq its shorts meet
other=$("$PY" "$BARS" --alloc ext2 --peer bgalloc,windows=off "$FIX")
for pat in '^bgafs-usrinc\.trace\.xz +end score <= peer +missed +0\.1508 vs 0\.1455$' \
	'^bgafs-usrinc\.trace\.xz +end score <= 1\.3x peer +met +0\.1508 vs 0\.1891 \(1\.3x 0\.1455\)$' \
	'^bgafs-usrinc\.trace\.xz +mean <= 2x peer or 0\.05 +met +0\.0857 vs 0\.1206 \(2x 0\.0603\)$'; do
	grep -qE "$pat" <<<"$other" || fail "ext2 against bgalloc,windows=off: no line matching '$pat' in: $other"
done
expect 1 '^bgafs-fioseq\.trace +shorts <= peer +met +0 vs 2$' -- "$PY" "$BARS" --alloc ext2 --peer bgalloc "$FIX"
# the objects history alone meets every bar (exit 0); with the peer's end
# score lowered to 0.0100, 0.0278 is within 3x, and past it at 0.0090
sed -n '/^trace objects\.trace/,/^$/p' "$FIX" >"$dir/objects.txt"
expect 0 '^bars met: 3 of 3, missed: 0$' -- "$PY" "$BARS" "$dir/objects.txt"
for low in 0.0100:met 0.0090:missed; do
	awk -v s="${low%:*}" '$1 == "ext2" && NF == 12 { $9 = s } 1' "$dir/objects.txt" >"$dir/low.txt"
	expect "$([ "${low#*:}" = met ] && echo 0 || echo 1)" \
		"^objects\.trace +objects end <= 3x peer +${low#*:} +0\.0278 vs " -- "$PY" "$BARS" "$dir/low.txt"
done

# --markdown: the same verdicts, a row a history, "-" where a bar does not apply
tab=$("$PY" "$BARS" --markdown "$FIX")
[ "$(grep -cE '^[|] (bgafs-|objects)' <<<"$tab")" = 3 ] || fail "--markdown has not 3 rows: $tab"
grep -qF '| objects.trace | - | - | - | - | met 0.0089 / 0.0500 (0.05) | met 0 / 0 | met 0.0278 / 0.0834 (3x 0.0278) |' <<<"$tab" ||
	fail "--markdown's objects row differs from its lines: $tab"
grep -qE '^[|] bgafs-fioseq\.trace [|] [*][*]missed[*][*] 1\.56 / 1\.05;.* [|] [*][*]missed[*][*] 2 / 0 [|] - [|]$' <<<"$tab" ||
	fail "--markdown's fioseq row differs from its lines: $tab"
grep -q '^bars met: 10 of 15, missed: 5$' <<<"$tab" || fail "--markdown without the count: $tab"

# bad input: no history, an allocator not in the output, a missing file
: >"$dir/empty.txt"
expect 2 'no history in the output' -- "$PY" "$BARS" "$dir/empty.txt"
expect 2 "bgafs-fioseq.trace: no row of mballoc \(run it with -a mballoc\)" -- "$PY" "$BARS" --peer mballoc "$FIX"
expect 2 "bars: .*missing.txt" -- "$PY" "$BARS" "$dir/missing.txt"
# a row it cannot read is refused, never left out of the bars; a score
# printed as -0.0000 (a negative zero) is a figure, read as 0
sed -E '0,/^bestfit /s/^(bestfit .*)$/\1 junk/' "$FIX" >"$dir/badrow.txt"
expect 2 "bars: bgafs-fioseq.trace: cannot read this row of its table: 'bestfit .* junk'" -- "$PY" "$BARS" "$dir/badrow.txt"
awk '$1 == "bestfit" && NF == 12 { $10 = "-0.0000" } { print }' "$FIX" >"$dir/negzero.txt"
"$PY" "$BARS" --alloc bestfit "$dir/negzero.txt" >"$dir/negzero.out"
grep -qE '^bars met: ' "$dir/negzero.out" || fail "a -0.0000 score was not read: $(cat "$dir/negzero.out")"

# today's bga-replay output parses: a line a bar of each history (6 for
# one of files, 3 for one of objects), whatever the verdicts
"$R" run "$TRACES/bgafs-dbench.trace" "$TRACES/objects.trace" -a bgalloc -a ext2 --markdown >"$dir/live.txt" ||
	fail "bga-replay run failed"
live=$("$PY" "$BARS" "$dir/live.txt")
case $? in 0 | 1) ;; *) fail "bars.py refused bga-replay's output: $live" ;; esac
if [ "$(grep -cE '^bgafs-dbench\.trace .* (met|missed) ' <<<"$live")" != 6 ] ||
	[ "$(grep -cE '^objects\.trace .* (met|missed) ' <<<"$live")" != 3 ]; then
	fail "bga-replay's output did not parse to 6 + 3 verdicts: $live"
fi
# with the oracles' rows (-a oracle): a missed bar says whether the best
# oracle meets it.  Planted after each history's bestfit row: on fioseq
# an oracle at 1.00 extents a file with one failure, and an oracle,death
# at 1.20 with none; on usrinc one ending at 0.0700
awk '/^trace bgafs-fioseq/ { h = "f" } /^trace bgafs-usrinc/ { h = "u" } /^trace objects/ { h = "" }
	{ print }
	$1 == "bestfit" && NF == 12 && h == "f" {
		printf "%-24s %10s %10s %6s %8s %7s %7s %8s %8s %8s %8s %9s\n", "oracle", $2, $3, $4, "1.00", 0, "0.00", 1, "0.0100", "0.0100", "0.0400", $12
		printf "%-24s %10s %10s %6s %8s %7s %7s %8s %8s %8s %8s %9s\n", "oracle,death", $2, $3, $4, "1.20", 0, "0.00", 0, "0.0000", "0.0000", "0.0300", $12 }
	$1 == "bestfit" && NF == 12 && h == "u" {
		printf "%-24s %10s %10s %6s %8s %7s %7s %8s %8s %8s %8s %9s\n", "oracle", $2, $3, $4, "1.00", 0, "0.00", 1, "0.0700", "0.0700", "0.0400", $12 }' \
	"$FIX" >"$dir/oracle.txt"
orc=$("$PY" "$BARS" "$dir/oracle.txt")
[ $? = 1 ] || fail "a miss with the oracles did not exit 1: $orc"
for pat in '^bgafs-fioseq\.trace +ext/file <= 1\.05 +missed +1\.56 vs 1\.05; reached by none \(best bgalloc 1\.56\); oracle reaches 1\.00 \(oracle\)$' \
	'^bgafs-fioseq\.trace +shorts <= peer +missed +2 vs 0; oracle reaches 0 \(oracle,death\)$' \
	'^bgafs-usrinc\.trace\.xz +end score <= peer +missed +0\.2435 vs 0\.1508; oracle reaches 0\.0700 \(oracle\)$' \
	'^bgafs-usrinc\.trace\.xz +shorts <= peer +missed +1 vs 0; not even the oracle \(oracle 1\)$' \
	'^bgafs-usrinc\.trace\.xz +ext/file <= 1\.05 +met +1\.00 vs 1\.05; reached by bgalloc, ext2, bgalloc,windows=off, bestfit$' \
	'^bgafs-fioseq\.trace +ext/file <= peer +met +1\.56 vs 17\.39$' \
	'^bars met: 10 of 15, missed: 5$'; do
	grep -qE "$pat" <<<"$orc" || fail "with the oracles: no line matching '$pat' in: $orc"
done
# an oracle past the bar too: "not even the oracle", on the 1.05 bar as on the others
sed -E 's/^(oracle,death +[0-9]+ +[0-9]+ +[0-9]+ +)1\.20/\11.09/; s/^(oracle +[0-9]+ +[0-9]+ +[0-9]+ +)1\.00/\11.10/' \
	"$dir/oracle.txt" >"$dir/oracle2.txt"
expect 1 '^bgafs-fioseq\.trace +ext/file <= 1\.05 +missed +1\.56 vs 1\.05; reached by none \(best bgalloc 1\.56\); not even the oracle \(oracle,death 1\.09\)$' \
	-- "$PY" "$BARS" "$dir/oracle2.txt"

echo "bars_test: the fixture's misses and mets, its Markdown table alike, bad input, bga-replay's output parses"
