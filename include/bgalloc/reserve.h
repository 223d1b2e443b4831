/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGALLOC_RESERVE_H
#define BGALLOC_RESERVE_H

/*
 * Reservations: promises of a number of blocks, none chosen yet
 * (delayed allocation).
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
 * Promise n blocks without choosing them (delayed allocation).  Never
 * overcommits: free minus reserved stays >= 0 under any concurrency.
 *
 * Promises are made on verified space only.  On a lazily loaded volume
 * (bga_load) the free blocks of chunks whose bitmaps are not read yet are
 * free (bga_free_exact counts them, from their descriptors) but not
 * promised: a reservation, or an unreserved allocation, that needs them
 * reads every unread chunk first (as bga_prefetch) and then decides.  So
 * a read that quarantines a group, or repairs its free count downwards,
 * takes from no promise: bga_free_exact falls, reserved does not pass it.
 *
 * Returns: 0.
 * Errors:
 *  -EINVAL  NULL vol, n 0 or n > nblocks.
 *  -ENOSPC  fewer than n unpromised free blocks remain (unread chunks
 *           read first).
 *  -ENOMEM  the unread chunks it needed could not be read into memory.
 * Threads: any thread.  Lock-free far from the limit; near it, the
 *   counter's fold lock; on a lazily loaded volume, the reads of unread
 *   chunks under grow_lock.
 */
BGA_EXTERN int bga_reserve(struct bga_volume *vol, uint64_t n);

/*
 * Give back n promised blocks (bga_reserve).
 *
 * Returns: 0.
 * Errors:
 *  -EINVAL  NULL vol, n 0, or n more than is reserved.
 * Threads: any thread; lock-free, or the counter's fold lock.
 */
BGA_EXTERN int bga_unreserve(struct bga_volume *vol, uint64_t n);

/*
 * Count the blocks promised by bga_reserve() and not yet used or given
 * back, exactly.
 *
 * Returns: the count; 0 for NULL.
 * Errors: none.
 * Threads: any thread; the counter's fold lock for the exact sum.
 */
BGA_EXTERN uint64_t bga_reserved(struct bga_volume *vol);

#ifdef __cplusplus
}
#endif

#endif
