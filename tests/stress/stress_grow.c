/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Growth across chunk boundaries (64-block groups: a chunk of
 * TEST_CHUNK_GROUPS groups is 131,072 blocks) while threads allocate at the growing end, make first
 * touches of new chunks by exact goal, free, and trim, with an ownership
 * map: no block handed out twice, no trim of an owned block, nothing lost,
 * bga_check clean after each round; every fourth round crosses the chunk
 * directory's first segment (64 chunks) instead of chunk 0's end; each
 * round starts with 64 one-block grows, so that bga_grow frees a batch
 * of replaced geometries after its grace period while the threads read
 * (grow.c, bga__geom_retire).  Rounds
 * (a fresh volume each, cycling through auto lock slots, one slot and the
 * global lock) repeat for
 * BGA_STRESS_SECONDS (stress_time.h).  A plain program, so it runs under
 * ThreadSanitizer.  A watchdog (alarm) kills a round that stops making
 * progress, so a deadlock fails the run instead of hanging it.
 * Exits 1 on any failure.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <bgalloc.h>

#include "stress_time.h"
#include "owners.h"
#include "testutil.h"
#include "threads.h"

#define BPG 64
#define CHUNK ((uint64_t)TEST_CHUNK_GROUPS * BPG)
#define THREADS 3
#define HELD 16
#define WATCHDOG_SECONDS 60 /* a round takes well under a second */

struct shared {
	struct bga_volume *vol;
	struct owners own; /* cap: the final size */
	uint64_t size; /* atomic: as of the last completed grow */
	int stop;      /* atomic */
	int failures;  /* atomic */
	uint64_t ops;  /* atomic: calls made, for the summary line */
	uint64_t round; /* this round, for the workers' seeds */
};

static void fail(void *ctx, const char *what, uint64_t a)
{
	struct shared *sh = ctx;
	stress_fail(&sh->failures, 10, "stress_grow", what, a);
}

static void release(struct shared *sh, struct bga_extent e, int id)
{
	owners_disown(&sh->own, e, id);
	int rc = bga_free(sh->vol, e.start, e.len);
	if (rc != 0)
		fail(sh, "free failed", (uint64_t)-rc);
}

static void work(void *ctx, int id)
{
	struct shared *sh = ctx;
	struct rng r = {0x9e3779b97f4a7c15ull * (sh->round + 1) + (uint64_t)id};
	struct bga_extent held[HELD];
	int n = 0;
	uint64_t i;
	for (i = 1; !__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE); i++) {
		if (i % 1024 == 0)
			sched_yield(); /* let the grower's grace periods end */
		uint64_t size = __atomic_load_n(&sh->size, __ATOMIC_ACQUIRE), x = rnd(&r);
		if (n < HELD && (n == 0 || (x & 1))) {
			/* Half at the growing end; some far out in untouched
			 * chunks, by exact goal (a first touch). */
			uint64_t goal = (x & 2) ? size - 1 - below(&r, 8 * BPG) : below(&r, size);
			struct bga_request req = {.goal = goal, .min_len = 1, .max_len = 1 + below(&r, 6)};
			if (((x >> 2) & 3) == 0)
				req.goal = BGA_NO_GOAL;
			else if (((x >> 2) & 3) == 1)
				req.flags = BGA_EXACT_GOAL;
			struct bga_extent e;
			int rc = bga_alloc(sh->vol, &req, &e);
			if (rc == 0) {
				owners_own(&sh->own, e, id);
				held[n++] = e;
			} else if (rc != -ENOSPC) {
				fail(sh, "alloc", (uint64_t)-rc);
			}
		} else if (n > 0) {
			int k = (int)below(&r, (uint64_t)n);
			struct bga_extent e = held[k];
			held[k] = held[--n];
			release(sh, e, id);
		}
		if ((x >> 8) % 128 == 0) {
			uint64_t from = size - 1 - below(&r, 64 * BPG < size ? 64 * BPG : size);
			int rc = bga_trim(sh->vol, from, size, 1, owners_discard, &sh->own, NULL);
			if (rc != 0)
				fail(sh, "trim", (uint64_t)-rc);
		}
	}
	while (n > 0)
		release(sh, held[--n], id);
	__atomic_fetch_add(&sh->ops, i, __ATOMIC_RELAXED);
}

static void watchdog(int sig)
{
	static const char msg[] = "stress_grow: watchdog: a round made no progress for 60 s (a deadlock?)\n";
	ssize_t w = write(2, msg, sizeof(msg) - 1);
	(void)w;
	(void)sig;
	abort();
}

/* Grow the volume to `size` and publish it to the workers. */
static void grow_to(struct shared *sh, uint64_t size, uint64_t *grows)
{
	if (bga_grow(sh->vol, size) != 0)
		fail(sh, "grow", size);
	++*grows;
	__atomic_store_n(&sh->size, size, __ATOMIC_RELEASE);
}

static void round_once(uint64_t round, int *failures, uint64_t *ops, uint64_t *grows)
{
	static const struct {
		uint32_t flags, slots;
	} modes[] = {{0, 0}, {0, 1}, {BGA_GLOBAL_LOCK | BGA_ATOMIC_COUNTERS, 0}};
	struct bga_config cfg;
	uint64_t start = CHUNK - 3 * BPG - (round % 61), to = 3 * CHUNK + 100 + round % 17;
	if (round % 4 == 3) {
		/* Across the chunk directory's first segment (64 chunks: its
		 * size for this volume; chunkdir.c): the grow past it adds a
		 * segment while the workers allocate. */
		start += 63 * CHUNK;
		to += 63 * CHUNK;
	}
	bga_config_init(&cfg, start);
	cfg.blocks_per_group = BPG;
	cfg.flags = modes[round % 3].flags;
	cfg.lock_slots = modes[round % 3].slots;
	struct shared sh = {.size = start, .round = round};
	sh.own = (struct owners){.map = calloc(to, 1), .cap = to, .fail = fail, .ctx = &sh};
	if (bga_create(&cfg, &sh.vol) != 0 || !sh.own.map) {
		fprintf(stderr, "stress_grow: setup failed\n");
		++*failures;
		free(sh.own.map);
		return;
	}
	alarm(WATCHDOG_SECONDS);
	struct test_threads workers;
	if (test_threads_start(&workers, THREADS, work, &sh) != 0)
		abort();
	/* First twice bga_grow's batch of replaced geometries (grow.c,
	 * BGA_GEOM_RETIRE_BATCH: 32) in one-block steps, so that a batch is
	 * freed after its grace period while the workers read; then to just
	 * short of each boundary, and across it in small steps. */
	uint64_t size = start;
	for (int k = 0; k < 64 && size < to; k++)
		grow_to(&sh, ++size, grows);
	struct grow_steps g = {.r = {round + 7}, .size = size, .target = size, .to = to, .chunk = CHUNK, .bpg = BPG};
	while (grow_steps_next(&g))
		grow_to(&sh, g.size, grows);
	__atomic_store_n(&sh.stop, 1, __ATOMIC_RELEASE);
	test_threads_join(&workers);
	alarm(0);
	struct bga_check_report rep;
	if (bga_check(sh.vol, &rep) != 0)
		fail(&sh, rep.message, 0);
	if (bga_free_exact(sh.vol) != to)
		fail(&sh, "blocks lost", bga_free_exact(sh.vol));
	free(sh.own.map);
	bga_destroy(sh.vol);
	*failures += sh.failures;
	*ops += sh.ops;
}

int main(void)
{
	uint64_t deadline = stress_deadline(stress_seconds(BGA_STRESS_DEFAULT_SECONDS)), rounds = 0, ops = 0, grows = 0;
	int failures = 0;
	signal(SIGALRM, watchdog);
	do
		round_once(rounds++, &failures, &ops, &grows);
	while (!failures && !stress_expired(deadline));
	printf("stress_grow: %llu rounds (3 chunk boundaries each, a quarter of them over a directory segment's), %llu grows, %d threads, %llu calls, %d failures\n",
	       (unsigned long long)rounds, (unsigned long long)grows, THREADS, (unsigned long long)ops, failures);
	return failures != 0;
}
