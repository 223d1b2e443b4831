/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Online growth.  The chunk directory and the index summaries grow by
 * segments that never move (chunkdir.c), made before anything else
 * changes; then growing gives the old last group its new blocks, opens
 * the new groups, and publishes a new geometry with RCU (urcu-bp).  Readers that still hold
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
#include "group.h"
#include "hooks.h"
#include "geom.h"
#include "charge.h"

/*
 * Give the old last group g the blocks up to its span end in ngeo.  A
 * group without a bitmap gets `spare` (then owned by the group); the
 * caller frees it otherwise.
 */
static void extend_group(struct bga_volume *vol, const struct bga_geom *ngeo, uint64_t g, uint64_t *spare)
{
	uint32_t lo, hi;
	bga__group_span(vol, ngeo, g, &lo, &hi);
	struct bga_chunk *ch = bga__chunk_get(vol, g >> BGA_CHUNK_SHIFT);
	if (ch == NULL) {
		free(spare); /* untouched, so full-size already */
		return;
	}
	bga__group_lock(vol, g);
	struct bga_group *grp = &ch->groups[g & (BGA_CHUNK_GROUPS - 1)];
	uint32_t old_hi = grp->hi;
	if (hi != old_hi) {
		if (grp->bitmap == NULL) {
			bga__group_fill_bitmap_locked(vol, grp, g, spare);
			spare = NULL;
		}
		bga_bitmap_clear_range(grp->bitmap, old_hi, hi - old_hi);
		grp->hi = hi;
		__atomic_store_n(&grp->free, grp->free + (hi - old_hi), __ATOMIC_RELAXED);
		grp->flags |= BGA_GROUP_DIRTY;
		grp->flags &= ~(uint32_t)(BGA_GROUP_TRIMMED | BGA_GROUP_NO_ROOM);
		bga__group_refresh_locked(vol, grp, g);
	}
	bga__group_unlock(vol, g);
	free(spare);
}

/* Open the groups [g0, g1) of chunk c: they were past the end, and are
 * closed (empty span) in a chunk built for the old geometry. */
static void open_groups(struct bga_volume *vol, const struct bga_geom *ngeo, struct bga_chunk *ch, uint64_t g0,
			uint64_t g1)
{
	for (uint64_t g = g0; g < g1; g++) {
		uint32_t lo, hi;
		bga__group_span(vol, ngeo, g, &lo, &hi);
		bga__group_lock(vol, g);
		struct bga_group *grp = &ch->groups[g & (BGA_CHUNK_GROUPS - 1)];
		BGA_ASSERT(grp->free == 0 && grp->bitmap == NULL && grp->hi == 0);
		grp->hi = hi;
		__atomic_store_n(&grp->free, hi - lo, __ATOMIC_RELAXED);
		grp->flags |= BGA_GROUP_DIRTY;
		bga__group_set_run_locked(vol, grp, g, hi - lo);
		bga__group_unlock(vol, g);
	}
}

/*
 * Free a geometry once no reader can hold it, a batch at a time: the
 * replaced geometries wait on vol->retired, and every
 * BGA_GEOM_RETIRE_BATCH-th grow waits one grace period for all of them
 * (bga_destroy frees what is left, with no reader by its contract).  A
 * grace period lasts until every thread in a read-side section has left
 * it, and a reader that was preempted inside one holds it for a
 * scheduler tick or more: urcu-bp then sleeps in 10 ms steps.  Waiting
 * once per grow made every grow among busy allocating threads cost
 * milliseconds (fuzz_mt's grows: docs/HISTORY.md#small-volume-changes);
 * once per
 * batch, the wait is shared, and at most a batch of 32-byte geometries
 * is kept.  Under ThreadSanitizer everything is kept until bga_destroy:
 * TSan cannot see liburcu's grace periods (they order through
 * membarrier), so it would report the free against readers that finished
 * long before.
 */
void bga__geom_retire(struct bga_volume *vol, struct bga_geom *old)
{
	struct bga_geom *batch = NULL;

	bga__grow_lock(vol);
	old->retired = vol->retired;
	vol->retired = old;
#ifndef BGA_TSAN_BUILD
	if (++vol->nretired >= BGA_GEOM_RETIRE_BATCH) {
		batch = vol->retired;
		vol->retired = NULL;
		vol->nretired = 0;
	}
#endif
	bga__grow_unlock(vol);
	if (batch == NULL)
		return;
	/* Outside grow_lock: a reader may be waiting for it (to install a
	 * chunk) inside its read-side section. */
	urcu_bp_synchronize_rcu();
	while (batch) {
		struct bga_geom *next = batch->retired;
		free(batch);
		batch = next;
	}
}

int bga_grow(struct bga_volume *vol, uint64_t new_nblocks)
{
	if (vol == NULL || new_nblocks > BGA_MAX_BLOCKS)
		return -EINVAL;
	if (bga__chunks_settle(vol) != 0) /* extend_group reads a missing chunk as free */
		return -ENOMEM;
	bga__grow_lock(vol);
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
	if (ngeo->ngroups > BGA_MAX_GROUPS) {
		free(ngeo);
		goto out;
	}
	/*
	 * Everything that can fail comes first, before any group changes:
	 *  - the directory's segments for the new chunks (their words zero:
	 *    no chunk, no summary bit, until marked below);
	 *  - the chunk of a short new last group past the old chunks is built
	 *    now, so that a missing chunk still means full, free groups;
	 *  - new groups in the old last chunk need that chunk; a missing one
	 *    is built for the old geometry (groups past the old end closed),
	 *    so opening them is the same whether or not it was touched.
	 * Readers of the old geometry never look past its groups, so these
	 * chunks stay invisible to them.
	 */
	rc = -ENOMEM;
	uint64_t last = ngeo->ngroups - 1, chunk_end = old->nchunks << BGA_CHUNK_SHIFT;
	bool new_last_chunk = new_nblocks % vol->cfg.blocks_per_group && (last >> BGA_CHUNK_SHIFT) >= old->nchunks;
	uint64_t open_end = BGA_MIN(ngeo->ngroups, chunk_end);
	struct bga_chunk *ch = NULL;
	uint64_t *bitmap = malloc(BGA_BITMAP_WORDS(vol->cfg.blocks_per_group) * sizeof(uint64_t));
	if (!bitmap || bga__dir_reserve(vol, ngeo->nchunks) || (new_last_chunk && !bga__chunk_create_under_grow_lock(vol, ngeo, last >> BGA_CHUNK_SHIFT)) ||
	    (old->ngroups < open_end && !(ch = bga__chunk_create_under_grow_lock(vol, old, old->nchunks - 1)))) {
		free(bitmap);
		free(ngeo);
		goto out;
	}
	bga__idx_mark_untouched(vol, old->nchunks, ngeo->nchunks);
	if (new_last_chunk)
		bga__idx_chunk_installed(vol, last >> BGA_CHUNK_SHIFT);
	/* The old last chunk's maps reach its new groups before any reader
	 * can see them (chunk.h, nwords). */
	if (ch)
		__atomic_store_n(&ch->nwords, bga__chunk_words_for(ngeo, old->nchunks - 1), __ATOMIC_SEQ_CST);
	/* Publish, then open: until a group is opened under its lock its old
	 * span holds (blocks past it are neither free nor freeable), so no
	 * block is handed out before the geometry that contains it is
	 * visible.  Opening cannot fail: the one allocation it needs (a
	 * bitmap for the old last group) is made above. */
	bga_rcu_publish(vol->geom, ngeo);
	extend_group(vol, ngeo, old->ngroups - 1, bitmap);
	if (ch)
		open_groups(vol, ngeo, ch, old->ngroups, open_end);
	__atomic_store_n(&vol->nblocks_floor, new_nblocks, __ATOMIC_RELEASE);
	bga__grow_unlock(vol);
	bga__geom_retire(vol, old); /* takes grow_lock again */
	return 0;
out:
	bga__grow_unlock(vol);
	return rc;
}
