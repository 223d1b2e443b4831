/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Walks over free space: bga_foreach_free and bga_trim, and the group copy
 * and run iteration that bga_stats shares. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rcu.h"

#include <bgalloc/bitmap.h>

#include "group.h"
#include "hooks.h"
#include "charge.h"
#include "deferred.h"
#include "walk.h"
#include "window.h"
#include "persist.h"

/*
 * Copy group g's view of free space into `map` (bpg bits, set = used) under
 * its lock, and what else one instant of the group says (*v): its pending
 * map into `pending` when not NULL.  An untouched group needs no lock: it
 * is wholly free.  Returns the group's span end.
 */
uint32_t bga__walk_view(struct bga_volume *vol, uint64_t g, uint64_t *map, uint64_t *pending,
			struct bga__group_view *v)
{
	struct bga_chunk *ch = bga__chunk_get(vol, g >> BGA_CHUNK_SHIFT);
	memset(v, 0, sizeof(*v));
	if (ch == NULL) {
		uint32_t hi = bga__group_copy_locked(vol, NULL, g, map, false);
		if (pending)
			bga__dfree_copy_pending_locked(vol, NULL, pending);
		uint32_t full;
		bga__grp_span(vol, NULL, g, &v->lo, &full);
		v->max_run = hi - v->lo;
		return hi;
	}
	bga__group_lock(vol, g);
	const struct bga_group *grp = &ch->groups[g & (BGA_CHUNK_GROUPS - 1)];
	uint32_t span_hi;
	bga__grp_span(vol, grp, g, &v->lo, &span_hi);
	v->initialised = grp->bitmap != NULL;
	v->quarantined = grp->bitmap == NULL && (grp->flags & BGA_GROUP_QUARANTINED);
	v->trimmed = grp->flags & BGA_GROUP_TRIMMED;
	v->max_run = grp->max_run;
	v->deferred = grp->ext ? grp->ext->dfree_blocks : 0;
	uint32_t hi = bga__group_copy_locked(vol, grp, g, map, false);
	v->held = bga__window_held_locked(grp);
	v->windows = bga__window_count_locked(grp);
	if (v->held)
		bga__window_clear_held_locked(grp, map); /* free: nobody owns them */
	if (pending)
		bga__dfree_copy_pending_locked(vol, grp, pending);
	bga__group_unlock(vol, g);
	return hi;
}

uint32_t bga__walk_copy(struct bga_volume *vol, uint64_t g, uint64_t *map, bool *initialised, uint32_t *held)
{
	struct bga__group_view v;
	uint32_t hi = bga__walk_view(vol, g, map, NULL, &v);
	*initialised = v.initialised;
	*held = v.held;
	return hi;
}

/* Call fn for each free run of at least min_len inside [from, to) of map. */
int bga__walk_each_run(const uint64_t *map, uint32_t from, uint32_t to, uint64_t min_len,
		    int (*fn)(void *, uint32_t, uint32_t), void *arg)
{
	uint32_t pos = from;
	while (pos < to) {
		uint64_t s = bga_bitmap_next_zero(map, to, pos);
		if (s >= to)
			break;
		uint64_t e = bga_bitmap_next_set(map, to, s);
		if (e - s >= min_len) {
			int rc = fn(arg, (uint32_t)s, (uint32_t)(e - s));
			if (rc)
				return rc;
		}
		pos = (uint32_t)e;
	}
	return 0;
}

/*
 * One group's part of a walk over [from, to): offsets [a, b) of group g,
 * b not yet cut to the group's span, and a scratch map of
 * blocks_per_group bits.
 */
typedef int (*group_part_fn)(struct bga_volume *vol, const struct bga_geom *geo, uint64_t g, uint32_t a,
			     uint32_t b, uint64_t *scratch, void *arg);

/*
 * Check [from, to) and min_len (-EINVAL), then call fn for each group the
 * range covers, in order, until one returns non-zero: one RCU read
 * section and one scratch map (-ENOMEM) for the whole walk.
 */
static int walk_groups(struct bga_volume *vol, uint64_t from, uint64_t to, uint64_t min_len, group_part_fn fn,
		       void *arg)
{
	if (bga__chunks_settle(vol) != 0) /* a missing chunk must mean wholly free */
		return -ENOMEM;
	urcu_bp_read_lock();
	const struct bga_geom *geo = bga_rcu_load(vol->geom);
	int rc = from >= to || to > geo->nblocks || min_len == 0 ? -EINVAL : 0;
	uint64_t *scratch = rc ? NULL : malloc(BGA_BITMAP_WORDS(vol->cfg.blocks_per_group) * sizeof(uint64_t));
	if (rc == 0 && scratch == NULL)
		rc = -ENOMEM;
	for (uint64_t g = bga__group_of(vol, from); rc == 0 && g <= bga__group_of(vol, to - 1); g++) {
		uint64_t first = bga__group_first(vol, g);
		uint32_t a = from > first ? (uint32_t)(from - first) : 0;
		uint32_t b = (uint32_t)BGA_MIN((uint64_t)vol->cfg.blocks_per_group, to - first);
		rc = fn(vol, geo, g, a, b, scratch, arg);
	}
	free(scratch);
	urcu_bp_read_unlock();
	return rc;
}

struct walk {
	uint64_t base;
	uint64_t min_len;
	bga_extent_cb cb;
	void *ctx;
};

static int walk_fn(void *arg, uint32_t off, uint32_t len)
{
	struct walk *w = arg;
	return w->cb(w->ctx, w->base + off, len);
}

static int foreach_group(struct bga_volume *vol, const struct bga_geom *geo, uint64_t g, uint32_t a, uint32_t b,
			 uint64_t *map, void *arg)
{
	(void)geo;
	struct walk *w = arg;
	bool initialised;
	uint32_t held;
	uint32_t hi = bga__walk_copy(vol, g, map, &initialised, &held);
	w->base = bga__group_first(vol, g);
	return bga__walk_each_run(map, a, BGA_MIN(b, hi), w->min_len, walk_fn, w);
}

int bga_foreach_free(struct bga_volume *vol, uint64_t from, uint64_t to, uint64_t min_len, bga_extent_cb cb,
		     void *ctx)
{
	if (vol == NULL || cb == NULL)
		return -EINVAL;
	struct walk w = {0, min_len, cb, ctx};
	return walk_groups(vol, from, to, min_len, foreach_group, &w);
}

/* ---- allocated extents ---- */

struct used_walk {
	bga_used_cb cb;
	void *ctx;
	uint64_t *pending; /* a second scratch map: the group's pending blocks */
};

/*
 * Group g's allocated runs in [a, b): maximal runs of used blocks that
 * are all pending or all not (pending blocks are always used: bga_check).
 */
static int used_group(struct bga_volume *vol, const struct bga_geom *geo, uint64_t g, uint32_t a, uint32_t b,
		      uint64_t *map, void *arg)
{
	(void)geo;
	struct used_walk *w = arg;
	struct bga__group_view v;
	uint32_t hi = bga__walk_view(vol, g, map, w->pending, &v);
	uint64_t first = bga__group_first(vol, g);
	uint32_t end = BGA_MIN(b, hi);
	for (uint64_t pos = BGA_MAX(a, v.lo); pos < end;) {
		uint64_t s = bga_bitmap_next_set(map, end, pos);
		if (s >= end)
			break;
		bool deferred = (w->pending[s / 64] >> (s % 64)) & 1;
		uint64_t e = bga_bitmap_next_zero(map, end, s);
		uint64_t flip = deferred ? bga_bitmap_next_zero(w->pending, e, s) : bga_bitmap_next_set(w->pending, e, s);
		e = BGA_MIN(e, flip);
		int rc = w->cb(w->ctx, first + s, e - s, deferred ? BGA_USED_DEFERRED : 0);
		if (rc)
			return rc;
		pos = e;
	}
	return 0;
}

int bga_foreach_used(struct bga_volume *vol, uint64_t from, uint64_t to, bga_used_cb cb, void *ctx)
{
	if (vol == NULL || cb == NULL)
		return -EINVAL;
	struct used_walk w = {cb, ctx, malloc(BGA_BITMAP_WORDS(vol->cfg.blocks_per_group) * sizeof(uint64_t))};
	int rc = w.pending ? walk_groups(vol, from, to, 1, used_group, &w) : -ENOMEM;
	free(w.pending);
	return rc;
}

/* ---- trim ---- */

struct trim_list {
	struct bga_run *runs;
	size_t n, cap;
};

static int trim_collect(void *arg, uint32_t off, uint32_t len)
{
	struct trim_list *l = arg;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct bga_run *r = realloc(l->runs, cap * sizeof(*r));
		if (r == NULL)
			return -ENOMEM;
		l->runs = r;
		l->cap = cap;
	}
	l->runs[l->n++] = (struct bga_run){off, len};
	return 0;
}

/*
 * Trim one group: take every free run of min_len in [a, b) under the lock
 * (charged to the used counter like an allocation, so reservations stay
 * covered), discard with no lock held, then give them back.  The TRIMMED
 * flag is set when the runs are taken; any free by another thread clears
 * it, and our own give-back keeps it, so the flag means "no block was
 * freed here since every free run was discarded".  From the claim to the
 * give-back the runs are linked into the group as a claim (groupdesc.h,
 * bga_trim_claim), so a store meanwhile writes them as free: no caller owns
 * them, and a crash after that store must not leave them allocated.
 */
struct trim_args {
	uint64_t min_len;
	bga_extent_cb cb;
	void *ctx;
	uint64_t trimmed;
};

static int trim_group(struct bga_volume *vol, const struct bga_geom *geo, uint64_t g, uint32_t a, uint32_t b,
		      uint64_t *scratch, void *arg)
{
	struct trim_args *t = arg;
	struct trim_list l = {NULL, 0, 0};
	uint64_t first = bga__group_first(vol, g);
	int rc = bga__group_ensure(vol, g); /* before the lock: lockdep.h */
	if (rc)
		return rc;
	bga__group_lock(vol, g);
	struct bga_group *grp = bga__group_lookup(vol, g);
	if (grp->flags & BGA_GROUP_TRIMMED) {
		bga__group_unlock(vol, g);
		return 0;
	}
	uint32_t lo, hi;
	bga__grp_span(vol, grp, g, &lo, &hi);
	/* Windows' unused blocks are free space too: take them back, so the
	 * trim can claim and discard them (their owners book anew). */
	if (grp->ext && grp->ext->windows)
		bga__window_cut_range_locked(vol, grp, g, a, b - a);
	bga__group_copy_locked(vol, grp, g, scratch, false);
	rc = bga__walk_each_run(scratch, a, BGA_MIN(b, hi), t->min_len, trim_collect, &l);
	struct bga_group_ext *ext = rc == 0 && l.n ? bga__group_ext_locked(grp) : NULL;
	if (l.n && ext == NULL && rc == 0)
		rc = -ENOMEM; /* no claim record: nothing is claimed */
	size_t taken = 0;
	for (; rc == 0 && taken < l.n; taken++) {
		struct bga_run *r = &l.runs[taken];
		/* Charged like an allocation of exactly the run: a failed
		 * charge means the rest is promised to reservations. */
		struct bga_take take = {.geo = geo, .min = (uint32_t)r->len, .max = (uint32_t)r->len, .align = 1};
		uint32_t len = (uint32_t)r->len;
		if (bga__take_locked(vol, &take, grp, g, r->off, &len) != 0)
			break;
	}
	bool whole = taken == l.n && rc == 0 && a <= lo && b >= hi;
	if (whole)
		grp->flags |= BGA_GROUP_TRIMMED;
	struct bga_trim_claim claim = {.next = NULL, .runs = l.runs, .n = taken};
	if (taken) {
		claim.next = ext->claims;
		ext->claims = &claim;
	}
	bga__group_unlock(vol, g);

	int cbrc = 0;
	for (size_t i = 0; i < taken; i++) {
		if (cbrc == 0)
			cbrc = t->cb(t->ctx, first + l.runs[i].off, l.runs[i].len);
		if (cbrc == 0)
			t->trimmed += l.runs[i].len;
	}
	if (taken) {
		bga__group_lock(vol, g);
		bool keep = grp->flags & BGA_GROUP_TRIMMED;
		struct bga_trim_claim **pp = &grp->ext->claims;
		while (*pp != &claim)
			pp = &(*pp)->next;
		*pp = claim.next;
		for (size_t i = 0; i < taken; i++)
			bga__group_release_locked(vol, grp, g, l.runs[i].off, l.runs[i].len);
		if (keep && cbrc == 0)
			grp->flags |= BGA_GROUP_TRIMMED;
		bga__group_unlock(vol, g);
		for (size_t i = 0; i < taken; i++)
			bga_counter_add(vol->used, -(int64_t)l.runs[i].len);
	}
	free(l.runs);
	return rc ? rc : cbrc;
}

int bga_trim(struct bga_volume *vol, uint64_t from, uint64_t to, uint64_t min_len, bga_extent_cb cb,
	     void *ctx, uint64_t *trimmed)
{
	if (vol == NULL || cb == NULL)
		return -EINVAL;
	struct trim_args t = {min_len, cb, ctx, 0};
	int rc = walk_groups(vol, from, to, min_len, trim_group, &t);
	if (trimmed)
		*trimmed = t.trimmed;
	return rc;
}

/* ---- statistics ---- */

