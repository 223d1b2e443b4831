/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A file's block map: a sorted array of extents.  Random writes into a
 * fallocated file split its unwritten extents, and a full overwrite merges
 * them back; a binary search plus a memmove per change is plenty for the
 * tens of thousands of extents such a file reaches.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bgafs.h"

/* Index of the first extent that ends after lblk (n when none). */
static uint32_t first_ending_after(const struct extmap *m, uint64_t lblk)
{
	uint32_t lo = 0, hi = m->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (m->v[mid].lblk + m->v[mid].len <= lblk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

enum map_state extmap_lookup(const struct extmap *m, uint64_t lblk, uint64_t *pblk, uint64_t *run)
{
	uint32_t i = first_ending_after(m, lblk);
	if (i == m->n) {
		*run = UINT64_MAX;
		return MAP_HOLE;
	}
	const struct extent *e = &m->v[i];
	if (e->lblk > lblk) {
		*run = e->lblk - lblk;
		return MAP_HOLE;
	}
	*pblk = e->pblk + (lblk - e->lblk);
	*run = e->lblk + e->len - lblk;
	return (e->flags & EXT_UNWRITTEN) ? MAP_UNWRITTEN : MAP_WRITTEN;
}

static int mergeable(const struct extent *a, const struct extent *b)
{
	return a->lblk + a->len == b->lblk && a->pblk + a->len == b->pblk && a->flags == b->flags &&
	       (uint64_t)a->len + b->len <= INT32_MAX;
}

int extmap_reserve(struct extmap *m, uint32_t extra)
{
	if (m->n + extra <= m->cap)
		return 0;
	uint32_t cap = m->cap ? m->cap : 4;
	while (cap < m->n + extra)
		cap *= 2;
	struct extent *v = realloc(m->v, (size_t)cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	m->v = v;
	m->cap = cap;
	return 0;
}

int extmap_set(struct extmap *m, uint64_t lblk, uint64_t pblk, uint32_t len, uint32_t flags)
{
	if (extmap_reserve(m, 3))
		return -ENOMEM;
	uint64_t end = lblk + len;
	uint32_t i = first_ending_after(m, lblk), j = i;
	uint64_t removed = 0;
	while (j < m->n && m->v[j].lblk < end)
		removed += m->v[j++].len;

	struct extent repl[3];
	int nr = 0;
	if (i < j && m->v[i].lblk < lblk) {
		repl[nr] = m->v[i];
		repl[nr++].len = (uint32_t)(lblk - m->v[i].lblk);
	}
	int mid = nr;
	repl[nr++] = (struct extent){lblk, pblk, len, flags};
	if (i < j && m->v[j - 1].lblk + m->v[j - 1].len > end) {
		const struct extent *r = &m->v[j - 1];
		repl[nr++] = (struct extent){end, r->pblk + (end - r->lblk),
					     (uint32_t)(r->lblk + r->len - end), r->flags};
	}
	uint64_t added = 0;
	for (int k = 0; k < nr; k++)
		added += repl[k].len;

	memmove(&m->v[i + nr], &m->v[j], (size_t)(m->n - j) * sizeof(*m->v));
	memcpy(&m->v[i], repl, (size_t)nr * sizeof(*repl));
	m->n = m->n - (j - i) + (uint32_t)nr;
	m->blocks = m->blocks - removed + added;

	/* Merge the new extent with its neighbours so a file written in order
	 * or overwritten whole stays a handful of extents. */
	uint32_t k = i + (uint32_t)mid;
	if (k + 1 < m->n && mergeable(&m->v[k], &m->v[k + 1])) {
		m->v[k].len += m->v[k + 1].len;
		memmove(&m->v[k + 1], &m->v[k + 2], (size_t)(m->n - k - 2) * sizeof(*m->v));
		m->n--;
	}
	if (k > 0 && mergeable(&m->v[k - 1], &m->v[k])) {
		m->v[k - 1].len += m->v[k].len;
		memmove(&m->v[k], &m->v[k + 1], (size_t)(m->n - k - 1) * sizeof(*m->v));
		m->n--;
	}
	return 0;
}

void extmap_truncate(struct extmap *m, uint64_t lblk, extmap_free_fn fn, void *ctx)
{
	uint32_t i = first_ending_after(m, lblk), keep = i;
	for (uint32_t k = i; k < m->n; k++) {
		struct extent *e = &m->v[k];
		if (e->lblk < lblk) {
			uint32_t cut = (uint32_t)(lblk - e->lblk);
			fn(ctx, e->pblk + cut, e->len - cut);
			m->blocks -= e->len - cut;
			e->len = cut;
			keep = k + 1;
		} else {
			fn(ctx, e->pblk, e->len);
			m->blocks -= e->len;
		}
	}
	m->n = keep;
}

int extmap_punch(struct extmap *m, uint64_t lblk, uint64_t end, extmap_free_fn fn, void *ctx)
{
	/* One extent may span the whole range and split in two: room for one
	 * more first, so nothing fails once blocks are being handed to fn. */
	if (extmap_reserve(m, 1))
		return -ENOMEM;
	uint32_t i = first_ending_after(m, lblk);
	if (i < m->n && m->v[i].lblk < lblk && m->v[i].lblk + m->v[i].len > end) {
		struct extent *e = &m->v[i];
		struct extent right = {end, e->pblk + (end - e->lblk), (uint32_t)(e->lblk + e->len - end), e->flags};
		fn(ctx, e->pblk + (lblk - e->lblk), end - lblk);
		m->blocks -= end - lblk;
		e->len = (uint32_t)(lblk - e->lblk);
		memmove(&m->v[i + 2], &m->v[i + 1], (size_t)(m->n - i - 1) * sizeof(*m->v));
		m->v[i + 1] = right;
		m->n++;
		return 0;
	}
	if (i < m->n && m->v[i].lblk < lblk) { /* the head of v[i] stays */
		struct extent *e = &m->v[i];
		uint32_t keep = (uint32_t)(lblk - e->lblk);
		fn(ctx, e->pblk + keep, e->len - keep);
		m->blocks -= e->len - keep;
		e->len = keep;
		i++;
	}
	uint32_t j = i;
	for (; j < m->n && m->v[j].lblk + m->v[j].len <= end; j++) {
		fn(ctx, m->v[j].pblk, m->v[j].len);
		m->blocks -= m->v[j].len;
	}
	if (j < m->n && m->v[j].lblk < end) { /* the tail of v[j] stays */
		struct extent *e = &m->v[j];
		uint32_t cut = (uint32_t)(end - e->lblk);
		fn(ctx, e->pblk, cut);
		m->blocks -= cut;
		e->lblk += cut;
		e->pblk += cut;
		e->len -= cut;
	}
	memmove(&m->v[i], &m->v[j], (size_t)(m->n - j) * sizeof(*m->v));
	m->n -= j - i;
	return 0;
}

int extmap_near(const struct extmap *m, uint64_t lblk, uint64_t *anchor, int64_t *distance)
{
	uint32_t i = first_ending_after(m, lblk);
	if (i < m->n && m->v[i].lblk <= lblk) { /* mapped: not asked for */
		*anchor = m->v[i].pblk + (lblk - m->v[i].lblk);
		*distance = 0;
		return 0;
	}
	if (i > 0) { /* the last block of the extent before lblk */
		const struct extent *e = &m->v[i - 1];
		*anchor = e->pblk + e->len - 1;
		*distance = (int64_t)(lblk - (e->lblk + e->len - 1));
		return 0;
	}
	if (i == m->n)
		return -ENOENT;
	*anchor = m->v[i].pblk; /* none before: the first block of the one after */
	*distance = -(int64_t)(m->v[i].lblk - lblk);
	return 0;
}

void extmap_destroy(struct extmap *m)
{
	free(m->v);
	memset(m, 0, sizeof(*m));
}
