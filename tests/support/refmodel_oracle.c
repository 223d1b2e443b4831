/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The commit-and-retry oracle of bga_alloc_vec (refmodel_oracle.h).
 *
 * Brute force, over the model's map: the runs found block by block, and
 * then, for every number k of extents up to max_out, the most blocks k
 * extents can cover (a dynamic programme over the runs and how many
 * extents each gets: j extents in a run of aligned length L cover any
 * total from j * min_len to min(j * max_len, L)); want fits when some k
 * has k * min_len <= want <= that most.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "refmodel_oracle.h"

struct refm_run {
	uint64_t len; /* aligned length */
};

/* The runs of the header's rule, in block order; *n gets their number.
 * Free here means REFM_FREE (the caller commits a copy first to ask about
 * the state after the commit). */
static struct refm_run *refm_vec_runs(const struct refmodel *m, uint64_t min, uint64_t align, size_t *n)
{
	uint64_t bpg = m->cfg.blocks_per_group, nb = m->cfg.nblocks;
	struct refm_run *runs = malloc((nb / 2 + 2) * sizeof(*runs));
	uint64_t open_lo = 0, open_hi = 0; /* the joined run being built; open_hi 0: none */
	*n = 0;
	if (!runs)
		return NULL;
	for (uint64_t b = m->cfg.first_data_block; b < nb;) {
		if (m->state[b] != REFM_FREE) {
			b++;
			continue;
		}
		/* a free run inside one group: [lo, b) */
		uint64_t lo = b, gend = (lo / bpg + 1) * bpg;
		while (b < nb && b < gend && m->state[b] == REFM_FREE)
			b++;
		uint64_t alo = (lo + align - 1) / align * align, ahi = b / align * align;
		if (ahi <= alo || ahi - alo < min)
			continue; /* holds no aligned run of min_len */
		if (open_hi != 0 && open_hi == lo) {
			open_hi = b; /* touches the one before, across a group boundary */
			continue;
		}
		if (open_hi != 0)
			runs[(*n)++].len = open_hi / align * align - (open_lo + align - 1) / align * align;
		open_lo = lo;
		open_hi = b;
	}
	if (open_hi != 0)
		runs[(*n)++].len = open_hi / align * align - (open_lo + align - 1) / align * align;
	return runs;
}

/* Does want fit in at most max_out extents (the model's map as it is)? */
static bool refm_vec_fits(const struct refmodel *m, const struct bga_request *req, uint64_t want, size_t max_out)
{
	uint64_t align = refm_align(req), min = req->min_len, max = req->max_len;
	uint64_t room = (req->flags & BGA_USE_RESERVED) ? m->reserved
		      : m->nfree > m->reserved ? m->nfree - m->reserved : 0;
	if (want < min || want > room)
		return false;
	uint64_t kmax = want / min < max_out ? want / min : max_out;
	size_t nruns;
	struct refm_run *runs = refm_vec_runs(m, min, align, &nruns);
	/* most[k]: the most blocks k extents can cover over the runs so far;
	 * UINT64_MAX: k extents cannot be placed */
	uint64_t *most = malloc((kmax + 1) * sizeof(*most)), *next = malloc((kmax + 1) * sizeof(*next));
	bool fits = false;
	if (!runs || !most || !next)
		abort(); /* the oracle cannot judge without memory */
	for (uint64_t k = 0; k <= kmax; k++)
		most[k] = k == 0 ? 0 : UINT64_MAX;
	for (size_t i = 0; i < nruns; i++) {
		memcpy(next, most, (kmax + 1) * sizeof(*next));
		for (uint64_t k = 0; k <= kmax; k++) {
			if (most[k] == UINT64_MAX)
				continue;
			for (uint64_t j = 1; k + j <= kmax && j * min <= runs[i].len; j++) {
				uint64_t cover = j * max < runs[i].len ? j * max : runs[i].len;
				if (next[k + j] == UINT64_MAX || next[k + j] < most[k] + cover)
					next[k + j] = most[k] + cover;
			}
		}
		memcpy(most, next, (kmax + 1) * sizeof(*most));
	}
	for (uint64_t k = 1; k <= kmax && !fits; k++)
		fits = most[k] != UINT64_MAX && k * min <= want && want <= most[k];
	free(runs);
	free(most);
	free(next);
	return fits;
}

int refm_vec_answer(const struct refmodel *m, const struct bga_request *req, uint64_t want, size_t max_out)
{
	bool all = req->flags & BGA_ALL_OR_NOTHING;
	/* without all or nothing: one extent of min_len, when want holds one */
	uint64_t w = all ? want : want >= req->min_len ? req->min_len : want;
	size_t k = all ? max_out : 1;
	if (refm_vec_fits(m, req, w, k))
		return 0;
	/* after every pending free commits: a copy, committed */
	struct refmodel after;
	uint64_t last = m->last_txn;
	for (size_t i = 0; i < m->npend; i++)
		last = m->pend[i].txn > last ? m->pend[i].txn : last;
	if (m->npend == 0)
		return -ENOSPC;
	if (refmodel_copy(&after, m) != 0)
		abort();
	int rc = refmodel_commit(&after, last);
	bool fits = rc == 0 && refm_vec_fits(&after, req, w, k);
	refmodel_fini(&after);
	return fits ? -EAGAIN : -ENOSPC;
}

/* The check of one bga_alloc_vec answer against the oracle above and the
 * model (refmodel.h): it lives with the oracle, which it calls, so that the
 * model calls nothing of its judge. */
/* refmodel_alloc_expect, on the model with every group that holds window
 * blocks (m->window_blocks) counted as used. */
static int refm_expect_outside_windows(struct refmodel *m, const struct bga_request *req)
{
	if (m->window_blocks == NULL)
		return refmodel_alloc_expect(m, req);
	uint64_t bpg = m->cfg.blocks_per_group, ng = (m->cfg.nblocks + bpg - 1) / bpg;
	uint8_t *keep = malloc(m->cfg.nblocks ? m->cfg.nblocks : 1);
	if (keep == NULL)
		return refmodel_alloc_expect(m, req);
	memcpy(keep, m->state, m->cfg.nblocks);
	uint64_t hidden = 0;
	for (uint64_t g = 0; g < ng; g++) {
		if (m->window_blocks(m->window_ctx, g) == 0)
			continue;
		uint64_t lo = g * bpg, hi = lo + bpg < m->cfg.nblocks ? lo + bpg : m->cfg.nblocks;
		for (uint64_t b = lo; b < hi; b++)
			if (m->state[b] == REFM_FREE) {
				m->state[b] = REFM_ALLOC;
				hidden++;
			}
	}
	m->nfree -= hidden;
	int rc = refmodel_alloc_expect(m, req);
	m->nfree += hidden;
	memcpy(m->state, keep, m->cfg.nblocks);
	free(keep);
	return rc;
}

int refmodel_alloc_vec_check(struct refmodel *m, const struct bga_request *req, uint64_t want, size_t max_out,
			     int rc, const struct bga_extent *out, size_t n)
{
	struct bga_request p;
	uint64_t align, total = 0, avail, b;
	int expected;
	bool all;
	size_t i, j;

#define VFMT "alloc_vec(goal=%" PRIu64 ", min=%" PRIu64 ", max=%" PRIu64 ", align=%" PRIu64 ", flags=%#x, rsv=%s, " \
	     "want=%" PRIu64 ", max_out=%zu)"
#define VARG req ? req->goal : 0, req ? req->min_len : 0, req ? req->max_len : 0, req ? req->align : 0, \
	     req ? req->flags : 0, (req && req->rsv) ? "yes" : "no", want, max_out
	if (!req)
		return rc == -EINVAL ? 0 : refm_fail(m, "alloc_vec(NULL req) returned %d", rc);
	p = *req;
	p.flags &= ~(uint32_t)BGA_ALL_OR_NOTHING;
	align = refm_align(req);
	all = req->flags & BGA_ALL_OR_NOTHING;
	/* 1. the arguments, before any state-dependent code */
	if (max_out == 0 || want == 0 || (req->flags & BGA_EXACT_GOAL) || refm_alloc_args_bad(m, &p) ||
	    want % align || refm_reserved_short(m, &p)) {
		if (rc != -EINVAL || n)
			return refm_fail(m, VFMT " returned %d %s (%zu extents), model expects -EINVAL", VARG, rc,
					 refm_errname(rc), n);
		return 0;
	}
	if (req->flags & BGA_USE_RESERVED) {
		uint64_t r = m->reserved / align * align;
		if (r < want && !all)
			want = r; /* capped at what is reserved */
	}
	/* 2. the answer the header gives, by brute force */
	expected = refm_vec_answer(m, req, want, max_out);
	if (rc != 0 || expected != 0) {
		if (rc != expected || n)
			return refm_fail(m, VFMT " returned %d %s (%zu extents), the header's answer is %s (free %" PRIu64
					 ", reserved %" PRIu64 ", deferred %" PRIu64 ")", VARG, rc, refm_errname(rc), n,
					 expected == 0 ? "success" : refm_errname(expected), m->nfree, m->reserved,
					 m->ndeferred);
		return 0;
	}
	/* 4. a success: the extents */
	if (n == 0 || n > max_out)
		return refm_fail(m, VFMT " returned 0 with %zu extents", VARG, n);
	for (i = 0; i < n; i++) {
		const struct bga_extent *e = &out[i];
		if (e->len < req->min_len || e->len > req->max_len || e->start % align || e->len % align)
			return refm_fail(m, VFMT " extent %zu [%" PRIu64 ", +%" PRIu64 "): bad length or alignment", VARG,
					 i, e->start, e->len);
		if (e->start < m->cfg.first_data_block || e->start >= m->cfg.nblocks ||
		    e->len > m->cfg.nblocks - e->start)
			return refm_fail(m, VFMT " extent %zu [%" PRIu64 ", +%" PRIu64 "): outside the data area", VARG, i,
					 e->start, e->len);
		for (b = e->start; b < e->start + e->len; b++)
			if (m->state[b] != REFM_FREE)
				return refm_fail(m, VFMT " extent %zu [%" PRIu64 ", +%" PRIu64 "): block %" PRIu64
						 " handed out twice (model state %d)", VARG, i, e->start, e->len, b,
						 m->state[b]);
		for (j = 0; j < i; j++)
			if (e->start < out[j].start + out[j].len && out[j].start < e->start + e->len)
				return refm_fail(m, VFMT " extents %zu and %zu overlap", VARG, j, i);
		if (i && out[i - 1].start + out[i - 1].len == e->start && out[i - 1].len + e->len <= req->max_len)
			return refm_fail(m, VFMT " extents %zu [%" PRIu64 ", +%" PRIu64 ") and %zu [%" PRIu64 ", +%" PRIu64
					 ") touch and fit in max_len, not merged", VARG, i - 1, out[i - 1].start,
					 out[i - 1].len, i, e->start, e->len);
		total += e->len;
	}
	avail = (req->flags & BGA_USE_RESERVED) ? m->reserved : m->nfree - m->reserved;
	if (total > want || total > avail || (all && total != want))
		return refm_fail(m, VFMT " handed out %" PRIu64 " blocks (may take %" PRIu64 ", free %" PRIu64
				 ", reserved %" PRIu64 ")", VARG, total, avail, m->nfree, m->reserved);
	for (i = 0; i < n; i++)
		memset(m->state + out[i].start, REFM_ALLOC, out[i].len);
	m->nfree -= total;
	if (req->flags & BGA_USE_RESERVED)
		m->reserved -= total;
	/* a partial result that did not fill out[] must have run out, of
	 * runs outside other windows (alloc.h, where a request looks) */
	if (total < want && n < max_out && want - total >= req->min_len) {
		p.max_len = req->max_len;
		if (refm_expect_outside_windows(m, &p) == 0) {
			for (i = 0; i < n; i++)
				memset(m->state + out[i].start, REFM_FREE, out[i].len);
			m->nfree += total;
			if (req->flags & BGA_USE_RESERVED)
				m->reserved += total;
			return refm_fail(m, VFMT " stopped at %" PRIu64 " blocks in %zu extents, but a run of min_len "
					 "is still free", VARG, total, n);
		}
	}
#undef VFMT
#undef VARG
	return 0;
}
