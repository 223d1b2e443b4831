// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The rseq path's side in the kernel (counter_impl.h declares it):
 * whether this process can run the counter's restartable sequences
 * (counter_rseq.h has the sections), and the process-wide fence that
 * stops them, which a flush on that path calls (counter.c, the proof at
 * "the rseq path", (M)).  Apart from counter.c, which holds the folds
 * and the proofs, because neither runs on an add: once at a counter's
 * creation, once a flush.
 */
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compiler.h"
#include "counter_impl.h"
#include "cpu.h"

/*
 * Whether this process can run the counter's restartable sequences: the
 * arch has them (counter_rseq.h), glibc registered an area with the rseq_cs
 * field, and the kernel gives membarrier(PRIVATE_EXPEDITED_RSEQ), which is
 * what lets a flush stop adders; registering for it once is per process.
 * One trial call, so that a flush never meets a failing membarrier (it
 * could not stop adders then).  BGA_COUNTER_RSEQ=0 in the environment
 * turns the path off, for comparing it with the CAS path in one build.
 * Racing first calls do the same idempotent work.  1 usable, -1 not.
 *
 * rseq is the default wherever it works, on a measurement of the rseq
 * path against the CAS path in one process
 * (BENCHMARKS.md#counter-adds-per-cpu-against-atomic).
 */
static int rseq_state;

static int counter_rseq_probe(void)
{
#if BGA_COUNTER_HAVE_RSEQ
	const char *env = getenv("BGA_COUNTER_RSEQ");
	long cmds;

	if (env && strcmp(env, "0") == 0)
		return -1;
	if (__rseq_size < offsetof(struct rseq, rseq_cs) + sizeof(uint64_t))
		return -1;
	cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ))
		return -1;
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0) != 0 ||
	    syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0) != 0)
		return -1;
	return 1;
#else
	return -1;
#endif
}

bool bga__counter_rseq_usable(void)
{
	int st = __atomic_load_n(&rseq_state, __ATOMIC_ACQUIRE);

	if (bga_unlikely(st == 0)) {
		st = counter_rseq_probe();
		__atomic_store_n(&rseq_state, st, __ATOMIC_RELEASE);
	}
	/* And rseq is live in the creating thread (valgrind fails the
	 * registration of every thread, leaving cpu_id negative). */
	return st > 0 && bga__cpu_source()[0] == 'r';
}

/*
 * The process-wide fence of the rseq path: when it returns, every section
 * of this process that was running has committed (and its store is
 * visible here) or has been aborted, and every section that starts later
 * sees what this thread stored before the call (the kernel documents
 * PRIVATE_EXPEDITED_RSEQ as PRIVATE_EXPEDITED, a barrier on every CPU
 * running a thread of the process, plus the restart).  The probe made one
 * such call already, so a failure here is a kernel that changed under
 * us: no safe way on, hence abort.  BGA_COUNTER_TEST_SKIP_MEMBARRIER
 * (test builds only) removes the call, to show stress_counter catching it.
 */
void bga__counter_stop_adders(void)
{
#if BGA_COUNTER_HAVE_RSEQ /* else no counter is on the rseq path; TSan builds also lack fences */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#ifndef BGA_COUNTER_TEST_SKIP_MEMBARRIER
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0) != 0) {
		perror("bgalloc: membarrier(PRIVATE_EXPEDITED_RSEQ)");
		abort();
	}
#endif
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}
