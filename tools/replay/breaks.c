/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Why files split (breaks.h).  The reasons, read at the block after the
 * file's last extent: the group ended there; the file's own blocks;
 * another file's window remainder (booked at that file's first request,
 * or later); a block another file took before the file's last extent
 * was placed (the file was put in a hole that ended there: its first
 * extent, or a later one), or after it (another file's first extent, or
 * a later one); a plain request's; in use from the start; waiting for a
 * commit; free, but the request named another goal; free, but shorter
 * than the request (or a locality window, which this map cannot see);
 * free and as long.  An allocation whose extents the call itself split
 * counts a break per piece (vec-split).  A break is an extent that
 * touches none of the file's blocks, as run.c counts a file's extents
 * (runs of every block it ever got), so a block freed and taken again
 * by the same file is no break.
 */
#define _GNU_SOURCE
#include "breaks.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

enum brk {
	BRK_GOAL, BRK_GROUP_END, BRK_OWN, BRK_WIN_NEW, BRK_WIN_LATER, BRK_HOLE_FIRST, BRK_HOLE, BRK_NEW_FILE,
	BRK_LATER_FILE, BRK_PLAIN, BRK_INIT, BRK_PENDING, BRK_FREE_SHORT, BRK_FREE, BRK_VEC, BRK_N
};
static const char *const brk_name[BRK_N] = {
	"goal", "group-end", "own", "window-new", "window-later", "hole-first", "hole", "new-file",
	"later-file", "plain", "init", "pending", "free-short", "free", "vec-split"};

/* A block's owner: one of these, or a handle id + OWN_ID. */
enum { OWN_FREE, OWN_INIT, OWN_PENDING, OWN_PLAIN, OWN_ID };

struct pend {
	uint64_t start, len, txn;
};

struct breaks {
	const char *label;
	const struct trace *t;
	uint64_t nblocks;
	uint32_t group;
	size_t at; /* the record being played */
	int verbose;
	uint32_t *own;  /* by block: its owner */
	uint32_t *when; /* by block: the record that took it */
	uint32_t *ever; /* by block: the last handle id + OWN_ID that took it, kept after a free */
	uint64_t nid;   /* handle ids below it */
	uint64_t *end;  /* by id: the block after the file's last extent (0: none yet) */
	uint32_t *last, *first; /* by id: the records of its last and first allocations */
	struct bga_rsv **rsv;   /* by id, while open */
	struct pend *pend;      /* deferred frees waiting for their commit */
	size_t npend, cpend;
	uint64_t n[BRK_N], allocs, breaks, had_window;
};

static void mark(struct breaks *d, uint64_t start, uint64_t len, uint32_t own)
{
	for (uint64_t x = start; x < start + len && x < d->nblocks; x++) {
		d->own[x] = own;
		d->when[x] = (uint32_t)d->at;
		if (own >= OWN_ID)
			d->ever[x] = own;
	}
}

int breaks_open(const char *label, const struct trace *t, uint64_t nblocks, uint32_t group,
                const struct bga_extent *fr, size_t n, struct breaks **out)
{
	const char *env = getenv("BGA_REPLAY_BREAKS");
	*out = NULL;
	if (!env || !*env || !t)
		return 0;
	struct breaks *d = calloc(1, sizeof(*d));
	if (!d)
		return -1;
	d->label = label;
	d->t = t;
	d->nblocks = nblocks;
	d->group = group ? group : 1;
	d->verbose = atoi(env);
	uint64_t max = 0;
	for (size_t i = 0; i < t->nrec; i++)
		if (t->rec[i].op == BGT_RSV_OPEN && t->rec[i].args[0] > max)
			max = t->rec[i].args[0];
	d->nid = max + 1;
	if (!(d->own = calloc(nblocks, sizeof(*d->own))) || !(d->when = calloc(nblocks, sizeof(*d->when))) ||
	    !(d->ever = calloc(nblocks, sizeof(*d->ever))) || !(d->end = calloc(d->nid, sizeof(*d->end))) ||
	    !(d->last = calloc(d->nid, sizeof(*d->last))) || !(d->first = calloc(d->nid, sizeof(*d->first))) ||
	    !(d->rsv = calloc(d->nid, sizeof(*d->rsv)))) {
		breaks_close(d);
		return -1;
	}
	mark(d, 0, nblocks, OWN_INIT);
	for (size_t i = 0; i < n; i++)
		mark(d, fr[i].start, fr[i].len, OWN_FREE);
	*out = d;
	return 0;
}

void breaks_close(struct breaks *d)
{
	if (!d)
		return;
	if (d->own) {
		fprintf(stderr,
		        "breaks %s at record %zu: %" PRIu64 " of %" PRIu64 " allocations through handles (%" PRIu64
		        " with a window left)",
		        d->label, d->at, d->breaks, d->allocs, d->had_window);
		for (int i = 0; i < BRK_N; i++)
			if (d->n[i])
				fprintf(stderr, " %s %" PRIu64, brk_name[i], d->n[i]);
		fprintf(stderr, "\n");
	}
	free(d->own);
	free(d->when);
	free(d->ever);
	free(d->end);
	free(d->last);
	free(d->first);
	free(d->rsv);
	free(d->pend);
	free(d);
}

void breaks_at(struct breaks *d, size_t i)
{
	if (d)
		d->at = i;
}

/* The handle id of the record being played (an allocation's, an open's
 * or a close's), 0 when it names none. */
static uint64_t record_id(const struct breaks *d)
{
	const struct trace_rec *r = d->at < d->t->nrec ? &d->t->rec[d->at] : NULL;
	return r && r->args[0] < d->nid ? r->args[0] : 0;
}

static enum brk reason(struct breaks *d, uint64_t id, const struct bga_request *req, uint64_t *who)
{
	uint64_t x = d->end[id];
	*who = 0;
	if (x >= d->nblocks || x % d->group == 0)
		return BRK_GROUP_END;
	uint32_t o = d->own[x];
	if (o == OWN_ID + id)
		return BRK_OWN;
	if (o >= OWN_ID) {
		*who = o - OWN_ID;
		if (d->when[x] < d->last[id])
			return d->last[id] == d->first[id] ? BRK_HOLE_FIRST : BRK_HOLE;
		return d->when[x] == d->first[*who] ? BRK_NEW_FILE : BRK_LATER_FILE;
	}
	if (o != OWN_FREE)
		return o == OWN_INIT ? BRK_INIT : o == OWN_PENDING ? BRK_PENDING : BRK_PLAIN;
	for (uint64_t k = 1; k < d->nid; k++) {
		struct bga_extent w;
		if (k != id && d->rsv[k] && !bga_rsv_window(d->rsv[k], &w) && w.len && x >= w.start &&
		    x < w.start + w.len) {
			*who = k;
			return d->last[k] == d->first[k] ? BRK_WIN_NEW : BRK_WIN_LATER;
		}
	}
	if (req->goal != BGA_NO_GOAL && req->goal != x)
		return BRK_GOAL; /* free after the file, but asked for elsewhere */
	uint64_t run = 0;
	while (x + run < d->nblocks && run < req->max_len && d->own[x + run] == OWN_FREE)
		run++;
	if (run < req->max_len && x + run < d->nblocks && d->own[x + run] >= OWN_ID)
		*who = d->own[x + run] - OWN_ID;
	return run < req->max_len ? BRK_FREE_SHORT : BRK_FREE;
}

void breaks_alloc(struct breaks *d, struct bga_rsv *rsv, const struct bga_request *req, uint64_t window,
                  const struct bga_extent *out, size_t n)
{
	if (!d || !n)
		return;
	uint64_t id = rsv ? record_id(d) : 0;
	if (id && d->end[id]) {
		d->allocs++;
		uint64_t who = 0, s = out[0].start, e = out[0].start + out[0].len;
		bool joins = (s && d->ever[s - 1] == OWN_ID + id) || (e < d->nblocks && d->ever[e] == OWN_ID + id);
		enum brk why = !joins ? reason(d, id, req, &who) : BRK_N;
		if (why != BRK_N) {
			d->breaks++;
			d->n[why]++;
			d->had_window += window != 0;
			if (d->verbose > 1)
				fprintf(stderr,
				        "break %zu file %" PRIu64 " at %" PRIu64 " got %" PRIu64 "+%" PRIu64 " goal %" PRId64
				        " max %" PRIu64 " window %" PRIu64 ": %s %" PRIu64 "\n",
				        d->at, id, d->end[id], out[0].start, out[0].len,
				        req->goal == BGA_NO_GOAL ? (int64_t)-1 : (int64_t)req->goal, req->max_len, window,
				        brk_name[why], who);
		}
	}
	for (size_t i = 1; id && i < n; i++)
		if (out[i].start != out[i - 1].start + out[i - 1].len) {
			d->breaks++;
			d->n[BRK_VEC]++;
		}
	struct bga_extent after = {0, 0};
	if (d->verbose > 2 && id && !bga_rsv_window(rsv, &after))
		fprintf(stderr,
		        "alloc %zu file %" PRIu64 " got %" PRIu64 "+%" PRIu64 " (%zu) goal %" PRId64 " min %" PRIu64
		        " max %" PRIu64 " window %" PRIu64 " then %" PRIu64 "+%" PRIu64 "\n",
		        d->at, id, out[0].start, out[0].len, n, req->goal == BGA_NO_GOAL ? (int64_t)-1 : (int64_t)req->goal,
		        req->min_len, req->max_len, window, after.start, after.len);
	for (size_t i = 0; i < n; i++)
		mark(d, out[i].start, out[i].len, id ? (uint32_t)(OWN_ID + id) : OWN_PLAIN);
	if (id) {
		if (!d->end[id])
			d->first[id] = (uint32_t)d->at;
		d->last[id] = (uint32_t)d->at;
		d->end[id] = out[n - 1].start + out[n - 1].len;
	}
}

void breaks_free(struct breaks *d, const struct bga_extent *e, size_t n)
{
	for (size_t i = 0; d && i < n; i++)
		mark(d, e[i].start, e[i].len, OWN_FREE);
}

void breaks_defer(struct breaks *d, const struct bga_extent *e, size_t n, uint64_t txn)
{
	for (size_t i = 0; d && i < n; i++) {
		mark(d, e[i].start, e[i].len, OWN_PENDING);
		if (d->npend == d->cpend) {
			size_t nc = d->cpend ? 2 * d->cpend : 64;
			struct pend *np = realloc(d->pend, nc * sizeof(*np));
			if (!np)
				return; /* a diagnostic: left waiting in the map */
			d->pend = np;
			d->cpend = nc;
		}
		d->pend[d->npend++] = (struct pend){e[i].start, e[i].len, txn};
	}
}

void breaks_commit(struct breaks *d, uint64_t txn)
{
	if (!d)
		return;
	size_t k = 0;
	for (size_t i = 0; i < d->npend; i++) {
		if (d->pend[i].txn <= txn)
			mark(d, d->pend[i].start, d->pend[i].len, OWN_FREE);
		else
			d->pend[k++] = d->pend[i];
	}
	d->npend = k;
}

void breaks_claim(struct breaks *d, uint64_t start, uint64_t len)
{
	if (d)
		mark(d, start, len, OWN_INIT);
}

void breaks_rsv_open(struct breaks *d, struct bga_rsv *rsv)
{
	if (d && record_id(d))
		d->rsv[record_id(d)] = rsv;
}

void breaks_rsv_close(struct breaks *d, struct bga_rsv *rsv)
{
	if (!d)
		return;
	if (d->rsv[record_id(d)] == rsv) {
		d->rsv[record_id(d)] = NULL;
		return;
	}
	/* closed at the end of a replay, past its record */
	for (uint64_t k = 1; k < d->nid; k++)
		if (d->rsv[k] == rsv)
			d->rsv[k] = NULL;
}
