/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Frees: bga_free, bga_free_vec, and the all-or-nothing walk over the
 * groups of a set of extents (bga__range_apply_vec) that they and
 * bga_free_deferred share, with the locking of such a set that bga_claim
 * uses too (bga__range_lock).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rcu.h"

#include "group.h"
#include "hooks.h"
#include "range.h"
#include "window.h"

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* Groups of the extents, each counted once per extent (extents are sorted
 * and disjoint, so two of them share a group only at their ends). */
static uint64_t groups_of(const struct bga_volume *vol, const struct bga_extent *ext, size_t n)
{
	uint64_t ng = 0;
	for (size_t i = 0; i < n; i++)
		ng += bga__group_of(vol, ext[i].start + ext[i].len - 1) - bga__group_of(vol, ext[i].start) + 1;
	return ng;
}

/*
 * Lock every slot that the groups of ext[0..n) map to, in ascending slot
 * order, each once (two groups may share a slot).  Everything else holds
 * at most one group lock, so this order cannot deadlock.
 */
int bga__range_lock(struct bga_volume *vol, const struct bga_extent *ext, size_t n, struct bga__range_locks *l)
{
	uint32_t nslots = bga_locktab_nslots(vol->locks), k = 0;
	uint64_t ng = groups_of(vol, ext, n);
	uint32_t cap = (uint32_t)BGA_MIN(ng, (uint64_t)nslots);
	l->slots = l->stack;
	if (cap > BGA_RANGE_STACK_SLOTS && (l->slots = malloc(cap * sizeof(*l->slots))) == NULL)
		return -ENOMEM;
	if (ng >= nslots) {
		for (uint32_t s = 0; s < nslots; s++)
			l->slots[k++] = s;
	} else {
		for (size_t i = 0; i < n; i++)
			for (uint64_t g = bga__group_of(vol, ext[i].start);
			     g <= bga__group_of(vol, ext[i].start + ext[i].len - 1); g++)
				l->slots[k++] = bga_locktab_slot(vol->locks, g);
		qsort(l->slots, k, sizeof(*l->slots), cmp_u32);
		uint32_t u = 0;
		for (uint32_t i = 0; i < k; i++)
			if (u == 0 || l->slots[u - 1] != l->slots[i])
				l->slots[u++] = l->slots[i];
		k = u;
	}
	for (uint32_t i = 0; i < k; i++) {
		bga__lockdep_acquire(BGA_LOCKDEP_GROUP, l->slots[i], true);
		bga_locktab_lock(vol->locks, l->slots[i]);
	}
	l->n = k;
	return 0;
}

void bga__range_unlock(struct bga_volume *vol, struct bga__range_locks *l)
{
	for (uint32_t i = l->n; i-- > 0;) {
		bga__lockdep_release(BGA_LOCKDEP_GROUP, l->slots[i]);
		bga_locktab_unlock(vol->locks, l->slots[i]);
	}
	if (l->slots != l->stack)
		free(l->slots);
}

/* The part of [start, start+len) inside group g, as group offsets. */
static void clip(const struct bga_volume *vol, uint64_t g, uint64_t start, uint64_t len, uint32_t *off,
		 uint32_t *n)
{
	uint64_t first = bga__group_first(vol, g), end = first + vol->cfg.blocks_per_group;
	uint64_t s = BGA_MAX(start, first), e = BGA_MIN(start + len, end);
	*off = (uint32_t)(s - first);
	*n = (uint32_t)(e - s);
}

int bga__range_check(struct bga_volume *vol, const struct bga_geom *geo, uint64_t start, uint64_t len)
{
	if (len == 0 || start >= geo->nblocks || len > geo->nblocks - start ||
	    start < vol->cfg.first_data_block)
		return -EINVAL;
	return 0;
}

/* Blocks of [off, off+n) pending a deferred free, or a window's: not
 * allocated.  Out of line: most groups have no ext, and the calls it may
 * make cost the inline path its registers. */
static __attribute__((noinline)) bool range_ext_conflict_locked(const struct bga_volume *vol, struct bga_group *grp,
								 uint32_t off, uint32_t n)
{
	return (grp->ext->dfree && bga__dfree_overlaps_locked(grp, off, n)) ||
	       (grp->ext->windows && bga__window_overlaps_locked(vol, grp, off, n));
}

/* The checks of bga__range_apply for one group, with its lock held. */
static inline __attribute__((always_inline)) int range_usable_locked(const struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t off, uint32_t n)
{
	/* A quarantined group (persist_load.c) has no bitmap: the test costs
	 * the fast path nothing it does not load already. */
	if (bga_unlikely(grp->bitmap == NULL && (grp->flags & BGA_GROUP_QUARANTINED)))
		return -EUCLEAN;
	if (!bga__group_is_used_locked(vol, grp, g, off, n))
		return -EINVAL;
	if (grp->ext && range_ext_conflict_locked(vol, grp, off, n))
		return -EINVAL;
	return 0;
}

/* The group parts of ext[0..n), in order: (g, off, cnt) for each. */
#define FOR_EACH_PART(vol, ext, n, i, g, off, cnt)                                                            \
	for (size_t i = 0; i < (n); i++)                                                                      \
		for (uint64_t g = bga__group_of(vol, (ext)[i].start),                                         \
			      g##_end = bga__group_of(vol, (ext)[i].start + (ext)[i].len - 1);                \
		     g <= g##_end && (clip(vol, g, (ext)[i].start, (ext)[i].len, &(off), &(cnt)), true); g++)

/*
 * Run `fn` over the extents ext[0..n) (sorted, disjoint, each checked with
 * bga__range_check) with every group lock of them held, after checking
 * all-or-nothing that every block is allocated and not waiting on a
 * deferred free.  Three passes: every part checked, then every part
 * prepared (`fn` with `commit` false, which may fail), then every part
 * committed (`fn` with `commit` true, which may not), so a failure changes
 * nothing: a prepare that gave a wholly used group a bitmap (a release's
 * need) is undone when a later one fails, and none runs before every
 * check has passed (a failed free of a BGA_START_FULL volume initialises
 * no group, issue 34).
 */
int bga__range_apply_vec(struct bga_volume *vol, const struct bga_geom *geo, const struct bga_extent *ext, size_t n,
			 bga__range_fn fn, void *arg)
{
	/* A range in untouched chunks is free by definition: reject it before
	 * allocating anything. */
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		uint64_t c0 = bga__group_of(vol, ext[i].start) >> BGA_CHUNK_SHIFT;
		uint64_t c1 = bga__group_of(vol, ext[i].start + ext[i].len - 1) >> BGA_CHUNK_SHIFT;
		for (uint64_t c = c0; c <= c1 && rc == 0; c++)
			if (bga__chunk_get(vol, c) == NULL) /* (a chunk a lazy load has not read yet is read now) */
				rc = !bga__chunk_pending(vol, c) ? -EINVAL : bga__chunk_ensure(vol, c) ? 0 : -ENOMEM;
	}
	/* The groups a prepare gave a bitmap, to undo on a later failure. */
	uint64_t stack[BGA_RANGE_STACK_SLOTS], *made = stack, nmade = 0, parts = groups_of(vol, ext, n);
	if (rc == 0 && parts > BGA_RANGE_STACK_SLOTS && (made = malloc(parts * sizeof(*made))) == NULL)
		rc = -ENOMEM;
	struct bga__range_locks locks;
	if (rc == 0 && (rc = bga__range_lock(vol, ext, n, &locks)) != 0 && made != stack)
		free(made);
	if (rc != 0)
		return rc;
	uint32_t off, cnt;
	FOR_EACH_PART(vol, ext, n, i, g, off, cnt)
	{
		if (rc == 0)
			rc = range_usable_locked(vol, bga__group_lookup(vol, g), g, off, cnt);
	}
	FOR_EACH_PART(vol, ext, n, i, g, off, cnt)
	{
		struct bga_group *grp = bga__group_lookup(vol, g);
		bool had = grp->bitmap != NULL;
		if (rc == 0 && (rc = fn(vol, geo, grp, g, off, cnt, false, arg)) == 0 && !had && grp->bitmap)
			made[nmade++] = g;
	}
	if (rc == 0) {
		FOR_EACH_PART(vol, ext, n, i, g, off, cnt)
		{
			int done = fn(vol, geo, bga__group_lookup(vol, g), g, off, cnt, true, arg);
			(void)done;
			BGA_ASSERT(done == 0);
		}
	} else {
		while (nmade-- > 0)
			bga__group_unmaterialise_locked(vol, bga__group_lookup(vol, made[nmade]), made[nmade]);
	}
	bga__range_unlock(vol, &locks);
	if (made != stack)
		free(made);
	return rc;
}

int bga__range_apply(struct bga_volume *vol, const struct bga_geom *geo, uint64_t start, uint64_t len,
		     bga__range_fn fn, void *arg)
{
	struct bga_extent e = {start, len};
	return bga__range_apply_vec(vol, geo, &e, 1, fn, arg);
}

static int free_fn(struct bga_volume *vol, const struct bga_geom *geo, struct bga_group *grp, uint64_t g,
		   uint32_t off, uint32_t n, bool commit, void *arg)
{
	(void)geo;
	(void)arg;
	if (!commit)
		return bga__group_prepare_release_locked(vol, grp, g, off, n);
	bga__group_release_locked(vol, grp, g, off, n);
	return 0;
}

static int cmp_extent(const void *a, const void *b)
{
	uint64_t x = ((const struct bga_extent *)a)->start, y = ((const struct bga_extent *)b)->start;
	return (x > y) - (x < y);
}

int bga__extents_sorted(struct bga_volume *vol, const struct bga_geom *geo, const struct bga_extent *ext, size_t n,
			struct bga_extent **sorted, uint64_t *total)
{
	struct bga_extent *v = malloc(n * sizeof(*v));
	if (v == NULL)
		return -ENOMEM;
	memcpy(v, ext, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp_extent);
	int rc = 0;
	uint64_t sum = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		rc = bga__range_check(vol, geo, v[i].start, v[i].len);
		if (rc == 0 && i > 0 && v[i - 1].start + v[i - 1].len > v[i].start)
			rc = -EINVAL; /* overlap */
		sum += v[i].len;
	}
	if (rc != 0) {
		free(v);
		return rc;
	}
	*sorted = v;
	*total = sum;
	return 0;
}

/* bga_free_vec() without its uncharge: the blocks are free in their
 * groups but still counted used, *total of them. */
static int free_vec_charged(struct bga_volume *vol, const struct bga_extent *ext, size_t n, uint64_t *total)
{
	urcu_bp_read_lock();
	const struct bga_geom *geo = bga_rcu_load(vol->geom);
	struct bga_extent *v = NULL;
	int rc = bga__extents_sorted(vol, geo, ext, n, &v, total);
	if (rc == 0)
		rc = bga__range_apply_vec(vol, geo, v, n, free_fn, NULL);
	urcu_bp_read_unlock();
	free(v);
	return rc;
}

int bga_free_vec(struct bga_volume *vol, const struct bga_extent *ext, size_t n)
{
	if (vol == NULL || ext == NULL || n == 0)
		return -EINVAL;
	/* One extent is bga_free's, checks and all: no copy to sort, no
	 * set of slots (a storage engine's whole request comes back as one
	 * extent; BENCHMARKS.md#at-a-storage-engines-allocation-unit). */
	if (n == 1)
		return bga_free(vol, ext->start, ext->len);
	uint64_t total = 0;
	int rc = free_vec_charged(vol, ext, n, &total);
	if (rc == 0)
		bga_counter_add(vol->used, -(int64_t)total);
	return rc;
}

/* A chunk that is not installed: a lazy load may not have read it yet
 * (read now); otherwise every group in it is untouched, wholly free. */
static __attribute__((noinline, cold)) struct bga_chunk *free_chunk_missing(struct bga_volume *vol, uint64_t c)
{
	return bga__chunk_pending(vol, c) ? bga__chunk_ensure(vol, c) : NULL;
}

/*
 * The checks, prepare and release of [off, off+n) in group g, with its
 * lock held: what bga__range_apply does for one group, without its
 * callbacks.  A range inside one word is decided there on that word
 * (bga__group_is_used_locked, bga__group_release_locked).  0, or -EINVAL,
 * -EUCLEAN or -ENOMEM with nothing changed.
 */
static int free_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t off, uint32_t n)
{
	int rc = range_usable_locked(vol, grp, g, off, n);
	if (rc == 0)
		rc = bga__group_prepare_release_locked(vol, grp, g, off, n);
	if (rc == 0)
		bga__group_release_locked(vol, grp, g, off, n);
	return rc;
}

/* bga_free of a range inside one group when bga_free's fast path could
 * not take it: the group's lock taken however it must be. */
static int free_in_group(struct bga_volume *vol, uint64_t g, uint32_t off, uint32_t n)
{
	struct bga_chunk *ch = bga__chunk_get(vol, g >> BGA_CHUNK_SHIFT);
	if (bga_unlikely(ch == NULL) && (ch = free_chunk_missing(vol, g >> BGA_CHUNK_SHIFT)) == NULL)
		/* an untouched group is wholly free; an unread one ran out of memory */
		return bga__chunk_pending(vol, g >> BGA_CHUNK_SHIFT) ? -ENOMEM : -EINVAL;
	struct bga_group *grp = &ch->groups[g & (BGA_CHUNK_GROUPS - 1)];
	struct locktab_slot *slot = bga__group_slot(vol, g);
	bga__group_lock_at(vol, g, slot);
	int rc = free_locked(vol, grp, g, off, n);
	bga__group_unlock_at(vol, g, slot);
	return rc;
}

/*
 * Give back ranges the caller took and still holds charged, ext[0..n) (an
 * all-or-nothing carve's pieces, vec.c), group part by group part with
 * nothing allocated, so that the give-back cannot fail (a failed call
 * changes nothing, out of memory or not): each part lies in a group with
 * a bitmap, or is the whole span of one without (a take gives a group a
 * bitmap unless it takes all of it), and neither release needs one made.
 * The blocks stay charged: the caller uncharges them, or gives them back
 * to the reservation.  No group lock may be held.
 */
void bga__free_pieces_charged(struct bga_volume *vol, const struct bga_extent *ext, size_t n)
{
	uint32_t off, cnt;
	FOR_EACH_PART(vol, ext, n, i, g, off, cnt) {
		int rc = free_in_group(vol, g, off, cnt);
		(void)rc;
		BGA_ASSERT(rc == 0);
	}
}

/* bga_free of anything the fast path in bga_free does not take: a range
 * that crosses groups or reaches past the floor, under RCU. */
static __attribute__((noinline)) int free_slow(struct bga_volume *vol, uint64_t start, uint64_t len, uint64_t g,
					       uint32_t off)
{
	bool one_group = len != 0 && len <= vol->cfg.blocks_per_group - off;
	urcu_bp_read_lock();
	const struct bga_geom *geo = bga_rcu_load(vol->geom);
	int rc = bga__range_check(vol, geo, start, len);
	if (rc == 0)
		rc = one_group ? free_in_group(vol, g, off, (uint32_t)len)
			       : bga__range_apply(vol, geo, start, len, free_fn, NULL);
	urcu_bp_read_unlock();
	if (rc == 0)
		bga__counter_add(vol->used, -(int64_t)len);
	return rc;
}

/* bga_free of everything its fast path leaves: the old way in, by one
 * group's lock taken however it must be, or by the range walk. */
static __attribute__((noinline)) int free_other(struct bga_volume *vol, uint64_t start, uint64_t len)
{
	uint64_t g = bga__group_of(vol, start);
	uint32_t off = (uint32_t)(start - bga__group_first(vol, g));
	uint64_t floor = __atomic_load_n(&vol->nblocks_floor, __ATOMIC_ACQUIRE);
	/* Inside one group, and inside every geometry (below the floor):
	 * free_in_group reads none, so no RCU section. */
	if (bga_likely(len != 0 && len <= vol->cfg.blocks_per_group - off && start >= vol->cfg.first_data_block &&
		       start < floor && len <= floor - start)) {
		int rc = free_in_group(vol, g, off, (uint32_t)len);
		if (bga_likely(rc == 0))
			bga__counter_add(vol->used, -(int64_t)len);
		return rc;
	}
	return free_slow(vol, start, len, g, off);
}

/*
 * The fast path's exits.  Each is entered with the group's lock held (an
 * uncontended fas acquire) and releases it; being tail calls, they leave
 * the fast path one that makes no call.
 */

/* Their common end: release the lock and, when n blocks were freed (rc
 * 0), give them back to the used count. */
static inline int free_exit_done(struct bga_volume *vol, uint64_t g, struct locktab_slot *slot, uint32_t n, int rc)
{
	bga__group_unlock_at(vol, g, slot);
	if (rc == 0)
		bga__counter_add(vol->used, -(int64_t)n);
	return rc;
}

/* Anything the word alone cannot decide: a group with no bitmap (wholly
 * used, or quarantined), a range past its span, or deferred frees or
 * windows (whose blocks are not allocated). */
static __attribute__((noinline)) int free_group_rest(struct bga_volume *vol, struct bga_group *grp, uint64_t g,
						     struct locktab_slot *slot, uint32_t off, uint32_t n)
{
	return free_exit_done(vol, g, slot, n, free_locked(vol, grp, g, off, n));
}

/* The release is done but raised the free count above max_run. */
static __attribute__((noinline)) int free_word_merge(struct bga_volume *vol, struct bga_group *grp, uint64_t g,
						     struct locktab_slot *slot, uint32_t off, uint32_t n)
{
	bga__group_merge_run_locked(vol, grp, g, off, n);
	return free_exit_done(vol, g, slot, n, 0);
}

/* The lock is released; the counter's fast path could not take the
 * give-back (a fold, a seal, a thread without rseq on the rseq path). */
static __attribute__((noinline)) int free_count_slow(struct bga_volume *vol, uint64_t n)
{
	bga_counter_add(vol->used, -(int64_t)n);
	return 0;
}

/*
 * The common free, decided by one bitmap word: a range inside one word
 * (groups are multiples of 64 blocks, so a word never crosses groups),
 * above first_data_block and below the floor (inside every geometry: no
 * RCU section), in an installed chunk, a group whose lock is free and
 * whose word has every bit of the range set, with no deferred frees or
 * windows and no max_run to raise (free_in_group and free_group_rest do
 * the same through the general checks).  Every other case leaves by a
 * tail call with nothing changed (free_other before the lock, the exits
 * above with it), so this path makes no call (make test checks the code:
 * scripts/fastpath.py).
 */
int bga_free(struct bga_volume *vol, uint64_t start, uint64_t len)
{
	if (bga_unlikely(vol == NULL))
		return -EINVAL;
	uint64_t floor = __atomic_load_n(&vol->nblocks_floor, __ATOMIC_ACQUIRE);
	uint32_t shift = vol->bpg_shift;
	if (bga_unlikely(!(len - 1 < 64 - start % 64 && start >= vol->cfg.first_data_block && start < floor &&
			   len <= floor - start && shift != 0)))
		return free_other(vol, start, len);
	uint64_t g = start >> shift;
	uint32_t off = (uint32_t)(start - (g << shift)), n = (uint32_t)len;
	struct bga_chunk *ch = bga__chunk_get(vol, g >> BGA_CHUNK_SHIFT);
	if (bga_unlikely(ch == NULL))
		return free_other(vol, start, len);
	struct bga_group *grp = &ch->groups[g & (BGA_CHUNK_GROUPS - 1)];
	struct locktab_slot *slot = bga__group_slot(vol, g);
	if (bga_unlikely(!bga__group_trylock_fas_at(vol, g, slot)))
		return free_other(vol, start, len);
	if (bga_unlikely(grp->bitmap == NULL || off + n > grp->hi || grp->ext != NULL))
		return free_group_rest(vol, grp, g, slot, off, n);
	uint64_t *w = &grp->bitmap[off / 64], m = bga__word_mask(off, n);
	if (bga_unlikely((*w & m) != m)) {
		bga__group_unlock_fas_at(vol, g, slot);
		return -EINVAL;
	}
	*w &= ~m;
	if (bga_unlikely(bga__group_count_freed_locked(grp, n)))
		return free_word_merge(vol, grp, g, slot, off, n);
	bga__group_unlock_fas_at(vol, g, slot);
	if (bga_likely(bga__counter_add_fast(vol->used, -(int64_t)len)))
		return 0;
	return free_count_slow(vol, len);
}
