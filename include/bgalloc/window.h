/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGALLOC_WINDOW_H
#define BGALLOC_WINDOW_H

/*
 * Window handles: a file's handle books a window of free blocks and
 * serves its appends from it.
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

struct bga_rsv;

/*
 * Open a per-file reservation window handle.  Windows are ext3's
 * reservation in shape, ext4's inode preallocation in substance.  A
 * handle books a window of free blocks near its allocations, and the
 * window then belongs to the handle: its
 * blocks are marked in use in the group, so no other caller gets them,
 * and allocations through the handle (req.rsv) take from it with no group
 * lock and no bitmap write.  Unless the caller sets it
 * (bga_rsv_set_size), the window's size starts at cfg.rsv_default
 * and doubles, up to cfg.rsv_max, whenever more than half of the last
 * window was used (one that the allocation booking it used up whole
 * included), and a booking for a max_len at least the window's size
 * and less than twice it books the window doubled at once (not a unit's
 * window), so that the window reaches past the extent it gives and the
 * file's next blocks stay its own (ext3's window grows in place); a
 * window is at most that size (and at most blocks_per_group), though an
 * allocation through the handle with a larger max_len may go on past
 * its end.  In a group that already holds 8 windows or more, while no
 * other group has a free run that holds the window and the room a
 * booking keeps after another window, a window booked there, and that
 * room, are at most a quarter of the group's free blocks outside every
 * window divided by the windows it then holds (at least
 * cfg.rsv_default): many files written at once share
 * the free space they cannot spread out of (sized windows, a unit's and
 * locality windows keep their sizes).  A handle is used by one thread
 * at a time; handles of different files are independent.
 *
 * A file's first window is looked for from its goal: the request's, or
 * without one (a handle neither sized nor at a unit) the calling CPU's
 * next-fit place: the end of the first extent the last first window
 * booked on it took, or of the last packed file placed at that place
 * (next fit), or, when there is none (none placed since the CPU forgot
 * it: a bga_commit() freed blocks below it in its group,
 * <bgalloc/deferred.h>), where a plain request's extent
 * is, with the same steering (bga_alloc; in the calling CPU's home
 * group).  It goes at the goal when the free run there starts at it and
 * holds max_len, else in the first free run of the goal's group, from
 * the goal on and round to it (from the group's start when the group
 * holds another window, or at most a quarter of it is free:
 * first fit; the goal's group passed over, and visited last, when that
 * run borders a round of deletes waiting for a commit, <bgalloc/alloc.h>
 * step 2), then of the groups after, from their starts, that holds
 * max_len or twice the window's size, the larger, or
 * else in the first run that holds max_len, and only when none does
 * (the other windows taken back first, <bgalloc/alloc.h> step 3) in a
 * shorter one: the first that holds half of max_len, else a quarter,
 * and so on, down to any run of min_len.  A run right after another
 * window is taken only past the first cfg.rsv_max blocks of it (their
 * file's room to grow; where that file's windows went on in place past
 * twice cfg.rsv_max blocks, twice as many blocks as they grew over, at most
 * half the group, but for a later window of a file whose windows grew at
 * most cfg.rsv_max in a row; a run too short for that room is passed over
 * as one too short for cfg.rsv_max is), except by a file's first window in a group that
 * holds eight or more windows that are their files' first and were not
 * taken from since (new files written a little and left open together),
 * which then lie side by side.
 * A file (its handle never sized) gets no window at its first request
 * when it is shorter than 16
 * blocks (ext4's stream request) and, of the files whose first request
 * was as long on the calling CPU lately, at least 16 were seen and fewer
 * than one in four asked again through their handle: such a file has
 * likely been written whole, and its request is packed as
 * <bgalloc/alloc.h> says ("Where a request looks"), into short holes
 * that a window would pass over.  Files that grow (interleaved writers,
 * a file written a block a call) so keep their windows.  Its later
 * requests book windows as a file's first window is booked.
 * A window serves an allocation only whole (max_len, as capped): a
 * shorter remainder is given back and the next window booked from where
 * it started.  Nor does it serve a request whose goal is a free block
 * that the window already handed out (the file gave back the tail of
 * what it got, and goes on from there): its remainder is given back and
 * the next window booked from the goal, so the file stays contiguous.  A later window goes on right after the
 * last one, waiting for its group's lock if need be, so that the file
 * stays contiguous; when that lock was held by another thread, the
 * calling CPU's next new files start at its home group (or the group
 * after, when the home is in the busy one) instead, for as many files as
 * a steered plain request would: two writers in one directory then stop
 * taking turns at one group's lock (ext4 skips busy groups the same way).
 * The CPU keeps one steering record for both: its plain requests aimed
 * at that group are steered there too, and a plain request found busy
 * steers the CPU's next files.
 *
 * Blocks a window holds that no allocation took are free, never owned:
 *  - bga_free_exact, bga_stats, bga_check and bga_foreach_free count
 *    them as free (bga_stats also reports them as rsv_window_blocks), and
 *    a store writes them as free;
 *  - bga_trim takes back those of the groups it trims, and discards them;
 *  - freeing one is -EINVAL (it is not allocated);
 *  - they are given back when the window is used up, when the handle is
 *    closed or set to size 0, when a BGA_EXACT_GOAL request asks for
 *    them (the window keeps the part of its remainder before the
 *    extent, or, when the extent covers the remainder's first block, the
 *    part after it, as with bga_claim), and, from every handle at once,
 *    before any request would get -ENOSPC: windows never cause a false
 *    -ENOSPC.  An owner allocating at that moment is safe: it then
 *    simply books another window.
 *
 * The order in which every allocating call looks (its own window, free
 * runs outside every window, other windows only before -ENOSPC) is
 * written once, in <bgalloc/alloc.h>'s opening comment.
 *
 * The handle starts with no window; its first allocation through
 * req.rsv books one.
 *
 * Returns: 0, with *out set to the handle.
 * Errors:
 *  -EINVAL  vol or out is NULL.
 *  -ENOMEM  the handle could not be allocated.
 * Threads: any thread; takes no lock.  The handle is then used by one
 *   thread at a time.
 */
BGA_EXTERN int bga_rsv_open(struct bga_volume *vol, struct bga_rsv **out);

/*
 * Close a window handle.  The unused part of its window is given back at
 * once.  NULL is ignored; the handle must not be used afterwards.
 *
 * Returns: nothing.
 * Errors: none.
 * Threads: the handle's thread; takes the window's group lock.
 */
BGA_EXTERN void bga_rsv_close(struct bga_rsv *rsv);

/*
 * Set a handle's window size, in blocks, as XFS's extent size hint: a
 * file whose size or growth the caller knows.  0 turns the window off
 * and gives back the current one.  A size may be anything up to
 * cfg.blocks_per_group, past cfg.rsv_max too (rsv_max caps only the
 * doubling of a size nobody set; an aligned request's window, of whole
 * units, stays at most rsv_max), or up to rsv_max where that is more (a
 * window is at most a group even so).  Any other size is then the size of
 * every window the handle books, its first included, and never doubles
 * (bga_rsv_open's doubling and its first window's look are for handles
 * never sized, which keep them).  A sized handle's booking (its request
 * longer than the size: all of the request) goes on at the goal when
 * the free run there holds all of it, else takes the first free run
 * that does from the goal on (or from where the group's last sized
 * window ended, when that is past the goal: ext4's stream allocation),
 * round the goal's group and then by the group walk, with no room kept
 * or looked for after other windows; only
 * when no run anywhere holds it does it take a shorter one, as any
 * booking's last pass.  A sized handle is never packed.  A file
 * written through it, in any pieces, so books once a size.  A window
 * already booked keeps its length.
 *
 * Returns: 0.
 * Errors:
 *  -EINVAL  rsv is NULL, or blocks > blocks_per_group and > rsv_max.
 * Threads: the handle's thread; with blocks 0, takes the window's group
 *   lock.
 */
BGA_EXTERN int bga_rsv_set_size(struct bga_rsv *rsv, uint32_t blocks);

/*
 * Report the blocks a handle's window holds now.  Those are the blocks no
 * allocation took yet: start and length in *out (len 0 when none).
 *
 * Returns: 0.
 * Errors:
 *  -EINVAL  rsv or out is NULL.
 * Threads: the handle's thread; takes no lock.
 */
BGA_EXTERN int bga_rsv_window(const struct bga_rsv *rsv, struct bga_extent *out);

/*
 * Open a per-file window handle: the clearer name of bga_rsv_open().
 * Windows are blocks a handle owns, unrelated to bga_reserve() and
 * bga_unreserve(), which promise a count; the handle keeps its type,
 * struct bga_rsv, and the old name stays.
 *
 * Alias of: bga_rsv_open.
 */
BGA_EXTERN int bga_window_open(struct bga_volume *vol, struct bga_rsv **out);

/*
 * Close a window handle: the clearer name of bga_rsv_close().
 *
 * Alias of: bga_rsv_close.
 */
BGA_EXTERN void bga_window_close(struct bga_rsv *rsv);

/*
 * Set a window handle's window size: the clearer name of bga_rsv_set_size().
 *
 * Alias of: bga_rsv_set_size.
 */
BGA_EXTERN int bga_window_set_size(struct bga_rsv *rsv, uint32_t blocks);

/*
 * Get the blocks a handle's window holds: the clearer name of bga_rsv_window().
 *
 * Alias of: bga_rsv_window.
 */
BGA_EXTERN int bga_window_get(const struct bga_rsv *rsv, struct bga_extent *out);

#ifdef __cplusplus
}
#endif

#endif
