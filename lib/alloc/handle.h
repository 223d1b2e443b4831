/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_HANDLE_H
#define BGA_HANDLE_H

/*
 * The handle (bga_rsv_open, rsv.c): a file's window and how its next
 * one is sized, which the route reads (lib/README.md, "The route of
 * bga_alloc").
 */

#include "types.h"
#include "window.h"

/* bga_rsv.first of a file whose first request was longer than
 * BGA_SHOWN_LENS (percpu.h): never packed, not counted. */
#define BGA_SHOWN_LONG UINT8_MAX

/*
 * A handle (bga_rsv_open): a file's window and how the next one is sized.
 * `win` is linked into a group's window list while win.linked; its fields
 * are then under that group's lock.  The handle itself is used by one
 * thread at a time (the contract), so the rest needs no lock.  rsv.c owns
 * its life; the route (search.c) reads and books it.
 */
struct bga_rsv {
	struct bga_volume *vol;
	struct bga_window win;
	uint32_t size; /* goal size of the next window; 0 = windows off */
	bool sized;    /* the caller set size (bga_rsv_set_size): every window
			* is booked at it, and it never doubles */
	bool booked;   /* a window was ever booked: the next starts after it */
	uint8_t first; /* the length of the file's first request (1 .. BGA_SHOWN_LENS,
			* counted in the CPU's struct bga_pack, percpu.h); 0: none
			* yet; BGA_SHOWN_LONG: longer, not counted */
	bool grew;     /* the file asked again after its first request (counted once) */
	/* allocations the fast path served since the last fold into the
	 * CPU's statistics (bga__rsv_count): plain, the handle is one
	 * thread's at a time */
	uint64_t hits;
};

/*
 * Does `goal` name a block that rsv's window has already handed out (in
 * [start, cur) of its group)?  Then the file goes on from a block it gave
 * back, not from where its window goes on: the window does not serve
 * the request, and the route books the next one from the goal (search.c,
 * alloc_window).  The handle's own thread: its window's fields hold
 * still but for a thief's cut of end.
 */
static inline bool bga__goal_behind_window(const struct bga_volume *vol, const struct bga_rsv *rsv, uint64_t goal)
{
	if (goal == BGA_NO_GOAL || !rsv->win.linked)
		return false;
	uint64_t first = bga__group_first(vol, rsv->win.group);
	uint32_t cur = bga__wspan_cur(__atomic_load_n(&rsv->win.span, __ATOMIC_RELAXED));
	return goal >= first + rsv->win.start && goal < first + cur;
}

#endif
