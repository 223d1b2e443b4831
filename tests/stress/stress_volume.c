/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Threads allocate and free at random with ownership tracking while another
 * grows the volume: no block is ever handed to two owners, every free
 * succeeds, and bga_check is clean at the end.  A plain program (no Criterion) so it runs under ThreadSanitizer.
 * Each configuration repeats rounds (a fresh half-size volume grown to
 * full size while the workers run) for its share of BGA_STRESS_SECONDS
 * (stress_time.h).  Exits 1 on any failure.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <bgalloc.h>

#include "stress_time.h"
#include "testutil.h"

#define THREADS 8
#define OPS 20000 /* per worker and round */
#define HELD 64

struct shared {
	struct bga_volume *vol;
	uint8_t *owner;
	uint64_t nblocks;
	int failures;
};

struct worker {
	struct shared *sh;
	int id;
	uint64_t round;
};

static void fail(struct shared *sh, const char *what, uint64_t a, uint64_t b)
{
	if (__atomic_fetch_add(&sh->failures, 1, __ATOMIC_RELAXED) < 10)
		fprintf(stderr, "stress_volume: %s (%llu, %llu)\n", what, (unsigned long long)a, (unsigned long long)b);
}

static void release(struct shared *sh, struct bga_extent e)
{
	for (uint64_t b = e.start; b < e.start + e.len; b++)
		__atomic_store_n(&sh->owner[b], 0, __ATOMIC_RELAXED);
	int rc = bga_free(sh->vol, e.start, e.len);
	if (rc != 0)
		fail(sh, "free failed", e.start, (uint64_t)-rc);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	uint64_t s = 0x2545f4914f6cdd1dull * (uint64_t)(w->id + 1) + w->round;
	struct bga_extent held[HELD];
	int n = 0;
	for (int i = 0; i < OPS; i++) {
		uint64_t r = rng_next(&s);
		if (n < HELD && (n == 0 || (r & 1))) {
			struct bga_request req = {
				.goal = (r & 6) == 0 ? BGA_NO_GOAL : (r & 6) == 2 ? 0 : rng_next(&s) % (sh->nblocks / 2 + 100),
				.min_len = 1,
				.max_len = 1 + rng_next(&s) % 32,
			};
			struct bga_extent e;
			int rc = bga_alloc(sh->vol, &req, &e);
			if (rc == -ENOSPC)
				continue;
			if (rc != 0) {
				fail(sh, "alloc failed", (uint64_t)-rc, 0);
				continue;
			}
			for (uint64_t b = e.start; b < e.start + e.len; b++) {
				uint8_t zero = 0;
				if (!__atomic_compare_exchange_n(&sh->owner[b], &zero, (uint8_t)(w->id + 1), false,
								 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
					fail(sh, "block handed out twice", b, zero);
			}
			held[n++] = e;
		} else {
			int k = (int)(rng_next(&s) % (uint64_t)n);
			struct bga_extent e = held[k];
			held[k] = held[--n];
			release(sh, e);
		}
	}
	while (n > 0)
		release(sh, held[--n]);
	return NULL;
}

/* Grows the volume in steps while the workers run (online growth). */
static void *grower(void *arg)
{
	struct shared *sh = arg;
	for (uint64_t size = sh->nblocks / 2 + 100; size <= sh->nblocks; size += sh->nblocks / 40) {
		if (bga_grow(sh->vol, size) != 0)
			fail(sh, "grow failed", size, 0);
		sched_yield();
	}
	if (bga_grow(sh->vol, sh->nblocks) != 0)
		fail(sh, "grow failed", sh->nblocks, 0);
	return NULL;
}

static int round_once(uint32_t flags, uint64_t round, int *failures)
{
	struct bga_config cfg;
	bga_config_init(&cfg, 16 * 512);
	cfg.blocks_per_group = 512;
	cfg.flags = flags;
	struct shared sh = {.nblocks = cfg.nblocks};
	cfg.nblocks = cfg.nblocks / 2 + 100; /* the grower takes it to full size */
	if (bga_create(&cfg, &sh.vol) != 0) {
		fprintf(stderr, "stress_volume: bga_create failed\n");
		return ++*failures;
	}
	sh.owner = calloc(sh.nblocks, 1);
	pthread_t t[THREADS], gt;
	pthread_create(&gt, NULL, grower, &sh);
	struct worker w[THREADS];
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){&sh, i, round};
		pthread_create(&t[i], NULL, work, &w[i]);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_join(gt, NULL);
	struct bga_check_report rep;
	if (bga_check(sh.vol, &rep) != 0)
		fail(&sh, rep.message, 0, 0);
	if (bga_free_exact(sh.vol) != sh.nblocks)
		fail(&sh, "blocks lost", bga_free_exact(sh.vol), sh.nblocks);
	free(sh.owner);
	bga_destroy(sh.vol);
	*failures += sh.failures;
	return sh.failures != 0;
}

/* Rounds until the deadline (at least one). */
static int run(uint32_t flags, const char *name, double seconds)
{
	uint64_t deadline = stress_deadline(seconds), rounds = 0;
	int failures = 0;
	do
		round_once(flags, rounds++, &failures);
	while (!failures && !stress_expired(deadline));
	printf("stress_volume %s: %llu rounds of %d threads x %d ops, %d failures\n", name,
	       (unsigned long long)rounds, THREADS, OPS, failures);
	return failures != 0;
}

int main(void)
{
	double seconds = stress_seconds(BGA_STRESS_DEFAULT_SECONDS);
	int bad = run(0, "default", seconds / 2);
	bad |= run(BGA_GLOBAL_LOCK | BGA_ATOMIC_COUNTERS, "baseline", seconds / 2);
	return bad;
}
