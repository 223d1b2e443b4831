/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Two builds of the library in one process (the `bga-ab` executable):
 * single-thread churn through each, repetitions interleaved, so that a
 * change of the machine's speed between two processes (on the development
 * VM a lone churn moves between about 29M and 39M operations per second
 * from one process to the next, more than most changes it is asked to
 * judge) lands on both builds alike.
 *
 *   bga-ab A.so B.so [reps] [ops]
 *
 * Each shared object (a libbgalloc.so of any commit whose public header
 * has bgalloc.h's request, extent and config layout) is loaded with
 * dlopen(RTLD_LOCAL | RTLD_DEEPBIND), so each resolves its own symbols and
 * neither sees the other's.  The churn is bga-share's (a 2^20-block
 * volume, a 4096-block working set, free one block and allocate one at a
 * random goal), through function pointers, on CPU 0.  Prints the median
 * ns per operation of each, B's throughput over A's from those medians,
 * and the range of the per-repetition ratios (each repetition runs A and
 * B back to back, in alternating order).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc.h>

#include "rng.h"
#include "xfer.h"

#define NBLOCKS (UINT64_C(1) << 20)
#define WSET 4096

struct lib {
	const char *path;
	void (*config_init)(struct bga_config *, uint64_t);
	int (*create)(const struct bga_config *, struct bga_volume **);
	void (*destroy)(struct bga_volume *);
	int (*alloc)(struct bga_volume *, const struct bga_request *, struct bga_extent *);
	int (*free)(struct bga_volume *, uint64_t, uint64_t);
};

static int lib_open(struct lib *l, const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
	if (h == NULL) {
		fprintf(stderr, "bga-ab: %s\n", dlerror());
		return -1;
	}
	l->path = path;
	*(void **)&l->config_init = dlsym(h, "bga_config_init");
	*(void **)&l->create = dlsym(h, "bga_create");
	*(void **)&l->destroy = dlsym(h, "bga_destroy");
	*(void **)&l->alloc = dlsym(h, "bga_alloc");
	*(void **)&l->free = dlsym(h, "bga_free");
	if (!l->config_init || !l->create || !l->destroy || !l->alloc || !l->free) {
		fprintf(stderr, "bga-ab: %s lacks the volume API\n", path);
		return -1;
	}
	return 0;
}

/* ns per churn operation, or a negative errno. */
static double churn(const struct lib *l, uint64_t ops)
{
	static uint64_t slot[WSET];
	struct bga_config cfg;
	struct bga_volume *vol;
	struct bga_extent e;
	struct rng r;
	int rc;

	l->config_init(&cfg, NBLOCKS);
	if ((rc = l->create(&cfg, &vol)) != 0)
		return rc;
	rng_seed(&r, 77, 0);
	for (uint64_t i = 0; i < WSET && rc == 0; i++) {
		struct bga_request q = {.goal = rng_below(&r, NBLOCKS), .min_len = 1, .max_len = 1};
		rc = l->alloc(vol, &q, &e);
		slot[i] = e.start;
	}
	double t0 = now_s();
	for (uint64_t i = 0; i < ops && rc == 0; i++) {
		uint64_t k = rng_below(&r, WSET);
		struct bga_request q = {.goal = rng_below(&r, NBLOCKS), .min_len = 1, .max_len = 1};
		rc = l->free(vol, slot[k], 1);
		if (rc == 0)
			rc = l->alloc(vol, &q, &e);
		slot[k] = e.start;
	}
	double ns = (now_s() - t0) * 1e9 / (double)ops;
	l->destroy(vol);
	return rc ? rc : ns;
}

int main(int argc, char **argv)
{
	struct lib lib[2];
	if (argc < 3 || lib_open(&lib[0], argv[1]) || lib_open(&lib[1], argv[2])) {
		fprintf(stderr, "usage: bga-ab A.so B.so [reps 1..99] [ops]\n");
		return 2;
	}
	int reps = argc > 3 ? atoi(argv[3]) : 21;
	uint64_t ops = argc > 4 ? strtoull(argv[4], NULL, 10) : 2000000;
	if (reps < 1 || reps > 99 || ops == 0)
		return 2;
	double ns[2][99], ratio[99];
	pin_to_cpu(0);
	for (int k = 0; k < reps; k++) {
		for (int j = 0; j < 2; j++) {
			int x = (j + k) % 2; /* alternate which build runs first */
			ns[x][k] = churn(&lib[x], ops);
			if (ns[x][k] < 0) {
				fprintf(stderr, "%s: %s\n", lib[x].path, strerror((int)-ns[x][k]));
				return 1;
			}
		}
		ratio[k] = ns[0][k] / ns[1][k];
	}
	double a = bench_median(ns[0], reps), b = bench_median(ns[1], reps);
	qsort(ratio, (size_t)reps, sizeof(double), rng_cmp_double);
	printf("single-thread churn, %d reps of %llu ops, CPU 0\n", reps, (unsigned long long)ops);
	printf("A %-40s %8.2f ns per op\n", lib[0].path, a);
	printf("B %-40s %8.2f ns per op\n", lib[1].path, b);
	printf("B's throughput over A's: %.3fx (medians); per repetition %.3f..%.3f, median %.3f\n", a / b, ratio[0],
	       ratio[reps - 1], bench_median(ratio, reps));
	return 0;
}
