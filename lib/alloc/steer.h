/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_STEER_H
#define BGA_STEER_H

/*
 * Steering: where a plain request looks first on this CPU, and how the
 * CPU's hints move after it.  Inline because the fast path (alloc.c) runs
 * both on every allocation; the slow path (search.c) uses the same two.
 */

#include "group.h"
#include "percpu.h"

/*
 * Allocations whose goal group was found locked stick to the group they
 * got instead for this many allocations before trying the goal's group
 * again, so threads that aim at one hot group drift apart instead of
 * taking turns at its lock and cache lines.
 */
#define BGA_STEER_ALLOCS 64
/*
 * Backoff: a group found busy again within BGA_STEER_ALLOCS allocations
 * of this CPU's return to it keeps the CPU away twice as long as last
 * time, up to this many allocations.  A CPU that keeps coming back to a
 * group another CPU lives in then stops paying for a busy lock (and that
 * group's lines) every 64 allocations; a group found busy only now and
 * then costs 64 steered allocations as before.
 */
#define BGA_STEER_MAX 4096

/*
 * Where a plain request looks first on this CPU: its home for
 * BGA_NO_GOAL; for a goal in a group this CPU was steered away from, where
 * it went instead; the goal itself otherwise.  Hints at or past `nblocks`
 * are stale and dropped.
 */
static inline uint64_t bga__resolve_goal(const struct bga_volume *vol, struct bga_percpu *pc, uint64_t goal,
				    uint64_t nblocks, bool *steered)
{
	*steered = false;
	if (goal == BGA_NO_GOAL)
		return bga__home(pc, nblocks);
	if (__atomic_load_n(&pc->steer.left, __ATOMIC_RELAXED) != 0 &&
	    __atomic_load_n(&pc->steer.from, __ATOMIC_RELAXED) == bga__group_of(vol, goal)) {
		uint64_t to = __atomic_load_n(&pc->steer.to, __ATOMIC_RELAXED);
		if (to < nblocks) {
			*steered = true;
			return to;
		}
	}
	return goal;
}

/*
 * Steer this CPU's requests for group `from`, whose lock it found busy,
 * to block `to` (in another group), with the backoff above.
 */
static inline void bga__steer_away(struct bga_percpu *pc, uint64_t from, uint64_t to)
{
	uint32_t len = BGA_STEER_ALLOCS, prev = __atomic_load_n(&pc->steer.len, __ATOMIC_RELAXED);
	if (__atomic_load_n(&pc->steer.from, __ATOMIC_RELAXED) == from && prev >= BGA_STEER_ALLOCS &&
	    __atomic_load_n(&pc->steer.since, __ATOMIC_RELAXED) < BGA_STEER_ALLOCS)
		len = BGA_MIN(2 * prev, BGA_STEER_MAX);
	__atomic_store_n(&pc->steer.from, from, __ATOMIC_RELAXED);
	__atomic_store_n(&pc->steer.to, to, __ATOMIC_RELAXED);
	__atomic_store_n(&pc->steer.left, len, __ATOMIC_RELAXED);
	__atomic_store_n(&pc->steer.len, len, __ATOMIC_RELAXED);
	__atomic_store_n(&pc->steer.since, 0, __ATOMIC_RELAXED);
}

/* This CPU's requests for group `from` are being steered now. */
static inline bool bga__steering_from(struct bga_percpu *pc, uint64_t from)
{
	return __atomic_load_n(&pc->steer.left, __ATOMIC_RELAXED) != 0 &&
	       __atomic_load_n(&pc->steer.from, __ATOMIC_RELAXED) == from;
}

/* Steer them to `to` (bga__steer_home_past's): a steering that stands
 * (`steered`) keeps its count and only changes its destination. */
static inline void bga__steer_home(struct bga_percpu *pc, bool steered, uint64_t from, uint64_t to)
{
	if (steered)
		__atomic_store_n(&pc->steer.to, to, __ATOMIC_RELAXED);
	else
		bga__steer_away(pc, from, to);
}

/*
 * Where a CPU steered away from busy group g, for requests aimed at group
 * `from`, goes instead: its home, or the group after g when the home is in
 * g or in `from` (the volume's first when g is the last).  False when
 * there is nowhere (g is the only group).
 */
static inline bool bga__steer_home_past(const struct bga_volume *vol, struct bga_percpu *pc, uint64_t g, uint64_t from,
					uint64_t nblocks, uint64_t *to)
{
	*to = bga__home(pc, nblocks);
	uint64_t hg = bga__gpos(vol, *to).g;
	if (hg != g && hg != from)
		return true;
	*to = bga__group_first(vol, g) + vol->cfg.blocks_per_group;
	if (*to >= nblocks)
		*to = 0;
	return !(*to == 0 && g == 0);
}

/*
 * A file's window went on in group g while another CPU held g's lock
 * (two writers in one directory).  The file stays where it is, to stay
 * contiguous; this CPU's next new files aimed where this one aimed
 * (`aim`, its first request's group: window.h; g when UINT64_MAX) start
 * from its home instead (bga__steer_home_past), as plain requests are
 * steered, so the writers' bookings, unlinks and deletes stop taking
 * turns at one group's lock and lines.  Steered from that aim already, to
 * a destination in g (the next group with room, where the other writers
 * steered from the same goal went too): the steering stands and its
 * destination moves to the home, so that they part there as well
 * (BENCHMARKS.md#the-model-of-n-cores).
 */
static inline void bga__steer_window_busy(const struct bga_volume *vol, struct bga_percpu *pc, uint64_t g,
					  uint64_t aim, uint64_t nblocks)
{
	uint64_t from = aim != UINT64_MAX ? aim : g, to;
	bool steered = bga__steering_from(pc, from);
	uint64_t dest = __atomic_load_n(&pc->steer.to, __ATOMIC_RELAXED);
	if (steered && (from == g || dest >= nblocks || bga__gpos(vol, dest).g != g))
		return;
	if (bga__steer_home_past(vol, pc, g, from, nblocks, &to))
		bga__steer_home(pc, steered, from, to);
}

/*
 * A file's first window was booked after its goal's group g was found
 * busy (route.c, after bga__note_result): this CPU's next files aimed
 * where this one aimed go from its home (bga__steer_home_past), not from
 * where this one went, the next group with room, where every writer that
 * met in g went too.  A file whose windows are sized to it meets g only
 * here.
 */
static inline void bga__steer_file_busy(const struct bga_volume *vol, struct bga_percpu *pc, uint64_t g,
					uint64_t aim, uint64_t nblocks)
{
	uint64_t from = aim != UINT64_MAX ? aim : g, to;
	if (bga__steer_home_past(vol, pc, g, from, nblocks, &to))
		bga__steer_home(pc, bga__steering_from(pc, from), from, to);
}

/*
 * After a plain request for `want` (req->goal) landed at *out, having
 * looked first at `goal`: move the CPU's home when its group was busy,
 * count a steered allocation, or, when the goal's group was busy and the
 * search went elsewhere, steer this CPU's later requests for that group
 * to where it went.
 */
static inline void bga__note_result(const struct bga_volume *vol, struct bga_percpu *pc, uint64_t want, uint64_t goal,
			       bool steered, bool busy, const struct bga_extent *out)
{
	uint64_t next = out->start + out->len;
	if (want == BGA_NO_GOAL) {
		/* Goal-less requests pack from the low end of the home's
		 * group, as first fit would, and the home stays there while
		 * the group serves them: moving on after each would spread
		 * them, and the holes their frees leave, over the whole
		 * volume (BENCHMARKS.md#placement-on-recorded-histories).  It moves,
		 * to the start of the group the walk went to, only when
		 * another CPU held the home's lock: CPUs that meet drift apart. */
		if (busy)
			__atomic_store_n(&pc->steer.home, bga__gpos(vol, out->start).first, __ATOMIC_RELAXED);
		return;
	}
	if (steered) {
		uint32_t left = __atomic_load_n(&pc->steer.left, __ATOMIC_RELAXED);
		__atomic_store_n(&pc->steer.to, next, __ATOMIC_RELAXED);
		if (left != 0)
			__atomic_store_n(&pc->steer.left, left - 1, __ATOMIC_RELAXED);
		return;
	}
	uint32_t len = __atomic_load_n(&pc->steer.len, __ATOMIC_RELAXED);
	if (!busy && len == 0)
		return; /* never steered: nothing to count */
	struct bga_gpos at = bga__gpos(vol, goal);
	if (busy && out->start - at.first >= vol->cfg.blocks_per_group) {
		bga__steer_away(pc, at.g, next); /* another group (a start below wraps) */
	} else if (len != 0 && __atomic_load_n(&pc->steer.from, __ATOMIC_RELAXED) == at.g) {
		/* Only a CPU that was steered once counts its returns. */
		uint32_t since = __atomic_load_n(&pc->steer.since, __ATOMIC_RELAXED);
		if (since < BGA_STEER_ALLOCS)
			__atomic_store_n(&pc->steer.since, since + 1, __ATOMIC_RELAXED);
	}
}


#endif
