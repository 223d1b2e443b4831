/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga_trim (<bgalloc/walk.h>): each free extent claimed while it is
 * discarded, the trimmed flag, a failing discard; and the free-space
 * figures (<bgalloc/stats.h>) that foreach cross-checks.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "testutil.h"

static struct bga_volume *make(uint64_t nblocks, uint32_t bpg) { return make_volume(nblocks, bpg, 0); }


struct collect {
	uint64_t blocks, extents;
	struct bga_volume *vol;
	bool probe;
	int probe_failures;
};

static int collect_cb(void *ctx, uint64_t start, uint64_t len)
{
	struct collect *c = ctx;
	c->blocks += len;
	c->extents++;
	if (c->probe) {
		/* While it is discarded, the extent is in use: an exact-goal
		 * allocation inside it must fail. */
		struct bga_request req = {.goal = start, .min_len = 1, .max_len = 1, .flags = BGA_EXACT_GOAL};
		struct bga_extent e;
		if (bga_alloc(c->vol, &req, &e) != -ENOSPC)
			c->probe_failures++;
	}
	return 0;
}

Test(trim, discards_free_space_once)
{
	struct bga_volume *vol = make(4096, 1024);
	struct bga_request req = {.goal = 100, .min_len = 50, .max_len = 50};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	struct collect c = {.vol = vol, .probe = true};
	uint64_t trimmed;
	cr_assert_eq(bga_trim(vol, 0, 4096, 1, collect_cb, &c, &trimmed), 0);
	cr_assert_eq(trimmed, 4046);
	cr_assert_eq(c.blocks, 4046);
	cr_assert_eq(c.extents, 5, "two pieces in group 0, three whole groups");
	cr_assert_eq(c.probe_failures, 0);
	cr_assert_eq(bga_free_exact(vol), 4046, "trim gave everything back");
	assert_clean(vol);
	memset(&c, 0, sizeof(c));
	cr_assert_eq(bga_trim(vol, 0, 4096, 1, collect_cb, &c, &trimmed), 0);
	cr_assert_eq(trimmed, 0, "nothing freed since: every group skipped");
	cr_assert_eq(bga_free(vol, 120, 10), 0);
	cr_assert_eq(bga_trim(vol, 0, 4096, 1, collect_cb, &c, &trimmed), 0);
	cr_assert_eq(c.extents, 3, "only group 0 again: 100..120 was ... now 0..100, 120..130, 150..1024");
	cr_assert_eq(trimmed, 100 + 10 + 874);
	cr_assert_eq(bga_trim(vol, 10, 5, 1, collect_cb, &c, NULL), -EINVAL);
	cr_assert_eq(bga_trim(vol, 0, 5000, 1, collect_cb, &c, NULL), -EINVAL);
	cr_assert_eq(bga_trim(vol, 0, 10, 0, collect_cb, &c, NULL), -EINVAL);
	cr_assert_eq(bga_trim(vol, 0, 10, 1, NULL, &c, NULL), -EINVAL);
	bga_destroy(vol);
}

struct failing_discard {
	int calls;
	int rc;
};

static int failing_discard_cb(void *ctx, uint64_t start, uint64_t len)
{
	(void)start;
	(void)len;
	struct failing_discard *f = ctx;
	f->calls++;
	return f->rc;
}

/* bga_trim: "a non-zero return from cb stops the trim (every claimed
 * extent is still freed) and is returned".  Group 0 has two free runs,
 * both claimed together: the callback refuses the first, is not called
 * for the second, nothing counts as trimmed and every block is free
 * again; a trim after it discards everything. */
Test(trim, a_failing_discard_stops_and_frees_every_claim)
{
	struct bga_volume *vol = make(4096, 1024);
	struct bga_request req = {.goal = 100, .min_len = 50, .max_len = 50, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	struct failing_discard f = {.rc = -EIO};
	uint64_t trimmed = 12345;
	cr_assert_eq(bga_trim(vol, 0, 1024, 1, failing_discard_cb, &f, &trimmed), -EIO);
	cr_assert_eq(f.calls, 1, "the trim went on after its callback failed");
	cr_assert_eq(trimmed, 0);
	cr_assert_eq(bga_free_exact(vol), 4046, "a claim was not given back");
	assert_clean(vol);
	struct bga_extent all[8];
	size_t n = 0;
	struct bga_request whole = {.goal = 0, .min_len = 100, .max_len = 100, .flags = BGA_EXACT_GOAL};
	cr_assert_eq(bga_alloc(vol, &whole, &all[n++]), 0, "the first claimed run is not allocatable again");
	whole.goal = 150;
	whole.min_len = whole.max_len = 874;
	cr_assert_eq(bga_alloc(vol, &whole, &all[n++]), 0, "the second claimed run is not allocatable again");
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(bga_free(vol, all[i].start, all[i].len), 0);
	f.rc = 0;
	f.calls = 0;
	cr_assert_eq(bga_trim(vol, 0, 4096, 1, failing_discard_cb, &f, &trimmed), 0);
	cr_assert_eq(trimmed, 4046);
	bga_destroy(vol);
}

/* bga_group_stats' flags: BGA_GSTAT_TRIMMED once bga_trim discarded the
 * group's free runs, gone when a block is freed into it. */
Test(trim, group_stats_flag_a_trimmed_group_until_a_free)
{
	struct bga_volume *vol = make(4096, 1024);
	struct bga_request req = {.goal = 1100, .min_len = 10, .max_len = 10, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	struct bga_group_stats gs = {.size = sizeof(gs)};
	cr_assert_eq(bga_group_stats(vol, 1, &gs), 0);
	cr_assert_eq(gs.flags & BGA_GSTAT_TRIMMED, 0);
	struct failing_discard f = {0};
	cr_assert_eq(bga_trim(vol, 0, 4096, 1, failing_discard_cb, &f, NULL), 0);
	for (uint64_t g = 0; g < 4; g++) {
		memset(&gs, 0, sizeof(gs));
		gs.size = sizeof(gs);
		cr_assert_eq(bga_group_stats(vol, g, &gs), 0);
		cr_assert(gs.flags & BGA_GSTAT_TRIMMED, "group %llu not flagged trimmed", (unsigned long long)g);
		cr_assert_eq(gs.free_blocks, g == 1 ? 1014 : 1024);
	}
	cr_assert_eq(bga_free(vol, e.start, e.len), 0);
	memset(&gs, 0, sizeof(gs));
	gs.size = sizeof(gs);
	cr_assert_eq(bga_group_stats(vol, 1, &gs), 0);
	cr_assert_eq(gs.flags & BGA_GSTAT_TRIMMED, 0, "freed into since, still flagged trimmed");
	cr_assert_eq(gs.free_blocks, 1024);
	bga_destroy(vol);
}

/* A discard callback that frees a block into the group it discards. */
struct free_during {
	struct bga_volume *vol;
	uint64_t block;
	int calls;
	uint64_t discarded_block; /* times `block` was discarded */
};

static int free_during_cb(void *ctx, uint64_t start, uint64_t len)
{
	struct free_during *f = ctx;
	if (f->block >= start && f->block < start + len)
		f->discarded_block++;
	if (f->calls++ == 0)
		cr_assert_eq(bga_free(f->vol, f->block, 1), 0);
	return 0;
}

/* A block freed into a group while the trim discards it clears the
 * group's trimmed flag (freed into since): the next trim discards it. */
Test(trim, a_free_during_the_discard_clears_the_flag)
{
	struct bga_volume *vol = make(4096, 1024);
	struct bga_request req = {.goal = 1100, .min_len = 1, .max_len = 1, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	struct free_during f = {.vol = vol, .block = 1100};
	cr_assert_eq(bga_trim(vol, 1024, 2048, 1, free_during_cb, &f, NULL), 0);
	cr_assert_eq(f.discarded_block, 0);
	struct bga_group_stats gs = {.size = sizeof(gs)};
	cr_assert_eq(bga_group_stats(vol, 1, &gs), 0);
	cr_assert_eq(gs.flags & BGA_GSTAT_TRIMMED, 0, "freed into during the discard, still flagged trimmed");
	cr_assert_eq(bga_trim(vol, 1024, 2048, 1, free_during_cb, &f, NULL), 0);
	cr_assert_eq(f.discarded_block, 1, "the block freed during the discard was never discarded");
	bga_destroy(vol);
}

Test(stats, histogram_and_fragmentation)
{
	struct bga_volume *vol = make(4096, 1024);
	struct bga_stats st;
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_assert_eq(st.free_blocks, 4096);
	cr_assert_eq(st.hist_count[10], 4, "four whole 1024-block groups");
	cr_assert_float_eq(st.frag_score, 0.0, 1e-9, "an empty volume is not fragmented");
	/* allocate every other block of group 0 */
	struct bga_request req = {.min_len = 1, .max_len = 1, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	for (uint64_t b = 0; b < 4096; b += 2) {
		req.goal = b;
		cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	}
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_assert_eq(st.free_blocks, 2048);
	cr_assert_eq(st.hist_count[0], 2048);
	cr_assert_eq(st.free_extents, 2048);
	cr_assert_float_eq(st.frag_score, 1.0, 1e-9, "all single blocks is the worst case");
	cr_assert_eq(st.groups_initialised, 4);
	cr_assert_geq(st.lock_acquisitions, 2048);
	struct collect c = {0};
	cr_assert_eq(bga_foreach_free(vol, 0, 4096, 1, collect_cb, &c), 0);
	cr_assert_eq(c.blocks, 2048);
	memset(&c, 0, sizeof(c));
	cr_assert_eq(bga_foreach_free(vol, 0, 4096, 2, collect_cb, &c), 0);
	cr_assert_eq(c.blocks, 0, "no run of 2");
	bga_destroy(vol);
}

/* bga_longest_free_sum of a full volume: *len 0 and *group UINT64_MAX;
 * one block freed, a run of 1 in its group. */
Test(stats, longest_free_of_a_full_volume)
{
	struct bga_volume *vol = make(4096, 1024);
	fill_groups(vol, 4, 1024);
	uint64_t len = 77, group = 77;
	cr_assert_eq(bga_longest_free_sum(vol, &len, &group), 0);
	cr_assert_eq(len, 0);
	cr_assert_eq(group, UINT64_MAX);
	cr_assert_eq(bga_free(vol, 2 * 1024 + 5, 1), 0);
	cr_assert_eq(bga_longest_free_sum(vol, &len, &group), 0);
	cr_assert_eq(len, 1);
	cr_assert_eq(group, 2);
	bga_destroy(vol);
}
