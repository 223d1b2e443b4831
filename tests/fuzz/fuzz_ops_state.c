/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz_ops: the checks every call makes against the model, and what they
 * report (fuzz_ops_state.h); the lowest part of the harness, calling none
 * of the others.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <bgalloc.h>

#include "fuzz_ops_state.h"

void fail(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_ops: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

void expect_rc(struct fz *f, const char *what, int rc, int want)
{
	if (rc != want)
		fail("op %u: %s returned %d (%s), model expects %d (%s)", f->op, what, rc, bga_strerror(rc), want,
		     bga_strerror(want));
}

/* Everything (refmodel_compare). */
void compare(struct fz *f)
{
	if (refmodel_compare(&f->m, f->vol))
		fail("op %u: %s", f->op, f->m.err);
}

/* The blocks a call changed, for the compare after it. */
void touch(struct fz *f, uint64_t start, uint64_t len)
{
	if (len == 0)
		return;
	if (f->touch_lo >= f->touch_hi || start < f->touch_lo)
		f->touch_lo = start;
	if (start + len > f->touch_hi)
		f->touch_hi = start + len;
}

void before_call(struct fz *f, bool may_fail, bool deep)
{
	f->have_before = may_fail;
	if (may_fail)
		expect_rc(f, "shown_take", shown_take(f->vol, f->rsv, MAX_RSV, deep && !f->lazy, &f->before), 0);
}
