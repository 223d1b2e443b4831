/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_ROUTE_H
#define BGA_ROUTE_H

/*
 * The request's route (lib/README.md, "The route of bga_alloc"): the
 * predicates that classify a request, shared by the fast paths (alloc.c)
 * and the slow path (search.c), which classifies once into
 * struct bga_actx's kind; the handle's state, which the route reads; and
 * the calls between the route's files.
 */

#include "internal.h"
#include "window.h"

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
	bool booked;   /* a window was ever booked: the next starts after it */
	/* allocations the fast path served since the last fold into the
	 * CPU's statistics (bga__rsv_count): plain, the handle is one
	 * thread's at a time */
	uint64_t hits;
};

/* The kinds of request, decided once from its fields (bga__req_kind). */
enum bga_req_kind {
	BGA_REQ_PLAIN,  /* the group walk from the (steered) goal */
	BGA_REQ_LOCAL,  /* small and goal-less: the CPU's locality window first */
	BGA_REQ_WINDOW, /* through a handle whose windows are on */
	BGA_REQ_EXACT,  /* BGA_EXACT_GOAL: there or nowhere */
};

/*
 * No flags, no handle, no unit (align 0 or 1): the common request's
 * first test, paid on every allocation (bench/instructions.sh): the
 * flags and the handle by one OR and one branch.
 */
static inline bool bga__req_is_plain(const struct bga_request *req)
{
	return (req->flags | (uintptr_t)req->rsv) == 0 && req->align <= 1;
}

/* Small, goal-less, without a handle, a reservation or BGA_WHOLE: the
 * CPU's locality window serves it (window.h). */
static inline bool bga__req_is_local(uint64_t goal, const struct bga_rsv *rsv, uint64_t max_len, uint32_t flags)
{
	return goal == BGA_NO_GOAL && rsv == NULL && max_len <= BGA_LOCAL_MAX_REQ &&
	       !(flags & (BGA_USE_RESERVED | BGA_WHOLE));
}

/* Through a handle whose windows are on (an exact goal ignores them). */
static inline bool bga__req_uses_window(const struct bga_rsv *rsv, uint32_t flags)
{
	return rsv != NULL && rsv->size != 0 && !(flags & BGA_EXACT_GOAL);
}

static inline enum bga_req_kind bga__req_kind(const struct bga_request *req)
{
	if (req->flags & BGA_EXACT_GOAL)
		return BGA_REQ_EXACT;
	if (bga__req_uses_window(req->rsv, req->flags))
		return BGA_REQ_WINDOW;
	if (bga__req_is_local(req->goal, req->rsv, req->max_len, req->flags))
		return BGA_REQ_LOCAL;
	return BGA_REQ_PLAIN;
}

/* ---- search.c ---- */

/* bga_alloc after its fast paths missed (a request alloc.c validated). */
int bga__alloc_slow(struct bga_volume *vol, const struct bga_request *req, struct bga_extent *out);
/* One piece of bga_alloc_vec (a request vec.c validated as bga_alloc
 * would), by the slow path, never from the CPU's locality window
 * (BGA_PIECE_VEC; alloc.h, where a request looks).  `how` also:
 * BGA_PIECE_WHOLE (no handle), a run that holds all of max_len first,
 * and a goal inside a free run moved to that run's start (search.c,
 * route_whole and try_group_locked); BGA_PIECE_KEEP_WINDOWS, other
 * windows are not taken back: -ENOSPC instead (a later piece, or all or
 * nothing's carve). */
enum { BGA_PIECE_WHOLE = 1u << 0, BGA_PIECE_KEEP_WINDOWS = 1u << 1, BGA_PIECE_VEC = 1u << 2 };
int bga__alloc_piece(struct bga_volume *vol, const struct bga_request *req, struct bga_extent *out, unsigned how);
/* Fold the handle's window hits, and `misses` allocations through it that
 * its window did not serve, into the calling CPU's statistics (the route
 * counts them; rsv.c at close).  Hits are counted in the handle (no
 * shared write on the fast path) until then: bga_stats sees them when
 * the handle next misses or closes. */
void bga__rsv_count(struct bga_volume *vol, struct bga_rsv *rsv, uint64_t misses);

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
