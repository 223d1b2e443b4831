/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_THREAD_H
#define BGA_THREAD_H

/*
 * What the library keeps per thread, and what of it a thread between
 * library calls has, as a fresh thread has it.  For callers that run many
 * jobs on threads they keep (tests/fuzz/fuzz_mt.c's pool): a kept thread
 * must begin each job as a fresh one would, as far as the library can
 * tell.  The whole list (`grep -rn "__thread\|_Thread_local\|pthread_key"
 * lib` has the first three; the library makes no pthread key):
 *
 *  - lockdep's record (lockdep.c, BGA_DEBUG builds): no lock recorded or
 *    counted (bga__lockdep_idle), as fresh.
 *  - the lock table's MCS node pool (prim/locktab.c): every node free, as
 *    fresh.  It is a layer up, so bga__locktab_thread_idle (locktab_impl.h)
 *    checks it, and a caller that wants the whole list asks both.
 *  - the CPU-id caches (cpu.c: bga__cpu_reuse, the tid hash): hints that a
 *    fresh thread fills at its first lookup; kept, not reset, since a
 *    stale one costs shared lines and never correctness (cpu.h), and only
 *    their range is checked (bga__cpu_cache_valid).
 *  - liburcu-bp's reader (its own thread-local, registered at the thread's
 *    first read lock, unregistered at its exit): outside every read-side
 *    critical section (urcu_bp_read_ongoing() == 0).  The registration
 *    itself stays: a grace period waits only for readers inside a section
 *    begun before it, so a registered reader outside one is, to every
 *    other thread, what an unregistered one is.
 *  - the rseq area (glibc registers it per thread, the kernel writes
 *    cpu_id): the library writes only rseq_cs, the descriptor of the
 *    counter's critical section (counter_rseq.h), and leaves it set after
 *    the commit; the kernel ignores a descriptor whose section does not
 *    hold the thread's instruction pointer, and clears it at the thread's
 *    next preemption, so a thread outside the library is as fresh, and
 *    there is nothing here that a check could find otherwise.
 *
 * A new per-thread variable belongs in this list and in bga__thread_idle,
 * or in its own layer's accessor beside bga__locktab_thread_idle.
 */

#include <stdbool.h>
#include <stddef.h>

#ifdef BGA_DEBUG
/*
 * Whether the calling thread's state of this layer (the list above but the
 * MCS pool) is that of a thread between calls; if not, why[0 .. n) names
 * the first thing that is not.  Debug builds only; internal, not ABI.  It
 * registers the thread with urcu-bp if it was not yet (urcu_bp_read_ongoing
 * does), as the thread's first read lock would.
 */
bool bga__thread_idle(char *why, size_t n);
#endif

#endif
