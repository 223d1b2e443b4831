/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_ROUTE_H
#define BGA_ROUTE_H

/*
 * The request's route (lib/README.md, "The route of bga_alloc"): the
 * calls between the route's files.  The request's predicates are in
 * request.h, the handle in handle.h.
 */

#include "types.h"
#include "handle.h"

/* ---- route.c ---- */

/*
 * The route's phases, in the order a request meets them, as mballoc
 * names its criteria (enum criteria): route.c marks each where it
 * begins (route, route_once), lib/README.md ("The route of
 * bga_alloc") says what each does; `make test`'s route_phases
 * (scripts/routephases.py) holds the three to this order.  One pass of
 * route_once runs EXACT..WALK for the request's kind; RETRY and SETTLE
 * run the route again.
 */
enum bga_route_phase {
	BGA_ROUTE_CHECK,    /* the request against the geometry, and its kind, once */
	BGA_ROUTE_EXACT,    /* BGA_EXACT_GOAL: there or nowhere */
	BGA_ROUTE_STEER,    /* where this CPU's request looks first (steer.h) */
	BGA_ROUTE_WINDOW,   /* the handle's window: take, book in place, book by the walk */
	BGA_ROUTE_LOCAL,    /* the CPU's locality window, while contention gives it bookings */
	BGA_ROUTE_WALK,     /* the group walk: the goal's group, the index round the volume */
	BGA_ROUTE_RETRY,    /* another pass while the exact count says space exists */
	BGA_ROUTE_DEFERRED, /* -EAGAIN when only pending deferred frees stand in the way */
	BGA_ROUTE_SETTLE,   /* a lazy load's unread chunks read, and the route again */
};


/* bga_alloc after its fast paths missed (a request alloc.c validated). */
int bga__alloc_slow(struct bga_volume *vol, const struct bga_request *req, struct bga_extent *out);
/* One piece of bga_alloc_vec (a request vec.c validated as bga_alloc
 * would), by the slow path, never from the CPU's locality window
 * (BGA_PIECE_VEC; alloc.h, where a request looks).  `how` also:
 * BGA_PIECE_WHOLE (no handle), a run that holds all of max_len first,
 * and a goal inside a free run moved to that run's start (route.c and search.c,
 * route_whole and try_group_locked); BGA_PIECE_KEEP_WINDOWS, other
 * windows are not taken back: -ENOSPC instead (a later piece, or all or
 * nothing's carve). */
enum { BGA_PIECE_WHOLE = 1u << 0, BGA_PIECE_KEEP_WINDOWS = 1u << 1, BGA_PIECE_VEC = 1u << 2 };
int bga__alloc_piece(struct bga_volume *vol, const struct bga_request *req, struct bga_extent *out, unsigned how);

/* ---- vec_fit.c ---- */

/*
 * bga_alloc_vec's all-or-nothing answer once its carve fell short (and
 * gave back what it took): want blocks as at most max_out extents, each
 * min_len .. max_len and aligned, in the free runs now: taken (0, out[]
 * and *n_out filled); else -EAGAIN when they fit after every pending
 * deferred free commits, -ENOSPC when not; -ENOMEM.  Reads a lazy load's
 * unread chunks first.  `checked`: bga__vec_fits_now said it does not fit,
 * so unless unread chunks are read now it is not looked for again.  No
 * lock held.
 */
int bga__vec_fit(struct bga_volume *vol, const struct bga_request *req, uint64_t want, struct bga_extent *out,
		 size_t max_out, size_t *n_out, bool checked);
/* Does all-or-nothing's want fit now, in the chunks read so far (a lazy
 * load's unread ones count as used)?  Looks, takes nothing: 0, -ENOSPC,
 * -ENOMEM.  Before a carve, so that a request that cannot succeed fails
 * having changed nothing (a carve's pieces give groups bitmaps that its
 * undo leaves). */
int bga__vec_fits_now(struct bga_volume *vol, const struct bga_request *req, uint64_t want, size_t max_out);

#endif
