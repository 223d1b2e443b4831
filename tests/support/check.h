/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_TEST_CHECK_H
#define BGA_TEST_CHECK_H

/*
 * The check of the plain test programs (the stress programs, which run
 * under ThreadSanitizer where Criterion cannot): CHECK_FAILED(PROG, cond,
 * fmt, ...) is 0 when cond holds; else it says "PROG: FILE:LINE: " and the
 * message on stderr and is 1.  Each program says what a failure does:
 *
 *	#define CHECK(cond, ...) do { if (CHECK_FAILED("stress_x", cond, __VA_ARGS__)) failures++; } while (0)
 */

#include <stdio.h>

#define CHECK_FAILED(prog, cond, ...)                                                                   \
	(!(cond) && (fprintf(stderr, "%s: %s:%d: ", prog, __FILE__, __LINE__), fprintf(stderr, __VA_ARGS__), \
		     fputc('\n', stderr), 1))

#endif
