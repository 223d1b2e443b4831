/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Counter microbenchmarks: add in per-CPU vs atomic mode at 1..64 threads,
 * add_limited far from its limit, the cost of read and sum, and the cost of
 * reading the CPU id.  Run:
 *   bga-micro --benchmark_filter=counter_ --benchmark_repetitions=5 \
 *             --benchmark_report_aggregates_only=true
 * and, for the getcpu fallback, the same with GLIBC_TUNABLES=glibc.pthread.rseq=0.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

#include <bgalloc/counter.h>

#include "cpu.h"
#include "shim.h"

#define CTR_BATCH 64

static void ctr_setup(struct bench_state *st, enum bga_counter_mode mode)
{
	struct bga_counter *c;

	if (bga_counter_create(&c, 0, 0, mode)) {
		bench_skip(st, "bga_counter_create failed");
		return;
	}
	bench_set_ctx(st, c);
}

static void ctr_setup_percpu(struct bench_state *st)
{
	ctr_setup(st, BGA_COUNTER_PERCPU);
}

static void ctr_setup_atomic(struct bench_state *st)
{
	ctr_setup(st, BGA_COUNTER_ATOMIC);
}

static void ctr_teardown(struct bench_state *st)
{
	bga_counter_destroy(bench_ctx(st));
}

static void ctr_add_loop(struct bench_state *st)
{
	struct bga_counter *c = bench_ctx(st);
	int64_t n = 0;

	while (bench_keep_running_batch(st, CTR_BATCH)) {
		for (int i = 0; i < CTR_BATCH; i++)
			bga_counter_add(c, 1);
		n += CTR_BATCH;
	}
	bench_set_items(st, n);
}

static void counter_add_percpu(struct bench_state *st)
{
	ctr_add_loop(st);
}
BENCH(counter_add_percpu, .setup = ctr_setup_percpu, .teardown = ctr_teardown,
      .threads = {1, 2, 4, 16, 64});

static void counter_add_atomic(struct bench_state *st)
{
	ctr_add_loop(st);
}
BENCH(counter_add_atomic, .setup = ctr_setup_atomic, .teardown = ctr_teardown,
      .threads = {1, 2, 4, 16, 64});

/* Alternating +1/-1 keeps the slot from ever folding: the pure fast path. */
static void counter_add_nofold_percpu(struct bench_state *st)
{
	struct bga_counter *c = bench_ctx(st);
	int64_t n = 0;

	while (bench_keep_running_batch(st, CTR_BATCH)) {
		for (int i = 0; i < CTR_BATCH; i++)
			bga_counter_add(c, (i & 1) ? -1 : 1);
		n += CTR_BATCH;
	}
	bench_set_items(st, n);
}
BENCH(counter_add_nofold_percpu, .setup = ctr_setup_percpu, .teardown = ctr_teardown,
      .threads = {1, 2});

/* Far from the limit, so the lock-free path decides; every `batch` adds
 * per CPU still seal all slots to grow the total (see counter.c). */
static void ctr_limited_loop(struct bench_state *st)
{
	struct bga_counter *c = bench_ctx(st);
	int64_t n = 0;

	while (bench_keep_running_batch(st, CTR_BATCH)) {
		for (int i = 0; i < CTR_BATCH; i++)
			if (bga_counter_add_limited(c, 1, INT64_MAX / 2))
				bench_skip(st, "unexpected -ENOSPC");
		n += CTR_BATCH;
	}
	bench_set_items(st, n);
}

static void counter_add_limited_percpu(struct bench_state *st)
{
	ctr_limited_loop(st);
}
BENCH(counter_add_limited_percpu, .setup = ctr_setup_percpu, .teardown = ctr_teardown,
      .threads = {1, 2});

static void counter_add_limited_atomic(struct bench_state *st)
{
	ctr_limited_loop(st);
}
BENCH(counter_add_limited_atomic, .setup = ctr_setup_atomic, .teardown = ctr_teardown,
      .threads = {1, 2});

static void counter_read(struct bench_state *st)
{
	struct bga_counter *c = bench_ctx(st);
	int64_t n = 0, acc = 0;

	while (bench_keep_running_batch(st, CTR_BATCH)) {
		for (int i = 0; i < CTR_BATCH; i++)
			acc += bga_counter_read(c);
		n += CTR_BATCH;
	}
	if (acc == 1)
		bench_set_counter(st, "never", 0); /* keeps acc alive */
	bench_set_items(st, n);
}
BENCH(counter_read, .setup = ctr_setup_percpu, .teardown = ctr_teardown, .threads = {1});

static void counter_sum_percpu(struct bench_state *st)
{
	struct bga_counter *c = bench_ctx(st);
	int64_t n = 0, acc = 0;

	while (bench_keep_running_batch(st, CTR_BATCH)) {
		for (int i = 0; i < CTR_BATCH; i++)
			acc += bga_counter_sum(c);
		n += CTR_BATCH;
	}
	if (acc == 1)
		bench_set_counter(st, "never", 0);
	bench_set_items(st, n);
}
BENCH(counter_sum_percpu, .setup = ctr_setup_percpu, .teardown = ctr_teardown, .threads = {1});

/* The CPU id as the counter gets it (rseq, or getcpu when rseq is off). */
static void counter_cpu_current(struct bench_state *st)
{
	int64_t n = 0;
	unsigned acc = 0;

	while (bench_keep_running_batch(st, CTR_BATCH)) {
		for (int i = 0; i < CTR_BATCH; i++)
			acc += bga__cpu_current();
		n += CTR_BATCH;
	}
	bench_set_counter(st, "rseq", bga__cpu_source()[0] == 'r');
	if (acc == 0xdeadbeef)
		bench_set_counter(st, "never", 0);
	bench_set_items(st, n);
}
BENCH(counter_cpu_current, .threads = {1});

/* glibc's sched_getcpu, for comparison (itself reads rseq when it can). */
static void counter_cpu_sched_getcpu(struct bench_state *st)
{
	int64_t n = 0;
	unsigned acc = 0;

	while (bench_keep_running_batch(st, CTR_BATCH)) {
		for (int i = 0; i < CTR_BATCH; i++)
			acc += (unsigned)sched_getcpu();
		n += CTR_BATCH;
	}
	if (acc == 0xdeadbeef)
		bench_set_counter(st, "never", 0);
	bench_set_items(st, n);
}
BENCH(counter_cpu_sched_getcpu, .threads = {1});
