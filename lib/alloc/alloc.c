/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga_alloc: validation and the fast path alone.  Anything the fast path
 * cannot decide goes, once, to the slow path (route.c), as mimalloc's
 * alloc.c hands a miss to page.c.
 */
#include <errno.h>

#include "route.h"
#include "request.h"
#include "group.h"
#include "window.h"
#include "percpu.h"
#include "charge.h"
#include "steer.h"

/*
 * How the common case ended: taken; missed, with nothing changed (the
 * slow path decides); or, in the leaf form, not tried because it would
 * need a call (a CPU id that only getcpu can give, a lock kind other than
 * fas), with nothing changed (the call form decides).
 */
enum fast_end { FAST_HIT, FAST_MISS, FAST_CALL };

/*
 * The common case without the search's machinery: a free run in the goal's
 * own word, at or after the goal, that the word decides, in a group that
 * is not contended.  Anything else returns FAST_MISS with
 * nothing changed, and takes the full search.  Its whole budget: one
 * lock-table lookup, one trylock/unlock, a few word operations, one group
 * count update, one counter add.
 *
 * The run found is charged to the used counter here, under the group lock
 * and before it is taken, through the counter's lock-free path against
 * `cap` (a capacity that is never above the real one); if that path
 * cannot decide, nothing is taken and FAST_MISS is returned.
 *
 * `leaf` (a constant) makes the form that calls nothing, so that
 * bga_alloc's common request makes no call (make test checks the code:
 * scripts/fastpath.py): the lock is the fas table's, taken and released
 * inline, and a take that would leave the group full, whose index update
 * is a call, is a miss.
 */
static inline __attribute__((always_inline)) enum fast_end alloc_at_goal(struct bga_volume *vol, unsigned cpu,
									 uint64_t goal, uint32_t min, uint32_t max,
									 int64_t cap, struct bga_extent *out, bool leaf)
{
	struct bga_gpos at;
	struct bga_group *grp = bga__group_peek(vol, goal, &at);
	if (grp == NULL)
		return FAST_MISS;
	struct locktab_slot *slot;
	if (!bga__group_trylock_slot(vol, at.g, &slot, leaf))
		return FAST_MISS;
	uint32_t start, len;
	bool hit = grp->bitmap && at.off < grp->hi &&
		   bga__word_run(grp->bitmap, at.off, min, max, &start, &len) && (!leaf || len < grp->free) &&
		   bga__charge_fast_locked(vol, cpu, cap, len);
	if (hit)
		bga__group_take_word_locked(vol, grp, at.g, start, len, leaf);
	bga__group_unlock_slot(vol, at.g, slot, leaf);
	/* Written from locals after the unlock: the lock's barriers would
	 * otherwise make every later reader load them back. */
	if (!hit)
		return FAST_MISS;
	*out = (struct bga_extent){.start = at.first + start, .len = len};
	return FAST_HIT;
}

/*
 * bga_alloc's common case, without RCU, the retry loop, or the search: a
 * plain request (no window handle, no flags) for min..max_len blocks at
 * `want` (req->goal) whose resolved goal, below vol->nblocks_floor, has a
 * run its own word decides, in an uncontended group (alloc_at_goal,
 * charging there against the floor's capacity).  Returns FAST_MISS (or
 * FAST_CALL in the leaf form, as alloc_at_goal says) with nothing changed
 * otherwise; bga_alloc then takes the full path, which decides on the
 * geometry.  The request's fields come as values, read once: the atomics
 * here would make the compiler load them again.
 */
static inline __attribute__((always_inline)) enum fast_end alloc_fast(struct bga_volume *vol, uint64_t want,
								      uint64_t min, uint64_t max_len,
								      struct bga_extent *out, bool leaf)
{
	unsigned cpu; /* once: the hints' line and the counter's slot */
	if (!leaf)
		cpu = bga__cpu_hint();
	else if (!bga__cpu_hint_inline(&cpu) || !bga__locktab_is_fas(vol->locks))
		return FAST_CALL;
	uint64_t floor = __atomic_load_n(&vol->nblocks_floor, __ATOMIC_ACQUIRE);
	struct bga_percpu *pc = bga__percpu_on(vol, cpu);
	bool steered;
	uint64_t goal = bga__resolve_goal(vol, pc, want, floor, &steered);
	if (goal >= floor)
		return FAST_MISS;
	uint32_t max = (uint32_t)BGA_MIN(max_len, (uint64_t)vol->cfg.blocks_per_group);
	int64_t cap = (int64_t)(floor - vol->cfg.first_data_block);
	struct bga_extent got;
	enum fast_end end = alloc_at_goal(vol, cpu, goal, (uint32_t)min, max, cap, &got, leaf);
	if (end != FAST_HIT)
		return end;
	bga__note_result(vol, pc, want, goal, steered, false, &got);
	*out = got;
	return FAST_HIT;
}

/*
 * The lock-free take from the handle's window (window.h), charged against
 * `cap`; false with nothing changed when it cannot serve (no window, used
 * up, frozen, another volume's handle, a goal among the blocks it handed
 * out: handle.h).  Out of line
 * (BENCHMARKS.md#what-the-fast-paths-call); gcc's noclone keeps the name that
 * scripts/fastpath.py allows bga_alloc to call (clang has no such
 * attribute, and its builds are not checked).
 */
#if defined(__clang__)
#define HANDLE_TAKE_ATTRS __attribute__((noinline))
#else
#define HANDLE_TAKE_ATTRS __attribute__((noinline, noclone))
#endif
static HANDLE_TAKE_ATTRS bool handle_take_fast(struct bga_volume *vol, const struct bga_request *req, uint32_t max,
					       int64_t cap, struct bga_extent *out)
{
	struct bga_rsv *rsv = req->rsv;
	if (rsv->vol != vol || rsv->size == 0 || !rsv->win.linked ||
	    !bga__window_take(vol, &rsv->win, req->goal, max, max, cap, out))
		return false;
	rsv->hits++;
	return true;
}

/*
 * An allocation through a window handle whose window can serve it: one
 * CAS on the window and a counter add, no group lock, no bitmap write
 * (window.h), charged against the floor's capacity as alloc_fast is.
 * False with nothing changed otherwise (no window, used up, frozen by a
 * store, the counter undecided, another volume's handle): the slow path
 * decides.
 */
static inline bool alloc_window_fast(struct bga_volume *vol, const struct bga_request *req, struct bga_extent *out)
{
	uint64_t floor = __atomic_load_n(&vol->nblocks_floor, __ATOMIC_ACQUIRE);
	if (req->goal != BGA_NO_GOAL && req->goal >= floor)
		return false; /* the slow path decides on the geometry (-EINVAL past the end) */
	uint32_t max = (uint32_t)BGA_MIN(req->max_len, (uint64_t)vol->cfg.blocks_per_group);
	return handle_take_fast(vol, req, max, (int64_t)(floor - vol->cfg.first_data_block), out);
}

/*
 * A small goal-less request from the CPU's locality window (window.h): one
 * CAS on the window, whichever thread runs on the CPU, and a counter add.
 * False with nothing changed when the window cannot serve.
 */
static inline bool alloc_local_fast(struct bga_volume *vol, const struct bga_request *req, struct bga_extent *out)
{
	uint64_t floor = __atomic_load_n(&vol->nblocks_floor, __ATOMIC_ACQUIRE);
	return bga__window_take(vol, &bga__percpu(vol)->local.win, BGA_NO_GOAL, (uint32_t)req->max_len,
				(uint32_t)req->max_len,
				(int64_t)(floor - vol->cfg.first_data_block), out);
}

/*
 * Every request but the common one (and the common one when the leaf form
 * could not try it): the header's checks in its order, then the window,
 * locality and plain fast paths, then the slow path.  A goal-less request
 * is kept whole (route.c, route_whole): the fast path takes it only
 * where the home's word holds all of max_len.
 */
static __attribute__((noinline)) int alloc_other(struct bga_volume *vol, const struct bga_request *req,
						  struct bga_extent *out)
{
	if (vol == NULL || req == NULL || out == NULL)
		return -EINVAL;
	if (req->min_len == 0 || req->min_len > req->max_len)
		return -EINVAL;
	if (req->flags & ~(uint32_t)(BGA_EXACT_GOAL | BGA_USE_RESERVED | BGA_WHOLE))
		return -EINVAL;
	if ((req->flags & BGA_EXACT_GOAL) && (req->goal == BGA_NO_GOAL || (req->flags & BGA_WHOLE)))
		return -EINVAL;
	if (bga__align_check(vol, req) || (req->align > 1 && (req->flags & BGA_EXACT_GOAL) && req->goal % req->align))
		return -EINVAL;
	if (req->flags == 0 && req->align <= 1 && req->min_len <= vol->fast_min) {
		if (req->rsv != NULL ? alloc_window_fast(vol, req, out)
		    : bga__req_is_local(req->goal, req->rsv, req->max_len, req->flags)
			? alloc_local_fast(vol, req, out)
			: alloc_fast(vol, req->goal, req->goal == BGA_NO_GOAL ? req->max_len : req->min_len, req->max_len,
				     out, false) == FAST_HIT)
			return 0;
	}
	return bga__alloc_slow(vol, req, out);
}

/*
 * The common request inline, in alloc_fast's leaf form, which calls
 * nothing; a window's append inline too; everything else by a tail call.
 */
int bga_alloc(struct bga_volume *vol, const struct bga_request *req, struct bga_extent *out)
{
	/*
	 * The common request, tested first: a plain one (no flags, no
	 * handle, no unit: bga__req_is_plain) with a goal and 1 <= min_len
	 * <= max_len (one unsigned compare), min_len within a group and
	 * below the stripe (vol->fast_min).  Every check of alloc_other
	 * passes for it and it would take alloc_fast there too, so it skips
	 * them; anything else goes there whole.
	 */
	if (bga_unlikely(vol == NULL || req == NULL || out == NULL))
		goto other;
	if (bga_likely(bga__req_is_plain(req))) {
		uint64_t goal = req->goal, min = req->min_len, max = req->max_len;
		if (bga_unlikely(goal == BGA_NO_GOAL || min - 1 >= max || min > vol->fast_min))
			goto other;
		enum fast_end end = alloc_fast(vol, goal, min, max, out, true);
		if (bga_likely(end == FAST_HIT))
			return 0;
		if (end == FAST_CALL)
			goto other; /* the call form, there */
		goto slow;
	}
	/*
	 * The next most common: an append through a file's window, inline:
	 * bga_alloc saves its registers anyway, and a function of its own
	 * would save them again for its call of handle_take_fast
	 * (BENCHMARKS.md#what-the-fast-paths-call).
	 */
	if (req->flags == 0 && req->rsv != NULL && req->min_len - 1 < req->max_len &&
	    req->min_len <= vol->cfg.blocks_per_group && req->align <= 1) {
		if (alloc_window_fast(vol, req, out))
			return 0;
		goto slow;
	}
other:
	return alloc_other(vol, req, out);
slow:
	return bga__alloc_slow(vol, req, out);
}
