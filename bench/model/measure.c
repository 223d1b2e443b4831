// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The check's measure (bga-model-plain --measure A,B): the model's own
 * workload (workloads.c) on the release library, on two real CPUs, in short
 * slices, each with the line transfer time measured between the same two
 * CPUs right before and right after it:
 *
 *   x0    xfer_line_ns(A, B) (bench/support/xfer.h);
 *   two   the model's two cores, on A and B, one volume;
 *   x1    again;
 *   pair  one core on A and one on B at once, a volume each: two copies
 *         of the work sharing nothing, the ceiling of this work here;
 *   one   one core on A, a volume of its own;
 *   x2    again.
 *
 * One JSON object a line per slice: ops/s of each phase, the least CPU
 * share of a thread in each (one, pair, two: below 1 when another
 * program took the CPU), the three transfer times, and the group locks
 * the two cores took, their trylocks that found one held, and the most
 * any one lock slot was taken.  report.py predicts each slice at its own x and its own
 * one-core time, and compares with two/pair (2T/1T over the ceiling).
 * The host moves this VM's two vCPUs between placements that transfer a
 * line in ~50 or ~200 ns, within a second; a slice whose three x differ
 * much straddled a move, and report.py sets it aside.  Each phase runs
 * `slice_s` seconds after its threads' setup and warm-up, timed from a
 * barrier that starts them together.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bgalloc/locktab.h>

#include "measure.h"
#include "xfer.h"

#define XFER_PINGS 20000u

struct phase_thread {
	struct run *r;
	struct core *c;
	int cpu;
	pthread_barrier_t *ready;
	volatile int *stop;
	uint64_t ops;
	double cpu_s; /* CPU time while measured */
	pthread_t th;
};

static double thread_cpu_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *phase_main(void *arg)
{
	struct phase_thread *p = arg;
	long warm = model_warm_ops(p->r->w);

	pin_to_cpu(p->cpu);
	model_setup(p->r, p->c);
	for (long k = 0; k < warm; k++)
		model_op(p->r, p->c);
	pthread_barrier_wait(p->ready);
	double c0 = thread_cpu_s();
	uint64_t n = 0;
	while (!__atomic_load_n(p->stop, __ATOMIC_RELAXED)) {
		for (int k = 0; k < 64; k++)
			model_op(p->r, p->c);
		n += 64;
	}
	p->ops = n;
	p->cpu_s = thread_cpu_s() - c0;
	pthread_barrier_wait(p->ready);
	model_teardown(p->r, p->c);
	return NULL;
}

/*
 * Run `n` threads (cpus[i]) for `secs` after all have warmed up: runs[i]
 * is thread i's run (the same run twice: two cores of one volume).
 * Returns the ops per second of all together; *share: the least CPU
 * share of a thread (its CPU time over the phase's wall time).
 */
static double phase(struct run **runs, const int *cpus, int n, double secs, double *share)
{
	struct phase_thread t[2];
	struct core *cores = aligned_alloc(128, sizeof(*cores) * 2);
	pthread_barrier_t ready;
	volatile int stop = 0;
	double ops = 0, t0, t1;

	memset(cores, 0, sizeof(*cores) * 2);
	pthread_barrier_init(&ready, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++) {
		/* a core's number in its volume: 0 and 1 when two share one */
		cores[i].idx = i > 0 && runs[i] == runs[0] ? i : 0;
		rng_seed(&cores[i].rng, 1 + (uint64_t)runs[i]->w, (uint64_t)cores[i].idx);
		t[i] = (struct phase_thread){.r = runs[i], .c = &cores[i], .cpu = cpus[i], .ready = &ready, .stop = &stop};
		if (pthread_create(&t[i].th, NULL, phase_main, &t[i])) {
			fprintf(stderr, "bga-model: cannot start a thread\n");
			exit(1);
		}
	}
	pthread_barrier_wait(&ready);
	t0 = now_s();
	struct timespec d = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
	while (nanosleep(&d, &d) && errno == EINTR)
		;
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_barrier_wait(&ready);
	t1 = now_s();
	*share = 1;
	for (int i = 0; i < n; i++) {
		pthread_join(t[i].th, NULL);
		ops += (double)t[i].ops;
		if (t[i].cpu_s / (t1 - t0) < *share)
			*share = t[i].cpu_s / (t1 - t0);
	}
	pthread_barrier_destroy(&ready);
	free(cores);
	return ops / (t1 - t0);
}

/* Group locks taken and trylocks that found one held, in all: whether
 * the two cores met on a lock (a trylock that fails steers a request
 * away: alloc.h), beside the model's trylocks that found a lock held at
 * the modelled instant (rt.c's tryfails). */
static void lock_counts(struct bga_volume *vol, uint64_t *taken, uint64_t *failed, uint64_t *top)
{
	struct bga_stats st;
	*taken = *failed = *top = 0;
	if (bga_stats(vol, &st))
		return;
	for (uint32_t k = 0; k < st.lock_slots; k++) {
		struct bga_lock_stats ls;
		if (bga_lock_stats(vol, k, &ls) == 0) {
			*taken += ls.acquisitions;
			*failed += ls.try_failed;
			if (ls.acquisitions > *top)
				*top = ls.acquisitions;
		}
	}
}

static int target(struct run *r, enum wl w, int ncores)
{
	*r = (struct run){.w = w, .v = V_BGA, .ncores = ncores};
	int rc = model_target_create(r);
	if (rc)
		fprintf(stderr, "bga-model: %s: %s\n", wl_name[w], bga_strerror(rc));
	return rc;
}

int model_measure(enum wl w, int cpu_a, int cpu_b, int slices, double slice_s, FILE *out)
{
	int both[2] = {cpu_a, cpu_b};

	for (int k = 0; k < slices; k++) {
		struct run r1, r2, rs;
		struct run *one[1] = {&r1}, *pair[2] = {&r1, &r2}, *two[2] = {&rs, &rs};
		double c1, cp, c2;
		double x0 = xfer_line_ns(cpu_a, cpu_b, XFER_PINGS);
		if (target(&rs, w, 2))
			return 1;
		double s2 = phase(two, both, 2, slice_s, &c2);
		uint64_t taken, failed, top;
		lock_counts(rs.vol, &taken, &failed, &top);
		model_target_destroy(&rs);
		double x1 = xfer_line_ns(cpu_a, cpu_b, XFER_PINGS);
		if (target(&r1, w, 1) || target(&r2, w, 1))
			return 1;
		double sp = phase(pair, both, 2, slice_s, &cp);
		model_target_destroy(&r1);
		model_target_destroy(&r2);
		if (target(&r1, w, 1))
			return 1;
		double s1 = phase(one, both, 1, slice_s, &c1);
		model_target_destroy(&r1);
		double x2 = xfer_line_ns(cpu_a, cpu_b, XFER_PINGS);
		fprintf(out,
			"{\"workload\": \"%s\", \"slice\": %d, \"cpus\": [%d, %d], \"x_ns\": [%.1f, %.1f, %.1f], "
			"\"one_ops_per_s\": %.0f, \"pair_ops_per_s\": %.0f, \"two_ops_per_s\": %.0f, "
			"\"cpu_share\": [%.3f, %.3f, %.3f], \"two_locks\": %" PRIu64 ", \"two_try_failed\": %" PRIu64
			", \"two_top_slot\": %" PRIu64 ", \"slice_s\": %.3f}\n",
			wl_name[w], k, cpu_a, cpu_b, x0, x1, x2, s1, sp, s2, c1, cp, c2, taken, failed, top, slice_s);
		fflush(out);
	}
	return 0;
}
