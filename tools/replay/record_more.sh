# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash disable=SC2154 # $work, $mnt and the rest: record_traces.sh sets them
# More histories of programs nobody here wrote, held out from the
# placement work: images squashed and extracted (squashfs), a disk
# benchmark's files (bonnie) and a Mercurial repository (hg), one
# function a history as in record_histories.sh, whose helpers (used_pct,
# kernel_src, delete_half, ...) they use, with record_apps.sh's peak
# poller.  Sourced by record_traces.sh after record_apps.sh, never run
# alone.

# Recorded with the library and the bgafs of ab0bc23, held out from the
# placement work after it.

# The kernel subtrees the squashfs and hg histories copy: fs/, net/ and
# drivers/net/ (kernel_src's) and sound/, extracted once
more_src() {
	kernel_src
	[ -d "$src/sound" ] || tar -xf /usr/src/linux-source-6.1.tar.xz -C "$work" linux-source-6.1/sound
}
# settled: the deferred frees committed, so that statfs counts them free
# (debs() in record_histories.sh says why)
settled() { avail_settled "$mnt" "$mnt" 1; }

# squashfs: images of trees made and unpacked by squashfs-tools, as an
# image build does.  Eight rounds, each: a staging tree on bgafs (cp -a
# of the round's kernel subtree: fs, net, sound, drivers/net/wireless, fs,
# sound, net, drivers/net/wireless) squashed by mksquashfs (2 threads;
# gzip in odd rounds, a new image, -noappend; zstd in even rounds
# appended to the last image, which grows at its end and has its tables
# written again), the staging tree
# deleted, the round's tree extracted from the image by unsquashfs
# (2 threads) into a new directory.  Before each round, while the room
# left above 12% free is under 1.3 times the round's tree, the oldest
# extraction or image (by round; an extraction before the image of its
# round; never the image the round appends to) is deleted.  At the end
# every other file of the newest extraction deleted.  200M image, 85%
# full at the peak (bga-replay -a ext2's "at most" line).
squash_dirs=(fs net sound drivers/net/wireless fs sound net drivers/net/wireless)
squash_trim() { # squash_trim MIB KEEP: the oldest extraction or image deleted until 1.3 MIB fit above 12% free, KEEP kept
	local f
	while :; do
		settled
		stat -f -c '%b %f %S' "$mnt" | awk -v n="$1" '{exit !(($2 - 0.12 * $1) * $3 / 1048576 < 1.3 * n)}' || return 0
		f=$(find "$mnt" -mindepth 1 -maxdepth 1 \( -name 'x*' -o -name 'img*' \) ! -path "$2" |
			awk '{n = $0; sub(/.*\/(x|img)/, "", n); sub(/[.].*/, "", n); print n, ($0 ~ /\/x[0-9]*$/ ? 0 : 1), $0}' |
			sort -n -k1,1 -k2,2 | head -1 | cut -d' ' -f3-)
		[ -n "$f" ] || { echo "record_traces: squashfs: nothing left to delete" >&2; exit 1; }
		rm -rf "$f"
		echo "record_traces: squashfs: $(basename "$f") deleted"
	done
}
squash_images() {
	more_src
	peak_start
	local r d img=
	for r in 1 2 3 4 5 6 7 8; do
		d=${squash_dirs[r - 1]}
		[ $((r % 2)) = 1 ] && img=$mnt/img$r.sqfs
		squash_trim "$(du -sm "$src/$d" | cut -f1)" "$img"
		mkdir "$mnt/stage"
		cp -a "$src/$d" "$mnt/stage/"
		if [ $((r % 2)) = 1 ]; then
			mksquashfs "$mnt/stage" "$img" -comp gzip -processors 2 -noappend -quiet -no-progress >/dev/null
		else
			mksquashfs "$mnt/stage" "$img" -comp zstd -processors 2 -quiet -no-progress >/dev/null
		fi
		rm -rf "$mnt/stage"
		settled # the staging tree's blocks free before the extraction takes them
		unsquashfs -q -n -processors 2 -d "$mnt/x$r" "$img" "$(basename "$d")" >/dev/null
		settled
		echo "record_traces: squashfs: round $r, $(basename "$img") of $(du -k "$img" | cut -f1) KiB, $(basename "$d") extracted, $(used_pct)% full"
	done
	delete_half "$mnt/x8"
	peak_stop squashfs
}

# bonnie: bonnie++ (as root, -u root; -f: no per-character tests), its
# files beside fs/ and net/ of linux-source-6.1 copied in first: a run of
# 3 threads at once (-c 3), each writing its own file sequentially in
# 8 KiB blocks, rewriting it in place, reading it and seeking at random,
# the three files together taking the volume to 88% full; then creating
# 3 x 2,048 files of 1-48 KiB in 8 directories in order, statting and
# deleting them, and again in random order (seed 44); then every other
# file of fs/ deleted and a second run of 2 threads, files to 88% full,
# 2 x 4,096 files of 0-16 KiB in 16 directories (seed 45); then net/
# deleted.  192M image, past 90% full in the first run's writes.
bonnie_run() { # bonnie_run THREADS FILES SEED: files to 88% full, FILES as -n, seed SEED
	settled
	local mib
	mib=$(stat -f -c '%b %f %S' "$mnt" | awk -v t="$1" '{print int(($2 - 0.12 * $1) * $3 / 1048576 / t)}')
	mkdir -p "$mnt/bonnie"
	bonnie++ -d "$mnt/bonnie" -u root -q -f -c "$1" -s "$mib" -r $((mib / 2)) -n "$2" -z "$3" >"$work/bonnie.out" 2>&1 ||
		{ cat "$work/bonnie.out" >&2; echo "record_traces: bonnie: bonnie++ failed" >&2; exit 1; }
	rm -rf "$mnt/bonnie"
	settled
	echo "record_traces: bonnie: $1 threads of $mib MiB and files $2 done, $(used_pct)% full"
}
bonnie() {
	more_src
	peak_start
	cp -a "$src/fs" "$src/net" "$mnt/"
	bonnie_run 3 2:49152:1024:8 44
	delete_half "$mnt/fs"
	bonnie_run 2 4:16384:0:16 45
	rm -rf "$mnt/net"
	peak_stop bonnie
}

# hg: a Mercurial repository (hg 6) grown on bgafs, its revlogs appended
# to by every commit, cloned and updated across its revisions.  sound/ of
# linux-source-6.1 but soc/ committed to a new repository; eight rounds of
# commits (a round: every fifth C file of a subtree edited by sed -i,
# a subtree of soc/ added or an old one removed); after round 4 a clone
# (hg clone --pull: no hard links) updated to revisions 0, 2 and 4 in
# turn; after round 8 the clone pulls and is updated to the tip, to 1,
# to 5 and to the tip; past 86% full after a round, the clone's working
# copy emptied (hg update null) and refilled at the next update; at the
# end the first repository deleted.  122M image, 89.9% full at the peak.
hg_do() { HGPLAIN=1 HGRCPATH='' hg --config ui.username=record --config ui.interactive=false "$@"; }
hg_edit() { # hg_edit DIR N: every fifth C file under $mnt/repo/sound/DIR (in sorted order, from the Nth) edited
	find "$mnt/repo/sound/$1" -name '*.c' | LC_ALL=C sort | awk -v n="$2" 'NR % 5 == n' |
		xargs -d '\n' sed -i -e 's/\t*return 0;$/&\n\t\/* round '"$2"' *\//' -e 's/^static int /static  int /'
}
hg_update() { # hg_update REV: the clone's working copy at REV
	hg_do -R "$mnt/clone" update -q -C "$1"
	settled
	echo "record_traces: hg: clone at $1, $(used_pct)% full"
}
hg_rounds() {
	more_src
	peak_start
	hg_do init "$mnt/repo"
	mkdir "$mnt/repo/sound"
	(cd "$src/sound" && find . -mindepth 1 -maxdepth 1 ! -name soc -exec cp -a {} "$mnt/repo/sound/" \;)
	mkdir "$mnt/repo/sound/soc"
	hg_do -R "$mnt/repo" commit -q -A -d '2026-01-01 00:00 +0000' -m 'sound/ but soc'
	local r
	for r in 1 2 3 4 5 6 7 8; do
		case $r in
		1) cp -a "$src/sound/soc/codecs" "$mnt/repo/sound/soc/" ;;
		2) hg_edit pci 2 && hg_edit soc/codecs 2 ;;
		3) cp -a "$src/sound/soc/intel" "$src/sound/soc/sof" "$mnt/repo/sound/soc/" && rm -rf "$mnt/repo/sound/isa" ;;
		4) hg_edit soc 4 ;;
		5) cp -a "$src/sound/soc/fsl" "$src/sound/soc/qcom" "$mnt/repo/sound/soc/" && hg_edit usb 0 ;;
		6) rm -rf "$mnt/repo/sound/soc/intel" && hg_edit soc/codecs 1 ;;
		7) hg_edit soc 3 && hg_edit pci 3 ;;
		8) rm -rf "$mnt/repo/sound/soc/codecs" && cp -a "$src/sound/soc/mediatek" "$mnt/repo/sound/soc/" ;;
		esac
		hg_do -R "$mnt/repo" commit -q -A -d "2026-01-0$((r + 1)) 00:00 +0000" -m "round $r"
		settled
		echo "record_traces: hg: round $r committed, $(used_pct)% full"
		if [ $r = 4 ]; then
			hg_do clone -q --pull -U "$mnt/repo" "$mnt/clone"
			hg_update 0
			hg_update 2
			hg_update 4
		fi
		if [ -d "$mnt/clone" ] && [ "$(used_pct)" -gt 86 ]; then
			hg_update null
		fi
	done
	hg_do -R "$mnt/clone" pull -q
	hg_update tip
	hg_update 1
	hg_update 5
	hg_update tip
	rm -rf "$mnt/repo"
	peak_stop hg
}
