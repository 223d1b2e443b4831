/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Lock table: mutual exclusion for every kind, trylock semantics, several
 * slots held at once, statistics, bad arguments.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include "threads.h"
#include <criterion/parameterized.h>

#include <bgalloc/locktab.h>

#include "locktab_impl.h"

static const enum bga_lock_kind all_kinds[] = {
	BGA_LOCK_FAS, BGA_LOCK_TICKET, BGA_LOCK_MCS, BGA_LOCK_MUTEX, BGA_LOCK_DEFAULT,
};
#define NKINDS (sizeof(all_kinds) / sizeof(all_kinds[0]))

static struct bga_locktab *mk(uint32_t nslots, enum bga_lock_kind kind)
{
	struct bga_locktab *t = NULL;

	cr_assert_eq(bga_locktab_create(&t, nslots, kind), 0, "create(%u, %s)", nslots,
		     bga_lock_kind_name(kind));
	cr_assert_not_null(t);
	return t;
}

/* ---- mutual exclusion ---------------------------------------------------- */

/*
 * More threads than the 2 vCPUs, so holders get preempted inside the
 * critical section.  Ticket and MCS hand the lock to one particular waiter,
 * which is often descheduled here (a hand-off can cost a time slice), so
 * they run fewer threads and iterations to keep the suite short.
 */
#define MX_THREADS 6
#define MX_ITERS 3000
#define MX_THREADS_FIFO 3
#define MX_ITERS_FIFO 300
#define MX_SLOTS 4

struct mx_ctx {
	struct bga_locktab *t;
	struct {
		uint64_t count; /* plain increments: only correct under the lock */
		int holder;     /* must be 0 on entry */
		int violations;
	} __attribute__((aligned(128))) slot[MX_SLOTS];
	int iters;
};

static void mx_worker(void *ctx, int id)
{
	struct mx_ctx *c = ctx;

	for (int i = 0; i < c->iters; i++) {
		/* Keys beyond nslots exercise the hashing, too. */
		uint64_t key = (uint64_t)(i + (id + 1)) * 5 % (MX_SLOTS * 3);
		unsigned s = bga_locktab_slot(c->t, key);

		if ((i & 7) == 0) {
			while (!bga_locktab_trylock(c->t, key))
				sched_yield();
		} else {
			bga_locktab_lock(c->t, key);
		}
		if (__atomic_load_n(&c->slot[s].holder, __ATOMIC_RELAXED) != 0)
			c->slot[s].violations++;
		__atomic_store_n(&c->slot[s].holder, (id + 1), __ATOMIC_RELAXED);
		uint64_t v = c->slot[s].count;
		if ((i & 63) == 0)
			sched_yield(); /* invite a preemption while holding */
		c->slot[s].count = v + 1;
		if (__atomic_load_n(&c->slot[s].holder, __ATOMIC_RELAXED) != (id + 1))
			c->slot[s].violations++;
		__atomic_store_n(&c->slot[s].holder, 0, __ATOMIC_RELAXED);
		bga_locktab_unlock(c->t, key);
	}
}

ParameterizedTestParameters(locktab, mutual_exclusion)
{
	return cr_make_param_array(enum bga_lock_kind, all_kinds, NKINDS);
}

ParameterizedTest(enum bga_lock_kind *kind, locktab, mutual_exclusion, .timeout = 60)
{
	static struct mx_ctx c;
	struct bga_lock_stats st;
	uint64_t total = 0, acq = 0;
	bool fifo = *kind == BGA_LOCK_TICKET || *kind == BGA_LOCK_MCS;
	int nthreads = fifo ? MX_THREADS_FIFO : MX_THREADS;

	memset(&c, 0, sizeof(c));
	c.t = mk(MX_SLOTS, *kind);
	c.iters = fifo ? MX_ITERS_FIFO : MX_ITERS;
	cr_assert_eq(test_threads_run(nthreads, mx_worker, &c), 0);
	for (int s = 0; s < MX_SLOTS; s++) {
		cr_expect_eq(c.slot[s].violations, 0, "slot %d: two holders at once", s);
		total += c.slot[s].count;
		cr_assert_eq(bga_locktab_stats(c.t, (uint32_t)s, &st), 0);
		cr_expect_eq(st.acquisitions, c.slot[s].count, "slot %d acquisitions", s);
		acq += st.acquisitions;
	}
	cr_expect_eq(total, (uint64_t)nthreads * (uint64_t)c.iters, "lost increments (%s)",
		     bga_lock_kind_name(*kind));
	cr_expect_eq(acq, total);
	bga_locktab_destroy(c.t);
}

/* ---- trylock ------------------------------------------------------------- */

struct try_arg {
	struct bga_locktab *t;
	uint64_t key;
	bool got;
};

static void *try_other(void *p)
{
	struct try_arg *a = p;

	a->got = bga_locktab_trylock(a->t, a->key);
	if (a->got)
		bga_locktab_unlock(a->t, a->key);
	return NULL;
}

static bool try_from_other_thread(struct bga_locktab *t, uint64_t key)
{
	struct try_arg a = {t, key, false};
	pthread_t th;

	cr_assert_eq(pthread_create(&th, NULL, try_other, &a), 0);
	pthread_join(th, NULL);
	return a.got;
}

ParameterizedTestParameters(locktab, trylock)
{
	return cr_make_param_array(enum bga_lock_kind, all_kinds, NKINDS);
}

ParameterizedTest(enum bga_lock_kind *kind, locktab, trylock)
{
	struct bga_locktab *t = mk(8, *kind);
	struct bga_lock_stats st;

	cr_assert(try_from_other_thread(t, 3), "free slot: trylock succeeds");
	bga_locktab_lock(t, 3);
	cr_expect_not(try_from_other_thread(t, 3), "held slot: trylock fails");
	cr_expect_not(try_from_other_thread(t, 3 + 8), "key + nslots shares the slot");
	cr_expect_not(try_from_other_thread(t, 3 + 8 * 1000), "key + k*nslots shares the slot");
	cr_expect(try_from_other_thread(t, 4), "other slots are independent");
	cr_expect(try_from_other_thread(t, 2 + 8), "other slots are independent");
	bga_locktab_unlock(t, 3);
	cr_expect(try_from_other_thread(t, 11), "released: trylock succeeds");

	cr_assert_eq(bga_locktab_stats(t, 3, &st), 0);
	/* other-thread success, our lock, released success */
	cr_expect_eq(st.acquisitions, 3);
	cr_expect_eq(st.try_failed, 3);
	cr_expect_eq(st.contended, 0);
	bga_locktab_destroy(t);
}

/* ---- several slots at once ---------------------------------------------- */

ParameterizedTestParameters(locktab, hold_several)
{
	return cr_make_param_array(enum bga_lock_kind, all_kinds, NKINDS);
}

/*
 * The allocator locks a range of groups in order and releases them in any
 * order.  Hold 128 slots (more than the per-thread MCS node pool), with
 * trylock and lock mixed, release in a scrambled order, and check every
 * slot is really held and then really free.
 */
ParameterizedTest(enum bga_lock_kind *kind, locktab, hold_several)
{
	enum { N = 128 };
	struct bga_locktab *t = mk(N, *kind);
	uint64_t order[N];

	for (int round = 0; round < 3; round++) {
		for (uint64_t k = 0; k < N; k++) {
			if (k & 1)
				bga_locktab_lock(t, k + (uint64_t)round * N);
			else
				cr_assert(bga_locktab_trylock(t, k), "free slot %lu", (unsigned long)k);
		}
		for (uint64_t k = 0; k < N; k += 9)
			cr_expect_not(try_from_other_thread(t, k), "slot %lu held", (unsigned long)k);
		for (uint64_t i = 0; i < N; i++)
			order[i] = (i * 37 + (uint64_t)round) % N; /* 37 is odd: a permutation */
		for (uint64_t i = 0; i < N; i++)
			bga_locktab_unlock(t, order[i] + N);
		for (uint64_t k = 0; k < N; k += 9)
			cr_expect(try_from_other_thread(t, k), "slot %lu free", (unsigned long)k);
	}
	bga_locktab_destroy(t);
}

/* ---- statistics ----------------------------------------------------------- */

ParameterizedTestParameters(locktab, stats_exact)
{
	return cr_make_param_array(enum bga_lock_kind, all_kinds, NKINDS);
}

ParameterizedTest(enum bga_lock_kind *kind, locktab, stats_exact)
{
	struct bga_locktab *t = mk(4, *kind);
	struct bga_lock_stats st, tot;

	for (int i = 0; i < 7; i++) {
		bga_locktab_lock(t, 1);
		bga_locktab_unlock(t, 1);
	}
	for (int i = 0; i < 5; i++) {
		cr_assert(bga_locktab_trylock(t, 5));
		bga_locktab_unlock(t, 5);
	}
	bga_locktab_lock(t, 2);
	for (int i = 0; i < 4; i++)
		cr_expect_not(try_from_other_thread(t, 2));
	bga_locktab_unlock(t, 2);

	cr_assert_eq(bga_locktab_stats(t, 1, &st), 0);
	cr_expect_eq(st.acquisitions, 12);
	cr_expect_eq(st.contended, 0);
	cr_expect_eq(st.wait_ns, 0, "no wait measured without contention");
	cr_expect_eq(st.try_failed, 0);
	cr_assert_eq(bga_locktab_stats(t, 2, &st), 0);
	cr_expect_eq(st.acquisitions, 1);
	cr_expect_eq(st.try_failed, 4);
	cr_assert_eq(bga_locktab_stats(t, 0, &st), 0);
	cr_expect_eq(st.acquisitions, 0);

	cr_assert_eq(bga_locktab_stats_total(t, &tot), 0);
	cr_expect_eq(tot.acquisitions, 13);
	cr_expect_eq(tot.try_failed, 4);

	bga_locktab_stats_reset(t);
	cr_assert_eq(bga_locktab_stats_total(t, &tot), 0);
	cr_expect_eq(tot.acquisitions + tot.contended + tot.wait_ns + tot.try_failed, 0);
	bga_locktab_destroy(t);
}

struct waiter_arg {
	struct bga_locktab *t;
	int started;
};

static void *waiter(void *p)
{
	struct waiter_arg *a = p;

	__atomic_store_n(&a->started, 1, __ATOMIC_RELEASE);
	bga_locktab_lock(a->t, 0);
	bga_locktab_unlock(a->t, 0);
	return NULL;
}

ParameterizedTestParameters(locktab, stats_contended)
{
	return cr_make_param_array(enum bga_lock_kind, all_kinds, NKINDS);
}

/*
 * Slot 0's lock word(s), read a 32-bit word at a time.  Ticket, MCS and
 * mutex record an arriving waiter there (a ticket taken, a queue tail, a
 * futex state of 2), so a change proves the waiter is inside lock() and
 * will find the lock held; fas does not (a waiter exchanges 1 for 1).
 */
#define LOCK_WORDS (sizeof(((struct locktab_slot *)0)->u) / sizeof(uint32_t))
static void lock_words(struct bga_locktab *t, uint32_t *w)
{
	const uint32_t *p = (const uint32_t *)(const void *)&t->slots[0].u;

	for (size_t i = 0; i < LOCK_WORDS; i++)
		w[i] = __atomic_load_n(&p[i], __ATOMIC_ACQUIRE);
}

/*
 * Hold the lock while another thread calls lock(): it must count as
 * contended.  No sleep decides it: with a kind that records waiters in its
 * lock word, the holder waits until the word shows the waiter, so every
 * round is contended; with fas the holder only yields until the waiter has
 * started, and rounds repeat (the counts checked exactly in each) until one
 * was contended, which a lock that never counts contention cannot reach.
 */
ParameterizedTest(enum bga_lock_kind *kind, locktab, stats_contended)
{
	struct bga_locktab *t = mk(2, *kind);
	bool records_waiters = bga_locktab_kind(t) != BGA_LOCK_FAS;
	uint64_t rounds, contended = 0;

	for (rounds = 0; rounds < 2000 && contended == 0; rounds++) {
		struct waiter_arg a = {t, 0};
		struct bga_lock_stats st;
		uint32_t before[LOCK_WORDS], now[LOCK_WORDS];
		pthread_t th;

		bga_locktab_stats_reset(t);
		bga_locktab_lock(t, 0);
		lock_words(t, before);
		cr_assert_eq(pthread_create(&th, NULL, waiter, &a), 0);
		while (!__atomic_load_n(&a.started, __ATOMIC_ACQUIRE))
			sched_yield();
		if (records_waiters) {
			do {
				sched_yield();
				lock_words(t, now);
			} while (memcmp(before, now, sizeof(now)) == 0);
		} else {
			for (int i = 0; i < 4; i++)
				sched_yield();
		}
		bga_locktab_unlock(t, 0);
		pthread_join(th, NULL);

		cr_assert_eq(bga_locktab_stats(t, 0, &st), 0);
		cr_assert_eq(st.acquisitions, 2);
		cr_assert_leq(st.contended, 1);
		cr_assert_eq(st.try_failed, 0, "lock() failures are not trylock failures");
		if (st.contended)
			cr_assert_gt(st.wait_ns, 0, "a contended acquisition waited");
		if (records_waiters)
			cr_assert_eq(st.contended, 1, "%s: the waiter was seen queued, yet not counted contended",
				     bga_lock_kind_name(*kind));
		contended += st.contended;
	}
	cr_expect_eq(contended, 1, "%s: no contended acquisition counted in %llu rounds",
		     bga_lock_kind_name(*kind), (unsigned long long)rounds);
	bga_locktab_destroy(t);
}

/* ---- sizing, names, bad arguments ---------------------------------------- */

Test(locktab, auto_size_and_kind)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	unsigned c = n < 1 ? 1u : n > 32 ? 32u : (unsigned)n;
	unsigned lg = 0;
	struct bga_locktab *t = mk(0, BGA_LOCK_DEFAULT);

	while ((2u << lg) <= c)
		lg++;
	cr_expect_eq(bga_locktab_nslots(t), 4u << lg);
	cr_expect_neq(bga_locktab_kind(t), BGA_LOCK_DEFAULT, "default resolves to a real kind");
	for (uint64_t k = 0; k < 1000; k += 7)
		cr_expect_eq(bga_locktab_slot(t, k), (uint32_t)(k & (bga_locktab_nslots(t) - 1)));
	bga_locktab_destroy(t);

	t = mk(1, BGA_LOCK_MCS);
	cr_expect_eq(bga_locktab_nslots(t), 1);
	cr_expect_eq(bga_locktab_kind(t), BGA_LOCK_MCS);
	cr_expect_eq(bga_locktab_slot(t, 12345), 0);
	bga_locktab_destroy(t);
	bga_locktab_destroy(NULL);

	cr_expect_str_eq(bga_lock_kind_name(BGA_LOCK_FAS), "fas");
	cr_expect_str_eq(bga_lock_kind_name(BGA_LOCK_TICKET), "ticket");
	cr_expect_str_eq(bga_lock_kind_name(BGA_LOCK_MCS), "mcs");
	cr_expect_str_eq(bga_lock_kind_name(BGA_LOCK_MUTEX), "mutex");
}

Test(locktab, bad_args)
{
	struct bga_locktab *sentinel = (struct bga_locktab *)(uintptr_t)0x1;
	struct bga_locktab *t = sentinel;
	struct bga_lock_stats st;

	cr_expect_eq(bga_locktab_create(NULL, 8, BGA_LOCK_FAS), -EINVAL);
	cr_expect_eq(bga_locktab_create(&t, 3, BGA_LOCK_FAS), -EINVAL);
	cr_expect_eq(bga_locktab_create(&t, 12, BGA_LOCK_FAS), -EINVAL);
	cr_expect_eq(bga_locktab_create(&t, 1u << 21, BGA_LOCK_FAS), -EINVAL);
	cr_expect_eq(bga_locktab_create(&t, 0x80000000u, BGA_LOCK_FAS), -EINVAL);
	cr_expect_eq(bga_locktab_create(&t, 8, (enum bga_lock_kind)99), -EINVAL);
	cr_expect_eq(bga_locktab_create(&t, 8, (enum bga_lock_kind)-1), -EINVAL);
	cr_expect_eq(t, sentinel, "*out untouched on error");
	cr_expect_str_eq(bga_lock_kind_name(BGA_LOCK_DEFAULT), "default");
	cr_expect_str_eq(bga_lock_kind_name((enum bga_lock_kind)99), "unknown");

	t = mk(1u << 20, BGA_LOCK_FAS); /* the largest allowed */
	cr_expect_eq(bga_locktab_nslots(t), 1u << 20);
	bga_locktab_destroy(t);

	t = mk(8, BGA_LOCK_TICKET);
	cr_expect_eq(bga_locktab_stats(t, 8, &st), -EINVAL);
	cr_expect_eq(bga_locktab_stats(t, UINT32_MAX, &st), -EINVAL);
	cr_expect_eq(bga_locktab_stats(t, 0, NULL), -EINVAL);
	cr_expect_eq(bga_locktab_stats(NULL, 0, &st), -EINVAL);
	cr_expect_eq(bga_locktab_stats(t, 7, &st), 0);
	cr_expect_eq(bga_locktab_stats_total(NULL, &st), -EINVAL);
	cr_expect_eq(bga_locktab_stats_total(t, NULL), -EINVAL);
	bga_locktab_destroy(t);
}
