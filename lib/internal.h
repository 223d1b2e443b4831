/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_INTERNAL_H
#define BGA_INTERNAL_H

/*
 * Internal layout of a volume and the prototypes shared between lib/
 * files; nothing here is public.
 *
 * Lock order (outermost first; checked in BGA_DEBUG builds, lockdep.h):
 *   vol->commit_lock  (bga_commit only)
 *   vol->grow_lock    (bga_grow, and chunk installs: bga__chunk_ensure)
 *   group locks, taken in ascending lock-table slot order when several are
 *     held (a free spanning groups); allocation holds one at a time
 *   the counter's internal fold lock (a leaf)
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

/*
 * A reservation window: blocks [start, end) of one group booked for one
 * handle.  Linked into its group's list, sorted by start; every field is
 * read and written under that group's lock.  Windows never overlap.
 */
struct bga_window {
	struct bga_window *next;
	uint64_t group;
	uint32_t start, end;
	uint32_t used; /* blocks the owner allocated from this window */
	bool linked;
};

/* Rarely used per-group state, allocated on first use. */
struct bga_group_ext {
	struct bga_window *windows; /* sorted by start, disjoint; under the group lock */
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
	struct bga_group groups[BGA_CHUNK_GROUPS];
};

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
} __attribute__((aligned(BGA_CACHELINE)));

struct bga_volume {
	struct bga_config cfg;   /* resolved; nblocks is the creation size */
	uint32_t bpg_shift;      /* log2(blocks_per_group) when a power of two, else 0 */
	uint32_t max_order;      /* floor(log2(blocks_per_group)) */
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
	 * The chunk directory and the per-order chunk summaries are sized for
	 * the largest volume this blocks_per_group allows and allocated with
	 * calloc, so untouched pages cost no memory and growth never moves
	 * them.  summary[k] bit c is set iff chunk c may hold a group with
	 * max_run >= 2^k (a missing chunk counts as all-free groups).
	 */
	struct bga_chunk **chunks;
	uint64_t *summary[BGA_ORDERS];
	uint64_t max_chunks;

	struct bga_locktab *locks;
	/* Blocks allocated (including those waiting on deferred frees) plus
	 * blocks reserved; never above geom->capacity (add_limited). */
	struct bga_counter *used;
	uint64_t reserved; /* atomic */

	struct bga_percpu *cpu; /* ncpu entries */
	unsigned ncpu;

	pthread_mutex_t grow_lock;   /* serialises bga_grow and chunk installs */
	pthread_mutex_t commit_lock; /* serialises bga_commit */
	uint64_t last_committed;     /* atomic */
	uint64_t dfree_blocks;       /* atomic: blocks waiting on deferred frees */
	uint64_t dfree_extents;      /* atomic */
	uint64_t *dfree_chunks;      /* atomic: chunks whose dfree map has a bit set (max_chunks bits) */

	uint64_t rsv_open; /* atomic: handles open */
	uint64_t rsv_seq;  /* atomic: handles ever opened (their colours) */

	struct bga_persist *persist; /* persist.c: NULL until the first store or load */
};

/* ---- geometry helpers ---- */

static inline uint64_t bga__group_of(const struct bga_volume *vol, uint64_t block)
{
	return vol->bpg_shift ? block >> vol->bpg_shift : block / vol->cfg.blocks_per_group;
}

static inline uint64_t bga__group_first(const struct bga_volume *vol, uint64_t g)
{
	return g * (uint64_t)vol->cfg.blocks_per_group;
}

/* The usable span [*lo, *hi) of group g, as offsets inside the group. */
static inline void bga__group_span(const struct bga_volume *vol, const struct bga_geom *geo, uint64_t g,
				   uint32_t *lo, uint32_t *hi)
{
	uint64_t first = bga__group_first(vol, g);
	uint64_t end = first + vol->cfg.blocks_per_group;
	if (end > geo->nblocks)
		end = geo->nblocks;
	*lo = first < vol->cfg.first_data_block ? (uint32_t)(vol->cfg.first_data_block - first) : 0;
	*hi = (uint32_t)(end - first);
	if (*lo > *hi)
		*lo = *hi;
}

/*
 * The usable span of a group as the group itself records it (grp may be
 * NULL for a group of an untouched chunk, which is always full-size).
 * Caller holds the group's lock, or the group is untouched.
 */
static inline void bga__grp_span(const struct bga_volume *vol, const struct bga_group *grp, uint64_t g,
				 uint32_t *lo, uint32_t *hi)
{
	uint64_t first = bga__group_first(vol, g);
	*hi = grp ? grp->hi : vol->cfg.blocks_per_group;
	*lo = first < vol->cfg.first_data_block ? (uint32_t)(vol->cfg.first_data_block - first) : 0;
	if (*lo > *hi)
		*lo = *hi;
}

static inline struct bga_chunk *bga__chunk_get(const struct bga_volume *vol, uint64_t c)
{
	return __atomic_load_n(&vol->chunks[c], __ATOMIC_ACQUIRE);
}

/*
 * First set bit at or after `from` in [0, nbits) of a bitmap whose words
 * other threads flip with atomic or/and while we read (the group index,
 * the pending-free maps): each word is one relaxed atomic load, so the
 * reads are well defined, and a word is only ever seen whole.  Returns
 * nbits when none.  The maps it reads are small (64 words a chunk, one
 * bit a chunk above), so word-at-a-time is enough here.
 */
static inline uint64_t bga__atomic_next_set(const uint64_t *map, uint64_t nbits, uint64_t from)
{
	while (from < nbits) {
		uint64_t w = __atomic_load_n(&map[from / 64], __ATOMIC_RELAXED) >> (from % 64);
		if (w) {
			from += (uint64_t)__builtin_ctzll(w);
			return from < nbits ? from : nbits;
		}
		from = (from | 63) + 1;
	}
	return nbits;
}

/* ---- words of a group bitmap ---- */

/*
 * Ranges inside one word are the common case (single blocks, small
 * extents): they are handled inline, ranges that cross words go to the
 * bitmap primitives.
 */
static inline bool bga__in_one_word(uint32_t off, uint32_t len)
{
	return off / 64 == (off + len - 1) / 64;
}

/* Mask of bits [off, off + len) of off's word; the range must not cross
 * a word (1 <= len <= 64 - off % 64). */
static inline uint64_t bga__word_mask(uint32_t off, uint32_t len)
{
	return (~UINT64_C(0) >> (64 - len)) << (off % 64);
}

/*
 * The first free run at or after `from` when from's own word decides it:
 * true with *start and *len set (min <= *len <= max) when a free bit at or
 * after `from` in that word starts a run of at least min that reaches max
 * or ends inside the word.  False means "look further", not "no run".
 * Bits past a group's span are set, so a run never leaves it.
 */
static inline bool bga__word_run(const uint64_t *map, uint32_t from, uint32_t min, uint32_t max, uint32_t *start,
				 uint32_t *len)
{
	uint32_t room = 64 - from % 64;
	uint64_t w = map[from / 64] >> (from % 64); /* the top from % 64 bits read as free: room caps them */
	uint32_t skip = ~w ? (uint32_t)__builtin_ctzll(~w) : 64;
	if (skip >= room)
		return false;
	w >>= skip;
	room -= skip;
	uint32_t run = w ? (uint32_t)__builtin_ctzll(w) : room;
	if (run < min || (run < max && run == room))
		return false;
	*start = from + skip;
	*len = run < max ? run : max;
	return true;
}

/* ---- group.c: one group, under its lock ---- */

/* Chunk c, made now for geometry geo if missing, with grow_lock held.
 * NULL on ENOMEM. */
struct bga_chunk *bga__chunk_create_locked(struct bga_volume *vol, const struct bga_geom *geo, uint64_t c);
/*
 * The chunk c, installed on first touch (taking grow_lock); NULL on
 * ENOMEM.  The caller must hold no group lock (the lock order above):
 * paths that may reach an untouched chunk call this first, then lock.
 */
struct bga_chunk *bga__chunk_ensure(struct bga_volume *vol, uint64_t c);
/* The chunk holding group g installed, as bga__chunk_ensure: 0 or -ENOMEM. */
static inline int bga__group_ensure(struct bga_volume *vol, uint64_t g)
{
	if (bga_likely(bga__chunk_get(vol, g >> BGA_CHUNK_SHIFT) != NULL))
		return 0;
	return bga__chunk_ensure(vol, g >> BGA_CHUNK_SHIFT) ? 0 : -ENOMEM;
}
/* Descriptor of g, whose chunk the caller knows to be installed (it ran
 * bga__group_ensure, or the group holds blocks, windows or pending
 * frees).  A lookup: it never allocates, so it is safe under any lock. */
static inline struct bga_group *bga__group_lookup(const struct bga_volume *vol, uint64_t g)
{
	struct bga_chunk *ch = bga__chunk_get(vol, g >> BGA_CHUNK_SHIFT);
	BGA_ASSERT(ch != NULL);
	return &ch->groups[g & (BGA_CHUNK_GROUPS - 1)];
}

/* Group g's lock: its slot of the hashed lock table. */
static inline void bga__group_lock(struct bga_volume *vol, uint64_t g)
{
	bga__lockdep_acquire(BGA_LOCKDEP_GROUP, bga_locktab_slot(vol->locks, g), true);
	bga__locktab_lock(vol->locks, g);
}

static inline bool bga__group_trylock(struct bga_volume *vol, uint64_t g)
{
	bool ok = bga__locktab_trylock(vol->locks, g);
	if (ok)
		bga__lockdep_acquire(BGA_LOCKDEP_GROUP, bga_locktab_slot(vol->locks, g), false);
	return ok;
}

static inline void bga__group_unlock(struct bga_volume *vol, uint64_t g)
{
	bga__lockdep_release(BGA_LOCKDEP_GROUP, bga_locktab_slot(vol->locks, g));
	bga__locktab_unlock(vol->locks, g);
}

/* The volume's two mutexes, with their places in the lock order. */
static inline void bga__grow_lock(struct bga_volume *vol)
{
	bga__lockdep_acquire(BGA_LOCKDEP_GROW, 0, true);
	pthread_mutex_lock(&vol->grow_lock);
}

static inline void bga__grow_unlock(struct bga_volume *vol)
{
	bga__lockdep_release(BGA_LOCKDEP_GROW, 0);
	pthread_mutex_unlock(&vol->grow_lock);
}

/*
 * Find a free run of min..max blocks in group g that starts at or after
 * offset `from`, inside the group's span.  With avoid_windows, runs that
 * overlap a window other than `own` are skipped or cut short at the
 * window (never below min).  Returns true and fills *off and *len.
 */
bool bga__group_find_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t from, uint32_t min,
			    uint32_t max, bool avoid_windows, const struct bga_window *own, uint32_t *off,
			    uint32_t *len);
/* Set max_run (and the index bits) to `run`. */
void bga__group_set_run_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t run);

/* Mark [off, off+len), free and inside one word of the group's bitmap,
 * used.  The longest run can only shrink: max_run stays an upper bound,
 * and drops to 0 with the last free block. */
static inline void bga__group_take_word_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g,
					       uint32_t off, uint32_t len)
{
	uint64_t m = bga__word_mask(off, len);
	BGA_ASSERT(!(grp->bitmap[off / 64] & m));
	grp->bitmap[off / 64] |= m;
	uint32_t free = grp->free - len;
	__atomic_store_n(&grp->free, free, __ATOMIC_RELAXED);
	grp->flags |= BGA_GROUP_DIRTY;
	if (free == 0)
		bga__group_set_run_locked(vol, grp, g, 0);
}

/* Mark [off, off+len) used.  The range must be free.  0 or -ENOMEM. */
int bga__group_take_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t off, uint32_t len);
/* The out-of-line rest of the three below (group.c). */
int bga__group_prepare_release_slow(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t off,
				    uint32_t len);
void bga__group_release_slow(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t off, uint32_t len);
bool bga__group_is_used_slow(const struct bga_volume *vol, const struct bga_group *grp, uint64_t g, uint32_t off,
			     uint32_t len);
/* A release raised free above max_run: look for the merged run's ends
 * next to [off, off+len) and raise max_run to cover it. */
void bga__group_merge_run_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t off,
				 uint32_t len);

/*
 * Make sure a later release of [off, off+len) cannot fail: a wholly used
 * group without a bitmap gets one now.  0 or -ENOMEM.  Callers run it on
 * every group of a range before changing any, so a free stays
 * all-or-nothing even when memory runs out.
 */
static inline int bga__group_prepare_release_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g,
						    uint32_t off, uint32_t len)
{
	if (bga_likely(grp->bitmap != NULL))
		return 0;
	return bga__group_prepare_release_slow(vol, grp, g, off, len);
}

/* The count, flag and run bookkeeping of a release of [off, off+len)
 * whose bits are already clear. */
static inline void bga__group_freed_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g,
					   uint32_t off, uint32_t len)
{
	if (bga_unlikely(grp->flags & BGA_GROUP_TRIMMED))
		grp->flags &= ~BGA_GROUP_TRIMMED;
	uint32_t free = grp->free + len;
	__atomic_store_n(&grp->free, free, __ATOMIC_RELAXED);
	grp->flags |= BGA_GROUP_DIRTY;
	/*
	 * Only the run that now holds the freed range can have grown, and
	 * max_run (an upper bound) usually covers it already: allocations
	 * leave max_run alone.
	 */
	if (grp->max_run < free)
		bga__group_merge_run_locked(vol, grp, g, off, len);
}

/* Mark [off, off+len) free.  The range must be used and prepared.  A
 * range inside one word of a bitmap is the inline case. */
static inline void bga__group_release_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g,
					     uint32_t off, uint32_t len)
{
	if (bga_likely(grp->bitmap != NULL && bga__in_one_word(off, len))) {
		uint64_t m = bga__word_mask(off, len);
		BGA_ASSERT((grp->bitmap[off / 64] & m) == m);
		grp->bitmap[off / 64] &= ~m;
		bga__group_freed_locked(vol, grp, g, off, len);
		return;
	}
	bga__group_release_slow(vol, grp, g, off, len);
}

/* True when every block of [off, off+len) is allocated. */
static inline bool bga__group_is_used_locked(const struct bga_volume *vol, const struct bga_group *grp, uint64_t g,
					     uint32_t off, uint32_t len)
{
	if (bga_likely(grp->bitmap != NULL && bga__in_one_word(off, len) && off + len <= grp->hi)) {
		uint64_t m = bga__word_mask(off, len);
		return (grp->bitmap[off / 64] & m) == m;
	}
	return bga__group_is_used_slow(vol, grp, g, off, len);
}
/* Recompute max_run exactly and update the index. */
void bga__group_refresh_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g);
/* Give a bitmap-less (wholly free or wholly used) group its bitmap.
 * 0 or -ENOMEM. */
int bga__group_materialise_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g);
/* The same with a caller-supplied map of blocks_per_group bits. */
void bga__group_fill_bitmap_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint64_t *map);
/*
 * Copy group g's map of used blocks into `map` (blocks_per_group bits, set
 * = used, every bit outside the span set), whatever its storage: grp NULL
 * is an untouched group, wholly free.  With commit_pending, blocks waiting
 * on deferred frees count as free (the state after a commit).  Caller
 * holds g's lock (or grp is NULL).  Returns the span end.
 */
uint32_t bga__group_copy_locked(const struct bga_volume *vol, const struct bga_group *grp, uint64_t g, uint64_t *map,
				bool commit_pending);
/* Allocate grp->ext if needed; NULL on ENOMEM. */
struct bga_group_ext *bga__group_ext_locked(struct bga_group *grp);
/* True when bit off of the group is set (used). */
bool bga__group_test_locked(const struct bga_volume *vol, const struct bga_group *grp, uint64_t g, uint32_t off);

/* ---- groupidx.c: the group index ---- */

/* Update group g's index bits from max_run old_run to new_run.  Caller
 * holds g's lock; g's chunk exists. */
void bga__idx_update(struct bga_volume *vol, uint64_t g, uint32_t old_run, uint32_t new_run);
/* Set summary bits for a freshly installed chunk. */
void bga__idx_chunk_installed(struct bga_volume *vol, uint64_t c);
/* Mark chunks [c0, c1) as untouched, all-free groups in the summary. */
void bga__idx_mark_untouched(struct bga_volume *vol, uint64_t c0, uint64_t c1);
/*
 * First group in [from, to) that may hold a free run of min_len blocks,
 * or `to` when none does.  Lock-free; the answer is a hint that the caller
 * checks under the group's lock, but it never misses a group whose index
 * bits were stable during the call.
 */
uint64_t bga__idx_next(const struct bga_volume *vol, uint64_t from, uint64_t to, uint64_t min_len);

/* ---- rsv.c / deferred.c ---- */

/* Overlap of [off, off+len) in group g with a pending deferred free.
 * Inline: range.c and deferred.c both ask, and range.c must not call
 * into deferred.c, which calls it. */
static inline bool bga__dfree_overlaps_locked(const struct bga_group *grp, uint32_t off, uint32_t len)
{
	return grp->ext->pending && !bga_bitmap_range_is_clear(grp->ext->pending, off, len);
}
/* Could a run of min_len exist (starting at `exact` unless BGA_NO_GOAL)
 * if pending deferred frees were committed? */
bool bga__dfree_would_fit(struct bga_volume *vol, const struct bga_geom *geo, uint64_t min_len, uint64_t exact);
/* Every pending block marked allocated?  Else *bad_off gets one. */
bool bga__dfree_check_locked(const struct bga_volume *vol, const struct bga_group *grp, uint64_t g, uint32_t *bad_off);
/* Write the records as (txn, off << 32 | len) pairs into out (cap words);
 * returns the words needed.  out may be NULL. */
size_t bga__dfree_dump_locked(const struct bga_group *grp, uint64_t *out, size_t cap);
/* Drop every pending record at destroy. */
void bga__dfree_destroy_group(struct bga_group *grp);

/* 1 when the handle books windows, 0 when its size is 0, -EINVAL when it
 * belongs to another volume. */
int bga__rsv_usable(const struct bga_volume *vol, const struct bga_rsv *rsv);
/* Take ac->min..ac->max blocks from the handle's own window, from `goal`
 * on, charged (charge.c).  False when it has no window or the window
 * cannot serve (then the window is dropped, and the handle's next window
 * will double when this one served its file well); ac->stop may be set. */
bool bga__rsv_take(struct bga_volume *vol, struct bga_actx *ac, struct bga_rsv *rsv, uint64_t goal,
		   struct bga_extent *out);
/* Where to book the handle's next window, and the window to book (its
 * size set) for bga__search; after bga__rsv_take failed. */
uint64_t bga__rsv_book(struct bga_volume *vol, const struct bga_geom *geo, struct bga_rsv *rsv, uint64_t goal,
		       struct bga_window **book);
/* The search booked the window and took `got` from it. */
void bga__rsv_booked(struct bga_rsv *rsv, const struct bga_extent *got);
/* Unlink every window of a group at destroy (handles stay valid to close). */
void bga__rsv_destroy_group(struct bga_group *grp);

/* ---- walk.c ---- */

/* Copy group g's free-space map (set = used) under its lock; returns the
 * span end; *initialised says whether the group had a bitmap. */
uint32_t bga__walk_copy(struct bga_volume *vol, uint64_t g, uint64_t *map, bool *initialised);
/* fn for each free run of at least min_len in [from, to) of map. */
int bga__walk_each_run(const uint64_t *map, uint32_t from, uint32_t to, uint64_t min_len,
		       int (*fn)(void *, uint32_t, uint32_t), void *arg);

/* ---- volume.c and grow.c ---- */

/* A geometry for nblocks blocks; NULL on ENOMEM. */
struct bga_geom *bga__geom_new(const struct bga_volume *vol, uint64_t nblocks);
/* Free a replaced geometry once no reader can hold it (grow.c). */
void bga__geom_retire(struct bga_volume *vol, struct bga_geom *old);

/*
 * One allocation's state through the slow path.  Blocks are charged where
 * they are taken, under the group lock, for what was found
 * (bga__take_locked); nothing is charged before a run is found.
 */
struct bga_actx {
	const struct bga_geom *geo; /* the call's geometry (RCU) */
	uint32_t min, max;          /* min_len, and max_len capped at blocks_per_group */
	bool reserved;              /* BGA_USE_RESERVED: draw on vol->reserved */
	int stop;                   /* set when the count, not the search, ruled the
				     * request out: -ENOSPC, or -EINVAL when fewer than
				     * min are reserved; every search stops at once */
};
/*
 * Charge *len blocks (cut down to no fewer than ac->min) for a run about to
 * be taken: to the used counter against the capacity, or out of
 * vol->reserved.  The caller holds the run's group lock.  0, or ac->stop
 * set and returned.
 */
int bga__charge_locked(struct bga_volume *vol, struct bga_actx *ac, uint32_t *len);
/*
 * The one place blocks are taken from a group for an allocation (the
 * search, exact goals, windows, trim): charge, then mark
 * [off, off + *len) used.  *len may come back shorter (no shorter than
 * ac->min).  0; ac->stop's code; -ENOMEM with nothing charged or taken.
 */
int bga__take_locked(struct bga_volume *vol, struct bga_actx *ac, struct bga_group *grp, uint64_t g, uint32_t off,
		     uint32_t *len);
/* The inline first step of bga__charge_locked, for the fast path: charge
 * len to the used counter against cap through the counter's lock-free
 * path; false when that path cannot decide (nothing charged). */
static inline bool bga__charge_fast_locked(struct bga_volume *vol, int64_t cap, uint32_t len)
{
	return bga__counter_add_limited_fast(vol->used, len, cap);
}
/* search.c: bga_alloc after its fast path missed (validated request). */
int bga__alloc_slow(struct bga_volume *vol, const struct bga_request *req, struct bga_extent *out);
/*
 * Find and take a run of ac->min..ac->max blocks: goal's group from the
 * goal on, then the group index round the volume.  avoid: skip other
 * handles' windows.  book: link that window over the run found (see
 * rsv.c).  *goal_busy (optional) tells whether the goal's group was
 * skipped because its lock was held.  0, -ENOSPC, -ENOMEM or ac->stop.
 */
int bga__search(struct bga_volume *vol, struct bga_actx *ac, uint64_t goal, bool avoid, struct bga_window *book,
		struct bga_extent *out, bool *goal_busy);
/* The calling CPU's placement hints. */
static inline struct bga_percpu *bga__percpu(struct bga_volume *vol)
{
	unsigned cpu = bga__cpu_hint();
	/* As counter_my_slot: only a CPU hot-added past the configured set
	 * needs the (slow) division. */
	if (bga_unlikely(cpu >= vol->ncpu))
		cpu %= vol->ncpu;
	return &vol->cpu[cpu];
}
/* Where a BGA_NO_GOAL allocation on pc's CPU looks first, in a volume of
 * nblocks (a home past it is stale). */
static inline uint64_t bga__home(const struct bga_percpu *pc, uint64_t nblocks)
{
	uint64_t b = __atomic_load_n(&pc->home, __ATOMIC_RELAXED);
	return b < nblocks ? b : 0;
}
/* Link window w over [start, end) of group g, in start order.  0 or -ENOMEM. */
int bga__rsv_link_locked(struct bga_group *grp, uint64_t g, struct bga_window *w, uint32_t start,
			 uint32_t end);
void bga__rsv_unlink_locked(struct bga_group *grp, struct bga_window *w);

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

#endif
