/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The clairvoyant reference (oracle.h).  The free space is a bestfit
 * refalloc's (the truth, checked there); what the oracle adds is the
 * future, read by a pre-pass, and each file's extent, kept here as a
 * bit a block (reserved: the file's and unused) and the owning file a
 * block, so that a free knows whether its block goes back to a file.
 */
#include "oracle.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refalloc.h"

#define NONE32 UINT32_MAX
#define CANDIDATES 64 /* oracle,death: the smallest free extents weighed a request */

/* What the pre-pass learnt of a record. */
struct future {
	uint64_t n;  /* rsv_open: the most blocks the file held at once; alloc: the blocks the call got */
	float death; /* the mean record at which those blocks are freed (nrec: never) */
};

struct oracle_file {
	uint32_t id;         /* its blocks' owner in who[] */
	uint64_t rs, rlen;   /* its extent; rlen 0: none (never booked, or given back) */
	uint64_t low;        /* no unused block of the extent lies below this */
	uint64_t peak;       /* blocks it will hold at most, 0: not known */
	uint64_t unused;     /* its unused blocks */
	float death;         /* when its blocks die */
	uint64_t held;       /* blocks it holds now */
	int booked;          /* its first request came */
	int spent;           /* it gave its unused blocks back for another's request: books no more */
	struct oracle_file *prev, *next;
};

struct oracle {
	int by_death;
	int no_files; /* files=off: every request placed alone */
	struct refalloc *r;
	uint64_t nblocks, fdb;
	size_t nrec;
	struct future *fut; /* by record */
	size_t at;          /* the record played now, SIZE_MAX: none */
	uint32_t *who;      /* the file (its id) whose extent holds each block, 0: none */
	uint64_t *resv;     /* a bit a block: a file's unused block (in use in r) */
	float *dies;        /* when each block in use is expected to be freed */
	struct oracle_file **byid;
	uint32_t nid, capid;
	struct oracle_file files; /* the open ones, a ring */
};

static int resv_bit(const struct oracle *o, uint64_t b)
{
	return (int)(o->resv[b / 64] >> (b % 64) & 1);
}

static void resv_set(struct oracle *o, uint64_t b, int v)
{
	if (v)
		o->resv[b / 64] |= UINT64_C(1) << (b % 64);
	else
		o->resv[b / 64] &= ~(UINT64_C(1) << (b % 64));
}

/* ---- the pre-pass ---- */

struct prepass {
	uint32_t *owner; /* a recorded block's file: its rsv_open record + 1, 0: none */
	uint32_t *arec;  /* the alloc record that got it + 1, 0: none */
	uint64_t *held;  /* by rsv_open record: blocks the file holds now */
	double *dsum;    /* by record: the sum of its blocks' death records */
	uint64_t *dn;    /* and how many */
	size_t *cur;     /* by handle: its open rsv_open record, SIZE_MAX none */
	size_t ncur;
};

static int handle_slot(struct prepass *p, uint64_t h, size_t **slot)
{
	if (h >= p->ncur) {
		size_t nn = p->ncur ? p->ncur : 64;
		while (nn <= h)
			nn *= 2;
		size_t *nc = realloc(p->cur, nn * sizeof(*nc));
		if (!nc)
			return -ENOMEM;
		for (size_t i = p->ncur; i < nn; i++)
			nc[i] = SIZE_MAX;
		p->cur = nc;
		p->ncur = nn;
	}
	*slot = &p->cur[h];
	return 0;
}

/* Block b (recorded) dies at record i. */
static void dies_at(struct oracle *o, struct prepass *p, uint64_t b, size_t i)
{
	if (b >= o->nblocks)
		return;
	if (p->arec[b]) {
		p->dsum[p->arec[b] - 1] += (double)i;
		p->dn[p->arec[b] - 1]++;
	} else if (o->dies[b] == (float)o->nrec) {
		o->dies[b] = (float)i; /* in use when the recording began */
	}
	if (p->owner[b]) {
		size_t L = p->owner[b] - 1;
		p->held[L] -= p->held[L] > 0;
		p->dsum[L] += (double)i;
		p->dn[L]++;
	}
	p->arec[b] = p->owner[b] = 0;
}

static int prepass_alloc(struct oracle *o, struct prepass *p, const struct trace *t, size_t i)
{
	const struct trace_rec *r = &t->rec[i];
	const struct bga_extent *e = trace_ext(t, r);
	size_t L = SIZE_MAX, *slot;
	if (r->args[0]) {
		if (handle_slot(p, r->args[0], &slot))
			return -ENOMEM;
		L = *slot;
	}
	for (uint32_t k = 0; k < r->next; k++)
		for (uint64_t b = e[k].start; b < e[k].start + e[k].len && b < o->nblocks; b++) {
			if (p->arec[b] || p->owner[b])
				dies_at(o, p, b, i); /* taken again without a free seen: the old one ends here */
			p->arec[b] = (uint32_t)i + 1;
			p->owner[b] = L == SIZE_MAX ? 0 : (uint32_t)L + 1;
			o->fut[i].n++;
			if (L != SIZE_MAX && ++p->held[L] > o->fut[L].n)
				o->fut[L].n = p->held[L];
		}
	return 0;
}

/* The future of every record (oracle.h), as the replay will play it:
 * records whose call failed are skipped, as run.c skips them. */
static int prepass(struct oracle *o, const struct trace *t)
{
	struct prepass p = {0};
	int rc = -ENOMEM;
	if (t->nrec >= NONE32 || !(p.owner = calloc(o->nblocks, sizeof(*p.owner))) ||
	    !(p.arec = calloc(o->nblocks, sizeof(*p.arec))) || !(p.held = calloc(t->nrec + 1, sizeof(*p.held))) ||
	    !(p.dsum = calloc(t->nrec + 1, sizeof(*p.dsum))) || !(p.dn = calloc(t->nrec + 1, sizeof(*p.dn))))
		goto out;
	for (size_t i = 0; i < t->nrec; i++) {
		const struct trace_rec *r = &t->rec[i];
		const struct bga_extent *e = trace_ext(t, r);
		size_t *slot;
		if (r->rc)
			continue;
		switch (r->op) {
		case BGT_RSV_OPEN:
		case BGT_RSV_CLOSE:
			if (handle_slot(&p, r->args[0], &slot))
				goto out;
			*slot = r->op == BGT_RSV_OPEN ? i : SIZE_MAX;
			break;
		case BGT_ALLOC:
		case BGT_ALLOC_VEC:
			if (prepass_alloc(o, &p, t, i))
				goto out;
			break;
		case BGT_FREE:
		case BGT_FREE_DEFERRED:
		case BGT_CLAIM:
			for (uint64_t b = r->args[0]; b < r->args[0] + r->args[1] && b < o->nblocks; b++)
				dies_at(o, &p, b, r->op == BGT_CLAIM ? t->nrec : i);
			break;
		case BGT_FREE_VEC:
		case BGT_FREE_DEFERRED_VEC:
			for (uint32_t k = 0; k < r->next; k++)
				for (uint64_t b = e[k].start; b < e[k].start + e[k].len && b < o->nblocks; b++)
					dies_at(o, &p, b, i);
			break;
		default:
			break;
		}
	}
	/* what is never freed dies at the end */
	for (uint64_t b = 0; b < o->nblocks; b++)
		if (p.arec[b] || p.owner[b])
			dies_at(o, &p, b, t->nrec);
	for (size_t i = 0; i < t->nrec; i++)
		o->fut[i].death = p.dn[i] ? (float)(p.dsum[i] / (double)p.dn[i]) : (float)t->nrec;
	rc = 0;
out:
	free(p.owner);
	free(p.arec);
	free(p.held);
	free(p.dsum);
	free(p.dn);
	free(p.cur);
	return rc;
}

/* ---- placing in the free space ---- */

static void mark_dies(struct oracle *o, uint64_t s, uint64_t len, float death)
{
	for (uint64_t b = s; b < s + len; b++)
		o->dies[b] = death;
}

static double dist(const struct oracle *o, uint64_t b, float death)
{
	return b < o->nblocks ? fabs((double)o->dies[b] - (double)death) : fabs((double)o->nrec - (double)death);
}

/* oracle,death: of the smallest free extents with an aligned run of max,
 * one it fills, else the one whose neighbour dies closest to `death`,
 * against that neighbour.  1 and *out, or 0. */
static int by_death(struct oracle *o, uint64_t max, uint64_t align, float death, struct bga_extent *out)
{
	struct bga_extent c[CANDIDATES];
	size_t k = ref_smallest(o->r, max, align, c, CANDIDATES);
	double best = INFINITY;
	for (size_t i = 0; i < k; i++) {
		uint64_t end = c[i].start + c[i].len;
		uint64_t left = (c[i].start + align - 1) / align * align, right = (end - max) / align * align;
		/* the volume's ends never free: they die with what never does */
		double dl = dist(o, c[i].start ? c[i].start - 1 : o->nblocks, death), dr = dist(o, end, death);
		double score = c[i].len == max ? -1 : dl < dr ? dl : dr;
		if (score < best) {
			best = score;
			*out = (struct bga_extent){dl <= dr ? left : right, max};
		}
	}
	return k > 0;
}

/* Whether block b is an open file's that will grow (it holds fewer
 * blocks than it will): the free run after it is where it goes on. */
static int growing(const struct oracle *o, uint64_t b)
{
	const struct oracle_file *f = b < o->nblocks && o->who[b] ? o->byid[o->who[b]] : NULL;
	return f && f->peak > f->held;
}

/* oracle: the smallest free extent with an aligned run of max (the
 * lowest of equals), at its start, or at its end where the start goes
 * on from a file that will grow.  1 and *out, or 0. */
static int by_size(struct oracle *o, uint64_t max, uint64_t align, struct bga_extent *out)
{
	struct bga_extent c;
	if (!ref_smallest(o->r, max, align, &c, 1))
		return 0;
	uint64_t left = (c.start + align - 1) / align * align, right = (c.start + c.len - max) / align * align;
	*out = (struct bga_extent){c.start && growing(o, c.start - 1) ? right : left, max};
	return 1;
}

/* An extent of min .. max blocks from the free space, dying at `death`:
 * the goal's run when it holds max from the goal (a file going on in
 * place), else oracle's best fit or oracle,death's choice; else the
 * longest run, as much as it holds (refalloc's bestfit). */
static int place(struct oracle *o, uint64_t goal, uint64_t min, uint64_t max, uint64_t align, float death,
                 struct bga_extent *out)
{
	struct bga_extent e;
	int rc;
	if (!o->by_death && goal != BGA_NO_GOAL && goal % align == 0 && ref_free_at(o->r, goal, &e) &&
	    e.start + e.len - goal >= max)
		e = (struct bga_extent){goal, max};
	else if (!(o->by_death ? by_death(o, max, align, death, &e) : by_size(o, max, align, &e)))
		e.len = 0;
	if (e.len) {
		if ((rc = ref_claim(o->r, e.start, e.len)))
			return rc == -EBUSY ? -EIO : rc;
	} else {
		struct bga_request req = {.goal = o->by_death ? BGA_NO_GOAL : goal, .min_len = min, .max_len = max,
		                          .align = align};
		size_t n;
		if ((rc = ref_alloc(o->r, NULL, &req, 0, &e, 1, &n)))
			return rc;
	}
	mark_dies(o, e.start, e.len, death);
	*out = e;
	return 0;
}

/* ---- a file's extent ---- */

/* The unused run of f's extent from block s, at most max long. */
static uint64_t run_from(const struct oracle *o, const struct oracle_file *f, uint64_t s, uint64_t max)
{
	uint64_t len = 0, end = f->rs + f->rlen;
	while (s + len < end && len < max && resv_bit(o, s + len))
		len++;
	return len;
}

static void take_resv(struct oracle *o, struct oracle_file *f, uint64_t s, uint64_t len, struct bga_extent *out)
{
	f->unused -= len;
	for (uint64_t b = s; b < s + len; b++)
		resv_set(o, b, 0);
	*out = (struct bga_extent){s, len};
}

/* need .. max blocks of f's unused ones: at the goal, else the lowest
 * run that holds them.  1 and *out, or 0. */
static int from_extent(struct oracle *o, struct oracle_file *f, uint64_t goal, uint64_t need, uint64_t max,
                       uint64_t align, struct bga_extent *out)
{
	uint64_t end = f->rs + f->rlen, len;
	if (!f->rlen)
		return 0;
	if (goal != BGA_NO_GOAL && goal >= f->rs && goal < end && goal % align == 0 &&
	    (len = run_from(o, f, goal, max) / align * align) >= need) {
		take_resv(o, f, goal, len, out);
		return 1;
	}
	for (uint64_t s = f->low; s < end;) {
		if (!resv_bit(o, s)) {
			if (s == f->low)
				f->low++;
			s++;
			continue;
		}
		uint64_t run = run_from(o, f, s, UINT64_MAX), as = (s + align - 1) / align * align;
		len = as < s + run ? (s + run - as) / align * align : 0;
		if (len >= need) {
			take_resv(o, f, as, len < max ? len : max, out);
			return 1;
		}
		s += run;
	}
	return 0;
}

/* f's unused blocks back to the free space, and its extent gone: its
 * blocks in use are freed to the free space from now on. */
static void give_back(struct oracle *o, struct oracle_file *f)
{
	uint64_t end = f->rs + f->rlen;
	for (uint64_t b = f->low; b < end;) {
		uint64_t run = resv_bit(o, b) ? run_from(o, f, b, UINT64_MAX) : 0;
		if (!run) {
			b++;
			continue;
		}
		for (uint64_t k = b; k < b + run; k++)
			resv_set(o, k, 0);
		ref_free(o->r, b, run);
		b += run;
	}
	f->rlen = f->unused = 0;
}

/* The open file holding the most unused blocks gives them back (the
 * fewest files split when the volume runs short): 1, or 0 when none
 * holds any. */
static int give_back_most(struct oracle *o)
{
	struct oracle_file *most = NULL;
	for (struct oracle_file *f = o->files.next; f != &o->files; f = f->next)
		if (f->unused && (!most || f->unused > most->unused))
			most = f;
	if (most) {
		give_back(o, most);
		most->spent = 1;
	}
	return most != NULL;
}

/* f's extent, at a request of max blocks: `size` blocks (what the file
 * will hold at most, less what it holds), as much of it as one free
 * extent holds. */
static void book(struct oracle *o, struct oracle_file *f, uint64_t goal, uint64_t max, uint64_t align, uint64_t size)
{
	size = size > max ? size : max;
	struct bga_extent e;
	f->booked = 1;
	size = (size + align - 1) / align * align;
	if (place(o, goal, max, size, align, f->death, &e))
		return;
	f->rs = f->low = e.start;
	f->rlen = f->unused = e.len;
	for (uint64_t b = e.start; b < e.start + e.len; b++) {
		resv_set(o, b, 1);
		o->who[b] = f->id;
	}
}

/* ---- the calls ---- */

static int one(void *ctx, void *file, uint64_t goal, uint64_t min, uint64_t max, uint64_t align, uint32_t flags,
               struct bga_extent *out)
{
	struct oracle *o = ctx;
	struct oracle_file *f = file;
	struct bga_extent e;
	int rc;
	if (flags & BGA_EXACT_GOAL) {
		uint64_t len;
		if (goal % align)
			return -ENOSPC;
		if (f && f->rlen && goal >= f->rs && goal < f->rs + f->rlen &&
		    (len = run_from(o, f, goal, max) / align * align) >= min) {
			take_resv(o, f, goal, len, out);
			goto got;
		}
		if (!ref_free_at(o->r, goal, &e) || (len = (e.start + e.len - goal) / align * align) < min)
			return -ENOSPC;
		*out = (struct bga_extent){goal, len < max ? len : max};
		mark_dies(o, goal, out->len, f ? f->death : (float)o->nrec);
		if ((rc = ref_claim(o->r, goal, out->len)) || !f)
			return rc;
		goto got;
	}
	if (f && !f->booked)
		book(o, f, goal, max, align, f->peak);
	if (f && from_extent(o, f, goal, max, max, align, out))
		goto got;
	if (f && !f->spent && f->peak >= f->held + max) {
		/* its extent is used up (a free extent held only part of it):
		 * the next, sized to the rest */
		give_back(o, f);
		book(o, f, goal, max, align, f->peak - f->held);
		if (from_extent(o, f, goal, max, max, align, out))
			goto got;
	}
	float death = f ? f->death : o->at != SIZE_MAX ? o->fut[o->at].death : (float)o->nrec;
	/* no free extent holds the whole request: files' unused blocks go
	 * back, the file holding most first, until one does (the request
	 * placed short, or a vec's piece failed, would end the call short
	 * of what the recording got); then as much as there is, the file's
	 * own first */
	while ((rc = place(o, goal, max, max, align, death, out)) == -ENOSPC && give_back_most(o))
		;
	if (rc == -ENOSPC && min < max && f && from_extent(o, f, goal, min, max, align, out))
		goto got;
	if (rc == -ENOSPC && min < max)
		rc = place(o, goal, min, max, align, death, out);
	if (rc || !f)
		return rc;
got:
	f->held += out->len;
	for (uint64_t b = out->start; b < out->start + out->len; b++)
		o->who[b] = f->id;
	return 0;
}

static void undo(void *ctx, uint64_t start, uint64_t len)
{
	oracle_free(ctx, start, len);
}

static const struct ref_ops oracle_ops = {one, undo};

int oracle_alloc(struct oracle *o, struct oracle_file *f, const struct bga_request *req, uint64_t want,
                 struct bga_extent *out, size_t max_out, size_t *n)
{
	*n = 0;
	int rc = ref_request_ok(o->r, req, want, max_out);
	if (rc)
		return rc;
	struct bga_request q = *req;
	uint64_t align = req->align > 1 ? req->align : 1;
	/* as many blocks as the recording got, where the contract lets it */
	if (o->at != SIZE_MAX && o->fut[o->at].n) {
		uint64_t got = o->fut[o->at].n;
		if (!want && got >= req->min_len && got <= req->max_len && got % align == 0)
			q.max_len = got;
		else if (want && got >= req->min_len && got < want)
			want = got;
	}
	if (o->no_files)
		f = NULL;
	rc = ref_pieces(&oracle_ops, o, f, &q, want, out, max_out, n);
	while (rc == -ENOSPC && give_back_most(o))
		rc = ref_pieces(&oracle_ops, o, f, &q, want, out, max_out, n);
	o->at = SIZE_MAX;
	return rc ? rc : ref_extents_ok(o->r, req, want, out, *n);
}

/* The open file whose extent block b (in use) goes back to when freed. */
static struct oracle_file *back_to(const struct oracle *o, uint64_t b)
{
	struct oracle_file *f = o->who[b] ? o->byid[o->who[b]] : NULL;
	return f && f->rlen && b >= f->rs && b < f->rs + f->rlen ? f : NULL;
}

int oracle_free(struct oracle *o, uint64_t start, uint64_t len)
{
	if (!ref_in_use(o->r, start, len))
		return -EINVAL;
	for (uint64_t b = start; b < start + len; b++)
		if (resv_bit(o, b))
			return -EINVAL;
	for (uint64_t b = start; b < start + len;) {
		struct oracle_file *f = back_to(o, b);
		if (f) {
			resv_set(o, b, 1);
			f->unused++;
			f->held--;
			if (b < f->low)
				f->low = b;
			b++;
			continue;
		}
		uint64_t s = b;
		for (; b < start + len && !back_to(o, b); b++) {
			/* an open file's block outside its extent */
			if (o->who[b] && o->byid[o->who[b]])
				o->byid[o->who[b]]->held--;
			o->who[b] = 0;
		}
		int rc = ref_free(o->r, s, b - s);
		if (rc)
			return rc;
	}
	return 0;
}

int oracle_claim(struct oracle *o, uint64_t start, uint64_t len)
{
	if (!len || start < o->fdb || start >= o->nblocks || len > o->nblocks - start)
		return -EINVAL;
	for (uint64_t b = start; b < start + len; b++)
		if (!resv_bit(o, b) && ref_in_use(o->r, b, 1))
			return -EBUSY;
	/* a file's unused blocks it takes leave the file's extent */
	for (uint64_t b = start; b < start + len; b++)
		if (resv_bit(o, b)) {
			resv_set(o, b, 0);
			o->byid[o->who[b]]->unused--;
			o->who[b] = 0;
			ref_free(o->r, b, 1);
		}
	mark_dies(o, start, len, (float)o->nrec);
	return ref_claim(o->r, start, len);
}

void oracle_at(struct oracle *o, size_t i)
{
	o->at = i < o->nrec ? i : SIZE_MAX;
}

int oracle_file_open(struct oracle *o, struct oracle_file **out)
{
	*out = NULL;
	if (o->nid + 1 >= o->capid) {
		uint32_t nc = o->capid ? 2 * o->capid : 1024;
		struct oracle_file **nb = realloc(o->byid, nc * sizeof(*nb));
		if (!nb)
			return -ENOMEM;
		memset(nb + o->capid, 0, (nc - o->capid) * sizeof(*nb));
		o->byid = nb;
		o->capid = nc;
	}
	struct oracle_file *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->id = ++o->nid;
	f->death = (float)o->nrec;
	if (o->at != SIZE_MAX) {
		f->peak = o->fut[o->at].n;
		f->death = o->fut[o->at].death;
	}
	o->at = SIZE_MAX;
	o->byid[f->id] = f;
	f->next = &o->files;
	f->prev = o->files.prev;
	o->files.prev->next = f;
	o->files.prev = f;
	*out = f;
	return 0;
}

void oracle_file_close(struct oracle *o, struct oracle_file *f)
{
	if (!f)
		return;
	give_back(o, f);
	o->byid[f->id] = NULL;
	f->prev->next = f->next;
	f->next->prev = f->prev;
	free(f);
}

int oracle_parse(const char *spec, unsigned *opts)
{
	*opts = 0;
	if (strncmp(spec, "oracle", 6) || (spec[6] && spec[6] != ','))
		goto bad;
	for (const char *p = spec + 6; *p;) {
		const char *kv = p + 1, *end = strchr(kv, ',');
		size_t len = end ? (size_t)(end - kv) : strlen(kv);
		if (len == 5 && !strncmp(kv, "death", 5))
			*opts |= ORACLE_DEATH;
		else if (len == 9 && !strncmp(kv, "files=off", 9))
			*opts |= ORACLE_NO_FILES;
		else if (!(len == 8 && !strncmp(kv, "files=on", 8)))
			goto bad;
		p = kv + len;
	}
	return 0;
bad:
	fprintf(stderr, "bga-replay: allocator '%s': the oracle's options are death and files=on|off "
	                "(oracle[,death][,files=off])\n",
	        spec);
	return -1;
}

int oracle_create(unsigned opts, const struct trace *t, uint64_t nblocks, uint64_t fdb, const struct bga_extent *fr,
                  size_t n, struct oracle **out)
{
	struct oracle *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->by_death = !!(opts & ORACLE_DEATH);
	o->no_files = !!(opts & ORACLE_NO_FILES);
	o->nblocks = nblocks;
	o->fdb = fdb;
	o->nrec = t->nrec;
	o->at = SIZE_MAX;
	o->files.next = o->files.prev = &o->files;
	int rc = -ENOMEM;
	if (!(o->fut = calloc(t->nrec + 1, sizeof(*o->fut))) || !(o->who = calloc(nblocks + 1, sizeof(*o->who))) ||
	    !(o->resv = calloc(nblocks / 64 + 1, sizeof(*o->resv))) ||
	    !(o->dies = malloc((nblocks + 1) * sizeof(*o->dies))))
		goto bad;
	for (uint64_t b = 0; b <= nblocks; b++)
		o->dies[b] = (float)t->nrec;
	if ((rc = ref_create(REF_BESTFIT, nblocks, fdb, fr, n, &o->r)) || (rc = prepass(o, t)))
		goto bad;
	*out = o;
	return 0;
bad:
	oracle_destroy(o);
	return rc;
}

void oracle_destroy(struct oracle *o)
{
	if (!o)
		return;
	while (o->files.next != &o->files)
		oracle_file_close(o, o->files.next);
	ref_destroy(o->r);
	free(o->fut);
	free(o->who);
	free(o->resv);
	free(o->dies);
	free(o->byid);
	free(o);
}

int oracle_freemap(const struct oracle *o, uint64_t group, uint64_t unit, struct freemap *m)
{
	size_t n = 0, cap = 64;
	struct bga_extent *held = malloc(cap * sizeof(*held));
	if (!held)
		return -ENOMEM;
	for (uint64_t w = 0; w <= o->nblocks / 64; w++) {
		if (!o->resv[w])
			continue;
		for (uint64_t b = w * 64; b < (w + 1) * 64 && b < o->nblocks; b++) {
			if (!resv_bit(o, b))
				continue;
			const struct oracle_file *f = o->who[b] ? o->byid[o->who[b]] : NULL;
			if (!f || b < f->rs || b >= f->rs + f->rlen) {
				fprintf(stderr, "bga-replay: oracle: unused block %" PRIu64 " outside its file's extent\n", b);
				free(held);
				return -EIO;
			}
			if (n && held[n - 1].start + held[n - 1].len == b) {
				held[n - 1].len++;
				continue;
			}
			if (n == cap) {
				struct bga_extent *nh = realloc(held, (cap *= 2) * sizeof(*nh));
				if (!nh) {
					free(held);
					return -ENOMEM;
				}
				held = nh;
			}
			held[n++] = (struct bga_extent){b, 1};
		}
	}
	int rc = ref_freemap_with(o->r, group, unit, held, n, m);
	free(held);
	return rc;
}
