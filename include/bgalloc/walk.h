/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGALLOC_WALK_H
#define BGALLOC_WALK_H

/*
 * Walks: the free and the allocated extents of a range, and bga_trim,
 * which discards the free ones.
 *
 * A part of <bgalloc.h>, which programs include; its opening comment gives
 * the conventions every contract here follows (errors, -EAGAIN and
 * -ENOSPC, threads).  This file compiles on its own.
 */

#include <stdint.h>

#include <bgalloc/export.h>
#include <bgalloc/volume.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Walk the free extents of a range.  cb(ctx, start, len) is called for
 * each maximal free extent of at least min_len blocks inside [from, to),
 * in block order; extents are split at group boundaries.  A snapshot per
 * group: each group is read under its lock, the callback runs with no lock
 * held.  A non-zero return from cb stops the walk and is returned.
 *
 * Returns: 0, or the callback's non-zero return.
 * Errors:
 *  -EINVAL  NULL vol or cb, from >= to, to > nblocks, or min_len 0.
 *  -ENOMEM  its scratch map could not be allocated, or a lazily loaded
 *           volume's unread bitmaps could not be read into memory
 *           (nothing reported).
 * Threads: any thread.  Reads every unread chunk first (grow_lock); then
 *   takes one group lock at a time, never across the callback.
 */
typedef int (*bga_extent_cb)(void *ctx, uint64_t start, uint64_t len);
BGA_EXTERN int bga_foreach_free(struct bga_volume *vol, uint64_t from, uint64_t to, uint64_t min_len,
                                bga_extent_cb cb, void *ctx);

/*
 * Discard the free space of a range.  For each free extent of at least
 * min_len blocks in [from, to): mark it in use, call cb (the caller's
 * discard) with no lock held, then free it again.  Other threads keep
 * allocating elsewhere meanwhile; no block is ever handed out or lost.
 * Groups trimmed before and not freed into since are skipped.  Each group's qualifying extents
 * are claimed together, then discarded one by one.  Extents are charged
 * like allocations while claimed, so space promised to bga_reserve() is
 * never trimmed: the claim stops at the first extent the unpromised space
 * cannot cover, and that group is not marked trimmed.  A non-zero return
 * from cb stops the trim (every claimed extent is still freed) and is
 * returned.  Claimed extents are owned by no caller: bga_free_exact and
 * bga_stats count them as used while claimed, but a bga_store meanwhile
 * (from cb itself or from another thread) writes them as free, so a
 * crash before the next store never leaves them allocated and owned by
 * nobody.  While claimed they are no caller's to take: bga_claim of them
 * answers -EBUSY, and a request they would have met answers as if they
 * were used (-ENOSPC when nothing else fits: no commit frees them).
 * *trimmed (optional) gets the blocks whose discard returned 0.
 *
 * Returns: 0, or the callback's non-zero return.
 * Errors:
 *  -EINVAL  NULL vol or cb, from >= to, to > nblocks, or min_len 0.
 *  -ENOMEM  its scratch map could not be allocated, or a lazily loaded
 *           volume's unread bitmaps could not be read into memory.
 * Threads: any thread.  Reads every unread chunk first (grow_lock); then
 *   takes one group lock at a time, never across the callback.
 */
BGA_EXTERN int bga_trim(struct bga_volume *vol, uint64_t from, uint64_t to, uint64_t min_len,
                        bga_extent_cb cb, void *ctx, uint64_t *trimmed);

/* bga_foreach_used's flags argument: the extent waits on a deferred free
 * (bga_free_deferred) that no bga_commit has released yet. */
enum {
	BGA_USED_DEFERRED = 1u << 0,
};
#define BGA_USED_DEFERRED BGA_USED_DEFERRED

/*
 * Walk the allocated extents of a range in block order, pending deferred
 * frees flagged.  cb(ctx, start, len, flags) is called for each maximal
 * extent of allocated blocks inside [from, to): the complement of
 * bga_foreach_free(vol, from, to, 1, ...) within the blocks that can be
 * handed out, so an embedder can check its own metadata against the
 * volume without inverting the free walk.  flags is BGA_USED_DEFERRED for
 * blocks waiting on a deferred free, 0 for blocks a caller holds; an
 * extent never mixes the two, and extents are split at group boundaries
 * (as bga_foreach_free splits free ones).  Blocks below first_data_block
 * are never reported.  Blocks that windows hold but no allocation took
 * are free, not reported; blocks that a bga_trim holds claimed for its
 * discard are reported as allocated (flags 0) while it holds them.  A
 * snapshot per group: each group is read under its lock, and cb runs with
 * no lock held, so it may call the library on the volume (bga_destroy
 * aside).  A non-zero return from cb stops the walk and is returned.
 *
 * Returns: 0, or the callback's non-zero return.
 * Errors:
 *  -EINVAL  NULL vol or cb, from >= to, or to > nblocks.
 *  -ENOMEM  its scratch maps could not be allocated, or a lazily loaded
 *           volume's unread bitmaps could not be read into memory
 *           (nothing reported).
 * Threads: any thread.  Reads every unread chunk first (grow_lock); then
 *   takes one group lock at a time, never across the callback.
 */
typedef int (*bga_used_cb)(void *ctx, uint64_t start, uint64_t len, uint32_t flags);
BGA_EXTERN int bga_foreach_used(struct bga_volume *vol, uint64_t from, uint64_t to, bga_used_cb cb, void *ctx);

#ifdef __cplusplus
}
#endif

#endif
