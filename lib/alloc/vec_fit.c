/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga_alloc_vec's all-or-nothing answer when its greedy carve fell short
 * (vec.c), decided on the free space itself, never on a count alone
 * (issue 34): can want blocks be had as at most max_out extents of
 * min_len .. max_len blocks, aligned, inside the volume's free runs?  Now:
 * then that fit is taken.  Else after every pending deferred free
 * commits: -EAGAIN; else -ENOSPC.  The header states the rule
 * (bga_alloc_vec); this file is its one implementation.
 *
 * The runs: a group's free runs (window remainders are free: any request
 * takes them back before -ENOSPC, so a fit is looked for without them
 * first, then with them) of an aligned length of min_len at
 * least, which are what bga_alloc can take a piece from, joined into one
 * stretch where they touch across a group boundary, as the carve merges
 * its pieces there.  A stretch of aligned length L holds j extents, for
 * any total from j * min_len to min(j * max_len, L), when j * min_len <=
 * L: so the most j extents can take grows by max_len for each of its
 * first floor(L / max_len) extents and then by the rest, and the most that
 * k extents can take over all stretches is the sum of the k largest of
 * those steps.  Want fits iff, with k = min(max_out, want / min_len),
 * that sum reaches want (every total between k * min_len and it can be
 * had).  Every result the greedy carve can give is such a fit, so the
 * fit decides exactly when the call succeeds.
 *
 * Only groups that can hold such a run are looked at: those the index
 * offers for min_len, those holding windows and, after the commit, those
 * holding pending frees (deferred.c reads the same three sets).
 */
#include <errno.h>
#include <stdlib.h>

#include "rcu.h"

#include <bgalloc/bitmap.h>

#include "route.h"
#include "group.h"
#include "hooks.h"
#include "charge.h"
#include "deferred.h"
#include "claim.h"
#include "window.h"

/* Fits taken by another thread before this one could take them: looked
 * for again this many times, then -EAGAIN (the space moves under it). */
#define BGA_VEC_FIT_RETRIES 4

struct stretch {
	uint64_t start, len; /* the aligned span: len >= min, a multiple of align */
};

struct fit {
	uint64_t min, max, align, want, k; /* k: the most extents a fit may use */
	struct stretch *s;
	size_t n, cap;
	uint64_t full;             /* steps of max_len over all stretches */
	uint64_t open_lo, open_hi; /* the stretch being joined, raw; open_hi 0: none */
};

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	uint64_t r;
	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* Close the stretch being joined: its aligned span, if it holds min. */
static int close_open(struct fit *f)
{
	if (f->open_hi == 0)
		return 0;
	uint64_t lo = (f->open_lo + f->align - 1) / f->align * f->align, hi = f->open_hi / f->align * f->align;
	f->open_hi = 0;
	if (hi <= lo || hi - lo < f->min)
		return 0;
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 64;
		struct stretch *s = realloc(f->s, cap * sizeof(*s));
		if (s == NULL)
			return -ENOMEM;
		f->s = s;
		f->cap = cap;
	}
	f->s[f->n++] = (struct stretch){lo, hi - lo};
	f->full += (hi - lo) / f->max;
	return 0;
}

/* A group's run [lo, hi) that holds an aligned min: joined to the open
 * stretch when it starts where that ends (a group boundary). */
static int add_run(struct fit *f, uint64_t lo, uint64_t hi)
{
	uint64_t alo = (lo + f->align - 1) / f->align * f->align, ahi = hi / f->align * f->align;
	if (ahi <= alo || ahi - alo < f->min)
		return 0;
	if (f->open_hi != 0 && f->open_hi == lo) {
		f->open_hi = hi;
		return 0;
	}
	int rc = close_open(f);
	f->open_lo = lo;
	f->open_hi = hi;
	return rc;
}

/* The rest step of stretch s: what its (floor(len / max) + 1)-th extent
 * adds, or 0 when it has none or cannot hold that many of min. */
static uint64_t rest_step(const struct fit *f, const struct stretch *s)
{
	uint64_t q = s->len / f->max, r = s->len - q * f->max;
	return r != 0 && sat_mul(q + 1, f->min) <= s->len ? r : 0;
}

struct rest {
	uint64_t step;
	size_t i;
};

static int by_step_desc(const void *a, const void *b)
{
	uint64_t x = ((const struct rest *)a)->step, y = ((const struct rest *)b)->step;
	return (x < y) - (x > y);
}

/*
 * Does want fit the stretches found?  With out non-NULL, write the fit
 * into out[] (sorted, at most f->k extents; *n the count).  0 when it
 * fits, -ENOSPC when not, -ENOMEM.
 */
static int solve(struct fit *f, struct bga_extent *out, size_t *n)
{
	if (f->k == 0)
		return -ENOSPC;
	uint64_t m1 = BGA_MIN(f->full, f->k), upper = sat_mul(m1, f->max);
	struct rest *order = NULL;
	size_t nrest = 0;
	if (upper < f->want) {
		/* every step of max_len taken: the rests, largest first */
		order = malloc((f->n ? f->n : 1) * sizeof(*order));
		if (order == NULL)
			return -ENOMEM;
		for (size_t i = 0; i < f->n; i++)
			if ((order[nrest].step = rest_step(f, &f->s[i])) != 0)
				order[nrest++].i = i;
		qsort(order, nrest, sizeof(*order), by_step_desc);
		nrest = BGA_MIN(nrest, (size_t)(f->k - m1));
		for (size_t i = 0; i < nrest; i++)
			upper += order[i].step;
	}
	if (upper < f->want || out == NULL) {
		free(order);
		return upper < f->want ? -ENOSPC : 0;
	}
	/* Extents per stretch: its steps of max_len in stretch order, then
	 * one more where its rest was chosen; stretch i then takes from
	 * j * min up to min(j * max, len), and the totals are raised from
	 * their lows, in order, until they reach want. */
	uint64_t *j = calloc(f->n ? f->n : 1, sizeof(*j));
	if (j == NULL) {
		free(order);
		return -ENOMEM;
	}
	uint64_t left = m1, low = 0;
	for (size_t i = 0; i < f->n; i++) {
		j[i] = BGA_MIN(f->s[i].len / f->max, left);
		left -= j[i];
	}
	for (size_t i = 0; i < nrest; i++)
		j[order[i].i]++;
	for (size_t i = 0; i < f->n; i++)
		low += j[i] * f->min;
	uint64_t extra = f->want - low; /* low <= k * min <= want */
	size_t w = 0;
	for (size_t i = 0; i < f->n; i++) {
		if (j[i] == 0)
			continue;
		uint64_t lo = j[i] * f->min, hi = BGA_MIN(sat_mul(j[i], f->max), f->s[i].len);
		uint64_t t = lo + BGA_MIN(extra, hi - lo);
		extra -= t - lo;
		/* t as ceil(t / max) extents of max_len, the last raised to
		 * min_len from those before it (two that touch then add up to
		 * more than max_len, as out[] must keep them) */
		uint64_t q = t / f->max + (t % f->max != 0), at = f->s[i].start; /* max may be near 2^64 */
		size_t first = w;
		for (uint64_t e = 0; e < q; e++, w++)
			out[w] = (struct bga_extent){0, e + 1 < q ? f->max : t - (q - 1) * f->max};
		for (size_t e = w - 1; e > first && out[e].len < f->min; e--) {
			uint64_t need = f->min - out[e].len;
			out[e].len += need;
			out[e - 1].len -= need;
		}
		for (size_t e = first; e < w; e++) {
			out[e].start = at;
			at += out[e].len;
		}
	}
	*n = w;
	free(j);
	free(order);
	return 0;
}

/*
 * The stretches of geo's groups: now, or after every pending free
 * commits.  Stops early, fitting, once the steps of max_len alone reach
 * want.  0 or -ENOMEM.
 */
static int scan(struct bga_volume *vol, const struct bga_geom *geo, struct fit *f, bool after_commit, bool windows)
{
	uint32_t bpg = vol->cfg.blocks_per_group;
	uint64_t *map = malloc(BGA_BITMAP_WORDS(bpg) * sizeof(uint64_t)), n = geo->ngroups;
	if (map == NULL)
		return -ENOMEM;
	int rc = 0;
	for (uint64_t g = 0; rc == 0 && g < n; g++) {
		uint64_t next = bga__idx_next(vol, g, n, f->min);
		if (windows)
			next = BGA_MIN(next, bga__window_next_group(vol, g, n));
		if (after_commit)
			next = BGA_MIN(next, bga__dfree_next_group(vol, g, n));
		if ((g = next) >= n)
			break;
		if (bga__chunk_get(vol, g >> BGA_CHUNK_SHIFT) == NULL && bga__chunk_pending(vol, g >> BGA_CHUNK_SHIFT) &&
		    bga__chunk_ensure(vol, g >> BGA_CHUNK_SHIFT) == NULL) {
			/* Unread (a lazy load's), read here: its wholly free
			 * groups are counted free without a read, so the
			 * settle before the answer (bga__unverified_settle,
			 * which reads only where free blocks are unverified)
			 * may leave it unread.  No group lock is held. */
			rc = -ENOMEM;
			break;
		}
		uint64_t first = bga__group_first(vol, g), len;
		uint32_t hi = bga__dfree_group_map(vol, g, map, after_commit, windows);
		for (uint64_t at = 0, pos; rc == 0 && (pos = bga_bitmap_find_zero_run(map, hi, at, f->min, hi, &len)) < hi;
		     at = pos + len)
			rc = add_run(f, first + pos, first + pos + len);
		if (sat_mul(BGA_MIN(f->full, f->k), f->max) >= f->want)
			break;
	}
	free(map);
	return rc ? rc : close_open(f);
}

/* Does the request fit now, or after the commit (after_commit)?  With
 * out non-NULL, out[] and *n get the fit.  Windows' remainders count as
 * free with `windows`, as used without.  0, -ENOSPC or -ENOMEM. */
static int fit_in(struct bga_volume *vol, const struct bga_geom *geo, const struct bga_request *req, uint64_t want,
		  size_t max_out, struct bga_extent *out, size_t *n, bool after_commit, bool windows)
{
	uint64_t align = req->align > 1 ? req->align : 1;
	struct fit f = {.min = req->min_len, .max = req->max_len, .align = align, .want = want};
	f.k = BGA_MIN((uint64_t)max_out, want / f.min);
	int rc = scan(vol, geo, &f, after_commit, windows);
	if (rc == 0)
		rc = solve(&f, out, n);
	free(f.s);
	return rc;
}

/* The count: what the call may take at most (the unpromised blocks, or
 * what is reserved). */
static int64_t room(struct bga_volume *vol, const struct bga_geom *geo, const struct bga_request *req)
{
	return (req->flags & BGA_USE_RESERVED) ? (int64_t)bga_reserved(vol) : bga__unpromised(vol, geo);
}

int bga__vec_fits_now(struct bga_volume *vol, const struct bga_request *req, uint64_t want, size_t max_out)
{
	urcu_bp_read_lock();
	const struct bga_geom *geo = bga_rcu_load(vol->geom);
	int rc = room(vol, geo, req) >= (int64_t)want ? fit_in(vol, geo, req, want, max_out, NULL, NULL, false, true)
						       : -ENOSPC;
	urcu_bp_read_unlock();
	return rc;
}

int bga__vec_fit(struct bga_volume *vol, const struct bga_request *req, uint64_t want, struct bga_extent *out,
		 size_t max_out, size_t *n_out, bool checked)
{
	bool reserved = req->flags & BGA_USE_RESERVED;
	for (int tries = 0;; tries++) {
		/* Promises rest on verified space: a lazy load's unread
		 * chunks are read before the answer (bga_load). */
		int rc = bga__unverified_settle(vol);
		if (rc < 0)
			return rc;
		/* known not to fit now, and nothing was read since */
		bool known = checked && tries == 0 && rc == 0;
		urcu_bp_read_lock();
		const struct bga_geom *geo = bga_rcu_load(vol->geom);
		int64_t left = room(vol, geo, req);
		size_t n = 0;
		/* Free runs outside every window first; other windows'
		 * blocks only when nothing else fits (alloc.h, where a
		 * request looks). */
		rc = left >= (int64_t)want && !known ? fit_in(vol, geo, req, want, max_out, out, &n, false, false)
						     : -ENOSPC;
		if (rc == -ENOSPC && left >= (int64_t)want && !known)
			rc = fit_in(vol, geo, req, want, max_out, out, &n, false, true);
		if (rc == 0) {
			rc = bga__claim_vec(vol, geo, out, n, reserved);
			if (rc == 0) {
				urcu_bp_read_unlock();
				*n_out = n;
				return 0;
			}
			/* taken meanwhile by another thread: look again */
			urcu_bp_read_unlock();
			if (tries < BGA_VEC_FIT_RETRIES && (rc == -EBUSY || rc == -ENOSPC))
				continue;
			return rc == -EBUSY || rc == -ENOSPC ? -EAGAIN : rc;
		}
		if (rc == -ENOSPC) {
			uint64_t pending = bga__dfree_pending(vol, NULL);
			if (pending != 0 && (reserved || left + (int64_t)pending >= (int64_t)want)) {
				rc = fit_in(vol, geo, req, want, max_out, NULL, NULL, true, true);
				rc = rc == 0 ? -EAGAIN : rc;
			}
		}
		urcu_bp_read_unlock();
		return rc;
	}
}
