/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Stress for bga_counter, run under ctest and under ThreadSanitizer (which
 * cannot run inside Criterion).  Threads hammer every path a counter can
 * take: per-CPU on restartable sequences (when this process has them),
 * per-CPU forced onto the CAS path, and atomic.  Checks:
 *   - the final sum is exact;
 *   - a sampler's read() stays within error_bound of the range the exact
 *     value must be in, and compare() agrees with that range;
 *   - add_limited near the limit never lets a sampled sum exceed the limit,
 *     and a fill to the limit ends exactly at it;
 *   - one adder of each mix and race run unregisters rseq, so rseq
 *     counters also serve a thread without it (through the lock);
 *   - flushes (every slot sealed and folded) racing tight per-CPU adds lose
 *     and double-count nothing: on the rseq path this is what the
 *     membarrier is for, and a build with -DBGA_COUNTER_TEST_SKIP_MEMBARRIER
 *     fails here within seconds.
 * Then it re-runs itself with GLIBC_TUNABLES=glibc.pthread.rseq=0 so the
 * getcpu fallback gets the same treatment.  Exits 1 on any failure; prints
 * one summary line.
 *
 * Environment: BGA_STRESS_SECONDS=S repeats the rounds until S seconds have
 * passed (the rseq-off child then runs S/4); without it, one round (a few
 * seconds).  BGA_STRESS_ITERS overrides the per-thread iterations of a
 * round.  BGA_STRESS_PATH=rseq or =cas stresses only per-CPU counters on
 * that path, without the child (rseq fails if the process cannot use it),
 * for long runs of one path.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bgalloc/counter.h>

#include "check.h"
#include "counter_impl.h"
#include "counter_track.h"
#include "cpu.h"
#include "testutil.h"
#include "threads.h"

extern char **environ;

#define NTHREADS 8
#define CHILD_ENV "BGA_STRESS_COUNTER_CHILD"

static int failures;
static long iters = 50000;

/* The counters a round stresses: what bga_counter_create picks (rseq where
 * it can), the same forced onto CAS, and the atomic baseline. */
struct kind {
	enum bga_counter_mode mode;
	bool rseq;
};
static const struct kind kinds[] = {
	{BGA_COUNTER_PERCPU, true},
	{BGA_COUNTER_PERCPU, false},
	{BGA_COUNTER_ATOMIC, false},
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static struct bga_counter *mk(struct kind k, int64_t initial, int32_t batch)
{
	struct bga_counter *c = NULL;
	int rc = bga__counter_create_on(&c, initial, batch, k.mode, k.rseq);

	if (rc) {
		fprintf(stderr, "stress_counter: create: %d\n", rc);
		exit(1);
	}
	return c;
}

#define CHECK(cond, ...) do { if (CHECK_FAILED("stress_counter", cond, __VA_ARGS__)) failures++; } while (0)

/*
 * The last adder of a mix or race run unregisters its rseq area first, as a
 * thread whose registration failed would look: on an rseq counter it adds
 * through the lock (CTR_RSEQ_NONE) while the others run sections.
 */
static void drop_rseq(void)
{
	void *area;

	if (__rseq_size == 0)
		return;
	area = (char *)__builtin_thread_pointer() + __rseq_offset;
	if (syscall(SYS_rseq, area, __rseq_size, 1 /* RSEQ_FLAG_UNREGISTER */, RSEQ_SIG) != 0)
		(void)syscall(SYS_rseq, area, 32, 1, RSEQ_SIG);
}

/* ---------------------------------------------------------------- */

struct mix {
	struct bga_counter *c;
	int64_t initial;
	struct track tr[NTHREADS];
	atomic_bool stop;
	int64_t checks, bad_read, bad_cmp;
};

static void mix_adder(void *ctx, int idx)
{
	struct mix *m = ctx;
	struct track *t = &m->tr[idx];
	struct rng r = {0x9e3779b97f4a7c15ULL * (uint64_t)(idx + 1)};

	if (idx == NTHREADS - 1)
		drop_rseq();
	for (long i = 0; i < iters; i++) {
		int64_t d = (i % 53 == 0) ? between(&r, -1000, 1000) : between(&r, -5, 6);

		track_add(t, m->c, d);
		if ((i & 1023) == 0)
			sched_yield();
	}
}

static void *mix_sampler(void *p)
{
	struct mix *m = p;
	int64_t bound = bga_counter_error_bound(m->c);
	struct rng r = {12345};

	while (!atomic_load(&m->stop)) {
		int64_t lo = m->initial, hi = m->initial, v, rhs;
		int cmp;

		/* Adds done before the read/compare are surely in; adds that
		 * could be in are those announced by the time they return. */
		track_before(m->tr, NTHREADS, &lo, &hi);
		rhs = (lo + hi) / 2 + between(&r, -2 * bound - 50, 2 * bound + 50);
		v = bga_counter_read(m->c);
		cmp = bga_counter_compare(m->c, rhs);
		track_after(m->tr, NTHREADS, &lo, &hi);
		m->checks++;
		if (v < lo - bound || v > hi + bound)
			m->bad_read++;
		if ((rhs < lo && cmp != 1) || (rhs > hi && cmp != -1))
			m->bad_cmp++;
	}
	return NULL;
}

static void run_mix(struct kind k, int32_t batch, long *ops)
{
	struct mix m = {.initial = -777};
	pthread_t smp;
	int64_t want = m.initial;
	const char *mode;

	m.c = mk(k, m.initial, batch);
	mode = bga_counter_mode_name(m.c);
	pthread_create(&smp, NULL, mix_sampler, &m);
	if (test_threads_run(NTHREADS, mix_adder, &m) != 0)
		abort();
	atomic_store(&m.stop, true);
	pthread_join(smp, NULL);
	for (int i = 0; i < NTHREADS; i++)
		want += m.tr[i].pos_done - m.tr[i].neg_done;
	CHECK(bga_counter_sum(m.c) == want, "mix %s batch %d: sum %lld want %lld", mode,
	      batch, (long long)bga_counter_sum(m.c), (long long)want);
	CHECK(m.bad_read == 0, "mix %s batch %d: read out of bound %lld/%lld", mode, batch,
	      (long long)m.bad_read, (long long)m.checks);
	CHECK(m.bad_cmp == 0, "mix %s batch %d: compare wrong %lld/%lld", mode, batch,
	      (long long)m.bad_cmp, (long long)m.checks);
	*ops += NTHREADS * iters;
	bga_counter_destroy(m.c);
}

/* ---------------------------------------------------------------- */

struct lim {
	struct bga_counter *c;
	int64_t limit;
	int32_t maxd;
	atomic_bool stop;
	_Atomic int64_t held, ok, enospc;
	int64_t sums, over;
};

static void *lim_worker(void *p)
{
	struct lim *l = p;
	struct rng r = {(uint64_t)(uintptr_t)&r ^ 0x51ed270b27c6d1a5ULL};
	int64_t mine = 0;

	for (long i = 0; i < iters; i++)
		CHECK(limited_step(l->c, l->limit, l->maxd, &r, i, &mine, &l->ok, &l->enospc) == 0, "negative");
	atomic_fetch_add(&l->held, mine);
	return NULL;
}

static void *lim_sampler(void *p)
{
	struct lim *l = p;

	while (!atomic_load(&l->stop)) {
		if (bga_counter_sum(l->c) > l->limit)
			l->over++;
		l->sums++;
	}
	return NULL;
}

static void *fill_worker(void *p)
{
	struct lim *l = p;

	while (bga_counter_add_limited(l->c, 1, l->limit) == 0)
		atomic_fetch_add(&l->ok, 1);
	return NULL;
}

static void run_limited(struct kind k, int32_t batch, int32_t maxd, long *ok, long *enospc)
{
	struct lim l = {.limit = NTHREADS * maxd * 2, .maxd = maxd};
	pthread_t th[NTHREADS], smp;
	int64_t initial = 3;
	const char *mode;

	l.c = mk(k, initial, batch);
	mode = bga_counter_mode_name(l.c);
	pthread_create(&smp, NULL, lim_sampler, &l);
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, lim_worker, &l);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	atomic_store(&l.stop, true);
	pthread_join(smp, NULL);
	CHECK(bga_counter_sum(l.c) == initial + l.held, "limited %s batch %d: sum %lld want %lld",
	      mode, batch, (long long)bga_counter_sum(l.c), (long long)(initial + l.held));
	CHECK(l.over == 0, "limited %s batch %d: sum above limit %lld/%lld times", mode, batch,
	      (long long)l.over, (long long)l.sums);
	CHECK(l.enospc > 0, "limited %s batch %d: never reached the limit", mode, batch);
	*ok += l.ok;
	*enospc += l.enospc;

	/* Fill from the current value to the limit with +1s. */
	l.limit = bga_counter_sum(l.c) + 20000;
	l.ok = 0;
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, fill_worker, &l);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	CHECK(bga_counter_sum(l.c) == l.limit && l.ok == 20000,
	      "fill %s batch %d: ended at %lld, limit %lld, %lld ok", mode, batch,
	      (long long)bga_counter_sum(l.c), (long long)l.limit, (long long)l.ok);
	bga_counter_destroy(l.c);
}

/* ---------------------------------------------------------------- */

/*
 * Flushes against tight per-CPU adds.  The counter is in limited use, so
 * every plain add of +batch (it cannot fit a slot) is a flush: all slots
 * sealed, read, zeroed and folded at once.  One flusher does +batch/-batch
 * pairs as fast as it can; the adders do small random adds that move their
 * slots all the time, keeping their own net.  Every add a flush loses or
 * counts twice shows in the final exact sum, and the sampler checks that
 * every sum lies between what the finished and the started adds allow.
 * The fill of a slot by the adders keeps slot values away from 0, so a
 * double count is a visible amount.
 */
struct race {
	struct bga_counter *c;
	int64_t initial;
	atomic_bool stop;
	struct track tr[NTHREADS];
	_Atomic int64_t flushes;
	int64_t sums, bad_sum;
};

static void race_adder(void *ctx, int id)
{
	struct race *rc = ctx;
	struct rng r = {0xd1b54a32d192ed03ULL * (uint64_t)(id + 7)};

	if (id == NTHREADS - 1)
		drop_rseq(); /* one adder on the CAS path, racing the flusher too */
	while (!atomic_load_explicit(&rc->stop, memory_order_relaxed))
		for (int i = 0; i < 4096; i++)
			track_add(&rc->tr[id], rc->c, between(&r, -3, 4));
}

static void *race_flusher(void *p)
{
	struct race *rc = p;
	int64_t b = bga_counter_batch(rc->c);

	while (!atomic_load_explicit(&rc->stop, memory_order_relaxed)) {
		bga_counter_add(rc->c, b);
		bga_counter_add(rc->c, -b);
		atomic_fetch_add_explicit(&rc->flushes, 1, memory_order_relaxed);
	}
	return NULL;
}

static void *race_sampler(void *p)
{
	struct race *rc = p;
	int64_t b = bga_counter_batch(rc->c);

	while (!atomic_load(&rc->stop)) {
		int64_t lo = rc->initial, hi = rc->initial, v;

		track_before(rc->tr, NTHREADS, &lo, &hi);
		v = bga_counter_sum(rc->c);
		track_after(rc->tr, NTHREADS, &lo, &hi);
		rc->sums++;
		/* The flusher may be between its +b and its -b. */
		if (v < lo || v > hi + b)
			rc->bad_sum++;
	}
	return NULL;
}

static void run_race(struct kind k, int nadders, long *flushes)
{
	struct race rc = {.initial = 1000};
	struct test_threads adders;
	pthread_t fl, smp;
	int64_t want = rc.initial;
	struct timespec d = {0, 250 * 1000 * 1000};
	const char *mode;

	rc.c = mk(k, rc.initial, 0);
	mode = bga_counter_mode_name(rc.c);
	/* Limited use from now on: growing folds become flushes. */
	CHECK(bga_counter_add_limited(rc.c, 1, INT64_MAX / 2) == 0, "race %s: first limited add", mode);
	bga_counter_add(rc.c, -1);
	if (test_threads_start(&adders, nadders, race_adder, &rc) != 0)
		abort();
	pthread_create(&fl, NULL, race_flusher, &rc);
	pthread_create(&smp, NULL, race_sampler, &rc);
	nanosleep(&d, NULL);
	atomic_store(&rc.stop, true);
	test_threads_join(&adders);
	pthread_join(fl, NULL);
	pthread_join(smp, NULL);
	for (int i = 0; i < NTHREADS; i++)
		want += rc.tr[i].pos_done - rc.tr[i].neg_done;
	CHECK(bga_counter_sum(rc.c) == want, "race %s, %d adders: sum %lld want %lld after %lld flushes",
	      mode, nadders, (long long)bga_counter_sum(rc.c), (long long)want,
	      (long long)rc.flushes);
	CHECK(rc.bad_sum == 0, "race %s, %d adders: %lld/%lld sums outside what the adds allow", mode,
	      nadders, (long long)rc.bad_sum, (long long)rc.sums);
	*flushes += rc.flushes;
	bga_counter_destroy(rc.c);
}

/* ---------------------------------------------------------------- */

static const char *only_path; /* BGA_STRESS_PATH */

static bool kind_selected(struct kind k)
{
	if (!only_path)
		return true;
	if (k.mode != BGA_COUNTER_PERCPU)
		return false;
	return strcmp(only_path, "rseq") == 0 ? k.rseq : !k.rseq;
}

/* One round: every workload on every kind of counter. */
static void run_round(long *ops, long *ok, long *enospc, long *flushes)
{
	for (unsigned k = 0; k < NKINDS; k++) {
		if (!kind_selected(kinds[k]))
			continue;
		run_mix(kinds[k], 0, ops);
		if (kinds[k].mode == BGA_COUNTER_PERCPU)
			run_mix(kinds[k], 2, ops);
		run_limited(kinds[k], 0, 40, ok, enospc);
		if (kinds[k].mode == BGA_COUNTER_PERCPU) {
			run_limited(kinds[k], 4, 9, ok, enospc);
			/* As many adders as CPUs, then many more than CPUs
			 * (preempted sections restart). */
			run_race(kinds[k], (int)BGA_MIN(bga__cpu_count(), (unsigned)NTHREADS), flushes);
			run_race(kinds[k], NTHREADS, flushes);
		}
	}
}

static double since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Re-run this program with rseq off; returns its exit status. */
static int run_child(const char *self)
{
	char *argv[] = {(char *)self, NULL};
	char **envp;
	size_t n = 0, k = 0;
	pid_t pid;
	int st;

	while (environ[n])
		n++;
	envp = calloc(n + 3, sizeof(*envp));
	if (!envp)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "GLIBC_TUNABLES=", 15))
			envp[k++] = environ[i];
	envp[k++] = "GLIBC_TUNABLES=glibc.pthread.rseq=0";
	envp[k++] = CHILD_ENV "=1";
	if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, envp) != 0) {
		free(envp);
		return -1;
	}
	free(envp);
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	bool child = getenv(CHILD_ENV) != NULL;
	const char *src = bga__cpu_source(), *env = getenv("BGA_STRESS_ITERS");
	const char *secs_env = getenv("BGA_STRESS_SECONDS");
	long ops = 0, ok = 0, enospc = 0, flushes = 0, rounds = 0;
	double secs = secs_env ? atof(secs_env) : 0;
	struct bga_counter *probe;
	const char *path;
	struct timespec t0;
	int child_rc = 0;

	(void)argc;
	only_path = getenv("BGA_STRESS_PATH");
	if (only_path && strcmp(only_path, "rseq") && strcmp(only_path, "cas")) {
		fprintf(stderr, "stress_counter: BGA_STRESS_PATH is rseq or cas\n");
		return 2;
	}
	if (env && atol(env) > 0)
		iters = atol(env);
	if (child) {
		iters = iters / 4 + 1;
		secs /= 4;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (child)
		CHECK(strcmp(src, "rseq") != 0, "rseq off, yet the source is rseq");
	probe = mk(kinds[0], 0, 0);
	path = bga_counter_mode_name(probe);
	bga_counter_destroy(probe);
	if (child)
		CHECK(strcmp(path, "percpu-rseq") != 0, "rseq off, yet the counter uses it");
	if (only_path && strcmp(only_path, "rseq") == 0)
		CHECK(strcmp(path, "percpu-rseq") == 0, "BGA_STRESS_PATH=rseq, but counters get %s", path);

	do {
		run_round(&ops, &ok, &enospc, &flushes);
		rounds++;
	} while (!failures && since(&t0) < secs);

	if (!child && !only_path && strcmp(src, "rseq") == 0) {
		child_rc = run_child(argv[0]);
		CHECK(child_rc == 0, "rseq-off child exited %d", child_rc);
	}
	if (child && !failures)
		return 0; /* the parent's line reports it */
	printf("stress_counter%s: %s: %ld rounds, %d threads, %ld adds, %ld limited ok, %ld enospc, "
	       "%ld racing flushes, cpu source %s, per-CPU path %s%s, %.2f s\n",
	       child ? " (rseq off)" : "", failures ? "FAIL" : "OK", rounds, NTHREADS, ops, ok, enospc,
	       flushes, src, only_path ? (strcmp(only_path, "rseq") ? "percpu-cas" : "percpu-rseq") : path,
	       only_path ? " only" : child || strcmp(src, "rseq") ? " and percpu-cas" : " and percpu-cas, rseq-off child ok",
	       since(&t0));
	return failures ? 1 : 0;
}
