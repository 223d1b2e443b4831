/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The model against the read calls of 0.3.0 (refmodel.h,
 * refmodel_compare_walks): bga_foreach_used, the longest free run and
 * bga_group_stats, each from its contract in <bgalloc.h>, with the model's
 * one byte per block as the truth.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "refmodel.h"

/* The end of the run of blocks like b's (free, allocated, pending) from
 * b, inside b's group. */
static uint64_t run_end(const struct refmodel *m, uint64_t b)
{
	uint64_t bpg = m->cfg.blocks_per_group, end = (b / bpg + 1) * bpg, e = b + 1;
	if (end > m->cfg.nblocks)
		end = m->cfg.nblocks;
	while (e < end && m->state[e] == m->state[b])
		e++;
	return e;
}

bool refmodel_used_next(const struct refmodel *m, uint64_t from, uint64_t to, uint64_t *start, uint64_t *len,
			uint32_t *flags)
{
	uint64_t b = from < m->cfg.first_data_block ? m->cfg.first_data_block : from;
	if (to > m->cfg.nblocks)
		to = m->cfg.nblocks;
	while (b < to && m->state[b] == REFM_FREE)
		b = run_end(m, b);
	if (b >= to)
		return false;
	uint64_t e = run_end(m, b);
	*start = b;
	*len = (e < to ? e : to) - b;
	*flags = m->state[b] == REFM_DEFERRED ? BGA_USED_DEFERRED : 0;
	return true;
}

struct used_check {
	struct refmodel *m;
	uint64_t next; /* the first block not yet accounted for */
	int rc;
};

/* Each extent must be the next run of allocated blocks the model holds,
 * none skipped. */
static int used_cb(void *ctx, uint64_t start, uint64_t len, uint32_t flags)
{
	struct used_check *u = ctx;
	struct refmodel *m = u->m;
	uint64_t ms, ml;
	uint32_t mf;
	if (!refmodel_used_next(m, u->next, m->cfg.nblocks, &ms, &ml, &mf))
		u->rc = refm_fail(m, "bga_foreach_used reported [%" PRIu64 ", +%" PRIu64 ") past the model's last "
				      "allocated block",
				   start, len);
	else if (start != ms || len != ml || flags != mf)
		u->rc = refm_fail(m, "bga_foreach_used reported [%" PRIu64 ", +%" PRIu64 ") flags %u, the model's "
				      "next allocated run is [%" PRIu64 ", +%" PRIu64 ") flags %u",
				   start, len, flags, ms, ml, mf);
	u->next = start + len;
	return u->rc;
}

static int compare_used(struct refmodel *m, struct bga_volume *vol)
{
	struct used_check u = {m, 0, 0};
	int rc = bga_foreach_used(vol, 0, m->cfg.nblocks, used_cb, &u);
	uint64_t ms, ml;
	uint32_t mf;
	if (u.rc)
		return u.rc;
	if (rc)
		return refm_fail(m, "bga_foreach_used returned %d", rc);
	if (refmodel_used_next(m, u.next, m->cfg.nblocks, &ms, &ml, &mf))
		return refm_fail(m, "bga_foreach_used missed the model's allocated run at %" PRIu64, ms);
	return 0;
}

/* Group g's free blocks, pending blocks and longest free run in the model. */
static void model_group(const struct refmodel *m, uint64_t g, uint64_t *free, uint64_t *pending, uint64_t *longest)
{
	uint64_t bpg = m->cfg.blocks_per_group, b = g * bpg, end = b + bpg;
	if (end > m->cfg.nblocks)
		end = m->cfg.nblocks;
	*free = *pending = *longest = 0;
	while (b < end) {
		uint64_t e = run_end(m, b);
		if (m->state[b] == REFM_FREE) {
			*free += e - b;
			if (e - b > *longest)
				*longest = e - b;
		} else if (m->state[b] == REFM_DEFERRED) {
			*pending += e - b;
		}
		b = e;
	}
}

int refmodel_compare_group(struct refmodel *m, struct bga_volume *vol, uint64_t g)
{
	uint64_t free, pending, longest, bpg = m->cfg.blocks_per_group, first = g * bpg;
	uint64_t end = first + bpg < m->cfg.nblocks ? first + bpg : m->cfg.nblocks;
	uint64_t lo = first > m->cfg.first_data_block ? first : m->cfg.first_data_block;
	uint64_t span = end > lo ? end - lo : 0;
	model_group(m, g, &free, &pending, &longest);
	struct bga_group_stats st;
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	int rc = bga_group_stats(vol, g, &st);
	if (rc)
		return refm_fail(m, "bga_group_stats(%" PRIu64 ") returned %d", g, rc);
	if (st.size != sizeof(st) || st.group != g || st.first_block != first || st.span_blocks != span ||
	    st.free_blocks != free || st.deferred_blocks != pending || st.longest_run != longest)
		return refm_fail(m, "bga_group_stats(%" PRIu64 "): span %" PRIu64 " free %" PRIu64 " pending %" PRIu64
				     " longest %" PRIu64 "; model %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64,
				  g, st.span_blocks, st.free_blocks, st.deferred_blocks, st.longest_run, span, free,
				  pending, longest);
	return 0;
}

int refmodel_compare_longest(struct refmodel *m, struct bga_volume *vol)
{
	uint64_t bpg = m->cfg.blocks_per_group, ngroups = (m->cfg.nblocks + bpg - 1) / bpg;
	uint64_t best = 0, best_group = UINT64_MAX;
	for (uint64_t g = 0; g < ngroups; g++) {
		uint64_t free, pending, longest;
		model_group(m, g, &free, &pending, &longest);
		if (longest > best) {
			best = longest;
			best_group = g;
		}
	}
	uint64_t len = UINT64_MAX - 1, group = UINT64_MAX - 1;
	int rc = bga_longest_free_sum(vol, &len, &group);
	if (rc || len != best || group != best_group)
		return refm_fail(m, "bga_longest_free_sum returned %d: %" PRIu64 " in group %" PRIu64
				     "; model %" PRIu64 " in group %" PRIu64,
				  rc, len, group, best, best_group);
	uint64_t read = bga_longest_free_read(vol);
	if (read > bpg)
		return refm_fail(m, "bga_longest_free_read %" PRIu64 " is longer than a group", read);
	return 0;
}

int refmodel_compare_walks(struct refmodel *m, struct bga_volume *vol)
{
	uint64_t bpg = m->cfg.blocks_per_group, ngroups = (m->cfg.nblocks + bpg - 1) / bpg;
	int rc = compare_used(m, vol);
	for (uint64_t g = 0; rc == 0 && g < ngroups; g++)
		rc = refmodel_compare_group(m, vol, g);
	return rc ? rc : refmodel_compare_longest(m, vol);
}
