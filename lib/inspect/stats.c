/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bga_stats: histograms, fragmentation, contention, windows, deferred frees. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "rcu.h"

#include <bgalloc/bitmap.h>
#include <bgalloc/locktab.h>

#include "persist.h"
#include "group.h"
#include "hooks.h"
#include "charge.h"
#include "deferred.h"
#include "walk.h"
#include "window.h"
#include "percpu.h"

struct hist {
	struct bga_stats *st;
	double actual;
};

static int hist_fn(void *arg, uint32_t off, uint32_t len)
{
	struct hist *h = arg;
	(void)off;
	unsigned k = 63u - (unsigned)__builtin_clzll(len);
	h->st->hist_count[k]++;
	h->st->hist_blocks[k] += len;
	h->st->free_extents++;
	h->actual += (double)len * log2((double)len);
	return 0;
}

int bga_stats(struct bga_volume *vol, struct bga_stats *st)
{
	if (vol == NULL || st == NULL)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	uint32_t bpg = vol->cfg.blocks_per_group;
	uint64_t *map = malloc(BGA_BITMAP_WORDS(bpg) * sizeof(uint64_t));
	if (map == NULL)
		return -ENOMEM;
	if (bga__chunks_settle(vol) != 0) { /* a missing chunk must mean wholly free */
		free(map);
		return -ENOMEM;
	}
	urcu_bp_read_lock();
	const struct bga_geom *geo = bga_rcu_load(vol->geom);
	struct hist h = {st, 0};
	st->nblocks = geo->nblocks;
	st->groups = geo->ngroups;
	for (uint64_t c = 0; c < geo->nchunks; c++) {
		uint64_t g0 = c << BGA_CHUNK_SHIFT, g1 = BGA_MIN(g0 + BGA_CHUNK_GROUPS, geo->ngroups);
		const struct bga_chunk *ch = bga__chunk_get(vol, c);
		if (ch == NULL) {
			/* untouched: every group one whole free run */
			unsigned k = 31u - (unsigned)__builtin_clz(bpg);
			st->hist_count[k] += g1 - g0;
			st->hist_blocks[k] += (g1 - g0) * bpg;
			st->free_extents += g1 - g0;
			h.actual += (double)(g1 - g0) * bpg * log2((double)bpg);
			continue;
		}
		for (uint64_t g = g0; g < g1; g++) {
			bool initialised;
			uint32_t held;
			uint32_t hi = bga__walk_copy(vol, g, map, &initialised, &held);
			st->groups_initialised += initialised;
			st->rsv_window_blocks += held;
			bga__walk_each_run(map, 0, hi, 1, hist_fn, &h);
		}
	}
	urcu_bp_read_unlock();
	free(map);
	for (unsigned k = 0; k < BGA_HIST_ORDERS; k++)
		st->free_blocks += st->hist_blocks[k];
	st->reserved_blocks = bga_reserved(vol);
	/* Ideal: the same free blocks packed into whole groups. */
	double F = (double)st->free_blocks, G = (double)bpg;
	double full = floor(F / G), rest = F - full * G;
	double ideal = full * G * log2(G) + (rest > 1 ? rest * log2(rest) : 0);
	st->frag_score = ideal > 0 ? (ideal - h.actual) / ideal : 0;
	if (st->frag_score < 0)
		st->frag_score = 0;

	uint32_t n = bga_locktab_nslots(vol->locks);
	st->lock_slots = n;
	for (uint32_t s = 0; s < n; s++) {
		struct bga_lock_stats ls;
		bga_locktab_stats(vol->locks, s, &ls);
		st->lock_acquisitions += ls.acquisitions;
		st->lock_contended += ls.contended;
		st->lock_wait_ns += ls.wait_ns;
		if (ls.contended > st->busiest_slot_contended || s == 0) {
			st->busiest_slot = s;
			st->busiest_slot_contended = ls.contended;
		}
	}
	for (unsigned i = 0; i < vol->ncpu; i++) {
		st->rsv_hits += __atomic_load_n(&vol->cpu[i].rsv.hits, __ATOMIC_RELAXED);
		st->rsv_allocs += __atomic_load_n(&vol->cpu[i].rsv.allocs, __ATOMIC_RELAXED);
	}
	st->rsv_hit_ratio = st->rsv_allocs ? (double)st->rsv_hits / (double)st->rsv_allocs : 0;
	uint64_t opened = 0, closed = 0;
	for (unsigned i = 0; i < vol->ncpu; i++) {
		opened += __atomic_load_n(&vol->cpu[i].rsv.opened, __ATOMIC_RELAXED);
		closed += __atomic_load_n(&vol->cpu[i].rsv.closed, __ATOMIC_RELAXED);
	}
	st->rsv_windows_open = opened - closed;
	st->deferred_blocks = bga__dfree_pending(vol, &st->deferred_extents);
	st->last_committed_txn = __atomic_load_n(&vol->last_committed, __ATOMIC_RELAXED);
	bga__persist_stats(vol, &st->groups_quarantined, &st->groups_repaired);
	return 0;
}

/* ---- one group; the longest free run ---- */

int bga_group_stats(struct bga_volume *vol, uint64_t group, struct bga_group_stats *st)
{
	if (vol == NULL || st == NULL || st->size < offsetof(struct bga_group_stats, lock_wait_ns) + 8)
		return -EINVAL;
	uint32_t bpg = vol->cfg.blocks_per_group;
	uint64_t c = group >> BGA_CHUNK_SHIFT;
	/* The bound first, then a lazy load's unread chunk: a group past the
	 * end must not make one. */
	urcu_bp_read_lock();
	bool inside = group < bga_rcu_load(vol->geom)->ngroups;
	urcu_bp_read_unlock();
	if (!inside)
		return -EINVAL;
	if (bga__chunk_pending(vol, c) && bga__chunk_ensure(vol, c) == NULL)
		return -ENOMEM;
	uint64_t *map = malloc(BGA_BITMAP_WORDS(bpg) * sizeof(uint64_t));
	if (map == NULL)
		return -ENOMEM;
	struct bga__group_view v;
	/* (a grow only adds groups: `group` stays inside) */
	uint32_t hi = bga__walk_view(vol, group, map, NULL, &v);
	struct bga_group_stats r = {
		.flags = (v.initialised ? BGA_GSTAT_INITIALISED : 0) | (v.quarantined ? BGA_GSTAT_QUARANTINED : 0) |
			 (v.trimmed ? BGA_GSTAT_TRIMMED : 0),
		.group = group,
		.first_block = bga__group_first(vol, group),
		.span_blocks = hi - v.lo,
		.free_blocks = hi - bga_bitmap_popcount(map, 0, hi),
		.longest_run = bga_bitmap_longest_zero_run(map, hi),
		.longest_run_hint = v.max_run,
		.window_blocks = v.held,
		.windows = v.windows,
		.deferred_blocks = v.deferred,
		.lock_slot = bga_locktab_slot(vol->locks, group),
	};
	free(map);
	struct bga_lock_stats ls;
	if (bga_locktab_stats(vol->locks, r.lock_slot, &ls) == 0) {
		r.lock_acquisitions = ls.acquisitions;
		r.lock_contended = ls.contended;
		r.lock_wait_ns = ls.wait_ns;
	}
	uint32_t n = (uint32_t)BGA_MIN((size_t)st->size, sizeof(r));
	r.size = n;
	memcpy(st, &r, n);
	return 0;
}

struct longest {
	uint64_t len, group;
	uint64_t *map;
};

static void measure(struct bga_volume *vol, uint64_t g, struct longest *l)
{
	bool initialised;
	uint32_t held;
	uint32_t hi = bga__walk_copy(vol, g, l->map, &initialised, &held);
	uint64_t run = bga_bitmap_longest_zero_run(l->map, hi);
	if (run > l->len || (run == l->len && run && g < l->group)) {
		l->len = run;
		l->group = g;
	}
}

/*
 * Groups holding windows first: their remainders are free but not in the
 * index's max_run.  Then the index's orders from the highest down: after
 * measuring every group of order k, a group not measured has max_run <
 * 2^k, and max_run bounds its longest run, so once the best is 2^k or
 * more nothing unmeasured can beat it (or tie it from a lower group but
 * with a shorter run).  Ties go to the lowest group: within an order the
 * search runs in group order, and a group measured again changes nothing.
 */
int bga_longest_free_sum(struct bga_volume *vol, uint64_t *len, uint64_t *group)
{
	if (vol == NULL || len == NULL)
		return -EINVAL;
	struct longest l = {0, UINT64_MAX, malloc(BGA_BITMAP_WORDS(vol->cfg.blocks_per_group) * sizeof(uint64_t))};
	if (l.map == NULL)
		return -ENOMEM;
	if (bga__chunks_settle(vol) != 0) { /* the index must speak for every group */
		free(l.map);
		return -ENOMEM;
	}
	urcu_bp_read_lock();
	uint64_t n = bga_rcu_load(vol->geom)->ngroups;
	for (uint64_t g = 0; (g = bga__window_next_group(vol, g, n)) < n; g++)
		measure(vol, g, &l);
	/* A whole group's run, found in group order, ends it: nothing is
	 * longer and every lower group of the order was measured (a volume
	 * of untouched chunks is not walked group by group). */
	bool whole = false;
	for (int k = (int)vol->max_order; k >= 0 && !whole; k--) {
		uint64_t need = UINT64_C(1) << k;
		for (uint64_t g = 0; !whole && (g = bga__idx_next(vol, g, n, need)) < n; g++) {
			measure(vol, g, &l);
			whole = l.len == vol->cfg.blocks_per_group && l.group <= g;
		}
		if (l.len >= need)
			break;
	}
	urcu_bp_read_unlock();
	free(l.map);
	*len = l.len;
	if (group)
		*group = l.len ? l.group : UINT64_MAX;
	return 0;
}

uint64_t bga_longest_free_read(const struct bga_volume *vol)
{
	if (vol == NULL)
		return 0;
	uint64_t bpg = vol->cfg.blocks_per_group;
	/* Unread chunks of a lazy load: the index does not speak for them
	 * yet, and no group's run is longer than a group. */
	if (__atomic_load_n(&vol->unverified, __ATOMIC_ACQUIRE) != 0)
		return bpg;
	urcu_bp_read_lock();
	uint64_t n = bga_rcu_load(vol->geom)->ngroups, bound = 0;
	for (int k = (int)vol->max_order; k >= 0 && bound == 0; k--)
		if (bga__idx_next(vol, 0, n, UINT64_C(1) << k) < n)
			bound = BGA_MIN((UINT64_C(2) << k) - 1, bpg);
	urcu_bp_read_unlock();
	return bound;
}
