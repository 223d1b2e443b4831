/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Frees that wait for a transaction commit: the ext3/ext4 journal rule
 * that blocks freed in a running transaction are not reused before it
 * commits (otherwise a crash could replay metadata that points at blocks
 * already holding new data).
 *
 * Records live in their group, under the group's lock, not in one global
 * list.  Two levels of bitmaps (chunk->dfree per group, the chunk
 * directory's BGA_DIR_DFREE map per chunk) say which groups hold records,
 * so a commit visits only those and memory stays in proportion to the
 * chunks touched.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rcu.h"

#include <bgalloc/bitmap.h>

#include "groupset.h"
#include "group.h"
#include "percpu.h"
#include "charge.h"
#include "deferred.h"
#include "range.h"
#include "window.h"

struct bga_dfree {
	struct bga_dfree *next;
	uint64_t txn;
	uint32_t off, len;
};

void bga__dfree_destroy_group(struct bga_group *grp)
{
	struct bga_dfree *d = grp->ext->dfree;
	while (d) {
		struct bga_dfree *next = d->next;
		free(d);
		d = next;
	}
	grp->ext->dfree = NULL;
	free(grp->ext->pending);
	grp->ext->pending = NULL;
}

struct dfree_arg {
	uint64_t txn;
	struct bga_dfree *spare; /* records preallocated, one per group */
};

/* Group g (its chunk exists) holds records now, or none any more (its
 * lock held either way): the set of groups with records (groupset.h). */
static void mark_pending(struct bga_volume *vol, uint64_t g)
{
	bga__gset_add(vol, offsetof(struct bga_chunk, dfree), BGA_DIR_DFREE, g);
}

static void unmark_pending(struct bga_volume *vol, uint64_t g)
{
	bga__gset_remove(vol, offsetof(struct bga_chunk, dfree), BGA_DIR_DFREE, g);
}

/* The first group in [g, gend) that holds records, or gend. */
static uint64_t next_pending(const struct bga_volume *vol, uint64_t g, uint64_t gend)
{
	return bga__gset_next(vol, BGA_DIR_DFREE, offsetof(struct bga_chunk, dfree), g, gend);
}

static int dfree_fn(struct bga_volume *vol, const struct bga_geom *geo, struct bga_group *grp, uint64_t g,
		    uint32_t off, uint32_t n, bool commit, void *arg)
{
	struct dfree_arg *a = arg;
	(void)geo;
	if (!commit) {
		struct bga_group_ext *ext = bga__group_ext_locked(grp);
		if (ext && !ext->pending)
			ext->pending = calloc(BGA_BITMAP_WORDS(vol->cfg.blocks_per_group), sizeof(uint64_t));
		if (!ext || !ext->pending)
			return -ENOMEM;
		/* The commit releases what this records, and a release of part
		 * of a wholly used group needs its bitmap: made here (last, so
		 * that bga__range_apply_vec's undo of it is all a failure
		 * leaves to undo), so that a commit never needs memory
		 * (bgalloc.h, bga_commit). */
		return bga__group_prepare_release_locked(vol, grp, g, off, n);
	}
	struct bga_dfree *d = a->spare;
	a->spare = d->next;
	d->txn = a->txn;
	d->off = off;
	d->len = n;
	d->next = grp->ext->dfree;
	grp->ext->dfree = d;
	grp->ext->dfree_blocks += n;
	bga_bitmap_set_range(grp->ext->pending, off, n);
	mark_pending(vol, g);
	return 0;
}

/*
 * Record the sorted, checked extents v[0..n) (bga__extents_sorted) as
 * pending until txn commits, all or nothing: one record per group part,
 * all allocated before any lock is taken, then checked and recorded with
 * every group lock of the set held (bga__range_apply_vec).
 */
static int free_deferred_sorted(struct bga_volume *vol, const struct bga_geom *geo, const struct bga_extent *v,
				size_t n, uint64_t txn, uint64_t total)
{
	struct dfree_arg a = {.txn = txn, .spare = NULL};
	uint64_t parts = 0;
	int rc = 0;
	for (size_t i = 0; i < n; i++)
		parts += bga__group_of(vol, v[i].start + v[i].len - 1) - bga__group_of(vol, v[i].start) + 1;
	for (uint64_t i = 0; i < parts; i++) {
		struct bga_dfree *d = malloc(sizeof(*d));
		if (d == NULL) {
			rc = -ENOMEM;
			break;
		}
		d->next = a.spare;
		a.spare = d;
	}
	if (rc == 0)
		rc = bga__range_apply_vec(vol, geo, v, n, dfree_fn, &a);
	if (rc == 0) {
		/* Counted as the commit counts them: one extent per record. */
		struct bga_percpu *pc = bga__percpu(vol);
		__atomic_fetch_add(&pc->dfree.blocks, (int64_t)total, __ATOMIC_RELAXED);
		__atomic_fetch_add(&pc->dfree.extents, (int64_t)parts, __ATOMIC_RELAXED);
	}
	while (a.spare) {
		struct bga_dfree *next = a.spare->next;
		free(a.spare);
		a.spare = next;
	}
	return rc;
}

static bool txn_open(const struct bga_volume *vol, uint64_t txn)
{
	return txn != 0 && txn > __atomic_load_n(&vol->last_committed, __ATOMIC_ACQUIRE);
}

int bga_free_deferred(struct bga_volume *vol, uint64_t start, uint64_t len, uint64_t txn)
{
	if (vol == NULL || !txn_open(vol, txn))
		return -EINVAL;
	urcu_bp_read_lock();
	const struct bga_geom *geo = bga_rcu_load(vol->geom);
	struct bga_extent e = {start, len};
	int rc = bga__range_check(vol, geo, start, len);
	if (rc == 0)
		rc = free_deferred_sorted(vol, geo, &e, 1, txn, len);
	urcu_bp_read_unlock();
	return rc;
}

int bga_free_deferred_vec(struct bga_volume *vol, const struct bga_extent *ext, size_t n, uint64_t txn)
{
	if (vol == NULL || ext == NULL || n == 0 || !txn_open(vol, txn))
		return -EINVAL;
	urcu_bp_read_lock();
	const struct bga_geom *geo = bga_rcu_load(vol->geom);
	struct bga_extent *v = NULL;
	uint64_t total = 0;
	int rc = bga__extents_sorted(vol, geo, ext, n, &v, &total);
	if (rc == 0)
		rc = free_deferred_sorted(vol, geo, v, n, txn, total);
	urcu_bp_read_unlock();
	free(v);
	return rc;
}

/*
 * Release group g's records with txn <= `txn`.  Returns blocks released;
 * *extents gets the number of records.
 */
/*
 * A commit freed blocks in group g, the lowest at offset `lowest`: a CPU
 * whose next-fit place (percpu.h, struct bga_pack) lies in g above it
 * forgets its place, so that its next file fills from its home's start
 * and the holes the commit opened below the place are filled first
 * (<bgalloc/alloc.h>, where a request looks, 2).  Places elsewhere stay:
 * a commit that freed nothing behind a CPU's place, or nothing at all,
 * opened no hole that next fit would pass over, and the files that CPU
 * writes go on in the order they came (forgotten at every commit, a
 * package's files were split wherever a commit fell among them: debs's
 * end score, BENCHMARKS.md#placement-on-recorded-histories).  Written
 * only where cleared, so that a commit does not move the lines of CPUs
 * it leaves alone.
 */
static void next_fit_forget(struct bga_volume *vol, uint64_t g, uint32_t lowest)
{
	for (unsigned i = 0; i < vol->ncpu; i++) {
		uint64_t next = __atomic_load_n(&vol->cpu[i].pack.next, __ATOMIC_RELAXED);
		if (next == 0)
			continue;
		struct bga_gpos at = bga__gpos(vol, next);
		if (at.g == g && lowest < at.off)
			__atomic_store_n(&vol->cpu[i].pack.next, 0, __ATOMIC_RELAXED);
	}
}

static uint64_t commit_group(struct bga_volume *vol, uint64_t g, uint64_t txn, uint64_t *extents)
{
	uint64_t released = 0;
	uint32_t lowest = UINT32_MAX;
	bga__group_lock(vol, g);
	struct bga_group *grp = bga__group_lookup(vol, g); /* it holds pending frees */
	struct bga_dfree **pp = &grp->ext->dfree;
	while (*pp) {
		struct bga_dfree *d = *pp;
		if (d->txn > txn) {
			pp = &d->next;
			continue;
		}
		*pp = d->next;
		/* The deferred free gave the group the bitmap a partial release
		 * needs (dfree_fn), and bitmaps are never dropped: this cannot
		 * fail.  Should it, the record waits for the next commit. */
		int prepared = bga__group_prepare_release_locked(vol, grp, g, d->off, d->len);
		BGA_ASSERT(prepared == 0);
		if (prepared != 0) {
			d->next = *pp;
			*pp = d;
			pp = &d->next;
			continue;
		}
		bga__group_release_locked(vol, grp, g, d->off, d->len);
		bga_bitmap_clear_range(grp->ext->pending, d->off, d->len);
		grp->ext->dfree_blocks -= d->len;
		released += d->len;
		lowest = BGA_MIN(lowest, d->off);
		(*extents)++;
		free(d);
	}
	if (grp->ext->dfree == NULL)
		unmark_pending(vol, g);
	bga__group_unlock(vol, g);
	if (released)
		next_fit_forget(vol, g, lowest);
	return released;
}

int bga_commit(struct bga_volume *vol, uint64_t txn)
{
	if (vol == NULL || txn == 0)
		return -EINVAL;
	bga__lockdep_acquire(BGA_LOCKDEP_COMMIT, 0, true);
	pthread_mutex_lock(&vol->commit_lock);
	if (txn < __atomic_load_n(&vol->last_committed, __ATOMIC_ACQUIRE)) {
		bga__lockdep_release(BGA_LOCKDEP_COMMIT, 0);
		pthread_mutex_unlock(&vol->commit_lock);
		return -EINVAL;
	}
	/* Publish first: deferred frees for txn <= this one are refused from
	 * now on, so none can slip in behind the walk. */
	__atomic_store_n(&vol->last_committed, txn, __ATOMIC_SEQ_CST);
	urcu_bp_read_lock();
	const struct bga_geom *geo = bga_rcu_load(vol->geom);
	uint64_t released = 0, extents = 0;
	for (uint64_t g = 0; (g = next_pending(vol, g, geo->ngroups)) < geo->ngroups; g++)
		released += commit_group(vol, g, txn, &extents);
	urcu_bp_read_unlock();
	if (released) {
		bga_counter_add(vol->used, -(int64_t)released);
		struct bga_percpu *pc = bga__percpu(vol);
		__atomic_fetch_sub(&pc->dfree.blocks, (int64_t)released, __ATOMIC_RELAXED);
		__atomic_fetch_sub(&pc->dfree.extents, (int64_t)extents, __ATOMIC_RELAXED);
	}
	bga__lockdep_release(BGA_LOCKDEP_COMMIT, 0);
	pthread_mutex_unlock(&vol->commit_lock);
	return 0;
}

uint64_t bga__dfree_pending(const struct bga_volume *vol, uint64_t *extents)
{
	int64_t blocks = 0, ext = 0;
	for (unsigned i = 0; i < vol->ncpu; i++) {
		blocks += __atomic_load_n(&vol->cpu[i].dfree.blocks, __ATOMIC_RELAXED);
		ext += __atomic_load_n(&vol->cpu[i].dfree.extents, __ATOMIC_RELAXED);
	}
	if (extents)
		*extents = ext > 0 ? (uint64_t)ext : 0;
	return blocks > 0 ? (uint64_t)blocks : 0; /* a sum read while others move may dip */
}

/*
 * Free after the commit, for one group: the one definition that every
 * choice between -ENOSPC and -EAGAIN reads (bga__dfree_would_fit).
 * Group g's map (set = used) with three kinds of block shown free:
 *  - its free blocks;
 *  - its windows' remainders: nobody owns them, and any request takes
 *    them back before -ENOSPC (window.h), so the request retried after
 *    the commit gets them whether or not they were taken back before;
 *  - its blocks pending a deferred free, which the commit releases.
 * Blocks a trim holds for its discard are not free after the commit
 * (the trim, not the commit, gives them back).  Caller holds g's lock,
 * or grp is NULL (untouched, wholly free).  Returns the span end.
 */
static uint32_t copy_after_commit_locked(const struct bga_volume *vol, const struct bga_group *grp, uint64_t g,
					 uint64_t *map)
{
	uint32_t hi = bga__group_copy_locked(vol, grp, g, map, true);
	if (grp)
		bga__window_clear_held_locked(grp, map);
	return hi;
}

uint32_t bga__dfree_group_map(struct bga_volume *vol, uint64_t g, uint64_t *map, bool after_commit, bool windows)
{
	struct bga_chunk *ch = bga__chunk_get(vol, g >> BGA_CHUNK_SHIFT);
	struct bga_group *grp = ch ? &ch->groups[g & (BGA_CHUNK_GROUPS - 1)] : NULL;
	if (grp)
		bga__group_lock(vol, g);
	uint32_t hi = bga__group_copy_locked(vol, grp, g, map, after_commit);
	if (grp) {
		if (windows)
			bga__window_clear_held_locked(grp, map);
		bga__group_unlock(vol, g);
	}
	return hi;
}

uint64_t bga__dfree_next_group(const struct bga_volume *vol, uint64_t g, uint64_t end)
{
	return next_pending(vol, g, end);
}

/* Would group g hold the run asked for once its pending frees commit? */
static bool group_would_fit(struct bga_volume *vol, uint64_t g, uint64_t min_len, uint32_t align, uint64_t exact,
			    uint64_t *scratch)
{
	struct bga_chunk *ch = bga__chunk_get(vol, g >> BGA_CHUNK_SHIFT);
	struct bga_group *grp = ch ? &ch->groups[g & (BGA_CHUNK_GROUPS - 1)] : NULL;
	if (grp)
		bga__group_lock(vol, g);
	uint32_t hi = copy_after_commit_locked(vol, grp, g, scratch);
	bool fit;
	if (exact == BGA_NO_GOAL && align > 1) {
		/* an aligned run (absolute block numbers, as the search's) */
		uint64_t first = bga__group_first(vol, g), n;
		fit = false;
		for (uint64_t at = 0; !fit && at < hi;) {
			uint64_t pos = bga_bitmap_find_zero_run(scratch, hi, at, min_len, hi, &n);
			if (pos >= hi)
				break;
			uint64_t a0 = (first + pos + align - 1) / align * align - first;
			fit = a0 + min_len <= pos + n;
			at = pos + n;
		}
	} else if (exact == BGA_NO_GOAL) {
		fit = bga_bitmap_longest_zero_run(scratch, hi) >= min_len;
	} else {
		uint64_t off = exact - bga__group_first(vol, g), start;
		uint64_t run = bga_bitmap_zero_run_at(scratch, hi, off, &start);
		fit = run && start + run - off >= min_len;
	}
	if (grp)
		bga__group_unlock(vol, g);
	return fit;
}

/*
 * A run after the commit is made of free, window and pending blocks
 * (copy_after_commit_locked): one with a pending block lies in a group
 * with records, one with a window block in a group of the windows' set,
 * one of free blocks only in a group the index offers for min_len.  Those
 * three sets are looked at, in that order, and nothing else.
 */
bool bga__dfree_would_fit(struct bga_volume *vol, const struct bga_take *ac, uint64_t exact)
{
	uint64_t pending = bga__dfree_pending(vol, NULL), min_len = ac->min; /* reads every CPU's line */
	/* The count: the commit must leave min_len blocks unpromised to
	 * reservations (a reserved request brings its own promise).
	 * Window remainders are uncharged, so the unpromised count holds
	 * them already. */
	if (pending == 0 ||
	    (!ac->reserved && bga__unpromised(vol, ac->geo) + (int64_t)pending < (int64_t)min_len))
		return false;
	/* The run: pending blocks can join free ones and window blocks, so no
	 * count alone decides. */
	uint64_t *scratch = malloc(BGA_BITMAP_WORDS(vol->cfg.blocks_per_group) * sizeof(uint64_t));
	uint64_t n = ac->geo->ngroups;
	bool fit = false;
	if (scratch == NULL)
		return exact == BGA_NO_GOAL && pending >= min_len;
	if (exact != BGA_NO_GOAL) {
		fit = group_would_fit(vol, bga__group_of(vol, exact), min_len, ac->align, exact, scratch);
	} else {
		for (uint64_t g = 0; !fit && (g = next_pending(vol, g, n)) < n; g++)
			fit = group_would_fit(vol, g, min_len, ac->align, exact, scratch);
		for (uint64_t g = 0; !fit && (g = bga__window_next_group(vol, g, n)) < n; g++)
			fit = group_would_fit(vol, g, min_len, ac->align, exact, scratch);
		for (uint64_t g = 0; !fit && (g = bga__idx_next(vol, g, n, min_len)) < n; g++)
			fit = group_would_fit(vol, g, min_len, ac->align, exact, scratch);
	}
	free(scratch);
	return fit;
}

/* For the checker: every pending block must be marked allocated. */
bool bga__dfree_check_locked(const struct bga_volume *vol, const struct bga_group *grp, uint64_t g, uint32_t *bad_off)
{
	if (grp->ext == NULL)
		return true;
	for (const struct bga_dfree *d = grp->ext->dfree; d; d = d->next) {
		if (!bga__group_is_used_locked(vol, grp, g, d->off, d->len) ||
		    !bga_bitmap_range_is_set(grp->ext->pending, d->off, d->len)) {
			*bad_off = d->off;
			return false;
		}
	}
	/* ... and the pending map holds exactly the records' blocks. */
	if (grp->ext->pending &&
	    bga_bitmap_popcount(grp->ext->pending, 0, vol->cfg.blocks_per_group) != grp->ext->dfree_blocks) {
		*bad_off = 0;
		return false;
	}
	return true;
}

/* Group g's pending map (blocks_per_group bits, set = waiting on a
 * deferred free) into map: zeros when it has none.  Caller holds g's
 * lock, or grp is NULL (untouched). */
void bga__dfree_copy_pending_locked(const struct bga_volume *vol, const struct bga_group *grp, uint64_t *map)
{
	size_t words = BGA_BITMAP_WORDS(vol->cfg.blocks_per_group);
	if (grp && grp->ext && grp->ext->pending)
		memcpy(map, grp->ext->pending, words * sizeof(uint64_t));
	else
		memset(map, 0, words * sizeof(uint64_t));
}

/* For snapshots: records in list order. */
size_t bga__dfree_dump_locked(const struct bga_group *grp, uint64_t *out, size_t cap)
{
	size_t n = 0;
	for (const struct bga_dfree *d = grp->ext ? grp->ext->dfree : NULL; d; d = d->next) {
		if (out && n + 2 <= cap) {
			out[n] = d->txn;
			out[n + 1] = ((uint64_t)d->off << 32) | d->len;
		}
		n += 2;
	}
	return n;
}
