/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Online growth.  The chunk directory and the index summaries were sized
 * for the largest volume at create time, so growing never moves them:
 * it gives the old last group its new blocks, opens the new groups, and
 * publishes a new geometry with RCU (urcu-bp).  Readers that still hold
 * the old geometry see the old size throughout their call: every search
 * is bounded by their geometry's groups and span, and the group they
 * could share with the grow (the old last one) is changed under its lock
 * and given a bitmap first, so no bitmap-less shortcut ever uses a stale
 * span.
 */
#include <errno.h>
#include <stdlib.h>

#include <bgalloc/bitmap.h>

#include "rcu.h"
#include "volume.h"

/* Give the old last group g the blocks [old_hi, new_hi) of its span. */
static int extend_group(struct bga_volume *vol, const struct bga_geom *ngeo, uint64_t g, uint32_t old_hi)
{
	uint32_t lo, hi;
	bga__group_span(vol, ngeo, g, &lo, &hi);
	if (hi == old_hi)
		return 0;
	int rc = 0;
	bga__group_lock(vol, g);
	struct bga_group *grp = &bga__chunk_get(vol, g >> BGA_CHUNK_SHIFT)->groups[g & (BGA_CHUNK_GROUPS - 1)];
	if (grp->bitmap == NULL)
		rc = bga__group_materialise_locked(vol, vol->geom, grp, g);
	if (rc == 0) {
		bga_bitmap_clear_range(grp->bitmap, old_hi, hi - old_hi);
		__atomic_store_n(&grp->free, grp->free + (hi - old_hi), __ATOMIC_RELAXED);
		grp->flags &= ~BGA_GROUP_TRIMMED;
		bga__group_refresh_locked(vol, ngeo, grp, g);
	}
	bga__group_unlock(vol, g);
	return rc;
}

/* Open the groups [g0, g1) of an existing chunk: they were past the end. */
static void open_groups(struct bga_volume *vol, const struct bga_geom *ngeo, uint64_t g0, uint64_t g1)
{
	struct bga_chunk *ch = bga__chunk_get(vol, g0 >> BGA_CHUNK_SHIFT);
	for (uint64_t g = g0; g < g1; g++) {
		uint32_t lo, hi;
		bga__group_span(vol, ngeo, g, &lo, &hi);
		bga__group_lock(vol, g);
		struct bga_group *grp = &ch->groups[g & (BGA_CHUNK_GROUPS - 1)];
		BGA_ASSERT(grp->free == 0 && grp->bitmap == NULL);
		__atomic_store_n(&grp->free, hi - lo, __ATOMIC_RELAXED);
		bga__group_set_run_locked(vol, grp, g, hi - lo);
		bga__group_unlock(vol, g);
	}
}

int bga_grow(struct bga_volume *vol, uint64_t new_nblocks)
{
	if (vol == NULL || new_nblocks > BGA_MAX_BLOCKS)
		return -EINVAL;
	pthread_mutex_lock(&vol->grow_lock);
	struct bga_geom *old = vol->geom;
	int rc = -EINVAL;
	if (new_nblocks < old->nblocks)
		goto out;
	rc = 0;
	if (new_nblocks == old->nblocks)
		goto out;
	rc = -ENOMEM;
	struct bga_geom *ngeo = bga__geom_new(vol, new_nblocks);
	if (ngeo == NULL)
		goto out;
	rc = -EINVAL;
	if (ngeo->nchunks > vol->max_chunks) {
		free(ngeo);
		goto out;
	}
	/* The chunk of the new last group is built now when that group is
	 * short, so that a missing chunk still means full, free groups. */
	rc = -ENOMEM;
	uint64_t last = ngeo->ngroups - 1;
	bool short_last = new_nblocks % vol->cfg.blocks_per_group != 0;
	if (short_last && (last >> BGA_CHUNK_SHIFT) >= old->nchunks) {
		if (bga__chunk_create_locked(vol, ngeo, last >> BGA_CHUNK_SHIFT) == NULL) {
			free(ngeo);
			goto out;
		}
	}
	uint32_t lo, old_hi;
	uint64_t old_last = old->ngroups - 1;
	bga__group_span(vol, old, old_last, &lo, &old_hi);
	rc = extend_group(vol, ngeo, old_last, old_hi);
	if (rc) {
		free(ngeo);
		goto out;
	}
	uint64_t chunk_end = (old->nchunks << BGA_CHUNK_SHIFT);
	open_groups(vol, ngeo, old->ngroups, BGA_MIN(ngeo->ngroups, chunk_end));
	bga__idx_mark_untouched(vol, old->nchunks, ngeo->nchunks);
	if (short_last && (last >> BGA_CHUNK_SHIFT) >= old->nchunks)
		bga__idx_chunk_installed(vol, last >> BGA_CHUNK_SHIFT);
	rcu_assign_pointer(vol->geom, ngeo);
	pthread_mutex_unlock(&vol->grow_lock);
	/* Outside grow_lock: a reader may be waiting for it (to install a
	 * chunk) inside its read-side section. */
	urcu_bp_synchronize_rcu();
	free(old);
	return 0;
out:
	pthread_mutex_unlock(&vol->grow_lock);
	return rc;
}
