/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_COMPILER_H
#define BGA_COMPILER_H

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#define bga_likely(x) __builtin_expect(!!(x), 1)
#define bga_unlikely(x) __builtin_expect(!!(x), 0)

/* Cache line used for padding; 128 covers adjacent-line prefetch on x86. */
#define BGA_CACHELINE 128

/*
 * BGA_ASSERT checks an invariant in debug builds (BGA_DEBUG) and compiles
 * to nothing otherwise.  It aborts with the failing expression.
 */
#ifdef BGA_DEBUG
#define BGA_ASSERT(e)                                                                   \
	do {                                                                            \
		if (bga_unlikely(!(e))) {                                               \
			fprintf(stderr, "bgalloc: %s:%d: invariant failed: %s\n", __FILE__,  \
				__LINE__, #e);                                          \
			abort();                                                        \
		}                                                                       \
	} while (0)
#else
#define BGA_ASSERT(e) ((void)0)
#endif

#define BGA_MIN(a, b) ((a) < (b) ? (a) : (b))
#define BGA_MAX(a, b) ((a) > (b) ? (a) : (b))

#endif
