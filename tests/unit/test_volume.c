/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The volume allocator: model-checked sequences, edges, bad input, threads. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <criterion/criterion.h>

#include <bgalloc.h>
#include <bgalloc/locktab.h>

#include "owners.h"
#include "testutil.h"
#include "threads.h"

#include "memio.h"
#include "refmodel.h"
#include "snapshot.h"

static struct bga_volume *make(uint64_t nblocks, uint32_t bpg, uint64_t fdb)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	test_config_init(&cfg, nblocks, bpg, fdb);
	cfg.rsv_max = bpg < 1027 ? bpg : 1027;
	cfg.rsv_default = cfg.rsv_max < 8 ? cfg.rsv_max : 8;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	return vol;
}

/* Drive a volume and the reference model with the same random operations
 * and compare every answer. */
static void model_run(uint64_t nblocks, uint32_t bpg, uint64_t fdb, uint64_t seed, int steps)
{
	struct bga_config cfg;
	test_config_init(&cfg, nblocks, bpg, fdb);
	struct refmodel m;
	cr_assert_eq(refmodel_init(&m, &cfg), 0);
	struct bga_volume *vol;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	uint64_t s = seed;
	struct bga_extent *live = calloc(nblocks, sizeof(*live));
	size_t nlive = 0;
	for (int i = 0; i < steps; i++) {
		uint64_t op = rng_next(&s) % 10;
		if (op < 6 || nlive == 0) {
			struct bga_request req = {0};
			uint64_t r = rng_next(&s);
			req.goal = (r & 3) == 0 ? BGA_NO_GOAL : rng_next(&s) % nblocks;
			req.min_len = 1 + rng_next(&s) % ((r & 4) ? 4 : 64);
			req.max_len = req.min_len + rng_next(&s) % 128;
			if ((r & 0x30) == 0 && req.goal != BGA_NO_GOAL)
				req.flags = BGA_EXACT_GOAL;
			struct bga_extent e = {0, 0};
			int rc = bga_alloc(vol, &req, &e);
			int mc = refmodel_alloc_check(&m, &req, rc, &e);
			cr_assert_eq(mc, 0, "step %d: %s", i, m.err);
			if (rc == 0)
				live[nlive++] = e;
		} else if (op < 9) {
			size_t k = rng_next(&s) % nlive;
			struct bga_extent e = live[k];
			/* free a random piece, keep the rest live */
			uint64_t off = rng_next(&s) % e.len, len = 1 + rng_next(&s) % (e.len - off);
			int rc = bga_free(vol, e.start + off, len);
			cr_assert_eq(rc, refmodel_free(&m, e.start + off, len), "step %d free", i);
			cr_assert_eq(rc, 0);
			live[k] = live[--nlive];
			if (off)
				live[nlive++] = (struct bga_extent){e.start, off};
			if (off + len < e.len)
				live[nlive++] = (struct bga_extent){e.start + off + len, e.len - off - len};
		} else {
			/* a bad free: random range, usually partly free */
			uint64_t start = rng_next(&s) % (nblocks + 8), len = 1 + rng_next(&s) % 16;
			int want = refmodel_free(&m, start, len);
			cr_assert_eq(bga_free(vol, start, len), want, "step %d bad free %lu+%lu", i,
				     (unsigned long)start, (unsigned long)len);
			if (want == 0) {
				/* It was a legal free of live blocks: drop them from live. */
				for (size_t k = 0; k < nlive;) {
					struct bga_extent e = live[k];
					if (e.start + e.len <= start || start + len <= e.start) {
						k++;
						continue;
					}
					live[k] = live[--nlive];
					if (e.start < start)
						live[nlive++] = (struct bga_extent){e.start, start - e.start};
					if (e.start + e.len > start + len)
						live[nlive++] = (struct bga_extent){start + len, e.start + e.len - start - len};
				}
			}
		}
		cr_assert_eq(bga_free_exact(vol), refmodel_free_count(&m), "step %d", i);
		if (i % 16 == 0)
			cr_assert_eq(refmodel_compare(&m, vol), 0, "step %d: %s", i, m.err);
	}
	cr_assert_eq(refmodel_compare(&m, vol), 0, "%s", m.err);
	free(live);
	bga_destroy(vol);
	refmodel_fini(&m);
}

Test(model, small_groups) { model_run(2048, 128, 0, 0x1234567, 3000); }
Test(model, first_data_block) { model_run(1000, 64, 37, 0xdeadbeef, 3000); }
/* first_data_block past the first group (volume.h: any value below
 * nblocks): the groups wholly below it hand out nothing. */
Test(model, first_data_block_past_a_group) { model_run(4096, 256, 300, 0x5eed, 3000); }
/* ... and past a whole chunk of groups, which a missing chunk would call free */
Test(model, first_data_block_past_a_chunk)
{
	model_run(TEST_CHUNK_GROUPS * 64 + 700, 64, TEST_CHUNK_GROUPS * 64 + 70, 0xc0ffee, 1500);
}
Test(model, short_last_group) { model_run(3 * 256 + 100, 256, 1, 0xfeed, 3000); }
Test(model, one_group) { model_run(512, 512, 0, 0xabc, 2000); }
Test(model, default_groups) { model_run(70000, 32768, 0, 0x77, 1500); }

Test(edges, whole_group_extent)
{
	struct bga_volume *vol = make(4 * 1024, 1024, 0);
	struct bga_request req = {.goal = 1500, .min_len = 1024, .max_len = 1024};
	struct bga_extent e;
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(bga_alloc(vol, &req, &e), 0);
		cr_assert_eq(e.len, 1024);
		cr_assert_eq(e.start % 1024, 0, "a whole-group extent starts its group");
	}
	cr_assert_eq(bga_alloc(vol, &req, &e), -ENOSPC);
	req.min_len = 1;
	cr_assert_eq(bga_alloc(vol, &req, &e), -ENOSPC);
	cr_assert_eq(bga_free_exact(vol), 0);
	assert_clean(vol);
	cr_assert_eq(bga_free(vol, 1024, 1024), 0);
	cr_assert_eq(bga_free(vol, 2048 + 5, 10), 0, "partial free of a bitmap-less full group");
	cr_assert_eq(bga_free_exact(vol), 1034);
	assert_clean(vol);
	bga_destroy(vol);
}

Test(edges, max_len_capped_at_group)
{
	struct bga_volume *vol = make(1 << 16, 1024, 0);
	struct bga_request req = {.goal = 10, .min_len = 1, .max_len = 1 << 20};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(e.start, 10);
	cr_assert_eq(e.len, 1024 - 10, "extent stops at the group boundary");
	req.min_len = 1025;
	cr_assert_eq(bga_alloc(vol, &req, &e), -ENOSPC, "no extent can exceed a group");
	bga_destroy(vol);
}

Test(edges, full_volume_and_last_block)
{
	struct bga_volume *vol = make(1000, 64, 3);
	struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = 1, .max_len = 64};
	struct bga_extent e;
	uint64_t total = 0;
	while (bga_alloc(vol, &req, &e) == 0)
		total += e.len;
	cr_assert_eq(total, 997, "every usable block handed out exactly once");
	cr_assert_eq(bga_free_exact(vol), 0);
	assert_clean(vol);
	cr_assert_eq(bga_free(vol, 999, 1), 0);
	cr_assert_eq(bga_free_exact(vol), 1);
	req.goal = 0;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0, "the one free block is found from far away");
	cr_assert_eq(e.start, 999);
	cr_assert_eq(e.len, 1);
	cr_assert_eq(bga_alloc(vol, &req, &e), -ENOSPC);
	cr_assert_eq(bga_free(vol, 0, 1), -EINVAL, "below first_data_block");
	cr_assert_eq(bga_free(vol, 2, 2), -EINVAL, "straddles first_data_block");
	cr_assert_eq(bga_free(vol, 999, 2), -EINVAL, "past the end");
	assert_clean(vol);
	bga_destroy(vol);
}

/* The outside pass's case: nblocks 4096, groups of 256, first_data_block
 * 300 was -EINVAL although the header allows any value below nblocks. */
Test(edges, first_data_block_past_a_group)
{
	for (int full = 0; full < 2; full++) {
		struct bga_config cfg;
		struct bga_volume *vol;
		bga_config_init(&cfg, 4096);
		cfg.blocks_per_group = 256;
		cfg.first_data_block = 300;
		cfg.flags = full ? BGA_START_FULL : 0;
		cr_assert_eq(bga_create(&cfg, &vol), 0);
		if (full)
			cr_assert_eq(bga_free(vol, 300, 4096 - 300), 0);
		cr_assert_eq(bga_free_exact(vol), 4096 - 300);
		struct bga_group_stats gs = {.size = sizeof(gs)};
		cr_assert_eq(bga_group_stats(vol, 0, &gs), 0);
		cr_assert_eq(gs.span_blocks, 0, "group 0 lies wholly below first_data_block");
		cr_assert_eq(gs.free_blocks, 0);
		cr_assert_eq(bga_group_stats(vol, 1, &gs), 0);
		cr_assert_eq(gs.span_blocks, 512 - 300);
		struct bga_request req = {.goal = 0, .min_len = 1, .max_len = 256};
		struct bga_extent e;
		uint64_t total = 0;
		while (bga_alloc(vol, &req, &e) == 0) {
			cr_assert_geq(e.start, 300, "a block below first_data_block handed out");
			total += e.len;
		}
		cr_assert_eq(total, 4096 - 300);
		cr_assert_eq(bga_free(vol, 0, 1), -EINVAL, "below first_data_block");
		cr_assert_eq(bga_free(vol, 299, 2), -EINVAL, "straddles first_data_block");
		cr_assert_eq(bga_claim(vol, 256, 1), -EINVAL);
		cr_assert_eq(bga_free(vol, 300, 100), 0);
		assert_clean(vol);
		cr_assert_eq(bga_grow(vol, 8192), 0);
		cr_assert_eq(bga_free_exact(vol), 100 + 4096);
		assert_clean(vol);
		/* stored and loaded (lazily), the geometry and the free space come back */
		struct memio m;
		struct bga_io io;
		memio_init(&m, &io);
		cr_assert_eq(bga_store(vol, &io), 0);
		bga_destroy(vol);
		cr_assert_eq(bga_load(&io, NULL, &vol), 0);
		cr_assert_eq(bga_free_exact(vol), 100 + 4096);
		assert_clean(vol);
		req.goal = BGA_NO_GOAL;
		total = 0;
		while (bga_alloc(vol, &req, &e) == 0) {
			cr_assert_geq(e.start, 300);
			total += e.len;
		}
		cr_assert_eq(total, 100 + 4096);
		bga_destroy(vol);
		memio_free(&m);
	}
}

Test(edges, exact_goal)
{
	struct bga_volume *vol = make(4096, 1024, 0);
	struct bga_request req = {.goal = 700, .min_len = 4, .max_len = 8, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(e.start, 700);
	cr_assert_eq(e.len, 8);
	cr_assert_eq(bga_alloc(vol, &req, &e), -ENOSPC, "goal block is taken");
	req.goal = 696;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0, "4 blocks fit before 700");
	cr_assert_eq(e.len, 4);
	req.goal = 1022;
	cr_assert_eq(bga_alloc(vol, &req, &e), -ENOSPC, "min_len would cross the group end");
	bga_destroy(vol);
}

Test(edges, goal_locality)
{
	struct bga_volume *vol = make(1 << 20, 32768, 0);
	struct bga_request req = {.goal = 500000, .min_len = 1, .max_len = 1};
	struct bga_extent e;
	for (int i = 0; i < 100; i++) {
		cr_assert_eq(bga_alloc(vol, &req, &e), 0);
		cr_assert_eq(e.start, 500000 + (uint64_t)i, "consecutive goal requests stay contiguous");
	}
	bga_destroy(vol);
}

Test(bad, config)
{
	struct bga_config cfg;
	struct bga_volume *vol = (struct bga_volume *)0x1;
	bga_config_init(&cfg, 0);
	cr_assert_eq(bga_create(&cfg, &vol), -EINVAL);
	cr_assert_eq(vol, (struct bga_volume *)0x1, "out untouched on error");
	bga_config_init(&cfg, BGA_MAX_BLOCKS + 1);
	cr_assert_eq(bga_create(&cfg, &vol), -EINVAL);
	bga_config_init(&cfg, 1000);
	cfg.blocks_per_group = 100;
	cr_assert_eq(bga_create(&cfg, &vol), -EINVAL);
	bga_config_init(&cfg, 1000);
	cfg.first_data_block = 1000;
	cr_assert_eq(bga_create(&cfg, &vol), -EINVAL);
	cfg.first_data_block = 999; /* past every group but the last: one block to hand out */
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	cr_assert_eq(bga_free_exact(vol), 1);
	bga_destroy(vol);
	bga_config_init(&cfg, 1000);
	cfg.lock_slots = 3;
	cr_assert_eq(bga_create(&cfg, &vol), -EINVAL);
	bga_config_init(&cfg, 1000);
	cfg.flags = 1u << 7;
	cr_assert_eq(bga_create(&cfg, &vol), -EINVAL);
	bga_config_init(&cfg, 1000);
	cfg.lock_kind = BGA_LOCK_MUTEX + 1;
	cr_assert_eq(bga_create(&cfg, &vol), -EINVAL);
	cr_assert_eq(bga_create(NULL, &vol), -EINVAL);
	bga_config_init(&cfg, 1000);
	cr_assert_eq(bga_create(&cfg, NULL), -EINVAL);
}

Test(bad, requests_leave_state_unchanged)
{
	struct bga_volume *vol = make(5000, 1024, 2);
	struct bga_request ok = {.goal = 100, .min_len = 10, .max_len = 10};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &ok, &e), 0);
	void *a, *b;
	size_t la, lb;
	cr_assert_eq(bga__snapshot(vol, &a, &la), 0);
	struct bga_request bad[] = {
		{.goal = 0, .min_len = 0, .max_len = 1},
		{.goal = 0, .min_len = 5, .max_len = 4},
		{.goal = 5000, .min_len = 1, .max_len = 1},
		{.goal = BGA_NO_GOAL, .min_len = 1, .max_len = 1, .flags = BGA_EXACT_GOAL},
		{.goal = 0, .min_len = 1, .max_len = 1, .flags = 1u << 9},
		{.goal = 0, .min_len = 1, .max_len = 1, .flags = BGA_USE_RESERVED},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(bga_alloc(vol, &bad[i], &e), -EINVAL, "case %zu", i);
	cr_assert_eq(bga_alloc(NULL, &ok, &e), -EINVAL);
	cr_assert_eq(bga_alloc(vol, NULL, &e), -EINVAL);
	cr_assert_eq(bga_alloc(vol, &ok, NULL), -EINVAL);
	cr_assert_eq(bga_free(vol, 100, 11), -EINVAL, "one block past the extent is free");
	cr_assert_eq(bga_free(vol, 99, 2), -EINVAL);
	cr_assert_eq(bga_free(vol, 100, 0), -EINVAL);
	cr_assert_eq(bga_free(vol, 4990, 20), -EINVAL);
	cr_assert_eq(bga_free(vol, UINT64_MAX - 1, 5), -EINVAL, "overflowing range");
	cr_assert_eq(bga_free(vol, 3000, 5), -EINVAL, "untouched group");
	cr_assert_eq(bga_free(NULL, 100, 1), -EINVAL);
	cr_assert_eq(bga__snapshot(vol, &b, &lb), 0);
	cr_assert_eq(la, lb);
	cr_assert(memcmp(a, b, la) == 0, "state changed by a rejected call");
	free(a);
	free(b);
	cr_assert_eq(bga_free(vol, 100, 10), 0);
	cr_assert_eq(bga_free(vol, 100, 10), -EINVAL, "double free");
	assert_clean(vol);
	bga_destroy(vol);
}

Test(bad, free_spanning_groups_is_all_or_nothing)
{
	struct bga_volume *vol = make(8 * 64, 64, 0);
	struct bga_request req = {.goal = 0, .min_len = 64, .max_len = 64};
	struct bga_extent e;
	for (int i = 0; i < 8; i++)
		cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(bga_free(vol, 300, 1), 0);
	cr_assert_eq(bga_free(vol, 10, 400), -EINVAL, "block 300 inside the range is free");
	cr_assert_eq(bga_free_exact(vol), 1);
	assert_clean(vol);
	cr_assert_eq(bga_free(vol, 10, 290), 0, "range over five groups");
	cr_assert_eq(bga_free_exact(vol), 291);
	assert_clean(vol);
	bga_destroy(vol);
}

Test(scale, huge_volume_is_cheap)
{
	struct rusage before, after;
	getrusage(RUSAGE_SELF, &before);
	struct bga_volume *vol = make(UINT64_C(1) << 40, 32768, 0);
	struct bga_request req = {.min_len = 8, .max_len = 8};
	struct bga_extent e;
	uint64_t goals[] = {0, UINT64_C(1) << 39, (UINT64_C(1) << 40) - 8, 123456789012};
	for (size_t i = 0; i < 4; i++) {
		req.goal = goals[i];
		cr_assert_eq(bga_alloc(vol, &req, &e), 0);
		cr_assert_eq(e.start, goals[i]);
	}
	getrusage(RUSAGE_SELF, &after);
	uint64_t free_blocks = bga_free_exact(vol);
	bga_destroy(vol);
	cr_assert_eq(free_blocks, (UINT64_C(1) << 40) - 32);
#if !defined(__SANITIZE_ADDRESS__) /* ASan's shadow and quarantine are not ours */
	cr_assert_lt(after.ru_maxrss - before.ru_maxrss, 64 * 1024, "RSS grew %ld KiB",
		     after.ru_maxrss - before.ru_maxrss);
#endif
}

Test(scale, sparse_index_finds_the_one_free_group)
{
	/* 2^16 groups of 64 blocks, all full but one far from the goal. */
	uint64_t ngroups = 1 << 16;
	struct bga_volume *vol = make(ngroups * 64, 64, 0);
	struct bga_request req = {.min_len = 64, .max_len = 64};
	struct bga_extent e;
	for (uint64_t g = 0; g < ngroups; g++) {
		if (g == 50000)
			continue;
		req.goal = g * 64;
		cr_assert_eq(bga_alloc(vol, &req, &e), 0);
		cr_assert_eq(e.start, g * 64);
	}
	req.goal = 0;
	req.min_len = 1;
	req.max_len = 1;
	for (int i = 0; i < 64; i++) {
		cr_assert_eq(bga_alloc(vol, &req, &e), 0);
		cr_assert_eq(e.start / 64, 50000);
	}
	cr_assert_eq(bga_alloc(vol, &req, &e), -ENOSPC);
	assert_clean(vol);
	bga_destroy(vol);
}

/* ---- threads ---- */

struct shared {
	struct bga_volume *vol;
	uint8_t *owner; /* one byte per block: 0 free, else thread id + 1 */
	uint64_t nblocks;
	int nthreads;
	int failures;
	int ops; /* per thread (0: 20000) */
};

static void churn(void *ctx, int id)
{
	struct shared *sh = ctx;
	uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
	struct bga_extent mine[64];
	int n = 0, ops = sh->ops ? sh->ops : 20000;
	for (int i = 0; i < ops; i++) {
		if (n < 64 && (n == 0 || rng_next(&s) % 2)) {
			struct bga_request req = {.goal = (rng_next(&s) & 1) ? BGA_NO_GOAL : rng_next(&s) % sh->nblocks,
						  .min_len = 1,
						  .max_len = 1 + rng_next(&s) % 16};
			struct bga_extent e;
			int rc = bga_alloc(sh->vol, &req, &e);
			if (rc == -ENOSPC)
				continue;
			if (rc != 0) {
				__atomic_fetch_add(&sh->failures, 1, __ATOMIC_RELAXED);
				continue;
			}
			for (uint64_t b = e.start; b < e.start + e.len; b++) {
				uint8_t zero = 0;
				if (!__atomic_compare_exchange_n(&sh->owner[b], &zero, (uint8_t)(id + 1), false,
								 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
					__atomic_fetch_add(&sh->failures, 1, __ATOMIC_RELAXED);
			}
			mine[n++] = e;
		} else {
			int k = (int)(rng_next(&s) % (uint64_t)n);
			struct bga_extent e = mine[k];
			mine[k] = mine[--n];
			for (uint64_t b = e.start; b < e.start + e.len; b++)
				__atomic_store_n(&sh->owner[b], 0, __ATOMIC_RELAXED);
			if (bga_free(sh->vol, e.start, e.len) != 0)
				__atomic_fetch_add(&sh->failures, 1, __ATOMIC_RELAXED);
		}
	}
	for (int k = 0; k < n; k++) {
		for (uint64_t b = mine[k].start; b < mine[k].start + mine[k].len; b++)
			__atomic_store_n(&sh->owner[b], 0, __ATOMIC_RELAXED);
		if (bga_free(sh->vol, mine[k].start, mine[k].len) != 0)
			__atomic_fetch_add(&sh->failures, 1, __ATOMIC_RELAXED);
	}
}

static void run_threads_cfg(uint32_t flags, uint32_t lock_kind, uint32_t lock_slots, int ops)
{
	struct bga_config cfg;
	bga_config_init(&cfg, 8 * 256);
	cfg.blocks_per_group = 256;
	cfg.flags = flags;
	cfg.lock_kind = lock_kind;
	cfg.lock_slots = lock_slots;
	struct shared sh = {.nblocks = cfg.nblocks, .nthreads = 8, .ops = ops};
	cr_assert_eq(bga_create(&cfg, &sh.vol), 0);
	sh.owner = calloc(cfg.nblocks, 1);
	cr_assert_eq(test_threads_run(8, churn, &sh), 0);
	cr_assert_eq(sh.failures, 0, "a block was handed to two owners or a free failed");
	cr_assert_eq(bga_free_exact(sh.vol), cfg.nblocks);
	assert_clean(sh.vol);
	if (lock_kind != 0) {
		/* The volume ran on the kind asked for, and its locks were taken. */
		struct bga_config got;
		cr_assert_eq(bga_volume_config(sh.vol, &got), 0);
		cr_assert_eq(got.lock_kind, lock_kind);
		uint64_t acq = 0;
		for (uint32_t slot = 0; slot < got.lock_slots; slot++) {
			struct bga_lock_stats ls;
			cr_assert_eq(bga_lock_stats(sh.vol, slot, &ls), 0);
			acq += ls.acquisitions;
		}
		cr_assert_geq(acq, 8 * 500, "kind %u: allocations and frees took the group locks", lock_kind);
	}
	free(sh.owner);
	bga_destroy(sh.vol);
}

static void run_threads(uint32_t flags) { run_threads_cfg(flags, 0, 0, 0); }

Test(threads, eight_threads_no_double_handout) { run_threads(0); }

/* Eight threads churn under each lock kind, with two slots so that groups
 * share locks (and threads meet on them): ownership checked on every block.
 * 5000 operations a thread: a ticket or MCS hand-off to a preempted vCPU
 * waits out a time slice, and eight threads on two CPUs under a loaded
 * host made 20000 take minutes. */
Test(threads, every_lock_kind, .timeout = 300)
{
	for (uint32_t kind = BGA_LOCK_FAS; kind <= BGA_LOCK_MUTEX; kind++) {
		run_threads_cfg(0, kind, 2, 5000);
		run_threads_cfg(BGA_ATOMIC_COUNTERS, kind, 0, 5000);
	}
}
Test(threads, eight_threads_baseline_modes) { run_threads(BGA_GLOBAL_LOCK | BGA_ATOMIC_COUNTERS); }

/* ---- growth ---- */

static uint64_t drain(struct bga_volume *vol)
{
	return drain_volume(vol, 0, 1 << 20);
}

Test(grow, new_blocks_are_free_and_usable)
{
	struct bga_volume *vol = make(1000, 256, 5);
	struct bga_request req = {.goal = 990, .min_len = 10, .max_len = 10, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0, "the short last group's tail");
	cr_assert_eq(bga_grow(vol, 999), -EINVAL, "no shrinking");
	cr_assert_eq(bga_grow(NULL, 2000), -EINVAL);
	cr_assert_eq(bga_grow(vol, BGA_MAX_BLOCKS + 1), -EINVAL);
	cr_assert_eq(bga_grow(vol, 1000), 0, "same size is a no-op");
	cr_assert_eq(bga_grow(vol, 2000), 0);
	assert_clean(vol);
	cr_assert_eq(bga_free_exact(vol), 2000 - 5 - 10);
	req.goal = 1000;
	req.max_len = 24;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0, "blocks past the old end");
	cr_assert_eq(e.len, 24, "the old last group now runs to 1024");
	cr_assert_eq(bga_grow(vol, 70000), 0, "more groups in chunk 0");
	assert_clean(vol);
	/* Chunks hold TEST_CHUNK_GROUPS groups of 256 blocks.  Into chunk 2,
	 * with a short last group there. */
	const uint64_t big = 2 * TEST_CHUNK_GROUPS * 256 + 1000;
	cr_assert_eq(bga_grow(vol, big), 0, "into new chunks");
	assert_clean(vol);
	struct bga_config cfg;
	cr_assert_eq(bga_volume_config(vol, &cfg), 0);
	cr_assert_eq(cfg.nblocks, big);
	cr_assert_eq(bga_free_exact(vol), big - 5 - 10 - 24);
	/* The last block, in chunk 2's short last group, and the first of
	 * chunk 1, by exact goal. */
	req.goal = big - 1;
	req.min_len = req.max_len = 1;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0, "the last block of chunk 2");
	cr_assert_eq(e.start, big - 1);
	cr_assert_eq(bga_free(vol, e.start, 1), 0);
	req.goal = 4096 * 256;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0, "the first block of chunk 1");
	cr_assert_eq(e.start, 4096 * 256);
	cr_assert_eq(bga_free(vol, e.start, 1), 0);
	/* A free across the boundary of chunks 0 and 1. */
	req.goal = 4096 * 256 - 100;
	req.min_len = req.max_len = 100;
	struct bga_extent tail;
	cr_assert_eq(bga_alloc(vol, &req, &tail), 0);
	req.goal = 4096 * 256;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(bga_free(vol, tail.start, 200), 0, "one free over two chunks");
	assert_clean(vol);
	cr_assert_eq(drain(vol), big - 5 - 10 - 24);
	cr_assert_eq(bga_free_exact(vol), 0);
	assert_clean(vol);
	bga_destroy(vol);
}

/* Claim e for thread id in the ownership map: every block must have had
 * no owner.  Returns 0, or more if some block had one. */
static int own_extent(struct shared *sh, struct bga_extent e, int id)
{
	if (e.start + e.len > sh->nblocks)
		return (int)e.len;
	return owners_take(sh->owner, e, id) != OWNERS_NONE;
}

/* Give e back: the map must still say thread id owns it (0), else more. */
static int disown_extent(struct shared *sh, struct bga_extent e, int id)
{
	return owners_give(sh->owner, e, id) != OWNERS_NONE;
}

static void grow_churn(void *ctx, int id)
{
	struct shared *sh = ctx;
	uint64_t s = 77 * (uint64_t)(id + 1);
	struct bga_extent held[32];
	int n = 0, bad = 0;
	for (int i = 0; i < 20000; i++) {
		if (n < 32 && (rng_next(&s) & 1)) {
			struct bga_request req = {.goal = (i & 3) ? BGA_NO_GOAL : rng_next(&s) % 300,
						  .min_len = 1,
						  .max_len = 8};
			if (bga_alloc(sh->vol, &req, &held[n]) == 0)
				bad += own_extent(sh, held[n++], id);
		} else if (n > 0) {
			struct bga_extent e = held[--n];
			bad += disown_extent(sh, e, id);
			if (bga_free(sh->vol, e.start, e.len) != 0)
				bad++;
		}
	}
	while (n > 0) {
		struct bga_extent e = held[--n];
		bad += disown_extent(sh, e, id);
		if (bga_free(sh->vol, e.start, e.len) != 0)
			bad++;
	}
	__atomic_fetch_add(&sh->failures, bad, __ATOMIC_RELAXED);
}

Test(grow, while_threads_allocate)
{
	uint64_t final = 300;
	for (int i = 0; i < 40; i++)
		final += 37 + (uint64_t)i * 11;
	struct shared sh = {.vol = make(300, 64, 0), .nblocks = final};
	sh.owner = calloc(final, 1);
	cr_assert_not_null(sh.owner);
	struct test_threads tt;
	cr_assert_eq(test_threads_start(&tt, 4, grow_churn, &sh), 0);
	uint64_t size = 300;
	for (int i = 0; i < 40; i++) {
		size += 37 + (uint64_t)i * 11;
		cr_assert_eq(bga_grow(sh.vol, size), 0);
	}
	test_threads_join(&tt);
	cr_assert_eq(sh.failures, 0, "a block handed out twice, past the end, or a free failed");
	for (uint64_t b = 0; b < final; b++)
		cr_assert_eq(sh.owner[b], 0, "block %llu still owned", (unsigned long long)b);
	cr_assert_eq(bga_free_exact(sh.vol), size);
	assert_clean(sh.vol);
	free(sh.owner);
	bga_destroy(sh.vol);
}

Test(misc, strerror_names_codes)
{
	cr_assert_str_eq(bga_strerror(0), "success");
	cr_assert(strncmp(bga_strerror(-ENOSPC), "ENOSPC", 6) == 0);
	cr_assert(strncmp(bga_strerror(EAGAIN), "EAGAIN", 6) == 0);
	cr_assert(strncmp(bga_strerror(-EINVAL), "EINVAL", 6) == 0);
	cr_assert_str_eq(bga_strerror(-99999), "unknown error");
}
