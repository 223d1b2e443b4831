/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_SEARCH_H
#define BGA_SEARCH_H

/*
 * Where the route's phases look (search.c), each called by route.c's
 * route_once in the order of enum bga_route_phase (route.h).  Each takes
 * the allocation context as the route set it (actx.h); 0 with *out the
 * extent taken (charged, marked in use), or an error that route_once
 * acts on as route.c says (-EBUSY from the window and locality phases:
 * the phase did not serve, the walk goes on).  No lock held on entry or
 * return.
 */

#include "types.h"
#include "handle.h"

struct bga_actx;

/* BGA_ROUTE_EXACT: BGA_EXACT_GOAL, there or nowhere (a window's remainder
 * in the way taken back). */
int bga__alloc_exact(struct bga_volume *vol, struct bga_actx *ac, struct bga_extent *out);
/* BGA_ROUTE_WINDOW: the handle's window: take, book the next in place,
 * book by the walk; a small file's first request packed instead. */
int bga__alloc_window(struct bga_volume *vol, struct bga_actx *ac, struct bga_extent *out);
/* BGA_ROUTE_LOCAL: the CPU's locality window, while contention gives it
 * bookings. */
int bga__alloc_local(struct bga_volume *vol, struct bga_actx *ac, struct bga_extent *out);
/* A new goal-less file's first request into a free run of exactly its
 * length in its CPU's home group (ac->goal's) whose free space is in
 * pieces (<bgalloc/alloc.h>, where a request looks, 2; hole.c says
 * when).  0 with *out taken; -ENOSPC (or -EBUSY: the lock was held)
 * when no such hole serves, nothing taken then. */
int bga__alloc_hole(struct bga_volume *vol, struct bga_actx *ac, struct bga_extent *out);
/* BGA_ROUTE_WALK: the group walk from ac->goal: the goal's group, then
 * the index round the volume, busy groups again at the end. */
int bga__search(struct bga_volume *vol, struct bga_actx *ac, struct bga_extent *out);

/* Fold the handle's window hits, and `misses` allocations through it that
 * its window did not serve, into the calling CPU's statistics (the route
 * counts them; rsv.c at close).  Hits are counted in the handle (no
 * shared write on the fast path) until then: bga_stats sees them when
 * the handle next misses or closes. */
void bga__rsv_count(struct bga_volume *vol, struct bga_rsv *rsv, uint64_t misses);

#endif
