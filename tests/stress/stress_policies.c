/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The policies under concurrency, as a plain program for ThreadSanitizer:
 * threads reserve, allocate through windows and from reservations, free
 * at once or deferred, while one thread commits and trims.  Checks: no
 * block handed to two owners, no reserved allocation fails, free minus
 * reserved never negative (sampled), bga_check clean at the end, nothing
 * lost after the final commit.  Rounds (a fresh volume each) repeat for
 * BGA_STRESS_SECONDS (stress_time.h).  Exits 1 on any failure.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <bgalloc.h>

#include "stress_time.h"
#include "owners.h"
#include "testutil.h"
#include "threads.h"
#include <bgalloc/counter.h>

#include "types.h"

#define THREADS 8
#define OPS 20000 /* per worker and round */
#define HELD 48

struct shared {
	struct bga_volume *vol;
	struct owners own; /* cap: nblocks */
	uint64_t nblocks;
	uint64_t txn;
	int stop;
	int failures;
	uint64_t samples, trims;
	uint64_t round; /* this round, for the workers' seeds */
};

static void fail(void *ctx, const char *what, uint64_t a)
{
	struct shared *sh = ctx;
	stress_fail(&sh->failures, 10, "stress_policies", what, a);
}

static void own(struct shared *sh, struct bga_extent e, int id)
{
	for (uint64_t b = e.start; b < e.start + e.len; b++) {
		uint8_t zero = 0;
		if (!__atomic_compare_exchange_n(&sh->own.map[b], &zero, (uint8_t)id, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			fail(sh, "block handed out twice", b);
	}
}

static void disown(struct shared *sh, struct bga_extent e)
{
	for (uint64_t b = e.start; b < e.start + e.len; b++)
		__atomic_store_n(&sh->own.map[b], 0, __ATOMIC_RELAXED);
}

static void work(void *ctx, int id)
{
	struct shared *sh = ctx;
	uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1) + sh->round;
	struct bga_extent held[HELD];
	struct bga_rsv *rsv;
	int n = 0;
	if (bga_rsv_open(sh->vol, &rsv) != 0)
		fail(sh, "rsv_open", 0);
	for (int i = 0; i < OPS; i++) {
		uint64_t r = rng_next(&s);
		if (n < HELD - 4 && (r & 1)) {
			struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = 1, .max_len = 1 + r % 4};
			bool reserved = (r & 6) == 0;
			if (reserved) {
				if (bga_reserve(sh->vol, req.max_len) != 0)
					continue;
				req.flags = BGA_USE_RESERVED;
			} else if (r & 8) {
				req.rsv = rsv;
			}
			struct bga_extent e;
			int rc = bga_alloc(sh->vol, &req, &e);
			if (reserved && e.len < req.max_len && rc == 0)
				bga_unreserve(sh->vol, req.max_len - e.len);
			if (rc == 0) {
				own(sh, e, id + 1);
				held[n++] = e;
			} else if (reserved) {
				fail(sh, "reserved allocation failed", (uint64_t)-rc);
				bga_unreserve(sh->vol, req.max_len);
			} else if (rc != -ENOSPC && rc != -EAGAIN) {
				fail(sh, "alloc", (uint64_t)-rc);
			}
		} else if (n > 0) {
			int k = (int)(rng_next(&s) % (uint64_t)n);
			struct bga_extent e = held[k];
			held[k] = held[--n];
			disown(sh, e);
			int rc;
			if (r & 16) {
				rc = bga_free(sh->vol, e.start, e.len);
			} else {
				/* The janitor commits concurrently: a txn read a
				 * moment ago may be committed already, so a
				 * refusal is retried with a fresh one. */
				rc = -EINVAL;
				for (int retry = 0; rc == -EINVAL && retry < 1000; retry++) {
					uint64_t t = __atomic_load_n(&sh->txn, __ATOMIC_ACQUIRE) + 2;
					rc = bga_free_deferred(sh->vol, e.start, e.len, t);
				}
			}
			if (rc != 0)
				fail(sh, "free", (uint64_t)-rc);
		}
	}
	while (n > 0) {
		struct bga_extent e = held[--n];
		disown(sh, e);
		if (bga_free(sh->vol, e.start, e.len) != 0)
			fail(sh, "final free", e.start);
	}
	bga_rsv_close(rsv);
}

static void *janitor(void *arg)
{
	struct shared *sh = arg;
	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		int64_t used = bga_counter_sum(sh->vol->used);
		if (used > (int64_t)sh->vol->geom->capacity)
			fail(sh, "free - reserved < 0", (uint64_t)used);
		uint64_t t = __atomic_add_fetch(&sh->txn, 1, __ATOMIC_ACQ_REL);
		if (bga_commit(sh->vol, t) != 0)
			fail(sh, "commit", t);
		if (bga_trim(sh->vol, 0, sh->nblocks, 4, owners_discard, &sh->own, NULL) != 0)
			fail(sh, "trim", 0);
		sh->samples++;
	}
	return NULL;
}

static void round_once(uint64_t round, int *failures, uint64_t *samples)
{
	struct bga_config cfg;
	bga_config_init(&cfg, 8 * 256);
	cfg.blocks_per_group = 256;
	cfg.rsv_max = 64;
	struct shared sh = {.nblocks = cfg.nblocks, .round = round};
	if (bga_create(&cfg, &sh.vol) != 0) {
		fprintf(stderr, "stress_policies: bga_create failed\n");
		++*failures;
		return;
	}
	sh.own = (struct owners){.map = calloc(cfg.nblocks, 1), .cap = cfg.nblocks, .fail = fail, .ctx = &sh};
	pthread_t j;
	pthread_create(&j, NULL, janitor, &sh);
	if (test_threads_run(THREADS, work, &sh) != 0)
		abort();
	__atomic_store_n(&sh.stop, 1, __ATOMIC_RELEASE);
	pthread_join(j, NULL);
	if (bga_commit(sh.vol, sh.txn + 3) != 0)
		fail(&sh, "final commit", 0);
	struct bga_check_report rep;
	if (bga_check(sh.vol, &rep) != 0)
		fail(&sh, rep.message, 0);
	if (bga_free_exact(sh.vol) != cfg.nblocks || bga_reserved(sh.vol) != 0)
		fail(&sh, "blocks lost or reservations leaked", bga_free_exact(sh.vol));
	free(sh.own.map);
	bga_destroy(sh.vol);
	*failures += sh.failures;
	*samples += sh.samples;
}

int main(void)
{
	uint64_t deadline = stress_deadline(stress_seconds(BGA_STRESS_DEFAULT_SECONDS)), rounds = 0, samples = 0;
	int failures = 0;
	do
		round_once(rounds++, &failures, &samples);
	while (!failures && !stress_expired(deadline));
	printf("stress_policies: %llu rounds of %d threads x %d ops, %llu commit/trim rounds, %d failures\n",
	       (unsigned long long)rounds, THREADS, OPS, (unsigned long long)samples, failures);
	return failures != 0;
}
