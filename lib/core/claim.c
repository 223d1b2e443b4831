/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga_claim: an exact range marked allocated, across groups, all or
 * nothing (Ceph's init_rm_free / claim_range, ext4's ext4_mb_mark_bb).
 * The opposite of a free that spans groups, under the same locks
 * (bga__range_lock): every group of the range is checked, prepared and
 * charged before any is changed.
 */
#include <errno.h>

#include "rcu.h"

#include <bgalloc/bitmap.h>

#include "internal.h"
#include "window.h"

/*
 * Can [off, off+n) of group g be claimed?  Window remainders in it are
 * given back first, as BGA_EXACT_GOAL takes them: they are nobody's, and
 * only a cut stops their owners' lock-free takes, so that the bitmap,
 * read next, says the last word (a remainder counted but not cut could
 * be taken by its owner before the commit).  Then every block must be
 * free; a pending deferred block is marked used, so it fails here.  A
 * group that must change only in part gets its bitmap now, so that the
 * commit cannot fail.
 */
static int claim_check_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t off, uint32_t n)
{
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
		return off == lo && n == hi - lo ? 0 : bga__group_materialise_locked(vol, grp, g);
	}
	if (grp->ext && grp->ext->windows)
		bga__window_cut_out_locked(vol, grp, g, off, n);
	return bga_bitmap_range_is_clear(grp->bitmap, off, n) ? 0 : -EBUSY;
}

/* The commit for one group. */
static void claim_take_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t off, uint32_t n)
{
	int rc = bga__group_take_locked(vol, grp, g, off, n);
	(void)rc;
	BGA_ASSERT(rc == 0); /* prepared by claim_check_locked */
}

/*
 * Claim ext[0..n) (sorted, disjoint) with every group lock of them held:
 * every part checked (and prepared), then the whole charged, then every
 * part taken.  The charge: to the used counter against the capacity
 * (blocks promised to bga_reserve() are never claimed; a leaf lock, the
 * counter's, under group locks, as every allocation charges), or, for a
 * reserved allocation, out of vol->reserved.
 */
static int claim_locked(struct bga_volume *vol, const struct bga_geom *geo, const struct bga_extent *ext, size_t n,
			bool reserved)
{
	int rc = 0;
	uint64_t total = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		uint64_t start = ext[i].start, len = ext[i].len;
		total += len;
		for (uint64_t g = bga__group_of(vol, start); g <= bga__group_of(vol, start + len - 1) && rc == 0; g++) {
			uint64_t first = bga__group_first(vol, g);
			uint64_t s = BGA_MAX(start, first), e = BGA_MIN(start + len, first + vol->cfg.blocks_per_group);
			rc = claim_check_locked(vol, bga__group_lookup(vol, g), g, (uint32_t)(s - first),
						(uint32_t)(e - s));
		}
	}
	if (rc == 0 && reserved) {
		uint64_t r = __atomic_load_n(&vol->reserved, __ATOMIC_RELAXED);
		do {
			if (r < total)
				return -ENOSPC;
		} while (!__atomic_compare_exchange_n(&vol->reserved, &r, r - total, false, __ATOMIC_ACQ_REL,
						      __ATOMIC_RELAXED));
	} else if (rc == 0 && bga_counter_add_limited(vol->used, (int64_t)total, (int64_t)geo->capacity) != 0) {
		rc = -ENOSPC;
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		uint64_t start = ext[i].start, len = ext[i].len;
		for (uint64_t g = bga__group_of(vol, start); g <= bga__group_of(vol, start + len - 1); g++) {
			uint64_t first = bga__group_first(vol, g);
			uint64_t s = BGA_MAX(start, first), e = BGA_MIN(start + len, first + vol->cfg.blocks_per_group);
			claim_take_locked(vol, bga__group_lookup(vol, g), g, (uint32_t)(s - first), (uint32_t)(e - s));
		}
	}
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
