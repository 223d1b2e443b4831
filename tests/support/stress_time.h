/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_STRESS_TIME_H
#define BGA_STRESS_TIME_H

/*
 * How long a stress program (tests/stress/stress_*.c) or the fuzz corpus replay
 * runs: BGA_STRESS_SECONDS seconds (a decimal number), or the program's
 * short default, which keeps `make test` quick.  `make soak` sets it to
 * minutes.  The time bounds how long a program looks for a race; it never
 * decides a result.
 */

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define BGA_STRESS_ENV "BGA_STRESS_SECONDS"
#define BGA_STRESS_DEFAULT_SECONDS 2.0

/* The duration asked for, or dflt when the variable is unset or bad. */
static inline double stress_seconds(double dflt)
{
	const char *s = getenv(BGA_STRESS_ENV);
	if (s == NULL || *s == '\0')
		return dflt;
	char *end;
	double v = strtod(s, &end);
	return *end == '\0' && v > 0 && v < 1e7 ? v : dflt;
}

static inline uint64_t stress_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A deadline `seconds` from now, in stress_now_ns() units. */
static inline uint64_t stress_deadline(double seconds)
{
	return stress_now_ns() + (uint64_t)(seconds * 1e9);
}

static inline bool stress_expired(uint64_t deadline)
{
	return stress_now_ns() >= deadline;
}

/*
 * For loops that run at least min_ops times and then until the deadline:
 * reads the clock once every 256 iterations only.
 */
static inline bool stress_go_on(uint64_t i, uint64_t min_ops, uint64_t deadline)
{
	if (i < min_ops)
		return true;
	return (i & 255) != 0 || !stress_expired(deadline);
}

/* Count a failure in *failures and, for the first `most`, say it on
 * stderr as "PROG: WHAT (A)". */
static inline void stress_fail(int *failures, int most, const char *prog, const char *what, uint64_t a)
{
	if (__atomic_fetch_add(failures, 1, __ATOMIC_RELAXED) < most)
		fprintf(stderr, "%s: %s (%llu)\n", prog, what, (unsigned long long)a);
}

#endif
