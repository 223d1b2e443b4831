/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Counter microbenchmarks of the per-CPU mode alone: the add as a function
 * of the batch, the fold-free fast path, the cost of read and sum, and the
 * cost of reading the CPU id.  Comparisons between modes (atomic, per-CPU
 * on rseq or CAS, limited adds) are bga-lab's (`bga-lab counter`,
 * tools/lab), which checks each run's CPU share and the machine's
 * ceiling and gives a verdict: one tool for that question, not two that
 * can disagree (what each mode costs called into the static library or
 * inlined is bench_counter_modes.c's, beside it).  Each run's label names the counter's path and the CPU-id
 * source, and the report's context header says what this process got
 * (counter_path, counter_cpu_source).  Threads are bound round-robin to the
 * allowed CPUs (bench_pin), as bga-scale does.
 * Run:
 *   bga-micro --benchmark_filter=counter_ --benchmark_repetitions=5 \
 *             --benchmark_enable_random_interleaving=true \
 *             --benchmark_report_aggregates_only=true
 * and, for the getcpu fallback, the same with GLIBC_TUNABLES=glibc.pthread.rseq=0.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <bgalloc/counter.h>

/* Inside the library (tests/cycles/reach.txt): the CPU id the counter
 * reads is measured beside it (bga__cpu_current) and each result names
 * its source (bga__cpu_source); no public call exposes either. */
#include "cpu.h"
#include "shim.h"

#define CTR_BATCH 64

static void ctr_setup_percpu(struct bench_state *st)
{
	struct bga_counter *c;

	if (bga_counter_create(&c, 0, 0, BGA_COUNTER_PERCPU)) {
		bench_skip(st, "bga_counter_create failed");
		return;
	}
	bench_set_ctx(st, c);
}

/* "percpu-rseq cpu=rseq": the counter's path and this thread's CPU-id
 * source, beside each result. */
static void ctr_label(struct bench_state *st, const struct bga_counter *c)
{
	char label[64];

	snprintf(label, sizeof(label), "%s cpu=%s", bga_counter_mode_name(c), bga__cpu_source());
	bench_set_label(st, label);
}

/* What this process got, in the report's header. */
__attribute__((constructor)) static void ctr_context(void)
{
	struct bga_counter *c;

	bench_add_context("counter_cpu_source", bga__cpu_source());
	if (bga_counter_create(&c, 0, 0, BGA_COUNTER_PERCPU) == 0) {
		bench_add_context("counter_path", bga_counter_mode_name(c));
		bga_counter_destroy(c);
	}
}

static void ctr_teardown(struct bench_state *st)
{
	bga_counter_destroy(bench_ctx(st));
}

static void ctr_add_loop(struct bench_state *st)
{
	struct bga_counter *c = bench_ctx(st);
	int64_t n = 0;

	bench_pin(st);
	ctr_label(st, c);
	while (bench_keep_running_batch(st, CTR_BATCH)) {
		for (int i = 0; i < CTR_BATCH; i++)
			bga_counter_add(c, 1);
		n += CTR_BATCH;
	}
	bench_set_items(st, n);
}

/*
 * The fold's price as a function of the batch: every batch - 1 adds a
 * CPU folds its slot into the total under the counter's lock, which moves
 * the lock's and total's line from the other CPU.  At 2 threads the time
 * per add is about the fold-free add plus one line transfer / (batch - 1)
 * (BENCHMARKS.md#the-folds-floor-by-batch).  Argument: the batch.
 */
static void ctr_setup_percpu_batch(struct bench_state *st)
{
	struct bga_counter *c;

	if (bga_counter_create(&c, 0, (int32_t)bench_arg(st), BGA_COUNTER_PERCPU)) {
		bench_skip(st, "bga_counter_create failed");
		return;
	}
	bench_set_ctx(st, c);
}

static void counter_add_percpu_batch(struct bench_state *st)
{
	ctr_add_loop(st);
}
BENCH(counter_add_percpu_batch, .setup = ctr_setup_percpu_batch, .teardown = ctr_teardown, .threads = {1, 2},
      .args = {32, 64, 128, 256, 1024}, .nargs = 5);

/* Alternating +1/-1 keeps the slot from ever folding: the pure fast path. */
static void counter_add_nofold_percpu(struct bench_state *st)
{
	struct bga_counter *c = bench_ctx(st);
	int64_t n = 0;

	bench_pin(st);
	ctr_label(st, c);
	while (bench_keep_running_batch(st, CTR_BATCH)) {
		for (int i = 0; i < CTR_BATCH; i++)
			bga_counter_add(c, (i & 1) ? -1 : 1);
		n += CTR_BATCH;
	}
	bench_set_items(st, n);
}
BENCH(counter_add_nofold_percpu, .setup = ctr_setup_percpu, .teardown = ctr_teardown,
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
