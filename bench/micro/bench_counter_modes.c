/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The counter's modes as the library's own code meets them: each add a
 * direct call into the static library (no PLT), or its fast path inlined
 * from the internal header, as bga_alloc charges its counters.  A program
 * linking libbgalloc gets neither: it pays one call through the PLT per
 * add, and bga-lab (tools/lab) measures that, with its verdict, the
 * machine's ceiling and the CPU share each run got.  These are the
 * figures an inlining benchmark reports: what the call costs, set against
 * bga-lab's at the same modes and threads.
 *
 * One benchmark per mode, path and add, 1 and 2 threads:
 *   counter_mode_add[_limited][_inline]_{atomic,percpu,percpu_cas}
 * add_limited is far from its limit, so every add is the fast path's
 * case.  The per-CPU modes take the batch as argument (0: the library's
 * auto rule; 32; 1024, almost no folds); atomic has none.  The label names
 * the path the counter got (percpu-rseq or percpu-cas) and its batch.
 * The inlined atomic add is the counter's own total, fetch_add in the
 * loop.  Each run's sum is checked against its adds at teardown.
 *   bga-micro --benchmark_filter=counter_mode_ --benchmark_repetitions=5 \
 *             --benchmark_enable_random_interleaving=true \
 *             --benchmark_report_aggregates_only=true
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <bgalloc/counter.h>

/* Inside the library (tests/cycles/reach.txt): the add's fast path,
 * inlined (bga__counter_add, bga__counter_add_limited) and the atomic
 * mode's total, which no public header exposes. */
#include "counter_impl.h"
#include "shim.h"

#define MODES_BATCH 64
/* add_limited's limit: far above anything a run reaches */
#define FAR_LIMIT (INT64_MAX / 4)

struct modes_ctx {
	struct bga_counter *c;
	bool atomic;
	int64_t adds; /* every thread's, summed at its end */
};

static void modes_setup(struct bench_state *st, enum bga_counter_mode mode)
{
	struct modes_ctx *m = calloc(1, sizeof(*m));
	int32_t batch = mode == BGA_COUNTER_ATOMIC ? 0 : (int32_t)bench_arg(st);

	if (!m || bga_counter_create(&m->c, 0, batch, mode)) {
		free(m);
		bench_skip(st, "bga_counter_create failed");
		return;
	}
	m->atomic = mode == BGA_COUNTER_ATOMIC;
	bench_set_ctx(st, m);
}

static void modes_setup_atomic(struct bench_state *st)
{
	modes_setup(st, BGA_COUNTER_ATOMIC);
}

static void modes_setup_percpu(struct bench_state *st)
{
	modes_setup(st, BGA_COUNTER_PERCPU);
}

static void modes_setup_percpu_cas(struct bench_state *st)
{
	modes_setup(st, BGA_COUNTER_PERCPU_CAS);
}

/* The exact sum, with every adder stopped: a miss is a library bug. */
static void modes_teardown(struct bench_state *st)
{
	struct modes_ctx *m = bench_ctx(st);
	int64_t sum;

	if (!m)
		return;
	sum = bga_counter_sum(m->c);
	if (sum != m->adds) {
		fprintf(stderr, "bga-micro: %s: sum %lld after %lld adds of 1\n", bga_counter_mode_name(m->c),
			(long long)sum, (long long)m->adds);
		abort();
	}
	bga_counter_destroy(m->c);
	free(m);
}

static void modes_start(struct bench_state *st, const struct modes_ctx *m, const char *path)
{
	char label[64];

	bench_pin(st);
	if (m->atomic)
		snprintf(label, sizeof(label), "atomic, %s", path);
	else
		snprintf(label, sizeof(label), "%s batch %d, %s", bga_counter_mode_name(m->c),
			 bga_counter_batch(m->c), path);
	bench_set_label(st, label);
}

static void modes_end(struct bench_state *st, struct modes_ctx *m, int64_t n)
{
	__atomic_fetch_add(&m->adds, n, __ATOMIC_RELAXED);
	bench_set_items(st, n);
}

static void modes_add_call(struct bench_state *st)
{
	struct modes_ctx *m = bench_ctx(st);
	int64_t n = 0;

	modes_start(st, m, "call");
	while (bench_keep_running_batch(st, MODES_BATCH)) {
		for (int i = 0; i < MODES_BATCH; i++)
			bga_counter_add(m->c, 1);
		n += MODES_BATCH;
	}
	modes_end(st, m, n);
}

static void modes_add_inline(struct bench_state *st)
{
	struct modes_ctx *m = bench_ctx(st);
	struct bga_counter *c = m->c;
	int64_t n = 0;

	modes_start(st, m, "inlined");
	while (bench_keep_running_batch(st, MODES_BATCH)) {
		if (m->atomic) {
			for (int i = 0; i < MODES_BATCH; i++)
				__atomic_fetch_add(&c->total, 1, __ATOMIC_RELAXED);
		} else {
			for (int i = 0; i < MODES_BATCH; i++)
				bga__counter_add(c, 1);
		}
		n += MODES_BATCH;
	}
	modes_end(st, m, n);
}

static void modes_add_limited_call(struct bench_state *st)
{
	struct modes_ctx *m = bench_ctx(st);
	int64_t n = 0;

	modes_start(st, m, "call");
	while (bench_keep_running_batch(st, MODES_BATCH)) {
		for (int i = 0; i < MODES_BATCH; i++)
			if (bga_counter_add_limited(m->c, 1, FAR_LIMIT) != 0)
				abort(); /* cannot refuse below FAR_LIMIT */
		n += MODES_BATCH;
	}
	modes_end(st, m, n);
}

/* In atomic mode the fast path is the whole limited add (a CAS loop on
 * the total); per-CPU, the slow call is taken when the slot folds. */
static void modes_add_limited_inline(struct bench_state *st)
{
	struct modes_ctx *m = bench_ctx(st);
	struct bga_counter *c = m->c;
	int64_t n = 0;

	modes_start(st, m, "inlined");
	while (bench_keep_running_batch(st, MODES_BATCH)) {
		for (int i = 0; i < MODES_BATCH; i++)
			if (bga__counter_add_limited(c, 1, FAR_LIMIT) != 0)
				abort();
		n += MODES_BATCH;
	}
	modes_end(st, m, n);
}

/* One registration per mode, path and add (Google Benchmark names a run
 * by its function). */
#define MODE_BENCH(name_, loop_, mode_, ...)                                                     \
	static void name_(struct bench_state *st)                                                  \
	{                                                                                          \
		loop_(st);                                                                         \
	}                                                                                          \
	BENCH(name_, .setup = modes_setup_##mode_, .teardown = modes_teardown, .threads = {1, 2}, \
	      __VA_ARGS__)
#define MODES_BATCHES .args = {0, 32, 1024}, .nargs = 3
#define MODES_NO_BATCH .nargs = 0

MODE_BENCH(counter_mode_add_atomic, modes_add_call, atomic, MODES_NO_BATCH);
MODE_BENCH(counter_mode_add_inline_atomic, modes_add_inline, atomic, MODES_NO_BATCH);
MODE_BENCH(counter_mode_add_limited_atomic, modes_add_limited_call, atomic, MODES_NO_BATCH);
MODE_BENCH(counter_mode_add_limited_inline_atomic, modes_add_limited_inline, atomic, MODES_NO_BATCH);
MODE_BENCH(counter_mode_add_percpu, modes_add_call, percpu, MODES_BATCHES);
MODE_BENCH(counter_mode_add_inline_percpu, modes_add_inline, percpu, MODES_BATCHES);
MODE_BENCH(counter_mode_add_limited_percpu, modes_add_limited_call, percpu, MODES_BATCHES);
MODE_BENCH(counter_mode_add_limited_inline_percpu, modes_add_limited_inline, percpu, MODES_BATCHES);
MODE_BENCH(counter_mode_add_percpu_cas, modes_add_call, percpu_cas, MODES_BATCHES);
MODE_BENCH(counter_mode_add_inline_percpu_cas, modes_add_inline, percpu_cas, MODES_BATCHES);
MODE_BENCH(counter_mode_add_limited_percpu_cas, modes_add_limited_call, percpu_cas, MODES_BATCHES);
MODE_BENCH(counter_mode_add_limited_inline_percpu_cas, modes_add_limited_inline, percpu_cas, MODES_BATCHES);
