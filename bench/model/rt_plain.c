// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * rt.h's calls doing nothing: bga-model-plain runs the same rounds on the
 * uninstrumented library, for callgrind's instruction count and the
 * CPU time per operation (bench/model/model.sh).
 */
#include "rt.h"

void rt_set_core(int core)
{
	(void)core;
}
void rt_measure(int on)
{
	(void)on;
}
void rt_op_done(void)
{
}
void rt_reset(void)
{
}
void rt_lock_range(const void *base, size_t n, size_t stride, const char *name)
{
	(void)base, (void)n, (void)stride, (void)name;
}
void rt_rseq_slots(const void *base, size_t n, size_t stride)
{
	(void)base, (void)n, (void)stride;
}
void rt_object(const void *base, size_t n, size_t size, const char *type)
{
	(void)base, (void)n, (void)size, (void)type;
}
void rt_report(FILE *f, int top_lines)
{
	(void)f, (void)top_lines;
}
void rt_clock_config(double ipa, double xfer, int holds)
{
	(void)ipa, (void)xfer, (void)holds;
}
double rt_clock(int core)
{
	(void)core;
	return 0;
}
void rt_clock_sync(int n)
{
	(void)n;
}
int rt_counting(void)
{
	return 0;
}
