/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-file reservation windows, after ext3's block reservation (2.6.10),
 * but kept per group under the group's lock instead of in one tree behind
 * one per-filesystem lock, so unrelated files never share a lock.
 *
 * A handle books a window of free blocks; its allocations come from the
 * window first; other callers avoid windows while they can.  When a window
 * is used up, the handle books the next one from its goal onwards, twice
 * as large if more than half of the last one was used (up to rsv_max).
 */
#include <errno.h>
#include <stdlib.h>

#include "rcu.h"

#include <bgalloc/bitmap.h>

#include "internal.h"

/*
 * A handle.  `win` is linked into a group's window list while win.linked;
 * its fields are then under that group's lock.  The handle itself is used
 * by one thread at a time (the contract), so its size needs no lock.
 */
struct bga_rsv {
	struct bga_volume *vol;
	struct bga_window win;
	uint32_t size; /* goal size of the next window; 0 = windows off */
	uint64_t next; /* the block after the last window, where the next is booked (or BGA_NO_GOAL) */
	uint32_t colour; /* which of BGA_RSV_COLOURS slices of a group a new file starts in */
};

/*
 * Files that start at one goal (one directory) would book their first
 * windows back to back, and each window after the first would then have
 * to jump past a neighbour's: a new extent every window.  As ext4 colours
 * a new file's first goal by its process, a handle's first window starts
 * in its own slice of the goal's group, leaving each file room to grow in
 * place.  Measured with bga-scale's writers (256-block files from one
 * directory goal): 4.8-6.4 extents per file at 8-64 threads without
 * colours, 1.05-1.2 with them at 2-8 threads (2.4 at 64); the 16-writer
 * lock-step test (tests/test_policies.c) went from 6.9 to 1.0.
 */
#define BGA_RSV_COLOURS 16u

int bga__rsv_link_locked(struct bga_group *grp, uint64_t g, struct bga_window *w, uint32_t start,
			 uint32_t end)
{
	struct bga_group_ext *ext = bga__group_ext_locked(grp);
	if (ext == NULL)
		return -ENOMEM;
	struct bga_window **pp = &ext->windows;
	while (*pp && (*pp)->start < start)
		pp = &(*pp)->next;
	BGA_ASSERT(*pp == NULL || (*pp)->start >= end);
	w->group = g;
	w->start = start;
	w->end = end;
	w->used = 0;
	w->next = *pp;
	*pp = w;
	w->linked = true;
	return 0;
}

void bga__rsv_unlink_locked(struct bga_group *grp, struct bga_window *w)
{
	struct bga_window **pp = &grp->ext->windows;
	while (*pp != w)
		pp = &(*pp)->next;
	*pp = w->next;
	w->next = NULL;
	w->linked = false;
}

void bga__rsv_destroy_group(struct bga_group *grp)
{
	while (grp->ext->windows)
		bga__rsv_unlink_locked(grp, grp->ext->windows);
}

/* Drop the handle's window, if it has one. */
static void window_drop(struct bga_rsv *rsv)
{
	struct bga_volume *vol = rsv->vol;
	if (!rsv->win.linked)
		return;
	uint64_t g = rsv->win.group;
	bga__group_lock(vol, g);
	bga__rsv_unlink_locked(bga__group_lookup(vol, g), &rsv->win); /* it holds the window */
	bga__group_unlock(vol, g);
}

int bga_rsv_open(struct bga_volume *vol, struct bga_rsv **out)
{
	if (vol == NULL || out == NULL)
		return -EINVAL;
	struct bga_rsv *rsv = calloc(1, sizeof(*rsv));
	if (rsv == NULL)
		return -ENOMEM;
	rsv->vol = vol;
	rsv->size = vol->cfg.rsv_default;
	rsv->colour = (uint32_t)(__atomic_fetch_add(&vol->rsv_seq, 1, __ATOMIC_RELAXED) % BGA_RSV_COLOURS);
	__atomic_fetch_add(&vol->rsv_open, 1, __ATOMIC_RELAXED);
	*out = rsv;
	return 0;
}

void bga_rsv_close(struct bga_rsv *rsv)
{
	if (rsv == NULL)
		return;
	window_drop(rsv);
	__atomic_fetch_sub(&rsv->vol->rsv_open, 1, __ATOMIC_RELAXED);
	free(rsv);
}

int bga_rsv_set_size(struct bga_rsv *rsv, uint32_t blocks)
{
	if (rsv == NULL || blocks > rsv->vol->cfg.rsv_max)
		return -EINVAL;
	rsv->size = blocks;
	if (blocks == 0)
		window_drop(rsv);
	return 0;
}

int bga_rsv_window(const struct bga_rsv *rsv, struct bga_extent *out)
{
	if (rsv == NULL || out == NULL)
		return -EINVAL;
	out->start = rsv->win.linked ? bga__group_first(rsv->vol, rsv->win.group) + rsv->win.start : 0;
	out->len = rsv->win.linked ? rsv->win.end - rsv->win.start : 0;
	return 0;
}

bool bga__rsv_take(struct bga_volume *vol, struct bga_actx *ac, struct bga_rsv *rsv, uint64_t goal,
		   struct bga_extent *out)
{
	struct bga_window *w = &rsv->win;
	rsv->next = BGA_NO_GOAL;
	if (!w->linked)
		return false;
	rsv->next = bga__group_first(vol, w->group) + w->end;
	uint64_t g = w->group, first = bga__group_first(vol, g);
	bool hit = false;
	bga__group_lock(vol, g);
	struct bga_group *grp = bga__group_lookup(vol, g); /* it holds the window */
	uint32_t from = w->start, off, len;
	if (goal != BGA_NO_GOAL && goal >= first + w->start && goal < first + w->end)
		from = (uint32_t)(goal - first);
	/* Other callers may have taken blocks of the window as a last resort;
	 * the search skips them like any used block.  A group without a
	 * bitmap is wholly free or wholly used. */
	uint32_t end = w->end;
	if (grp->bitmap != NULL) {
		uint64_t n;
		uint64_t pos = bga_bitmap_find_zero_run(grp->bitmap, end, from, ac->min, ac->max, &n);
		hit = pos < end;
		off = (uint32_t)pos;
		len = (uint32_t)n;
	} else {
		hit = grp->free != 0 && end - from >= ac->min;
		off = from;
		len = BGA_MIN(ac->max, end - from);
	}
	if (hit && bga__take_locked(vol, ac, grp, g, off, &len) == 0) {
		w->used += len;
		out->start = first + off;
		out->len = len;
	} else {
		hit = false;
		/* Used up (or blocked): grow the next window if this one
		 * served its file well, as ext3 does. */
		if (2 * w->used > w->end - w->start)
			rsv->size = BGA_MIN(rsv->size * 2, vol->cfg.rsv_max);
		bga__rsv_unlink_locked(grp, w);
	}
	bga__group_unlock(vol, g);
	return hit;
}

/* goal moved by colour slices of its group, within the group. */
static uint64_t coloured(const struct bga_volume *vol, const struct bga_geom *geo, uint64_t goal, uint32_t colour)
{
	uint32_t bpg = vol->cfg.blocks_per_group;
	uint64_t first = bga__group_first(vol, bga__group_of(vol, goal));
	uint64_t off = (goal - first + (uint64_t)colour * (bpg / BGA_RSV_COLOURS)) % bpg;
	return first + off < geo->nblocks ? first + off : goal;
}

int bga__rsv_usable(const struct bga_volume *vol, const struct bga_rsv *rsv)
{
	if (rsv->vol != vol)
		return -EINVAL;
	return rsv->size != 0;
}

uint64_t bga__rsv_book(struct bga_volume *vol, const struct bga_geom *geo, struct bga_rsv *rsv, uint64_t goal,
		       struct bga_window **book)
{
	/* Book a new window from the goal on (or right after the old one, so
	 * a file written in order stays contiguous); a first window starts in
	 * the handle's colour of the goal's group. */
	uint64_t next = rsv->next;
	if (goal == BGA_NO_GOAL)
		goal = next < geo->nblocks ? next : bga__home(bga__percpu(vol), geo->nblocks);
	if (next == BGA_NO_GOAL)
		goal = coloured(vol, geo, goal, rsv->colour);
	rsv->win.start = 0;
	rsv->win.end = BGA_MIN(rsv->size, vol->cfg.blocks_per_group);
	*book = &rsv->win;
	return goal;
}

void bga__rsv_booked(struct bga_rsv *rsv, const struct bga_extent *got)
{
	rsv->win.used = BGA_MIN((uint32_t)got->len, rsv->win.end - rsv->win.start);
}
