/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Frees of ranges over many groups and across chunks, from several
 * threads at once: each thread owns a region of 40 groups (more lock
 * slots than the free's inline array of 16 holds, so it sorts and locks
 * them from the heap), regions interleave in the lock table, and two of
 * them straddle a chunk boundary.  Inside its own region a thread's exact
 * allocations must all succeed and every free must too.  Also: windows
 * opened and closed while other threads allocate in their group.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include <bgalloc.h>
#include <bgalloc/locktab.h>

#include "owners.h"
#include "testutil.h"

#define BPG 64
#define CHUNK_GROUPS 4096
#define REGION 40 /* groups per thread */
#define NTHREADS 4

struct shared {
	struct bga_volume *vol;
	int failures;
	char first[160];
};

struct worker {
	struct shared *sh;
	uint64_t g0; /* first group of the region */
	int id;
	int rounds;
};

static void failf(struct shared *sh, const char *what, uint64_t a, int rc)
{
	if (__atomic_fetch_add(&sh->failures, 1, __ATOMIC_RELAXED) == 0)
		snprintf(sh->first, sizeof(sh->first), "%s (%llu): %d", what, (unsigned long long)a, rc);
}

static int exact(struct bga_volume *vol, uint64_t start, uint64_t len)
{
	struct bga_request req = {.goal = start, .min_len = len, .max_len = len, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	int rc = bga_alloc(vol, &req, &e);
	return rc ? rc : e.start == start && e.len == len ? 0 : -EPROTO;
}

static void *region_worker(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	struct rng r = {0x1234567ull * (uint64_t)(w->id + 1)};
	uint64_t first = w->g0 * BPG, len = REGION * BPG;
	for (int round = 0; round < w->rounds; round++) {
		/* Whole groups, one exact allocation each: the region is ours. */
		for (uint64_t g = 0; g < REGION; g++) {
			int rc = exact(sh->vol, first + g * BPG, BPG);
			if (rc)
				failf(sh, "exact whole group", w->g0 + g, rc);
		}
		if (round & 1) {
			/* Mid-group to mid-group, then the two ends. */
			uint64_t a = 1 + below(&r, BPG - 1), b = len - 1 - below(&r, BPG - 1);
			int rc = bga_free(sh->vol, first + a, b - a);
			if (rc)
				failf(sh, "free of the middle", first + a, rc);
			if ((rc = bga_free(sh->vol, first, a)) != 0)
				failf(sh, "free of the head", first, rc);
			if ((rc = bga_free(sh->vol, first + b, len - b)) != 0)
				failf(sh, "free of the tail", first + b, rc);
		} else {
			int rc = bga_free(sh->vol, first, len);
			if (rc)
				failf(sh, "free of the region", first, rc);
		}
		/* A free that overlaps a free block must fail and change nothing:
		 * take the region minus its last block, free all of it. */
		if (round % 4 == 3) {
			for (uint64_t g = 0; g < REGION; g++) {
				int rc = exact(sh->vol, first + g * BPG, g + 1 < REGION ? BPG : BPG - 1);
				if (rc)
					failf(sh, "exact for the bad free", w->g0 + g, rc);
			}
			int rc = bga_free(sh->vol, first, len);
			if (rc != -EINVAL)
				failf(sh, "a free over a free block was not refused", first, rc);
			if ((rc = bga_free(sh->vol, first, len - 1)) != 0)
				failf(sh, "free after the refused one", first, rc);
		}
		if (round % 8 == 0)
			sched_yield();
	}
	return NULL;
}

static void regions_under_threads(uint32_t lock_kind, int rounds)
{
	struct shared sh = {0};
	struct bga_config cfg;
	bga_config_init(&cfg, 3 * CHUNK_GROUPS * BPG + 77);
	cfg.blocks_per_group = BPG;
	cfg.lock_kind = lock_kind;
	cr_assert_eq(bga_create(&cfg, &sh.vol), 0);
	struct bga_config got;
	cr_assert_eq(bga_volume_config(sh.vol, &got), 0);
	cr_assert_gt(got.lock_slots, 16, "more slots than the inline array holds");
	/* Two regions straddle a chunk boundary; slots interleave (region
	 * starts differ by a few groups modulo the slot count). */
	const uint64_t starts[NTHREADS] = {
		CHUNK_GROUPS - REGION / 2,
		2 * CHUNK_GROUPS - 7,
		100 + 3,
		CHUNK_GROUPS + 500 + 11,
	};
	pthread_t t[NTHREADS];
	struct worker w[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){&sh, starts[i], i, rounds};
		cr_assert_eq(pthread_create(&t[i], NULL, region_worker, &w[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(sh.failures, 0, "%d failures, the first: %s", sh.failures, sh.first);
	cr_assert_eq(bga_free_exact(sh.vol), cfg.nblocks);
	assert_clean(sh.vol);
	bga_destroy(sh.vol);
}

Test(ranges, threads_free_many_groups_and_across_chunks, .timeout = 120)
{
	regions_under_threads(0, 400);
}

Test(ranges, every_lock_kind, .timeout = 120)
{
	for (uint32_t kind = BGA_LOCK_FAS; kind <= BGA_LOCK_MUTEX; kind++)
		regions_under_threads(kind, 60);
}

/* ---- windows closed while others allocate in their group ---- */

struct winshared {
	struct bga_volume *vol;
	uint8_t *owner;
	uint64_t nblocks;
	int stop;
	int failures;
	char first[160];
};

struct winworker {
	struct winshared *sh;
	int id;
};

static void wfail(struct winshared *sh, const char *what, uint64_t a)
{
	if (__atomic_fetch_add(&sh->failures, 1, __ATOMIC_RELAXED) == 0)
		snprintf(sh->first, sizeof(sh->first), "%s (%llu)", what, (unsigned long long)a);
}

/* e is thread id's now; its blocks were nobody's. */
static void wown(struct winshared *sh, struct bga_extent e, int id)
{
	uint64_t b;
	if ((b = owners_take(sh->owner, e, id)) != OWNERS_NONE)
		wfail(sh, "block handed out twice", b);
}

/* Thread id gives e back, which it held. */
static void wfree(struct winshared *sh, struct bga_extent e, int id)
{
	uint64_t b;
	if ((b = owners_give(sh->owner, e, id)) != OWNERS_NONE)
		wfail(sh, "freed a block owned by another", b);
	else if (bga_free(sh->vol, e.start, e.len) != 0)
		wfail(sh, "free", e.start);
}

/* Opens a window, allocates through it once or twice, closes it: over
 * and over, all in group 1. */
static void *window_flipper(void *arg)
{
	struct winworker *w = arg;
	struct winshared *sh = w->sh;
	struct rng r = {77 + (uint64_t)w->id};
	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		struct bga_rsv *rsv;
		if (bga_rsv_open(sh->vol, &rsv) != 0) {
			wfail(sh, "rsv_open", 0);
			break;
		}
		struct bga_extent held[2];
		int n = 0;
		for (int i = 0; i < 1 + (int)below(&r, 2); i++) {
			struct bga_request req = {.goal = BPG + below(&r, BPG), .min_len = 1, .max_len = 2, .rsv = rsv};
			struct bga_extent e;
			int rc = bga_alloc(sh->vol, &req, &e);
			if (rc == 0) {
				wown(sh, e, w->id);
				held[n++] = e;
			} else if (rc != -ENOSPC) {
				wfail(sh, "alloc through a window", (uint64_t)-rc);
			}
		}
		bga_rsv_close(rsv);
		while (n > 0)
			wfree(sh, held[--n], w->id);
	}
	return NULL;
}

/* Plain allocations aimed at group 1, where the windows come and go. */
static void *plain_churn(void *arg)
{
	struct winworker *w = arg;
	struct winshared *sh = w->sh;
	struct rng r = {991 + (uint64_t)w->id};
	struct bga_extent held[16];
	int n = 0;
	for (int i = 0; i < 30000; i++) {
		if (n < 16 && (n == 0 || (rnd(&r) & 1))) {
			struct bga_request req = {.goal = BPG + below(&r, BPG), .min_len = 1, .max_len = 1 + below(&r, 4)};
			struct bga_extent e;
			int rc = bga_alloc(sh->vol, &req, &e);
			if (rc == 0) {
				wown(sh, e, w->id);
				held[n++] = e;
			} else {
				wfail(sh, "plain alloc (the volume is mostly free)", (uint64_t)-rc);
			}
		} else {
			int k = (int)below(&r, (uint64_t)n);
			struct bga_extent e = held[k];
			held[k] = held[--n];
			wfree(sh, e, w->id);
		}
	}
	while (n > 0)
		wfree(sh, held[--n], w->id);
	return NULL;
}

Test(ranges, window_closed_while_others_allocate_in_its_group, .timeout = 120)
{
	struct winshared sh = {.nblocks = 8 * BPG};
	struct bga_config cfg;
	bga_config_init(&cfg, sh.nblocks);
	cfg.blocks_per_group = BPG;
	cfg.rsv_default = 8;
	cfg.rsv_max = 16;
	cr_assert_eq(bga_create(&cfg, &sh.vol), 0);
	sh.owner = calloc(sh.nblocks, 1);
	pthread_t t[4];
	struct winworker w[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (struct winworker){&sh, i};
		cr_assert_eq(pthread_create(&t[i], NULL, i < 2 ? window_flipper : plain_churn, &w[i]), 0);
	}
	pthread_join(t[2], NULL);
	pthread_join(t[3], NULL);
	__atomic_store_n(&sh.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	cr_assert_eq(sh.failures, 0, "%d failures, the first: %s", sh.failures, sh.first);
	cr_assert_eq(bga_free_exact(sh.vol), sh.nblocks);
	struct bga_stats st;
	cr_assert_eq(bga_stats(sh.vol, &st), 0);
	assert_clean(sh.vol);
	free(sh.owner);
	bga_destroy(sh.vol);
}

/* ---- edges the suites above do not reach ---- */

/* A free over several groups of an untouched chunk names free blocks. */
Test(edges, free_in_an_untouched_chunk)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	bga_config_init(&cfg, 2 * CHUNK_GROUPS * BPG);
	cfg.blocks_per_group = BPG;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	cr_assert_eq(exact(vol, 3, 2), 0);
	cr_assert_eq(bga_free(vol, CHUNK_GROUPS * BPG + 100, 200), -EINVAL);
	cr_assert_eq(bga_free(vol, 3, CHUNK_GROUPS * BPG), -EINVAL, "from chunk 0 into the untouched chunk 1");
	cr_assert_eq(bga_free_deferred(vol, CHUNK_GROUPS * BPG + 100, 200, 1), -EINVAL);
	cr_assert_eq(bga_free_exact(vol), cfg.nblocks - 2);
	assert_clean(vol);
	bga_destroy(vol);
}

/*
 * A charge that the counter refuses because reservations promise most of
 * what is free: the run found is cut to what is not promised (the slow
 * loop of the charge), not refused.
 */
Test(edges, charge_cut_to_unpromised_space)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	bga_config_init(&cfg, 2 * BPG);
	cfg.blocks_per_group = BPG;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	cr_assert_eq(exact(vol, 0, BPG), 0);
	cr_assert_eq(exact(vol, BPG, BPG - 10), 0); /* 10 free, in one run */
	cr_assert_eq(bga_reserve(vol, 8), 0);
	struct bga_request req = {.goal = BPG, .min_len = 1, .max_len = 5};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(e.len, 2, "two blocks are not promised");
	cr_assert_eq(bga_alloc(vol, &req, &e), -ENOSPC, "the rest is promised");
	req.flags = BGA_USE_RESERVED;
	req.max_len = 8;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(e.len, 8);
	cr_assert_eq(bga_reserved(vol), 0);
	cr_assert_eq(bga_free_exact(vol), 0);
	assert_clean(vol);
	bga_destroy(vol);
}

Test(edges, config_init_and_too_many_groups)
{
	bga_config_init(NULL, 100); /* ignored */
	struct bga_config cfg;
	struct bga_volume *vol = NULL;
	bga_config_init(&cfg, ((uint64_t)1 << 32) * BPG + 1);
	cfg.blocks_per_group = BPG;
	cr_assert_eq(bga_create(&cfg, &vol), -EINVAL, "past 2^32 groups");
	cr_assert_null(vol);
}

/* ---- bga_free_deferred_vec ---- */

/* 8 groups of 64; [0, 512) allocated. */
static struct bga_volume *claimed_volume(void)
{
	struct bga_volume *vol = make_volume(512, 64, 0);
	cr_assert_eq(bga_claim(vol, 0, 512), 0);
	return vol;
}

Test(free_deferred_vec, set_pending_until_commit_then_free)
{
	struct bga_volume *vol = claimed_volume();
	/* any order, one spanning groups */
	struct bga_extent v[3] = {{300, 10}, {20, 100}, {5, 3}};
	cr_assert_eq(bga_free_deferred_vec(vol, v, 3, 7), 0);
	cr_expect_eq(bga_free_blocks_sum(vol), 0, "pending blocks are not free");
	for (int i = 0; i < 3; i++)
		cr_expect_eq(bga_free(vol, v[i].start, 1), -EINVAL, "a pending block freed again");
	struct bga_stats st;
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_expect_eq(st.deferred_blocks, 113);
	cr_assert_eq(bga_commit(vol, 6), 0);
	cr_expect_eq(bga_free_blocks_sum(vol), 0, "released before its txn committed");
	cr_assert_eq(bga_commit(vol, 7), 0);
	cr_expect_eq(bga_free_blocks_sum(vol), 113);
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_expect_eq(st.deferred_blocks, 0);
	cr_expect_eq(st.deferred_extents, 0);
	/* the blocks are free: a claim of each succeeds */
	for (int i = 0; i < 3; i++)
		cr_expect_eq(bga_claim(vol, v[i].start, v[i].len), 0);
	assert_clean(vol);
	bga_destroy(vol);
}

/* Each failing set leaves nothing pending: every extent can still be
 * freed at once, and the counts are as they were. */
Test(free_deferred_vec, any_bad_extent_changes_nothing)
{
	struct bga_volume *vol = claimed_volume();
	cr_assert_eq(bga_free(vol, 400, 8), 0);          /* [400, 408) free */
	cr_assert_eq(bga_free_deferred(vol, 450, 4, 3), 0); /* [450, 454) pending */
	struct {
		struct bga_extent v[3];
		size_t n;
		uint64_t txn;
		int rc;
	} bad[] = {
		{{{10, 4}, {402, 1}, {100, 70}}, 3, 5, -EINVAL},  /* one block free */
		{{{10, 4}, {452, 1}, {100, 70}}, 3, 5, -EINVAL},  /* one block pending */
		{{{10, 4}, {12, 4}, {100, 70}}, 3, 5, -EINVAL},   /* overlap */
		{{{10, 4}, {10, 4}}, 2, 5, -EINVAL},              /* the same twice */
		{{{10, 4}, {100, 0}}, 2, 5, -EINVAL},             /* length 0 */
		{{{10, 4}, {510, 3}}, 2, 5, -EINVAL},             /* past the end */
		{{{10, 4}, {100, UINT64_MAX}}, 2, 5, -EINVAL},    /* wraps */
		{{{10, 4}}, 1, 0, -EINVAL},                       /* txn 0 */
	};
	uint64_t free0 = bga_free_blocks_sum(vol);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(bga_free_deferred_vec(vol, bad[i].v, bad[i].n, bad[i].txn), bad[i].rc, "set %zu", i);
		struct bga_stats st;
		cr_assert_eq(bga_stats(vol, &st), 0);
		cr_expect_eq(st.deferred_blocks, 4, "set %zu left blocks pending", i);
	}
	cr_assert_eq(bga_commit(vol, 4), 0);
	cr_expect_eq(bga_free_deferred_vec(vol, &(struct bga_extent){10, 4}, 1, 4), -EINVAL, "txn committed");
	cr_expect_eq(bga_free_blocks_sum(vol), free0 + 4);
	/* nothing of the failed sets is pending: all of it frees now */
	struct bga_extent all[3] = {{10, 4}, {100, 70}, {300, 2}};
	cr_expect_eq(bga_free_vec(vol, all, 3), 0);
	assert_clean(vol);
	bga_destroy(vol);
}

/* The pending-extent count a commit gives back is the count the frees
 * added: a free spanning groups, committed, leaves 0, and the next one
 * counts from there. */
Test(free_deferred_vec, extent_count_survives_commit)
{
	struct bga_volume *vol = claimed_volume();
	struct bga_stats st;
	cr_assert_eq(bga_free_deferred(vol, 60, 10, 1), 0); /* groups 0 and 1 */
	cr_assert_eq(bga_commit(vol, 1), 0);
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_expect_eq(st.deferred_extents, 0);
	cr_assert_eq(bga_free_deferred(vol, 200, 1, 2), 0);
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_expect_eq(st.deferred_blocks, 1);
	cr_expect_geq(st.deferred_extents, 1, "a pending free counted as none");
	cr_assert_eq(bga_commit(vol, 2), 0);
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_expect_eq(st.deferred_extents, 0);
	bga_destroy(vol);
}

