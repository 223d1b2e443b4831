/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_TESTUTIL_H
#define BGA_TESTUTIL_H

/* Small helpers shared by the volume tests and stress programs. */

#include <stdbool.h>
#include <stdint.h>

/* Groups a chunk holds (lib/core/types.h, BGA_CHUNK_GROUPS), for tests
 * that see only the public header and aim at chunk boundaries;
 * test_persist.c, which sees the internals, checks the two agree. */
#define TEST_CHUNK_GROUPS 2048

#include "rng.h" /* the one generator */

#include <bgalloc.h>

/* A config of nblocks blocks, groups of bpg blocks and first_data_block
 * fdb, every other field at its default. */
static inline void test_config_init(struct bga_config *cfg, uint64_t nblocks, uint32_t bpg, uint64_t fdb)
{
	bga_config_init(cfg, nblocks);
	cfg->blocks_per_group = bpg;
	cfg->first_data_block = fdb;
}

/* An extent callback (bga_trim's discard, bga_foreach_free's visit) that
 * accepts every extent and does nothing. */
static inline int ignore_extent(void *ctx, uint64_t start, uint64_t len)
{
	(void)ctx;
	(void)start;
	(void)len;
	return 0;
}

/* Allocate until the volume answers no more (goal, 1 .. max blocks a
 * call): the blocks it handed out. */
static inline uint64_t drain_volume(struct bga_volume *vol, uint64_t goal, uint64_t max)
{
	struct bga_request req = {.goal = goal, .min_len = 1, .max_len = max};
	struct bga_extent e;
	uint64_t n = 0;
	while (bga_alloc(vol, &req, &e) == 0)
		n += e.len;
	return n;
}

/*
 * The sizes of a volume grown from size to `to` across chunk boundaries
 * (chunks of `chunk` blocks, groups of bpg): a jump to just short of each
 * boundary, then across it in small steps (a block, a group, an odd size),
 * so that the grows that open a new last chunk come one by one.
 *
 *	struct grow_steps g = {.r = {seed}, .size = start, .target = start,
 *			       .to = to, .chunk = CHUNK, .bpg = BPG};
 *	while (grow_steps_next(&g))
 *		bga_grow(vol, g.size) ...
 */
struct grow_steps {
	struct rng r;
	uint64_t size;   /* the size reached */
	uint64_t target; /* where this boundary's steps end; start at size */
	uint64_t to, chunk;
	uint32_t bpg;
	bool jump;       /* the step to target is one jump */
};

/* The next size into g->size: false once g->size is g->to. */
static inline bool grow_steps_next(struct grow_steps *g)
{
	if (g->size >= g->target) {
		if (g->size >= g->to)
			return false;
		uint64_t boundary = (g->size / g->chunk + 1) * g->chunk;
		g->target = boundary + 3 * g->bpg;
		if (boundary - 2 * g->bpg - 3 > g->size)
			g->target = boundary - 2 * g->bpg - 3; /* one jump */
		if (g->target > g->to)
			g->target = g->to;
		g->jump = g->target < boundary;
	}
	uint64_t x = rnd(&g->r), step = (x & 3) == 0 ? 1 : (x & 3) == 1 ? g->bpg : 1 + below(&g->r, 3 * g->bpg);
	g->size = g->size + step < g->target && !g->jump ? g->size + step : g->target;
	return true;
}

/* What bga_stats keeps of the free space (count, extents, histogram by
 * order), recounted from a bga_foreach_free walk: free_recount_add for
 * each extent it reports. */
struct free_recount {
	uint64_t count[BGA_HIST_ORDERS], blocks[BGA_HIST_ORDERS];
	uint64_t extents, free;
};

static inline void free_recount_add(struct free_recount *r, uint64_t len)
{
	unsigned k = 63u - (unsigned)__builtin_clzll(len);
	r->count[k]++;
	r->blocks[k] += len;
	r->extents++;
	r->free += len;
}

#ifdef CRITERION_H_

/* A volume of nblocks with groups of bpg blocks, first_data_block fdb and
 * cfg.flags flags (BGA_START_FULL...), windows of rsv blocks when rsv is
 * not 0 (rsv_default = rsv_max = rsv), every other field at its default;
 * the test fails if create does. */
static inline struct bga_volume *make_volume_with(uint64_t nblocks, uint32_t bpg, uint64_t fdb, uint32_t flags,
						  uint32_t rsv)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	test_config_init(&cfg, nblocks, bpg, fdb);
	cfg.flags = flags;
	if (rsv)
		cfg.rsv_default = cfg.rsv_max = rsv;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	return vol;
}

/* make_volume_with, no flags, default windows. */
static inline struct bga_volume *make_volume(uint64_t nblocks, uint32_t bpg, uint64_t fdb)
{
	return make_volume_with(nblocks, bpg, fdb, 0, 0);
}

/* Groups 0 .. n-1 (bpg blocks each) wholly allocated. */
static inline void fill_groups(struct bga_volume *vol, uint64_t n, uint32_t bpg)
{
	struct bga_request req = {.min_len = bpg, .max_len = bpg, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	for (uint64_t g = 0; g < n; g++) {
		req.goal = g * bpg;
		cr_assert_eq(bga_alloc(vol, &req, &e), 0, "group %llu", (unsigned long long)g);
	}
}

/* Assert that bga_check() finds the volume clean, naming what it found. */
static inline void assert_clean(struct bga_volume *vol)
{
	struct bga_check_report r;
	int rc = bga_check(vol, &r);
	cr_assert_eq(rc, 0, "bga_check: %s", r.message);
}
#endif

#endif
