/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_TEST_COUNTER_TRACK_H
#define BGA_TEST_COUNTER_TRACK_H

/*
 * What a counter must read while threads add to it: each adder announces
 * an add in *_intent before it starts and counts it in *_done after it
 * returns (magnitudes, monotone).  A sampler that sums the *_done figures
 * before it reads the counter and the *_intent figures after has the
 * range [lo, hi] every linearisable value lies in.
 */

#include <stdatomic.h>
#include <stdint.h>

#include <bgalloc/counter.h>

#include "rng.h"

struct track {
	_Atomic int64_t pos_intent, pos_done, neg_intent, neg_done;
} __attribute__((aligned(128)));

/* Add d to c, announced and counted in t. */
static inline void track_add(struct track *t, struct bga_counter *c, int64_t d)
{
	if (d >= 0) {
		atomic_fetch_add(&t->pos_intent, d);
		bga_counter_add(c, d);
		atomic_fetch_add(&t->pos_done, d);
	} else {
		atomic_fetch_add(&t->neg_intent, -d);
		bga_counter_add(c, d);
		atomic_fetch_add(&t->neg_done, -d);
	}
}

/* Before the read: the adds surely in (lo and hi start at the initial value). */
static inline void track_before(const struct track *tr, int n, int64_t *lo, int64_t *hi)
{
	for (int i = 0; i < n; i++) {
		*lo += atomic_load(&tr[i].pos_done);
		*hi -= atomic_load(&tr[i].neg_done);
	}
}

/* After the read: the adds that may be in. */
static inline void track_after(const struct track *tr, int n, int64_t *lo, int64_t *hi)
{
	atomic_thread_fence(memory_order_seq_cst);
	for (int i = 0; i < n; i++) {
		*lo -= atomic_load(&tr[i].neg_intent);
		*hi += atomic_load(&tr[i].pos_intent);
	}
}

/* One step of a thread that takes random amounts (1 .. maxd) of c up to
 * limit and now and then gives some of what it holds (*mine) back, by
 * add_limited with a negative delta on odd steps, by a plain add on even
 * ones, so that the value churns at the limit: 0, or -1 if a negative
 * add_limited failed (it never may). */
static inline int limited_step(struct bga_counter *c, int64_t limit, int64_t maxd, struct rng *r, long step,
			       int64_t *mine, _Atomic int64_t *ok, _Atomic int64_t *enospc)
{
	int64_t d = between(r, 1, maxd);
	if (bga_counter_add_limited(c, d, limit) == 0) {
		*mine += d;
		atomic_fetch_add(ok, 1);
	} else {
		atomic_fetch_add(enospc, 1);
	}
	if (*mine > 0 && between(r, 0, 7) == 0) {
		int64_t back = between(r, 1, *mine);
		*mine -= back;
		if (!(step & 1)) {
			bga_counter_add(c, -back);
		} else if (bga_counter_add_limited(c, -back, limit) != 0) {
			return -1;
		}
	}
	return 0;
}

#endif
