/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "refmodel.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int refm_fail(struct refmodel *m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->err, sizeof(m->err), fmt, ap);
	va_end(ap);
	return -EPROTO;
}

int refmodel_config_check(const struct bga_config *cfg)
{
	if (!cfg)
		return -EINVAL;
	if (cfg->nblocks < 1 || cfg->nblocks > BGA_MAX_BLOCKS)
		return -EINVAL;
	if (cfg->blocks_per_group < 64 || cfg->blocks_per_group > (1u << 20) || cfg->blocks_per_group % 64)
		return -EINVAL;
	if (cfg->first_data_block >= cfg->nblocks)
		return -EINVAL;
	if (cfg->lock_slots && ((cfg->lock_slots & (cfg->lock_slots - 1)) || cfg->lock_slots > (1u << 20)))
		return -EINVAL;
	if (cfg->counter_batch < 0 || cfg->counter_batch > (1 << 24))
		return -EINVAL;
	if (cfg->rsv_default > cfg->rsv_max || cfg->rsv_max > (1u << 20))
		return -EINVAL;
	if (cfg->lock_kind > 4 /* BGA_LOCK_MUTEX */)
		return -EINVAL;
	if (cfg->flags & ~(uint32_t)(BGA_GLOBAL_LOCK | BGA_ATOMIC_COUNTERS | BGA_START_FULL))
		return -EINVAL;
	if (cfg->stripe > cfg->blocks_per_group)
		return -EINVAL;
	return 0;
}

int refmodel_init(struct refmodel *m, const struct bga_config *cfg)
{
	int rc = refmodel_config_check(cfg);

	memset(m, 0, sizeof(*m));
	if (rc)
		return rc;
	if (cfg->nblocks > REFM_MAX_BLOCKS)
		return -EFBIG;
	m->state = malloc(cfg->nblocks);
	if (!m->state)
		return -ENOMEM;
	m->cfg = *cfg;
	memset(m->state, REFM_META, cfg->first_data_block);
	/* BGA_START_FULL: every block allocated, the embedder frees its own */
	bool full = cfg->flags & BGA_START_FULL;
	memset(m->state + cfg->first_data_block, full ? REFM_ALLOC : REFM_FREE, cfg->nblocks - cfg->first_data_block);
	m->nfree = full ? 0 : cfg->nblocks - cfg->first_data_block;
	return 0;
}

int refmodel_grow(struct refmodel *m, uint64_t nblocks)
{
	if (nblocks > BGA_MAX_BLOCKS || nblocks < m->cfg.nblocks)
		return -EINVAL;
	if (nblocks == m->cfg.nblocks)
		return 0;
	if (nblocks > REFM_MAX_BLOCKS)
		return -EFBIG;
	uint8_t *state = realloc(m->state, nblocks);
	if (!state)
		return -ENOMEM;
	memset(state + m->cfg.nblocks, REFM_FREE, nblocks - m->cfg.nblocks);
	m->state = state;
	m->nfree += nblocks - m->cfg.nblocks;
	m->cfg.nblocks = nblocks;
	return 0;
}

void refmodel_fini(struct refmodel *m)
{
	free(m->state);
	free(m->pend);
	memset(m, 0, sizeof(*m));
}

uint64_t refmodel_free_count(const struct refmodel *m)
{
	return m->nfree;
}

/* Groups start at block 0: group g is [g * bpg, (g + 1) * bpg). */
static uint64_t refm_group_end(const struct refmodel *m, uint64_t b)
{
	uint64_t end = (b / m->cfg.blocks_per_group + 1) * m->cfg.blocks_per_group;

	return end < m->cfg.nblocks ? end : m->cfg.nblocks;
}

static bool refm_is_free(const struct refmodel *m, uint64_t b, bool with_deferred)
{
	return m->state[b] == REFM_FREE || (with_deferred && m->state[b] == REFM_DEFERRED);
}

uint64_t refmodel_run_at(const struct refmodel *m, uint64_t start, bool with_deferred)
{
	uint64_t end, b;

	if (start >= m->cfg.nblocks)
		return 0;
	end = refm_group_end(m, start);
	b = start;
	if (!with_deferred) {
		/* eight free blocks at a time: the walks' inner loop */
		const uint64_t all_free = UINT64_C(0x0101010101010101) * REFM_FREE;
		uint64_t w;

		while (b + 8 <= end && (memcpy(&w, m->state + b, 8), w == all_free))
			b += 8;
	}
	for (; b < end && refm_is_free(m, b, with_deferred); b++)
		;
	return b - start;
}

bool refmodel_has_run(const struct refmodel *m, uint64_t min_len, bool with_deferred)
{
	uint64_t b = m->cfg.first_data_block, run;

	if (min_len == 0)
		return false;
	while (b < m->cfg.nblocks) {
		run = refmodel_run_at(m, b, with_deferred);
		if (run >= min_len)
			return true;
		b += run ? run : 1;
	}
	return false;
}

/* A run of min_len starting at a multiple of align (absolute), whose
 * length the library cuts to a multiple of align. */
static bool refm_has_aligned_run(const struct refmodel *m, uint64_t min_len, uint64_t align, bool with_deferred)
{
	uint64_t a = (m->cfg.first_data_block + align - 1) / align * align;

	for (; a < m->cfg.nblocks; a += align)
		if (refmodel_run_at(m, a, with_deferred) >= min_len)
			return true;
	return false;
}

uint64_t refm_align(const struct bga_request *req)
{
	return req->align > 1 ? req->align : 1;
}

/* Whether the request fits now (with_deferred false) or after committing
 * every pending deferred free (true), assuming the arguments are valid. */
static bool refm_alloc_fits(const struct refmodel *m, const struct bga_request *req, bool with_deferred)
{
	uint64_t free = m->nfree + (with_deferred ? m->ndeferred : 0);
	uint64_t cap;

	if (req->flags & BGA_USE_RESERVED)
		cap = m->reserved;
	else
		cap = free >= m->reserved ? free - m->reserved : 0;
	if (cap < req->min_len)
		return false;
	if (req->flags & BGA_EXACT_GOAL)
		return refmodel_run_at(m, req->goal, with_deferred) >= req->min_len;
	if (refm_align(req) > 1)
		return refm_has_aligned_run(m, req->min_len, refm_align(req), with_deferred);
	return refmodel_has_run(m, req->min_len, with_deferred);
}

/* The -EINVAL cases that do not depend on the volume's state. */
bool refm_alloc_args_bad(const struct refmodel *m, const struct bga_request *req)
{
	if (!req || req->min_len == 0 || req->min_len > req->max_len)
		return true;
	if (req->goal != BGA_NO_GOAL && req->goal >= m->cfg.nblocks)
		return true;
	if (req->flags & ~(uint32_t)(BGA_EXACT_GOAL | BGA_USE_RESERVED | BGA_WHOLE))
		return true;
	if ((req->flags & BGA_EXACT_GOAL) && (req->goal == BGA_NO_GOAL || (req->flags & BGA_WHOLE)))
		return true;
	/* the allocation unit (bgalloc.h, struct bga_request.align) */
	uint64_t a = req->align;
	if (a > 1 && ((a & (a - 1)) || a > m->cfg.blocks_per_group || req->min_len % a || req->max_len % a ||
		      req->min_len > m->cfg.blocks_per_group || ((req->flags & BGA_EXACT_GOAL) && req->goal % a)))
		return true;
	return false;
}

bool refm_reserved_short(const struct refmodel *m, const struct bga_request *req)
{
	return (req->flags & BGA_USE_RESERVED) && m->reserved < req->min_len;
}

int refmodel_alloc_expect(const struct refmodel *m, const struct bga_request *req)
{
	if (refm_alloc_args_bad(m, req) || refm_reserved_short(m, req))
		return -EINVAL;
	/* An extent never crosses a group boundary, so no run can be this long. */
	if (req->min_len > m->cfg.blocks_per_group)
		return -ENOSPC;
	if (refm_alloc_fits(m, req, false))
		return 0;
	if (m->ndeferred && refm_alloc_fits(m, req, true))
		return -EAGAIN;
	return -ENOSPC;
}

const char *refm_errname(int rc)
{
	switch (rc) {
	case 0: return "0";
	case -EINVAL: return "-EINVAL";
	case -ENOSPC: return "-ENOSPC";
	case -EAGAIN: return "-EAGAIN";
	case -ENOMEM: return "-ENOMEM";
	case -EUCLEAN: return "-EUCLEAN";
	case -EPROTO: return "-EPROTO";
	case -EBUSY: return "-EBUSY";
	default: return "(other)";
	}
}

int refmodel_alloc_check(struct refmodel *m, const struct bga_request *req, int rc,
			 const struct bga_extent *ext)
{
	int expected = refmodel_alloc_expect(m, req);
	uint64_t maxlen, cap, b;

#define REQFMT "alloc(goal=%" PRIu64 ", min=%" PRIu64 ", max=%" PRIu64 ", flags=%#x, rsv=%s)"
#define REQARG req ? req->goal : 0, req ? req->min_len : 0, req ? req->max_len : 0, req ? req->flags : 0, \
	       (req && req->rsv) ? "yes" : "no"
	if (rc != expected)
		return refm_fail(m, REQFMT " returned %d %s, model expects %s (free %" PRIu64 ", reserved %" PRIu64
				 ", deferred %" PRIu64 ")", REQARG, rc, refm_errname(rc), refm_errname(expected),
				 m->nfree, m->reserved, m->ndeferred);
	if (rc)
		return 0;
	if (!ext)
		return refm_fail(m, "alloc succeeded without an extent to check");
	maxlen = req->max_len < m->cfg.blocks_per_group ? req->max_len : m->cfg.blocks_per_group;
	maxlen -= maxlen % refm_align(req);
	if (ext->start % refm_align(req) || ext->len % refm_align(req))
		return refm_fail(m, REQFMT " returned [%" PRIu64 ", +%" PRIu64 "): not aligned to %" PRIu64, REQARG,
				 ext->start, ext->len, refm_align(req));
	if (ext->len < req->min_len || ext->len > maxlen)
		return refm_fail(m, REQFMT " returned [%" PRIu64 ", +%" PRIu64 "): length out of %" PRIu64 "..%" PRIu64,
				 REQARG, ext->start, ext->len, req->min_len, maxlen);
	if (ext->start < m->cfg.first_data_block || ext->start >= m->cfg.nblocks ||
	    ext->len > m->cfg.nblocks - ext->start)
		return refm_fail(m, REQFMT " returned [%" PRIu64 ", +%" PRIu64 "): outside the data area",
				 REQARG, ext->start, ext->len);
	if (ext->start + ext->len > refm_group_end(m, ext->start))
		return refm_fail(m, REQFMT " returned [%" PRIu64 ", +%" PRIu64 "): crosses a group boundary",
				 REQARG, ext->start, ext->len);
	if ((req->flags & BGA_EXACT_GOAL) && ext->start != req->goal)
		return refm_fail(m, REQFMT " returned [%" PRIu64 ", +%" PRIu64 "): BGA_EXACT_GOAL not honoured",
				 REQARG, ext->start, ext->len);
	for (b = ext->start; b < ext->start + ext->len; b++)
		if (m->state[b] != REFM_FREE)
			return refm_fail(m, REQFMT " returned [%" PRIu64 ", +%" PRIu64 "): block %" PRIu64
					 " handed out twice (model state %d)", REQARG, ext->start, ext->len, b,
					 m->state[b]);
	if (req->flags & BGA_USE_RESERVED)
		cap = m->reserved;
	else
		cap = m->nfree - m->reserved;
	if (ext->len > cap)
		return refm_fail(m, REQFMT " returned %" PRIu64 " blocks, more than the %" PRIu64
				 " it may take (free %" PRIu64 ", reserved %" PRIu64 ")", REQARG, ext->len, cap,
				 m->nfree, m->reserved);
#undef REQFMT
#undef REQARG
	memset(m->state + ext->start, REFM_ALLOC, ext->len);
	m->nfree -= ext->len;
	if (req->flags & BGA_USE_RESERVED)
		m->reserved -= ext->len;
	return 0;
}

/* The first aligned start in [from, to) (absolute) whose free run holds
 * len, or UINT64_MAX. */
static uint64_t refm_first_run(const struct refmodel *m, uint64_t from, uint64_t to, uint64_t len, uint64_t align)
{
	uint64_t a = (from + align - 1) / align * align;

	for (; a < to; a += align)
		if (refmodel_run_at(m, a, false) >= len)
			return a;
	return UINT64_MAX;
}

int refmodel_alloc_whole_check(struct refmodel *m, const struct bga_request *req, const struct bga_extent *ext)
{
	uint64_t bpg = m->cfg.blocks_per_group, align = refm_align(req), cap, want, first, g0, ng, i;

	if ((!(req->flags & BGA_WHOLE) && align <= 1) || (req->flags & BGA_EXACT_GOAL))
		return 0; /* not the rule's: an exact goal is there or nowhere */
	want = req->max_len < bpg ? req->max_len : bpg;
	want -= want % align;
	if (req->flags & BGA_USE_RESERVED)
		cap = m->reserved;
	else
		cap = m->nfree >= m->reserved ? m->nfree - m->reserved : 0;
	if (cap < want)
		return 0; /* placed as without the rule */
	if (req->goal == BGA_NO_GOAL) {
		/* from the CPU's home group, which the model does not know */
		first = refm_first_run(m, 0, m->cfg.nblocks, want, align);
		if (first != UINT64_MAX && ext->len != want)
			return refm_fail(m, "alloc(goal none, min=%" PRIu64 ", max=%" PRIu64 ", align %" PRIu64
					 ", whole) returned [%" PRIu64 ", +%" PRIu64 ") though [%" PRIu64
					 ", +%" PRIu64 ") was free", req->min_len, req->max_len, align, ext->start,
					 ext->len, first, want);
		return 0;
	}
	/* the goal's group from the goal on, the groups after it, round to
	 * the goal's group from its start */
	g0 = req->goal / bpg;
	ng = (m->cfg.nblocks + bpg - 1) / bpg;
	first = refm_first_run(m, req->goal, refm_group_end(m, req->goal), want, align);
	for (i = 1; first == UINT64_MAX && i <= ng; i++) {
		uint64_t g = (g0 + i) % ng;
		first = refm_first_run(m, g * bpg, g == g0 ? req->goal : refm_group_end(m, g * bpg), want, align);
	}
	if (first == UINT64_MAX)
		return 0; /* no run holds it: placed as without the rule */
	if (ext->start != first || ext->len != want)
		return refm_fail(m, "alloc(goal=%" PRIu64 ", min=%" PRIu64 ", max=%" PRIu64 ", align %" PRIu64
				 ", whole) returned [%" PRIu64 ", +%" PRIu64 "), not the first run that holds it, [%"
				 PRIu64 ", +%" PRIu64 ")", req->goal, req->min_len, req->max_len, align, ext->start,
				 ext->len, first, want);
	return 0;
}

/* The all-or-nothing checks shared by bga_free and bga_free_deferred. */
static bool refm_range_allocated(const struct refmodel *m, uint64_t start, uint64_t len)
{
	uint64_t b;

	if (len == 0 || start >= m->cfg.nblocks || len > m->cfg.nblocks - start)
		return false;
	if (start < m->cfg.first_data_block)
		return false;
	for (b = start; b < start + len; b++)
		if (m->state[b] != REFM_ALLOC)
			return false;
	return true;
}

int refmodel_free(struct refmodel *m, uint64_t start, uint64_t len)
{
	if (!refm_range_allocated(m, start, len))
		return -EINVAL;
	memset(m->state + start, REFM_FREE, len);
	m->nfree += len;
	return 0;
}

int refmodel_free_deferred(struct refmodel *m, uint64_t start, uint64_t len, uint64_t txn)
{
	struct refm_pending *p;

	if (!refm_range_allocated(m, start, len) || txn == 0 || txn <= m->last_txn)
		return -EINVAL;
	if (m->npend == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 16;

		p = realloc(m->pend, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		m->pend = p;
		m->cap = cap;
	}
	m->pend[m->npend++] = (struct refm_pending){ start, len, txn };
	memset(m->state + start, REFM_DEFERRED, len);
	m->ndeferred += len;
	return 0;
}

int refmodel_commit(struct refmodel *m, uint64_t txn)
{
	size_t i, kept = 0;

	if (txn == 0 || txn < m->last_txn)
		return -EINVAL;
	for (i = 0; i < m->npend; i++) {
		struct refm_pending *p = &m->pend[i];

		if (p->txn <= txn) {
			memset(m->state + p->start, REFM_FREE, p->len);
			m->nfree += p->len;
			m->ndeferred -= p->len;
		} else {
			m->pend[kept++] = *p;
		}
	}
	m->npend = kept;
	m->last_txn = txn;
	return 0;
}

int refmodel_reserve(struct refmodel *m, uint64_t n)
{
	if (n == 0 || n > m->cfg.nblocks)
		return -EINVAL;
	if (m->nfree - m->reserved < n)
		return -ENOSPC;
	m->reserved += n;
	return 0;
}

int refmodel_unreserve(struct refmodel *m, uint64_t n)
{
	if (n == 0 || n > m->reserved)
		return -EINVAL;
	m->reserved -= n;
	return 0;
}

struct refm_walk {
	struct refmodel *m;
	uint64_t next;  /* where the model's next free extent search starts */
	uint64_t to;    /* the end of the walk (group-aligned, or nblocks) */
	int bad;
	/* the model's free extents the walk met (each one equal to what
	 * bga_foreach_free reported), by order: a walk of the whole volume
	 * gives the histogram bga_stats must match */
	uint64_t extents, count[BGA_HIST_ORDERS], blocks[BGA_HIST_ORDERS];
};

/* The model's next maximal free extent (split at group ends) at or after
 * *b and before `to`. */
static bool refm_next_extent_before(const struct refmodel *m, uint64_t *b, uint64_t *len, uint64_t to)
{
	uint64_t run;
	const uint8_t *z;

	if (to > m->cfg.nblocks)
		to = m->cfg.nblocks;
	if (*b >= to)
		return false;
	/* the next free block in one scan, not a run per block */
	z = memchr(m->state + *b, REFM_FREE, to - *b);
	if (!z) {
		*b = to;
		return false;
	}
	*b = (uint64_t)(z - m->state);
	run = refmodel_run_at(m, *b, false);
	*len = run;
	return true;
}

static int refm_walk_cb(void *ctx, uint64_t start, uint64_t len)
{
	struct refm_walk *w = ctx;
	uint64_t b = w->next, mlen = 0;

	if (!refm_next_extent_before(w->m, &b, &mlen, w->to)) {
		refm_fail(w->m, "foreach_free reports [%" PRIu64 ", +%" PRIu64 ") but the model has no more free extents",
			  start, len);
		w->bad = 1;
		return 1;
	}
	if (b != start || mlen != len) {
		refm_fail(w->m, "foreach_free reports [%" PRIu64 ", +%" PRIu64 "), model's next free extent is [%" PRIu64
			  ", +%" PRIu64 ")", start, len, b, mlen);
		w->bad = 1;
		return 1;
	}
	w->next = b + mlen;
	w->extents++;
	w->count[63u - (unsigned)__builtin_clzll(mlen)]++;
	w->blocks[63u - (unsigned)__builtin_clzll(mlen)] += mlen;
	return 0;
}

/* The free-extent histogram: the model's maximal runs, split at groups,
 * as a walk of the whole volume tallied them (w). */
static int refm_compare_hist(struct refmodel *m, const struct bga_stats *st, const struct refm_walk *w)
{
	unsigned k;

	if (st->free_extents != w->extents)
		return refm_fail(m, "bga_stats free_extents %" PRIu64 ", model %" PRIu64, st->free_extents, w->extents);
	for (k = 0; k < BGA_HIST_ORDERS; k++)
		if (st->hist_count[k] != w->count[k] || st->hist_blocks[k] != w->blocks[k])
			return refm_fail(m, "bga_stats order %u: %" PRIu64 " extents / %" PRIu64 " blocks, model %" PRIu64
					 " / %" PRIu64, k, st->hist_count[k], st->hist_blocks[k], w->count[k], w->blocks[k]);
	if (!(st->frag_score >= 0.0 && st->frag_score <= 1.0))
		return refm_fail(m, "bga_stats frag_score %g outside [0, 1]", st->frag_score);
	if (m->nfree == 0 && st->frag_score != 0.0)
		return refm_fail(m, "bga_stats frag_score %g with nothing free", st->frag_score);
	return 0;
}

/* The counts every compare starts with. */
static int refm_compare_counts(struct refmodel *m, struct bga_volume *vol)
{
	uint64_t v;

	if (m->reserved > m->nfree)
		return refm_fail(m, "model broken: reserved %" PRIu64 " > free %" PRIu64, m->reserved, m->nfree);
	v = bga_free_exact(vol);
	if (v != m->nfree)
		return refm_fail(m, "bga_free_exact %" PRIu64 ", model %" PRIu64, v, m->nfree);
	v = bga_reserved(vol);
	if (v != m->reserved)
		return refm_fail(m, "bga_reserved %" PRIu64 ", model %" PRIu64, v, m->reserved);
	return 0;
}

/* refmodel_compare_range, with the walk's tallies in *w. */
static int refm_compare_walk(struct refmodel *m, struct bga_volume *vol, uint64_t from, uint64_t to,
			     struct refm_walk *w)
{
	uint64_t bpg = m->cfg.blocks_per_group, b, len;
	int rc = refm_compare_counts(m, vol);

	memset(w, 0, sizeof(*w));
	if (rc || from >= to)
		return rc;
	/* whole groups: a change may move any run of its groups */
	if (to > m->cfg.nblocks)
		to = m->cfg.nblocks;
	from = from / bpg * bpg;
	to = (to + bpg - 1) / bpg * bpg;
	if (to > m->cfg.nblocks)
		to = m->cfg.nblocks;
	if (from >= to)
		return 0;
	w->m = m;
	w->next = from;
	w->to = to;
	rc = bga_foreach_free(vol, from, to, 1, refm_walk_cb, w);
	if (w->bad)
		return -EPROTO;
	if (rc)
		return refm_fail(m, "bga_foreach_free [%" PRIu64 ", %" PRIu64 ") returned %d", from, to, rc);
	b = w->next;
	if (refm_next_extent_before(m, &b, &len, to))
		return refm_fail(m, "foreach_free [%" PRIu64 ", %" PRIu64 ") missed the model's free extent [%" PRIu64
				 ", +%" PRIu64 ")", from, to, b, len);
	return 0;
}

int refmodel_compare_range(struct refmodel *m, struct bga_volume *vol, uint64_t from, uint64_t to)
{
	struct refm_walk w;

	return refm_compare_walk(m, vol, from, to, &w);
}

int refmodel_compare(struct refmodel *m, struct bga_volume *vol)
{
	struct bga_check_report rep;
	struct bga_stats st;
	struct refm_walk w;
	int rc = refm_compare_walk(m, vol, 0, m->cfg.nblocks, &w);

	if (rc)
		return rc;
	memset(&rep, 0, sizeof(rep));
	rc = bga_check(vol, &rep);
	if (rc)
		return refm_fail(m, "bga_check %d (%d violations): %s", rc, rep.violations, rep.message);
	/* Statistics land later than the core; a stub answers -ENOSYS. */
	rc = bga_stats(vol, &st);
	if (rc == -ENOSYS)
		return 0;
	if (rc)
		return refm_fail(m, "bga_stats returned %d", rc);
	if (st.free_blocks != m->nfree || st.reserved_blocks != m->reserved || st.deferred_blocks != m->ndeferred ||
	    st.last_committed_txn != m->last_txn || st.nblocks != m->cfg.nblocks)
		return refm_fail(m, "bga_stats free %" PRIu64 " reserved %" PRIu64 " deferred %" PRIu64 " txn %" PRIu64
				 " nblocks %" PRIu64 "; model %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64,
				 st.free_blocks, st.reserved_blocks, st.deferred_blocks, st.last_committed_txn,
				 st.nblocks, m->nfree, m->reserved, m->ndeferred, m->last_txn, m->cfg.nblocks);
	return refm_compare_hist(m, &st, &w);
}

int refmodel_claim(struct refmodel *m, uint64_t start, uint64_t len)
{
	uint64_t b;

	if (len == 0 || start >= m->cfg.nblocks || len > m->cfg.nblocks - start || start < m->cfg.first_data_block)
		return -EINVAL;
	for (b = start; b < start + len; b++)
		if (m->state[b] != REFM_FREE)
			return -EBUSY;
	if (m->nfree - m->reserved < len)
		return -ENOSPC;
	memset(m->state + start, REFM_ALLOC, len);
	m->nfree -= len;
	return 0;
}

/* bga_free_vec's checks: n > 0, every extent one bga_free would take,
 * no two overlapping. */
static bool refm_vec_allocated(const struct refmodel *m, const struct bga_extent *ext, size_t n)
{
	size_t i, j;

	if (n == 0 || !ext)
		return false;
	for (i = 0; i < n; i++) {
		if (!refm_range_allocated(m, ext[i].start, ext[i].len))
			return false;
		for (j = 0; j < i; j++)
			if (ext[i].start < ext[j].start + ext[j].len && ext[j].start < ext[i].start + ext[i].len)
				return false;
	}
	return true;
}

int refmodel_free_deferred_vec(struct refmodel *m, const struct bga_extent *ext, size_t n, uint64_t txn)
{
	size_t i;

	if (!refm_vec_allocated(m, ext, n) || txn == 0 || txn <= m->last_txn)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (refmodel_free_deferred(m, ext[i].start, ext[i].len, txn) != 0)
			return -ENOMEM; /* the model's own: its list could not grow */
	return 0;
}

int refmodel_free_vec(struct refmodel *m, const struct bga_extent *ext, size_t n)
{
	size_t i;

	if (!refm_vec_allocated(m, ext, n))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		memset(m->state + ext[i].start, REFM_FREE, ext[i].len);
		m->nfree += ext[i].len;
	}
	return 0;
}

void refmodel_as_loaded(struct refmodel *m)
{
	size_t i;

	for (i = 0; i < m->npend; i++)
		memset(m->state + m->pend[i].start, REFM_ALLOC, m->pend[i].len);
	m->npend = 0;
	m->ndeferred = 0;
	m->reserved = 0;
}

uint64_t refmodel_group_window_blocks(void *volp, uint64_t g)
{
	struct bga_group_stats st = {.size = sizeof(st)};
	return bga_group_stats(*(struct bga_volume **)volp, g, &st) == 0 ? st.window_blocks : 0;
}

int refmodel_copy(struct refmodel *dst, const struct refmodel *src)
{
	*dst = *src;
	dst->state = malloc(src->cfg.nblocks ? src->cfg.nblocks : 1);
	dst->pend = src->cap ? malloc(src->cap * sizeof(*src->pend)) : NULL;
	if (!dst->state || (src->cap && !dst->pend)) {
		free(dst->state);
		free(dst->pend);
		memset(dst, 0, sizeof(*dst));
		return -ENOMEM;
	}
	memcpy(dst->state, src->state, src->cfg.nblocks);
	if (src->npend)
		memcpy(dst->pend, src->pend, src->npend * sizeof(*src->pend));
	return 0;
}
