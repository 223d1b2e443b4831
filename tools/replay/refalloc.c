/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The reference allocators (refalloc.h).  The index is two sorted arrays
 * of the maximal free extents, kept in step: byaddr (by start) and bysize
 * (by length, then start).  An insert or removal moves the arrays' tails
 * (memmove): slow beside a tree, and simple enough to trust, which is
 * what a reference is for.
 */
#include "refalloc.h"
#include "runs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MB_STREAM_REQ 16 /* ext4's mb_stream_req: the largest request the locality group packs */
#define MB_LG_PA 512     /* ext4's lg prealloc: blocks the locality group books at a time */
#define MB_PA_MIN 16     /* a file's preallocation: at least this many blocks */
#define MB_PA_MAX 2048   /* and at most this many (8 MiB of 4 KiB blocks, as ext4 caps it) */

struct ref_file {
	uint64_t pa_start, pa_len; /* the preallocation's rest: taken in the index, free in the map */
	uint64_t written;          /* blocks the file got */
	struct ref_file *prev, *next;
};

struct refalloc {
	enum ref_policy policy;
	uint64_t nblocks, fdb;
	uint64_t *used; /* the truth: a bit a block, set when in use or preallocated */
	struct bga_extent *byaddr, *bysize;
	size_t n, cap;
	struct ref_file lg;    /* the locality group's preallocation */
	struct ref_file files; /* the open files, a ring through files */
};

/* ---- the bitmap ---- */

static int bit(const struct refalloc *r, uint64_t b)
{
	return (int)(r->used[b / 64] >> (b % 64) & 1);
}

/* Whether every block of [s, s + len) has bit v. */
static int all_are(const struct refalloc *r, uint64_t s, uint64_t len, int v)
{
	for (uint64_t b = s; b < s + len; b++)
		if (bit(r, b) != v)
			return 0;
	return 1;
}

static void set_bits(struct refalloc *r, uint64_t s, uint64_t len, int v)
{
	for (uint64_t b = s; b < s + len; b++) {
		if (v)
			r->used[b / 64] |= UINT64_C(1) << (b % 64);
		else
			r->used[b / 64] &= ~(UINT64_C(1) << (b % 64));
	}
}

/* ---- the index ---- */

static int size_less(const struct bga_extent *a, const struct bga_extent *b)
{
	return a->len < b->len || (a->len == b->len && a->start < b->start);
}

/* bysize's first entry not below e. */
static size_t size_lower(const struct refalloc *r, const struct bga_extent *e)
{
	size_t lo = 0, hi = r->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (size_less(&r->bysize[mid], e))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* byaddr's first entry whose start is above b. */
static size_t addr_upper(const struct refalloc *r, uint64_t b)
{
	size_t lo = 0, hi = r->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->byaddr[mid].start <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int grow(struct refalloc *r)
{
	if (r->n < r->cap)
		return 0;
	size_t nc = r->cap ? 2 * r->cap : 1024;
	struct bga_extent *a = realloc(r->byaddr, nc * sizeof(*a));
	if (!a)
		return -ENOMEM;
	r->byaddr = a;
	struct bga_extent *s = realloc(r->bysize, nc * sizeof(*s));
	if (!s)
		return -ENOMEM;
	r->bysize = s;
	r->cap = nc;
	return 0;
}

static void arr_insert(struct bga_extent *arr, size_t n, size_t at, struct bga_extent e)
{
	memmove(arr + at + 1, arr + at, (n - at) * sizeof(*arr));
	arr[at] = e;
}

static void arr_remove(struct bga_extent *arr, size_t n, size_t at)
{
	memmove(arr + at, arr + at + 1, (n - at - 1) * sizeof(*arr));
}

/* Add the free extent e (disjoint from every other and not touching
 * one: the caller merged) to both arrays. */
static int index_add(struct refalloc *r, struct bga_extent e)
{
	if (grow(r))
		return -ENOMEM;
	arr_insert(r->byaddr, r->n, addr_upper(r, e.start), e);
	arr_insert(r->bysize, r->n, size_lower(r, &e), e);
	r->n++;
	return 0;
}

/* Remove byaddr[i] from both arrays. */
static void index_remove(struct refalloc *r, size_t i)
{
	struct bga_extent e = r->byaddr[i];
	size_t k = size_lower(r, &e);
	arr_remove(r->byaddr, r->n, i);
	arr_remove(r->bysize, r->n, k);
	r->n--;
}

/* The blocks [s, s + len), free, given back to the index, merged with
 * the free extents either side. */
static int index_free(struct refalloc *r, uint64_t s, uint64_t len)
{
	uint64_t ns = s, ne = s + len;
	size_t i = addr_upper(r, s);
	if (i < r->n && r->byaddr[i].start == ne) {
		ne += r->byaddr[i].len;
		index_remove(r, i);
	}
	if (i > 0 && r->byaddr[i - 1].start + r->byaddr[i - 1].len == s) {
		ns = r->byaddr[i - 1].start;
		index_remove(r, i - 1);
	}
	set_bits(r, s, len, 0);
	return index_add(r, (struct bga_extent){ns, ne - ns});
}

/* Take [s, s + len), inside the free extent byaddr[i]. */
static int index_take(struct refalloc *r, size_t i, uint64_t s, uint64_t len)
{
	struct bga_extent e = r->byaddr[i];
	if (s < e.start || s + len > e.start + e.len || !all_are(r, s, len, 0)) {
		fprintf(stderr, "bga-replay: reference allocator: [%" PRIu64 ", +%" PRIu64 ") is not free\n", s, len);
		return -EIO;
	}
	index_remove(r, i);
	set_bits(r, s, len, 1);
	int rc = 0;
	if (s > e.start)
		rc = index_add(r, (struct bga_extent){e.start, s - e.start});
	if (!rc && s + len < e.start + e.len)
		rc = index_add(r, (struct bga_extent){s + len, e.start + e.len - s - len});
	return rc;
}

/* The free extent holding block b: its index, or r->n. */
static size_t extent_at(const struct refalloc *r, uint64_t b)
{
	size_t i = addr_upper(r, b);
	if (i > 0 && r->byaddr[i - 1].start + r->byaddr[i - 1].len > b)
		return i - 1;
	return r->n;
}

/* ---- the placements ---- */

struct fit {
	size_t i;
	uint64_t start, len; /* the aligned run of e from `from` on */
};

static void fit_of(const struct bga_extent *e, uint64_t from, uint64_t align, struct fit *f)
{
	uint64_t end = e->start + e->len, s = from > e->start ? from : e->start;
	s = (s + align - 1) / align * align;
	f->start = s;
	f->len = s < end ? (end - s) / align * align : 0;
}

/* The first extent in address order from `from` on, wrapping round to
 * the volume's start, with an aligned run of `need`: 1 and *f, or 0. */
static int first_fit(const struct refalloc *r, uint64_t from, uint64_t need, uint64_t align, struct fit *f)
{
	size_t i0 = addr_upper(r, from);
	if (i0 > 0 && r->byaddr[i0 - 1].start + r->byaddr[i0 - 1].len > from)
		i0--;
	for (size_t i = i0; i < r->n; i++) {
		fit_of(&r->byaddr[i], from, align, f);
		if (f->len >= need) {
			f->i = i;
			return 1;
		}
	}
	for (size_t i = 0; i < r->n && i <= i0; i++) {
		fit_of(&r->byaddr[i], 0, align, f);
		if (f->len >= need) {
			f->i = i;
			return 1;
		}
	}
	return 0;
}

/* The smallest extent with an aligned run of `need` (the lowest of
 * equals): 1 and *f, or 0. */
static int best_fit(const struct refalloc *r, uint64_t need, uint64_t align, struct fit *f)
{
	struct bga_extent key = {0, need};
	for (size_t k = size_lower(r, &key); k < r->n; k++) {
		fit_of(&r->bysize[k], 0, align, f);
		if (f->len >= need) {
			f->i = extent_at(r, f->start);
			return 1;
		}
	}
	return 0;
}

/* The longest extent's aligned run, if it holds `need`. */
static int longest_fit(const struct refalloc *r, uint64_t need, uint64_t align, struct fit *f)
{
	for (size_t k = r->n; k-- > 0;) {
		if (r->bysize[k].len < need)
			return 0;
		fit_of(&r->bysize[k], 0, align, f);
		if (f->len >= need) {
			f->i = extent_at(r, f->start);
			return 1;
		}
	}
	return 0;
}

/* The run at the goal: 1 and *f when goal is free and aligned. */
static int at_goal(const struct refalloc *r, uint64_t goal, uint64_t align, struct fit *f)
{
	if (goal == BGA_NO_GOAL || goal % align)
		return 0;
	size_t i = extent_at(r, goal);
	if (i == r->n)
		return 0;
	fit_of(&r->byaddr[i], goal, align, f);
	f->i = i;
	return 1;
}

static int take_fit(struct refalloc *r, const struct fit *f, uint64_t len, struct bga_extent *out)
{
	int rc = index_take(r, f->i, f->start, len);
	if (!rc)
		*out = (struct bga_extent){f->start, len};
	return rc;
}

/* One extent of min .. max blocks by the plain policies (mballoc's
 * fallback is first fit). */
static int plain_one(struct refalloc *r, enum ref_policy p, uint64_t goal, uint64_t min, uint64_t max,
                     uint64_t align, struct bga_extent *out)
{
	struct fit f;
	uint64_t from = goal == BGA_NO_GOAL || goal >= r->nblocks ? r->fdb : goal;
	if (p == REF_BESTFIT) {
		if ((at_goal(r, goal, align, &f) && f.len >= max) || best_fit(r, max, align, &f))
			return take_fit(r, &f, max, out);
		if (longest_fit(r, min, align, &f))
			return take_fit(r, &f, f.len < max ? f.len : max, out);
		return -ENOSPC;
	}
	if (first_fit(r, from, max, align, &f))
		return take_fit(r, &f, max, out);
	if (first_fit(r, from, min, align, &f))
		return take_fit(r, &f, f.len < max ? f.len : max, out);
	return -ENOSPC;
}

/* ---- mballoc's preallocations ---- */

static void pa_discard(struct refalloc *r, struct ref_file *f)
{
	if (f->pa_len)
		index_free(r, f->pa_start, f->pa_len);
	f->pa_len = 0;
}

static void pa_discard_all(struct refalloc *r)
{
	pa_discard(r, &r->lg);
	for (struct ref_file *f = r->files.next; f != &r->files; f = f->next)
		pa_discard(r, f);
}

static int overlaps(const struct ref_file *f, uint64_t s, uint64_t len)
{
	return f->pa_len && s < f->pa_start + f->pa_len && f->pa_start < s + len;
}

/* Whether [s, s + len) overlaps a preallocation's rest. */
static int in_a_pa(const struct refalloc *r, uint64_t s, uint64_t len)
{
	if (overlaps(&r->lg, s, len))
		return 1;
	for (const struct ref_file *f = r->files.next; f != &r->files; f = f->next)
		if (overlaps(f, s, len))
			return 1;
	return 0;
}

/* Serve max blocks (at least min) from f's preallocation's front. */
static int pa_take(struct ref_file *f, uint64_t min, uint64_t max, struct bga_extent *out)
{
	uint64_t len = f->pa_len < max ? f->pa_len : max;
	if (!f->pa_len || len < min)
		return 0;
	*out = (struct bga_extent){f->pa_start, len};
	f->pa_start += len;
	f->pa_len -= len;
	return 1;
}

/* A preallocation of up to `size` blocks holding at least max, near
 * goal: the run at the goal first (a file going on in place), else
 * first fit from it.  What the request gets is its front. */
static int pa_book(struct refalloc *r, struct ref_file *f, uint64_t goal, uint64_t min, uint64_t max, uint64_t size,
                   struct bga_extent *out)
{
	struct fit fit;
	struct bga_extent pa;
	int rc;
	if (at_goal(r, goal, 1, &fit) && fit.len >= max)
		rc = take_fit(r, &fit, fit.len < size ? fit.len : size, &pa);
	else
		rc = plain_one(r, REF_FIRSTFIT, goal, max, size, 1, &pa);
	if (rc == -ENOSPC)
		return plain_one(r, REF_FIRSTFIT, goal, min, max, 1, out);
	if (rc)
		return rc;
	f->pa_start = pa.start;
	f->pa_len = pa.len;
	return pa_take(f, min, max, out) ? 0 : -EIO; /* the booking holds max */
}

static uint64_t normalised(uint64_t blocks)
{
	uint64_t size = MB_PA_MIN;
	while (size < blocks && size < MB_PA_MAX)
		size *= 2;
	return size;
}

static int mb_one(struct refalloc *r, struct ref_file *f, uint64_t goal, uint64_t min, uint64_t max,
                  struct bga_extent *out)
{
	if (!f && goal == BGA_NO_GOAL && max <= MB_STREAM_REQ) {
		if (pa_take(&r->lg, max, max, out))
			return 0;
		pa_discard(r, &r->lg);
		return pa_book(r, &r->lg, BGA_NO_GOAL, min, max, MB_LG_PA, out);
	}
	if (!f)
		return plain_one(r, REF_FIRSTFIT, goal, min, max, 1, out);
	if (f->pa_len && goal == f->pa_start && pa_take(f, max, max, out)) {
		f->written += out->len;
		return 0;
	}
	pa_discard(r, f);
	uint64_t size = normalised(f->written + max);
	int rc = pa_book(r, f, goal, min, max, size < max ? max : size, out);
	if (!rc)
		f->written += out->len;
	return rc;
}

static int one(struct refalloc *r, struct ref_file *f, uint64_t goal, uint64_t min, uint64_t max, uint64_t align,
               uint32_t flags, struct bga_extent *out)
{
	struct fit fit;
	if (flags & BGA_EXACT_GOAL) {
		if (!at_goal(r, goal, align, &fit) || fit.start != goal || fit.len < min)
			return -ENOSPC;
		return take_fit(r, &fit, fit.len < max ? fit.len : max, out);
	}
	if (r->policy == REF_MBALLOC && align == 1)
		return mb_one(r, f, goal, min, max, out);
	return plain_one(r, r->policy == REF_BESTFIT ? REF_BESTFIT : REF_FIRSTFIT, goal, min, max, align, out);
}

/* one() for ref_pieces: the policy's placement of one extent. */
static int one_of(void *ctx, void *f, uint64_t goal, uint64_t min, uint64_t max, uint64_t align,
                  uint32_t flags, struct bga_extent *out)
{
	return one(ctx, f, goal, min, max, align, flags, out);
}

static void undo_of(void *ctx, uint64_t start, uint64_t len)
{
	index_free(ctx, start, len);
}

static const struct ref_ops ref_own_ops = {one_of, undo_of};

int ref_pieces(const struct ref_ops *ops, void *ctx, void *f, const struct bga_request *req,
               uint64_t want, struct bga_extent *out, size_t max_out, size_t *n)
{
	uint64_t align = req->align > 1 ? req->align : 1, goal = req->goal;
	*n = 0;
	if (!want) {
		int rc = ops->one(ctx, f, goal, req->min_len, req->max_len, align, req->flags, out);
		*n = !rc;
		return rc;
	}
	uint64_t rest = want;
	int rc = 0;
	while (rest >= req->min_len && *n < max_out) {
		uint64_t piece = rest < req->max_len ? rest : req->max_len;
		struct bga_extent e = {0, 0};
		if ((rc = ops->one(ctx, f, goal, req->min_len, piece, align, req->flags & ~BGA_EXACT_GOAL, &e)))
			break;
		if (*n && out[*n - 1].start + out[*n - 1].len == e.start)
			out[*n - 1].len += e.len;
		else
			out[(*n)++] = e;
		rest -= e.len;
		goal = e.start + e.len;
	}
	if (*n && (!(req->flags & BGA_ALL_OR_NOTHING) || rest == 0))
		return 0;
	for (size_t i = 0; i < *n; i++)
		ops->undo(ctx, out[i].start, out[i].len);
	*n = 0;
	return rc ? rc : -ENOSPC;
}

int ref_request_ok(const struct refalloc *r, const struct bga_request *req, uint64_t want, size_t max_out)
{
	uint64_t align = req->align > 1 ? req->align : 1;
	if (!req->min_len || req->min_len > req->max_len || (align & (align - 1)) || req->min_len % align ||
	    req->max_len % align || ((req->flags & BGA_EXACT_GOAL) && req->goal >= r->nblocks) ||
	    (want && !max_out))
		return -EINVAL;
	return 0;
}

int ref_extents_ok(const struct refalloc *r, const struct bga_request *req, uint64_t want,
                   const struct bga_extent *out, size_t n)
{
	uint64_t align = req->align > 1 ? req->align : 1;
	/* each extent as promised: in the volume, min_len .. max_len when
	 * one, aligned, and in use */
	for (size_t i = 0; i < n; i++)
		if (out[i].start < r->fdb || out[i].start + out[i].len > r->nblocks || out[i].start % align ||
		    out[i].len % align || (!want && (out[i].len < req->min_len || out[i].len > req->max_len)) ||
		    !all_are(r, out[i].start, out[i].len, 1)) {
			fprintf(stderr, "bga-replay: reference allocator: a bad extent [%" PRIu64 ", +%" PRIu64 ")\n",
			        out[i].start, out[i].len);
			return -EIO;
		}
	return 0;
}

int ref_alloc(struct refalloc *r, struct ref_file *f, const struct bga_request *req, uint64_t want,
              struct bga_extent *out, size_t max_out, size_t *n)
{
	*n = 0;
	int rc = ref_request_ok(r, req, want, max_out);
	if (rc)
		return rc;
	rc = ref_pieces(&ref_own_ops, r, f, req, want, out, max_out, n);
	if (rc == -ENOSPC && r->policy == REF_MBALLOC) {
		/* ext4 discards every preallocation before it gives up */
		pa_discard_all(r);
		rc = ref_pieces(&ref_own_ops, r, f, req, want, out, max_out, n);
	}
	return rc ? rc : ref_extents_ok(r, req, want, out, *n);
}

/* ---- the rest of the calls ---- */

static int in_volume(const struct refalloc *r, uint64_t s, uint64_t len)
{
	return len && s >= r->fdb && s < r->nblocks && len <= r->nblocks - s;
}

int ref_free(struct refalloc *r, uint64_t start, uint64_t len)
{
	if (!in_volume(r, start, len) || !all_are(r, start, len, 1) ||
	    (r->policy == REF_MBALLOC && in_a_pa(r, start, len)))
		return -EINVAL;
	return index_free(r, start, len);
}

int ref_claim(struct refalloc *r, uint64_t start, uint64_t len)
{
	if (!in_volume(r, start, len))
		return -EINVAL;
	if (r->policy == REF_MBALLOC && !all_are(r, start, len, 0) && in_a_pa(r, start, len))
		pa_discard_all(r); /* a claim takes back what preallocations hold */
	if (!all_are(r, start, len, 0))
		return -EBUSY;
	return index_take(r, extent_at(r, start), start, len);
}

int ref_file_open(struct refalloc *r, struct ref_file **out)
{
	*out = NULL;
	if (r->policy != REF_MBALLOC)
		return 0;
	struct ref_file *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->next = &r->files;
	f->prev = r->files.prev;
	r->files.prev->next = f;
	r->files.prev = f;
	*out = f;
	return 0;
}

void ref_file_close(struct refalloc *r, struct ref_file *f)
{
	if (!f)
		return;
	pa_discard(r, f);
	f->prev->next = f->next;
	f->next->prev = f->prev;
	free(f);
}

int ref_create(enum ref_policy p, uint64_t nblocks, uint64_t fdb, const struct bga_extent *fr, size_t n,
               struct refalloc **out)
{
	struct refalloc *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->policy = p;
	r->nblocks = nblocks;
	r->fdb = fdb;
	r->files.next = r->files.prev = &r->files;
	if (!(r->used = malloc((nblocks / 64 + 1) * sizeof(*r->used)))) {
		free(r);
		return -ENOMEM;
	}
	memset(r->used, 0xff, (nblocks / 64 + 1) * sizeof(*r->used));
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++)
		rc = ref_free(r, fr[i].start, fr[i].len);
	if (rc) {
		ref_destroy(r);
		return rc;
	}
	*out = r;
	return 0;
}

void ref_destroy(struct refalloc *r)
{
	if (!r)
		return;
	while (r->files.next != &r->files)
		ref_file_close(r, r->files.next);
	free(r->used);
	free(r->byaddr);
	free(r->bysize);
	free(r);
}

int ref_check(const struct refalloc *r)
{
	size_t i = 0;
	uint64_t b = r->fdb;
	while (b < r->nblocks) {
		if (bit(r, b)) {
			b++;
			continue;
		}
		uint64_t s = b;
		while (b < r->nblocks && !bit(r, b))
			b++;
		if (i >= r->n || r->byaddr[i].start != s || r->byaddr[i].len != b - s) {
			fprintf(stderr, "bga-replay: reference allocator: free run [%" PRIu64 ", %" PRIu64 ") not indexed\n",
			        s, b);
			return -EIO;
		}
		i++;
	}
	for (size_t k = 0; k + 1 < r->n; k++)
		if (!size_less(&r->bysize[k], &r->bysize[k + 1]))
			return -EIO;
	if (i != r->n) {
		fprintf(stderr, "bga-replay: reference allocator: %zu indexed extents, %zu free runs\n", r->n, i);
		return -EIO;
	}
	return 0;
}

int ref_freemap(const struct refalloc *r, uint64_t group, uint64_t unit, struct freemap *m)
{
	size_t npa = 1;
	for (const struct ref_file *f = r->files.next; f != &r->files; f = f->next)
		npa++;
	struct bga_extent *pa = malloc(npa * sizeof(*pa));
	if (!pa)
		return -ENOMEM;
	npa = 0;
	if (r->lg.pa_len)
		pa[npa++] = (struct bga_extent){r->lg.pa_start, r->lg.pa_len};
	for (const struct ref_file *f = r->files.next; f != &r->files; f = f->next)
		if (f->pa_len)
			pa[npa++] = (struct bga_extent){f->pa_start, f->pa_len};
	qsort(pa, npa, sizeof(*pa), runs_by_start);
	int rc = ref_freemap_with(r, group, unit, pa, npa, m);
	free(pa);
	return rc;
}

int ref_freemap_with(const struct refalloc *r, uint64_t group, uint64_t unit, const struct bga_extent *held,
                     size_t nheld, struct freemap *m)
{
	int rc = ref_check(r);
	if (rc)
		return rc;
	for (size_t k = 0; k < nheld; k++)
		if (!all_are(r, held[k].start, held[k].len, 1) || (k && held[k].start < held[k - 1].start + held[k - 1].len)) {
			fprintf(stderr, "bga-replay: reference allocator: held [%" PRIu64 ", +%" PRIu64 ") is free or out of order\n",
			        held[k].start, held[k].len);
			return -EIO;
		}
	freemap_init(m, group, unit);
	/* the index and the held runs, merged in address order
	 * (freemap_add joins the touching ones) */
	for (size_t i = 0, k = 0; i < r->n || k < nheld;) {
		if (k == nheld || (i < r->n && r->byaddr[i].start < held[k].start)) {
			freemap_add(m, r->byaddr[i].start, r->byaddr[i].len);
			i++;
		} else {
			freemap_add(m, held[k].start, held[k].len);
			k++;
		}
	}
	freemap_finish(m);
	return 0;
}

/* ---- for allocators built on this one (oracle.c) ---- */

int ref_free_at(const struct refalloc *r, uint64_t b, struct bga_extent *e)
{
	size_t i = b < r->nblocks ? extent_at(r, b) : r->n;
	if (i == r->n)
		return 0;
	*e = r->byaddr[i];
	return 1;
}

size_t ref_smallest(const struct refalloc *r, uint64_t need, uint64_t align, struct bga_extent *out, size_t k)
{
	struct bga_extent key = {0, need};
	size_t got = 0;
	for (size_t i = size_lower(r, &key); i < r->n && got < k; i++) {
		struct fit f;
		fit_of(&r->bysize[i], 0, align, &f);
		if (f.len >= need)
			out[got++] = r->bysize[i];
	}
	return got;
}

int ref_in_use(const struct refalloc *r, uint64_t start, uint64_t len)
{
	return in_volume(r, start, len) && all_are(r, start, len, 1);
}
