/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where a file's new blocks go (bgafs.h, "placement"): a hole's goal,
 * the calls that take its blocks, and the window of a file written out
 * of order.  Writes and fallocate (ops_file.c) call these with the
 * file's lock held for writing.
 */
#include <errno.h>
#include <stdlib.h>
#include "bgafs.h"

/*
 * Blocks for the hole at lblk, aimed at goal (hole_goal): up
 * to `want` of them as at most max_out extents, out[] in the order they
 * are to map the hole (*n).  A hole of VEC_MIN blocks or more is one
 * bga_alloc_vec call (pieces from the file's window first, then runs
 * merged across groups), a smaller one one bga_alloc: the window gives
 * it one extent anyway.  BGA_ALL_OR_NOTHING (flags) is fallocate's.
 */
#define VEC_MIN 16
#define MAX_EXTENT (1u << 30) /* blocks: struct extent's len, merges included */

/*
 * A hole's goal (bgafs.h), its anchor found by extmap_near.  By default
 * (-o goal=past) just past the file's last block before the hole, none
 * when no block lies before it.  -o goal=distance: that block moved by
 * the logical distance, clamped to the volume's data blocks (ext4's
 * ext4_ext_find_goal): blocks written out of order then aim where the
 * finished file is one run; on fio, fiomix and torrent it left bgalloc's
 * files in more pieces, not fewer, as its windows serve a file in the
 * order it writes (docs/TRACE.md "Goals for random writes, played on one
 * recording").  An anchor of BGA_NO_GOAL: a goal of the caller's own
 * (just past the blocks got).
 */
struct goal hole_goal(struct fs *fs, struct inode *ip, uint64_t lblk)
{
	struct goal g = {BGA_NO_GOAL, BGA_NO_GOAL, 0};
	if (extmap_near(&ip->map, lblk, &g.anchor, &g.distance)) {
		g.anchor = BGA_NO_GOAL;
		return g;
	}
	if (!fs->goal_distance) {
		if (g.distance > 0 && g.anchor + 1 < fs->nblocks)
			g.block = g.anchor + 1;
		return g;
	}
	uint64_t room = g.anchor - fs->first_data_block; /* anchors are data blocks */
	if (g.distance < 0)
		g.block = (uint64_t)-g.distance > room ? fs->first_data_block : g.anchor - (uint64_t)-g.distance;
	else
		g.block = (uint64_t)g.distance >= fs->nblocks - g.anchor ? fs->nblocks - 1
										  : g.anchor + (uint64_t)g.distance;
	return g;
}

int alloc_hole(struct fs *fs, struct inode *ip, struct goal goal, uint64_t want, uint32_t flags,
		      struct bga_extent *out, size_t max_out, size_t *n)
{
	struct bga_request req = {.goal = goal.block, .min_len = 1, .max_len = want < MAX_EXTENT ? want : MAX_EXTENT,
				  .rsv = ip->rsv, .flags = flags};
	if ((want >= VEC_MIN && max_out > 1) || (flags & BGA_ALL_OR_NOTHING))
		return bga_rec_alloc_vec_from(fs->rec, fs->vol, &req, goal.anchor, goal.distance, want, out, max_out,
					      n);
	int rc = bga_rec_alloc_from(fs->rec, fs->vol, &req, goal.anchor, goal.distance, out);
	*n = rc ? 0 : 1;
	return rc;
}

/* The holes of [lblk, last]: their block count, and how many. */
void count_holes(const struct extmap *m, uint64_t lblk, uint64_t last, uint64_t *blocks, uint64_t *holes)
{
	*blocks = *holes = 0;
	while (lblk <= last) {
		uint64_t pblk, run;
		enum map_state st = extmap_lookup(m, lblk, &pblk, &run);
		if (run > last - lblk + 1)
			run = last - lblk + 1;
		if (st == MAP_HOLE) {
			*blocks += run;
			++*holes;
		}
		lblk += run;
	}
}

/*
 * A file written out of order has its window sized by what it has shown
 * it needs (-o window=shown, the default).  A write that lands past a
 * hole shows a logical end, the larger of the file's size and the
 * write's end, beyond the blocks the file maps by more than the write's
 * own holes: the blocks still to be filled.  When such a write is about
 * to book a window (what its window holds is less than the write's
 * holes), the window is sized to those blocks (bga_rsv_set_size,
 * recorded as rsv_set_size), less what the window still holds, up to a
 * group: the writes that fill the file then take one window, as ext4
 * normalises a request to the file's logical end
 * (ext4_mb_normalize_request, from i_size) and XFS sizes speculative
 * preallocation from the file's size.  Sized at each booking, not at
 * each write, so a window holds no more than the file has shown it
 * needs, and a file that shows more gets it at its next booking (one
 * that goes on in order, the size of its write).  The
 * first size is set only past rsv_max: a file that needs no more than
 * that is the unsized window's doubling's to serve, up to rsv_max, as
 * before (a sized window is booked whole from the stream, where the
 * doubling fills the free runs it meets; docs/TRACE.md "Windows sized by
 * the size a file has shown" measures both).  A file written in order
 * (each write at its end, or over its own blocks) shows nothing past
 * its blocks and the write, and never sets it.  The cost: a sparse file
 * written here and there and never filled (a large size set, a few
 * blocks written) books a window of what it has shown, up to a group,
 * held until its last close or taken back before -ENOSPC; ext4 caps its
 * normalised request at 8 MiB, which would split the larger files these
 * histories fill (docs/TRACE.md "Goals for random writes").  Unlike
 * ext4's inode preallocation, the window hands its blocks in the order
 * the file writes them, not at their logical places: such a file is few
 * physical runs in a scrambled logical order (bga-replay's logical
 * ext/file).
 */
void window_by_shown_size(struct fs *fs, struct inode *ip, uint64_t end, uint64_t want)
{
	if (!ip->rsv || !fs->window_shown || !fs->group_blocks)
		return;
	uint64_t shown = ((ip->size > end ? ip->size : end) + BGAFS_BLOCK - 1) >> BGAFS_SHIFT;
	if (shown < ip->map.blocks + want) /* blocks past the size (fallocate's KEEP_SIZE) */
		shown = ip->map.blocks + want;
	if (shown == ip->map.blocks + want && !ip->win_size) /* in order: no hole but this write's */
		return;
	struct bga_extent w;
	if (bga_rsv_window(ip->rsv, &w) || w.len >= want) /* no booking due */
		return;
	uint64_t left = shown - ip->map.blocks - w.len;
	if (!ip->win_size && left <= fs->rsv_max)
		return;
	if (left > fs->group_blocks)
		left = fs->group_blocks;
	/* a size up to a group is taken; a failure leaves the window as it was */
	if (left != ip->win_size && !bga_rec_rsv_set_size(fs->rec, ip->rsv, (uint32_t)left))
		ip->win_size = (uint32_t)left;
}

/*
 * want blocks as extents, call after call from the end of the last, in
 * *got (grown as needed from *cap, *n of them): one bga_alloc_vec call
 * when they fit in *cap extents.  0, or the error with nothing kept
 * (what was taken was never named anywhere); with some_ok, a -ENOSPC
 * after some blocks were taken is 0 with fewer than want in *got.
 */
int alloc_scattered(struct fs *fs, struct inode *ip, struct goal goal, uint64_t want, struct bga_extent **got,
			   size_t *cap, size_t *n, int some_ok)
{
	uint64_t have = 0;
	int rc = 0;
	*n = 0;
	while (have < want) {
		if (*n == *cap) {
			struct bga_extent *v = realloc(*got, 2 * *cap * sizeof(**got));
			if (!v) {
				rc = -ENOMEM;
				break;
			}
			*got = v;
			*cap *= 2;
		}
		size_t k = 0;
		if ((rc = alloc_hole(fs, ip, goal, want - have, 0, *got + *n, *cap - *n, &k)))
			break;
		for (size_t i = 0; i < k; i++)
			have += (*got)[*n + i].len;
		*n += k;
		goal.block = (*got)[*n - 1].start + (*got)[*n - 1].len;
		goal.anchor = BGA_NO_GOAL;
		if (goal.block >= fs->nblocks)
			goal.block = BGA_NO_GOAL;
	}
	if (rc == -ENOSPC && *n && some_ok)
		rc = 0;
	if (rc && *n) {
		int frc = bga_rec_free_vec(fs->rec, fs->vol, *got, *n);
		(void)frc; /* ours, unnamed: cannot fail */
		*n = 0;
	}
	return rc;
}
