/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGALLOC_H
#define BGALLOC_H

/*
 * bgalloc: a block and extent allocator for a block device, for file
 * systems and storage engines in user space.  It follows the ext2/ext3/ext4
 * design (bitmap block groups, a hashed table of group locks, per-CPU
 * approximate counters, per-file reservation windows, frees that wait for
 * the journal commit) and adds an O(1) group index.
 *
 * Conventions
 *  - Blocks are uint64_t numbers in [0, nblocks).
 *  - Every function that can fail returns 0 or a negative errno and hands
 *    results back through pointers.  There is no global last error; see
 *    bga_strerror().  On any error the volume is left exactly as it was,
 *    as far as anything the API shows can tell (blocks, counts,
 *    reservations, handles' windows, groups initialised, the last commit),
 *    with two exceptions, both of windows' remainders, which are free
 *    either way: a request that would answer -ENOSPC or -EAGAIN takes
 *    every window's remainder back first (bga_rsv_open), and bga_claim
 *    takes back those in its range even when it then fails.  Counts of
 *    calls (bga_stats' lock and handle counts, bga_lock_stats) count
 *    failed calls too, and the group index's bounds (bga_longest_free_read,
 *    bga_group_stats' longest_run_hint) are tightened by any search,
 *    failed or not, toward the true run they bound.
 *  - -EAGAIN and -ENOSPC mean one thing for every allocating call
 *    (bga_alloc, bga_alloc_vec with or without BGA_ALL_OR_NOTHING,
 *    reserved or not, through a handle or not):
 *      -EAGAIN: the same request, retried after every pending transaction
 *      commits and nothing else changes, would succeed.
 *      -ENOSPC: it would not.
 *    A pending transaction is one whose deferred frees no bga_commit has
 *    released yet.  Blocks a bga_trim holds for its discard are not free
 *    in either case: the trim gives them back, not a commit.
 *  - Threading: once bga_create() has returned, any thread may call any
 *    function concurrently, with no registration.  bga_destroy() must run
 *    with no other call in flight.
 *
 * The model
 *  - A volume is nblocks blocks cut into groups of blocks_per_group.  Each
 *    group has a bitmap and a free count, under its group lock: a slot of
 *    a hashed lock table that groups share.  An index of the groups by
 *    longest free run finds one that can hold a request without looking
 *    at the others.  An extent never crosses a group boundary, except as
 *    bga_alloc_vec merges its pieces.
 *  - Windows (bga_rsv_open): a file's handle books a window of free blocks
 *    after its last allocation and serves its appends from it.  Blocks a
 *    window holds and no allocation took are free: they count as free,
 *    are stored as free, and come back before any request would fail.
 *  - Reservations (bga_reserve): a promise of n blocks, none chosen yet
 *    (delayed allocation).  They have nothing to do with windows.
 *  - Deferred frees (bga_free_deferred): blocks freed in the caller's
 *    transaction txn stay allocated, and are not reused, until a commit.
 *  - Commits (bga_commit(vol, txn)): release every deferred free of a
 *    transaction <= txn.  Commits never go backwards.
 *  - Persistence (bga_store, bga_load): the allocation state through the
 *    caller's I/O, crash-atomically; bgalloc(7) and its source,
 *    docs/PERSISTENCE.md, give the order of a commit and what a crash at
 *    each point leaves.
 *  - The scan (bga_scan): a stored area's superblock, descriptors and
 *    checksums read without a load, for tools (bga-inspect(1)).
 *
 * Each function's comment in <bgalloc.h> ends with its contract in three
 * parts, the sections of its man page: "Returns:", "Errors:" (one line
 * per errno, and when) and "Threads:" (who may call it, and which locks
 * or grace periods it may wait on).
 */

/*
 * <bgalloc.h> is written in parts, one noun each, under <bgalloc/>; it
 * includes them all, in this order, and is the one header a program
 * includes.  Each part compiles on its own.
 */
#include <bgalloc/version.h>
#include <bgalloc/error.h>
#include <bgalloc/volume.h>
#include <bgalloc/alloc.h>
#include <bgalloc/deferred.h>
#include <bgalloc/reserve.h>
#include <bgalloc/window.h>
#include <bgalloc/walk.h>
#include <bgalloc/stats.h>
#include <bgalloc/check.h>
#include <bgalloc/persist.h>
#include <bgalloc/scan.h>

#endif
