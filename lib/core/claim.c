/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga_claim: an exact range marked allocated, across groups, all or
 * nothing (Ceph's init_rm_free / claim_range, ext4's ext4_mb_mark_bb).
 * The opposite of a free that spans groups, under the same locks
 * (bga__range_lock): every group of the range is checked, prepared and
 * charged before any is changed.
 */
#include <errno.h>
#include <stdlib.h>

#include "rcu.h"

#include <bgalloc/bitmap.h>

#include "group.h"
#include "range.h"
#include "claim.h"
#include "window.h"

/*
 * Can [off, off+n) of group g be claimed?  Window remainders in it are
 * given back first, as BGA_EXACT_GOAL takes them: they are nobody's, and
 * only a cut stops their owners' lock-free takes, so that the bitmap,
 * read next, says the last word (a remainder counted but not cut could
 * be taken by its owner before the commit).  Then every block must be
 * free; a pending deferred block is marked used, so it fails here.
 * *needs_map: the part changes a bitmap-less group only in part, so the
 * commit must give it a bitmap.
 */
static int claim_check_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t off, uint32_t n,
			      bool *needs_map)
{
	*needs_map = false;
	if (grp->flags & BGA_GROUP_QUARANTINED)
		return -EUCLEAN;
	uint32_t lo, hi;
	bga__grp_span(vol, grp, g, &lo, &hi);
	if (off < lo || off + n > hi)
		return -EINVAL; /* a grow has not opened it in this group yet */
	if (grp->bitmap == NULL) {
		if (grp->free == 0)
			return -EBUSY;
		/* wholly free: a whole group stays bitmap-less (group.c) */
		*needs_map = !(off == lo && n == hi - lo);
		return 0;
	}
	if (grp->ext && grp->ext->windows)
		bga__window_cut_out_locked(vol, grp, g, off, n);
	return bga_bitmap_range_is_clear(grp->bitmap, off, n) ? 0 : -EBUSY;
}

/* The part of ext inside group g, as offsets. */
static void part_of(const struct bga_volume *vol, const struct bga_extent *ext, uint64_t g, uint32_t *off,
		    uint32_t *n)
{
	uint64_t first = bga__group_first(vol, g);
	uint64_t s = BGA_MAX(ext->start, first), e = BGA_MIN(ext->start + ext->len, first + vol->cfg.blocks_per_group);
	*off = (uint32_t)(s - first);
	*n = (uint32_t)(e - s);
}

/*
 * Claim ext[0..n) (sorted, disjoint) with every group lock of them held:
 * every part checked, the bitmaps the commit needs allocated, the whole
 * charged, and only then every part taken, so that a failure changes
 * nothing but the windows' remainders in the range (bgalloc.h): no group
 * gets a bitmap for a claim that fails.  The charge: to the used counter
 * against the capacity (blocks promised to bga_reserve() are never
 * claimed; a leaf lock, the counter's, under group locks, as every
 * allocation charges), or, for a reserved allocation, out of
 * vol->reserved.
 */
static int claim_locked(struct bga_volume *vol, const struct bga_geom *geo, const struct bga_extent *ext, size_t n,
			bool reserved)
{
	int rc = 0;
	uint64_t total = 0, maps = 0;
	uint32_t off, cnt;
	bool needs;
	for (size_t i = 0; i < n && rc == 0; i++) {
		total += ext[i].len;
		for (uint64_t g = bga__group_of(vol, ext[i].start);
		     g <= bga__group_of(vol, ext[i].start + ext[i].len - 1) && rc == 0; g++) {
			part_of(vol, &ext[i], g, &off, &cnt);
			rc = claim_check_locked(vol, bga__group_lookup(vol, g), g, off, cnt, &needs);
			maps += needs;
		}
	}
	/* Two parts of one group each needing its bitmap: the first one
	 * made serves both, and the spare is freed. */
	size_t words = BGA_BITMAP_WORDS(vol->cfg.blocks_per_group);
	uint64_t **map = rc == 0 && maps ? calloc(maps, sizeof(*map)) : NULL;
	if (rc == 0 && maps && map == NULL)
		rc = -ENOMEM;
	for (uint64_t i = 0; rc == 0 && i < maps; i++)
		if ((map[i] = malloc(words * sizeof(uint64_t))) == NULL)
			rc = -ENOMEM;
	if (rc == 0 && reserved) {
		uint64_t r = __atomic_load_n(&vol->reserved, __ATOMIC_RELAXED);
		do {
			if (r < total) {
				rc = -ENOSPC;
				break;
			}
		} while (!__atomic_compare_exchange_n(&vol->reserved, &r, r - total, false, __ATOMIC_ACQ_REL,
						      __ATOMIC_RELAXED));
	} else if (rc == 0 && bga_counter_add_limited(vol->used, (int64_t)total, (int64_t)geo->capacity) != 0) {
		rc = -ENOSPC;
	}
	uint64_t used = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		for (uint64_t g = bga__group_of(vol, ext[i].start); g <= bga__group_of(vol, ext[i].start + ext[i].len - 1);
		     g++) {
			struct bga_group *grp = bga__group_lookup(vol, g);
			part_of(vol, &ext[i], g, &off, &cnt);
			uint32_t lo, hi;
			bga__grp_span(vol, grp, g, &lo, &hi);
			if (grp->bitmap == NULL && grp->free != 0 && !(off == lo && cnt == hi - lo)) {
				BGA_ASSERT(used < maps);
				bga__group_fill_bitmap_locked(vol, grp, g, map[used]);
				map[used++] = NULL;
			}
			int taken = bga__group_take_locked(vol, grp, g, off, cnt);
			(void)taken;
			BGA_ASSERT(taken == 0); /* checked, and its bitmap made */
		}
	}
	for (uint64_t i = 0; map && i < maps; i++)
		free(map[i]);
	free(map);
	return rc;
}

int bga__claim_vec(struct bga_volume *vol, const struct bga_geom *geo, const struct bga_extent *ext, size_t n,
		   bool reserved)
{
	int rc = 0;
	/* Chunks before any group lock (lockdep.h): an untouched chunk is
	 * installed, one a lazy load has not read yet is read. */
	for (size_t i = 0; i < n && rc == 0; i++) {
		uint64_t c1 = bga__group_of(vol, ext[i].start + ext[i].len - 1) >> BGA_CHUNK_SHIFT;
		for (uint64_t c = bga__group_of(vol, ext[i].start) >> BGA_CHUNK_SHIFT; rc == 0 && c <= c1; c++)
			if (bga__chunk_ensure(vol, c) == NULL)
				rc = -ENOMEM;
	}
	struct bga__range_locks locks;
	if (rc == 0 && (rc = bga__range_lock(vol, ext, n, &locks)) == 0) {
		rc = claim_locked(vol, geo, ext, n, reserved);
		bga__range_unlock(vol, &locks);
	}
	return rc;
}

int bga_claim(struct bga_volume *vol, uint64_t start, uint64_t len)
{
	if (vol == NULL)
		return -EINVAL;
	urcu_bp_read_lock();
	const struct bga_geom *geo = bga_rcu_load(vol->geom);
	int rc = bga__range_check(vol, geo, start, len);
	if (rc == 0)
		rc = bga__claim_vec(vol, geo, &(struct bga_extent){start, len}, 1, false);
	urcu_bp_read_unlock();
	return rc;
}
