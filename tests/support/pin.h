/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_TEST_PIN_H
#define BGA_TEST_PIN_H

/*
 * Pin the calling thread to one CPU it may run on, for tests of what the
 * library keeps per CPU (a goal-less request's home, steering, what files
 * showed): the first CPU of its affinity set; *old gets that set, to put
 * back with test_unpin.  0, or the errno of sched_{get,set}affinity.
 * Define _GNU_SOURCE before any include.
 */

#include <errno.h>
#include <sched.h>

static inline int test_pin_one_cpu(cpu_set_t *old)
{
	cpu_set_t one;
	int cpu = 0;
	if (sched_getaffinity(0, sizeof(*old), old) != 0)
		return errno;
	while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, old))
		cpu++;
	if (cpu == CPU_SETSIZE)
		return ESRCH;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return sched_setaffinity(0, sizeof(one), &one) != 0 ? errno : 0;
}

static inline int test_unpin(const cpu_set_t *old)
{
	return sched_setaffinity(0, sizeof(*old), old) != 0 ? errno : 0;
}

#endif
