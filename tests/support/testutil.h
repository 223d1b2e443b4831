/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_TESTUTIL_H
#define BGA_TESTUTIL_H

/* Small helpers shared by the volume tests and stress programs. */

#include <stdint.h>

/* Groups a chunk holds (lib/core/types.h, BGA_CHUNK_GROUPS), for tests
 * that see only the public header and aim at chunk boundaries;
 * test_persist.c, which sees the internals, checks the two agree. */
#define TEST_CHUNK_GROUPS 2048

#include "rng.h" /* the one generator */

#include <bgalloc.h>

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

/* A volume of nblocks with groups of bpg blocks and first_data_block fdb,
 * every other field at its default; the test fails if create does. */
static inline struct bga_volume *make_volume(uint64_t nblocks, uint32_t bpg, uint64_t fdb)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	bga_config_init(&cfg, nblocks);
	cfg.blocks_per_group = bpg;
	cfg.first_data_block = fdb;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	return vol;
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
