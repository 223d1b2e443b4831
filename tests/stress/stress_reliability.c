/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The two contract breaks of issue 10, as repeatable scenarios:
 *
 *  grow    one thread grows the volume a block at a time across chunk
 *          boundaries while others make first touches of untouched chunks
 *          (exact-goal allocations, plain searches, trims) in groups that
 *          share the lock slot of the group the next grow extends.  Before
 *          the fix the two took grow_lock and the slot lock in opposite
 *          orders and hung within seconds.  A watchdog fails the run (exit
 *          1, never a hang) when no thread makes progress for 10 seconds.
 *  enospc  one group, wholly used but for 16 single blocks far apart (and 8
 *          more waiting on a deferred free that is never committed).
 *          Thread A allocates min 1 max 256 and frees, thread B min 1 max 1
 *          and frees: each holds at most one block, so at least 14 free
 *          blocks exist at every instant.  Any -ENOSPC or -EAGAIN, or a
 *          bga_free_exact below 14, is a failure.  Runs take turns with
 *          per-CPU and atomic counters, and B allocates plainly, through a
 *          window handle, or on a bga_reserve(1) of its own each time.
 *  twice   two threads free the same extents at the same time, each list
 *          in the same order after a barrier: single blocks (bga_free's
 *          one-word fast path), single blocks in a group that holds a
 *          file's window (the path through the general checks), and
 *          two-block extents across a word boundary (the general path).
 *          For every extent exactly one free must return 0 and the other
 *          -EINVAL; afterwards the free count is exactly what it was
 *          before the allocations and bga_check is clean.
 *
 * Usage: stress_reliability [grow|enospc|twice|all] [runs]; runs defaults
 * to BGA_RELIABILITY_RUNS or 20.  A plain program, so it runs under TSan.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bgalloc.h>

#include "testutil.h"
#include "threads.h"
#include "group.h" /* the lock slot of a group, to aim at the grower's */

static int failures;

static void fail(const char *what, long long a, long long b)
{
	if (__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED) < 10)
		fprintf(stderr, "stress_reliability: %s (%lld, %lld)\n", what, a, b);
}

/* ---- progress watchdog ---- */

static uint64_t progress;
static int watchdog_stop; /* atomic */

static void *watchdog(void *arg)
{
	const char *name = arg;
	uint64_t last = __atomic_load_n(&progress, __ATOMIC_RELAXED);
	int idle = 0;
	while (!__atomic_load_n(&watchdog_stop, __ATOMIC_RELAXED)) {
		usleep(100 * 1000);
		uint64_t now = __atomic_load_n(&progress, __ATOMIC_RELAXED);
		idle = now == last ? idle + 1 : 0;
		last = now;
		if (idle >= 100) {
			fprintf(stderr, "stress_reliability: %s: no progress for 10 s: deadlock\n", name);
			_exit(1);
		}
	}
	return NULL;
}

/* ---- grow against first touches ---- */

#define BPG 64u
#define CHUNK_BLOCKS ((uint64_t)BPG << BGA_CHUNK_SHIFT)
#define TOUCH_CHUNKS 48 /* chunks the toucher threads aim at, per run (memory) */

struct grow_run {
	struct bga_volume *vol;
	uint64_t start_blocks, grows;
	int done; /* atomic */
	uint64_t seed;
};

static void *grower(void *arg)
{
	struct grow_run *r = arg;
	for (uint64_t i = 1; i <= r->grows; i++) {
		int rc = bga_grow(r->vol, r->start_blocks + i);
		if (rc)
			fail("grow", rc, (long long)i);
		__atomic_fetch_add(&progress, 1, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int discard_nothing(void *ctx, uint64_t start, uint64_t len)
{
	(void)ctx, (void)start, (void)len;
	return 0;
}

static void touch(void *ctx, int id)
{
	struct grow_run *r = ctx;
	struct rng rng = {r->seed * 7919 + (uint64_t)id + 1};
	uint32_t nslots = bga_locktab_nslots(r->vol->locks);
	while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
		/* The group the next grow extends, and a group of an untouched
		 * chunk below it that shares its lock slot. */
		struct bga_config cfg;
		bga_volume_config(r->vol, &cfg);
		uint64_t last = (cfg.nblocks - 1) / BPG;
		uint32_t slot = bga_locktab_slot(r->vol->locks, last);
		uint64_t c = below(&rng, TOUCH_CHUNKS);
		uint64_t g = c << BGA_CHUNK_SHIFT;
		for (uint64_t k = 0; k < nslots && bga_locktab_slot(r->vol->locks, g) != slot; k++)
			g++;
		uint64_t b = g * BPG;
		struct bga_extent e;
		int rc = 0;
		switch (below(&rng, 3)) {
		case 0: {
			struct bga_request req = {.goal = b, .min_len = 1, .max_len = 1, .flags = BGA_EXACT_GOAL};
			rc = bga_alloc(r->vol, &req, &e);
			break;
		}
		case 1: {
			struct bga_request req = {.goal = b, .min_len = 1, .max_len = 8};
			rc = bga_alloc(r->vol, &req, &e);
			break;
		}
		default:
			rc = bga_trim(r->vol, b, b + BPG, 1, discard_nothing, NULL, NULL);
			e.len = 0;
			break;
		}
		if (rc == 0 && e.len && (rc = bga_free(r->vol, e.start, e.len)) != 0)
			fail("free after first touch", rc, (long long)e.start);
		else if (rc != 0 && rc != -ENOSPC)
			fail("first touch", rc, (long long)b);
		__atomic_fetch_add(&progress, 1, __ATOMIC_RELAXED);
	}
}

static void grow_once(uint64_t run, struct bga_config cfg)
{
	/* About 4000 chunks: a volume past 4096 groups, so searches reach
	 * untouched chunks through the index. */
	uint64_t start = 4000 * CHUNK_BLOCKS - 100 + run % 97;
	cfg.nblocks = start;
	struct grow_run r = {.start_blocks = start, .grows = 300, .seed = run + 1};
	int rc = bga_create(&cfg, &r.vol);
	if (rc) {
		fail("create", rc, 0);
		return;
	}
	pthread_t gt;
	struct test_threads touchers;
	pthread_create(&gt, NULL, grower, &r);
	if (test_threads_start(&touchers, 3, touch, &r) != 0)
		abort();
	pthread_join(gt, NULL);
	test_threads_join(&touchers);
	struct bga_check_report rep;
	if (bga_check(r.vol, &rep) != 0)
		fail(rep.message, (long long)rep.group, (long long)rep.block);
	bga_destroy(r.vol);
}

static void scenario_grow(int runs)
{
	for (int i = 0; i < runs; i++) {
		struct bga_config cfg;
		bga_config_init(&cfg, 1);
		cfg.blocks_per_group = BPG;
		if (i % 3 == 1)
			cfg.lock_slots = 1;
		else if (i % 3 == 2)
			cfg.flags = BGA_GLOBAL_LOCK;
		grow_once((uint64_t)i, cfg);
	}
}

/* ---- false ENOSPC near full ---- */

#define GROUP 4096u
#define HOLES 16u
#define PENDING 8u
#define OPS 20000

/* How thread B allocates: plainly, through a window handle, or on a
 * reservation it makes for each allocation. */
enum { B_PLAIN, B_WINDOW, B_RESERVED, B_HOW };

struct enospc_run {
	struct bga_volume *vol;
	int how;  /* B_*, thread B's way */
	int stop; /* atomic */
};

static void *churn(void *arg, uint64_t max_len, bool goal, int how)
{
	struct enospc_run *r = arg;
	struct rng rng = {max_len * 31 + 7};
	struct bga_rsv *rsv = NULL;
	if (how == B_WINDOW && bga_rsv_open(r->vol, &rsv) != 0)
		fail("rsv_open", 0, 0);
	for (int i = 0; i < OPS; i++) {
		struct bga_request req = {
			.goal = goal ? below(&rng, GROUP) : BGA_NO_GOAL, .min_len = 1, .max_len = max_len, .rsv = rsv};
		struct bga_extent e;
		int rc = 0;
		if (how == B_RESERVED) {
			req.flags = BGA_USE_RESERVED;
			if ((rc = bga_reserve(r->vol, 1)) != 0) {
				fail("false -ENOSPC from bga_reserve", rc, 1);
				continue;
			}
		}
		rc = bga_alloc(r->vol, &req, &e);
		if (rc != 0) {
			fail(rc == -EAGAIN ? "false -EAGAIN" : "false -ENOSPC", rc, (long long)max_len);
			continue;
		}
		if (e.len != 1)
			fail("more than one block from a group of single holes", (long long)e.len, 0);
		if ((rc = bga_free(r->vol, e.start, e.len)) != 0)
			fail("free", rc, (long long)e.start);
		__atomic_fetch_add(&progress, 1, __ATOMIC_RELAXED);
	}
	bga_rsv_close(rsv);
	return NULL;
}

static void *churn_a(void *arg)
{
	return churn(arg, 256, false, B_PLAIN);
}

static void *churn_b(void *arg)
{
	return churn(arg, 1, true, ((struct enospc_run *)arg)->how);
}

static void *watch_free(void *arg)
{
	struct enospc_run *r = arg;
	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		uint64_t f = bga_free_exact(r->vol);
		if (f < HOLES - 2)
			fail("bga_free_exact below the blocks nobody holds", (long long)f, HOLES - 2);
	}
	return NULL;
}

static void enospc_once(int run)
{
	struct bga_config cfg;
	bga_config_init(&cfg, GROUP);
	cfg.blocks_per_group = GROUP;
	if (run % 2)
		cfg.flags = BGA_ATOMIC_COUNTERS;
	struct enospc_run r = {.how = run / 2 % B_HOW};
	struct bga_extent all;
	struct bga_request whole = {.goal = 0, .min_len = GROUP, .max_len = GROUP};
	if (bga_create(&cfg, &r.vol) || bga_alloc(r.vol, &whole, &all)) {
		fail("setup", 0, 0);
		return;
	}
	for (uint32_t i = 0; i < HOLES; i++)
		if (bga_free(r.vol, (uint64_t)i * (GROUP / HOLES) + 7, 1))
			fail("setup free", i, 0);
	for (uint32_t i = 0; i < PENDING; i++)
		if (bga_free_deferred(r.vol, (uint64_t)i * (GROUP / PENDING) + 100, 1, 1))
			fail("setup deferred free", i, 0);
	pthread_t a, b, w;
	pthread_create(&w, NULL, watch_free, &r);
	pthread_create(&a, NULL, churn_a, &r);
	pthread_create(&b, NULL, churn_b, &r);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	pthread_join(w, NULL);
	if (bga_free_exact(r.vol) != HOLES)
		fail("free count after the run", (long long)bga_free_exact(r.vol), HOLES);
	struct bga_check_report rep;
	if (bga_check(r.vol, &rep) != 0)
		fail(rep.message, (long long)rep.group, (long long)rep.block);
	bga_destroy(r.vol);
}

/* ---- twice: racing frees of the same extents ---- */

enum { TWICE_N = 96, TWICE_ROUNDS = 50 };

struct twice_run {
	struct bga_volume *vol;
	pthread_barrier_t start;
	struct bga_extent ext[TWICE_N];
	int rc[2][TWICE_N];
};

struct twice_arg {
	struct twice_run *r;
	int id;
};

static void *twice_free(void *arg)
{
	struct twice_arg *a = arg;
	pthread_barrier_wait(&a->r->start);
	for (int i = 0; i < TWICE_N; i++)
		a->r->rc[a->id][i] = bga_free(a->r->vol, a->r->ext[i].start, a->r->ext[i].len);
	__atomic_fetch_add(&progress, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void twice_once(int run)
{
	struct bga_config cfg;
	bga_config_init(&cfg, 8 * GROUP);
	cfg.blocks_per_group = GROUP;
	if (run % 2)
		cfg.flags = BGA_ATOMIC_COUNTERS;
	struct twice_run r;
	struct bga_rsv *rsv = NULL;
	struct bga_extent held;
	struct bga_request wreq = {.goal = 2 * GROUP, .min_len = 1, .max_len = 1};
	if (bga_create(&cfg, &r.vol) || bga_rsv_open(r.vol, &rsv) || (wreq.rsv = rsv, bga_alloc(r.vol, &wreq, &held))) {
		fail("twice setup", run, 0);
		return;
	}
	/* Group 2 now holds the handle's window: its frees take the general
	 * checks (bga_free's exit for groups with windows). */
	uint64_t before = bga_free_exact(r.vol);
	struct rng rng = {(uint64_t)run * 977 + 13};
	for (int round = 0; round < TWICE_ROUNDS && failures == 0; round++) {
		for (int i = 0; i < TWICE_N; i++) {
			struct bga_request q = {.min_len = 1, .max_len = 1};
			if (i % 3 == 0) {
				q.goal = below(&rng, 2 * GROUP); /* groups 0-1: the one-word path */
			} else if (i % 3 == 1) {
				q.goal = 2 * GROUP + 64 + below(&rng, GROUP - 128); /* beside the window */
			} else { /* two blocks across a word boundary, exactly there */
				q.goal = 4 * GROUP + 64 * (1 + below(&rng, GROUP / 64 - 2)) - 1;
				q.min_len = q.max_len = 2;
				q.flags = BGA_EXACT_GOAL;
			}
			int rc = bga_alloc(r.vol, &q, &r.ext[i]);
			if (rc == -ENOSPC && q.flags) { /* that pair is taken: any two blocks */
				q.flags = 0;
				rc = bga_alloc(r.vol, &q, &r.ext[i]);
			}
			if (rc)
				fail("twice alloc", rc, i);
		}
		pthread_barrier_init(&r.start, NULL, 2);
		pthread_t t[2];
		struct twice_arg args[2] = {{&r, 0}, {&r, 1}};
		for (int k = 0; k < 2; k++)
			pthread_create(&t[k], NULL, twice_free, &args[k]);
		for (int k = 0; k < 2; k++)
			pthread_join(t[k], NULL);
		pthread_barrier_destroy(&r.start);
		for (int i = 0; i < TWICE_N; i++) {
			int a = r.rc[0][i], b = r.rc[1][i];
			if (!((a == 0 && b == -EINVAL) || (a == -EINVAL && b == 0)))
				fail("racing frees of one extent: not exactly one success and one -EINVAL", a, b);
		}
		if (bga_free_exact(r.vol) != before)
			fail("free count after racing frees", (long long)bga_free_exact(r.vol), (long long)before);
	}
	bga_rsv_close(rsv);
	struct bga_check_report rep;
	if (bga_check(r.vol, &rep) != 0)
		fail(rep.message, (long long)rep.group, (long long)rep.block);
	bga_destroy(r.vol);
}

int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "all";
	const char *env = getenv("BGA_RELIABILITY_RUNS");
	int runs = argc > 2 ? atoi(argv[2]) : env ? atoi(env) : 20;
	if (runs <= 0)
		runs = 20;
	pthread_t wd;
	pthread_create(&wd, NULL, watchdog, (void *)which);
	bool all = strcmp(which, "all") == 0;
	if (all || strcmp(which, "grow") == 0)
		scenario_grow(runs);
	if (all || strcmp(which, "enospc") == 0)
		for (int i = 0; i < runs && failures == 0; i++)
			enospc_once(i);
	if (all || strcmp(which, "twice") == 0)
		for (int i = 0; i < runs && failures == 0; i++)
			twice_once(i);
	__atomic_store_n(&watchdog_stop, 1, __ATOMIC_RELAXED);
	pthread_join(wd, NULL);
	printf("stress_reliability %s: %d runs, %d failures\n", which, runs, failures);
	return failures ? 1 : 0;
}
