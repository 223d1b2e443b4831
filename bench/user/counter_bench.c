/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A user's benchmark of the per-CPU counter against one shared atomic,
 * written against the installed library only:
 *   cc counter_bench.c $(pkg-config --cflags --libs bgalloc) -pthread
 *   ./counter_bench [THREADS [MILLISECONDS [REPS]]]
 * Runs the two modes in turn, REPS times, and prints each run's adds/s and
 * CPU share (CPU time / (wall x min(threads, CPUs))), then the median
 * ratio.  It measures what a program calling bga_counter_add() gets.  Its
 * defaults, printed first: threads not pinned, the library's batch, wall
 * clock, atomic then percpu in every repetition (bga-lab(1) rotates the
 * order, takes 9 repetitions of 0.1 s and gives p-values and CIs).  When the
 * threads did not get the CPUs (median share under 0.80) the wall-clock
 * ratio is no answer, and it says so instead of printing one; at 1 thread
 * the ratio of adds per CPU-second still is.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <bgalloc/counter.h>

#include "num_arg.h"

struct arg {
	struct bga_counter *c;
	volatile int *stop;
	unsigned long long adds;
	double cpu_s;
};

static double now(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *adder(void *p)
{
	struct arg *a = p;
	double c0 = now(CLOCK_THREAD_CPUTIME_ID);
	while (!__atomic_load_n(a->stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < 1024; i++)
			bga_counter_add(a->c, 1);
		a->adds += 1024;
	}
	a->cpu_s = now(CLOCK_THREAD_CPUTIME_ID) - c0;
	return NULL;
}

/* One run: adds per second; *share gets the CPU share, *per_cpu the adds per CPU-second. */
static double run(enum bga_counter_mode mode, int threads, int ms, double *share, double *per_cpu)
{
	struct bga_counter *c;
	pthread_t th[256];
	struct arg a[256];
	volatile int stop = 0;
	unsigned long long total = 0;
	double cpu = 0;

	if (bga_counter_create(&c, 0, 0, mode) != 0) {
		fprintf(stderr, "counter_bench: bga_counter_create failed\n");
		exit(1);
	}
	double t0 = now(CLOCK_MONOTONIC);
	for (int i = 0; i < threads; i++) {
		a[i] = (struct arg){.c = c, .stop = &stop};
		pthread_create(&th[i], NULL, adder, &a[i]);
	}
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
	stop = 1;
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		total += a[i].adds;
		cpu += a[i].cpu_s;
	}
	double wall = now(CLOCK_MONOTONIC) - t0;
	if (bga_counter_sum(c) != (int64_t)total) {
		fprintf(stderr, "counter_bench: the exact sum is not the number of adds\n");
		exit(1);
	}
	bga_counter_destroy(c);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	*share = cpu / (wall * (threads < ncpu || ncpu < 1 ? threads : ncpu));
	*per_cpu = cpu > 0 ? total / cpu : 0;
	return total / wall;
}

static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
	int threads = (int)num_arg(argc, argv, 1, 1, 1, 256), ms = (int)num_arg(argc, argv, 2, 100, 1, 3600000);
	int reps = (int)num_arg(argc, argv, 3, 5, 1, 64);
	double ratio[64];

	if (threads < 0 || ms < 0 || reps < 0 || argc > 4) {
		fprintf(stderr, "usage: counter_bench [THREADS(1-256) [MILLISECONDS(1-3600000) [REPS(1-64)]]]\n");
		return 2;
	}
	double cpu_ratio[64], share[64];
	printf("counter_bench: %d threads, not pinned, batch: the library's rule, %d ms a run, wall clock,\n"
	       "atomic then percpu in each of %d repetitions\n",
	       threads, ms, reps);
	for (int r = 0; r < reps; r++) {
		double sa, sp, ca, cp;
		double at = run(BGA_COUNTER_ATOMIC, threads, ms, &sa, &ca);
		double pc = run(BGA_COUNTER_PERCPU, threads, ms, &sp, &cp);
		ratio[r] = pc / at;
		cpu_ratio[r] = ca > 0 ? cp / ca : 0;
		share[r] = sa < sp ? sa : sp;
		printf("rep %d: atomic %.1fM adds/s (cpu share %.2f), percpu %.1fM adds/s (cpu share %.2f), percpu/atomic %.2fx\n",
		       r, at / 1e6, sa, pc / 1e6, sp, ratio[r]);
	}
	qsort(ratio, reps, sizeof(ratio[0]), cmp);
	qsort(cpu_ratio, reps, sizeof(cpu_ratio[0]), cmp);
	qsort(share, reps, sizeof(share[0]), cmp);
#define MEDIAN(x) (reps % 2 ? (x)[reps / 2] : ((x)[reps / 2 - 1] + (x)[reps / 2]) / 2)
	if (MEDIAN(share) < 0.80)
		printf("median percpu/atomic at %d threads: cannot decide (cpu share %.2f < 0.80: the threads did not get "
		       "the CPUs)\n",
		       threads, MEDIAN(share));
	else
		printf("median percpu/atomic at %d threads: %.2fx (over %d runs; bga-lab(1) says whether it is "
		       "significant)\n",
		       threads, MEDIAN(ratio), reps);
	if (threads == 1)
		printf("median percpu/atomic per CPU-second at 1 thread: %.2fx (valid under load: the thread's CPU time is "
		       "its work)\n",
		       MEDIAN(cpu_ratio));
	return 0;
}
