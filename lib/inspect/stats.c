/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bga_stats: histograms, fragmentation, contention, windows, deferred frees. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rcu.h"

#include <bgalloc/bitmap.h>
#include <bgalloc/locktab.h>

#include "persist.h"
#include "internal.h"

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
