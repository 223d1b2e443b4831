#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# bga-replay (tools/replay): a Ceph-format free-dump imported exactly
# and its bad forms refused; try against bga_alloc_vec called directly;
# the traces of tests/data/traces replayed to their recorded end hashes,
# twice alike; --verify of the bgafs traces; the text form round trip;
# fresh recordings through the recorder (bga-rec-objects) and through
# bgafs -o trace= (where FUSE mounts) applied back to their end.
#   tests/system/replay_test.sh BGA_REPLAY REPLAY_DIRECT BGA_INSPECT TRACEDIR BGA_REC_OBJECTS REC_THREADS [BGAFS]
set -u
R=$1 DIRECT=$2 INSPECT=$3 TRACES=$4 RECOBJ=$5 RECTHREADS=$6 BGAFS=${7:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "replay_test: $*"; exit 1; }
# shellcheck source=tests/system/expect.sh
. "$(dirname "$0")/expect.sh"

# A dump as Ceph's JSONFormatter prints `bluestore allocator dump block`
# (pretty, four-space indent): 64 KiB unit, 4096 units, random free
# extents, some touching (the dump's avl and bitmap halves may touch).
python3 - "$dir" <<'PY' || fail "cannot write the dumps"
import json, random, sys
d = sys.argv[1]
random.seed(35)
unit, units = 0x10000, 4096
ext, at = [], 1
while True:
    at += random.choice([0, 0, 1, 2, 5, 17])
    n = random.choice([1, 1, 2, 3, 8, 40, 100])
    if at + n > units:
        break
    ext.append((at, n))
    at += n
def dump(path, extents, cap=units * unit, au=unit):
    doc = {"capacity": cap, "alloc_unit": au, "alloc_type": "hybrid", "alloc_name": "block",
           "extents": [{"offset": "0x%x" % (o * unit), "length": "0x%x" % (n * unit)} for o, n in extents]}
    with open(path, "w") as f:
        f.write(json.dumps(doc, indent=4))
dump(d + "/dump.json", ext)
merged = []
for o, n in ext:
    if merged and merged[-1][0] + merged[-1][1] == o:
        merged[-1][1] += n
    else:
        merged.append([o, n])
with open(d + "/want", "w") as f:
    f.write("nblocks %d\nkind free\n" % units + "".join("%d %d\n" % (o, n) for o, n in merged))
with open(d + "/sum", "w") as f:
    f.write("%d\n" % sum(n for o, n in ext))
# bad forms; each line of the file the message must name
# (extent i's object opens on line 7 + 4 i, its offset on 8 + 4 i, its length on 9 + 4 i)
bad = {
    "malformed": (ext, lambda s: s.replace('"0x%x"' % (ext[3][1] * unit), '"0x%xg"' % (ext[3][1] * unit), 1), None),
    "overlap": (ext[:5] + [(ext[2][0] + ext[2][1] - 1, 2)] + ext[5:], None, 8 + 4 * 5),
    "past": (ext + [(units - 1, 2)], None, 8 + 4 * len(ext)),
    "unaligned": (ext, lambda s: s.replace('"0x%x"' % (ext[4][0] * unit), '"0x%x"' % (ext[4][0] * unit + 0x1000), 1), 8 + 4 * 4),
}
for name, (e, edit, line) in bad.items():
    dump(d + "/" + name + ".json", e)
    if edit:
        s = open(d + "/" + name + ".json").read()
        open(d + "/" + name + ".json", "w").write(edit(s))
    if line is None:  # the malformed length: find its line
        for i, l in enumerate(open(d + "/" + name + ".json").read().split("\n")):
            if "g\"" in l:
                line = i + 1
    open(d + "/" + name + ".line", "w").write("%d\n" % line)
PY

# the import is exact: free count, the same extents merged, a clean image
sum=$(cat "$dir/sum")
expect 0 "^free blocks: $sum\$" -- "$R" import ceph "$dir/dump.json" -o "$dir/img"
out=$("$R" import ceph "$dir/dump.json" -o "$dir/img")
score=$(sed -n 's/^bgalloc score: //p' <<<"$out")
[ "$score" = "$(sed -n 's/^bgalloc score (bga_stats): //p' <<<"$out")" ] || fail "bgalloc score differs from bga_stats': $out"
"$R" extents "$dir/img" >"$dir/got" || fail "extents failed"
diff "$dir/want" "$dir/got" >/dev/null || fail "bga_foreach_free's extents are not the dump's, merged: $(diff "$dir/want" "$dir/got" | head)"
expect 0 ", 4096 blocks, $sum free, 1 groups .*clean\$" -- "$INSPECT" check "$dir/img"
# the plain list of the same extents makes the same image
expect 0 "^free blocks: $sum\$" -- "$R" import extents "$dir/want" -o "$dir/img2"
[ "$("$R" hash "$dir/img")" = "$("$R" hash "$dir/img2")" ] || fail "import extents differs from import ceph"
# Ceph's score by its definition: one run is 0, every unit alone is 1
printf 'nblocks 64\n0 64\n' >"$dir/one"
expect 0 '^ceph score: 0\.000000$' -- "$R" import extents "$dir/one" -o "$dir/i1"
{ echo "nblocks 64"; for i in $(seq 0 2 62); do echo "$i 1"; done; } >"$dir/alone"
expect 0 '^ceph score: 1\.000000$' -- "$R" import extents "$dir/alone" -o "$dir/i2"
expect 0 '^bgalloc score: 1\.000000$' -- "$R" import extents "$dir/alone" -o "$dir/i2"

# bad input: a message naming the line, no image
for b in malformed overlap past unaligned; do
	rm -f "$dir/bad.img"
	expect 1 "line $(cat "$dir/$b.line")[^0-9]" -- "$R" import ceph "$dir/$b.json" -o "$dir/bad.img"
	[ ! -e "$dir/bad.img" ] || fail "$b: an image was made"
	ls "$dir" | grep -q 'bad.img.tmp' && fail "$b: a temporary image was left"
done
printf 'nblocks 64\n0 8\n4 8\n' >"$dir/ovl"
expect 1 'line 3[^0-9].*overlaps .*line 2$' -- "$R" import extents "$dir/ovl" -o "$dir/bad.img"
printf 'nblocks 64\n0 8\n9 x\n' >"$dir/num"
expect 1 'line 3: length: malformed number "x"' -- "$R" import extents "$dir/num" -o "$dir/bad.img"
[ ! -e "$dir/bad.img" ] || fail "the extent list made an image"

# try: what bga_alloc_vec called directly gets (64 KiB blocks: 1 MiB at 128 KiB is 16 at 2)
"$R" try "$dir/img" 40 1M 128K --block-size 64K -v >"$dir/try" || fail "try failed"
sed -n 's/^\(request [0-9]*: [^,]*, [0-9]* extents, [0-9]* blocks\), [0-9]* ns:\{0,1\}/\1:/p' "$dir/try" >"$dir/try.req"
"$DIRECT" "$dir/img" 40 16 2 >"$dir/direct" || fail "replay_direct failed"
diff "$dir/direct" "$dir/try.req" >/dev/null || fail "try differs from bga_alloc_vec: $(diff "$dir/direct" "$dir/try.req" | head -5)"
grep -q '^ceph score: .* before, .* after$' "$dir/try" || fail "try printed no scores"
expect 2 'multiples of the block size' -- "$R" try "$dir/img" 4 1M 96K --block-size 64K
expect 2 'not a power of two' -- "$R" try "$dir/img" 4 3M 192K --block-size 64K

# the traces: the recorded end hashes, twice alike
[ -f "$TRACES/hashes.txt" ] || fail "no $TRACES/hashes.txt"
n=0
# (a trace kept in parts, NAME.trace.xz.00, .01, ..., is read by its name)
for t in "$TRACES"/*.trace "$TRACES"/*.trace.xz "$TRACES"/*.trace.xz.00; do
	t=${t%.00}
	b=$(basename "$t")
	out1=$("$R" run "$t" -a bgalloc -a bgalloc,windows=off -a ext2) || fail "run $b: $out1"
	# twice alike: the small traces show it, the long histories would only take longer
	case $b in *.xz) ;; *)
		out2=$("$R" run "$t" -a bgalloc -a bgalloc,windows=off) || fail "run $b: $out2"
		[ "$(grep '^hash bgalloc' <<<"$out1")" = "$(grep ^hash <<<"$out2")" ] || fail "$b: two replays ended apart" ;;
	esac
	while read -r tr alloc hash; do
		[ "$tr" = "$b" ] || continue
		got=$(awk -v a="$alloc" '$1 == "hash" && $2 == a {print $3}' <<<"$out1")
		[ "$got" = "$hash" ] || fail "$b on $alloc ends in $got, hashes.txt says $hash (after a change to placement: tests/data/traces/regen_hashes.sh)"
		n=$((n + 1))
	done < <(grep -v '^#' "$TRACES/hashes.txt")
	case $b in bgafs-*)
		expect 0 "end matches the recording's free map" -- "$R" run "$t" --verify ;;
	esac
	# the text form reads back to the same records (the small traces again)
	case $b in *.xz) continue ;; esac
	"$R" text "$t" -o "$dir/t.txt" && "$R" binary "$dir/t.txt" -o "$dir/t.bin" && "$R" text "$dir/t.bin" -o "$dir/t2.txt" ||
		fail "$b: text round trip failed"
	cmp -s "$dir/t.txt" "$dir/t2.txt" || fail "$b: the text form does not read back alike"
done
[ $n -ge 9 ] || fail "only $n hashes checked"
# every configuration knob runs, and a wrong one is refused
expect 0 '^hash bgalloc,group=4096,counters=atomic,lock=global,windows=off [0-9a-f]{16}$' -- \
	"$R" run "$TRACES/bgafs-dbench.trace" -a bgalloc,group=4096,counters=atomic,lock=global,windows=off
expect 2 "'windows=maybe' is not one of" -- "$R" run "$TRACES/objects.trace" -a bgalloc,windows=maybe
expect 2 "unknown allocator 'worstfit'" -- "$R" run "$TRACES/objects.trace" -a worstfit
# a goal past a file whose last block the replay put at the volume's end
# is no goal past the end: every allocator places it (recorded block 5 is
# the replay's 63, the last; the next write aims at 6)
printf '%s\n' "bgatrace 1" "nblocks 64" "blocks_per_group 64" "source edge" "0 1 0 init_free 0 : 63+1" \
	"1 1 0 rsv_open 0 1" "2 1 0 alloc 0 1 18446744073709551615 1 1 0 0 : 5+1" "3 1 0 free 0 10 1" \
	"4 1 0 alloc 0 1 6 1 1 0 0 : 6+1" "5 1 0 rsv_close 0 1" >"$dir/edge.txt"
out=$("$R" run "$dir/edge.txt" -a bgalloc -a bgalloc,windows=off -a ext2 -a firstfit -a bestfit -a mballoc) ||
	fail "the edge trace: $out"
! grep -q ' failed, ' <<<"$out" || fail "a goal after the volume's last block failed: $out"
# blocks the replay got past what the recording got go back and are not
# the file's: the file's next request, which takes them again, keeps it
# one extent (recorded 10+4 of 8 asked for, then 14+4 after it)
printf '%s\n' "bgatrace 1" "nblocks 64" "blocks_per_group 64" "source extra" "0 1 0 init_free 0 : 0+64" \
	"1 1 0 rsv_open 0 1" "2 1 0 alloc 0 1 18446744073709551615 1 8 0 0 : 10+4" \
	"3 1 0 alloc 0 1 14 1 4 0 0 : 14+4" "4 1 0 rsv_close 0 1" >"$dir/extra.txt"
for a in bgalloc ext2 firstfit bestfit mballoc; do
	expect 0 "^$a +5 +[0-9]+ +1 +1\.00 " -- "$R" run "$dir/extra.txt" -a $a
done
# the reference allocators place as they say (refalloc.h): a hole of 4 at
# 0 and one of 2 at 12, then a request of 2: first fit takes the first
# hole (3 free extents left), best fit the one it fills (2)
N=18446744073709551615
printf '%s\n' "bgatrace 1" "nblocks 64" "blocks_per_group 64" "source fits" "0 1 0 init_free 0 : 0+64" \
	"1 1 0 alloc 0 0 $N 4 4 0 0 : 0+4" "2 1 0 alloc 0 0 $N 8 8 0 0 : 4+8" "3 1 0 alloc 0 0 $N 2 2 0 0 : 12+2" \
	"4 1 0 alloc 0 0 $N 4 4 0 0 : 14+4" "5 1 0 free 0 0 4" "6 1 0 free 0 12 2" \
	"7 1 0 alloc 0 0 $N 2 2 0 0 : 0+2" >"$dir/fits.txt"
expect 0 '^firstfit +3 +46 +46$' -- "$R" run "$dir/fits.txt" -a firstfit
expect 0 '^bestfit +2 +46 +46$' -- "$R" run "$dir/fits.txt" -a bestfit
# mballoc packs small goal-less requests into the locality group's
# preallocation: the hole a free leaves before its front waits (2 free
# extents, where first fit fills it: 1)
printf '%s\n' "bgatrace 1" "nblocks 1024" "blocks_per_group 1024" "source lg" "0 1 0 init_free 0 : 0+1024" \
	"1 1 0 alloc 0 0 $N 4 4 0 0 : 0+4" "2 1 0 alloc 0 0 $N 4 4 0 0 : 4+4" "3 1 0 free 0 0 4" \
	"4 1 0 alloc 0 0 $N 4 4 0 0 : 0+4" >"$dir/lg.txt"
expect 0 '^mballoc +2 +1012 +1012$' -- "$R" run "$dir/lg.txt" -a mballoc
expect 0 '^firstfit +1 +1016 +1016$' -- "$R" run "$dir/lg.txt" -a firstfit
# and normalises a file's first block to a preallocation of 16 that its
# next block goes on in, past an object placed meanwhile (one extent, where
# first fit splits the file: 2); the close gives the rest back
printf '%s\n' "bgatrace 1" "nblocks 64" "blocks_per_group 64" "source pa" "0 1 0 init_free 0 : 0+64" \
	"1 1 0 rsv_open 0 1" "2 1 0 alloc 0 1 $N 1 1 0 0 : 0+1" "3 1 0 alloc 0 0 $N 20 20 0 0 : 1+20" \
	"4 1 0 alloc 0 1 1 1 1 0 0 : 21+1" "5 1 0 rsv_close 0 1" >"$dir/pa.txt"
expect 0 '^mballoc +5 +[0-9]+ +1 +1\.00 ' -- "$R" run "$dir/pa.txt" -a mballoc
expect 0 '^firstfit +5 +[0-9]+ +1 +2\.00 ' -- "$R" run "$dir/pa.txt" -a firstfit
expect 0 '^mballoc +2 +28 +28$' -- "$R" run "$dir/pa.txt" -a mballoc
# and pass the replay's checks on the small histories: every free and
# commit accepted, every extent as promised, twice the same end
for t in "$TRACES"/*.trace; do
	out=$("$R" run "$t" -a firstfit -a bestfit -a mballoc -a oracle -a oracle,death \
		-a oracle,death,files=off --reps 2) ||
		fail "$(basename "$t") on the references: $out"
done
# several traces: each reported, then side by side (one row an allocator
# of each); --out makes a directory a trace
O=$TRACES/objects.trace D=$TRACES/bgafs-dbench.trace
expect 0 '' -- "$R" run "$O" "$D" -a bgalloc -a ext2 -o "$dir/multi" --markdown
out=$("$R" run "$O" "$D" -a bgalloc -a ext2 -o "$dir/multi" --markdown) || fail "run of two traces failed"
[ "$(grep -cE '^\| (objects.trace|bgafs-dbench.trace|) \| (bgalloc|ext2) \|' <<<"$out")" = 4 ] ||
	fail "the side-by-side table has not 4 rows: $out"
# the side-by-side rows say what each trace's own table says
awk -F' *[|] *' '
	/^trace / { tr = $0; sub(/^trace /, "", tr); sub(/:.*/, "", tr) }
	/^(bgalloc|ext2) +[0-9]/ { if (split($0, f, / +/) == 12) { score[tr "/" f[1]] = f[9]; mean[tr "/" f[1]] = f[11] } }
	/^the best any allocator reached/ { best = 1 }
	/^[|] / && best { if ($2 != "history" && $2 !~ /^-/) { brow++
			# the best end score is the lower of the two rows, and names who
			if ($4 != sprintf("%.4f", lo[$2]) " (" who[$2] ")" && $4 != sprintf("%.4f", lo[$2]) " (all)") {
				print "best row " $2 ": " $4 " is not " lo[$2] " (" who[$2] ")"; bad = 1 } }
		next }
	/^[|] / { if ($2 != "") h = $2
		if (h == "history") next
		if (!(h in lo) || $5 + 0 < lo[h]) { lo[h] = $5 + 0; who[h] = $3 }
		if (!(h "/" $3 in score)) { print "no table row for " h "/" $3; bad = 1 }
		else if (score[h "/" $3] != $5 || mean[h "/" $3] != $6) { print "row " h "/" $3 " differs"; bad = 1 }
		rows++ }
	END { exit bad || rows != 4 || brow != 2 }' <<<"$out" ||
	fail "the side-by-side table, or the best of it, differs from the traces' tables: $out"
[ -f "$dir/multi/objects/replay.json" ] && [ -f "$dir/multi/bgafs-dbench/replay.json" ] || fail "no replay.json a trace"
# the histogram at the end adds up to the free map; the largest request
# placed whole is no longer than the longest free run nor a group, and the
# peer (first fit over the whole bitmap) places the longest run there is
python3 - "$dir/multi/objects/replay.json" <<'PY' || fail "the end's figures do not add up"
import json, sys
j = json.load(open(sys.argv[1]))
for a in j["allocators"]:
    for m in [a["end"]] + ([a["full"]] if "full" in a else []):
        assert sum(h["extents"] for h in m["histogram"]) == m["free_extents"], a["allocator"]
        assert sum(h["blocks"] for h in m["histogram"]) == m["free_blocks"], a["allocator"]
        assert all(h["from"] <= h["blocks"] // h["extents"] < 2 * h["from"] for h in m["histogram"])
        assert 0 < m["largest_whole_request"] <= min(m["longest_run"], 32768), a["allocator"]
        if a["allocator"] == "ext2":
            assert m["largest_whole_request"] == min(m["longest_run"], 32768), m
PY
# the fill moment: the first record after which PCT% of the capacity is
# in use, as the recorded results say (deferred frees at their commit)
fill_at() { # TRACE PCT: the 1-based record, from the text form
	"$R" text "$1" | awk -v pct="$2" '
		/^nblocks / { cap = $2 } /^first_data_block / { cap -= $2; used = cap }
		/^[0-9]/ && $5 == 0 {
			n++; len = 0
			for (i = 1; i <= NF; i++) if ($i == ":") for (k = i + 1; k <= NF; k++) { split($k, e, "+"); len += e[2] }
			if ($4 == "init_free" || $4 == "free_vec") used -= len
			else if ($4 == "alloc" || $4 == "alloc_vec") used += len
			else if ($4 == "free") used -= $7
			else if ($4 == "claim") used += $7
			else if ($4 == "free_deferred") { pend[n] = $7; txn[n] = $8 }
			else if ($4 == "commit") for (k in pend) if (txn[k] <= $6) { used -= pend[k]; delete pend[k] }
			if (used * 100 >= pct * cap) { print n; exit }
		}'
}
for pct in 50 90; do
	at=$(fill_at "$O" $pct)
	[ -n "$at" ] || fail "objects.trace never $pct% full by the text form"
	expect 0 "^$pct% full first after record $at of " -- "$R" run "$O" -a bgalloc --full $pct
done
expect 0 '^never 100% full: at most [0-9]+ of 16384 blocks' -- "$R" run "$O" --full 100
# bad input: a clear message, nothing written
for bad in "--full 0" "--full 101" "--full x"; do
	# shellcheck disable=SC2086
	expect 2 'a percent from 1 to 100' -- "$R" run "$O" $bad -o "$dir/none"
done
expect 2 "'windows=maybe' is not one of" -- "$R" run "$O" "$D" -a bgalloc -a bgalloc,windows=maybe -o "$dir/none"
expect 1 "$dir/missing.trace: No such file" -- "$R" run "$O" "$dir/missing.trace" -o "$dir/none"
# --verify of several traces: one whose recorded end was changed fails,
# and the next is checked still
"$R" text "$D" | awk '$4 == "end" {$6 = "12345"} 1' >"$dir/badend.txt"
out=$("$R" run "$dir/badend.txt" "$TRACES/bgafs-exerciser.trace" --verify)
[ $? = 1 ] || fail "--verify of a changed end exited 0"
[ "$(grep -c '^verify: .* end differs from' <<<"$out")" = 1 ] && [ "$(grep -c '^verify: .* end matches' <<<"$out")" = 1 ] ||
	fail "--verify of two traces, one changed: $out"
# an xz-compressed trace, in either form, reads as the trace itself
if command -v xz >/dev/null; then
	xz -c "$O" >"$dir/o.trace.xz" && "$R" text "$O" | xz -c >"$dir/o.txt.xz" || fail "xz failed"
	want=$("$R" run "$O" -a ext2 | grep ^hash)
	[ "$("$R" run "$dir/o.trace.xz" -a ext2 | grep ^hash)" = "$want" ] || fail "the xz trace replays apart"
	[ "$("$R" run "$dir/o.txt.xz" -a ext2 | grep ^hash)" = "$want" ] || fail "the xz text form replays apart"
fi
head -c 4000 "$TRACES/bgafs-kernel.trace.xz.00" >"$dir/cut.trace.xz"
expect 1 'cut.trace.xz: xz: truncated' -- "$R" run "$O" "$dir/cut.trace.xz" -o "$dir/none"
[ ! -e "$dir/none" ] || fail "bad input to run wrote $dir/none"
# a damaged text trace is refused with its line
"$R" text "$TRACES/objects.trace" | sed '12s/alloc_vec 0 0/alloc_vec 0 x/' >"$dir/bad.txt"
expect 1 '^.*bad.txt: line 12: malformed argument' -- "$R" run "$dir/bad.txt"
# a fresh recording: applied as recorded it ends where the recording
# ended, and replayed on the configuration it was recorded on (one thread,
# CPU 0) it makes the same choices
"$RECOBJ" "$dir/rec.trace" 7 2048 >/dev/null || fail "bga-rec-objects failed"
expect 0 "end matches the recording's free map" -- "$R" run "$dir/rec.trace" --verify
end=$("$R" text "$dir/rec.trace" | awk '$4 == "end" {print $6}')
[ -n "$end" ] || fail "the recording has no end record"
end=$(printf '%016x' "$end")
expect 0 "^hash bgalloc $end\$" -- "$R" run "$dir/rec.trace"
# eight threads recording at once, each yielding between its call and
# its record, blocks passing between them: applied in seq order, every
# record applies and the end is the recording's (with the free's seq
# taken after its call instead, 2 runs in 3 failed: two runs here)
for _ in 1 2; do
	BGA_REC_YIELD=1 "$RECTHREADS" "$dir/mt.trace" 8 20000 || fail "rec_threads failed"
	expect 0 "end matches the recording's free map" -- "$R" run "$dir/mt.trace" --verify
done
# bgafs -o trace=: the trace applied ends in the free map of the image the unmount left
if [ -n "$BGAFS" ] && [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
	mkdir -p "$dir/mnt"
	"$BGAFS" mkfs "$dir/fs.img" 32M >/dev/null || fail "bgafs mkfs failed"
	if "$BGAFS" mount -o "trace=$dir/fs.trace" "$dir/fs.img" "$dir/mnt" 2>/dev/null; then
		for i in 1 2 3 4 5 6; do
			dd if=/dev/zero of="$dir/mnt/f$i" bs=64K count=$((i * 7)) status=none || fail "writing f$i failed"
		done
		rm "$dir/mnt/f2" "$dir/mnt/f5"
		truncate -s 100K "$dir/mnt/f6"
		fusermount3 -u "$dir/mnt" || fail "unmount failed"
		for _ in $(seq 100); do grep -q "$dir/mnt" /proc/mounts || pgrep -f "trace=$dir/fs.trace" >/dev/null || break; sleep 0.1; done
		img=$("$R" hash "$dir/fs.img" --offset 8192 | sed -n 's/^hash //p')
		expect 0 "^hash bgalloc --verify $img\$" -- "$R" run "$dir/fs.trace" --verify
		echo "replay_test: bgafs -o trace= recorded $("$R" text "$dir/fs.trace" | grep -c ' alloc') allocations; --verify ends in the image's free map"
	else
		echo "replay_test: bgafs could not mount here: its trace is not checked"
	fi
fi
# the clairvoyant reference (oracle.h): two files written a block at a
# time in turn, each 3 blocks at its largest: the oracle books each its
# 3 blocks at its first request and keeps it one extent (1.00), where
# best fit interleaves them (3.00); the free map's checks pass (exit 0)
printf '%s\n' "bgatrace 1" "nblocks 64" "blocks_per_group 64" "source turns" "0 1 0 init_free 0 : 0+64" \
	"1 1 0 rsv_open 0 1" "2 1 0 rsv_open 0 2" "3 1 0 alloc 0 1 $N 1 1 0 0 : 0+1" "4 1 0 alloc 0 2 $N 1 1 0 0 : 1+1" \
	"5 1 0 alloc 0 1 1 1 1 0 0 : 2+1" "6 1 0 alloc 0 2 2 1 1 0 0 : 3+1" "7 1 0 alloc 0 1 3 1 1 0 0 : 4+1" \
	"8 1 0 alloc 0 2 4 1 1 0 0 : 5+1" "9 1 0 rsv_close 0 1" "10 1 0 rsv_close 0 2" >"$dir/turns.txt"
for a in oracle oracle,death; do
	expect 0 "^$a +[0-9]+ +[0-9]+ +2 +1\.00 " -- "$R" run "$dir/turns.txt" -a $a
done
# files=off places each request alone: interleaved as best fit does
for a in bestfit oracle,files=off oracle,death,files=off; do
	expect 0 "^$a +[0-9]+ +[0-9]+ +2 +3\.00 " -- "$R" run "$dir/turns.txt" -a $a
done
# oracle,death puts what dies together side by side: a and c (freed at
# records 5 and 6) next to each other, b and d (never freed) at the end,
# so their frees leave one free extent (best fit and the plain oracle,
# a b c d in a row: three)
printf '%s\n' "bgatrace 1" "nblocks 64" "blocks_per_group 64" "source death" "0 1 0 init_free 0 : 0+64" \
	"1 1 0 alloc 0 0 $N 2 2 0 0 : 0+2" "2 1 0 alloc 0 0 $N 2 2 0 0 : 2+2" "3 1 0 alloc 0 0 $N 2 2 0 0 : 4+2" \
	"4 1 0 alloc 0 0 $N 2 2 0 0 : 6+2" "5 1 0 free 0 0 2" "6 1 0 free 0 4 2" >"$dir/death.txt"
expect 0 '^oracle,death +1 +60 +60$' -- "$R" run "$dir/death.txt" -a oracle,death
expect 0 '^oracle +3 +56 +56$' -- "$R" run "$dir/death.txt" -a oracle
# and of the free runs that hold a request, the one whose neighbour dies
# closest to it: two holes of 3, the second after block 19 (freed at
# record 4); X (2 blocks, freed at record 3) goes against 19, Y (never
# freed) into the first hole beside what never dies; at the end X and 19
# free one run of 4 (best fit puts X in the first hole: runs of 3, 1, 1)
printf '%s\n' "bgatrace 1" "nblocks 64" "blocks_per_group 64" "source near" "0 1 0 init_free 0 : 10+3 20+3" \
	"1 1 0 alloc 0 0 $N 2 2 0 0 : 10+2" "2 1 0 alloc 0 0 $N 2 2 0 0 : 20+2" "3 1 0 free 0 10 2" "4 1 0 free 0 19 1" \
	>"$dir/near.txt"
expect 0 '^oracle,death +2 +4 +4$' -- "$R" run "$dir/near.txt" -a oracle,death
expect 0 '^oracle +3 +3 +3$' -- "$R" run "$dir/near.txt" -a oracle
# on a full volume (fioseq) a file that will grow keeps the free run after
# it (1.29 extents a file; placed at the run's start: 1.69), and
# oracle,death keeps files whole as well (1.08)
out=$("$R" run "$TRACES/bgafs-fioseq.trace" -a oracle -a oracle,death) || fail "fioseq on the oracles: $out"
awk '$1 == "oracle" && NF == 12 { o = $5 } $1 == "oracle,death" && NF == 12 { d = $5 }
	END { exit !(o != "" && o <= 1.30 && d != "" && d <= 1.10) }' <<<"$out" ||
	fail "fioseq: the oracles split files more than 1.30 and 1.10 extents a file: $out"
# a file that frees blocks while open gets them back for its next
# write, where an object would have taken them: one extent, where best
# fit gives the hole to the object and the file's write goes on past it (2)
printf '%s\n' "bgatrace 1" "nblocks 64" "blocks_per_group 64" "source back" "0 1 0 init_free 0 : 0+64" \
	"1 1 0 rsv_open 0 1" "2 1 0 alloc 0 1 $N 2 2 0 0 : 0+2" "3 1 0 alloc 0 0 $N 4 4 0 0 : 2+4" "4 1 0 free 0 0 2" \
	"5 1 0 alloc 0 0 $N 2 2 0 0 : 0+2" "6 1 0 alloc 0 1 $N 2 2 0 0 : 6+2" "7 1 0 rsv_close 0 1" >"$dir/back.txt"
expect 0 '^oracle +[0-9]+ +[0-9]+ +1 +1\.00 ' -- "$R" run "$dir/back.txt" -a oracle
expect 0 '^bestfit +[0-9]+ +[0-9]+ +1 +2\.00 ' -- "$R" run "$dir/back.txt" -a bestfit
# the oracle's options are death and files=on|off: any other is refused before the run
for a in oracle,life oracle, oracle,files=maybe oracle,,death; do
	expect 2 "allocator '$a': the oracle's options are death and files=on\|off" -- "$R" run "$TRACES/objects.trace" -a $a
done
# an anchored goal (goal_from, bga_trace.h) moves with the replay's copy
# of its anchor: file 1 written at logical blocks 0, then 4, then 1-3,
# each aimed at its distance from the block before it (recorded at 20:
# 24, 21, 22, 23), is one extent on first fit (0-4); the same goals
# without their goal_from aim past the recorded block before them, and
# block 4 lands at 24 (2 extents).  File 2's goals lie before the
# volume's first block (anchor 40, distance -40) and past its last
# (anchor 1, distance +62): clamped to the volume, every allocator
# places them (first fit: 5-7 and 63, 2 extents; 1.50 a file).
printf '%s\n' "bgatrace 1" "nblocks 64" "blocks_per_group 64" "source anchors" "0 1 0 init_free 0 : 0+64" \
	"1 1 0 rsv_open 0 1" "2 1 0 alloc 0 1 $N 1 1 0 0 : 20+1" \
	"4 1 0 alloc 0 1 24 1 1 0 0 : 24+1" "4 1 0 goal_from 0 20 4" "5 1 0 alloc 0 1 21 1 1 0 0 : 21+1" \
	"5 1 0 goal_from 0 20 1" "6 1 0 alloc 0 1 22 1 1 0 0 : 22+1" "6 1 0 goal_from 0 21 1" \
	"7 1 0 alloc 0 1 23 1 1 0 0 : 23+1" "7 1 0 goal_from 0 22 1" "8 1 0 rsv_close 0 1" \
	"9 1 0 rsv_open 0 2" "10 1 0 alloc 0 2 $N 1 1 0 0 : 40+1" "11 1 0 alloc 0 2 0 1 1 0 0 : 41+1" \
	"11 1 0 goal_from 0 40 -40" "12 1 0 alloc 0 2 $N 1 1 0 0 : 1+1" "13 1 0 alloc 0 2 63 1 1 0 0 : 63+1" \
	"13 1 0 goal_from 0 1 62" "14 1 0 rsv_close 0 2" >"$dir/anchors.txt"
# (the text form's numbers are unsigned: -40 is written 2^64 - 40)
sed -i 's/ -40$/ 18446744073709551576/' "$dir/anchors.txt"
expect 0 '^firstfit +[0-9]+ +[0-9]+ +2 +1\.50 ' -- "$R" run "$dir/anchors.txt" -a firstfit
expect 0 '^firstfit +[0-9]+ +[0-9]+ +2 +1\.50 ' -- "$R" run "$dir/anchors.txt" -a firstfit --goals distance
grep -v goal_from "$dir/anchors.txt" >"$dir/plain.txt"
expect 0 '^firstfit +[0-9]+ +[0-9]+ +2 +2\.00 ' -- "$R" run "$dir/plain.txt" -a firstfit
# --goals past: just past each anchor, none before one after the hole
# (file 2: 5, 6, 7 and 8, one extent)
expect 0 '^firstfit +[0-9]+ +[0-9]+ +2 +1\.00 ' -- "$R" run "$dir/anchors.txt" -a firstfit --goals past
# a goal asked just past the file's block before the hole (as bgafs asks
# by default), its distance beside it (10): as asked, the replay's block
# 1, next to the file's 0 (one free extent left, 62 long); --goals
# distance aims at 10 instead (two, the longest 53)
printf '%s\n' "bgatrace 1" "nblocks 64" "blocks_per_group 64" "source past" "0 1 0 init_free 0 : 0+64" \
	"1 1 0 rsv_open 0 1" "2 1 0 alloc 0 1 $N 1 1 0 0 : 20+1" "3 1 0 alloc 0 1 21 1 1 0 0 : 21+1" \
	"3 1 0 goal_from 0 20 10" "4 1 0 rsv_close 0 1" >"$dir/past.txt"
expect 0 '^firstfit +1 +62 +62$' -- "$R" run "$dir/past.txt" -a firstfit
expect 0 '^firstfit +2 +53 +53$' -- "$R" run "$dir/past.txt" -a firstfit --goals distance
expect 2 "--goals 'maybe': recorded, distance or past" -- "$R" run "$dir/past.txt" --goals maybe
out=$("$R" run "$dir/anchors.txt" -a bgalloc -a bgalloc,windows=off -a ext2 -a firstfit -a bestfit -a mballoc -a oracle) ||
	fail "the anchored trace on every allocator: $out"
! grep -q ' failed, ' <<<"$out" || fail "an anchored goal clamped to the volume failed: $out"
# the text form keeps goal_from through the binary form
"$R" binary "$dir/anchors.txt" -o "$dir/anchors.bin" && "$R" text "$dir/anchors.bin" -o "$dir/anchors2.txt" ||
	fail "the anchored trace's round trip failed"
[ "$(grep -c " goal_from 0 " "$dir/anchors2.txt")" = 6 ] || fail "the round trip lost goal_from: $(cat "$dir/anchors2.txt")"
# goal_from qualifies an allocation of its own seq, once: else refused
for bad in "8 1 0 goal_from 0 20 1" "7 1 0 goal_from 0 23 1"; do
	{ cat "$dir/anchors.txt"; echo "$bad"; } >"$dir/badanchor.txt"
	expect 1 "goal_from with seq [0-9]+ qualifies no allocation of its own" -- "$R" run "$dir/badanchor.txt"
done
# sized=life: each handle sized at its open to the blocks its file gets
# (bga_rsv_set_size): two files of 40 blocks written a block at a time
# in turn each book one window of 40 and stay one extent; rsv_max and
# sized take only what they say
{
	printf '%s\n' "bgatrace 1" "nblocks 1024" "blocks_per_group 1024" "source turns40" "0 1 0 init_free 0 : 0+1024" \
		"1 1 0 rsv_open 0 1" "2 1 0 rsv_open 0 2"
	for k in $(seq 0 39); do
		g1=$((100 + k)) g2=$((500 + k))
		[ "$k" = 0 ] && g1=$N g2=$N
		echo "$((3 + 2 * k)) 1 0 alloc 0 1 $g1 1 1 0 0 : $((100 + k))+1"
		echo "$((4 + 2 * k)) 1 0 alloc 0 2 $g2 1 1 0 0 : $((500 + k))+1"
	done
	printf '%s\n' "83 1 0 rsv_close 0 1" "84 1 0 rsv_close 0 2"
} >"$dir/turns40.txt"
expect 0 '^bgalloc,sized=life +84 +[0-9]+ +2 +1\.00 ' -- "$R" run "$dir/turns40.txt" -a bgalloc,sized=life
expect 0 '^bgalloc,rsv_max=64,sized=life +84 +[0-9]+ +2 +1\.00 ' -- "$R" run "$dir/turns40.txt" -a bgalloc,rsv_max=64,sized=life
for bad in rsv_max=0 rsv_max=x sized=always; do
	expect 2 "'$bad' is not one of group=N, rsv_max=N, sized=life" -- "$R" run "$dir/turns40.txt" -a "bgalloc,$bad"
done
expect 2 "rsv_max" -- "$R" run "$dir/turns40.txt" -a bgalloc,rsv_max=2000000
# bgafs -o goal=distance: a file written back to front, a block a write,
# aims each block at its logical distance from the file's nearest block
# (the one after it: distance -1), and the trace says so beside each
# (goal_from: the allocation's goal is anchor + distance); --verify ends
# in the image's free map.  A goal= bgafs does not know is refused.
if [ -n "$BGAFS" ] && [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
	mkdir -p "$dir/gmnt"
	"$BGAFS" mkfs "$dir/g.img" 32M >/dev/null || fail "bgafs mkfs failed"
	expect 2 'goal=maybe: past or distance' -- "$BGAFS" mount -o goal=maybe "$dir/g.img" "$dir/gmnt"
	if "$BGAFS" mount -o "goal=distance,trace=$dir/g.trace" "$dir/g.img" "$dir/gmnt" 2>/dev/null; then
		for b in 7 6 5 4 3 2 1 0; do
			dd if=/dev/urandom of="$dir/gmnt/back" bs=4K seek=$b count=1 conv=notrunc status=none ||
				fail "writing block $b failed"
		done
		fusermount3 -u "$dir/gmnt" || fail "unmount failed"
		for _ in $(seq 100); do pgrep -f "trace=$dir/g.trace" >/dev/null || break; sleep 0.1; done
		img=$("$R" hash "$dir/g.img" --offset 8192 | sed -n 's/^hash //p')
		expect 0 "^hash bgalloc --verify $img\$" -- "$R" run "$dir/g.trace" --verify
		"$R" text "$dir/g.trace" | python3 -c '
import sys
alloc, anch = {}, []
for l in sys.stdin:
    f = l.split()
    if len(f) > 6 and f[3] in ("alloc", "alloc_vec"):
        alloc[f[0]] = int(f[6])
    elif len(f) > 6 and f[3] == "goal_from":
        anch.append((f[0], int(f[5]), int(f[6])))
assert len(anch) == 7, anch
for seq, a, d in anch:
    assert d == 2**64 - 1, (seq, d)
    assert alloc[seq] == (a + d) % 2**64, (seq, alloc[seq], a, d)
' || fail "goal=distance: the goals are not anchor + distance, 7 of them at -1"
	else
		echo "replay_test: bgafs could not mount here: goal=distance is not checked"
	fi
fi
# BGA_REPLAY_BLAME: where the small free runs at the end came from.  A
# hole (4+2: freed, its neighbours older), a remnant (11+1: a later
# request at 10 took part of a freed run) and a gap (16+4: passed over by
# a request aimed past it), the same for bgalloc and first fit; the tail
# run (21+43) is not small and not listed; in slices, what is free and
# how old what is taken; no end record, no report.
{
	printf '%s\n' "bgatrace 1" "nblocks 64" "blocks_per_group 64" "source blame" "0 1 0 init_free 0 : 0+64"
	k=1
	for e in 0+4 4+2 6+4 10+2 12+4; do
		echo "$k 1 0 alloc 0 0 $N ${e#*+} ${e#*+} 0 0 : $e"
		k=$((k + 1))
	done
	printf '%s\n' "6 1 0 free 0 4 2" "7 1 0 free 0 10 2" "8 1 0 alloc 0 0 10 1 1 0 0 : 10+1" \
		"9 1 0 alloc 0 0 20 1 1 0 0 : 20+1"
} >"$dir/blame_noend.txt"
{ cat "$dir/blame_noend.txt"; echo "10 1 0 end 0 0 0"; } >"$dir/blame.txt"
for a in bgalloc firstfit; do
	rm -f "$dir/blame.out"
	BGA_REPLAY_BLAME="$dir/blame.out" "$R" run "$dir/blame.txt" -a "$a" >/dev/null || fail "blame: $a did not replay"
	printf '%s\n' "$a hole 4+2 freed@6 alloc@1/h0/nogoal/4-4 alloc@3/h0/nogoal/4-4" \
		"$a remnant 11+1 freed@7 alloc@8/h0/goal/1-1 alloc@5/h0/nogoal/4-4" \
		"$a gap 16+4 freed@- alloc@5/h0/nogoal/4-4 alloc@9/h0/goal/1-1" \
		"$a total gap runs 1 blocks 4" "$a total hole runs 1 blocks 2" "$a total remnant runs 1 blocks 1" |
		diff - "$dir/blame.out" || fail "blame: $a's small runs are not the hole, remnant and gap made"
done
# in four slices: what is free in each, and the mean seq of what was taken
rm -f "$dir/blame.out"
BGA_REPLAY_BLAME_SLICES=4 BGA_REPLAY_BLAME="$dir/blame.out" "$R" run "$dir/blame.txt" -a firstfit >/dev/null ||
	fail "blame: slices did not replay"
printf '%s\n' "firstfit slice 0+16 free 18.8% handed 13 mean seq 3" "firstfit slice 16+16 free 93.8% handed 1 mean seq 9" \
	"firstfit slice 32+16 free 100.0% handed 0 mean seq -" "firstfit slice 48+16 free 100.0% handed 0 mean seq -" |
	diff - <(grep ' slice ' "$dir/blame.out") || fail "blame: the slices are not the made trace's"
rm -f "$dir/blame.out"
BGA_REPLAY_BLAME="$dir/blame.out" "$R" run "$dir/blame_noend.txt" >/dev/null || fail "blame: no end record did not replay"
[ ! -e "$dir/blame.out" ] || fail "blame: a trace without an end record was reported"
# BGA_REPLAY_BREAKS: a file's second request, aimed right after its
# first extent, where a claim took the blocks meanwhile, goes elsewhere:
# one break, charged to blocks in use from outside the allocator (init);
# unset, no count is printed
printf '%s\n' "bgatrace 1" "nblocks 1024" "blocks_per_group 1024" "source breaks" "0 1 0 init_free 0 : 0+1024" \
	"1 1 0 rsv_open 0 1" "2 1 0 alloc 0 1 100 4 4 0 0 : 100+4" "3 1 0 claim 0 104 10" \
	"4 1 0 alloc 0 1 104 4 4 0 0 : 200+4" "5 1 0 rsv_close 0 1" >"$dir/breaks.txt"
expect 0 '^breaks bgalloc at record [0-9]+: 1 of 1 allocations through handles \(0 with a window left\) init 1$' -- \
	env BGA_REPLAY_BREAKS=1 "$R" run "$dir/breaks.txt" -a bgalloc
expect 0 '^break 4 file 1 at 104 got [0-9]+\+4 goal 104 max 4 window 0: init 0$' -- \
	env BGA_REPLAY_BREAKS=2 "$R" run "$dir/breaks.txt" -a bgalloc
"$R" run "$dir/breaks.txt" -a bgalloc 2>&1 | grep -q '^breaks' && fail "BGA_REPLAY_BREAKS unset printed the breaks"
# logical ext/file: the files' runs in their own order (run.c,
# logical_runs), from the goal_from records.  --goals past places file 1
# (logical 0, 4, 1, 2, 3) at 0-4 in the order written: one physical
# run, three logical ones (0; 1-3; 4); file 2 (logical 0, -40, -39, 23
# at 5, 6, 7, 8) three (-40..-39; 0; 23): 3.00 against 1.00 physical.
# Aimed at their distances, file 1 is one run both ways (2.00: file 2's
# goals clamped to the volume keep it three).
expect 0 '^logical ext/file \(runs in the files. own order\): firstfit 3\.00$' -- \
	"$R" run "$dir/anchors.txt" -a firstfit --goals past
expect 0 '^firstfit +[0-9]+ +[0-9]+ +2 +1\.00 ' -- "$R" run "$dir/anchors.txt" -a firstfit --goals past
expect 0 '^logical ext/file \(runs in the files. own order\): firstfit 2\.00$' -- \
	"$R" run "$dir/anchors.txt" -a firstfit --goals distance
expect 0 '^usage' -- "$R" --help
expect 0 '^bga-replay \(bgalloc\) ' -- "$R" --version
echo "replay_test: import exact, $n end hashes, try as bga_alloc_vec, --verify and round trips pass"
