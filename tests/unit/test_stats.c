/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Statistics: the group index's bounds and what a failed call may move. */
#include <errno.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "testutil.h"

/*
 * The outside pass's case: a group freed whole, then cut into runs of 31,
 * keeps its bound of 256; a bga_alloc of 64 fails with -ENOSPC and
 * tightens the bound to 31.  <bgalloc.h> says a failed call moves
 * nothing the API shows but the index's bounds, which any search
 * tightens toward the true run and never below it.
 */
Test(stats, failed_search_only_tightens_the_bound)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	bga_config_init(&cfg, 1024);
	cfg.blocks_per_group = 256;
	cfg.flags = BGA_START_FULL;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	cr_assert_eq(bga_free(vol, 256, 256), 0);
	for (uint64_t i = 0; i < 8; i++)
		cr_assert_eq(bga_claim(vol, 256 + 31 + i * 32, 1), 0);
	struct bga_group_stats before = {.size = sizeof(before)}, after = {.size = sizeof(after)};
	cr_assert_eq(bga_group_stats(vol, 1, &before), 0);
	uint64_t bound = bga_longest_free_read(vol), exact, free = bga_free_exact(vol);
	cr_assert_eq(bga_longest_free_sum(vol, &exact, NULL), 0);
	cr_assert_eq(exact, 31);
	cr_assert_geq(bound, exact);

	struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = 64, .max_len = 64};
	struct bga_extent e = {7, 7};
	cr_assert_eq(bga_alloc(vol, &req, &e), -ENOSPC);
	cr_assert_eq(e.start, 7, "a failed call wrote *out");
	cr_assert_eq(bga_group_stats(vol, 1, &after), 0);
	cr_assert_eq(bga_free_exact(vol), free);
	cr_assert_eq(after.free_blocks, before.free_blocks);
	cr_assert_eq(after.longest_run, before.longest_run);
	cr_assert_eq(after.window_blocks, before.window_blocks);
	cr_assert_eq(after.deferred_blocks, before.deferred_blocks);
	cr_assert_leq(after.longest_run_hint, before.longest_run_hint, "a search loosened the bound");
	cr_assert_geq(after.longest_run_hint, after.longest_run, "the bound fell below the true run");
	cr_assert_leq(bga_longest_free_read(vol), bound);
	cr_assert_geq(bga_longest_free_read(vol), exact);
	/* the bound it learnt answers the same request without a search, and alike */
	cr_assert_eq(bga_alloc(vol, &req, &e), -ENOSPC);
	assert_clean(vol);
	bga_destroy(vol);
}
