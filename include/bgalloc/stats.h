/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGALLOC_STATS_H
#define BGALLOC_STATS_H

/*
 * Statistics: free-block counts, the longest free run, a volume's
 * figures, a group's and a lock slot's.
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
 * Find the longest free run of the volume, exactly.  It is the longest
 * extent that bga_foreach_free would report (so split at group
 * boundaries, window remainders counted as free), in *len; *group
 * (optional) gets the lowest-numbered group holding a run that long
 * (UINT64_MAX when *len is 0).  A request (bga_alloc) with a min_len up
 * to *len can then be served as one extent (for the part that windows
 * hold, once they are given back, which happens before any -ENOSPC),
 * unless the free space is promised to reservations (bga_reserve); one
 * with a larger min_len fails with -ENOSPC or -EAGAIN.  Cheap where the
 * group index knows the answer: it reads the groups holding windows,
 * then the groups the index places in the highest order, and stops as
 * soon as no other group can hold a longer run: usually a few groups, at
 * most every group.  Exact while nothing else changes the volume; under
 * concurrent calls each group is read at one instant.
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
 * of two); bga_longest_free_sum() is exact.  Every search that looks at
 * a group, failed ones included, tightens its bound to the run it
 * measured (never below the true run): a failed bga_alloc may lower the
 * answer, and that is what keeps a request that cannot be met from
 * looking at the same group again (bga_alloc).  While a lazily loaded volume
 * has bitmaps not read yet (bga_load) with free blocks in them, the index
 * does not speak for those groups, and the answer is blocks_per_group.
 *
 * Returns: the bound; 0 for NULL vol, or when no group has a free block
 *   outside windows.
 * Errors: none.
 * Threads: any thread; takes no lock.
 */
BGA_EXTERN uint64_t bga_longest_free_read(const struct bga_volume *vol);

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
	                             of the longest free run outside windows,
	                             tightened by every search that looks at the
	                             group, failed ones too (bga_longest_free_read) */
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

#ifdef __cplusplus
}
#endif

#endif
