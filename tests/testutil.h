/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_TESTUTIL_H
#define BGA_TESTUTIL_H

/* Small helpers shared by the volume tests and stress programs. */

#include <stdint.h>

/* xorshift64: a fixed-seed generator, so every failure replays.  The
 * state must not be 0. */
static inline uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

#ifdef CRITERION_H_
#include <bgalloc.h>

/* Assert that bga_check() finds the volume clean, naming what it found. */
static inline void assert_clean(struct bga_volume *vol)
{
	struct bga_check_report r;
	int rc = bga_check(vol, &r);
	cr_assert_eq(rc, 0, "bga_check: %s", r.message);
}
#endif

#endif
