/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A hole for a new file (search.h, bga__alloc_hole): where a group's free
 * space is in pieces, a new file that files of its first length have
 * shown likely to stay whole takes a free run of exactly its request.
 */
#include <errno.h>
#include "search.h"
#include "request.h"
#include "actx.h"
#include "group.h"
#include "window.h"
#include "percpu.h"

/*
 * A hole for a new file (<bgalloc/alloc.h>, where a request looks, 2):
 * the first free run of exactly its request in the CPU's home group
 * (ac->goal's), when that group's free space is in pieces: its longest
 * free run (max_run, an upper bound) under 1/BGA_HOLE_PIECES of its free
 * blocks.  As ZFS's metaslab allocator turns from its cursor to best fit
 * once a metaslab's free space is fragmented, and mballoc takes an
 * extent of exactly the goal length at once: a hole a deleted file left
 * among files that live on is filled whole, leaving no piece, where the
 * file's first window would have gone on at the next-fit place and the
 * hole stayed to the end (archive's holes, each freed long before it:
 * docs/HISTORY.md#placement-on-recorded-histories-where-archives-and-ccaches-small-free-runs-come-from-and-rules-tried-2026-12-05).
 * Not a run beside blocks waiting for a commit (a round of deletes the
 * commit joins into one run, as search.c's borders_pending_locked reads), nor one right
 * after a window (its file's room to grow).  A group with room stays
 * next fit's: files written in order keep their order there.  At most
 * BGA_HOLE_SCAN runs are read a look (ext4's mb_max_to_scan), and a CPU
 * that found no hole of a length in a group does not look again while
 * the group's free count stays what it was (struct bga_pack's hole_*:
 * a hint, so that a group in pieces is not read through again at every
 * new file; the cost: the same HISTORY section).  -ENOSPC (or -EBUSY:
 * the lock was held) when no such hole serves; nothing taken then.
 */
#define BGA_HOLE_PIECES 6
#define BGA_HOLE_SCAN 256
int bga__alloc_hole(struct bga_volume *vol, struct bga_actx *ac, struct bga_extent *out)
{
	uint64_t g = bga__gpos(vol, ac->goal).g;
	int rc;
	struct bga_group *grp = bga__group_ensure_lock(vol, g, false, &rc);
	if (grp == NULL)
		return rc;
	uint32_t off = 0, len = ac->take.max, bpg = vol->cfg.blocks_per_group;
	const uint64_t *pend = grp->ext != NULL ? grp->ext->pending : NULL;
	struct bga_pack *pk = &ac->pc->pack;
	uint16_t bit = (uint16_t)(1u << (len - 1));
	/* none found here by this CPU while the free count was what it is */
	bool known = __atomic_load_n(&pk->hole_group, __ATOMIC_RELAXED) == g + 1 &&
		     __atomic_load_n(&pk->hole_free, __ATOMIC_RELAXED) == grp->free;
	uint16_t none = known ? __atomic_load_n(&pk->hole_none, __ATOMIC_RELAXED) : 0;
	bool in_pieces = (uint64_t)grp->max_run * BGA_HOLE_PIECES < grp->free && !(none & bit), found = false;
	uint32_t at = 0, scan = BGA_HOLE_SCAN;
	while (in_pieces && !found && bga__group_find_exact_locked(vol, grp, g, &at, len, &scan, &off))
		found = !bga__window_ends_at_locked(grp, off) &&
			!(pend != NULL && ((off > 0 && bga_bitmap_range_is_set(pend, off - 1, 1)) ||
					   (off + len < bpg && bga_bitmap_range_is_set(pend, off + len, 1))));
	if (in_pieces && !found) {
		__atomic_store_n(&pk->hole_group, g + 1, __ATOMIC_RELAXED);
		__atomic_store_n(&pk->hole_free, grp->free, __ATOMIC_RELAXED);
		__atomic_store_n(&pk->hole_none, (uint16_t)(none | bit), __ATOMIC_RELAXED);
	}
	rc = found ? bga__take_locked(vol, &ac->take, grp, g, off, &len) : -ENOSPC;
	if (rc == 0) {
		out->start = bga__group_first(vol, g) + off;
		out->len = len;
	}
	bga__group_unlock(vol, g);
	ac->take.stop = 0; /* a count that ruled out max_len: the window's walk decides */
	return rc;
}
