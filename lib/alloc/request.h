/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_REQUEST_H
#define BGA_REQUEST_H

/*
 * The request as the route sees it (lib/README.md, "The route of
 * bga_alloc"): the predicates that classify it, shared by the fast paths
 * (alloc.c) and the slow path (route.c), which classifies once into
 * struct bga_actx's kind (actx.h), and the allocation unit's checks.
 */

#include "types.h"
#include "window.h"
#include "handle.h"

/* The kinds of request, decided once from its fields (bga__req_kind). */
enum bga_req_kind {
	BGA_REQ_PLAIN,  /* the group walk from the (steered) goal */
	BGA_REQ_LOCAL,  /* small and goal-less: the CPU's locality window first */
	BGA_REQ_WINDOW, /* through a handle whose windows are on */
	BGA_REQ_EXACT,  /* BGA_EXACT_GOAL: there or nowhere */
};

/*
 * No flags, no handle, no unit (align 0 or 1): the common request's
 * first test, paid on every allocation (bench/volume/instructions.sh): the
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

/*
 * The allocation unit's checks (bgalloc.h, struct bga_request.align):
 * align 0 or 1, or a power of two <= blocks_per_group that divides
 * min_len and max_len.  0 or -EINVAL.
 */
static inline int bga__align_check(const struct bga_volume *vol, const struct bga_request *req)
{
	uint64_t a = req->align;
	if (a <= 1)
		return 0;
	if ((a & (a - 1)) || a > vol->cfg.blocks_per_group || (req->min_len & (a - 1)) || (req->max_len & (a - 1)) ||
	    req->min_len > vol->cfg.blocks_per_group)
		return -EINVAL;
	return 0;
}

#endif
