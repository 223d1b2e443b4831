/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga_counter_* in both modes: exact sums under threads, read() within its
 * documented bound while adders run, add_limited never overshooting and
 * never failing falsely, compare, bad arguments, and the CPU-id fallback
 * with rseq turned off (in a re-executed child).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <bgalloc/counter.h>

#include "counter_impl.h"
#include "counter_track.h"
#include "cpu.h"
#include "testutil.h"
#include "threads.h"

extern char **environ;

static const enum bga_counter_mode modes[] = {BGA_COUNTER_PERCPU, BGA_COUNTER_ATOMIC};

static struct bga_counter *mk(int64_t initial, int32_t batch, enum bga_counter_mode mode)
{
	struct bga_counter *c = NULL;

	cr_assert_eq(bga_counter_create(&c, initial, batch, mode), 0);
	cr_assert_not_null(c);
	return c;
}

static unsigned nslots_expected(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);

	return n >= 1 ? (unsigned)n : 1;
}

/* ---------------------------------------------------------------- */

Test(counter, bad_args)
{
	struct bga_counter *c = (struct bga_counter *)0x1;

	cr_expect_eq(bga_counter_create(NULL, 0, 0, BGA_COUNTER_PERCPU), -EINVAL);
	cr_expect_eq(bga_counter_create(&c, 0, -1, BGA_COUNTER_PERCPU), -EINVAL);
	cr_expect_eq(bga_counter_create(&c, 0, INT32_MIN, BGA_COUNTER_ATOMIC), -EINVAL);
	cr_expect_eq(bga_counter_create(&c, 0, 0, (enum bga_counter_mode)3), -EINVAL);
	cr_expect_eq(bga_counter_create(&c, 0, 0, (enum bga_counter_mode)-1), -EINVAL);
	cr_expect_eq(c, (struct bga_counter *)0x1, "failed create must leave *out alone");
	bga_counter_destroy(NULL);
}

Test(counter, defaults_and_bound)
{
	unsigned n = nslots_expected();
	int32_t autob = (int32_t)(2 * n > 32 ? 2 * n : 32);

	for (unsigned m = 0; m < 2; m++) {
		struct bga_counter *c = mk(-5, 0, modes[m]);

		cr_expect_eq(bga_counter_batch(c), autob);
		cr_expect_eq(bga_counter_mode_of(c), modes[m]);
		cr_expect_eq(bga_counter_sum(c), -5);
		cr_expect_eq(bga_counter_read(c), -5);
		if (modes[m] == BGA_COUNTER_ATOMIC)
			cr_expect_eq(bga_counter_error_bound(c), 0);
		else
			cr_expect_eq(bga_counter_error_bound(c), ((int64_t)n + 1) * (autob - 1));
		bga_counter_destroy(c);
	}
	/* batch 1: every add folds, so read is exact. */
	struct bga_counter *c = mk(0, 1, BGA_COUNTER_PERCPU);

	cr_expect_eq(bga_counter_error_bound(c), 0);
	bga_counter_add(c, 3);
	bga_counter_add(c, -1);
	cr_expect_eq(bga_counter_read(c), 2);
	bga_counter_destroy(c);
}

/* One thread, random deltas of every size: sum exact, read within bound. */
Test(counter, single_thread_exact)
{
	static const int32_t batches[] = {1, 2, 7, 0, 1000};
	struct rng r = {0x1234567};

	for (unsigned m = 0; m < 2; m++) {
		for (unsigned b = 0; b < sizeof(batches) / sizeof(batches[0]); b++) {
			struct bga_counter *c = mk(100, batches[b], modes[m]);
			int64_t want = 100, bound = bga_counter_error_bound(c);

			for (int i = 0; i < 20000; i++) {
				int64_t d = (i % 97 == 0) ? between(&r, -100000, 100000)
							  : between(&r, -9, 10);

				bga_counter_add(c, d);
				want += d;
				cr_assert_leq(llabs(bga_counter_read(c) - want), bound,
					      "mode %u batch %d step %d", m, batches[b], i);
				if (i % 1000 == 0)
					cr_assert_eq(bga_counter_sum(c), want);
			}
			cr_expect_eq(bga_counter_sum(c), want);
			bga_counter_destroy(c);
		}
	}
}

/* ---------------------------------------------------------------- */
/* Many threads, known amounts; a sampler checks read() against the range
 * the exact value must lie in at the instant of the read. */

#define NTHREADS 8

struct mt {
	struct bga_counter *c;
	struct track tr[NTHREADS];
	int iters;
	atomic_bool stop;
	int64_t initial;
	int64_t checks;
	int64_t violations;
};

static void adder(void *ctx, int idx)
{
	struct mt *mt = ctx;
	struct track *t = &mt->tr[idx];
	struct rng r = {0x9e3779b97f4a7c15ULL * (uint64_t)(idx + 1)};

	for (int i = 0; i < mt->iters; i++) {
		/* Mostly small (stays in the slot), sometimes folding. */
		int64_t d = (i % 61 == 0) ? between(&r, -500, 500) : between(&r, -3, 4);

		track_add(t, mt->c, d);
		if ((i & 255) == 0)
			sched_yield(); /* encourage migrations and slot sharing */
	}
}

static void *sampler(void *arg)
{
	struct mt *mt = arg;
	int64_t bound = bga_counter_error_bound(mt->c);

	/* At least one sample even if the adders finish before we run. */
	do {
		int64_t lo = mt->initial, hi = mt->initial, v;

		track_before(mt->tr, NTHREADS, &lo, &hi);
		v = bga_counter_read(mt->c);
		track_after(mt->tr, NTHREADS, &lo, &hi);
		mt->checks++;
		if (v < lo - bound || v > hi + bound)
			mt->violations++;
	} while (!atomic_load(&mt->stop));
	return NULL;
}

static void run_mt(enum bga_counter_mode mode, int32_t batch)
{
	struct mt mt = {.iters = 20000, .initial = 1000};
	pthread_t smp;
	int64_t want = mt.initial;

	mt.c = mk(mt.initial, batch, mode);
	cr_assert_eq(pthread_create(&smp, NULL, sampler, &mt), 0);
	cr_assert_eq(test_threads_run(NTHREADS, adder, &mt), 0);
	atomic_store(&mt.stop, true);
	pthread_join(smp, NULL);
	for (int i = 0; i < NTHREADS; i++)
		want += mt.tr[i].pos_done - mt.tr[i].neg_done;
	cr_expect_eq(bga_counter_sum(mt.c), want, "mode %d batch %d", mode, batch);
	cr_expect_leq(llabs(bga_counter_read(mt.c) - want), bga_counter_error_bound(mt.c));
	cr_expect_gt(mt.checks, 0);
	cr_expect_eq(mt.violations, 0, "read outside its bound %lld of %lld times",
		     (long long)mt.violations, (long long)mt.checks);
	bga_counter_destroy(mt.c);
}

Test(counter, threads_exact_percpu_auto) { run_mt(BGA_COUNTER_PERCPU, 0); }
Test(counter, threads_exact_percpu_batch3) { run_mt(BGA_COUNTER_PERCPU, 3); }
Test(counter, threads_exact_atomic) { run_mt(BGA_COUNTER_ATOMIC, 0); }

/* ---------------------------------------------------------------- */

struct lim {
	struct bga_counter *c;
	int64_t limit;
	int iters;
	atomic_bool stop;
	_Atomic int64_t held[NTHREADS];
	_Atomic int64_t ok, enospc;
	int64_t sums, over;
	int32_t maxd;
};

/* Take random amounts up to the limit, give some back (by add_limited with a
 * negative delta or by a plain add), so the value churns at the limit. */
static void limiter(void *ctx, int idx)
{
	struct lim *l = ctx;
	struct rng r = {0x51ed270b27c6d1a5ULL * (uint64_t)(idx + 3)};
	int64_t mine = 0;

	for (int i = 0; i < l->iters; i++)
		cr_assert_eq(limited_step(l->c, l->limit, l->maxd, &r, i, &mine, &l->ok, &l->enospc), 0,
			     "a negative add_limited failed");
	atomic_store(&l->held[idx], mine);
}

static void *sum_sampler(void *arg)
{
	struct lim *l = arg;

	while (!atomic_load(&l->stop)) {
		if (bga_counter_sum(l->c) > l->limit)
			l->over++;
		if (bga_counter_compare(l->c, l->limit) > 0)
			l->over++;
		l->sums++;
	}
	return NULL;
}

static void run_limited(enum bga_counter_mode mode, int32_t batch, int32_t maxd)
{
	/* A limit the threads can reach even while giving some back. */
	struct lim l = {.limit = NTHREADS * maxd * 2, .iters = 20000, .maxd = maxd};
	pthread_t smp;
	int64_t initial = 100, want = initial;

	l.c = mk(initial, batch, mode);
	cr_assert_eq(pthread_create(&smp, NULL, sum_sampler, &l), 0);
	cr_assert_eq(test_threads_run(NTHREADS, limiter, &l), 0);
	atomic_store(&l.stop, true);
	pthread_join(smp, NULL);
	for (int i = 0; i < NTHREADS; i++)
		want += l.held[i];
	cr_expect_eq(bga_counter_sum(l.c), want, "accounting: mode %d batch %d", mode, batch);
	cr_expect_leq(bga_counter_sum(l.c), l.limit);
	cr_expect_eq(l.over, 0, "value seen above the limit %lld times", (long long)l.over);
	cr_expect_gt(l.enospc, 0, "the test never reached the limit");
	cr_expect_gt(l.ok, 0);
	bga_counter_destroy(l.c);
}

Test(counter, limited_no_overshoot_percpu_auto) { run_limited(BGA_COUNTER_PERCPU, 0, 40); }
Test(counter, limited_no_overshoot_percpu_batch4) { run_limited(BGA_COUNTER_PERCPU, 4, 9); }
Test(counter, limited_no_overshoot_atomic) { run_limited(BGA_COUNTER_ATOMIC, 0, 40); }

/* Every thread adds +1 until its first -ENOSPC.  The value only grows, so
 * a failure is false unless the value is already at the limit: the final
 * value must be the limit exactly (no overshoot, no early refusal). */
struct fill {
	struct bga_counter *c;
	int64_t limit;
	_Atomic int64_t got;
};

static void *filler(void *arg)
{
	struct fill *f = arg;

	while (bga_counter_add_limited(f->c, 1, f->limit) == 0)
		atomic_fetch_add(&f->got, 1);
	return NULL;
}

Test(counter, limited_fill_exact)
{
	for (unsigned m = 0; m < 2; m++) {
		struct fill f = {.limit = 30011};
		pthread_t th[NTHREADS];

		f.c = mk(7, 0, modes[m]);
		for (int i = 0; i < NTHREADS; i++)
			cr_assert_eq(pthread_create(&th[i], NULL, filler, &f), 0);
		for (int i = 0; i < NTHREADS; i++)
			pthread_join(th[i], NULL);
		cr_expect_eq(bga_counter_sum(f.c), f.limit, "mode %u", m);
		cr_expect_eq(f.got, f.limit - 7);
		bga_counter_destroy(f.c);
	}
}

Test(counter, limited_single_thread_boundaries)
{
	for (unsigned m = 0; m < 2; m++) {
		struct bga_counter *c = mk(0, 0, modes[m]);

		/* Fill a slot so that the fast path is in play. */
		for (int i = 0; i < 10; i++)
			bga_counter_add(c, 1);
		cr_expect_eq(bga_counter_add_limited(c, 90, 100), 0);
		cr_expect_eq(bga_counter_sum(c), 100);
		cr_expect_eq(bga_counter_add_limited(c, 1, 100), -ENOSPC);
		cr_expect_eq(bga_counter_sum(c), 100, "failed add must change nothing");
		cr_expect_eq(bga_counter_add_limited(c, 0, 50), 0, "delta 0 always succeeds");
		cr_expect_eq(bga_counter_add_limited(c, -30, 50), 0, "negative always succeeds");
		cr_expect_eq(bga_counter_sum(c), 70);
		cr_expect_eq(bga_counter_add_limited(c, 30, 100), 0);
		cr_expect_eq(bga_counter_add_limited(c, INT64_MAX, INT64_MAX), -ENOSPC);
		cr_expect_eq(bga_counter_add_limited(c, 1, INT64_MIN), -ENOSPC);
		cr_expect_eq(bga_counter_sum(c), 100);
		/* Far from the limit: many small adds take the fast path. */
		for (int i = 0; i < 1000; i++)
			cr_assert_eq(bga_counter_add_limited(c, 3, INT64_MAX / 2), 0);
		cr_expect_eq(bga_counter_sum(c), 3100);
		bga_counter_destroy(c);
	}
}

/* ---------------------------------------------------------------- */

Test(counter, compare)
{
	struct rng r = {77};

	for (unsigned m = 0; m < 2; m++) {
		struct bga_counter *c = mk(0, 64, modes[m]);

		for (int i = 0; i < 3000; i++) {
			int64_t v, rhs;

			bga_counter_add(c, between(&r, -20, 25));
			v = bga_counter_sum(c);
			rhs = v + between(&r, -3 * bga_counter_error_bound(c) - 3,
					  3 * bga_counter_error_bound(c) + 3);
			cr_assert_eq(bga_counter_compare(c, rhs), (v > rhs) - (v < rhs),
				     "mode %u v %lld rhs %lld", m, (long long)v, (long long)rhs);
			cr_assert_eq(bga_counter_compare(c, v), 0);
			cr_assert_eq(bga_counter_compare(c, v - 1), 1);
			cr_assert_eq(bga_counter_compare(c, v + 1), -1);
		}
		cr_expect_eq(bga_counter_compare(c, INT64_MIN), 1);
		cr_expect_eq(bga_counter_compare(c, INT64_MAX), -1);
		bga_counter_destroy(c);

		c = mk(INT64_MAX - 5, 0, modes[m]);
		cr_expect_eq(bga_counter_compare(c, INT64_MAX), -1);
		cr_expect_eq(bga_counter_compare(c, INT64_MAX - 5), 0);
		bga_counter_destroy(c);
		c = mk(INT64_MIN + 5, 0, modes[m]);
		cr_expect_eq(bga_counter_compare(c, INT64_MIN), 1);
		cr_expect_eq(bga_counter_compare(c, INT64_MIN + 5), 0);
		bga_counter_destroy(c);
	}
}

/* ---------------------------------------------------------------- */
/* The CPU-id source. */

Test(counter, cpu_source)
{
	unsigned n = bga__cpu_count(), seen_match = 0;
	const char *src = bga__cpu_source();
	struct rseq *rs = (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);

	cr_expect_eq(n, nslots_expected());
	if (__rseq_size > 0 && (int32_t)rs->cpu_id >= 0)
		cr_expect_str_eq(src, "rseq");
	else
		cr_expect_str_neq(src, "rseq");
	for (int i = 0; i < 1000; i++) {
		int a = sched_getcpu();
		unsigned cpu = bga__cpu_current();
		int b = sched_getcpu();

		cr_assert_lt(cpu, n);
		if (a == b && a >= 0 && (unsigned)a == cpu)
			seen_match++;
	}
	/* Migration between the calls can explain a few mismatches, not all. */
	cr_expect_gt(seen_match, 0);
}

/* How adds update a counter: rseq exactly when this process can, and the
 * CAS path on request. */
Test(counter, path)
{
	struct bga_counter *c = mk(0, 0, BGA_COUNTER_PERCPU), *cas = NULL, *a = mk(0, 0, BGA_COUNTER_ATOMIC);

	cr_assert_eq(bga__counter_create_on(&cas, 0, 0, BGA_COUNTER_PERCPU, false), 0);
	cr_expect_str_eq(bga_counter_mode_name(a), "atomic");
	cr_expect_eq(bga_counter_uses_rseq(a), 0);
	cr_expect_str_eq(bga_counter_mode_name(cas), "percpu-cas");
	cr_expect_eq(bga_counter_uses_rseq(cas), 0);
	/* The public way to the CAS path (bga-lab's percpu-cas). */
	struct bga_counter *pcas = mk(0, 4, BGA_COUNTER_PERCPU_CAS);
	cr_expect_str_eq(bga_counter_mode_name(pcas), "percpu-cas");
	cr_expect_eq(bga_counter_mode_of(pcas), BGA_COUNTER_PERCPU);
	cr_expect_eq(bga_counter_uses_rseq(pcas), 0);
	for (int i = 0; i < 100; i++)
		bga_counter_add(pcas, 1);
	cr_expect_eq(bga_counter_sum(pcas), 100);
	cr_expect_eq(bga_counter_add_limited(pcas, 1, 100), -ENOSPC);
	bga_counter_destroy(pcas);
	if (bga_counter_uses_rseq(c)) {
		cr_expect_str_eq(bga_counter_mode_name(c), "percpu-rseq");
		cr_expect_str_eq(bga__cpu_source(), "rseq");
	} else {
		cr_expect_str_eq(bga_counter_mode_name(c), "percpu-cas");
	}
#if BGA_COUNTER_HAVE_RSEQ
	if (strcmp(bga__cpu_source(), "rseq") == 0 && !getenv("BGA_COUNTER_RSEQ"))
		cr_expect(bga_counter_uses_rseq(c), "rseq is live here, yet the counter does not use it");
#endif
	bga_counter_destroy(c);
	bga_counter_destroy(cas);
	bga_counter_destroy(a);
}

/*
 * A counter on the rseq path, used by threads that have rseq and by threads
 * that unregistered it (what a thread whose registration failed looks
 * like): the latter go through the lock, and sums and limits stay exact.
 */
struct mixed {
	struct bga_counter *c;
	int64_t limit;
	bool unregister;
	_Atomic int64_t held;
	atomic_int unregistered;
};

static void *mixed_worker(void *p)
{
	struct mixed *m = p;
	struct rng r = {(uint64_t)(uintptr_t)&r | 1};
	int64_t mine = 0;

	if (m->unregister && __rseq_size > 0) {
		void *area = (char *)__builtin_thread_pointer() + __rseq_offset;

		/* The length glibc registered: __rseq_size, or the 32-byte
		 * original area where __rseq_size reports less. */
		if (syscall(SYS_rseq, area, __rseq_size, 1 /* RSEQ_FLAG_UNREGISTER */, RSEQ_SIG) == 0 ||
		    syscall(SYS_rseq, area, 32, 1, RSEQ_SIG) == 0)
			atomic_fetch_add(&m->unregistered, 1);
	}
	for (int i = 0; i < 20000; i++) {
		int64_t d = between(&r, 1, 70);

		if (bga_counter_add_limited(m->c, d, m->limit) == 0)
			mine += d;
		if (mine > 0 && (i & 3) == 0) {
			int64_t back = between(&r, 1, mine);

			bga_counter_add(m->c, -back);
			mine -= back;
		}
		bga_counter_add(m->c, (i & 1) ? 5 : -5);
		cr_expect_leq(bga_counter_sum(m->c), m->limit + 5 * 4);
	}
	atomic_fetch_add(&m->held, mine);
	return NULL;
}

Test(counter, rseq_and_unregistered_threads)
{
	struct mixed m[2] = {{.limit = 3000, .unregister = true}, {.limit = 3000, .unregister = true}};
	pthread_t th[4];

	m[0].c = mk(0, 0, BGA_COUNTER_PERCPU);
	cr_assert_eq(bga__counter_create_on(&m[1].c, 0, 0, BGA_COUNTER_PERCPU, false), 0);
	for (int k = 0; k < 2; k++) {
		struct mixed reg = m[k];

		reg.unregister = false;
		for (int i = 0; i < 4; i++)
			cr_assert_eq(pthread_create(&th[i], NULL, mixed_worker, i & 1 ? &m[k] : &reg), 0);
		for (int i = 0; i < 4; i++)
			pthread_join(th[i], NULL);
		cr_expect_eq(bga_counter_sum(m[k].c), m[k].held + reg.held, "%s",
			     bga_counter_mode_name(m[k].c));
		if (bga_counter_uses_rseq(m[k].c))
			cr_expect_eq(m[k].unregistered, 2, "the threads could not unregister rseq");
		bga_counter_destroy(m[k].c);
	}
}

/*
 * With GLIBC_TUNABLES=glibc.pthread.rseq=0 glibc registers no rseq area and
 * cpu_id reads negative: the counter must still work.  The parent re-runs
 * this binary with only the child test selected; the child writes a marker
 * so that a child that ran no test cannot pass.
 */
static void *child_adder(void *arg)
{
	struct bga_counter *c = arg;

	for (int i = 0; i < 20000; i++) {
		bga_counter_add(c, (i & 1) ? 3 : -1);
		(void)bga_counter_add_limited(c, 2, 1000000);
	}
	return NULL;
}

Test(counter_child, rseq_off)
{
	const char *mark = getenv("BGA_TEST_RSEQ_MARK");
	struct bga_counter *c;
	pthread_t th[4];
	FILE *f;

	if (!mark)
		cr_skip_test("runs only as the child of counter/rseq_off");
	cr_assert_str_neq(bga__cpu_source(), "rseq");
	cr_assert_lt(bga__cpu_current(), bga__cpu_count());
	c = mk(0, 0, BGA_COUNTER_PERCPU);
	cr_assert_str_eq(bga_counter_mode_name(c), "percpu-cas");
	for (int i = 0; i < 4; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, child_adder, c), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(bga_counter_sum(c), 4 * (10000 * 2 + 20000 * 2));
	bga_counter_destroy(c);
	f = fopen(mark, "w");
	cr_assert_not_null(f);
	fprintf(f, "ok %s\n", bga__cpu_source());
	fclose(f);
}

Test(counter, rseq_off)
{
	char exe[4096], mark[] = "/tmp/bga_rseq_markXXXXXX", buf[64] = "";
	char markenv[128], *argv[] = {exe, "--filter=counter_child/rseq_off", "--jobs=1", NULL};
	char **envp;
	size_t n = 0, k = 0;
	ssize_t len;
	pid_t pid;
	int fd, status;

	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	cr_assert_gt(len, 0);
	exe[len] = 0;
	fd = mkstemp(mark);
	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(markenv, sizeof(markenv), "BGA_TEST_RSEQ_MARK=%s", mark);
	while (environ[n])
		n++;
	envp = calloc(n + 3, sizeof(*envp));
	cr_assert_not_null(envp);
	for (size_t i = 0; i < n; i++)
		/* BXFI_*: Criterion's worker handshake; the child must start as
		 * a fresh runner, not think it is our worker. */
		if (strncmp(environ[i], "GLIBC_TUNABLES=", 15) &&
		    strncmp(environ[i], "BGA_TEST_RSEQ_MARK=", 19) && strncmp(environ[i], "BXFI", 4))
			envp[k++] = environ[i];
	envp[k++] = "GLIBC_TUNABLES=glibc.pthread.rseq=0";
	envp[k++] = markenv;
	cr_assert_eq(posix_spawn(&pid, exe, NULL, NULL, argv, envp), 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	free(envp);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed: status %#x", status);
	fd = open(mark, O_RDONLY);
	cr_assert_geq(fd, 0);
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	unlink(mark);
	cr_assert_gt(len, 0, "the child ran no test");
	buf[len] = 0;
	cr_expect(strncmp(buf, "ok getcpu", 9) == 0 || strncmp(buf, "ok hash", 7) == 0,
		  "child says: %s", buf);
}

/* ---------------------------------------------------------------- */
/* A fold and a lock-free add on the same slot (the CAS path). */

#ifdef BGA_DEBUG
static int64_t mid_fold_added;
static int mid_fold_calls;

/* Between the fold's read of its slot and its exchange: a lock-free add
 * on that slot (the same thread's, so the same slot), which a fold that
 * zeroed the slot with a plain store would lose. */
static void add_mid_fold(struct bga_counter *c)
{
	/* every other call: the fold retried after the add then goes through */
	static int skip;
	if ((skip ^= 1) == 0)
		return;
	for (int64_t d = 1; d >= -1; d -= 2)
		if (bga__counter_add_fast(c, d)) {
			mid_fold_added += d;
			mid_fold_calls++;
			return;
		}
}

/*
 * Every fold of the CAS path, plain (bga_counter_add) and checked
 * (bga_counter_add_limited far from its limit), has an add land on its
 * slot mid-fold, thousands of times a run: the exact sum must keep every
 * one.  Deterministic: the add is placed, not raced for.
 */
Test(counter, fold_keeps_an_add_that_lands_mid_fold)
{
	for (int limited = 0; limited < 2; limited++) {
		struct bga_counter *c = mk(1000, 4, BGA_COUNTER_PERCPU_CAS);
		struct rng r = {0x5eedULL + (uint64_t)limited};
		int64_t want = 1000;
		mid_fold_added = 0;
		mid_fold_calls = 0;
		bga__counter_fold_hook = add_mid_fold;
		for (int i = 0; i < 20000; i++) {
			int64_t d = (i % 7 == 0) ? between(&r, -40, 40) : between(&r, -5, 6);
			if (limited && d > 0)
				cr_assert_eq(bga_counter_add_limited(c, d, INT64_MAX / 2), 0);
			else
				bga_counter_add(c, d);
			want += d;
		}
		bga__counter_fold_hook = NULL;
		cr_assert_gt(mid_fold_calls, 1000, "only %d folds met an add", mid_fold_calls);
		cr_assert_eq(bga_counter_sum(c), want + mid_fold_added, "limited %d: %lld, want %lld (%d adds mid-fold)",
			     limited, (long long)bga_counter_sum(c), (long long)(want + mid_fold_added), mid_fold_calls);
		bga_counter_destroy(c);
	}
}
#endif

/* Pin the calling thread to one CPU it may run on, so that every add
 * below goes to one slot (the hysteresis is a slot's). */
static void pin_to_one_cpu(void)
{
	cpu_set_t set;

	cr_assert_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set)) {
			CPU_ZERO(&set);
			CPU_SET(i, &set);
			cr_assert_eq(sched_setaffinity(0, sizeof(set), &set), 0);
			return;
		}
	cr_assert_fail("no CPU in the affinity mask");
}

/*
 * The fold's hysteresis (counter.c, counter_fold_keep_under_fold_lock),
 * seen through read(), which shows the total: a slot whose fold reverses
 * its last one keeps batch/2, so a CPU that goes up and down by a batch
 * at a time (a writer filling a file, then deleting one) folds twice and
 * then never; a stream that only grows folds every batch.  On both
 * per-CPU paths, the growing adds plain and limited (the checked fold).
 */
Test(counter, fold_hysteresis_stops_a_sawtooth_folding)
{
	static const enum bga_counter_mode pm[] = {BGA_COUNTER_PERCPU, BGA_COUNTER_PERCPU_CAS};

	pin_to_one_cpu();
	for (unsigned m = 0; m < 2; m++)
		for (int limited = 0; limited < 2; limited++) {
			struct bga_counter *c = mk(0, 8, pm[m]);
#define UP(n)                                                                                                          \
	for (int i_ = 0; i_ < (n); i_++) {                                                                             \
		if (limited)                                                                                           \
			cr_assert_eq(bga_counter_add_limited(c, 1, INT64_MAX / 2), 0);                                 \
		else                                                                                                   \
			bga_counter_add(c, 1);                                                                         \
	}
			UP(8); /* the 8th folds, the slot's first: it keeps nothing */
			cr_assert_eq(bga_counter_read(c), 8, "mode %u limited %d", m, limited);
			bga_counter_add(c, -8); /* reversed: the slot keeps -4 */
			cr_assert_eq(bga_counter_read(c), 4, "mode %u limited %d", m, limited);
			for (int r = 0; r < 100; r++) {
				UP(8); /* -4 .. 4 */
				bga_counter_add(c, -8);
				cr_assert_eq(bga_counter_read(c), 4, "mode %u limited %d round %d: a fold", m, limited, r);
			}
			cr_assert_eq(bga_counter_sum(c), 0);
			UP(12); /* -4 .. 8: reversed again, keeps 4 */
			cr_assert_eq(bga_counter_read(c), 8, "mode %u limited %d", m, limited);
			UP(4); /* 4 .. 8: the same way, keeps nothing */
			cr_assert_eq(bga_counter_read(c), 16, "mode %u limited %d", m, limited);
			UP(8);
			cr_assert_eq(bga_counter_read(c), 24, "mode %u limited %d", m, limited);
			cr_assert_eq(bga_counter_sum(c), 24);
#undef UP
			bga_counter_destroy(c);
		}
}
