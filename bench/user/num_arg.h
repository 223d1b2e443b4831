/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The command-line numbers of the user benchmarks beside it
 * (counter_bench.c, lock_bench.c): found beside them by #include "...",
 * so that each still builds alone with
 *   cc NAME.c $(pkg-config --cflags --libs bgalloc) -pthread
 */
#ifndef BGA_USER_NUM_ARG_H
#define BGA_USER_NUM_ARG_H

#include <stdlib.h>

/* argv[i] as a whole number in [lo, hi], dflt when absent, -1 when it is
 * not one (a sign, letters, out of range): atoi would take "-1" as a key
 * count of 4294967295. */
static long num_arg(int argc, char **argv, int i, long dflt, long lo, long hi)
{
	char *end;
	if (i >= argc)
		return dflt;
	if (argv[i][0] < '0' || argv[i][0] > '9')
		return -1;
	long v = strtol(argv[i], &end, 10);
	return *end == '\0' && v >= lo && v <= hi ? v : -1;
}

#endif
