/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_RSEQ_FENCE_H
#define BGA_RSEQ_FENCE_H

/*
 * The process-wide fence that stops restartable sequences, for the users
 * of rseq sections other than the counter (the lock table's bias,
 * locktab.c).  Implemented in counter.c, beside the counter's own use and
 * its probe.
 */

#include <stdbool.h>

/*
 * Whether sections can be used and stopped in this process: the arch has
 * them, glibc registered an area with rseq_cs, the kernel gives
 * membarrier(PRIVATE_EXPEDITED_RSEQ) (registered once per process by
 * this call), and the calling thread's area is live.  False also with
 * BGA_COUNTER_RSEQ=0 in the environment.
 */
bool bga__rseq_fence_usable(void);

/*
 * When it returns, every section of this process that was running has
 * committed (its store visible here) or has been aborted, and every
 * section that starts later sees what this thread stored before the call.
 * Only after bga__rseq_fence_usable() returned true.
 */
void bga__rseq_fence(void);

#endif
