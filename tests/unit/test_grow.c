/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Growth across chunks (TEST_CHUNK_GROUPS groups each; 64-block groups
 * make a chunk 131,072 blocks), alone and while other threads allocate, free, defer,
 * commit, reserve, trim and use windows, with every block's owner tracked.
 * Threaded tests run under Criterion's timeout: a deadlock fails the test
 * instead of hanging the suite.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "owners.h"
#include "requests.h"
#include "testutil.h"
#include "threads.h"

#define BPG 64
#define ROUNDS 3 /* fresh volumes per threaded test */
#define CHUNK ((uint64_t)TEST_CHUNK_GROUPS * BPG)

static struct bga_volume *make(uint64_t nblocks, uint32_t flags, uint32_t slots)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	bga_config_init(&cfg, nblocks);
	cfg.blocks_per_group = BPG;
	cfg.rsv_max = 64;
	cfg.flags = flags;
	cfg.lock_slots = slots;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	return vol;
}

static int exact(struct bga_volume *vol, uint64_t start, uint64_t len)
{
	struct bga_request req = {.goal = start, .min_len = len, .max_len = len, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	int rc = bga_alloc(vol, &req, &e);
	if (rc == 0)
		cr_assert(e.start == start && e.len == len);
	return rc;
}

/* ---- one thread ---- */

static uint64_t drain(struct bga_volume *vol)
{
	return drain_volume(vol, BGA_NO_GOAL, BPG);
}

/*
 * Grow step by step to sizes that end inside a chunk, exactly at a chunk's
 * end, one block past it (a new last chunk holding one short group), and
 * chunks further on; after each, the volume is clean, the new blocks are
 * free, the last block can be taken by exact goal and the next one is past
 * the end.
 */
static int count_discard(void *ctx, uint64_t start, uint64_t len)
{
	(void)start;
	*(uint64_t *)ctx += len;
	return 0;
}

/* A grow that lengthens the short last group frees blocks into it: the
 * group is no longer trimmed, and the next trim discards the new blocks. */
Test(grow_chunks, grown_last_group_is_trimmed_again)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	bga_config_init(&cfg, 1024 + 100);
	cfg.blocks_per_group = 1024;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	uint64_t discarded = 0;
	cr_assert_eq(bga_trim(vol, 0, 1124, 1, count_discard, &discarded, NULL), 0);
	cr_assert_eq(discarded, 1124);
	cr_assert_eq(bga_grow(vol, 1024 + 600), 0);
	struct bga_group_stats gs = {.size = sizeof(gs)};
	cr_assert_eq(bga_group_stats(vol, 1, &gs), 0);
	cr_assert_eq(gs.flags & BGA_GSTAT_TRIMMED, 0, "grown into, still flagged trimmed");
	discarded = 0;
	cr_assert_eq(bga_trim(vol, 0, 1624, 1, count_discard, &discarded, NULL), 0);
	cr_assert_eq(discarded, 600, "the grown group's blocks: all 600 again, the 500 new among them");
	assert_clean(vol);
	bga_destroy(vol);
}

/* first_data_block past a whole chunk, in a volume whose last group is
 * full-size: the chunks below it are built at create, never read as a
 * missing (wholly free) chunk. */
Test(grow_chunks, first_data_block_past_a_chunk)
{
	uint64_t chunk = (uint64_t)TEST_CHUNK_GROUPS * 64, fdb = chunk + 70;
	struct bga_config cfg;
	struct bga_volume *vol;
	bga_config_init(&cfg, 3 * chunk);
	cfg.blocks_per_group = 64;
	cfg.first_data_block = fdb;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	cr_assert_eq(bga_free_exact(vol), 3 * chunk - fdb);
	struct bga_stats st;
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_assert_eq(st.free_blocks, 3 * chunk - fdb);
	uint64_t walked = 0;
	cr_assert_eq(bga_foreach_free(vol, 0, 3 * chunk, 1, count_discard, &walked), 0);
	cr_assert_eq(walked, 3 * chunk - fdb, "the walk found %llu free", (unsigned long long)walked);
	cr_assert_eq(bga_longest_free_read(vol), 64);
	struct bga_group_stats gs = {.size = sizeof(gs)};
	cr_assert_eq(bga_group_stats(vol, TEST_CHUNK_GROUPS, &gs), 0);
	cr_assert_eq(gs.free_blocks, 0, "group %d lies below first_data_block", TEST_CHUNK_GROUPS);
	struct bga_request r = {.goal = chunk, .min_len = 1, .max_len = 64};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &r, &e), 0);
	cr_assert_geq(e.start, fdb);
	r.flags = BGA_EXACT_GOAL;
	r.goal = chunk + 3;
	cr_assert_eq(bga_alloc(vol, &r, &e), -ENOSPC);
	assert_clean(vol);
	bga_destroy(vol);
}

/* Grow vol from size to n blocks, used of them held: clean, the free
 * count right, then the first new block and the new last one taken by
 * exact goal, and a block past the end refused.  The blocks it took. */
static uint64_t grow_take_ends(struct bga_volume *vol, uint64_t size, uint64_t n, uint64_t used)
{
	uint64_t took = 1;
	cr_assert_eq(bga_grow(vol, n), 0, "grow to %llu", (unsigned long long)n);
	assert_clean(vol);
	cr_assert_eq(bga_free_exact(vol), n - used, "grow to %llu", (unsigned long long)n);
	cr_assert_eq(exact(vol, size, 1), 0, "first new block, size %llu", (unsigned long long)n);
	if (n - 1 > size) {
		cr_assert_eq(exact(vol, n - 1, 1), 0, "last block, size %llu", (unsigned long long)n);
		took++;
	}
	cr_assert_eq(exact(vol, n, 1), -EINVAL, "past the end");
	return took;
}

Test(grow_chunks, one_thread_across_chunk_boundaries)
{
	static const uint64_t sizes[] = {
		CHUNK - 100, CHUNK - 64, CHUNK, CHUNK + 1, CHUNK + 63, CHUNK + 64, 2 * CHUNK + 7,
		2 * CHUNK + 64 * 5, 5 * CHUNK - 1, 5 * CHUNK, 7 * CHUNK + 200,
	};
	struct bga_volume *vol = make(1000, 0, 0);
	uint64_t used = 0, size = 1000;
	cr_assert_eq(exact(vol, 900, 10), 0);
	used += 10;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t n = sizes[i];
		used += grow_take_ends(vol, size, n, used);
		assert_clean(vol);
		size = n;
	}
	/* A free of 40 whole groups over the boundary of chunks 2 and 3 (no
	 * block there was taken above), in one call. */
	for (uint64_t g = 3 * CHUNK / BPG - 20; g < 3 * CHUNK / BPG + 20; g++)
		cr_assert_eq(exact(vol, g * BPG, BPG), 0, "group %llu", (unsigned long long)g);
	cr_assert_eq(bga_free_exact(vol), size - used - 40 * BPG);
	cr_assert_eq(bga_free(vol, 3 * CHUNK - 20 * BPG, 40 * BPG), 0, "40 groups over two chunks at once");
	assert_clean(vol);
	cr_assert_eq(drain(vol), size - used);
	cr_assert_eq(bga_free_exact(vol), 0);
	assert_clean(vol);
	bga_destroy(vol);
}

/*
 * Across the chunk directory's segments (64 chunks a directory block;
 * segment 0 sized at create, each later one as large as all before it):
 * a volume of one chunk grown block by block over 64 and 128 chunks and
 * then far out.  In each new segment: exact allocations, a window, a
 * pending deferred free (the group sets' walks: commit, window reclaim),
 * a search the index sends there, and the volume clean.
 */
Test(grow_chunks, one_thread_across_directory_segments)
{
	static const uint64_t sizes[] = {
		64 * CHUNK - 1, 64 * CHUNK, 64 * CHUNK + 1, 65 * CHUNK, 128 * CHUNK - 5, 128 * CHUNK + 64,
		256 * CHUNK + 3, 1000 * CHUNK,
	};
	struct bga_volume *vol = make(1000, 0, 0);
	struct bga_rsv *handles[sizeof(sizes) / sizeof(sizes[0])];
	uint64_t used = 0, size = 1000, txn = 0;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t n = sizes[i];
		used += grow_take_ends(vol, size, n, used);
		/* A window (a fresh handle's first) and a deferred free in the
		 * new last chunk. */
		struct bga_rsv *rsv;
		cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
		handles[i] = rsv;
		struct bga_request req = {.goal = (n / BPG - 2) * BPG, .min_len = 1, .max_len = 2, .rsv = rsv};
		struct bga_extent e, w;
		cr_assert_eq(bga_alloc(vol, &req, &e), 0);
		cr_assert_eq(bga_rsv_window(rsv, &w), 0);
		cr_assert_gt(w.len, 0, "size %llu", (unsigned long long)n);
		cr_assert_eq(e.start / CHUNK, req.goal / CHUNK, "the window is in the goal's chunk");
		if (i % 2)
			bga_rsv_close(rsv); /* the others stay linked until the reclaim below */
		cr_assert_eq(bga_free_deferred(vol, e.start, e.len, ++txn), 0);
		cr_assert_eq(exact(vol, e.start, 1), -EAGAIN);
		assert_clean(vol);
		cr_assert_eq(bga_commit(vol, txn), 0);
		cr_assert_eq(bga_free_exact(vol), n - used);
		size = n;
	}
	/* The window reclaim and the index's search across every segment:
	 * everything but the blocks taken can be drained. */
	assert_clean(vol);
	struct bga_request big = {.goal = BGA_NO_GOAL, .min_len = BPG, .max_len = BPG};
	struct bga_extent e;
	uint64_t n = 0;
	while (n < 300 * CHUNK && bga_alloc(vol, &big, &e) == 0)
		n += e.len;
	cr_assert_eq(n, 300 * CHUNK, "whole groups from anywhere");
	assert_clean(vol);
	bga_destroy(vol);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i += 2)
		free(handles[i]); /* as destroy_with_a_linked_window */
}

/* Growth past 2^32 groups is refused, and leaves the volume as it was;
 * up to it is fine (the chunk directory was sized for it at create). */
Test(grow_chunks, past_the_last_chunk)
{
	struct bga_volume *vol = make(CHUNK + 5, 0, 0);
	cr_assert_eq(exact(vol, CHUNK + 2, 2), 0);
	uint64_t limit = (UINT64_C(1) << 32) * BPG;
	cr_assert_eq(bga_grow(vol, limit + 1), -EINVAL, "one block past 2^32 groups");
	cr_assert_eq(bga_grow(vol, limit + BPG), -EINVAL);
	struct bga_config cfg;
	cr_assert_eq(bga_volume_config(vol, &cfg), 0);
	cr_assert_eq(cfg.nblocks, CHUNK + 5);
	cr_assert_eq(bga_free_exact(vol), CHUNK + 3);
	assert_clean(vol);
	cr_assert_eq(bga_grow(vol, limit), 0, "exactly 2^32 groups");
	cr_assert_eq(bga_free_exact(vol), limit - 2);
	cr_assert_eq(exact(vol, limit - 1, 1), 0);
	cr_assert_eq(exact(vol, limit - 3 * CHUNK, 5), 0, "an untouched chunk far out");
	assert_clean(vol);
	bga_destroy(vol);
}

/* The old last group lies in a chunk never touched (a full-size group,
 * no descriptor yet): the grow leaves it be and adds the new groups. */
Test(grow_chunks, old_last_group_untouched)
{
	struct bga_volume *vol = make(2 * CHUNK, 0, 0);
	cr_assert_eq(exact(vol, 5, 1), 0); /* chunk 0 touched, chunk 1 not */
	cr_assert_eq(bga_grow(vol, 2 * CHUNK + 10), 0);
	assert_clean(vol);
	cr_assert_eq(bga_free_exact(vol), 2 * CHUNK + 10 - 1);
	cr_assert_eq(exact(vol, 2 * CHUNK - 1, 1), 0);
	cr_assert_eq(exact(vol, 2 * CHUNK + 9, 1), 0);
	cr_assert_eq(exact(vol, 2 * CHUNK + 10, 1), -EINVAL);
	/* A free in a group of an untouched chunk names a free block. */
	cr_assert_eq(bga_free(vol, CHUNK + 100, 1), -EINVAL);
	assert_clean(vol);
	bga_destroy(vol);
}

/* With chunk 0 full, a search from block 0 is sent by the index to the
 * untouched chunk 1. */
Test(grow_chunks, search_reaches_an_untouched_chunk)
{
	struct bga_volume *vol = make(2 * CHUNK, 0, 0);
	for (uint64_t g = 0; g < CHUNK / BPG; g++)
		cr_assert_eq(exact(vol, g * BPG, BPG), 0);
	struct bga_request req = {.goal = 0, .min_len = 3, .max_len = 3};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_geq(e.start, CHUNK);
	req.goal = BGA_NO_GOAL;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_geq(e.start, CHUNK);
	cr_assert_eq(bga_free_exact(vol), CHUNK - 6);
	assert_clean(vol);
	bga_destroy(vol);
}

/* Windows, pending deferred frees and reservations carry across a grow
 * into new chunks. */
Test(grow_chunks, policies_survive_growth)
{
	struct bga_volume *vol = make(CHUNK - 10, 0, 0);
	struct bga_rsv *rsv;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	struct bga_request req = {.goal = CHUNK - 200, .min_len = 1, .max_len = 4, .rsv = rsv};
	struct bga_extent e, w;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(bga_rsv_window(rsv, &w), 0);
	cr_assert_gt(w.len, 0, "a window is linked");
	cr_assert_eq(exact(vol, CHUNK - 128, 64), 0);
	cr_assert_eq(bga_free_deferred(vol, CHUNK - 120, 8, 1), 0);
	cr_assert_eq(bga_reserve(vol, 100), 0);
	cr_assert_eq(bga_grow(vol, 3 * CHUNK + 11), 0);
	assert_clean(vol);
	struct bga_extent w2;
	cr_assert_eq(bga_rsv_window(rsv, &w2), 0);
	cr_assert_eq(w2.start, w.start, "the window stays where it was");
	cr_assert_eq(exact(vol, CHUNK - 120, 1), -EAGAIN, "pending blocks wait for their commit");
	cr_assert_eq(bga_commit(vol, 1), 0);
	cr_assert_eq(exact(vol, CHUNK - 120, 1), 0);
	req.flags = BGA_USE_RESERVED;
	req.rsv = NULL;
	req.goal = 3 * CHUNK;
	req.max_len = 100;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(bga_unreserve(vol, 100 - e.len), 0);
	cr_assert_eq(bga_reserved(vol), 0);
	assert_clean(vol);
	bga_rsv_close(rsv);
	bga_destroy(vol);
}

/* bga_destroy unlinks windows still linked (the handles are the caller's
 * to free; closing one after destroy is not allowed, so it is freed as
 * bga_rsv_open allocated it). */
Test(grow_chunks, destroy_with_a_linked_window)
{
	struct bga_volume *vol = make(4 * BPG, 0, 0);
	struct bga_extent e, w;
	struct bga_rsv *rsv = window_alloc(vol, 70, 1, 2, &e, &w);
	bga_destroy(vol);
	free(rsv);
}

/* ---- threads ---- */

struct shared {
	struct bga_volume *vol;
	struct owners own; /* cap: the final size */
	uint64_t size;  /* atomic: the size as of the last completed grow */
	uint64_t txn;   /* atomic: the last txn committed */
	int stop;       /* atomic */
	int failures;   /* atomic */
	char first[160];
	bool trims, windows, deferred, reserve;
	uint64_t create, start; /* 0: the defaults (grow_under_threads) */
};

static void failf(void *ctx, const char *what, uint64_t a)
{
	struct shared *sh = ctx;
	if (__atomic_fetch_add(&sh->failures, 1, __ATOMIC_RELAXED) == 0)
		snprintf(sh->first, sizeof(sh->first), "%s (%llu)", what, (unsigned long long)a);
}

#define seen ignore_extent

#define HELD 24

static void give_back(struct shared *sh, int id, struct bga_extent e, bool deferred)
{
	owners_disown(&sh->own, e, id);
	int rc;
	if (deferred) {
		rc = -EINVAL;
		for (int retry = 0; rc == -EINVAL && retry < 1000; retry++)
			rc = bga_free_deferred(sh->vol, e.start, e.len, __atomic_load_n(&sh->txn, __ATOMIC_ACQUIRE) + 2);
	} else {
		rc = bga_free(sh->vol, e.start, e.len);
	}
	if (rc != 0)
		failf(sh, deferred ? "deferred free failed" : "free failed", (uint64_t)-rc);
}

static void churn(void *ctx, int id)
{
	struct shared *sh = ctx;
	struct rng r = {0x9e3779b97f4a7c15ull * (uint64_t)(id + 1)};
	struct bga_extent held[HELD];
	struct bga_rsv *rsv = NULL;
	int n = 0;
	if (sh->windows && bga_rsv_open(sh->vol, &rsv) != 0)
		failf(sh, "rsv_open", 0);
	for (uint64_t i = 1; !__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE); i++) {
		/* More threads than CPUs here: give the grower (whose grace
		 * periods wait for every reader) its turn now and then. */
		if (i % 64 == 0)
			sched_yield();
		uint64_t size = __atomic_load_n(&sh->size, __ATOMIC_ACQUIRE), x = rnd(&r);
		if (n < HELD && (n == 0 || (x & 1))) {
			/* Goals at the far end, where the grows open new chunks, half the time. */
			uint64_t goal = (x & 2) ? size - 1 - below(&r, BPG * 8 < size ? BPG * 8 : size) : below(&r, size);
			struct bga_request req = {.goal = goal, .min_len = 1, .max_len = 1 + below(&r, 8)};
			switch ((x >> 2) & 7) {
			case 0: req.goal = BGA_NO_GOAL; break;
			case 1: req.flags = BGA_EXACT_GOAL; req.max_len = req.min_len; break;
			case 2: req.rsv = rsv; break;
			default: break;
			}
			bool reserved = sh->reserve && ((x >> 5) & 7) == 0;
			if (reserved) {
				if (bga_reserve(sh->vol, req.max_len) != 0)
					continue;
				req.flags = BGA_USE_RESERVED;
			}
			struct bga_extent e;
			int rc = bga_alloc(sh->vol, &req, &e);
			if (reserved && (rc != 0 || e.len < req.max_len))
				bga_unreserve(sh->vol, rc ? req.max_len : req.max_len - e.len);
			if (rc == 0) {
				owners_own(&sh->own, e, id);
				held[n++] = e;
			} else if (reserved) {
				failf(sh, "an allocation from a reservation failed", (uint64_t)-rc);
			} else if (rc != -ENOSPC && rc != -EAGAIN) {
				failf(sh, "alloc", (uint64_t)-rc);
			}
		} else if (n > 0) {
			int k = (int)below(&r, (uint64_t)n);
			struct bga_extent e = held[k];
			held[k] = held[--n];
			give_back(sh, id, e, sh->deferred && (x & 4));
		}
		if (sh->trims && (x >> 8) % 64 == 0) {
			uint64_t from = below(&r, size), to = from + 1 + below(&r, 40 * BPG);
			if (to > size)
				to = size;
			int rc = (x >> 14) & 1 ? bga_trim(sh->vol, from, to, 1, owners_discard, &sh->own, NULL)
					       : bga_foreach_free(sh->vol, from, to, 1, seen, NULL);
			if (rc != 0)
				failf(sh, "trim/foreach", (uint64_t)-rc);
		}
	}
	while (n > 0)
		give_back(sh, id, held[--n], false);
	bga_rsv_close(rsv);
}

static void *committer(void *arg)
{
	struct shared *sh = arg;
	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		uint64_t t = __atomic_load_n(&sh->txn, __ATOMIC_ACQUIRE) + 1;
		if (bga_commit(sh->vol, t) != 0)
			failf(sh, "commit", t);
		__atomic_store_n(&sh->txn, t, __ATOMIC_RELEASE);
		sched_yield();
	}
	return NULL;
}

/*
 * Start just short of chunk 0's end (or create at sh->create and grow
 * alone to sh->start) and grow to `to` in steps of odd sizes (some a
 * single block, some whole groups, some past a chunk boundary) while
 * `nthreads` workers churn with goals at the growing end.
 */
static void grow_under_threads(uint32_t flags, uint32_t slots, uint64_t to, int nthreads, struct shared *sh)
{
	uint64_t start = sh->start ? sh->start : CHUNK - 3 * BPG - 5;
	sh->vol = make(sh->create ? sh->create : start, flags, slots);
	cr_assert_eq(bga_grow(sh->vol, start), 0);
	sh->size = start;
	sh->own = (struct owners){.map = calloc(to, 1), .cap = to, .fail = failf, .ctx = sh};
	cr_assert_not_null(sh->own.map);
	pthread_t ct;
	struct test_threads workers;
	cr_assert_eq(test_threads_start(&workers, nthreads, churn, sh), 0);
	if (sh->deferred)
		cr_assert_eq(pthread_create(&ct, NULL, committer, sh), 0);
	/* Jump to just short of each chunk boundary, then cross it in small
	 * steps (a block, a group, an odd size), so the grows that open a new
	 * last chunk run while the workers aim at it. */
	struct grow_steps g = {.r = {12345}, .size = start, .target = start, .to = to, .chunk = CHUNK, .bpg = BPG};
	while (grow_steps_next(&g)) {
		int rc = bga_grow(sh->vol, g.size);
		if (rc != 0)
			failf(sh, "grow", g.size);
		__atomic_store_n(&sh->size, g.size, __ATOMIC_RELEASE);
		sched_yield();
	}
	for (int i = 0; i < 200; i++)
		sched_yield(); /* the workers meet the final size too */
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	test_threads_join(&workers);
	if (sh->deferred) {
		pthread_join(ct, NULL);
		cr_assert_eq(bga_commit(sh->vol, sh->txn + 3), 0);
	}
	cr_assert_eq(sh->failures, 0, "%d failures, the first: %s", sh->failures, sh->first);
	for (uint64_t b = 0; b < to; b++)
		cr_assert_eq(sh->own.map[b], 0, "block %llu still owned", (unsigned long long)b);
	struct bga_config cfg;
	cr_assert_eq(bga_volume_config(sh->vol, &cfg), 0);
	cr_assert_eq(cfg.nblocks, to);
	cr_assert_eq(bga_free_exact(sh->vol), to, "every block free again");
	cr_assert_eq(bga_reserved(sh->vol), 0);
	assert_clean(sh->vol);
	bga_destroy(sh->vol);
	free(sh->own.map);
}

/* ROUNDS rounds of grow_under_threads to 2 * CHUNK + 100 with two
 * workers, each on a fresh struct shared with proto's switches. */
static void rounds(uint32_t flags, uint32_t slots, struct shared proto)
{
	for (int i = 0; i < ROUNDS; i++) {
		struct shared sh = proto;
		grow_under_threads(flags, slots, 2 * CHUNK + 100, 2, &sh);
	}
}

Test(grow_threads, across_chunks_default, .timeout = 120)
{
	rounds(0, 0, (struct shared){0});
}

/* One slot: every group shares the lock of the group being extended. */
Test(grow_threads, across_chunks_one_slot, .timeout = 120)
{
	rounds(0, 1, (struct shared){0});
}

Test(grow_threads, across_chunks_global_lock, .timeout = 120)
{
	rounds(BGA_GLOBAL_LOCK | BGA_ATOMIC_COUNTERS, 0, (struct shared){0});
}

Test(grow_threads, trim_and_foreach_race_grow, .timeout = 120)
{
	rounds(0, 0, (struct shared){.trims = true});
}

Test(grow_threads, windows_race_grow, .timeout = 120)
{
	rounds(0, 0, (struct shared){.windows = true});
}

Test(grow_threads, deferred_frees_and_commits_race_grow, .timeout = 120)
{
	rounds(0, 0, (struct shared){.deferred = true});
}

Test(grow_threads, reservations_race_grow, .timeout = 120)
{
	rounds(0, 0, (struct shared){.reserve = true});
}

/*
 * The chunk directory grows by segments (chunkdir.c): a volume created
 * with two chunks has room for 64 (one directory block), a grow past 64
 * chunks adds a segment of 64 more, one past 128 a segment of 128.  Grows
 * that add them run while the workers allocate.
 */
Test(grow_threads, across_a_directory_segment, .timeout = 120)
{
	struct shared sh = {.create = 2 * CHUNK, .start = 64 * CHUNK - 3 * BPG - 5, .windows = true};
	grow_under_threads(0, 0, 65 * CHUNK + 100, 2, &sh);
}

Test(grow_threads, across_the_second_directory_segment, .timeout = 120)
{
	struct shared sh = {.create = 2 * CHUNK, .start = 128 * CHUNK - 3 * BPG - 5, .trims = true, .windows = true,
			    .deferred = true, .reserve = true};
	grow_under_threads(0, 0, 129 * CHUNK + 100, 2, &sh);
}

Test(grow_threads, everything_races_grow, .timeout = 120)
{
	rounds(0, 0, (struct shared){.trims = true, .windows = true, .deferred = true, .reserve = true});
}
