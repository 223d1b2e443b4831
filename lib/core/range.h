/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_RANGE_H
#define BGA_RANGE_H

/*
 * Frees of ranges (range.c): the checks of a range of blocks, the
 * all-or-nothing walk of its groups under every lock of it, and the
 * group locks of a set of extents held at once.
 */

#include "types.h"
#include "group.h"

/* -EINVAL unless [start, start+len) is a non-empty range of usable blocks. */
int bga__range_check(struct bga_volume *vol, const struct bga_geom *geo, uint64_t start, uint64_t len);
/*
 * With every group lock of the range held and every block checked to be
 * allocated and not pending a deferred free, call fn(..., commit=false)
 * per group (it may fail, changing nothing), then fn(..., commit=true) per
 * group (it must not fail).  Returns 0, -EINVAL or fn's error.
 */
typedef int (*bga__range_fn)(struct bga_volume *vol, const struct bga_geom *geo, struct bga_group *grp,
			     uint64_t g, uint32_t off, uint32_t n, bool commit, void *arg);
int bga__range_apply(struct bga_volume *vol, const struct bga_geom *geo, uint64_t start, uint64_t len,
		     bga__range_fn fn, void *arg);
/* The same over n extents, sorted by start and disjoint, each one group
 * part at a time (two extents may share a group: fn then sees it twice,
 * each time for its own part, every prepare before any commit). */
int bga__range_apply_vec(struct bga_volume *vol, const struct bga_geom *geo, const struct bga_extent *ext, size_t n,
			 bga__range_fn fn, void *arg);
/* A sorted copy of ext[0..n) (*sorted, to be freed) and its block total;
 * -EINVAL when an extent fails bga__range_check or two overlap, -ENOMEM. */
int bga__extents_sorted(struct bga_volume *vol, const struct bga_geom *geo, const struct bga_extent *ext, size_t n,
			struct bga_extent **sorted, uint64_t *total);
/* Free blocks the caller took itself and holds, ext[0..n) in any
 * order (bga_alloc_vec's undo): nothing checked, nothing allocated,
 * so it cannot fail; the blocks stay counted used for the caller to move
 * (uncharged, or given back to the reservation, so no other call can
 * take the promise meanwhile).  Locks: the caller holds none. */
void bga__free_pieces_charged(struct bga_volume *vol, const struct bga_extent *ext, size_t n);

/* The group locks of a set of extents, held at once (range.c). */
#define BGA_RANGE_STACK_SLOTS 16
struct bga__range_locks {
	uint32_t stack[BGA_RANGE_STACK_SLOTS];
	uint32_t *slots;
	uint32_t n;
};
/* Lock every group of ext[0..n) (sorted, disjoint), each lock-table slot
 * once, in ascending slot order: the one place several group locks are
 * held.  0 or -ENOMEM (nothing locked). */
int bga__range_lock(struct bga_volume *vol, const struct bga_extent *ext, size_t n, struct bga__range_locks *l);
void bga__range_unlock(struct bga_volume *vol, struct bga__range_locks *l);

#endif
