/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_BENCH_SHIM_H
#define BGA_BENCH_SHIM_H

/*
 * A C face for Google Benchmark, so benchmarks are written in C:
 *
 *   static void bm_add(struct bench_state *st) {
 *           struct ctx *c = bench_ctx(st);
 *           while (bench_keep_running_batch(st, 64))
 *                   for (int i = 0; i < 64; i++) do_one(c);
 *   }
 *   BENCH(bm_add, .setup = setup_fn, .teardown = teardown_fn,
 *         .threads = {1, 2, 4, 16, 64}, .args = {...});
 *
 * Every benchmark is timed on wall-clock time (UseRealTime), so a run with
 * N threads reports total throughput; items_per_second counts every item
 * of every thread.
 *
 * setup runs once per (args, threads) run, before any thread starts, and
 * may store a context with bench_set_ctx(); teardown runs once after all
 * threads have stopped.  Threads of one run share that context.
 */

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct bench_state;
typedef void (*bench_fn)(struct bench_state *st);

#define BENCH_MAX_THREADS_LIST 16
#define BENCH_MAX_ARGS 16

struct bench_def {
	const char *name;
	bench_fn fn;
	bench_fn setup;    /* optional; runs single-threaded before the run */
	bench_fn teardown; /* optional; runs single-threaded after the run */
	int threads[BENCH_MAX_THREADS_LIST];  /* 0-terminated; empty = {1} */
	int64_t args[BENCH_MAX_ARGS];         /* used when nargs > 0 */
	int nargs;
	int64_t arg_default;                  /* unused; keeps designated inits simple */
};

/* Register a benchmark (from a constructor; see BENCH). Copies *def. */
void bench_register(const struct bench_def *def);

/* Loop control: true while the timer wants `batch` more iterations. */
bool bench_keep_running_batch(struct bench_state *st, uint64_t batch);

int bench_thread_index(const struct bench_state *st);
int bench_threads(const struct bench_state *st);
/* The run's argument (range(0)), or 0 when the benchmark has no args. */
int64_t bench_arg(const struct bench_state *st);

/* The per-run context, set in setup. */
void *bench_ctx(const struct bench_state *st);
void bench_set_ctx(struct bench_state *st, void *ctx);

/* Items this thread processed (summed over threads into items_per_second). */
void bench_set_items(struct bench_state *st, int64_t items);
/* A user counter, averaged over threads (e.g. extents per file). */
void bench_set_counter(struct bench_state *st, const char *name, double value);
/* Report an error for this run; the loop then stops. */
void bench_skip(struct bench_state *st, const char *msg);
/* A label printed beside this run's result (Google Benchmark's SetLabel). */
void bench_set_label(struct bench_state *st, const char *label);
/* A key/value for the report's context header (console and JSON); call
 * before bench_main runs the benchmarks, e.g. from a constructor.  Copies
 * both strings. */
void bench_add_context(const char *key, const char *value);

/*
 * Bind the calling benchmark thread to one CPU, round-robin by thread
 * index over the CPUs the process may use, as will-it-scale binds its
 * tasks: unbound, the scheduler sometimes runs two threads of a 2-thread
 * run on one CPU, and a spinning waiter then times the scheduler rather
 * than the code.  Threads beyond the CPU count share CPUs evenly.
 */
void bench_pin(const struct bench_state *st);

/* Parse Google Benchmark flags and run everything registered. */
int bench_main(int argc, char **argv);

#define BENCH(fn_, ...)                                                          \
	__attribute__((constructor)) static void bench_reg_##fn_(void)           \
	{                                                                        \
		static const struct bench_def d = {.name = #fn_, .fn = fn_, __VA_ARGS__}; \
		bench_register(&d);                                              \
	}

#ifdef __cplusplus
}
#endif

#endif
