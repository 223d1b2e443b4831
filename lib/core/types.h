/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_TYPES_H
#define BGA_TYPES_H

/*
 * The volume's internal structs, with their invariants and the lock rules
 * of every path (types.h); group operations are in group.h, the
 * prototypes shared between lib/ files in internal.h.  Nothing here is
 * public.
 *
 * Lock order (outermost first; checked in BGA_DEBUG builds, lockdep.h):
 *   the store lock    (bga_persist.lock, bga_store only; persist.h)
 *   vol->commit_lock  (bga_commit only)
 *   vol->grow_lock    (bga_grow, and chunk installs: bga__chunk_ensure)
 *   group locks, taken in ascending lock-table slot order when several are
 *     held (a free spanning groups); allocation holds one at a time
 *   leaves, which hold no other lock: the counter's fold lock, and the
 *     persistence io_lock, taken around every io callback (a lazy bitmap
 *     read runs under grow_lock: the one user callback made with a
 *     library lock held; bgalloc.h says so)
 * So a chunk is installed before any group lock is taken: lookups under a
 * group lock (bga__group_lookup) never allocate and never wait for a grow.
 * No group lock is ever held while calling back into the user.
 */

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include <bgalloc.h>
#include <bgalloc/bitmap.h>
#include <bgalloc/counter.h>
#include <bgalloc/locktab.h>

#include "compiler.h"
#include "counter_impl.h"
#include "cpu.h"
#include "locktab_impl.h"
#include "lockdep.h"

/* Groups are kept in chunks of 2^BGA_CHUNK_SHIFT descriptors, allocated on
 * first touch, so memory follows the groups used, not the volume size. */
#define BGA_CHUNK_SHIFT 12
#define BGA_CHUNK_GROUPS (1u << BGA_CHUNK_SHIFT)
#define BGA_CHUNK_WORDS (BGA_CHUNK_GROUPS / 64)

/* Orders 0 .. 20: blocks_per_group is at most 2^20. */
#define BGA_ORDERS 21
#define BGA_MAX_BPG (1u << 20)
/* At most 2^32 groups, so the chunk directory stays small. */
#define BGA_MAX_GROUPS (UINT64_C(1) << 32)

struct bga_dfree;
struct bga_actx;
struct bga_chunk;
struct bga_volume;

/*
 * What the core asks of persistence, which sits a layer above it: the
 * persistence code sets vol->store_hooks once the volume has persistence
 * state (its first store or load).  Before that every answer is the
 * trivial one (nothing pending, nothing to fill or free), which is what
 * the accessors in internal.h return for a NULL table.  A table, not
 * calls, so that no core file calls up a layer (scripts/callcycles.py).
 */
struct bga_store_hooks {
	/* A fresh chunk c, before it is published (grow_lock held, no group
	 * lock): fill its groups from the image when a lazy load left it
	 * pending.  0 or -ENOMEM (the chunk then stays unread). */
	int (*chunk_fill)(struct bga_volume *vol, struct bga_chunk *ch, uint64_t c);
	/* Read every chunk a lazy load left pending (no lock held): 0, or
	 * -ENOMEM when one could not be built and is still pending. */
	int (*settle)(struct bga_volume *vol);
	/* Is the missing chunk c pending (not wholly free)? */
	bool (*pending)(const struct bga_volume *vol, uint64_t c);
	/* bga_destroy: stop a prefetch thread first, free the state last. */
	void (*quiesce)(struct bga_volume *vol);
	void (*destroy)(struct bga_volume *vol);
};

/*
 * A window: blocks of one group that a handle (rsv.c) or a CPU (its
 * locality window, search.c's alloc_local) took from the group in one locked step
 * and hands out without the group's lock (window.c, after ext4's
 * preallocations).  Blocks [start, cur) went to the owner's allocations
 * and are theirs now; the remainder [cur, end) is marked used in the
 * group's bitmap but charged to nobody: it counts as free (bga_free_exact,
 * bga_check, the store) and is taken back before any -ENOSPC.
 *
 * `span` packs cur, end, a frozen bit and a generation (window.c); it is
 * the one field that changes without the group lock: an owner advances
 * cur with a CAS, a thief (reclaim, exact goal) lowers end with a CAS
 * under the group lock.  group and start change only while the window is
 * unlinked, or, for a locality window, with the generation bumped, so a
 * CAS that succeeds read the group its span belongs to.
 *
 * Linked into its group's list (unsorted) while `linked`; the list and
 * `linked` change under the group lock, and only by the owner (or the
 * volume's destroy).  Remainders of different windows never overlap: each
 * was free when booked.
 */
struct bga_window {
	/* Read by other threads under the group lock (list walks, frees,
	 * placement), and written only under it: a line apart from `span`,
	 * which the owner's takes write at every allocation, so that those
	 * readers do not pull the owner's line away (and it not theirs). */
	struct bga_window *next;
	uint64_t group;   /* atomic for locality windows */
	uint32_t start;
	uint32_t end;     /* span's end, copied at every change of it (all under the
			   * group lock): what a locked reader looks at instead of span */
	uint32_t slice;   /* where a booking looks first in a group other than the goal's */
	uint32_t stored;  /* cur when the last store copied the group (persist.c), under
			   * every group lock */
	bool linked;
	uint64_t span __attribute__((aligned(BGA_CACHELINE))); /* atomic: see window.h */
};

/* Rarely used per-group state, allocated on first use. */
/* A run of blocks in one group: offset and length. */
struct bga_run {
	uint32_t off, len;
};

/*
 * The runs one trim has claimed in a group for its discard (walk.c):
 * marked used and charged like an allocation, but owned by no caller, so
 * a store writes them as free (persist.c), as it does window remainders.
 * Linked into its group's list, under the group lock, from the claim to
 * the give-back; the record and its runs live on the trim's side.
 */
struct bga_trim_claim {
	struct bga_trim_claim *next;
	const struct bga_run *runs;
	size_t n;
};

struct bga_group_ext {
	struct bga_window *windows; /* linked windows, unsorted; under the group lock */
	struct bga_trim_claim *claims;   /* trims' claims while they discard; under the group lock */
	struct bga_dfree *dfree;    /* pending deferred frees in this group */
	uint64_t *pending;          /* blocks_per_group bits: set iff a block is in dfree;
				     * made with the first record, so a free checks
				     * for pending blocks in O(words), not O(records) */
	uint32_t dfree_blocks;      /* blocks in dfree */
};

enum {
	BGA_GROUP_TRIMMED = 1u << 0, /* trimmed and not freed into since */
	/* persist.c: failed its checksum at load; wholly used, no bitmap,
	 * never allocated from or freed into (-EUCLEAN) */
	BGA_GROUP_QUARANTINED = 1u << 1,
	/* persist.c: changed since the last store copied it; set with every
	 * change of `free` (the flags share its line, which the change writes
	 * anyway) */
	BGA_GROUP_DIRTY = 1u << 2,
	/* search.c: a window booking's first pass (a run with room for the
	 * largest window) found none here, and nothing was freed into the
	 * group or unlinked from it since: the next first pass skips it
	 * (its second pass, any run, does not).  Cleared with every change
	 * that can make room: a release (bga__group_freed_locked and the
	 * whole-group release), a window's unlink, a grow. */
	BGA_GROUP_NO_ROOM = 1u << 3,
};

/*
 * One block group.  Every field is written under the group's lock.
 * `free` and `max_run` are also read without it (relaxed atomics) by the
 * group index search and the statistics, which treat them as hints.
 *
 * Invariants (checked by bga_check and BGA_ASSERT):
 *  - the usable span is [lo, hi): lo from first_data_block, hi kept here
 *    so that a grow changes it under the lock, and every reader of the
 *    group, whatever geometry it holds, sees the span the bitmap has;
 *  - bitmap == NULL  =>  free == 0 or free == span (hi - lo): the group is
 *    wholly used or wholly free;
 *  - bitmap != NULL  =>  popcount(bitmap) == blocks_per_group - free, and
 *    every bit outside [lo, hi) is set;
 *  - max_run >= the longest free run: an upper bound, exact after a
 *    recompute, and 0 when free is 0.  It may exceed free: allocations
 *    leave it alone (keeping it tight cost a store and often an index
 *    update per allocation), so a free that lands in a long run finds it
 *    large enough already and skips its merge scan.  A search it misleads
 *    recomputes it (bga__group_refresh_locked);
 *  - the group index holds bit k for this group iff max_run >= 2^k.
 */
struct bga_group {
	uint64_t *bitmap;
	uint32_t free;
	uint32_t max_run;
	uint32_t flags;
	uint32_t hi; /* end of the usable span (offset); see bga__grp_span */
	struct bga_group_ext *ext;
};

/*
 * A chunk: descriptors for BGA_CHUNK_GROUPS consecutive groups and, per
 * order k, one bit per group that is set iff the group's max_run >= 2^k.
 * Bits are flipped with atomic or/and so readers never lock.
 */
struct bga_chunk {
	uint64_t bits[BGA_ORDERS][BGA_CHUNK_WORDS];
	/*
	 * Summary rechecks in flight (groupidx.c summary_recheck): while it is
	 * non-zero, a summary bit of this chunk may read clear for a moment
	 * although one of its groups has the order's bit.  bga_check waits
	 * for it to drain before it calls that a violation.
	 */
	uint32_t clearing;
	uint64_t dfree[BGA_CHUNK_WORDS]; /* groups holding pending deferred frees (atomic) */
	uint64_t wins[BGA_CHUNK_WORDS];  /* groups that may hold windows (atomic; window.c) */
	struct bga_group groups[BGA_CHUNK_GROUPS];
};

/*
 * The chunk directory (chunkdir.c), in segments that never move.  A
 * segment of n chunks (n a multiple of 64) is n chunk pointers followed
 * by its maps, BGA_DIR_MAPS of them, n/64 words each, one bit per chunk;
 * every word is atomic:
 *  - chunk pointer NULL: the chunk is untouched, all its groups full-size
 *    and wholly free;
 *  - map k < BGA_ORDERS, the index's summary of order k: bit set iff the
 *    chunk may hold a group with max_run >= 2^k (a missing chunk counts
 *    as all-free groups): groupidx.c;
 *  - BGA_DIR_DFREE, BGA_DIR_WINS: the chunk's dfree or wins map has a
 *    bit set (groupset.h).
 */
enum { BGA_DIR_DFREE = BGA_ORDERS, BGA_DIR_WINS, BGA_DIR_MAPS };
/* Chunks of the largest volume; segments that hold them when segment 0
 * has 64 chunks, each later one as many as all before: 1 + log2(2^20 / 64). */
#define BGA_DIR_MAX_CHUNKS (BGA_MAX_GROUPS / BGA_CHUNK_GROUPS)
#define BGA_DIR_CHUNKS0 64 /* the least segment 0 holds: one word per map */
#define BGA_DIR_SEGS 15

/*
 * Geometry, published with RCU (urcu-bp) so bga_grow() can change it while
 * other threads allocate: readers take urcu_bp_read_lock() and use one
 * consistent snapshot for the whole call.
 */
struct bga_geom {
	uint64_t nblocks;
	uint64_t ngroups;
	uint64_t nchunks;
	uint64_t capacity; /* nblocks - first_data_block */
	struct bga_geom *retired; /* ThreadSanitizer builds: kept until destroy */
};

/*
 * Per-CPU placement hints, one padded line each: they are written on
 * allocations, and two CPUs' hints in one line would make every such
 * write a cross-CPU miss.  Hints only: a thread may migrate between
 * reading and writing its CPU's entry, so the fields are relaxed atomics
 * and any value they hold is safe.
 */
struct bga_percpu {
	uint64_t home;       /* where BGA_NO_GOAL allocations look first */
	uint64_t steer_from; /* a goal group whose lock this CPU found busy ... */
	uint64_t steer_to;   /* ... and the block it allocates from instead */
	uint32_t steer_left; /* allocations before steer_from is tried again */
	uint32_t steer_len;  /* what steer_left started from (see note_result) */
	uint32_t steer_since; /* unsteered allocations aimed at steer_from since
			       * the CPU came back to it, up to 64 */
	/* allocations through a window handle on this CPU, and those its
	 * window served: statistics kept per CPU so that counting them never
	 * moves a shared line (bga_stats sums them) */
	uint64_t rsv_allocs, rsv_hits;
	/* blocks and extents that deferred frees on this CPU added, minus
	 * those commits on it released: their sums over the CPUs are the
	 * pending totals (bga__dfree_pending), which no shared line holds */
	int64_t dfree_blocks, dfree_extents;
	/* handles opened and closed on this CPU (their difference, summed,
	 * is bga_stats' rsv_windows_open) */
	uint64_t rsv_opened, rsv_closed;
	/* the CPU's locality window (window.h; booked by search.c) and the flag that lets one
	 * thread at a time book it */
	struct bga_window local;
	uint32_t local_booking;
} __attribute__((aligned(BGA_CACHELINE)));

struct bga_volume {
	struct bga_config cfg;   /* resolved; nblocks is the creation size */
	uint32_t bpg_shift;      /* log2(blocks_per_group) when a power of two, else 0 */
	uint32_t max_order;      /* floor(log2(blocks_per_group)) */
	/* the largest min_len the fast paths serve: blocks_per_group, or
	 * stripe - 1 with a stripe (a request of whole stripes must look for
	 * an aligned run first: search.c) */
	uint32_t fast_min;
	/* BGA_START_FULL: groups below this (the creation size) start wholly
	 * used (group.c); 0 otherwise */
	uint64_t full_groups;
	struct bga_geom *geom;   /* RCU-protected */
	/*
	 * geom->nblocks as of the last completed grow, read without RCU by
	 * the fast paths of bga_alloc and bga_free: a grow stores it (release)
	 * after it has published the new geometry and opened its groups, and
	 * sizes only grow, so every block below it exists, in an open group,
	 * in every geometry a reader can hold.  Anything at or past it goes
	 * to the RCU path, which decides on the geometry itself.
	 */
	uint64_t nblocks_floor;
	struct bga_geom *retired; /* see bga__geom_retire */

	/*
	 * The chunk directory (chunkdir.c).  Segment 0 (dir0, dir0_chunks
	 * chunks, a power of two >= 64) is sized at create for the volume's
	 * chunks; segment s >= 1 holds chunks [dir0_chunks << (s-1),
	 * dir0_chunks << s), made by a grow that needs it.  dirseg[0] ==
	 * dir0.  Segments and dir_chunks are written under grow_lock only,
	 * before any geometry that reaches into them is published, so a
	 * reader that indexes a chunk of its geometry finds its segment.
	 */
	struct bga_chunk **dir0;
	uint64_t dir0_chunks;
	uint32_t dir0_shift;     /* log2(dir0_chunks) */
	struct bga_chunk **dirseg[BGA_DIR_SEGS]; /* atomic */
	uint64_t dir_chunks;     /* atomic: chunks the segments hold */

	/* Group locks, one per lock-table slot: third in the lock order (after
	 * commit_lock and grow_lock), several held only in ascending slot order. */
	struct bga_locktab *locks;
	/* Blocks allocated (including those waiting on deferred frees) plus
	 * blocks reserved; never above geom->capacity (add_limited). */
	struct bga_counter *used;

	struct bga_percpu *cpu; /* ncpu entries */
	unsigned ncpu;

	pthread_mutex_t grow_lock;   /* serialises bga_grow and chunk installs; second in the
				      * lock order: never taken with a group lock held */
	pthread_mutex_t commit_lock; /* serialises bga_commit; first in the lock order */

	struct bga_persist *persist; /* persist.c: NULL until the first store or load */
	/* What the core asks of persistence (struct bga_store_hooks): NULL
	 * until the volume has persistence state; atomic (acquire). */
	const struct bga_store_hooks *store_hooks;
	/*
	 * Atomic: the free blocks that the descriptors of the chunks a lazy
	 * load has not read yet claim.  Until its chunk is read, a group is
	 * charged to `used` whole, as if allocated, so nothing is promised
	 * on space no bitmap has vouched for (bga_reserve's rule): the read
	 * then only gives back what it verified, and a group it quarantines
	 * or repairs downwards takes nothing from a promise.  Free-space
	 * reports add it back (bga_free_exact, bga_free_estimate).
	 */
	uint64_t unverified;

	/*
	 * Written while the volume runs, each on a line of its own (the
	 * volume is allocated line-aligned): beside the read-mostly fields
	 * above, every write would make every other CPU miss on them.
	 * rsv_seq shared a line with win_chunks, so each handle opened on
	 * one CPU cost the other CPU's next window booking a line transfer
	 * (BENCHMARKS.md, "Placement under many writers").
	 */
	uint64_t reserved __attribute__((aligned(BGA_CACHELINE)));       /* atomic */
	uint64_t last_committed __attribute__((aligned(BGA_CACHELINE))); /* atomic */
	uint64_t rsv_seq __attribute__((aligned(BGA_CACHELINE))); /* atomic: handles ever opened
								    * (their colours; rsv.c says why shared) */
	/* atomic: summary rechecks (groupidx.c), during which the index may
	 * miss a group for a moment: in flight in the low 32 bits, done in
	 * the high 32 */
	uint64_t idx_recheck_seq __attribute__((aligned(BGA_CACHELINE)));
};

/*
 * One allocation's state through the slow path.  Blocks are charged where
 * they are taken, under the group lock, for what was found
 * (bga__take_locked); nothing is charged before a run is found.
 */
struct bga_actx {
	/* What the core reads (charge.c, window.c, deferred.c). */
	const struct bga_geom *geo; /* the call's geometry (RCU) */
	uint32_t min, max;          /* min_len, and max_len capped at blocks_per_group
				     * (rounded down to a multiple of align) */
	uint32_t align;             /* 1, or the allocation unit: every extent starts at a
				     * multiple of it and is one long (req->align, or
				     * cfg.stripe for its first pass); min and max are
				     * multiples of it */
	bool reserved;              /* BGA_USE_RESERVED: draw on vol->reserved */
	uint32_t room;              /* a window booking's first pass: runs of at least
				     * this many, bar a file's continuation (search.c) */
	int stop;                   /* the status: set when the count, not the search,
				     * ruled the request out: -ENOSPC, or -EINVAL when
				     * fewer than min are reserved; every search stops */
	/* The route's own (lib/alloc; the core never reads these). */
	const struct bga_request *req; /* the request as the caller gave it */
	unsigned kind;                 /* enum bga_req_kind (alloc/route.h), decided once */
	uint64_t goal;                 /* the resolved goal: where the walk looks first */
	bool steered;                  /* the goal is where this CPU's steering sent it */
	bool goal_busy;                /* the goal's group was skipped: its lock was held */
	bool note;                     /* where the extent went moves the CPU's hints (steer.h) */
	struct bga_percpu *pc;         /* the calling CPU's hints (steering, its locality window) */
	struct bga_window *book;       /* the window being booked, or NULL */
	uint32_t wsize;                /* its size */
};

#endif
