/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_TEST_THREADS_H
#define BGA_TEST_THREADS_H

/*
 * n worker threads on one shared context, each told its index: the setup
 * every concurrent test and stress program makes, written once.
 *
 *	static void worker(void *ctx, int id) { struct run *r = ctx; ... }
 *	struct test_threads tt;
 *	test_threads_start(&tt, n, worker, &run);   // 0 or an errno
 *	...                                          // a sampler, a watchdog
 *	test_threads_join(&tt);
 *
 * test_threads_run() is the two at once.  A worker's id runs 0 .. n-1;
 * n is at most TEST_THREADS_MAX.  Plain C and pthreads only, so both the
 * Criterion suites and the stress programs (which run under TSan) use it.
 */

#include <errno.h>
#include <pthread.h>

#define TEST_THREADS_MAX 64

typedef void (*test_worker)(void *ctx, int id);

struct test_thread {
	pthread_t t;
	test_worker fn;
	void *ctx;
	int id;
};

struct test_threads {
	int n; /* threads started */
	struct test_thread th[TEST_THREADS_MAX];
};

static inline void *test_thread_main(void *arg)
{
	struct test_thread *t = arg;
	t->fn(t->ctx, t->id);
	return NULL;
}

/* Start n workers fn(ctx, id).  0, or EINVAL for n outside 1 ..
 * TEST_THREADS_MAX, or the errno of the pthread_create that failed; on a
 * failure the workers already started are joined before it returns. */
static inline int test_threads_start(struct test_threads *tt, int n, test_worker fn, void *ctx)
{
	tt->n = 0;
	if (n < 1 || n > TEST_THREADS_MAX)
		return EINVAL;
	for (int i = 0; i < n; i++) {
		struct test_thread *t = &tt->th[i];
		t->fn = fn;
		t->ctx = ctx;
		t->id = i;
		int rc = pthread_create(&t->t, NULL, test_thread_main, t);
		if (rc) {
			for (int k = 0; k < tt->n; k++)
				pthread_join(tt->th[k].t, NULL);
			tt->n = 0;
			return rc;
		}
		tt->n++;
	}
	return 0;
}

/* Wait for every worker test_threads_start started. */
static inline void test_threads_join(struct test_threads *tt)
{
	for (int i = 0; i < tt->n; i++)
		pthread_join(tt->th[i].t, NULL);
	tt->n = 0;
}

/* Start n workers and wait for them: 0 or test_threads_start's errno. */
static inline int test_threads_run(int n, test_worker fn, void *ctx)
{
	struct test_threads tt;
	int rc = test_threads_start(&tt, n, fn, ctx);
	if (rc == 0)
		test_threads_join(&tt);
	return rc;
}

#endif
