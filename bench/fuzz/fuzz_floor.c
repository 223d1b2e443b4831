/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The floor of a fuzz input: what the library alone costs in the
 * fuzzers' build (ASan, UBSan, coverage, BGA_DEBUG) for the shapes a
 * fuzz_ops input has, with no model, no checking and no libFuzzer:
 * create and destroy a small volume, N alloc/free calls on it, and a
 * bga_store and bga_load round trip.  CPU time (not wall: the machine is
 * shared) per iteration, best of three.  Built by scripts/fuzz.sh build
 * (build/fuzz-libfuzzer/fuzz_floor); `scripts/fuzz.sh floor` runs it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <bgalloc.h>

#include "memio.h"

static double cpu_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One input's worth: a 2048-block volume of 256-block groups, `ops`
 * alternating allocations (goals spread over it) and frees, `stores`
 * round trips through memory. */
static void one(unsigned ops, unsigned stores)
{
	struct bga_config c;
	struct bga_volume *v, *back;
	struct bga_extent e[64];
	unsigned j, k = 0, s;

	bga_config_init(&c, 2048);
	c.blocks_per_group = 256;
	if (bga_create(&c, &v))
		abort();
	for (j = 0; j < ops; j++) {
		struct bga_request r = { .goal = (j * 37) % 2048, .min_len = 1, .max_len = 8 };

		if (k < 64 && bga_alloc(v, &r, &e[k]) == 0)
			k++;
		else if (k && bga_free(v, e[k - 1].start, e[k - 1].len) == 0)
			k--;
	}
	for (s = 0; s < stores; s++) {
		struct memio m;
		struct bga_io io;

		memio_init(&m, &io);
		if (bga_store(v, &io) || bga_load(&io, NULL, &back))
			abort();
		bga_destroy(back);
		memio_free(&m);
	}
	bga_destroy(v);
}

int main(void)
{
	static const unsigned shape[][3] = { /* iterations, calls, stores */
		{ 2000, 0, 0 }, { 2000, 1, 0 }, { 1000, 64, 0 }, { 500, 256, 0 }, { 500, 0, 1 }, { 500, 64, 1 },
	};

	printf("shape (fuzzers' build, CPU per iteration, best of 3)\n");
	for (size_t i = 0; i < sizeof(shape) / sizeof(shape[0]); i++) {
		double best = 1e9;

		for (int rep = 0; rep < 3; rep++) {
			double t0 = cpu_now();

			for (unsigned n = 0; n < shape[i][0]; n++)
				one(shape[i][1], shape[i][2]);
			double us = (cpu_now() - t0) / shape[i][0] * 1e6;
			best = us < best ? us : best;
		}
		printf("create + %3u calls + %u store/load + destroy: %7.1f us\n", shape[i][1], shape[i][2], best);
	}
	return 0;
}
