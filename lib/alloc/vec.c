/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga_alloc_vec: up to `want` blocks as several extents (Ceph's
 * Allocator::allocate), carved greedily, one bga_alloc-sized piece at a
 * time, each from the end of the piece before, so a run that spans
 * groups comes back piece after piece and is merged in out[].  A group's
 * first piece is one pass of bga_alloc's slow path (bga__alloc_piece, so
 * that the piece can keep alloc.h's order: no locality window, and
 * other windows only for the call's first piece); its further
 * pieces, for a plain request, are taken under one more hold of its lock
 * (more_in_group), so N extents cost less than N calls from about 8 in a
 * group (BENCHMARKS.md#storage-engine-surface).  No group lock is held
 * between groups.
 */
#include <errno.h>

#include "rcu.h"

#include "route.h"
#include "request.h"
#include "group.h"
#include "window.h"
#include "percpu.h"
#include "charge.h"
#include "range.h"

struct carve {
	struct bga_extent *out;
	size_t max_out, n;
	uint64_t got, max_len, min_len;
};

/*
 * Add a piece to out[].  A piece that follows the last extent fills it up
 * to max_len and the rest starts the next extent (the rest kept at
 * min_len or more), so out[] is the stream of blocks found cut at
 * max_len, whatever group boundaries cut the pieces.  The caller keeps a slot free for that rest, or (out[] full)
 * asks only for what fills the last extent.
 */
static void carve_add(struct carve *c, const struct bga_extent *p)
{
	struct bga_extent *last = c->n ? &c->out[c->n - 1] : NULL;
	struct bga_extent rest = *p;
	if (last && last->len < c->max_len && last->start + last->len == p->start) {
		uint64_t take = BGA_MIN(c->max_len - last->len, p->len);
		/* the rest an extent of its own: min_len at least, or nothing */
		if (p->len - take != 0 && p->len - take < c->min_len)
			take = p->len > c->min_len ? p->len - c->min_len : 0;
		last->len += take;
		rest.start += take;
		rest.len -= take;
	}
	if (rest.len) {
		BGA_ASSERT(c->n < c->max_out);
		c->out[c->n++] = rest;
	}
	c->got += p->len;
}

/*
 * The most the next piece may take of `left` blocks still wanted: cap, cut
 * so that what is left after it is 0 or at least min (when left allows
 * both), a multiple of align.
 */
static uint64_t piece_max(uint64_t left, uint64_t cap, uint64_t min, uint64_t align)
{
	uint64_t m = BGA_MIN(cap, left);
	if (left > m && left - m < min && left - min >= min)
		m = BGA_MIN(m, left - min);
	return m & ~(align - 1); /* align: a power of two (bga__align_check) */
}

/*
 * Take a further piece as bga_alloc's fast path takes its run: charged by
 * one lock-free add to the used counter against the floor's capacity
 * (never above the geometry's; alloc.c, alloc_at_goal).  false, nothing
 * taken, where that add cannot decide (near full, a fold due): the next
 * bga_alloc decides then, on the geometry, so no RCU read section is
 * opened under the group lock (its first use in a thread allocates).
 */
static bool take_piece_locked(struct bga_volume *vol, unsigned cpu, int64_t cap, struct bga_group *grp, uint64_t g,
			      uint32_t off, uint32_t len)
{
	if (!bga__charge_fast_locked(vol, cpu, cap, len))
		return false;
	if (bga__group_take_locked(vol, grp, g, off, len) == 0)
		return true;
	bga_counter_add(vol->used, -(int64_t)len);
	return false;
}

/*
 * After a piece in group g ending at offset `from`: the pieces after it
 * in the same group under one hold of its lock, each the first run at or
 * after the end of the one before, as bga_alloc with that goal would take
 * it from its goal's group.  So a call that returns N extents from one
 * group takes its lock about twice, where N bga_alloc calls take it N
 * times.  Stops, with what it took, when the group has no further run,
 * out[] may not hold another extent, or the charge is not the fast
 * path's to decide (take_piece_locked).  A busy lock is not waited for:
 * the next bga_alloc decides.
 */
static void more_in_group(struct bga_volume *vol, struct carve *c, uint64_t g, uint32_t from, uint64_t want,
			  uint64_t piece_cap, uint32_t min, uint32_t align)
{
	struct locktab_slot *slot = bga__group_slot(vol, g);
	if (!bga__group_trylock_at(vol, g, slot))
		return;
	struct bga_group *grp = bga__group_lookup(vol, g); /* it holds the piece */
	uint64_t first = bga__group_first(vol, g);
	unsigned cpu = bga__cpu_hint();
	int64_t cap = (int64_t)(__atomic_load_n(&vol->nblocks_floor, __ATOMIC_ACQUIRE) - vol->cfg.first_data_block);
	while (c->n < c->max_out && want - c->got >= min) {
		uint32_t off, len, max = (uint32_t)piece_max(want - c->got, piece_cap, min, align);
		if (max < min)
			break;
		if (!bga__group_find_unit_locked(vol, grp, g, from, min, max, align, &off, &len) ||
		    !take_piece_locked(vol, cpu, cap, grp, g, off, len))
			break;
		carve_add(c, &(struct bga_extent){first + off, len});
		from = off + len;
	}
	bga__group_unlock_at(vol, g, slot);
}

/* The piece an all-or-nothing call took from its handle's window: where,
 * and the span word its take left. */
struct win_piece {
	uint64_t span;
	uint32_t len;
};

/*
 * A take from the handle's window under its group's lock, charged on the
 * exact count (charge.c), as bga_alloc's slow path takes from a window:
 * for when the lock-free take cannot decide (near full, the counter's
 * fast path cannot; a store holding the window still).  A window that
 * cannot serve stays as it was.
 */
static __attribute__((noinline)) bool window_take_locked(struct bga_volume *vol, const struct bga_request *req,
							 uint32_t max, struct bga_extent *e)
{
	struct bga_rsv *rsv = req->rsv;
	urcu_bp_read_lock();
	struct bga_take take = {
		.geo = bga_rcu_load(vol->geom),
		.min = (uint32_t)req->min_len,
		.max = max,
		.align = 1,
	};
	uint64_t g = __atomic_load_n(&rsv->win.group, __ATOMIC_ACQUIRE);
	bga__group_lock(vol, g); /* the window is linked there: the group exists */
	bool taken = rsv->win.linked && rsv->win.group == g && bga__window_take_locked(vol, &take, &rsv->win, e);
	bga__group_unlock(vol, g);
	urcu_bp_read_unlock();
	return taken;
}

/*
 * All or nothing through a handle: the first piece from the handle's
 * window, as far as it holds one of min_len now (a lock-free take,
 * window.h, charged against the floor's capacity; where that cannot
 * decide, the locked take above); none when it cannot serve.  A reserved
 * request takes none (its charge is the reservation's).
 */
static void window_piece(struct bga_volume *vol, const struct bga_request *req, uint64_t want, uint64_t piece_cap,
			 struct win_piece *wp, struct carve *c)
{
	struct bga_rsv *rsv = req->rsv;
	struct bga_extent e;
	uint64_t floor = __atomic_load_n(&vol->nblocks_floor, __ATOMIC_ACQUIRE);
	uint32_t max = (uint32_t)piece_max(want, piece_cap, req->min_len, 1);
	if ((req->flags & BGA_USE_RESERVED) || req->align > 1 || rsv->vol != vol || rsv->size == 0 ||
	    !rsv->win.linked || max < req->min_len)
		return;
	if (!bga__window_take(vol, &rsv->win, BGA_NO_GOAL, (uint32_t)req->min_len, max, (int64_t)(floor - vol->cfg.first_data_block),
			      &e) &&
	    !window_take_locked(vol, req, max, &e))
		return;
	carve_add(c, &e);
	/* the span the take left, unless a thief moved it already */
	uint64_t s = __atomic_load_n(&rsv->win.span, __ATOMIC_ACQUIRE);
	if (bga__wspan_cur(s) == e.start + e.len - bga__group_first(vol, rsv->win.group)) {
		wp->span = s;
		wp->len = (uint32_t)e.len;
	}
}

/*
 * A failed all-or-nothing call gives its window piece back to the window
 * (issue 34: a failure changes nothing), by putting cur back where the
 * take found it, when nothing moved the window since (no cut, no
 * booking: the span word is the one the take left); the blocks stay
 * marked used, as a remainder's are (the caller uncharges them).
 * out[0], which begins with the piece, then holds only what follows it.
 * Returns the blocks given back (0 when the window moved: the piece is
 * freed with the rest).
 */
static uint64_t window_give_back(const struct bga_request *req, const struct win_piece *wp, struct bga_extent *out)
{
	if (wp->len == 0)
		return 0;
	uint64_t s = wp->span;
	if (!__atomic_compare_exchange_n(&req->rsv->win.span, &s, s - wp->len, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return 0;
	out[0].start += wp->len;
	out[0].len -= wp->len;
	return wp->len;
}

int bga_alloc_vec(struct bga_volume *vol, const struct bga_request *req, uint64_t want, struct bga_extent *out,
		  size_t max_out, size_t *n_out)
{
	if (n_out)
		*n_out = 0;
	if (vol == NULL || req == NULL || out == NULL || n_out == NULL || max_out == 0 || want == 0)
		return -EINVAL;
	if (req->min_len == 0 || req->min_len > req->max_len ||
	    (req->flags & ~(uint32_t)(BGA_USE_RESERVED | BGA_ALL_OR_NOTHING | BGA_WHOLE)) ||
	    bga__align_check(vol, req))
		return -EINVAL;
	uint64_t align = req->align > 1 ? req->align : 1;
	if (want & (align - 1))
		return -EINVAL;
	if (req->goal != BGA_NO_GOAL && req->goal >= __atomic_load_n(&vol->nblocks_floor, __ATOMIC_ACQUIRE)) {
		/* past the end: -EINVAL as bga_alloc says, before the count
		 * rules below could answer -ENOSPC or -EAGAIN (below the
		 * floor a goal is inside: no read section for it) */
		urcu_bp_read_lock();
		bool past = req->goal >= bga_rcu_load(vol->geom)->nblocks;
		urcu_bp_read_unlock();
		if (past)
			return -EINVAL;
	}
	bool all = req->flags & BGA_ALL_OR_NOTHING;
	if (req->flags & BGA_USE_RESERVED) {
		uint64_t r = bga_reserved(vol) & ~(align - 1);
		if (r < req->min_len)
			return -EINVAL;
		if (r < want && all)
			return -ENOSPC; /* more than is reserved: never all of it */
		want = BGA_MIN(want, r);
	}
	/* No piece can hold a min_len past a group, now or after any commit:
	 * -ENOSPC, as bga_alloc answers it (its pieces' max_len is capped at
	 * the group, which bga_alloc would refuse as below min_len). */
	if (req->min_len > vol->cfg.blocks_per_group)
		return -ENOSPC;
	/* No count decides all or nothing up front: a lazy load's unread
	 * chunks are free but not counted until read (issue 34), and a
	 * count says nothing of runs.  The fit decides (vec_fit.c): looked
	 * for first, so that a request that cannot succeed changes nothing
	 * (a carve's undo would leave the bitmaps its pieces gave groups),
	 * then carved, and taken as found when the carve falls short. */
	if (all) {
		int fits = bga__vec_fits_now(vol, req, want, max_out);
		if (fits == -ENOSPC) {
			/* A lazy load's unread chunks count as used until
			 * read: read them and decide again, so that the
			 * carve from the goal, not the fit, places a
			 * request that fits in them. */
			int settled = bga__unverified_settle(vol);
			if (settled < 0)
				return settled;
			if (settled)
				fits = bga__vec_fits_now(vol, req, want, max_out);
		}
		if (fits != 0)
			return fits == -ENOSPC ? bga__vec_fit(vol, req, want, out, max_out, n_out, true) : fits;
	}

	struct carve c = {.out = out, .max_out = max_out, .max_len = req->max_len, .min_len = req->min_len};
	uint32_t bpg = vol->cfg.blocks_per_group;
	uint64_t piece_cap = BGA_MIN(req->max_len, (uint64_t)bpg) & ~(align - 1);
	struct bga_request p = *req;
	/* BGA_WHOLE is the rule of the last piece already (below); the
	 * pieces before it are carved greedily, as the header says. */
	p.flags &= ~(uint32_t)(BGA_ALL_OR_NOTHING | BGA_EXACT_GOAL | BGA_WHOLE);
	int rc = 0;
	/*
	 * Pieces after the first of each group come from that group under
	 * one lock hold (more_in_group), for a plain request: a window's
	 * handle serves its pieces from the window (bga_alloc), a stripe
	 * has its aligned pass first over the whole volume, and a reserved
	 * request's charge is bga_alloc's to make.
	 */
	struct win_piece wp = {0};
	if (all && req->rsv != NULL) {
		/* All or nothing takes from the handle's window only what it
		 * holds now, and books none, so a failure can give the piece
		 * back to the window (window_give_back); the carve goes on
		 * after the piece. */
		window_piece(vol, req, want, piece_cap, &wp, &c);
		p.rsv = NULL;
		uint64_t next = c.n ? out[0].start + out[0].len : BGA_NO_GOAL;
		if (next < __atomic_load_n(&vol->nblocks_floor, __ATOMIC_ACQUIRE))
			p.goal = next;
	}
	if (all && p.goal == BGA_NO_GOAL)
		/* the CPU's home, where a goal-less walk starts (no piece
		 * takes from the CPU's locality window: BGA_PIECE_VEC) */
		p.goal = bga__home(bga__percpu(vol), __atomic_load_n(&vol->nblocks_floor, __ATOMIC_ACQUIRE));
	uint32_t stripe = vol->cfg.stripe;
	bool more = p.rsv == NULL && !(req->flags & BGA_USE_RESERVED) &&
		    !(stripe > 1 && align == 1 && req->min_len % stripe == 0 && piece_cap % stripe == 0);
	while (c.got < want && want - c.got >= req->min_len) {
		p.max_len = piece_max(want - c.got, piece_cap, req->min_len, align);
		if (c.n == max_out) {
			/* out[] is full: only a piece that continues the last
			 * extent can still be added. */
			struct bga_extent *last = &out[c.n - 1];
			if (last->len >= req->max_len)
				break;
			p.goal = last->start + last->len;
			p.max_len = BGA_MIN(p.max_len, req->max_len - last->len) & ~(align - 1);
			if (p.max_len < req->min_len)
				break;
			p.flags |= BGA_EXACT_GOAL;
		}
		struct bga_extent e;
		/* One extent where one run holds the rest: once what is
		 * still wanted fits one piece, a piece without a handle is
		 * the slow path's, a run that holds all of it first
		 * (bga__alloc_piece).  More than a piece goes on greedily from
		 * the goal: its run may go on into the next group, where it
		 * is merged.  A handle's pieces come from its window. */
		/* Other windows are taken back only before the call would
		 * fail: for its first piece (bga_alloc's rule), never for all
		 * or nothing's carve, whose fit decides (vec_fit.c).  No
		 * piece takes from the CPU's locality window, which is
		 * bga_alloc's alone (alloc.h, where a request looks): it
		 * would split a request that one run holds. */
		unsigned how = (p.rsv == NULL && want - c.got <= piece_cap ? BGA_PIECE_WHOLE : 0) |
			       (all || c.n ? BGA_PIECE_KEEP_WINDOWS : 0);
		rc = bga__alloc_piece(vol, &p, &e, how | BGA_PIECE_VEC);
		if (rc != 0)
			break;
		carve_add(&c, &e);
		/* A piece that ends its group leaves nothing after it there:
		 * no lock taken to find that out. */
		if (more && c.got < want) {
			uint64_t g = bga__group_of(vol, e.start), from = e.start + e.len - bga__group_first(vol, g);
			if (from < bpg) {
				more_in_group(vol, &c, g, (uint32_t)from, want, piece_cap, (uint32_t)req->min_len,
					      (uint32_t)align);
				e = c.out[c.n - 1];
			}
		}
		/* Past the end the search wraps round, and the next piece
		 * starts a new extent anyway (the floor: no RCU read per
		 * piece; during a grow a piece may wrap early). */
		uint64_t next = e.start + e.len;
		p.goal = next < __atomic_load_n(&vol->nblocks_floor, __ATOMIC_ACQUIRE) ? next : 0;
	}
	if (c.n == 0 && !all)
		return rc != 0 ? rc : -ENOSPC;
	if (all && c.got < want) {
		/* The pieces back in one free, and a reserved request's
		 * blocks back to the reservation: freed while still counted
		 * used, then promised again, so nothing else takes them
		 * between (nothing changed, the promise included). */
		uint64_t total = window_give_back(req, &wp, out);
		struct bga_extent *rest = out;
		size_t nrest = c.n;
		if (nrest && rest[0].len == 0) {
			rest++;
			nrest--;
		}
		bga__free_pieces_charged(vol, rest, nrest); /* allocates nothing: cannot fail */
		for (size_t i = 0; i < nrest; i++)
			total += rest[i].len;
		BGA_ASSERT(total == c.got);
		if (req->flags & BGA_USE_RESERVED)
			__atomic_fetch_add(&vol->reserved, total, __ATOMIC_RELAXED);
		else
			bga_counter_add(vol->used, -(int64_t)total);
		/* The greedy carve missed: the fit decides, on the free
		 * space itself (vec_fit.c), and takes what fits. */
		return rc == -ENOMEM ? rc : bga__vec_fit(vol, req, want, out, max_out, n_out, false);
	}
	if (wp.len)
		req->rsv->hits++; /* served (in part) by its window */
	*n_out = c.n;
	return 0;
}
