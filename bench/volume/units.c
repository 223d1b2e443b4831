/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-units: what the storage-engine surface costs
 * (BENCHMARKS.md#storage-engine-surface), each figure a median over
 * repetitions, the comparisons as ratios within one run:
 *   failfast  a 2^28-block volume started full (BGA_START_FULL) with one
 *             free block in every 256, seeded with bga_free_vec; requests
 *             with min_len 2 (no such run exists): median microseconds
 *             per -ENOSPC, for a goal and for BGA_NO_GOAL;
 *   big       4 GiB in one bga_alloc_vec call (2^20 blocks of 4 KiB, a
 *             unit of 256) on an empty 8 GiB volume: median milliseconds
 *             and the extents it returned;
 *   vec       N extents of 8 blocks from a volume whose free space is
 *             runs of 8 (every other 8 used): one bga_alloc_vec call
 *             against N bga_alloc calls, ns per extent, and the ratio.
 *   ins       for bench/volume/vec_instructions.sh (callgrind): one
 *             bga_alloc_vec of N extents (vec_call) and N bga_alloc
 *             calls (alloc_calls), each on a fresh volume of the same
 *             free space, for each shape: runs of 8 (N extents of 8), an
 *             empty volume with max_len 8 (N pieces of one run), and an
 *             empty volume of 256-block groups with min_len = max_len =
 *             256 (a group per extent: the walk from group to group);
 *             on the empty volumes each group reached is touched first.
 *   engine, engine-ins, writers: a storage engine's requests at its
 *             allocation unit, against Ceph's allocators' workload
 *             (units_engine.c).
 * Usage: bga-units [failfast|big|vec|all] [REPS]
 *        bga-units ins N [SHAPE]   (SHAPE 0, 1 or 2; all three without)
 *        bga-units engine [REPS [STEPS [vec|alloc|whole]]]
 *        bga-units engine-ins empty|fragmented WANT STEPS [vec|alloc|whole]
 *        bga-units writers [WRITERS [WANT [OBJECTS]]]
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bgalloc.h>

#include "args.h"
#include "rng.h"
#include "units_engine.h"

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static struct bga_volume *make(uint64_t nblocks, uint32_t flags)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	bga_config_init(&cfg, nblocks);
	cfg.flags = flags;
	if (bga_create(&cfg, &vol) != 0) {
		fprintf(stderr, "bga_create failed\n");
		exit(1);
	}
	return vol;
}

static void failfast(int reps)
{
	uint64_t nblocks = UINT64_C(1) << 28, n = nblocks / 256;
	struct bga_volume *vol = make(nblocks, BGA_START_FULL);
	struct bga_extent *v = malloc(n * sizeof(*v));
	for (uint64_t i = 0; i < n; i++)
		v[i] = (struct bga_extent){i * 256 + 17, 1};
	double t0 = now_ns();
	int rc = bga_free_vec(vol, v, n);
	double seed_ms = (now_ns() - t0) / 1e6;
	free(v);
	if (rc != 0) {
		fprintf(stderr, "bga_free_vec: %d\n", rc);
		exit(1);
	}
	double *goal = malloc((size_t)reps * sizeof(double)), *nogoal = malloc((size_t)reps * sizeof(double));
	struct rng seed = {42};
	for (int i = 0; i < reps; i++) {
		struct bga_extent e;
		struct bga_request r = {.goal = rng_below(&seed, nblocks), .min_len = 2, .max_len = 8};
		double a = now_ns();
		rc = bga_alloc(vol, &r, &e);
		goal[i] = (now_ns() - a) / 1e3;
		if (rc != -ENOSPC) {
			fprintf(stderr, "expected -ENOSPC, got %d\n", rc);
			exit(1);
		}
		r.goal = BGA_NO_GOAL;
		r.max_len = 2;
		a = now_ns();
		rc = bga_alloc(vol, &r, &e);
		nogoal[i] = (now_ns() - a) / 1e3;
		if (rc != -ENOSPC) {
			fprintf(stderr, "expected -ENOSPC, got %d\n", rc);
			exit(1);
		}
	}
	double gmed = bench_median(goal, reps), nmed = bench_median(nogoal, reps);
	printf("failfast: 2^28 blocks, %llu free singles (seeded by one bga_free_vec in %.0f ms); min_len 2: "
	       "median %.2f us with a goal (max %.2f), %.2f us with BGA_NO_GOAL (max %.2f), %d requests each\n",
	       (unsigned long long)bga_free_exact(vol), seed_ms, gmed, goal[reps - 1], nmed, nogoal[reps - 1], reps);
	free(goal);
	free(nogoal);
	bga_destroy(vol);
}

static void big(int reps)
{
	uint64_t nblocks = UINT64_C(1) << 21; /* 8 GiB of 4 KiB */
	double *t = malloc((size_t)reps * sizeof(double));
	size_t cap = 1 << 16, n = 0;
	struct bga_extent *out = malloc(cap * sizeof(*out));
	uint64_t got = 0;
	for (int i = 0; i < reps; i++) {
		struct bga_volume *vol = make(nblocks, 0);
		struct bga_request r = {.goal = BGA_NO_GOAL, .min_len = 256, .max_len = nblocks / 2, .align = 256};
		double a = now_ns();
		int rc = bga_alloc_vec(vol, &r, nblocks / 2, out, cap, &n);
		t[i] = (now_ns() - a) / 1e6;
		got = 0;
		for (size_t k = 0; k < n; k++)
			got += out[k].len;
		if (rc != 0 || got != nblocks / 2) {
			fprintf(stderr, "4 GiB: rc %d, got %llu\n", rc, (unsigned long long)got);
			exit(1);
		}
		bga_destroy(vol);
	}
	printf("big: 4 GiB in one bga_alloc_vec (2^20 blocks, unit 256) on an empty 8 GiB volume: median %.3f ms "
	       "over %d calls, %zu extent(s)\n",
	       bench_median(t, reps), reps, n);
	free(t);
	free(out);
}

/* Free space in runs of 8: [16k, 16k + 8) free, the rest used. */
static struct bga_volume *runs_of_8(uint64_t nblocks)
{
	struct bga_volume *vol = make(nblocks, BGA_START_FULL);
	size_t n = nblocks / 16;
	struct bga_extent *v = malloc(n * sizeof(*v));
	for (size_t i = 0; i < n; i++)
		v[i] = (struct bga_extent){i * 16, 8};
	if (bga_free_vec(vol, v, n) != 0)
		exit(1);
	free(v);
	return vol;
}

static void vec(int reps)
{
	enum { N = 256 };
	uint64_t nblocks = UINT64_C(1) << 20;
	double *tv = malloc((size_t)reps * sizeof(double)), *ta = malloc((size_t)reps * sizeof(double));
	struct bga_extent out[N];
	for (int i = 0; i < reps; i++) {
		/* the same free space for both, the same goal, alternating order */
		for (int pass = 0; pass < 2; pass++) {
			struct bga_volume *vol = runs_of_8(nblocks);
			uint64_t goal = (uint64_t)(i % 64) * 16384;
			struct bga_request r = {.goal = goal, .min_len = 8, .max_len = 8};
			bool use_vec = (pass ^ (i & 1)) == 0;
			double a = now_ns();
			if (use_vec) {
				size_t n;
				if (bga_alloc_vec(vol, &r, 8 * N, out, N, &n) != 0 || n != N)
					exit(1);
			} else {
				for (int k = 0; k < N; k++) {
					if (bga_alloc(vol, &r, &out[k]) != 0)
						exit(1);
					r.goal = out[k].start + out[k].len;
				}
			}
			double dt = (now_ns() - a) / N;
			(use_vec ? tv : ta)[i] = dt;
			bga_destroy(vol);
		}
	}
	double mv = bench_median(tv, reps), ma = bench_median(ta, reps);
	printf("vec: %d extents of 8 from runs of 8: bga_alloc_vec %.1f ns/extent, %d bga_alloc calls %.1f ns/extent: "
	       "ratio %.3f (median of %d each)\n",
	       N, mv, N, ma, mv / ma, reps);
	free(tv);
	free(ta);
}

/* The two sides of the instruction count, kept out of line so that
 * callgrind's --toggle-collect can name them; the loop's goal update is
 * what a caller of bga_alloc pays, so it counts. */
__attribute__((noinline)) size_t vec_call(struct bga_volume *vol, const struct bga_request *r, uint64_t want,
					  struct bga_extent *out, size_t n)
{
	size_t got = 0;
	return bga_alloc_vec(vol, r, want, out, n, &got) == 0 ? got : 0;
}

__attribute__((noinline)) size_t alloc_calls(struct bga_volume *vol, struct bga_request r, struct bga_extent *out,
					     size_t n)
{
	for (size_t k = 0; k < n; k++) {
		if (bga_alloc(vol, &r, &out[k]) != 0)
			return k;
		r.goal = out[k].start + out[k].len;
	}
	return n;
}

static void ins(size_t n, int only)
{
	struct bga_extent *out = malloc(n * sizeof(*out));
	/* The thread's first calls pay once what no later call does (RCU
	 * registration, the CPU id's first lookup): paid here, on a volume
	 * of its own, so that a count of one call is the call's. */
	struct bga_volume *warm = make(UINT64_C(1) << 16, 0);
	struct bga_request w = {.goal = 0, .min_len = 1, .max_len = 8};
	size_t k;
	if (bga_alloc_vec(warm, &w, 16, out, 1, &k) != 0 || bga_alloc(warm, &w, out) != 0)
		exit(1);
	bga_destroy(warm);
	for (int shape = 0; shape < 3; shape++) {
		if (only >= 0 && shape != only)
			continue;
		uint64_t len = shape == 2 ? 256 : 8;
		for (int pass = 0; pass < 2; pass++) {
			struct bga_volume *vol;
			if (shape == 0) {
				vol = runs_of_8(UINT64_C(1) << 20);
			} else {
				struct bga_config cfg;
				bga_config_init(&cfg, UINT64_C(1) << 20);
				if (shape == 2)
					cfg.blocks_per_group = 256;
				if (bga_create(&cfg, &vol) != 0)
					exit(1);
				/* Each group the calls reach touched first (its
				 * bitmap made), by a claim and free of its last
				 * block: the count is the calls', not the first
				 * touch's, which both sides would pay alike. */
				uint32_t bpg = cfg.blocks_per_group;
				for (uint64_t g = 4096 / bpg; g <= (4096 + len * n) / bpg && g * bpg < cfg.nblocks; g++)
					if (bga_claim(vol, g * bpg + bpg - 1, 1) != 0 || bga_free(vol, g * bpg + bpg - 1, 1) != 0)
						exit(1);
			}
			struct bga_request r = {.goal = 4096, .min_len = len, .max_len = len};
			size_t got = pass == 0 ? vec_call(vol, &r, len * n, out, n) : alloc_calls(vol, r, out, n);
			if (got != n) {
				fprintf(stderr, "ins: shape %d %s: %zu extents\n", shape, pass ? "alloc" : "vec", got);
				exit(1);
			}
			printf("ins: shape %d %s %zu\n", shape, pass ? "alloc" : "vec", got);
			bga_destroy(vol);
		}
	}
	free(out);
}

static const char usage[] = "usage: bga-units [failfast|big|vec|all] [REPS 1..100000]\n"
			     "       bga-units ins N [SHAPE 0..2]\n"
			     "       bga-units engine [REPS [STEPS [vec|alloc|whole]]]\n"
			     "       bga-units engine-ins empty|fragmented WANT STEPS [vec|alloc|whole]\n"
			     "       bga-units writers [WRITERS [WANT [OBJECTS]]]\n";

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";
	if (!strcmp(what, "--help") || !strcmp(what, "-h")) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(what, "engine") || !strcmp(what, "engine-ins") || !strcmp(what, "writers"))
		return engine_main(what, argc - 2, argv + 2);
	if (!strcmp(what, "ins")) {
		if (argc > 4) {
			fputs(usage, stderr);
			return 2;
		}
		size_t n = argc > 2 ? (size_t)arg_u64("bga-units", "N", argv[2], 1, 1u << 20) : 256;
		ins(n, argc > 3 ? arg_int("bga-units", "SHAPE", argv[3], 0, 2) : -1);
		return 0;
	}
	if ((strcmp(what, "failfast") && strcmp(what, "big") && strcmp(what, "vec") && strcmp(what, "all")) ||
	    argc > 3) {
		fprintf(stderr, "bga-units: unknown benchmark '%s'\n%s", what, usage);
		return 2;
	}
	int reps = argc > 2 ? arg_int("bga-units", "REPS", argv[2], 1, 100000) : 0;
	if (!strcmp(what, "failfast") || !strcmp(what, "all"))
		failfast(reps ? reps : 1001);
	if (!strcmp(what, "big") || !strcmp(what, "all"))
		big(reps ? reps : 21);
	if (!strcmp(what, "vec") || !strcmp(what, "all"))
		vec(reps ? reps : 41);
	return 0;
}
