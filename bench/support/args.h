/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Command-line numbers for the bench programs: a whole number in [lo, hi]
 * or a message and exit status 2, before anything is measured.  atoi and
 * strtoull take "-5" as 4294967291 or 18446744073709551611 and "abc" as
 * 0, and a benchmark then runs for ever or not at all; these refuse them.
 */
#ifndef BGA_BENCH_ARGS_H
#define BGA_BENCH_ARGS_H

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* s as a decimal (or 0x hex) number in [lo, hi]; otherwise says so on
 * stderr, naming prog and what, and exits 2. */
static inline uint64_t arg_u64(const char *prog, const char *what, const char *s, uint64_t lo, uint64_t hi)
{
	char *end;
	errno = 0;
	uint64_t v = s && *s >= '0' && *s <= '9' ? strtoull(s, &end, 0) : 0;
	if (!s || *s < '0' || *s > '9' || *end != '\0' || errno || v < lo || v > hi) {
		fprintf(stderr, "%s: %s must be a whole number from %" PRIu64 " to %" PRIu64 ", not '%s'\n", prog,
			what, lo, hi, s ? s : "");
		exit(2);
	}
	return v;
}

/* arg_u64 for an int. */
static inline int arg_int(const char *prog, const char *what, const char *s, int lo, int hi)
{
	return (int)arg_u64(prog, what, s, (uint64_t)lo, (uint64_t)hi);
}

#endif
