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
 * was used (up to rsv_max); a handle the caller sized books every window
 * at its size (bga_rsv_set_size).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "route.h"
#include "search.h"
#include "group.h"
#include "window.h"
#include "percpu.h"

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
	rsv->win.aim = UINT64_MAX;
	rsv->size = vol->cfg.rsv_default;
	/* The count of open handles is per CPU: no shared line. */
	__atomic_fetch_add(&bga__percpu(vol)->rsv.opened, 1, __ATOMIC_RELAXED);
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
	__atomic_fetch_add(&bga__percpu(vol)->rsv.closed, 1, __ATOMIC_RELAXED);
	free(rsv);
}

int bga_rsv_set_size(struct bga_rsv *rsv, uint32_t blocks)
{
	/* up to a group, apart from rsv_max: rsv_max caps the doubling of
	 * a size nobody set, and a caller that knows its file's size (XFS's
	 * extent size hint) may know it past that cap; up to rsv_max where
	 * that is more, as before (a window is at most a group anyway) */
	if (rsv == NULL || blocks > BGA_MAX(rsv->vol->cfg.blocks_per_group, rsv->vol->cfg.rsv_max))
		return -EINVAL;
	rsv->size = blocks;
	rsv->sized = blocks != 0;
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
