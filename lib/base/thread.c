/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The per-thread state of lib/base between calls (thread.h; debug builds only). */
#include "thread.h"

#ifdef BGA_DEBUG
#include <stdio.h>

#include "cpu.h"
#include "lockdep.h"
#include "rcu.h"

bool bga__thread_idle(char *why, size_t n)
{
	int nest;

	if (!bga__lockdep_idle(why, n) || !bga__cpu_cache_valid(why, n))
		return false;
	nest = urcu_bp_read_ongoing();
	if (nest) {
		snprintf(why, n, "rcu: inside a read-side critical section (nesting %d)", nest);
		return false;
	}
	return true;
}
#endif
