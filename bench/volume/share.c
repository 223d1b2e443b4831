/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What two CPUs pay for sharing (the `bga-share` executable): why random-
 * goal churn at 2 threads is held near 1x of 1 thread on this machine.
 *
 *  1. The cost of moving one cache line between the two CPUs: two pinned
 *     threads bounce a flag; half the round trip is one transfer.
 *  2. Single-block churn on a 2^20-block volume (free a random block of the
 *     thread's share of a 4096-block working set, allocate one at a random
 *     goal), pinned, in five settings:
 *       1 thread                  the reference;
 *       2 threads, random goals   both threads' goals over the whole volume
 *                                 (the churn), default lock slots;
 *       2 threads, own halves     each thread's goals in its own half, so
 *                                 no group, bitmap word, descriptor or (with
 *                                 the default of one lock slot per group,
 *                                 up to 256) lock slot is shared;
 *       the same, 8 slots         the kernel's NR_BG_LOCKS for 2 CPUs, our
 *                                 old default: groups g and g+8 share a
 *                                 slot, and so its line;
 *       random goals, 8 slots     slots make no difference to random goals.
 *
 * Each setting runs `reps` times, interleaved; the medians are printed,
 * with each 2-thread figure as a ratio of the 1-thread one.
 *
 *   bga-share [reps] [ops-per-thread]
 *   bga-share --count OPS     one single-thread churn only (for callgrind:
 *                             bench/volume/instructions.sh)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc.h>

#include "args.h"
#include "rng.h"
#include "xfer.h"

#define NBLOCKS (UINT64_C(1) << 20)
#define WSET 4096
#define PINGS 1000000

/* ---- 2. churn ---- */

struct setting {
	const char *name;
	int threads;
	bool own_half;      /* goals in the thread's own half of the volume */
	uint32_t lock_slots; /* 0: the default */
};

struct worker {
	struct bga_volume *vol;
	const struct setting *s;
	pthread_barrier_t *start;
	int id;
	uint64_t ops;
	double secs;
	int rc;
	uint64_t slot[WSET];
};

/* The timed loop, apart so that callgrind can count it alone
 * (bench/volume/instructions.sh). */
static __attribute__((noinline)) int churn_loop(struct worker *w, struct rng *r, uint64_t per, uint64_t lo,
						uint64_t span)
{
	struct bga_extent e;
	int rc = 0;
	for (uint64_t i = 0; i < w->ops && !rc; i++) {
		uint64_t k = rng_below(r, per);
		struct bga_request q = {.goal = lo + rng_below(r, span), .min_len = 1, .max_len = 1};
		rc = bga_free(w->vol, w->slot[k], 1);
		if (!rc)
			rc = bga_alloc(w->vol, &q, &e);
		w->slot[k] = e.start;
	}
	return rc;
}

static void *churn(void *arg)
{
	struct worker *w = arg;
	uint64_t per = WSET / (uint64_t)w->s->threads;
	uint64_t span = w->s->own_half ? NBLOCKS / (uint64_t)w->s->threads : NBLOCKS;
	uint64_t lo = w->s->own_half ? span * (uint64_t)w->id : 0;
	struct bga_extent e;
	struct rng r;

	pin_to_cpu(w->id % 2);
	rng_seed(&r, 77, (uint64_t)w->id);
	for (uint64_t i = 0; i < per && !w->rc; i++) {
		struct bga_request q = {.goal = lo + rng_below(&r, span), .min_len = 1, .max_len = 1};
		w->rc = bga_alloc(w->vol, &q, &e);
		w->slot[i] = e.start;
	}
	pthread_barrier_wait(w->start);
	double t0 = now_s();
	if (!w->rc)
		w->rc = churn_loop(w, &r, per, lo, span);
	w->secs = now_s() - t0;
	return NULL;
}

/* Operations per second over all threads (ops / the slowest thread's time);
 * negative errno on failure. */
static double run_setting(const struct setting *s, uint64_t ops)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	pthread_barrier_t start;
	pthread_t tid[2];
	struct worker *w = calloc((size_t)s->threads, sizeof(*w));
	double rate = -ENOMEM, slowest = 0;
	int rc;

	if (w == NULL)
		return rate;
	bga_config_init(&cfg, NBLOCKS);
	cfg.lock_slots = s->lock_slots;
	if ((rc = bga_create(&cfg, &vol)) != 0) {
		free(w);
		return rc;
	}
	pthread_barrier_init(&start, NULL, (unsigned)s->threads);
	for (int i = 0; i < s->threads; i++) {
		w[i] = (struct worker){.vol = vol, .s = s, .start = &start, .id = i, .ops = ops};
		pthread_create(&tid[i], NULL, churn, &w[i]);
	}
	rc = 0;
	for (int i = 0; i < s->threads; i++) {
		pthread_join(tid[i], NULL);
		if (w[i].rc)
			rc = w[i].rc;
		if (w[i].secs > slowest)
			slowest = w[i].secs;
	}
	rate = rc ? rc : (double)ops * s->threads / slowest;
	pthread_barrier_destroy(&start);
	bga_destroy(vol);
	free(w);
	return rate;
}

int main(int argc, char **argv)
{
	static const struct setting settings[] = {
		{"1 thread", 1, false, 0},
		{"2 threads, random goals", 2, false, 0},
		{"2 threads, own halves", 2, true, 0},
		{"2 threads, own halves, 8 slots", 2, true, 8},
		{"2 threads, random goals, 8 slots", 2, false, 8},
	};
	enum { NSET = sizeof(settings) / sizeof(settings[0]) };
	if (argc == 3 && strcmp(argv[1], "--count") == 0) {
		/* One single-thread churn, nothing else: for callgrind. */
		double rate = run_setting(&settings[0], arg_u64("bga-share", "OPS", argv[2], 1, UINT64_C(1) << 40));
		return rate < 0;
	}
	if (argc > 3 || (argc > 1 && argv[1][0] == '-')) {
		fprintf(stderr, "usage: bga-share [reps 1..64] [ops-per-thread] | --count OPS\n");
		return 2;
	}
	int reps = argc > 1 ? arg_int("bga-share", "reps", argv[1], 1, 64) : 7;
	uint64_t ops = argc > 2 ? arg_u64("bga-share", "ops-per-thread", argv[2], 1, UINT64_C(1) << 40) : 1000000;
	double *v[NSET], xfer[64];

	for (int k = 0; k < NSET; k++)
		if (!(v[k] = calloc((size_t)reps, sizeof(double))))
			return 1;
	for (int r = 0; r < reps; r++) {
		xfer[r] = xfer_line_ns(0, 1, PINGS);
		for (int k = 0; k < NSET; k++) {
			v[k][r] = run_setting(&settings[k], ops);
			if (v[k][r] < 0) {
				fprintf(stderr, "%s: %s\n", settings[k].name, strerror((int)-v[k][r]));
				return 1;
			}
		}
	}
	printf("one cache line, CPU 0 <-> CPU 1: %.1f ns per transfer (median of %d)\n", bench_median(xfer, reps),
	       reps);
	printf("churn, 2^20 blocks, 4096-block working set, medians of %d runs of %llu ops per thread:\n", reps,
	       (unsigned long long)ops);
	double one = bench_median(v[0], reps);
	for (int k = 0; k < NSET; k++) {
		double m = bench_median(v[k], reps);
		printf("  %-36s %7.2f M ops/s  %5.2fx of 1 thread\n", settings[k].name, m / 1e6, m / one);
	}
	for (int k = 0; k < NSET; k++)
		free(v[k]);
	return 0;
}
