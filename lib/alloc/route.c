/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The slow path of bga_alloc, around one allocation context (struct
 * bga_actx, actx.h), as ext4's ext4_allocation_context: the request, its
 * kind (decided once, alloc/request.h), its geometry, the resolved goal, the
 * window being booked and its size, the CPU's steering state, and a
 * status.  route() and route_once() run the phases top to bottom (enum
 * bga_route_phase, route.h), as ext4_mb_new_blocks does; where each
 * phase looks is search.c's (search.h).
 */
#include <errno.h>
#include <sched.h>

#include "rcu.h"

#include "route.h"
#include "search.h"
#include "request.h"
#include "actx.h"
#include "group.h"
#include "window.h"
#include "percpu.h"
#include "charge.h"
#include "deferred.h"
#include "steer.h"
#include "pack.h"

/* Searches again after an -ENOSPC that the exact free count contradicts. */
#define BGA_SEARCH_RETRIES 16

/*
 * Blocks that nobody owns and nobody was promised, exactly (a reserved
 * request counts what is reserved, which it may draw on).
 */
static int64_t blocks_unpromised(struct bga_volume *vol, const struct bga_actx *ac)
{
	if (ac->take.reserved)
		return (int64_t)__atomic_load_n(&vol->reserved, __ATOMIC_RELAXED);
	return bga__unpromised(vol, ac->take.geo);
}

/*
 * One pass of the route, its phases in order.  The exact goal is there or
 * nowhere; steering then says where this CPU looks first; a handle's
 * window may serve or book; what they leave goes on as a plain request:
 * from the CPU's locality window when small and goal-less, else by the
 * group walk.  Where the extent went moves the CPU's hints, once.
 */
static int route_once(struct bga_volume *vol, struct bga_actx *ac, struct bga_extent *out)
{
	const struct bga_request *req = ac->req;
	/* BGA_ROUTE_EXACT: the exact goal */
	if (ac->kind == BGA_REQ_EXACT)
		return bga__alloc_exact(vol, ac, out);
	/* BGA_ROUTE_STEER: where this CPU's request looks first */
	uint64_t goal = bga__resolve_goal(vol, ac->pc, req->goal, ac->take.geo->nblocks, &ac->steered);
	ac->goal = goal;
	ac->goal_busy = false;
	int rc = -EBUSY;
	/* BGA_ROUTE_WINDOW: take, book in place, book by the walk */
	if (ac->kind == BGA_REQ_WINDOW) {
		/* what the file aims at until its first window is booked: a
		 * busy group its windows meet later steers this CPU's requests
		 * for that goal (steer.h, bga__steer_window_busy) */
		if (!req->rsv->booked)
			req->rsv->win.aim = req->goal < ac->take.geo->nblocks ? bga__group_of(vol, req->goal) : UINT64_MAX;
		rc = bga__alloc_window(vol, ac, out);
		if (rc == 0 || ac->take.stop)
			goto done;
		ac->goal = goal;
		ac->goal_busy = false;
		rc = -EBUSY;
	}
	ac->note = true;
	ac->take.room = 0;
	ac->fit = 0;
	ac->sized = false;
	ac->book = NULL;
	ac->wsize = 0;
	/* BGA_ROUTE_LOCAL: the CPU's locality window, while contention gives
	 * it bookings */
	if (ac->kind == BGA_REQ_LOCAL)
		rc = bga__alloc_local(vol, ac, out);
	/* BGA_ROUTE_WALK: the group walk */
	if (rc == -EBUSY) {
		ac->book = NULL;
		rc = bga__search(vol, ac, out);
		if (ac->goal_busy && req->goal == BGA_NO_GOAL && req->max_len <= BGA_LOCAL_MAX_REQ)
			__atomic_store_n(&ac->pc->local.left, BGA_LOCAL_BOOKINGS, __ATOMIC_RELAXED);
	}
done:
	if (rc == 0 && ac->note) {
		bga__note_result(vol, ac->pc, req->goal, ac->goal, ac->steered, ac->goal_busy, out);
		if (ac->kind == BGA_REQ_WINDOW && ac->goal_busy)
			bga__steer_file_busy(vol, ac->pc, bga__group_of(vol, ac->goal), req->rsv->win.aim,
					     ac->take.geo->nblocks);
	}
	return rc;
}

/*
 * One extent where one run holds the request (bga_alloc_vec's pieces,
 * ac->whole; bga_alloc with BGA_WHOLE or an allocation unit): a plain
 * request whose min_len is below its max_len looks first for a run of all
 * of max_len (route_once with min raised to max: the goal's group from
 * the goal on, then the index's groups that can hold it, round to the
 * goal's group), and only
 * when none exists is the goal's shorter run carved as before.  A request
 * the goal's run holds costs nothing more: the first walk takes it there.
 * So a request that one run can hold comes back as one extent (Ceph's
 * allocators keep it whole; mballoc looks for its goal length first).
 * A goal-less request is one too: it has no goal block to keep, and
 * packing from the home (steer.h) fills the holes that hold it whole.
 * An unaligned bga_alloc without the flag keeps its promise of the goal
 * block whenever a run of min_len starts there (bgalloc.h): passing
 * shorter runs over for whole ones doubled the aging benchmark's free
 * extents (BENCHMARKS.md#at-a-storage-engines-allocation-unit).
 */
static int route_whole(struct bga_volume *vol, struct bga_actx *ac, struct bga_extent *out)
{
	uint32_t min = ac->take.min;
	/* (the request's own align: a stripe's pass is not an aligned request) */
	if (min < ac->take.max && (ac->kind == BGA_REQ_PLAIN || ac->kind == BGA_REQ_LOCAL) &&
	    (ac->whole || (ac->req->flags & BGA_WHOLE) || ac->req->align > 1 || ac->req->goal == BGA_NO_GOAL)) {
		ac->take.min = ac->take.max;
		int rc = route_once(vol, ac, out);
		ac->take.min = min;
		if (ac->take.stop)
			ac->take.stop = 0; /* the count ruled out max_len, not min_len: the walk below decides */
		else if (rc != -ENOSPC)
			return rc;
	}
	return route_once(vol, ac, out);
}

/*
 * The route under one geometry: the request checked against it and
 * classified once; passes while the exact count says a run exists;
 * -EAGAIN when only pending deferred frees stand in the way.
 * *count_short: the count, not the walk, ruled an unreserved request out
 * (bga__alloc_slow then reads unread chunks).
 */
static int route(struct bga_volume *vol, const struct bga_request *req, struct bga_extent *out, unsigned how,
		 bool *count_short)
{
	urcu_bp_read_lock();
	const struct bga_geom *geo = bga_rcu_load(vol->geom);
	/* BGA_ROUTE_CHECK: the request against the geometry, and its kind */
	int rc = -EINVAL;
	if (req->goal != BGA_NO_GOAL && req->goal >= geo->nblocks)
		goto out;
	bool reserved = req->flags & BGA_USE_RESERVED;
	if (reserved && __atomic_load_n(&vol->reserved, __ATOMIC_RELAXED) < req->min_len)
		goto out;
	rc = -ENOSPC;
	if (req->min_len > vol->cfg.blocks_per_group)
		goto out; /* extents never cross a group boundary: no commit helps */
	rc = -EINVAL;
	if (req->rsv != NULL && req->rsv->vol != vol)
		goto out;
	uint32_t align = req->align > 1 ? (uint32_t)req->align : 1;
	struct bga_actx ac = {
		.take = {
			.geo = geo,
			.min = (uint32_t)req->min_len,
			.max = (uint32_t)(BGA_MIN(req->max_len, (uint64_t)vol->cfg.blocks_per_group) / align * align),
			.align = align,
			.reserved = reserved,
		},
		.req = req,
		.kind = bga__req_kind(req),
		.pc = bga__percpu(vol),
		.whole = how & BGA_PIECE_WHOLE,
		.keep_windows = how & BGA_PIECE_KEEP_WINDOWS,
		.vec = how & BGA_PIECE_VEC,
	};
	/* bga_alloc_vec's pieces: the locality window is bga_alloc's */
	if ((how & BGA_PIECE_VEC) && ac.kind == BGA_REQ_LOCAL)
		ac.kind = BGA_REQ_PLAIN;
	/* An aligned request through a handle is served from its window,
	 * booked aligned for it (window_next, place_window_locked); a CPU's
	 * locality window is not aligned, so without a handle an aligned
	 * request is the walk's (bgalloc.h, struct bga_request.align). */
	if (align > 1 && (ac.kind == BGA_REQ_LOCAL ||
			  (ac.kind == BGA_REQ_WINDOW && BGA_MIN(vol->cfg.rsv_max, vol->cfg.blocks_per_group) < align)))
		ac.kind = BGA_REQ_PLAIN;
	/*
	 * The stripe (cfg.stripe, ext4's stripe=): a plain request of whole
	 * stripes looks for a stripe-aligned run first, and is placed as any
	 * other only when none exists.
	 */
	uint32_t stripe = vol->cfg.stripe;
	if (stripe > 1 && align == 1 && (ac.kind == BGA_REQ_PLAIN || ac.kind == BGA_REQ_LOCAL) &&
	    ac.take.min % stripe == 0 && ac.take.max % stripe == 0) {
		enum bga_req_kind kind = ac.kind;
		ac.take.align = stripe;
		ac.kind = BGA_REQ_PLAIN;
		rc = route_whole(vol, &ac, out);
		ac.take.align = 1;
		ac.kind = kind;
		if (rc != -ENOSPC)
			goto out;
		/* the count ruled it out for any placement: no plain walk,
		 * but -ENOSPC against -EAGAIN is still BGA_ROUTE_DEFERRED's
		 * to decide */
		if (ac.take.stop)
			goto decide;
	}
	for (int tries = 0;; tries++) {
		rc = route_whole(vol, &ac, out);
		/*
		 * BGA_ROUTE_RETRY: a walk visits groups one at a time, so
		 * blocks freed behind it while others are taken ahead of it
		 * can make it miss free space that existed throughout.  The exact counter
		 * tells whether there is space for min_len at all, and the
		 * group index whether any group now has a run that long
		 * (bga__idx_may_fit): walk again only while both say so, or
		 * while windows held blocks to take back.  So a request that
		 * no run can meet fails after one walk, in time bounded by the
		 * index, however many blocks are free.
		 */
		if (rc != -ENOSPC || ac.take.stop || tries == BGA_SEARCH_RETRIES || ac.kind == BGA_REQ_EXACT ||
		    blocks_unpromised(vol, &ac) < (int64_t)req->min_len)
			break;
		/* A later piece of bga_alloc_vec: its call has a result
		 * already, so other windows are not its to take (alloc.h,
		 * where a request looks), and a miss ends its carve. */
		if (ac.keep_windows)
			break;
		/* Blocks that windows hold are free but not in any bitmap's
		 * free runs: take them back before anything else (as
		 * mballoc discards preallocations and retries).  Only when
		 * none were held does the walk wait for others to move, and
		 * only when the index shows a group it may have missed (an
		 * aligned request: a run long enough to hold an aligned one
		 * whatever its start). */
		if (bga__window_reclaim(vol, geo) == 0) {
			/* A reservation promises that the space exists (the
			 * count above is that promise), and the index is an
			 * instant like the walk: it may miss runs that others
			 * are freeing or a trim holds for its discard.  Only
			 * an unreserved request fails fast on it. */
			if (!reserved && !bga__idx_may_fit(vol, geo, (uint64_t)ac.take.min + ac.take.align - 1))
				break;
			sched_yield();
		}
	}
decide:
	/* BGA_ROUTE_DEFERRED: -EAGAIN only if the commit would make space
	 * (deferred.c decides, on its one definition of what is free after
	 * it). */
	if (rc == -ENOSPC && bga__dfree_would_fit(vol, &ac.take, ac.kind == BGA_REQ_EXACT ? req->goal : BGA_NO_GOAL))
		rc = -EAGAIN;
	*count_short = rc != 0 && !reserved && (ac.take.stop == -ENOSPC || bga__unpromised(vol, geo) < (int64_t)ac.take.min);
out:
	urcu_bp_read_unlock();
	return rc;
}

static int alloc_slow(struct bga_volume *vol, const struct bga_request *req, struct bga_extent *out, unsigned how)
{
	bool count_short = false;
	int rc = route(vol, req, out, how, &count_short);
	/* BGA_ROUTE_SETTLE: the count promises only verified space
	 * (types.h): when it ruled the request out while a lazy load left
	 * chunks unread, read them and decide again.  (A walk that found no run has read every
	 * chunk it could have found one in.) */
	if (count_short) {
		int settled = bga__unverified_settle(vol);
		if (settled)
			rc = settled < 0 ? settled : route(vol, req, out, how, &count_short);
	}
	return rc;
}

int bga__alloc_slow(struct bga_volume *vol, const struct bga_request *req, struct bga_extent *out)
{
	return alloc_slow(vol, req, out, 0);
}

int bga__alloc_piece(struct bga_volume *vol, const struct bga_request *req, struct bga_extent *out, unsigned how)
{
	return alloc_slow(vol, req, out, how);
}
