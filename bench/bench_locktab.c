/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Lock table microbenchmarks: every lock kind, with a one-increment
 * critical section, either on a slot of its own per thread (uncontended)
 * or with every thread on one key (contended), at 1 to 64 threads.  The
 * 64-thread runs on a 2-vCPU machine are the point: they show which kinds
 * survive more threads than cores.
 *
 * Run: bga-micro --benchmark_filter=locktab --benchmark_repetitions=5
 *      --benchmark_report_aggregates_only=true
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <bgalloc/locktab.h>

#include "shim.h"

#define LT_SLOTS 64 /* >= the most threads, so "own slot" really is one */

/*
 * Ticket and MCS with more threads than vCPUs collapse to a hand-off per
 * time slice, and on a loaded machine a single run can take many minutes.
 * Past this budget a run stops and reports the rate it reached as an error
 * ("collapsed"), so the suite always finishes.
 */
#define LT_BUDGET_S 10

struct lt_ctx {
	struct bga_locktab *t;
	double deadline;
	struct {
		uint64_t n;
	} __attribute__((aligned(128))) count[LT_SLOTS];
};

static double lt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void lt_setup(struct bench_state *st, enum bga_lock_kind kind)
{
	struct lt_ctx *c;

	if (posix_memalign((void **)&c, 128, sizeof(*c)) != 0) {
		bench_skip(st, "out of memory");
		return;
	}
	for (int i = 0; i < LT_SLOTS; i++)
		c->count[i].n = 0;
	if (bga_locktab_create(&c->t, LT_SLOTS, kind) != 0) {
		free(c);
		bench_skip(st, "bga_locktab_create failed");
		return;
	}
	c->deadline = lt_now() + LT_BUDGET_S;
	bench_set_ctx(st, c);
}

static void lt_teardown(struct bench_state *st)
{
	struct lt_ctx *c = bench_ctx(st);

	if (!c)
		return;
	bga_locktab_destroy(c->t);
	free(c);
}

static void lt_run(struct bench_state *st, bool contended)
{
	struct lt_ctx *c = bench_ctx(st);
	uint64_t key = contended ? 0 : (uint64_t)bench_thread_index(st);
	/*
	 * Contended: one op per batch.  Google Benchmark's first trial runs one
	 * batch per thread, and a 64-thread ticket or MCS run on 2 vCPUs can
	 * cost a time slice per hand-off, so bigger batches take minutes.
	 * Every kind pays the same loop overhead, so ratios are unaffected.
	 */
	const uint64_t batch = contended ? 1 : 64;
	int64_t items = 0;
	/* Not thread-local: Google Benchmark reads the message after the thread is gone. */
	static char msgs[LT_SLOTS][128];
	char *msg = msgs[bench_thread_index(st) % LT_SLOTS];

	if (!c) {
		bench_skip(st, "no context");
		return;
	}
	while (bench_keep_running_batch(st, batch)) {
		for (uint64_t i = 0; i < batch; i++) {
			bga_locktab_lock(c->t, key);
			c->count[key].n++;
			bga_locktab_unlock(c->t, key);
		}
		items += (int64_t)batch;
		/* The coarse clock costs a few ns; look at it every 16 ops. */
		if ((items & 15) == 0 && lt_now() > c->deadline) {
			snprintf(msg, sizeof(msgs[0]), "collapsed: %.0f ops/s over %d s (all threads)",
				 (double)__atomic_load_n(&c->count[key].n, __ATOMIC_RELAXED) /
					 LT_BUDGET_S,
				 LT_BUDGET_S);
			bench_skip(st, msg);
			break;
		}
	}
	bench_set_items(st, items);
}

#define LT_KIND(name, kind)                                                             \
	static void locktab_setup_##name(struct bench_state *st) { lt_setup(st, kind); } \
	static void locktab_##name##_uncontended(struct bench_state *st) { lt_run(st, false); } \
	static void locktab_##name##_contended(struct bench_state *st) { lt_run(st, true); } \
	BENCH(locktab_##name##_uncontended, .setup = locktab_setup_##name,               \
	      .teardown = lt_teardown, .threads = {1, 2, 4, 16, 64})                     \
	BENCH(locktab_##name##_contended, .setup = locktab_setup_##name,                 \
	      .teardown = lt_teardown, .threads = {1, 2, 4, 16, 64})

LT_KIND(default, BGA_LOCK_DEFAULT)
LT_KIND(fas, BGA_LOCK_FAS)
LT_KIND(ticket, BGA_LOCK_TICKET)
LT_KIND(mcs, BGA_LOCK_MCS)
LT_KIND(mutex, BGA_LOCK_MUTEX)
