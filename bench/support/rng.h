/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_BENCH_RNG_H
#define BGA_BENCH_RNG_H

/*
 * What the benchmark drivers share: a per-thread random stream, a clock
 * and a median.  xorshift64* costs a few cycles, next to allocator calls of
 * 10-1000 ns, and fixed seeds make every run repeatable.
 */

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

struct rng {
	uint64_t s;
};

/* Seed from two numbers (e.g. run and thread); the splitmix64 finaliser
 * gives unrelated streams to neighbouring pairs. */
static inline void rng_seed(struct rng *r, uint64_t a, uint64_t b)
{
	uint64_t z = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	r->s = z ? z : 1;
}

static inline uint64_t rng_next(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dull;
}

/* Uniform in [0, n) without a division (Lemire's multiply-shift). */
static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

/* CLOCK_MONOTONIC in seconds. */
static inline double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline int rng_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of v[0..n) (n >= 1); sorts v. */
static inline double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), rng_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
