/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_DEFERRED_H
#define BGA_DEFERRED_H

/*
 * Deferred frees (deferred.c): the records a bga_free_deferred leaves in
 * its groups until bga_commit, as the route, the frees, the walks and
 * persistence ask after them.
 */

#include "types.h"
#include "group.h"

struct bga_take;

/* Blocks (and, optional, extents) waiting on deferred frees: exact when
 * no free or commit runs meanwhile. */
uint64_t bga__dfree_pending(const struct bga_volume *vol, uint64_t *extents);
/*
 * After a failed allocation: would the request ac (ac->min blocks, from
 * ac->reserved's promise or the unpromised count) fit once every pending
 * deferred free is committed, starting at `exact` unless that is
 * BGA_NO_GOAL?  True when something is pending, the commit leaves
 * ac->min blocks for it, and a run of ac->min forms of blocks free after
 * the commit: free, in a window's remainder, or pending (deferred.c says
 * it once).  The slow path of an -ENOSPC: it takes group locks one at a
 * time (none may be held) and may allocate.
 */
bool bga__dfree_would_fit(struct bga_volume *vol, const struct bga_take *ac, uint64_t exact);
/*
 * Group g's map of blocks a request cannot have (blocks_per_group bits,
 * set = used, every bit outside the span set), taken under g's lock:
 * free blocks clear, windows' remainders too with `windows` (else they
 * stay set, as the bitmap marks them), and with after_commit the
 * blocks pending a deferred free clear too (the state after a commit:
 * the one definition bga__dfree_would_fit reads).  Blocks a trim holds
 * stay set.  No group lock may be held.  Returns the span end.
 */
uint32_t bga__dfree_group_map(struct bga_volume *vol, uint64_t g, uint64_t *map, bool after_commit, bool windows);
/* The first group in [g, end) that holds pending deferred frees, or end. */
uint64_t bga__dfree_next_group(const struct bga_volume *vol, uint64_t g, uint64_t end);
/* Every pending block marked allocated?  Else *bad_off gets one. */
bool bga__dfree_check_locked(const struct bga_volume *vol, const struct bga_group *grp, uint64_t g, uint32_t *bad_off);
/* Write the records as (txn, off << 32 | len) pairs into out (cap words);
 * returns the words needed.  out may be NULL. */
size_t bga__dfree_dump_locked(const struct bga_group *grp, uint64_t *out, size_t cap);
/* Drop every pending record at destroy. */
void bga__dfree_destroy_group(struct bga_group *grp);
/* Group g's pending map (blocks_per_group bits, set = waiting on a
 * deferred free) copied into map, zeros when none.  Caller holds g's lock,
 * or grp is NULL (an untouched group). */
void bga__dfree_copy_pending_locked(const struct bga_volume *vol, const struct bga_group *grp, uint64_t *map);

#endif
