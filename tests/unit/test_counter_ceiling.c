/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The per-CPU counter's ceiling (counter_impl.h): the bound on the total
 * that bga_counter_add_limited's fast path reads instead of the total.
 * That it bounds the total at every store of either (through the
 * BGA_DEBUG hooks, under the fold lock), that a fold that shrinks the
 * total never writes it and a fill writes it a logarithmic number of
 * times, and that limited adds from threads still stop exactly at the
 * limit with it in play.  test_counter.c has the counter's other promises.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <criterion/criterion.h>

#include <bgalloc/counter.h>

#include "counter_impl.h"
#include "pin.h"
#include "rng.h"
#include "threads.h"

#define NTHREADS 8

/* Both per-CPU paths: rseq where this machine has it (else CAS again). */
static const enum bga_counter_mode paths[] = {BGA_COUNTER_PERCPU, BGA_COUNTER_PERCPU_CAS};

static struct bga_counter *mk(int64_t initial, int32_t batch, enum bga_counter_mode mode)
{
	struct bga_counter *c = NULL;

	cr_assert_eq(bga_counter_create(&c, initial, batch, mode), 0);
	return c;
}

static int64_t ceiling_of(const struct bga_counter *c)
{
	return __atomic_load_n(&c->ceiling, __ATOMIC_RELAXED);
}

static int64_t total_of(const struct bga_counter *c)
{
	return __atomic_load_n(&c->total, __ATOMIC_RELAXED);
}

#ifdef BGA_DEBUG
/* What the hooks saw; they run under the fold lock, from any thread, so
 * they count and the test asserts afterwards. */
static _Atomic long total_stores, ceiling_stores, ceiling_lowerings, violations;

/* Right before a store of the total: the ceiling already bounds the
 * total that stands and the one about to be stored. */
static void check_total_store(struct bga_counter *c, int64_t v)
{
	atomic_fetch_add(&total_stores, 1);
	if (__atomic_load_n(&c->limited, __ATOMIC_RELAXED) && (ceiling_of(c) < v || ceiling_of(c) < total_of(c)))
		atomic_fetch_add(&violations, 1);
}

/* Right before a store of the ceiling: the old one bounds the total (once
 * limited), and so does the new one. */
static void check_ceiling_store(struct bga_counter *c, int64_t u)
{
	atomic_fetch_add(&ceiling_stores, 1);
	if (u < ceiling_of(c))
		atomic_fetch_add(&ceiling_lowerings, 1);
	if (u < total_of(c) || (__atomic_load_n(&c->limited, __ATOMIC_RELAXED) && ceiling_of(c) < total_of(c)))
		atomic_fetch_add(&violations, 1);
}

static void hooks_on(void)
{
	total_stores = ceiling_stores = ceiling_lowerings = violations = 0;
	bga__counter_total_hook = check_total_store;
	bga__counter_ceiling_hook = check_ceiling_store;
}

static void hooks_off(void)
{
	bga__counter_total_hook = NULL;
	bga__counter_ceiling_hook = NULL;
}

/*
 * One thread, every kind of store of the total: checked folds (limited
 * adds that overflow their slot), checked flushes (near the limit, and
 * deltas past the batch), flushes of plain positive adds, folds of
 * negative overflow, and large frees that leave the ceiling far above the
 * total until a limited add lowers it.  T <= U at every store and after
 * every call, and single-threaded every limited add is decided exactly.
 */
Test(counter_ceiling, bounds_the_total_at_every_store)
{
	for (unsigned p = 0; p < 2; p++) {
		struct bga_counter *c = mk(50, 4, paths[p]);
		struct rng r = {0xce11ULL + p};
		const int64_t limit = 3000;
		int64_t v = 50;
		long refused = 0;

		hooks_on();
		for (int i = 0; i < 40000; i++) {
			int64_t k = between(&r, 0, 99), d;

			if (k < 55) {
				d = k < 45 ? between(&r, 1, 6) : between(&r, 5, 40);
				int rc = bga_counter_add_limited(c, d, limit);
				cr_assert_eq(rc == 0, v + d <= limit, "path %u step %d: %lld + %lld under %lld: %d", p, i,
					     (long long)v, (long long)d, (long long)limit, rc);
				if (rc == 0)
					v += d;
				else
					refused++;
			} else if (k < 65) {
				d = between(&r, 1, 3);
				bga_counter_add(c, d);
				v += d;
			} else if (k < 90 || v > 0) {
				/* near the limit, now and then a large free */
				d = k >= 98 && v > limit - 100 ? -between(&r, 300, 1500) : -between(&r, 1, 8);
				bga_counter_add(c, d);
				v += d;
			}
			if (c->limited)
				cr_assert_leq(total_of(c), ceiling_of(c), "path %u step %d", p, i);
		}
		hooks_off();
		cr_expect_eq(bga_counter_sum(c), v);
		cr_expect_eq(violations, 0, "path %u: the total above the ceiling at %ld stores", p, (long)violations);
		cr_expect_gt(total_stores, 1000, "path %u: only %ld stores of the total", p, (long)total_stores);
		cr_expect_gt(refused, 100, "path %u: the limit was reached only %ld times", p, refused);
		cr_expect_gt(ceiling_lowerings, 0, "path %u: the ceiling was never lowered", p);
		bga_counter_destroy(c);
	}
}

/*
 * A fold that shrinks the total (frees: plain or limited negative adds)
 * leaves the ceiling's line alone; a fill far from the limit writes it
 * about log2(room / batch) times, not once a fold.
 */
Test(counter_ceiling, written_by_a_fill_rarely_and_never_by_frees)
{
	for (unsigned p = 0; p < 2; p++) {
		struct bga_counter *c = mk(1 << 20, 4, paths[p]);
		struct rng r = {0xf7eeULL + p};
		const int64_t limit = 1 << 22;
		int64_t u;

		cr_assert_eq(bga_counter_add_limited(c, 1, limit), 0);
		u = ceiling_of(c);
		hooks_on();
		for (int i = 0; i < 20000; i++) {
			int64_t d = -between(&r, 1, 3);

			if (i & 1)
				bga_counter_add(c, d);
			else
				cr_assert_eq(bga_counter_add_limited(c, d, limit), 0);
		}
		cr_expect_gt(total_stores, 1000, "path %u: only %ld folds", p, (long)total_stores);
		cr_expect_eq(ceiling_stores, 0, "path %u: frees wrote the ceiling %ld times", p, (long)ceiling_stores);
		cr_expect_eq(ceiling_of(c), u);

		/* Now fill to the limit from about 2^20: hundreds of thousands of folds. */
		total_stores = ceiling_stores = 0;
		while (bga_counter_add_limited(c, 3, limit) == 0)
			;
		while (bga_counter_add_limited(c, 1, limit) == 0)
			;
		hooks_off();
		cr_expect_eq(bga_counter_sum(c), limit, "path %u", p);
		cr_expect_gt(total_stores, 100000, "path %u: only %ld folds", p, (long)total_stores);
		cr_expect_leq(ceiling_stores, 64, "path %u: a fill of 2^22 wrote the ceiling %ld times", p,
			      (long)ceiling_stores);
		cr_expect_eq(violations, 0, "path %u", p);
		bga_counter_destroy(c);
	}
}

/*
 * A limited add that the ceiling stops (a flush of plain adds left it
 * above the stop, and a free took the total back below) lowers it, but
 * never below the total that stands until the fold's store: placed so
 * that halfway from the new total would be one below it (total one under
 * the stop, this CPU's slot at -3, an add of 1).
 */
Test(counter_ceiling, lowered_never_below_the_total)
{
	cpu_set_t old;

	cr_assert_eq(test_pin_one_cpu(&old), 0);
	for (unsigned p = 0; p < 2; p++) {
		struct bga_counter *c = mk(0, 4, paths[p]);
		const int64_t limit = 100000, stop = limit - bga_counter_error_bound(c);

		cr_assert_eq(bga_counter_add_limited(c, 1, limit), 0);
		bga_counter_add(c, stop + 10); /* a flush: the total passes the ceiling */
		bga_counter_add(c, -12);       /* a fold of -12: the total at stop - 1 */
		bga_counter_add(c, -3);        /* this CPU's slot */
		cr_assert_eq(total_of(c), stop - 1, "path %u", p);
		cr_assert_gt(ceiling_of(c), stop, "path %u", p);
		hooks_on();
		cr_assert_eq(bga_counter_add_limited(c, 1, limit), 0);
		hooks_off();
		cr_expect_eq(total_of(c), stop - 3, "path %u: the add folded the slot", p);
		cr_expect_eq(ceiling_stores, 1, "path %u: the ceiling was not lowered", p);
		cr_expect_eq(ceiling_of(c), stop - 1, "path %u: lowered to %lld", p, (long long)ceiling_of(c));
		cr_expect_eq(violations, 0, "path %u", p);
		cr_expect_eq(bga_counter_sum(c), stop - 3);
		bga_counter_destroy(c);
	}
	cr_assert_eq(test_unpin(&old), 0);
}
#endif

/*
 * Threads fill a large limit with limited adds (the ceiling halves its
 * way up many times), give back a share now and then (a free leaves it
 * high: a later limited add lowers it), and, last, each adds 1 until its
 * first -ENOSPC: the value must end at the limit exactly, never above it
 * on the way (a sampler sums meanwhile).
 */
struct fillers {
	struct bga_counter *c;
	int64_t limit;
	_Atomic int64_t net;
	_Atomic long over;
	atomic_bool stop;
	pthread_barrier_t frees_done;
};

static void fill_and_free(void *ctx, int idx)
{
	struct fillers *f = ctx;
	struct rng r = {0x3a5bULL * (uint64_t)(idx + 1)};
	int64_t mine = 0;

	for (int round = 0; round < 4; round++) {
		int64_t d;

		for (;;) {
			d = between(&r, 1, 6);
			if (bga_counter_add_limited(f->c, d, f->limit) != 0)
				break;
			mine += d;
		}
		if (bga_counter_sum(f->c) > f->limit)
			atomic_fetch_add(&f->over, 1);
		d = between(&r, 0, mine);
		bga_counter_add(f->c, -d);
		mine -= d;
	}
	/* Nobody frees past here: the value only grows, so a refusal of 1
	 * means it stood at the limit. */
	pthread_barrier_wait(&f->frees_done);
	while (bga_counter_add_limited(f->c, 1, f->limit) == 0)
		mine++;
	atomic_fetch_add(&f->net, mine);
}

static void *over_sampler(void *arg)
{
	struct fillers *f = arg;

	while (!atomic_load(&f->stop))
		if (bga_counter_sum(f->c) > f->limit)
			atomic_fetch_add(&f->over, 1);
	return NULL;
}

Test(counter_ceiling, threads_fill_to_the_limit_exactly)
{
	for (unsigned p = 0; p < 2; p++) {
		struct fillers f = {.limit = 200003};
		pthread_t smp;

		f.c = mk(11, 0, paths[p]);
		cr_assert_eq(pthread_barrier_init(&f.frees_done, NULL, NTHREADS), 0);
#ifdef BGA_DEBUG
		hooks_on();
#endif
		cr_assert_eq(pthread_create(&smp, NULL, over_sampler, &f), 0);
		cr_assert_eq(test_threads_run(NTHREADS, fill_and_free, &f), 0);
		atomic_store(&f.stop, true);
		pthread_join(smp, NULL);
#ifdef BGA_DEBUG
		hooks_off();
		cr_expect_eq(violations, 0, "path %u", p);
		cr_expect_gt(ceiling_stores, 2, "path %u: the ceiling was not in play", p);
#endif
		cr_expect_eq(f.over, 0, "path %u: the value above the limit %ld times", p, (long)f.over);
		cr_expect_eq(bga_counter_sum(f.c), f.limit, "path %u", p);
		cr_expect_eq(11 + f.net, f.limit, "path %u", p);
		cr_expect_leq(total_of(f.c), ceiling_of(f.c));
		pthread_barrier_destroy(&f.frees_done);
		bga_counter_destroy(f.c);
	}
}
