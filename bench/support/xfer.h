/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_BENCH_XFER_H
#define BGA_BENCH_XFER_H

/*
 * The cost of moving one cache line between two CPUs: two threads, one
 * bound to each, bounce a counter; half a round trip is one transfer.
 * On the development VM it moved between 50 and 420 ns within one day
 * (the host decides where the two vCPUs run), and every figure whose
 * threads share lines moves with it, so the drivers print it beside them.
 */

/* Needs _GNU_SOURCE (pthread_setaffinity_np), defined by the includer
 * before its first system header. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#include "rng.h"

/* Bind the calling thread to `cpu`; 0 or an errno value. */
static inline int pin_to_cpu(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

#define XFER_STOP UINT64_MAX /* the other side could not start */

struct xfer_side {
	volatile uint64_t *flag;
	int cpu;
	unsigned pings;
	int first;   /* 1: writes the odd values and times the run */
	double secs;
};

static void *xfer_run(void *arg)
{
	struct xfer_side *s = arg;
	uint64_t mine = (uint64_t)(s->first ? 1 : 2), theirs = (uint64_t)(s->first ? 0 : 1);
	pin_to_cpu(s->cpu);
	double t0 = now_s();
	for (unsigned i = 0; i < s->pings; i++, mine += 2, theirs += 2) {
		uint64_t seen;
		while ((seen = *s->flag) != theirs)
			if (seen == XFER_STOP)
				return NULL;
		*s->flag = mine;
	}
	s->secs = now_s() - t0;
	return NULL;
}

/* ns per line transfer between cpu_a and cpu_b over `pings` round trips,
 * or -1 when a thread cannot start.  The caller's own binding is left
 * alone. */
static inline double xfer_line_ns(int cpu_a, int cpu_b, unsigned pings)
{
	static volatile uint64_t flag __attribute__((aligned(128)));
	struct xfer_side a = {&flag, cpu_a, pings, 1, 0}, b = {&flag, cpu_b, pings, 0, 0};
	pthread_t ta, tb;
	flag = 0;
	if (pthread_create(&tb, NULL, xfer_run, &b) != 0)
		return -1;
	if (pthread_create(&ta, NULL, xfer_run, &a) != 0) {
		flag = XFER_STOP;
		pthread_join(tb, NULL);
		return -1;
	}
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	return a.secs / pings * 1e9 / 2;
}

#endif
