/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ext4's mballoc KUnit tests, ported (fs/ext4/mballoc-test.c):
 * test_new_blocks_simple, test_free_blocks_simple, test_mark_diskspace_used,
 * and its buddy-consistency cases (test_mb_generate_buddy,
 * test_mb_mark_used, test_mb_free_blocks) as "the statistics equal a
 * recomputation from bga_foreach_free after every operation".  Written
 * again over the public API: ext4's block bitmap is the volume, its
 * mbt_ctx_mark_used is bga_claim of the free runs of a range, its
 * ext4_mb_mark_diskspace_used is bga_claim, ext4_free_blocks_simple is
 * bga_free.  Each case runs over the layouts of mballoc-test.c's
 * mbt_test_layouts (blocks_per_group 8192 with 8-block clusters: 1024
 * clusters per group, 4 groups; here a block is a cluster) and one with
 * full-size groups; the random ranges come from a fixed seed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "testutil.h"

#define TEST_GOAL_GROUP 1
#define TEST_RANGE_COUNT 8
#define BGA_TEST_MIN(a, b) ((a) < (b) ? (a) : (b))

struct layout {
	uint32_t bpg;
	uint64_t groups;
};

static const struct layout layouts[] = {{1024, 4}, {32768, 4}};

/* The first cluster of the first group holds the super block (mbt_ctx_init). */
static struct bga_volume *mbt_volume(const struct layout *l)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	bga_config_init(&cfg, l->bpg * l->groups);
	cfg.blocks_per_group = l->bpg;
	cfg.first_data_block = 1;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	return vol;
}

static uint64_t group_first(const struct layout *l, uint64_t g)
{
	return g * l->bpg;
}

/* ---- the buddy check: statistics against a recomputation ---- */

static int recount_cb(void *ctx, uint64_t start, uint64_t len)
{
	(void)start;
	free_recount_add(ctx, len);
	return 0;
}

/* What ext4 keeps per group (bb_counters, bb_free, bb_fragments), kept
 * here per volume by bga_stats: it must equal the walk, and bga_check
 * must find the group index (ext4's largest free order) right. */
static void validate_stats(struct bga_volume *vol, uint64_t nblocks)
{
	struct free_recount r;
	memset(&r, 0, sizeof(r));
	cr_assert_eq(bga_foreach_free(vol, 0, nblocks, 1, recount_cb, &r), 0);
	struct bga_stats st;
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_assert_eq(st.free_blocks, r.free);
	cr_assert_eq(st.free_extents, r.extents);
	for (unsigned k = 0; k < BGA_HIST_ORDERS; k++) {
		cr_assert_eq(st.hist_count[k], r.count[k], "order %u: %llu extents, the walk %llu", k,
			     (unsigned long long)st.hist_count[k], (unsigned long long)r.count[k]);
		cr_assert_eq(st.hist_blocks[k], r.blocks[k]);
	}
	cr_assert_eq(bga_free_exact(vol), r.free);
	assert_clean(vol);
}

/* mbt_ctx_mark_used: mark [off, off+len) of group g used, whatever is
 * used already: claim each free run in it. */
struct runs {
	struct bga_extent v[4096];
	size_t n;
};

static int runs_cb(void *ctx, uint64_t start, uint64_t len)
{
	struct runs *r = ctx;
	cr_assert_lt(r->n, 4096);
	r->v[r->n++] = (struct bga_extent){start, len};
	return 0;
}

static void mark_used(struct bga_volume *vol, const struct layout *l, uint64_t g, uint64_t off, uint64_t len)
{
	uint64_t from = group_first(l, g) + off;
	static struct runs r;
	r.n = 0;
	cr_assert_eq(bga_foreach_free(vol, from, from + len, 1, runs_cb, &r), 0);
	for (size_t i = 0; i < r.n; i++)
		cr_assert_eq(bga_claim(vol, r.v[i].start, r.v[i].len), 0);
}

static uint64_t alloc_one(struct bga_volume *vol, uint64_t goal, int *err)
{
	struct bga_request req = {.goal = goal, .min_len = 1, .max_len = 1};
	struct bga_extent e = {0, 0};
	*err = bga_alloc(vol, &req, &e);
	return e.start;
}

Test(ext4_mballoc, test_new_blocks_simple)
{
	for (size_t li = 0; li < sizeof(layouts) / sizeof(layouts[0]); li++) {
		const struct layout *l = &layouts[li];
		struct bga_volume *vol = mbt_volume(l);
		uint64_t nblocks = l->bpg * l->groups, goal = group_first(l, TEST_GOAL_GROUP);
		int err;
		/* get block at goal */
		cr_assert_eq(alloc_one(vol, goal, &err), goal);
		cr_assert_eq(err, 0);
		validate_stats(vol, nblocks);
		/* get block after goal in goal group */
		cr_assert_eq(alloc_one(vol, goal, &err), goal + 1);
		validate_stats(vol, nblocks);
		/* get block after goal group */
		mark_used(vol, l, TEST_GOAL_GROUP, 0, l->bpg);
		cr_assert_eq(alloc_one(vol, goal, &err), group_first(l, TEST_GOAL_GROUP + 1));
		validate_stats(vol, nblocks);
		/* get block before goal group */
		for (uint64_t g = TEST_GOAL_GROUP; g < l->groups; g++)
			mark_used(vol, l, g, 0, l->bpg);
		cr_assert_eq(alloc_one(vol, goal, &err), group_first(l, 0) + 1);
		validate_stats(vol, nblocks);
		/* no block available */
		for (uint64_t g = 0; g < l->groups; g++)
			mark_used(vol, l, g, 0, l->bpg);
		alloc_one(vol, goal, &err);
		cr_assert_eq(err, -ENOSPC);
		validate_stats(vol, nblocks);
		bga_destroy(vol);
	}
}

/* mbt_generate_test_ranges: count ranges, the i-th inside the i-th
 * count-th of a group, possibly empty. */
static void test_ranges(struct rng *r, const struct layout *l, struct bga_extent *ranges)
{
	uint64_t max = l->bpg / TEST_RANGE_COUNT;
	for (int i = 0; i < TEST_RANGE_COUNT; i++) {
		uint64_t start = below(r, max), len = below(r, max);
		len = BGA_TEST_MIN(len, max - start);
		ranges[i] = (struct bga_extent){start + i * max, len};
	}
}

Test(ext4_mballoc, test_free_blocks_simple)
{
	struct rng r = {0x5eed0f4ee};
	for (size_t li = 0; li < sizeof(layouts) / sizeof(layouts[0]); li++) {
		const struct layout *l = &layouts[li];
		uint64_t nblocks = l->bpg * l->groups;
		/* every group used: a volume started full */
		struct bga_config cfg;
		struct bga_volume *vol;
		bga_config_init(&cfg, nblocks);
		cfg.blocks_per_group = l->bpg;
		cfg.first_data_block = 1;
		cfg.flags = BGA_START_FULL;
		cr_assert_eq(bga_create(&cfg, &vol), 0);
		struct bga_extent ranges[TEST_RANGE_COUNT];
		test_ranges(&r, l, ranges);
		for (int i = 0; i < TEST_RANGE_COUNT; i++) {
			if (ranges[i].len == 0)
				continue;
			uint64_t block = group_first(l, TEST_GOAL_GROUP) + ranges[i].start;
			cr_assert_eq(bga_free(vol, block, ranges[i].len), 0);
			/* validate_free_blocks_simple: no free block elsewhere,
			 * exactly the range free in the goal group */
			struct runs *all = calloc(1, sizeof(*all));
			cr_assert_eq(bga_foreach_free(vol, 0, nblocks, 1, runs_cb, all), 0);
			cr_assert_eq(all->n, 1);
			cr_assert_eq(all->v[0].start, block);
			cr_assert_eq(all->v[0].len, ranges[i].len);
			free(all);
			validate_stats(vol, nblocks);
			mark_used(vol, l, TEST_GOAL_GROUP, 0, l->bpg);
			validate_stats(vol, nblocks);
		}
		bga_destroy(vol);
	}
}

Test(ext4_mballoc, test_mark_diskspace_used)
{
	struct rng r = {0xd15c5ace};
	for (size_t li = 0; li < sizeof(layouts) / sizeof(layouts[0]); li++) {
		const struct layout *l = &layouts[li];
		uint64_t nblocks = l->bpg * l->groups, g0 = group_first(l, TEST_GOAL_GROUP);
		struct bga_volume *vol = mbt_volume(l);
		struct bga_extent ranges[TEST_RANGE_COUNT];
		test_ranges(&r, l, ranges);
		for (int i = 0; i < TEST_RANGE_COUNT; i++) {
			if (ranges[i].len == 0)
				continue;
			/* the goal group wholly free, then exactly the range used */
			cr_assert_eq(bga_claim(vol, g0 + ranges[i].start, ranges[i].len), 0);
			static struct runs rs;
			rs.n = 0;
			cr_assert_eq(bga_foreach_free(vol, g0, g0 + l->bpg, 1, runs_cb, &rs), 0);
			uint64_t used_from = ranges[i].start, used_to = ranges[i].start + ranges[i].len;
			size_t k = 0;
			if (used_from > 0) {
				cr_assert_eq(rs.v[k].start, g0);
				cr_assert_eq(rs.v[k].len, used_from);
				k++;
			}
			if (used_to < l->bpg) {
				cr_assert_eq(rs.v[k].start, g0 + used_to);
				cr_assert_eq(rs.v[k].len, l->bpg - used_to);
				k++;
			}
			cr_assert_eq(rs.n, k);
			validate_stats(vol, nblocks);
			cr_assert_eq(bga_free(vol, g0 + ranges[i].start, ranges[i].len), 0);
			validate_stats(vol, nblocks);
		}
		bga_destroy(vol);
	}
}

/*
 * test_mb_mark_used and test_mb_free_blocks: random ranges marked used,
 * then freed, in the goal group, through every way in (bga_claim,
 * bga_alloc at an exact goal, bga_free, bga_free_vec, bga_free_deferred
 * and a commit), the statistics recomputed after each.
 */
Test(ext4_mballoc, buddy_consistency_mark_used_and_free)
{
	struct rng r = {0xb0dd1e5};
	for (size_t li = 0; li < sizeof(layouts) / sizeof(layouts[0]); li++) {
		const struct layout *l = &layouts[li];
		uint64_t nblocks = l->bpg * l->groups, g0 = group_first(l, TEST_GOAL_GROUP);
		struct bga_volume *vol = mbt_volume(l);
		struct bga_extent ranges[TEST_RANGE_COUNT];
		test_ranges(&r, l, ranges);
		for (int i = 0; i < TEST_RANGE_COUNT; i++) {
			if (ranges[i].len == 0)
				continue;
			uint64_t s = g0 + ranges[i].start, n = ranges[i].len;
			if (i % 2) {
				cr_assert_eq(bga_claim(vol, s, n), 0);
			} else {
				struct bga_request req = {.goal = s, .min_len = n, .max_len = n, .flags = BGA_EXACT_GOAL};
				struct bga_extent e;
				cr_assert_eq(bga_alloc(vol, &req, &e), 0);
				cr_assert_eq(e.start, s);
				cr_assert_eq(e.len, n);
			}
			validate_stats(vol, nblocks);
		}
		uint64_t txn = 0;
		for (int i = 0; i < TEST_RANGE_COUNT; i++) {
			if (ranges[i].len == 0)
				continue;
			uint64_t s = g0 + ranges[i].start, n = ranges[i].len;
			switch (i % 3) {
			case 0:
				cr_assert_eq(bga_free(vol, s, n), 0);
				break;
			case 1: {
				struct bga_extent v[2] = {{s + n / 2, n - n / 2}, {s, n / 2}};
				cr_assert_eq(n / 2 ? bga_free_vec(vol, v, 2) : bga_free(vol, s, n), 0);
				break;
			}
			default:
				cr_assert_eq(bga_free_deferred(vol, s, n, ++txn), 0);
				validate_stats(vol, nblocks);
				cr_assert_eq(bga_commit(vol, txn), 0);
			}
			validate_stats(vol, nblocks);
		}
		cr_assert_eq(bga_free_exact(vol), nblocks - 1);
		bga_destroy(vol);
	}
}

/* test_mb_generate_buddy: ranges set one after another in a bitmap, the
 * buddy regenerated after each: here ranges claimed across the whole
 * volume, groups included, and the statistics recomputed after each. */
Test(ext4_mballoc, buddy_consistency_generate)
{
	struct rng r = {0x6e4e7a7e};
	for (size_t li = 0; li < sizeof(layouts) / sizeof(layouts[0]); li++) {
		const struct layout *l = &layouts[li];
		uint64_t nblocks = l->bpg * l->groups;
		struct bga_volume *vol = mbt_volume(l);
		for (int i = 0; i < 64; i++) {
			uint64_t s = 1 + below(&r, nblocks - 1), n = 1 + below(&r, BGA_TEST_MIN(nblocks - s, 3 * (uint64_t)l->bpg / 2));
			int rc = bga_claim(vol, s, n);
			cr_assert(rc == 0 || rc == -EBUSY, "claim: %d", rc);
			validate_stats(vol, nblocks);
			if (i % 4 == 3) {
				/* free what the last claim took, when it took it */
				if (rc == 0)
					cr_assert_eq(bga_free(vol, s, n), 0);
				validate_stats(vol, nblocks);
			}
		}
		bga_destroy(vol);
	}
}
