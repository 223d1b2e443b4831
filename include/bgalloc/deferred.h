/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGALLOC_DEFERRED_H
#define BGALLOC_DEFERRED_H

/*
 * Deferred frees and commits: blocks freed in a transaction stay
 * allocated until bga_commit of it.
 *
 * A part of <bgalloc.h>, which programs include; its opening comment gives
 * the conventions every contract here follows (errors, -EAGAIN and
 * -ENOSPC, threads).  This file compiles on its own.
 */

#include <stddef.h>
#include <stdint.h>

#include <bgalloc/export.h>
#include <bgalloc/volume.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Free a range when transaction txn commits.  The blocks of
 * [start, start + len) stay allocated, and unavailable, until
 * bga_commit(vol, t) with t >= txn.  A store meanwhile writes them as
 * allocated.  All or nothing, as bga_free().
 *
 * Returns: 0.
 * Errors:
 *  -EINVAL  the checks of bga_free(), or any block already waits on a
 *           deferred free, or txn is 0 or not greater than the last
 *           committed txn.
 *  -ENOMEM  its record or its group's pending map cannot be allocated,
 *           or the bitmap that the commit's release of part of a wholly
 *           used group needs (made here, so that a commit needs no
 *           memory); nothing changed.
 *  -EUCLEAN any block lies in a group a load quarantined (bga_load).
 * Threads: any thread.  Holds the group lock of every group of the range
 *   at once, in ascending slot order; grow_lock first, to install chunks.
 */
BGA_EXTERN int bga_free_deferred(struct bga_volume *vol, uint64_t start, uint64_t len, uint64_t txn);

/*
 * Free a set of extents when transaction `txn` commits, all or nothing.
 * What bga_free_deferred() does for one extent, for n of them (an
 * object's extents), as bga_free_vec() is to bga_free().  Extents may come
 * in any order and may span groups; the set is checked and recorded with
 * every group lock of it held at once, so a concurrent call sees all of it
 * pending or none.  The blocks stay allocated, and unavailable, until
 * bga_commit(vol, t) with t >= txn.  On any error nothing changed: no
 * extent is pending, no block moved.
 *
 * Returns: 0, every extent pending.
 * Errors:
 *  -EINVAL  NULL vol or ext, n 0, txn 0 or not greater than the last
 *           committed txn, an extent of length 0, outside the volume or
 *           below first_data_block, extents that overlap, or any block
 *           that is not allocated (free, or a window's) or already waits
 *           on a deferred free.
 *  -EUCLEAN any block lies in a group a load quarantined (bga_load).
 *  -ENOMEM  the records, a group's pending map, or a group's bitmap (as
 *           bga_free_deferred) could not be allocated (all are allocated
 *           before anything changes).
 * Threads: any thread.  Holds every group lock of the set at once, taken
 *   in ascending slot order (as bga_free_vec); grow_lock first, to install
 *   chunks.
 */
BGA_EXTERN int bga_free_deferred_vec(struct bga_volume *vol, const struct bga_extent *ext, size_t n, uint64_t txn);

/*
 * Commit a transaction: release every deferred free with txn <= txn.
 * Only groups holding pending frees are visited, so the cost is
 * O(records in those groups), not O(groups); a deferred free racing the
 * commit of its own txn is released by that commit or by the next one,
 * never before.  Commits must not go backwards; committing the same txn
 * again is a no-op.  A CPU whose next-fit place (<bgalloc/alloc.h>,
 * where a request looks, 2) lies in a group above blocks the commit
 * freed there forgets it; other CPUs' places stay.
 *
 * Memory never fails nor delays a commit: every deferred free with
 * txn <= txn is released.  A release of part of a wholly used group needs
 * its bitmap, and bga_free_deferred made it (or failed with -ENOMEM,
 * changing nothing), so a commit allocates no memory.
 *
 * Returns: 0.
 * Errors:
 *  -EINVAL  vol is NULL, txn is 0, or txn is less than the last committed
 *           txn.
 * Threads: any thread.  Takes commit_lock (commits are serialised), then
 *   the group lock of each group with pending frees, one at a time; the
 *   counter's fold lock now and then.
 */
BGA_EXTERN int bga_commit(struct bga_volume *vol, uint64_t txn);

#ifdef __cplusplus
}
#endif

#endif
