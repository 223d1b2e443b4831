/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_TEST_RNG_H
#define BGA_TEST_RNG_H

/*
 * The tests' one pseudo-random generator: xorshift64* (Vigna), with a
 * fixed seed in every test, so that every failure replays.  The state
 * must not be 0.  struct rng for tests that keep several streams;
 * rng_next for a bare uint64_t state, the same generator.
 */

#include <stdint.h>

struct rng {
	uint64_t s;
};

static inline uint64_t rnd(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545F4914F6CDD1DULL;
}

/* The same generator over a bare state. */
static inline uint64_t rng_next(uint64_t *s)
{
	struct rng r = {*s};
	uint64_t v = rnd(&r);
	*s = r.s;
	return v;
}

/* Uniform enough in [0, n); n > 0. */
static inline uint64_t below(struct rng *r, uint64_t n)
{
	return rnd(r) % n;
}

/* Uniform enough in [lo, hi]. */
static inline int64_t between(struct rng *r, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rnd(r) % (uint64_t)(hi - lo + 1));
}

#endif
