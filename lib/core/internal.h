/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_INTERNAL_H
#define BGA_INTERNAL_H

/*
 * Prototypes shared between lib/ files (bga__ names), grouped under the
 * file that defines them, with the two structs they pass between layers:
 * the hook table to persistence and the allocation context.  The layers, and which file may call which, are
 * in lib/README.md; make test checks both that no call goes up a layer
 * and that the files' call graph has no cycle (scripts/callcycles.py
 * --source lib --layers ..., which reads the inline headers too), so the
 * graph itself is printed by that script, not drawn here.  Steering is
 * inline (alloc/steer.h): the fast path runs it on every allocation.
 * Charging has a file of its own (charge.c), so that the route, the
 * windows and the walks take blocks through one function.
 */

#include "types.h"
#include "group.h"
#include "window.h"
#include "percpu.h"

/* ---- deferred.c ---- */

/* Overlap of [off, off+len) in group g with a pending deferred free.
 * Inline: range.c and deferred.c both ask, and range.c must not call
 * into deferred.c, which calls it. */
static inline bool bga__dfree_overlaps_locked(const struct bga_group *grp, uint32_t off, uint32_t len)
{
	return grp->ext->pending && !bga_bitmap_range_is_clear(grp->ext->pending, off, len);
}
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
bool bga__dfree_would_fit(struct bga_volume *vol, const struct bga_actx *ac, uint64_t exact);
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

/* ---- inspect/walk.c ---- */

/* One instant of a group, as a walk reads it under the group's lock. */
struct bga__group_view {
	bool initialised, quarantined, trimmed;
	uint32_t lo;       /* span start (first_data_block) */
	uint32_t max_run;  /* the index's bound (an untouched group: its span) */
	uint32_t held;     /* window remainders, shown free in the map */
	uint32_t windows;  /* windows linked */
	uint32_t deferred; /* blocks pending a deferred free */
};
/* bga__walk_copy (below) with the whole view, and the pending map into
 * `pending` (bpg bits) when not NULL. */
uint32_t bga__walk_view(struct bga_volume *vol, uint64_t g, uint64_t *map, uint64_t *pending,
			struct bga__group_view *v);
/* Copy group g's free-space map (set = used) under its lock, windows'
 * remainders shown free (*held of them); returns the span end;
 * *initialised says whether the group had a bitmap. */
uint32_t bga__walk_copy(struct bga_volume *vol, uint64_t g, uint64_t *map, bool *initialised, uint32_t *held);
/* fn for each free run of at least min_len in [from, to) of map. */
int bga__walk_each_run(const uint64_t *map, uint32_t from, uint32_t to, uint64_t min_len,
		       int (*fn)(void *, uint32_t, uint32_t), void *arg);

/* ---- persistence, through the hook table ---- */

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


static inline const struct bga_store_hooks *bga__store_hooks(const struct bga_volume *vol)
{
	return __atomic_load_n(&vol->store_hooks, __ATOMIC_ACQUIRE);
}
/*
 * Make "a missing chunk is wholly free" true: read every chunk a lazy
 * load left pending.  For the walks that read a missing chunk as free
 * (check, stats, foreach, trim, grow).  0, or -ENOMEM when a chunk could
 * not be built: then one is still pending, and the caller must not read
 * a missing chunk as free.  No lock may be held (chunk installs take
 * grow_lock).
 */
static inline int bga__chunks_settle(struct bga_volume *vol)
{
	const struct bga_store_hooks *h = bga__store_hooks(vol);
	return h ? h->settle(vol) : 0;
}
/* Is the missing chunk c pending a lazy read (so not wholly free)? */
static inline bool bga__chunk_pending(const struct bga_volume *vol, uint64_t c)
{
	const struct bga_store_hooks *h = bga__store_hooks(vol);
	return h && h->pending(vol, c);
}

/* ---- volume.c, grow.c ---- */

/* The geometry rules, once: bga_create's and the superblock's (0 or
 * -EINVAL). */
int bga__geometry_check(uint64_t nblocks, uint32_t bpg, uint64_t first);

/* A geometry for nblocks blocks; NULL on ENOMEM. */
struct bga_geom *bga__geom_new(const struct bga_volume *vol, uint64_t nblocks);
/* Free a replaced geometry once no reader can hold it, with the others
 * of its batch (grow.c); takes grow_lock, which the caller must not hold. */
#define BGA_GEOM_RETIRE_BATCH 32
void bga__geom_retire(struct bga_volume *vol, struct bga_geom *old);

/* ---- charge.c, and the allocation context it charges for ---- */

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
	bool whole;                    /* a bga_alloc_vec piece: one run for all of max first, and a
					* goal inside a free run moved to its start (search.c) */
	uint32_t fit;                  /* a file's first window's first pass: runs of at least
					* this many (0: ac->room's; search.c) */
	bool keep_windows;             /* a bga_alloc_vec piece that may not take other windows'
					* blocks back, even at its exact goal (search.c) */
};


/*
 * Charge *len blocks (cut down to no fewer than ac->min) for a run about to
 * be taken: to the used counter against the capacity, or out of
 * vol->reserved.  The caller holds the run's group lock.  0, or ac->stop
 * set and returned.
 */
int bga__charge_locked(struct bga_volume *vol, struct bga_actx *ac, uint32_t *len);
/* Give back a charge whose blocks were not taken. */
void bga__uncharge(struct bga_volume *vol, const struct bga_actx *ac, uint32_t len);
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
 * path; false when that path cannot decide (nothing charged).  cpu: the
 * caller's bga__cpu_hint(). */
static inline bool bga__charge_fast_locked(struct bga_volume *vol, unsigned cpu, int64_t cap, uint32_t len)
{
	return bga__counter_add_limited_fast_on(vol->used, cpu, len, cap);
}
/*
 * Blocks that nobody owns and nobody was promised, exactly: the capacity
 * minus the summed used count (allocations, blocks pending a deferred
 * free, reservations); never negative, as every charge is limited by the
 * capacity.
 */
static inline int64_t bga__unpromised(struct bga_volume *vol, const struct bga_geom *geo)
{
	return (int64_t)geo->capacity - bga_counter_sum(vol->used);
}
/*
 * After the count ruled something out: read a lazily loaded volume's
 * unread chunks (bga__chunks_settle), whose free blocks the count does
 * not promise until then (types.h, vol->unverified).  1 when they were
 * read (the caller decides again), 0 when there were none, -ENOMEM.  No
 * group lock may be held (chunk installs take grow_lock).
 */
static inline int bga__unverified_settle(struct bga_volume *vol)
{
	if (bga_likely(__atomic_load_n(&vol->unverified, __ATOMIC_ACQUIRE) == 0))
		return 0;
	int rc = bga__chunks_settle(vol);
	return rc ? rc : 1;
}

/*
 * The allocation unit's checks (bgalloc.h, struct bga_request.align):
 * align 0 or 1, or a power of two <= blocks_per_group that divides
 * min_len and max_len.  0 or -EINVAL.
 */
static inline int bga__align_check(const struct bga_volume *vol, const struct bga_request *req)
{
	uint64_t a = req->align;
	if (a <= 1)
		return 0;
	if ((a & (a - 1)) || a > vol->cfg.blocks_per_group || (req->min_len & (a - 1)) || (req->max_len & (a - 1)) ||
	    req->min_len > vol->cfg.blocks_per_group)
		return -EINVAL;
	return 0;
}
/* ---- range.c ---- */

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
/* The same over n extents, sorted by start and disjoint, each one group
 * part at a time (two extents may share a group: fn then sees it twice,
 * each time for its own part, every prepare before any commit). */
int bga__range_apply_vec(struct bga_volume *vol, const struct bga_geom *geo, const struct bga_extent *ext, size_t n,
			 bga__range_fn fn, void *arg);
/* A sorted copy of ext[0..n) (*sorted, to be freed) and its block total;
 * -EINVAL when an extent fails bga__range_check or two overlap, -ENOMEM. */
int bga__extents_sorted(struct bga_volume *vol, const struct bga_geom *geo, const struct bga_extent *ext, size_t n,
			struct bga_extent **sorted, uint64_t *total);
/* Free blocks the caller took itself and holds, ext[0..n) in any
 * order (bga_alloc_vec's undo): nothing checked, nothing allocated,
 * so it cannot fail; the blocks stay counted used for the caller to move
 * (uncharged, or given back to the reservation, so no other call can
 * take the promise meanwhile).  Locks: the caller holds none. */
void bga__free_pieces_charged(struct bga_volume *vol, const struct bga_extent *ext, size_t n);
/* ---- claim.c ---- */

/*
 * bga_claim of ext[0..n) (sorted, disjoint, inside geo, below which the
 * caller holds RCU), all or nothing, every group lock of them held at
 * once: window remainders in them taken back (bga__window_cut_out_locked),
 * charged to the used counter against the capacity, or with `reserved`
 * drawn from vol->reserved.  0; -EBUSY (a block allocated, pending or
 * held by a trim); -ENOSPC (the charge); -EUCLEAN; -EINVAL (a grow has
 * not opened it); -ENOMEM.  No group lock may be held.
 */
int bga__claim_vec(struct bga_volume *vol, const struct bga_geom *geo, const struct bga_extent *ext, size_t n,
		   bool reserved);
/* The group locks of a set of extents, held at once (range.c). */
#define BGA_RANGE_STACK_SLOTS 16
struct bga__range_locks {
	uint32_t stack[BGA_RANGE_STACK_SLOTS];
	uint32_t *slots;
	uint32_t n;
};
/* Lock every group of ext[0..n) (sorted, disjoint), each lock-table slot
 * once, in ascending slot order: the one place several group locks are
 * held.  0 or -ENOMEM (nothing locked). */
int bga__range_lock(struct bga_volume *vol, const struct bga_extent *ext, size_t n, struct bga__range_locks *l);
void bga__range_unlock(struct bga_volume *vol, struct bga__range_locks *l);

#endif
