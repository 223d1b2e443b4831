/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_CHARGE_H
#define BGA_CHARGE_H

/*
 * Charging (charge.c): the narrow request it charges for, the one
 * place blocks are taken for an allocation (so that the route, the
 * windows and the walks take blocks through one function), and the
 * count's exact answers.
 */

#include "types.h"
#include "group.h"
#include "hooks.h"

/*
 * What an allocation asks the core to take (the narrow request): the
 * geometry, how much, at what unit, from which promise, and the status.
 * The core reads this and nothing of the route's policy; the route's
 * context (struct bga_actx, alloc/actx.h) holds it first, as `take`.
 * Blocks are charged where they are taken, under the group lock, for
 * what was found (bga__take_locked); nothing is charged before a run is
 * found.
 */
struct bga_take {
	const struct bga_geom *geo; /* the call's geometry (RCU) */
	uint32_t min, max;          /* min_len, and max_len capped at blocks_per_group
				     * (rounded down to a multiple of align) */
	uint32_t align;             /* 1, or the allocation unit: every extent starts at a
				     * multiple of it and is one long (req->align, or
				     * cfg.stripe for its first pass); min and max are
				     * multiples of it */
	bool reserved;              /* BGA_USE_RESERVED: draw on vol->reserved */
	uint32_t room;              /* a window booking's first pass: runs of at least
				     * this many, bar a file's continuation (search.c) */
	int stop;                   /* the status: set when the count, not the search,
				     * ruled the request out: -ENOSPC, or -EINVAL when
				     * fewer than min are reserved; every search stops */
};

/*
 * Charge *len blocks (cut down to no fewer than ac->min) for a run about to
 * be taken: to the used counter against the capacity, or out of
 * vol->reserved.  The caller holds the run's group lock.  0, or ac->stop
 * set and returned.
 */
int bga__charge_locked(struct bga_volume *vol, struct bga_take *ac, uint32_t *len);
/* Give back a charge whose blocks were not taken. */
void bga__uncharge(struct bga_volume *vol, const struct bga_take *ac, uint32_t len);
/*
 * The one place blocks are taken from a group for an allocation (the
 * search, exact goals, windows, trim): charge, then mark
 * [off, off + *len) used.  *len may come back shorter (no shorter than
 * ac->min).  0; ac->stop's code; -ENOMEM with nothing charged or taken.
 */
int bga__take_locked(struct bga_volume *vol, struct bga_take *ac, struct bga_group *grp, uint64_t g, uint32_t off,
		     uint32_t *len);
/* The inline first step of bga__charge_locked, for the fast path: charge
 * len to the used counter against cap through the counter's lock-free
 * path; false when that path cannot decide (nothing charged).  cpu: the
 * caller's bga__cpu_hint(). */
static inline bool bga__charge_fast_locked(struct bga_volume *vol, unsigned cpu, int64_t cap, uint32_t len)
{
	return bga__counter_add_limited_fast_on(vol->used, cpu, len, cap);
}
/*
 * Blocks that nobody owns and nobody was promised, exactly: the capacity
 * minus the summed used count (allocations, blocks pending a deferred
 * free, reservations); never negative, as every charge is limited by the
 * capacity.
 */
static inline int64_t bga__unpromised(struct bga_volume *vol, const struct bga_geom *geo)
{
	return (int64_t)geo->capacity - bga_counter_sum(vol->used);
}
/*
 * After the count ruled something out: read a lazily loaded volume's
 * unread chunks (bga__chunks_settle), whose free blocks the count does
 * not promise until then (types.h, vol->unverified).  1 when they were
 * read (the caller decides again), 0 when there were none, -ENOMEM.  No
 * group lock may be held (chunk installs take grow_lock).
 */
static inline int bga__unverified_settle(struct bga_volume *vol)
{
	if (bga_likely(__atomic_load_n(&vol->unverified, __ATOMIC_ACQUIRE) == 0))
		return 0;
	int rc = bga__chunks_settle(vol);
	return rc ? rc : 1;
}

#endif
