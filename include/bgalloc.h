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
 *    failed calls too.
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
 *    caller's I/O, crash-atomically; bgalloc(7) and the README's
 *    "Persistence guide" give the order of a commit and what a crash at
 *    each point leaves.
 *
 * Each function's comment in <bgalloc.h> ends with its contract in three
 * parts, the sections of its man page: "Returns:", "Errors:" (one line
 * per errno, and when) and "Threads:" (who may call it, and which locks
 * or grace periods it may wait on).
 */

#include <stddef.h>
#include <stdint.h>

#include <bgalloc/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The version of this header: semantic versioning (CHANGELOG.md).  MINOR
 * grows with new interfaces, PATCH with fixes; while MAJOR is 0 a MINOR
 * bump may also change an interface, and CHANGELOG.md says how.  The
 * shared library's SONAME (libbgalloc.so.0) changes only when a program
 * built against an earlier release could no longer run against the new
 * one; a struct that grows does not change it (see "ABI" in CHANGELOG.md).
 * CMake reads its project version from these three lines.
 */
#define BGA_VERSION_MAJOR 0
#define BGA_VERSION_MINOR 3
#define BGA_VERSION_PATCH 0
#define BGA_VERSION_STRING "0.3.0"
/* One number for comparisons: 0x00MMmmpp, e.g. 0x000200 for 0.2.0. */
#define BGA_VERSION_HEX ((BGA_VERSION_MAJOR << 16) | (BGA_VERSION_MINOR << 8) | BGA_VERSION_PATCH)

/*
 * The version of the library the program runs against.  It may be newer
 * than BGA_VERSION_STRING, the header the program was built with.
 *
 * Returns: "MAJOR.MINOR.PATCH", a static string, never NULL.
 * Errors: none.
 * Threads: any thread; takes no lock.
 */
BGA_EXTERN const char *bga_version(void);

#define BGA_NO_GOAL UINT64_MAX

/* Largest volume: 2^48 blocks. */
#define BGA_MAX_BLOCKS (UINT64_C(1) << 48)

/* bga_config.flags: baseline modes, for comparison, and how the volume starts. */
enum {
	BGA_GLOBAL_LOCK = 1u << 0,     /* every group behind one lock (ext3 before 2.5.x, fuse2fs) */
	BGA_ATOMIC_COUNTERS = 1u << 1, /* one shared atomic free counter instead of per-CPU slots */
	/*
	 * Every block starts allocated, as Ceph's allocators start: the
	 * embedder then hands the volume its own free list with bga_free()
	 * or bga_free_vec() (Ceph's init_add_free), and takes ranges back
	 * with bga_claim() (init_rm_free, ext4's ext4_mb_mark_bb).  A group
	 * nothing was freed into has no bitmap (it is wholly used); create
	 * costs its descriptor, 32 bytes a group, and no bitmap.  Blocks a
	 * later bga_grow() adds are free.  bga_load() ignores the flag: the
	 * image says which blocks are allocated.
	 */
	BGA_START_FULL = 1u << 2,
};
/* Each flag is also a macro of its own name, so `#ifdef BGA_START_FULL`
 * tells a program whether the header it is built with has it. */
#define BGA_START_FULL BGA_START_FULL

/* bga_request.flags */
enum {
	BGA_EXACT_GOAL = 1u << 0,   /* the extent must start at req.goal, or fail with -ENOSPC */
	BGA_USE_RESERVED = 1u << 1, /* draw on a bga_reserve()d promise instead of free space */
	BGA_ALL_OR_NOTHING = 1u << 2, /* bga_alloc_vec: all of `want`, or nothing (-ENOSPC, -EAGAIN) */
};
#define BGA_ALL_OR_NOTHING BGA_ALL_OR_NOTHING

/*
 * A volume's configuration.  Fill it with bga_config_init(), change the
 * fields wanted, then pass it to bga_create() (or bga_load(), whose image
 * holds the geometry).  Each field's comment gives its range and default.
 */
struct bga_config {
	uint64_t nblocks;          /* volume size in blocks, 1 .. BGA_MAX_BLOCKS */
	uint32_t blocks_per_group; /* default 32768; a multiple of 64, 64 .. 1 << 20 */
	uint64_t first_data_block; /* default 0; blocks below it are never handed out; < nblocks */
	uint32_t lock_slots;       /* default 0 = auto: 4 << ilog2(min(ncpus, 32)), raised to one per group up to 256;
	                              else a power of two <= 1 << 20 */
	int32_t counter_batch;     /* default 0 = auto: max(32, 2 * ncpus), raised up to 1024 while
	                              ncpus * batch stays under 1/64 of the capacity; else 1 .. 1 << 24 */
	uint32_t rsv_default;      /* default 8: initial reservation window, blocks; <= rsv_max */
	uint32_t rsv_max;          /* default 1027: largest window; <= 1 << 20 (windows are also capped at blocks_per_group) */
	uint32_t flags;            /* BGA_GLOBAL_LOCK | BGA_ATOMIC_COUNTERS | BGA_START_FULL; other bits -EINVAL */
	/*
	 * Group lock kind, an enum bga_lock_kind of <bgalloc/locktab.h>;
	 * default 0 = BGA_LOCK_DEFAULT, which with BGA_GLOBAL_LOCK means a
	 * pthread mutex: the one lock of fuse2fs (a pthread mutex) and of ext3
	 * before the patch (lock_super, a sleeping semaphore) both sleep.
	 * Values past BGA_LOCK_MUTEX are -EINVAL.
	 */
	uint32_t lock_kind;
	/*
	 * Stripe, in blocks (ext4's stripe=): default 0, none; else at most
	 * blocks_per_group (-EINVAL past it), any value (a RAID stripe need
	 * not be a power of two).  A bga_alloc() or bga_alloc_vec() request
	 * without its own align, a window handle or BGA_EXACT_GOAL whose
	 * min_len and max_len (max_len as capped to a group) are both
	 * multiples of stripe is placed at a start that is a multiple of
	 * stripe, with a length that is one, when such a run exists
	 * anywhere; only when none does is it placed as without a stripe.
	 * Other requests ignore it.  Stored with the volume (bga_store).
	 */
	uint32_t stripe;
	/* more fields may follow */
};

/* A run of blocks: [start, start + len). */
struct bga_extent {
	uint64_t start, len;
};

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
	uint32_t flags;      /* BGA_EXACT_GOAL | BGA_USE_RESERVED | BGA_ALL_OR_NOTHING */
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
	 * aligned request.
	 */
	uint64_t align;
};

struct bga_volume;
struct bga_rsv;

/*
 * Fill a configuration with the defaults for a volume of nblocks blocks.
 * Every field of struct bga_config gets the default its comment gives;
 * nblocks is not checked here (bga_create does).
 *
 * Returns: nothing.
 * Errors: none.
 * Threads: any thread; touches only *cfg.
 */
BGA_EXTERN void bga_config_init(struct bga_config *cfg, uint64_t nblocks);

/*
 * Create a volume.  Its blocks are all free (except those below
 * first_data_block), or all allocated with BGA_START_FULL.  Groups are
 * initialised lazily, a chunk of 2048 groups at its first touch: memory
 * grows with the groups touched, not with nblocks.  What a volume costs
 * untouched is its fixed state (lock table, counter, per-CPU lines) and a
 * chunk directory of 11 bytes per 2048 groups (for 64 chunks at least,
 * rounded up to a power of two), which bga_grow extends.  With
 * BGA_START_FULL every chunk of the creation size is installed at create
 * (32 bytes of descriptor a group, no bitmap until a group is freed into).
 *
 * Returns: 0, with *out set to the new volume.
 * Errors:
 *  -EINVAL  cfg or out is NULL, or a field of *cfg is out of the range
 *           its comment in struct bga_config gives.
 *  -ENOMEM  the volume's fixed state could not be allocated.
 * Threads: any thread; the new volume is the caller's alone until the
 *   call returns.
 */
BGA_EXTERN int bga_create(const struct bga_config *cfg, struct bga_volume **out);

/*
 * Destroy a volume and free its memory.  NULL is ignored.  Close every
 * bga_rsv handle of the volume first.
 *
 * Returns: nothing.
 * Errors: none.
 * Threads: no other call on the volume may be in flight, nor start.
 */
BGA_EXTERN void bga_destroy(struct bga_volume *vol);

/*
 * Allocate one extent of min_len to max_len blocks near a goal.  max_len
 * is capped at blocks_per_group, rounded down to a multiple of align; an
 * extent never crosses a group boundary.  The extent is as near
 * req->goal as possible: the goal block, then forward in its group, then
 * the groups after it that the group index says can hold min_len,
 * wrapping round to the goal's group.  With BGA_NO_GOAL the search starts
 * at the calling CPU's home group.  The goal is a preference: when its
 * group's lock is held, the allocation is taken elsewhere rather than
 * waited for, and the calling CPU keeps using the group it got instead for
 * the next 64 allocations aimed at that group; found held again within 64
 * allocations of coming back, twice as many, up to 4096 (BGA_EXACT_GOAL
 * always waits).
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
 *           goal, BGA_USE_RESERVED with fewer than min_len blocks
 *           reserved; align not 0, 1 or a power of two <= blocks_per_group,
 *           min_len or max_len not a multiple of align, min_len >
 *           blocks_per_group with align > 1, an exact goal that is not a
 *           multiple of align.
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
 * Windows: with req->rsv, pieces come from the handle's window first, as
 * in bga_alloc; with BGA_ALL_OR_NOTHING only what the window holds at the
 * call (no window is booked, and a failure leaves the window as it was;
 * an aligned or reserved request takes none).  BGA_USE_RESERVED charges
 * every piece to an earlier bga_reserve() and caps the total at what is
 * reserved at the call (-EINVAL when that is below min_len).
 * BGA_EXACT_GOAL is -EINVAL.
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
 *           (want below min_len never can); with it, want does not fit as
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
 * spans groups takes them (the third place in the lock order, after
 * commit_lock and grow_lock; the range's chunks are installed before any
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
 *  -ENOMEM  its record or its group's pending map cannot be allocated;
 *           nothing changed.
 *  -EUCLEAN any block lies in a group a load quarantined (bga_load).
 * Threads: any thread.  Holds the group lock of every group of the range
 *   at once, in ascending slot order; grow_lock first, to install chunks.
 */
BGA_EXTERN int bga_free_deferred(struct bga_volume *vol, uint64_t start, uint64_t len, uint64_t txn);

/*
 * Commit a transaction: release every deferred free with txn <= txn.
 * Only groups holding pending frees are visited, so the cost is
 * O(records in those groups), not O(groups); a deferred free racing the
 * commit of its own txn is released by that commit or by the next one,
 * never before.  Commits must not go backwards; committing the same txn
 * again is a no-op.
 *
 * Returns: 0.
 * Errors:
 *  -EINVAL  vol is NULL, txn is 0, or txn is less than the last committed
 *           txn.
 * Threads: any thread.  Takes commit_lock (commits are serialised), then
 *   the group lock of each group with pending frees, one at a time.
 */
BGA_EXTERN int bga_commit(struct bga_volume *vol, uint64_t txn);

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

/*
 * Grow the volume to new_nblocks while other threads keep allocating.  The
 * new blocks are free.  Each call sees one size throughout, the old or
 * the new one, when it runs concurrently with a grow.
 *
 * Returns: 0, also when new_nblocks equals the current size.
 * Errors:
 *  -EINVAL  NULL vol, a shrink, or a size past BGA_MAX_BLOCKS or past
 *           2^32 groups.
 *  -ENOMEM  the new geometry or chunk directory could not be allocated.
 * Threads: any thread.  Takes grow_lock (grows are serialised, and wait
 *   for a store's copy), and group locks one at a time under it.  The
 *   geometries it replaces are freed a batch at a time: one call in 32
 *   waits for every thread inside a library call to leave it (an RCU
 *   grace period).
 */
BGA_EXTERN int bga_grow(struct bga_volume *vol, uint64_t new_nblocks);

/*
 * Count the free blocks approximately, in O(1).  Off by at most the free
 * counter's error bound (bga_counter_read); blocks waiting on deferred
 * frees are not free.
 *
 * Returns: the count; 0 for NULL.
 * Errors: none.
 * Threads: any thread; one load, no lock.
 */
BGA_EXTERN uint64_t bga_free_estimate(const struct bga_volume *vol);

/*
 * Count the free blocks exactly: every block that no caller holds.
 * Blocks waiting on a deferred free are held; reserved blocks are free, as
 * in bga_free_estimate.  An allocation in flight counts once it has taken
 * its blocks (it is charged under the group lock as it takes them), never
 * for more than it took.  Blocks that reservation windows hold and no
 * allocation took are free (see bga_rsv_open).
 *
 * Returns: the count; 0 for NULL.
 * Errors: none.
 * Threads: any thread; the counter's fold lock for the exact sum.
 */
BGA_EXTERN uint64_t bga_free_exact(struct bga_volume *vol);

/*
 * Open a per-file reservation window handle.  Windows are ext3's
 * reservation in shape, ext4's inode preallocation in substance.  A
 * handle books a window of free blocks near its allocations, and the
 * window then belongs to the handle: its
 * blocks are marked in use in the group, so no other caller gets them,
 * and allocations through the handle (req.rsv) take from it with no group
 * lock and no bitmap write.  The window's size starts at cfg.rsv_default
 * and doubles, up to cfg.rsv_max, whenever more than half of the last
 * window was used; a window is at most that size (and at most
 * blocks_per_group), though an allocation through the handle with a
 * larger max_len may go on past its end.  A handle is used by one thread
 * at a time; handles of different files are independent.
 *
 * A file's first window is placed as a plain request's extent is, with
 * the same steering (bga_alloc).  A later window goes on right after the
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
 *    them, and, from every handle at once, before any request would get
 *    -ENOSPC: windows never cause a false -ENOSPC.  An owner allocating
 *    at that moment is safe: it then simply books another window.
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
 * Set a handle's window size, in blocks.  The size is the goal of the
 * handle's next window; 0 turns the window off and gives back the
 * current one.
 *
 * Returns: 0.
 * Errors:
 *  -EINVAL  rsv is NULL, or blocks > rsv_max.
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

#define BGA_HIST_ORDERS 49 /* free-extent orders 0 .. 48 */

/*
 * A volume's statistics, as bga_stats() reports them.  Each field's
 * comment says what it counts; a figure is exact for its group at one
 * instant, not across groups while other threads run.
 */
struct bga_stats {
	uint64_t nblocks, free_blocks, reserved_blocks;
	/* groups_initialised: groups with a bitmap in memory;
	 * groups_quarantined: groups a load found damaged (bga_load) */
	uint64_t groups, groups_initialised, groups_quarantined;
	/* free extents whose length is in [2^k, 2^(k+1)): count and blocks,
	 * the buckets e2freefrag prints */
	uint64_t hist_count[BGA_HIST_ORDERS];
	uint64_t hist_blocks[BGA_HIST_ORDERS];
	uint64_t free_extents;
	/*
	 * Fragmentation score in [0, 1], in the spirit of Ceph's allocator
	 * score (ideal - actual) / (ideal - terrible): a free extent of length
	 * L is worth L * log2(L), so the worth of the free space grows with
	 * the length of its runs.
	 *   actual   = the sum of L * log2(L) over the free extents (split at
	 *              group boundaries, as bga_foreach_free reports them);
	 *   ideal    = the same for the free blocks packed into whole groups:
	 *              floor(F / G) * G * log2(G) + r * log2(r), F free blocks,
	 *              G = blocks_per_group, r = F mod G;
	 *   terrible = 0 (every free block alone).
	 * score = (ideal - actual) / ideal: 0 when all free space lies in the
	 * longest runs possible, 1 when it is all single blocks; 0 when ideal
	 * is 0 (fewer than two free blocks).
	 */
	double frag_score;
	/* lock contention, summed over slots, and the busiest slot */
	uint64_t lock_acquisitions, lock_contended, lock_wait_ns;
	uint32_t lock_slots, busiest_slot;
	uint64_t busiest_slot_contended;
	/* reservation windows: allocations through a handle served from its
	 * window (hits) against all allocations through a handle, failed
	 * ones included.  A handle counts its hits itself and adds them here
	 * at its next allocation that its window does not serve, and at its
	 * close: until then both lag by the hits since (at most one window's
	 * worth of allocations per open handle); with every handle closed
	 * they are exact. */
	uint64_t rsv_hits, rsv_allocs;
	double rsv_hit_ratio;
	uint64_t rsv_windows_open; /* handles open (bga_rsv_open minus close) */
	/* blocks windows hold that no allocation took (free: counted in
	 * free_blocks and the histogram) */
	uint64_t rsv_window_blocks;
	/* blocks waiting on a deferred free, and their extents: one per
	 * group a deferred free spans, as a commit releases them */
	uint64_t deferred_blocks, deferred_extents;
	uint64_t last_committed_txn;
	/* descriptors whose free count a load recomputed from the bitmap */
	uint64_t groups_repaired;
};

/*
 * Report a volume's statistics.  *st gets its sizes, free-extent
 * histogram, fragmentation score, lock contention, windows and deferred
 * frees (the fields of struct bga_stats).  Walks every initialised group under its
 * lock, so it costs O(touched groups); figures are a consistent snapshot
 * per group, not across groups while other threads run.
 *
 * Returns: 0.
 * Errors:
 *  -EINVAL  vol or st is NULL.
 *  -ENOMEM  its scratch map could not be allocated, or a lazily loaded
 *           volume's unread bitmaps could not be read into memory.
 * Threads: any thread.  Reads every unread chunk first (grow_lock); then
 *   takes one group lock at a time; the counter's fold lock.
 */
BGA_EXTERN int bga_stats(struct bga_volume *vol, struct bga_stats *st);

/*
 * Report one group-lock slot's statistics.  *out gets its acquisitions,
 * contended acquisitions, time waited and failed trylocks (struct
 * bga_lock_stats, of <bgalloc/locktab.h>).  Approximate while other threads run.
 *
 * Returns: 0.
 * Errors:
 *  -EINVAL  vol or out is NULL, or slot >= lock_slots.
 * Threads: any thread; takes no lock.
 */
struct bga_lock_stats;
BGA_EXTERN int bga_lock_stats(struct bga_volume *vol, uint32_t slot, struct bga_lock_stats *out);

struct bga_check_report {
	int violations;   /* number found (the walk goes on after the first) */
	uint64_t group;   /* group of the first violation, or UINT64_MAX */
	uint64_t block;   /* block involved, or UINT64_MAX */
	char message[160]; /* the first violation in words; "" when clean */
};

/*
 * Check every invariant of a volume.  Each bitmap's popcount against its group's free
 * count; the sum of group free counts against the free counter (exact);
 * the group index against each group's summary; nothing below
 * first_data_block or past the end marked free; windows disjoint and
 * inside their groups; every pending deferred block marked allocated;
 * reserved <= free.
 * Run while other threads allocate, free, commit, reserve or grow, it
 * reads each group under that group's lock and never reports a false
 * per-group or index violation (bitmap against count, longest run, index
 * and chunk-summary bits, windows, pending blocks, spans).  Only its two
 * cross-group comparisons, the groups' summed free count against the
 * counter and reserved against free, add up figures taken at different
 * instants and may report a difference that no instant had; they are
 * reported after every per-group finding (report->group UINT64_MAX).
 * report may be NULL.
 *
 * Returns: 0 when every invariant holds.
 * Errors:
 *  -EUCLEAN an invariant does not hold (*report says which).
 *  -EINVAL  vol is NULL.
 *  -ENOMEM  a lazily loaded volume's unread bitmaps could not be read
 *           into memory (nothing checked).
 * Threads: any thread.  Reads every unread chunk first (grow_lock); then
 *   takes one group lock at a time; the counter's fold lock.
 */
BGA_EXTERN int bga_check(struct bga_volume *vol, struct bga_check_report *report);

/* ---- persistence (lib/persist/persist.c, lib/persist/persist_load.c, docs/FORMAT.md) ---- */

/*
 * The caller's I/O over a metadata area, for bga_store() and bga_load().
 * Offsets are bytes from the area's start.  Each
 * callback returns 0 or a negative errno (a positive return reads as
 * -EIO).  Between two flush calls the library assumes writes may reach
 * the device in any order, any subset may be lost, and a write may land in
 * part (each 512-byte sector is atomic); flush returns once every write
 * before it is durable.  Reads of never-written bytes must return zeros or
 * old contents, and must not fail.  The library calls one io from one
 * thread at a time per volume (stores are serialised; lazy bitmap reads
 * take the same lock).  A lazy read runs in whichever thread first touches
 * a chunk (any call on the volume), with internal locks held: callbacks
 * must not call back into bgalloc for that volume.
 */
struct bga_io {
	void *ctx;
	int (*read)(void *ctx, void *buf, size_t len, uint64_t off);
	int (*write)(void *ctx, const void *buf, size_t len, uint64_t off);
	int (*flush)(void *ctx);
};

/* bga_load_ex flags */
enum {
	BGA_LOAD_STRICT = 1u << 0,   /* any quarantined group fails the load with -EUCLEAN */
	BGA_LOAD_PREFETCH = 1u << 1, /* read every bitmap ahead in the background (see bga_prefetch) */
};

/*
 * Compute the bytes of metadata area a volume needs.  nblocks,
 * blocks_per_group and first_data_block of *cfg are read; the area for a
 * volume that will grow must be sized for the size it grows to.
 *
 * Returns: 0, with the size in *bytes.
 * Errors:
 *  -EINVAL  cfg or bytes is NULL, or a geometry bga_create rejects.
 * Threads: any thread; takes no lock.
 */
BGA_EXTERN int bga_metadata_size(const struct bga_config *cfg, uint64_t *bytes);

/*
 * Store the volume's allocation state through io, crash-atomically.  If the
 * machine stops at any point, the next bga_load gives exactly the state of
 * the previous completed store or exactly this one's (docs/FORMAT.md says
 * how: per-group copy-on-write slots and an A/B superblock generation).
 * A return of 0 comes after the new superblock's flush: the stored state
 * is durable, and a caller may bga_commit what it stored.
 *
 * What is stored: which blocks are allocated, and the configuration.
 * Blocks that reservation windows hold but no allocation took are free,
 * and so are those a bga_trim holds claimed for its discard (no caller
 * owns either);
 * blocks waiting on a deferred free are allocated (the journal rule: a
 * file system stores, makes its own metadata durable, then calls
 * bga_commit); reservations (bga_reserve) and windows are not stored.
 *
 * Other threads may allocate and free throughout: the stored state is
 * the volume's state at one instant during the call (the store copies the
 * groups it writes with every group lock held, briefly, then writes from
 * the copies with no lock held).  Concurrent bga_store calls are
 * serialised.  bga_grow waits for the copy.
 *
 * Incremental: after a completed store to the same io (same ctx and
 * callbacks, and the area still holds that store), only groups changed
 * since are written (about bitmap bytes + 512 per changed group, plus
 * 512).  The first store to an area, or to another io, formats it: every
 * group's descriptor and every initialised group's bitmap, and one flush
 * pair.  A crash during a format leaves the area unloadable or, over an
 * older image, that image with damaged (quarantined) groups.
 *
 * The first store after bga_load, through the io the volume was loaded
 * with (the same ctx and callbacks; a copy of the struct will do), is not
 * a format: it builds on the loaded image, incrementally or, when the
 * load found slots a failed store left or repaired a group, as a full
 * store that rewrites every descriptor sector while keeping the loaded
 * records beside the new ones.  Either way it is crash-atomic: a crash
 * at any point loads the loaded state or the new one.  Only a store
 * through another io (another ctx: a second bga_io_file_open of the same
 * file is one) formats the area, with the risk above.
 *
 * The metadata area must hold bga_metadata_size() bytes for the volume's
 * current size.
 *
 * Returns: 0, once the stored state is durable.
 * Errors:
 *  -EINVAL  NULL vol or io, or a NULL callback.
 *  -ENOMEM  the copies could not be allocated; nothing written.
 *  -EIO     a callback returned a positive value.  A callback's own
 *           negative errno is returned as it is.  Either way the previous
 *           completed store is still loadable, and a later store retries.
 * Threads: any thread.  Stores are serialised by the store lock; the copy
 *   holds grow_lock and every group lock at once, briefly; the callbacks
 *   run with no group lock held, under the io lock.
 */
BGA_EXTERN int bga_store(struct bga_volume *vol, const struct bga_io *io);

/*
 * Load a stored volume from the metadata area behind io.  cfg NULL:
 * geometry and tuning from the image; otherwise cfg's nblocks,
 * blocks_per_group and first_data_block must equal the image's (-EINVAL)
 * and its tuning fields (lock kind and slots, counter batch, windows,
 * flags) apply.
 *
 * Validation: no superblock at all (neither slot holds bgalloc's magic:
 * an area no store ever completed in, an empty file, other data, or the
 * wrong offset): -ENODATA.  A superblock that is damaged or absurd, a
 * truncated area, or damage that no group explains: -EUCLEAN.  Either
 * way nothing is allocated.  A group whose descriptor or bitmap
 * fails its checksum is quarantined: counted as used, never allocated
 * from, frees touching it fail with -EUCLEAN, reported by bga_check and
 * counted in bga_stats.groups_quarantined; with BGA_LOAD_STRICT the load
 * fails with -EUCLEAN instead.  A descriptor whose free count disagrees
 * with its (valid) bitmap is recomputed from the bitmap
 * (bga_stats.groups_repaired).  No input makes the load crash, hang or
 * allocate more than the geometry it passed needs.
 *
 * Bitmaps are read lazily, when their chunk of 2048 groups is first
 * touched (an allocation or free there; bga_check, bga_stats,
 * bga_foreach_free, bga_trim, bga_grow and a store to another io read
 * everything first), or all at once with bga_prefetch, BGA_LOAD_PREFETCH
 * (a background thread) or BGA_LOAD_STRICT (at load).  So io and its ctx
 * must stay valid until bga_destroy of the loaded volume.  Free counts are
 * exact from the start (taken from the descriptors), but space is promised
 * only once its bitmap is read (bga_reserve).  A read error on a lazy read
 * quarantines the groups it could not read.
 *
 * The loaded volume's last committed txn (bga_stats.last_committed_txn)
 * is the image's: the last bga_commit before the store that wrote it.
 * Blocks that waited on deferred frees at that store are allocated, with
 * no deferred free pending.  A store through the same io next is not a
 * format (see bga_store).
 *
 * Returns: 0, with *out set to the loaded volume.
 * Errors:
 *  -EINVAL  NULL io, out or callback, or cfg disagreeing with the image.
 *  -ENODATA no superblock at all.
 *  -EUCLEAN a damaged or absurd superblock, a truncated area, or damage
 *           no group explains.
 *  -ENOMEM  the volume could not be allocated.
 *  -EIO     a read callback returned a positive value; a callback's own
 *           negative errno is returned as it is.
 * Threads: any thread; the new volume is the caller's alone until the
 *   call returns.  Reads run under the io lock.
 */
BGA_EXTERN int bga_load(const struct bga_io *io, const struct bga_config *cfg, struct bga_volume **out);

/*
 * Load a stored volume, with flags.  As bga_load(), and flags may hold
 * BGA_LOAD_STRICT (any quarantined group fails the load with -EUCLEAN)
 * and BGA_LOAD_PREFETCH (every bitmap is read ahead by a background
 * thread, as bga_prefetch() would).
 *
 * Returns: 0, with *out set to the loaded volume.
 * Errors:
 *  -EINVAL  as bga_load(), or unknown flags.
 *  -ENODATA no superblock at all.
 *  -EUCLEAN as bga_load(), or, with BGA_LOAD_STRICT, any quarantined
 *           group.
 *  -ENOMEM  the volume, or the prefetch thread, could not be had.
 *  -EIO     a read callback returned a positive value; a callback's own
 *           negative errno is returned as it is.
 * Threads: as bga_load(); with BGA_LOAD_PREFETCH, a background thread
 *   reads chunks (under grow_lock and the io lock) until it is done or
 *   the volume is destroyed.
 */
BGA_EXTERN int bga_load_ex(const struct bga_io *io, const struct bga_config *cfg, uint32_t flags,
                           struct bga_volume **out);

/*
 * Read every not-yet-read bitmap of a loaded volume now.  What it could
 * not read into memory stays unread, to be read at its next touch; the
 * groups it could not read for an I/O error are quarantined.
 *
 * Returns: 0.
 * Errors:
 *  -EINVAL  vol is NULL.
 *  -ENOMEM  a chunk could not be read into memory.
 *  -EIO     a read callback returned a positive value; a callback's own
 *           negative errno is returned as it is.
 * Threads: any thread, concurrently with anything but bga_destroy.
 *   Takes grow_lock and the io lock for each chunk it reads.
 */
BGA_EXTERN int bga_prefetch(struct bga_volume *vol);

/*
 * Open a file-backed bga_io for any embedder.  The metadata area is the
 * bytes [base, ...) of the file at path (created with O_CREAT when create
 * is non-zero), read and written with pread/pwrite, flushed with
 * fdatasync.  Reads past the file's end read zeros.  On any error but
 * -EINVAL, *io is zeroed, so closing it is harmless.  Each call makes a
 * new ctx: a store through it to an area another io stored formats it
 * (bga_store).
 *
 * Returns: 0, with *io ready.
 * Errors:
 *  -EINVAL  path or io is NULL.
 *  -ENOMEM  its context could not be allocated.
 *  -ENOENT  (and any other errno open(2) sets) the file could not be
 *           opened, as open(2) says.
 * Threads: any thread; takes no lock.
 */
BGA_EXTERN int bga_io_file_open(const char *path, uint64_t base, int create, struct bga_io *io);

/*
 * Close a file-backed bga_io and zero *io.  A zeroed io is ignored.
 * Close only after bga_destroy of any volume loaded from it.
 *
 * Returns: nothing.
 * Errors: none.
 * Threads: no other call may use the io.
 */
BGA_EXTERN void bga_io_file_close(struct bga_io *io);

/*
 * Name an error code returned by this library.  The name is the errno's
 * and a few words, as "ENOSPC: no space ...".  err may be negative or
 * positive.  An errno the library only
 * passes through (an io callback's, open's) is named as glibc names it
 * ("ENOENT: No such file or directory"); a number no one names is
 * "unknown error".
 *
 * Returns: a static string, never NULL, never freed or changed.
 * Errors: none.
 * Threads: any thread; takes no lock.
 */
BGA_EXTERN const char *bga_strerror(int err);

/*
 * Report the configuration a volume runs with.  Defaults are resolved,
 * and nblocks is the current size.
 *
 * Returns: 0, with the configuration in *out.
 * Errors:
 *  -EINVAL  vol or out is NULL.
 * Threads: any thread; takes no lock.
 */
BGA_EXTERN int bga_volume_config(const struct bga_volume *vol, struct bga_config *out);

/* ---- added in 0.3.0: calls every embedder wrote by hand, clearer names, the store's tag ---- */

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
 *  -ENOMEM  the records, or a group's pending map, could not be
 *           allocated (all are allocated before anything changes).
 * Threads: any thread.  Holds every group lock of the set at once, taken
 *   in ascending slot order (as bga_free_vec); grow_lock first, to install
 *   chunks.
 */
BGA_EXTERN int bga_free_deferred_vec(struct bga_volume *vol, const struct bga_extent *ext, size_t n, uint64_t txn);

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

/*
 * Find the longest free run of the volume, exactly.  It is the longest
 * extent that bga_foreach_free would report (so split at group
 * boundaries, window remainders counted as free), in *len; *group
 * (optional) gets the lowest-numbered group holding a run that long
 * (UINT64_MAX when *len is 0).  A request (bga_alloc) with a min_len up
 * to *len can then be served as one extent (for the part that windows
 * hold, once they are given back, which happens before any -ENOSPC),
 * unless the free space is promised to reservations (bga_reserve); one
 * with a larger min_len fails with -ENOSPC or -EAGAIN.  Cheap where the
 * group index knows the answer: it measures the groups holding windows,
 * then the groups the index places in the highest order, and stops as
 * soon as no other group can hold a longer run: usually a few groups, at
 * most every group.  Exact while nothing else changes the volume; under
 * concurrent calls each group is measured at one instant.
 *
 * Returns: 0, with *len (and *group) set.
 * Errors:
 *  -EINVAL  NULL vol or len.
 *  -ENOMEM  its scratch map could not be allocated, or a lazily loaded
 *           volume's unread bitmaps could not be read into memory
 *           (*len untouched).
 * Threads: any thread.  Reads every unread chunk first (grow_lock); then
 *   takes one group lock at a time.
 */
BGA_EXTERN int bga_longest_free_sum(struct bga_volume *vol, uint64_t *len, uint64_t *group);

/*
 * Bound the longest free run outside windows, from the group index alone.
 * No lock is taken and no group looked at: O(orders x chunks of the
 * index).  No group holds a free run longer than the answer outside its
 * windows' remainders (2^(k+1) - 1 for the highest order k the index
 * holds, capped at blocks_per_group); a request for more needs blocks
 * that windows hold, or fails.  The answer may exceed the true run (the
 * index keeps each group's longest run as an upper bound, and by powers
 * of two); bga_longest_free_sum() is exact.  While a lazily loaded volume
 * has bitmaps not read yet (bga_load) with free blocks in them, the index
 * does not speak for those groups, and the answer is blocks_per_group.
 *
 * Returns: the bound; 0 for NULL vol, or when no group has a free block
 *   outside windows.
 * Errors: none.
 * Threads: any thread; takes no lock.
 */
BGA_EXTERN uint64_t bga_longest_free_read(const struct bga_volume *vol);

/* struct bga_group_stats.flags */
enum {
	BGA_GSTAT_INITIALISED = 1u << 0, /* the group has a bitmap in memory */
	BGA_GSTAT_QUARANTINED = 1u << 1, /* a load found it damaged: wholly used, never allocated from */
	BGA_GSTAT_TRIMMED = 1u << 2,     /* bga_trim discarded its free runs and nothing was freed since */
};

/*
 * One group's figures (bga_group_stats).  Growable without a symbol
 * version: the caller sets `size` to sizeof(struct bga_group_stats) as
 * its header has it, and the library fills that many bytes at most (the
 * fields it knows), then sets `size` to the bytes it filled.  A field
 * added later is appended, so a program built against this header keeps
 * working with a newer library, and one built against a newer header
 * sees `size` smaller than its struct from an older library.
 */
struct bga_group_stats {
	uint32_t size;            /* in: the caller's sizeof; out: the bytes filled */
	uint32_t flags;           /* BGA_GSTAT_* */
	uint64_t group;           /* the group number asked for */
	uint64_t first_block;     /* its first block: group * blocks_per_group */
	uint64_t span_blocks;     /* its blocks that can be handed out (not below
	                             first_data_block, not past nblocks) */
	uint64_t free_blocks;     /* free, as bga_free_blocks_sum counts: window
	                             remainders included */
	uint64_t longest_run;     /* the longest free run, exactly (as
	                             bga_longest_free_sum measures) */
	uint64_t longest_run_hint; /* what the group index keeps: an upper bound
	                             of the longest free run outside windows */
	uint64_t window_blocks;   /* blocks windows hold that no allocation took */
	uint64_t windows;         /* windows booked in the group now */
	uint64_t deferred_blocks; /* blocks waiting on a deferred free */
	uint32_t lock_slot;       /* the group's slot in the lock table (shared
	                             with other groups: see bga_lock_stats) */
	uint32_t reserved0;       /* 0 */
	/* the slot's counters (<bgalloc/locktab.h>), for every group that shares it */
	uint64_t lock_acquisitions, lock_contended, lock_wait_ns;
};

/*
 * Report one group's free blocks, longest run, windows and lock contention.
 * Fills *st for group `group`: its free blocks, longest run (exact, and
 * the index's bound), windows, pending deferred frees and its lock slot's
 * contention, read under the group's lock: one consistent instant of the
 * group (the lock figures are the slot's, and move on their own).  A
 * group nothing touched yet is reported wholly free without being made; a
 * lazily loaded volume's group whose bitmap is not read yet is read
 * first.  On an error *st is left as it was.
 *
 * Returns: 0, with *st filled up to st->size bytes and st->size set to
 *   the bytes filled.
 * Errors:
 *  -EINVAL  NULL vol or st, st->size below the size of this first layout
 *           (112 bytes: offsetof lock_wait_ns + 8), or group >= the
 *           number of groups.
 *  -ENOMEM  its scratch map could not be allocated, or the group's bitmap
 *           could not be read into memory (a lazily loaded volume).
 * Threads: any thread.  Takes the group's lock once (and grow_lock first
 *   to read an unread chunk).
 */
BGA_EXTERN int bga_group_stats(struct bga_volume *vol, uint64_t group, struct bga_group_stats *st);

/*
 * Count free blocks approximately: the clearer name of bga_free_estimate().
 * A count, not a free (`_read`: approximate, as bga_counter_read); the
 * old name stays.
 *
 * Alias of: bga_free_estimate.
 */
BGA_EXTERN uint64_t bga_free_blocks_read(const struct bga_volume *vol);

/*
 * Count free blocks exactly: the clearer name of bga_free_exact().  A
 * count, not a free (`_sum`: exact, as bga_counter_sum); the old name
 * stays.
 *
 * Alias of: bga_free_exact.
 */
BGA_EXTERN uint64_t bga_free_blocks_sum(struct bga_volume *vol);

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

/*
 * Store the volume, as bga_store(), with the caller's transaction tag.
 * The tag is a number the library never interprets (an engine's journal
 * sequence number, a commit id), so that after a crash the engine knows
 * which of its transactions the image matches and what to replay.  Same
 * contract and crash atomicity as bga_store(), and the tag goes with the
 * state: a load (bga_volume_tag of the loaded volume) gives this tag once
 * the call returned 0, and after a crash or an error during it the tag of
 * whichever store's state the load gives, this one's or the previous
 * completed store's.  bga_store() itself stores the volume's current tag
 * (bga_volume_tag) again.
 *
 * Returns: 0, once the stored state and its tag are durable.
 * Errors:
 *  -EINVAL  NULL vol or io, or a NULL callback.
 *  -ENOMEM  the copies could not be allocated; nothing written.
 *  -EIO     a callback returned a positive value.  A callback's own
 *           negative errno is returned as it is.  Either way the previous
 *           completed store, and its tag, are still loadable, and
 *           bga_volume_tag is unchanged.
 * Threads: any thread.  As bga_store: stores are serialised by the store
 *   lock; the copy holds grow_lock and every group lock at once, briefly.
 */
BGA_EXTERN int bga_store_tagged(struct bga_volume *vol, const struct bga_io *io, uint64_t tag);

/*
 * Get the caller's tag of the image the volume matches (bga_store_tagged).
 * It is the one given to the volume's last bga_store_tagged() that
 * returned 0 (a bga_store() keeps it), or, before any, the tag of the
 * image it was loaded from: 0 for an image stored without one (by
 * bga_store only, or by a release before 0.3.0) and for a volume made by
 * bga_create().
 *
 * Returns: 0, with *tag set.
 * Errors:
 *  -EINVAL  NULL vol or tag.
 * Threads: any thread; takes no lock.
 */
BGA_EXTERN int bga_volume_tag(const struct bga_volume *vol, uint64_t *tag);

#ifdef __cplusplus
}
#endif

#endif
