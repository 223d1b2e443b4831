/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-file reservation windows: ext3's block reservation (2.6.10) in
 * shape, ext4's inode preallocation in substance.  A handle books a
 * window of free blocks, which then belongs to it (window.h): the file's
 * allocations take from it with one CAS and no group lock, other callers
 * never see its blocks, and what the file did not use is given back when
 * the window is used up, the handle closed, or any caller would otherwise
 * get -ENOSPC.  When a window is used up, the handle books the next one
 * from its end onwards, twice as large if more than half of the last one
 * was used (up to rsv_max).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "window.h"

/*
 * A handle.  `win` is linked into a group's window list while win.linked;
 * its fields are then under that group's lock.  The handle itself is used
 * by one thread at a time (the contract), so its size needs no lock.
 */
struct bga_rsv {
	struct bga_volume *vol;
	struct bga_window win;
	uint32_t size; /* goal size of the next window; 0 = windows off */
	bool booked;   /* a window was ever booked: the next starts after it */
	/* allocations the fast path served since the last fold into the
	 * CPU's statistics (bga__rsv_count): plain, the handle is one
	 * thread's at a time */
	uint64_t hits;
	uint32_t colour; /* which of BGA_RSV_COLOURS slices of a group a new file starts in */
};

/*
 * Files that start at one goal (one directory) would book their first
 * windows back to back, and each window after the first would then have
 * to jump past a neighbour's: a new extent every window.  As ext4 colours
 * a new file's first goal by its process, a handle's first window starts
 * in its own slice of the goal's group, leaving each file room to grow in
 * place (BENCHMARKS.md, "Extents per file").
 */
#define BGA_RSV_COLOURS 16u

/* Drop the handle's window, if it has one. */
static void window_drop(struct bga_rsv *rsv)
{
	struct bga_volume *vol = rsv->vol;
	if (!rsv->win.linked)
		return;
	uint64_t g = rsv->win.group;
	bga__group_lock(vol, g);
	bga__window_drop_locked(vol, bga__group_lookup(vol, g), &rsv->win); /* it holds the window */
	bga__group_unlock(vol, g);
}

int bga_rsv_open(struct bga_volume *vol, struct bga_rsv **out)
{
	if (vol == NULL || out == NULL)
		return -EINVAL;
	/* A line of its own: the owner's takes write the window's span, and
	 * two files' handles in one line would move it between their CPUs. */
	size_t size = (sizeof(struct bga_rsv) + BGA_CACHELINE - 1) / BGA_CACHELINE * BGA_CACHELINE;
	struct bga_rsv *rsv = aligned_alloc(BGA_CACHELINE, size);
	if (rsv == NULL)
		return -ENOMEM;
	memset(rsv, 0, sizeof(*rsv));
	rsv->vol = vol;
	rsv->size = vol->cfg.rsv_default;
	/* The colour sequence is the one shared write a handle makes, once,
	 * at open (a file open; the allocations themselves write none):
	 * handles opened one after another must get different colours
	 * whatever CPU opened them, which no per-CPU count gives.  The count
	 * of open handles is per CPU. */
	rsv->colour = (uint32_t)(__atomic_fetch_add(&vol->rsv_seq, 1, __ATOMIC_RELAXED) % BGA_RSV_COLOURS);
	__atomic_fetch_add(&bga__percpu(vol)->rsv_opened, 1, __ATOMIC_RELAXED);
	*out = rsv;
	return 0;
}

void bga_rsv_close(struct bga_rsv *rsv)
{
	if (rsv == NULL)
		return;
	window_drop(rsv);
	struct bga_volume *vol = rsv->vol;
	bga__rsv_count(vol, rsv, 0);
	__atomic_fetch_add(&bga__percpu(vol)->rsv_closed, 1, __ATOMIC_RELAXED);
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
	/* the owner's own call: no take runs meanwhile; a thief may cut */
	uint64_t s = __atomic_load_n(&rsv->win.span, __ATOMIC_ACQUIRE);
	uint32_t cur = bga__wspan_cur(s), end = bga__wspan_end(s);
	bool held = rsv->win.linked && end > cur;
	out->start = held ? bga__group_first(rsv->vol, rsv->win.group) + cur : 0;
	out->len = held ? end - cur : 0;
	return 0;
}

bool bga__rsv_take_fast(struct bga_volume *vol, struct bga_rsv *rsv, uint32_t min, uint32_t max, int64_t cap,
			struct bga_extent *out)
{
	if (rsv->vol != vol || rsv->size == 0 || !rsv->win.linked || !bga__window_take(vol, &rsv->win, min, max, cap, out))
		return false;
	rsv->hits++;
	return true;
}

void bga__rsv_count(struct bga_volume *vol, struct bga_rsv *rsv, uint64_t misses)
{
	uint64_t hits = rsv->hits;
	if (hits + misses == 0)
		return;
	struct bga_percpu *pc = bga__percpu(vol);
	rsv->hits = 0;
	__atomic_fetch_add(&pc->rsv_allocs, hits + misses, __ATOMIC_RELAXED);
	__atomic_fetch_add(&pc->rsv_hits, hits, __ATOMIC_RELAXED);
}

bool bga__rsv_group(const struct bga_rsv *rsv, uint64_t *g)
{
	*g = rsv->win.group;
	return rsv->win.linked;
}

bool bga__rsv_take_locked(struct bga_volume *vol, struct bga_actx *ac, struct bga_rsv *rsv, struct bga_group *grp,
			  struct bga_extent *out)
{
	struct bga_window *w = &rsv->win;
	if (bga__window_take_locked(vol, ac, w, out)) {
		rsv->hits++;
		return true;
	}
	/* Used up (or too short): grow the next window if this one served
	 * its file well, as ext3 does. */
	uint64_t s = __atomic_load_n(&w->span, __ATOMIC_ACQUIRE);
	if (2 * (bga__wspan_cur(s) - w->start) > bga__wspan_end(s) - w->start)
		rsv->size = BGA_MIN(rsv->size * 2, vol->cfg.rsv_max);
	bga__window_drop_locked(vol, grp, w);
	return false;
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
		       struct bga_window **book, uint32_t *wsize)
{
	/* Book a new window from the goal on (or right after the old one, so
	 * a file written in order stays contiguous); a first window starts in
	 * the handle's colour of the goal's group. */
	uint64_t next = rsv->booked ? bga__group_first(vol, rsv->win.group) +
					      bga__wspan_end(__atomic_load_n(&rsv->win.span, __ATOMIC_RELAXED))
				    : BGA_NO_GOAL;
	if (goal == BGA_NO_GOAL)
		goal = next < geo->nblocks ? next : bga__home(bga__percpu(vol), geo->nblocks);
	if (!rsv->booked)
		goal = coloured(vol, geo, goal, rsv->colour);
	*wsize = BGA_MIN(rsv->size, vol->cfg.blocks_per_group);
	rsv->win.slice = rsv->colour * (vol->cfg.blocks_per_group / BGA_RSV_COLOURS);
	*book = &rsv->win;
	return goal;
}

void bga__rsv_booked(struct bga_rsv *rsv)
{
	rsv->booked = true;
}

bool bga__rsv_started(const struct bga_rsv *rsv)
{
	return rsv->booked;
}
