/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGALLOC_ALLOC_H
#define BGALLOC_ALLOC_H

/*
 * Allocation: the request, bga_alloc and bga_alloc_vec, bga_claim, and
 * the frees bga_free and bga_free_vec.
 *
 * A part of <bgalloc.h>, which programs include; its opening comment gives
 * the conventions every contract here follows (errors, -EAGAIN and
 * -ENOSPC, threads).  This file compiles on its own.
 *
 * Where a request looks.  Every call that hands out blocks (bga_alloc,
 * bga_alloc_vec, and a handle's window booking) looks in one order, and
 * goes on to the next place only when the one before cannot serve it:
 *
 *  1. The request's own window: req->rsv's (windows on, see
 *     bga_rsv_open(); a file's first request that files like it showed
 *     to stay small has none, and is packed: step 2; a request whose
 *     goal is a free block its window handed out books the next window
 *     from that goal); for a goal-less
 *     bga_alloc of at most 16 blocks without a handle, flags or unit, the
 *     calling CPU's locality window (ext4's locality groups), which such
 *     requests share.  No other call takes from a locality window.
 *  2. Free runs outside every window, in the goal's order: the goal's
 *     group from the goal on, then the groups after it that can hold the
 *     request, round to the goal's group (each call's contract below says
 *     what it passes over: BGA_WHOLE's short runs, bga_alloc_vec's split
 *     runs).  A goal-less request starts in the calling CPU's home
 *     region, from its low end.  A file's goal-less first window
 *     (windows on, its handle neither sized nor at a unit) goes on from
 *     the calling CPU's next-fit place: the end of the first extent its
 *     last first window took (a goal-less one, or a new file's that lay
 *     in its goal's group: an old file's window at its goal, or one moved
 *     to another group, leaves the place), or of its last packed file
 *     placed there (next fit: files written one after another lie in
 *     that order).  A
 *     packed file's goal-less request takes the free run at that place
 *     when the run starts there and holds all of max_len (and moves the
 *     place to its end); else the first free run of the group, from the
 *     group's start, that holds all of it (first fit), then the first in
 *     the groups after, and the place stays.  One of more than a block
 *     goes first fit from the CPU's home instead when the place lies in
 *     the group after the home's and the home's group, under a quarter
 *     free, holds all of it in one free run.  A run that holds all of
 *     max_len anywhere comes before a shorter one.  A file's goal-less
 *     first request of at most 15 blocks that would book a first window,
 *     when files whose first request was as long more often stayed whole
 *     than grew on the calling CPU (16 of them seen), first takes the
 *     first free run of exactly its max_len in the CPU's home group,
 *     from the group's start (among the first 256 runs that could hold
 *     it), and books no window, while that group's free space is in
 *     pieces (its longest free run under a sixth of its free blocks): a
 *     hole a deleted file left is filled whole; not a run beside blocks
 *     waiting for a commit, nor one right after another window; a CPU
 *     that found none there looks again once the group's free count
 *     changed.  A bga_commit() that frees blocks below a CPU's place, in the place's group, makes the
 *     CPU forget it: its next file starts from the home's start again.
 *     In a group at most a quarter free, or holding another window,
 *     both take the group's first run that holds them instead
 *     (<bgalloc/window.h>, bga_rsv_open).
 *     Either passes over its goal's group when the run it would take
 *     there borders blocks waiting for a commit (bga_free_deferred) and
 *     more than twice as many of the group's blocks wait as are free (a
 *     round of deletes not yet committed, which would leave the file an
 *     island in the space it frees): the groups after it come first, and
 *     that group last, from its start, so the file is never refused for
 *     it.
 *  3. Blocks other windows hold: other handles' windows and the CPUs'
 *     locality windows are taken back, every one at once, only when the
 *     request would otherwise get -ENOSPC (or, for bga_alloc_vec without
 *     BGA_ALL_OR_NOTHING, not even one extent; for a window's booking
 *     through a handle, a run shorter than its request, except for a
 *     bga_alloc_vec piece after the call's first extent, which takes
 *     the shorter run or ends the carve), and the search runs again.
 *     Windows never cause a false -ENOSPC, and a request that steps 1 and
 *     2 serve never takes, shortens or extends into another's window.
 *
 * A call that names its blocks is not a search: BGA_EXACT_GOAL and
 * bga_claim take back a window's remainder in their range (bga_rsv_open,
 * bga_claim), as bga_trim does for the groups it trims.
 *
 * A window is state a call accounts for: a call changes no window but
 * its own and those it took from, and a failed call none but by step 3's
 * taking back (those blocks are free either way; only bga_rsv_window()
 * sees the difference).
 */

#include <stddef.h>
#include <stdint.h>

#include <bgalloc/export.h>
#include <bgalloc/volume.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BGA_NO_GOAL UINT64_MAX

/* bga_request.flags */
enum {
	BGA_EXACT_GOAL = 1u << 0,   /* the extent must start at req.goal, or fail with -ENOSPC */
	BGA_USE_RESERVED = 1u << 1, /* draw on a bga_reserve()d promise instead of free space */
	BGA_ALL_OR_NOTHING = 1u << 2, /* bga_alloc_vec: all of `want`, or nothing (-ENOSPC, -EAGAIN) */
	BGA_WHOLE = 1u << 3,          /* bga_alloc: a run that holds all of max_len first, then the goal's */
};
#define BGA_ALL_OR_NOTHING BGA_ALL_OR_NOTHING
#define BGA_WHOLE BGA_WHOLE

/*
 * What bga_alloc() and bga_alloc_vec() are asked for.  Zero-initialise it
 * (struct bga_request req = {.goal = ...}), so that fields a release adds
 * start at their defaults.
 */
struct bga_request {
	uint64_t goal;       /* preferred first block, or BGA_NO_GOAL */
	uint64_t min_len;    /* 1 .. max_len */
	uint64_t max_len;    /* capped at blocks_per_group */
	struct bga_rsv *rsv; /* optional per-file reservation window, or NULL */
	uint32_t flags;      /* BGA_EXACT_GOAL | BGA_USE_RESERVED | BGA_ALL_OR_NOTHING | BGA_WHOLE */
	/*
	 * Allocation unit (Ceph's alloc_unit, XFS's alignment): 0 or 1, none;
	 * else a power of two <= blocks_per_group.  Every extent then starts
	 * at a block number that is a multiple of align (absolute: counted
	 * from block 0, not from first_data_block) and has a length that is
	 * a multiple of align; min_len and max_len must be multiples of it.
	 * An aligned run inside a longer unaligned free extent is found: the
	 * free space is searched for aligned runs, not for runs that happen
	 * to start aligned.  Through a handle (req->rsv, windows on), an
	 * aligned request is served from the handle's window, which it
	 * books aligned: a start that is a multiple of align and a size of
	 * whole units (the handle's size rounded up to a unit, at most
	 * rsv_max rounded down to one; with rsv_max below align no window
	 * is used).  A window an unaligned request moved off a unit is given
	 * back and booked again.  A CPU's locality window never serves an
	 * aligned request.  bga_alloc places an aligned request as one with
	 * BGA_WHOLE.
	 */
	uint64_t align;
};

struct bga_rsv;

/*
 * Allocate one extent of min_len to max_len blocks near a goal.  max_len
 * is capped at blocks_per_group, rounded down to a multiple of align; an
 * extent never crosses a group boundary.  The extent is as near
 * req->goal as possible: the goal block, then forward in its group, then
 * the groups after it that the group index says can hold min_len,
 * wrapping round to the goal's group (but for what the paragraph after
 * next says of BGA_WHOLE and aligned requests).  With BGA_NO_GOAL the search starts
 * at the first block of the calling CPU's home group, so goal-less
 * requests pack from its low end, as first fit would; the home moves to
 * another group only when its lock is found held.  The goal is a preference: when its
 * group's lock is held, the allocation is taken elsewhere rather than
 * waited for, and the calling CPU keeps using the group it got instead for
 * the next 64 allocations aimed at that group; found held again within 64
 * allocations of coming back, twice as many, up to 4096 (BGA_EXACT_GOAL
 * always waits).
 *
 * One extent of max_len where one run holds it: with BGA_WHOLE, for
 * every request with req->align > 1 but for BGA_EXACT_GOAL's (there or
 * nowhere), and for every BGA_NO_GOAL request (it has no goal block to
 * keep), a run at the goal that is shorter than max_len (as capped) is
 * passed over for a free run that holds all of max_len, looked for in the
 * same order (the goal's group from the goal on, then the groups after it
 * that can hold it, round to the goal's group); only when none exists, or
 * fewer than max_len blocks are free and not promised to reservations
 * (with BGA_USE_RESERVED: fewer are reserved), is the extent placed as
 * above, from the goal's run.  A run at the goal that holds max_len is
 * taken there.  Blocks a window holds are not looked at (they are taken
 * back only before an -ENOSPC), and a request served by its handle's
 * window (req->rsv, windows on) takes from the window as without the
 * flag.  Ceph's allocators keep a request whole in this way.  At a storage
 * engine's allocation unit it gives one extent per request and fewer free
 * extents; for a file system's files written at random goals it halves
 * extents per file but more than doubles the free extents left
 * (BENCHMARKS.md#at-a-storage-engines-allocation-unit).
 *
 * With req->rsv, blocks come from the window first; see bga_rsv_open().
 * With BGA_USE_RESERVED the extent is charged to an earlier bga_reserve();
 * it is capped at what is reserved.
 *
 * With req->align > 1 (see struct bga_request) the extent is aligned; with
 * BGA_EXACT_GOAL the goal must then be a multiple of align.
 *
 * A request that cannot be met fails in time bounded by the group index,
 * not by the volume's size: when no group's longest free run reaches
 * min_len, the index says so in a few word scans per 2048 groups, and
 * -ENOSPC comes without looking at any group (a free count that would
 * allow the run does not make it search again).  An aligned request may
 * look at each group whose longest run reaches min_len but holds no
 * aligned run of it.
 *
 * Returns: 0, with the extent in *out.
 * Errors:
 *  -EINVAL  NULL vol/req/out, min_len 0, min_len > max_len, goal >= nblocks
 *           (other than BGA_NO_GOAL), unknown flags (BGA_ALL_OR_NOTHING
 *           included: it is bga_alloc_vec's), BGA_EXACT_GOAL without a
 *           goal or with BGA_WHOLE, BGA_USE_RESERVED with fewer than
 *           min_len blocks reserved; align not 0, 1 or a power of two <=
 *           blocks_per_group, min_len or max_len not a multiple of align,
 *           min_len > blocks_per_group with align > 1, an exact goal that
 *           is not a multiple of align.
 *  -ENOSPC  no free run of min_len blocks exists (with align: no aligned
 *           one; for BGA_EXACT_GOAL: none starts at the goal), or the
 *           free space is promised to reservations, and a commit of every
 *           pending deferred free would not change that (see the top:
 *           -EAGAIN and -ENOSPC).
 *  -EAGAIN  not now, but the same request would succeed once every
 *           pending deferred free is committed (bga_commit()).
 *  -ENOMEM  a group's bitmap or descriptors could not be allocated.
 * Threads: any thread.  Takes one group lock at a time, by trylock except
 *   for BGA_EXACT_GOAL and a window's next group, which wait; grow_lock
 *   to install a chunk first; the counter's fold lock now and then; on a
 *   lazily loaded volume, the reads of unread chunks, through the io's
 *   callbacks.
 */
BGA_EXTERN int bga_alloc(struct bga_volume *vol, const struct bga_request *req, struct bga_extent *out);

/*
 * Allocate up to want blocks as several extents.  At most max_out
 * extents (Ceph's Allocator::allocate), each of min_len .. max_len blocks
 * and aligned as req->align asks, found as bga_alloc() finds one: the
 * first piece as near req->goal as bga_alloc would look (BGA_NO_GOAL:
 * the calling CPU's home), each next piece from the end of the one before.
 *
 * One extent where one run holds the request: once the rest of want fits
 * one piece (min(max_len, blocks_per_group), rounded down to align), a
 * piece without req->rsv is taken from a free run that holds all of it,
 * looked for as bga_alloc looks for min_len (the goal's group from the
 * goal on, then the groups after it that can hold it, round to the goal's
 * group); only when no run anywhere holds it is the rest carved, from the
 * goal's run on.  A goal inside a free run, not at its start, does not
 * split that run: the piece starts at the run's first aligned block
 * (Ceph's allocators take a free extent from its start) when the run
 * starts at most 192 blocks below the goal or fills the goal's group; a
 * run that starts further back is split at a multiple of 64 blocks at
 * most 256 below the goal (how far the look back goes).  So unlike
 * bga_alloc, the first extent need not start at a free goal block.  More
 * than a piece is carved greedily from the goal: each piece as long as
 * max_len, its run and the rest of want allow, so a run that goes on into
 * the next group continues the extent.  Pieces that touch are merged in
 * out[] while the merged extent
 * stays within max_len, which here may exceed blocks_per_group, so a run
 * that spans groups comes back as one extent; out[] is in the order
 * found, and the search's wrap-around from the volume's end to its start
 * starts a new extent.  *n_out gets the extents written, and their
 * lengths add up to the blocks handed out.
 *
 * A partial result (fewer than want blocks, or max_out extents filled) is
 * a success, returning 0, unless req->flags has BGA_ALL_OR_NOTHING: then
 * either all of want is handed out, or nothing is.  All or nothing
 * succeeds whenever want fits: as at most max_out extents, each min_len
 * .. max_len blocks and aligned as req->align asks, lying in free runs
 * that hold an aligned run of min_len inside one group (the runs
 * bga_alloc could take a piece from; such runs that touch across a group
 * boundary count as one run), without blocks promised to reservations
 * (with BGA_USE_RESERVED: want at most what is reserved).  When the
 * greedy carve falls short, the call looks at every group that may hold
 * such a run and takes a fit it finds there, placed from each run's
 * start; only when none exists does it fail.
 * A carve that falls short gives back what it took: those blocks were
 * never anyone else's, but another thread's request that ran meanwhile
 * may have seen them taken, and their groups count as changed for the
 * next store.
 * Every extent in out[] is min_len .. max_len long: a piece is cut short
 * so that what is still wanted stays 0 or at least min_len where it can,
 * and a piece merged into the extent before it leaves a rest of min_len
 * or more; carving stops when the rest of want is below min_len (with
 * align dividing min_len, only when min_len > align can that happen).
 *
 * Windows: other windows are looked at as the order at the top of this
 * header says: never the CPU's locality window; other handles' windows
 * only for the first extent, when no run outside windows holds min_len
 * (a partial result is a success, so later pieces stop short of them),
 * and, with BGA_ALL_OR_NOTHING, only when no fit lies outside them.
 * With req->rsv, pieces come from the handle's window first, as
 * in bga_alloc (an unaligned piece whose window is used up where the free run from
 * the file's end reaches the group's end but is shorter than the piece
 * takes that run, at least min_len, and the next piece goes on in the
 * next group: a file written in order stays one run across the seam,
 * where a single extent still asks for a run that holds it); with
 * BGA_ALL_OR_NOTHING only what the window holds at the
 * call (no window is booked, and a failure leaves the window as it was;
 * an aligned or reserved request takes none).  BGA_USE_RESERVED charges
 * every piece to an earlier bga_reserve() and caps the total at what is
 * reserved at the call (-EINVAL when that is below min_len).
 * BGA_EXACT_GOAL is -EINVAL.  BGA_WHOLE changes nothing here: the rule
 * above is bga_alloc's with it, and pieces before the last are carved.
 *
 * A call takes many group locks in turn and never holds two at once.  A
 * group's further pieces are taken under one hold of its lock, each the
 * first run after the one before (what bga_alloc with that goal would
 * take first), so N extents cost no more than N bga_alloc() calls.
 *
 * A lazily loaded volume reads its unread chunks before it answers
 * -ENOSPC or -EAGAIN (bga_load).  On any error *n_out is 0 and nothing is
 * handed out.
 *
 * Returns: 0, with *n_out extents in out[].
 * Errors:
 *  -EINVAL  NULL vol, req, out or n_out, max_out 0, want 0, want not a
 *           multiple of align, BGA_EXACT_GOAL, or the request's other
 *           checks as in bga_alloc() (max_len is not capped at
 *           blocks_per_group here).
 *  -ENOSPC  the call cannot succeed, and would not after every pending
 *           commit (their one meaning: see the top): without
 *           BGA_ALL_OR_NOTHING, not even one extent of min_len can be had
 *           (want below min_len, or min_len past blocks_per_group,
 *           never can); with it, want does not fit as
 *           above.
 *  -EAGAIN  as -ENOSPC, but the same request would succeed once every
 *           pending deferred free is committed.
 *  -ENOMEM  not even one extent could be had for want of memory (all or
 *           nothing: the search for a fit ran out).
 * Threads: any thread.  Takes group locks one at a time, never two at
 *   once; otherwise waits as bga_alloc() does.
 */
BGA_EXTERN int bga_alloc_vec(struct bga_volume *vol, const struct bga_request *req, uint64_t want,
                             struct bga_extent *out, size_t max_out, size_t *n_out);

/*
 * Mark an exact range allocated, all or nothing.  [start, start + len)
 * may span groups (Ceph's init_rm_free and claim_range, ext4's
 * ext4_mb_mark_bb): for an embedder that knows which blocks its own
 * metadata uses.  Window remainders in the range are taken back first:
 * a window keeps the part of its remainder before the range, or, when
 * the range covers the remainder's first block, the part after it (the
 * other part is given back too); this also happens when the claim then
 * fails: those blocks are free either way, and only the handle's
 * bga_rsv_window() sees the difference.  The blocks are charged as an
 * allocation's are, and given back with bga_free().
 *
 * All or nothing against concurrent calls: every group lock of the range
 * is held at once, taken in ascending lock-slot order as a free that
 * spans groups takes them (the range's chunks are installed before any
 * lock is taken), and the range is checked, charged and marked under
 * them.  A concurrent allocation or free sees all of the claim or none.
 *
 * Returns: 0.
 * Errors:
 *  -EINVAL  NULL vol, len 0, or a range outside the volume or below
 *           first_data_block (until bga_grow() returns, the blocks it
 *           adds may still count as outside).
 *  -EBUSY   any block is allocated, waits on a deferred free, or is held
 *           by a bga_trim for its discard (free, but not the caller's to
 *           claim until the trim's callback for it has returned: retry
 *           after bga_trim returns; the claim does not wait, since the
 *           discard is the caller's own callback, which may be what
 *           called it); no block changed.
 *  -ENOSPC  the claim would leave fewer free blocks than are reserved
 *           (bga_reserve is never overcommitted).
 *  -EUCLEAN any block lies in a group a load quarantined (bga_load).
 *  -ENOMEM  a group's bitmap, or a lazily loaded chunk, could not be had.
 * Threads: any thread.  Holds every group lock of the range at once,
 *   taken in ascending slot order; grow_lock first, to install chunks.
 */
BGA_EXTERN int bga_claim(struct bga_volume *vol, uint64_t start, uint64_t len);

/*
 * Free n extents at once, all or nothing.  The extents may come in any
 * order; each group is locked once (every group lock of the set held at
 * once, in ascending slot order).  The same checks as bga_free() for each
 * extent; any failing extent leaves nothing changed, and its error is
 * returned.
 *
 * Returns: 0.
 * Errors:
 *  -EINVAL  NULL vol or ext, n 0, an extent of length 0, extents that
 *           overlap, or an extent bga_free() would refuse with -EINVAL.
 *  -EUCLEAN an extent lies in a group a load quarantined (bga_load).
 *  -ENOMEM  a bitmap, or a lazily loaded chunk, could not be had.
 * Threads: any thread.  Holds every group lock of the set at once, taken
 *   in ascending slot order; grow_lock first, to install chunks.
 */
BGA_EXTERN int bga_free_vec(struct bga_volume *vol, const struct bga_extent *ext, size_t n);

/*
 * Free the range [start, start + len), all or nothing.  On any error
 * nothing changed.  Ranges that span groups are allowed; their locks are
 * taken in lock-slot order.
 *
 * Returns: 0.
 * Errors:
 *  -EINVAL  vol is NULL, len is 0, any block lies outside the volume or
 *           below first_data_block, or any block is not allocated (a
 *           double free, or a block waiting on a deferred free).
 *  -ENOMEM  freeing part of a wholly used group needs its bitmap and none
 *           can be allocated, or a lazily loaded volume must read the
 *           range's bitmaps first and cannot (bga_load).
 *  -EUCLEAN any block lies in a group a load quarantined (bga_load).
 * Threads: any thread.  Holds the group lock of every group of the range
 *   at once, in ascending slot order; grow_lock first, to install chunks;
 *   the counter's fold lock now and then.
 */
BGA_EXTERN int bga_free(struct bga_volume *vol, uint64_t start, uint64_t len);

#ifdef __cplusplus
}
#endif

#endif
