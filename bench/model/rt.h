/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_MODEL_RT_H
#define BGA_MODEL_RT_H

/*
 * The model's runtime (rt.c): the __tsan_* entry points that the
 * compiler's -fsanitize=thread instrumentation of lib/ calls, implemented to perform
 * each access and to count it by 64-byte line, with the modelled core that
 * made it.  Every line keeps its last writer and the set of cores holding
 * a copy (MESI without capacity misses: a core keeps every line it touched
 * until another core writes it).  A move is
 *  - a read of a line that another core wrote last, and that this core
 *    holds no copy of since that write;
 *  - a write (or atomic read-modify-write) of a line that another core
 *    holds a copy of.
 * The first touch of a line by any core is a miss from memory, not a move.
 *
 * Modelled cores take turns (model.c's baton), so at most one thread is in
 * the library at a time and the runtime keeps its tables without locks.
 *
 * Locks are seen, not told: a word of a registered lock range (the group
 * lock table's slots) that an atomic turns from 0 to non-zero is acquired,
 * and released when it turns back to 0 (an atomic, or the holder's plain
 * store: Concurrency Kit's unlock); every pthread mutex is a lock
 * (pthread_mutex_lock/unlock are wrapped here).  What the holding core
 * touches until the release is the lock's critical section.
 *
 * rt_plain.c has the same calls doing nothing, for the uninstrumented
 * build that callgrind counts instructions on.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RT_MAX_CORES 64

/* The calling thread is modelled core `core` (0 .. RT_MAX_CORES-1). */
void rt_set_core(int core);
/* Start counting (measured phase) or stop; line states are kept either way. */
void rt_measure(int on);
/* One operation of the calling core completed (measured phase only). */
void rt_op_done(void);
/* Forget every line, lock and count: a new configuration. */
void rt_reset(void);
/* A lock range: n lock words at base, base + stride, ... */
void rt_lock_range(const void *base, size_t n, size_t stride, const char *name);
/* Per-CPU slots: n of `stride` bytes at base, slot k CPU k's.  The model's
 * lib/ adds to its own slot with a compare-and-swap (the counter's CAS
 * path); the release library does it in a restartable sequence, plain
 * instructions with no lock prefix.  So for the clock (clock.h) an atomic
 * of a core on its own slot is a plain load and store, not a locked
 * instruction; on another core's slot (a fold) it stays locked. */
void rt_rseq_slots(const void *base, size_t n, size_t stride);
/* A known object, for naming lines: [base, base + n * size), each element named. */
void rt_object(const void *base, size_t n, size_t size, const char *type);
/* Write the counts of the measured phase as JSON members, for the caller's
 * object (no braces, no newline); top_lines: the most moved lines listed. */
void rt_report(FILE *f, int top_lines);
/* The modelled clocks (clock.h): instructions per access, one transfer in
 * instruction times (0: no clock), and whether a lock another core holds
 * at this core's modelled instant is found held (not for the lock kinds
 * whose words are not 0 or 1 when free or held). */
void rt_clock_config(double ipa, double xfer, int holds);
/* Core `core`'s modelled clock, instruction times (0 in rt_plain.c). */
double rt_clock(int core);
/* Cores 0 .. n-1 start their operations together (clock.h's clk_sync). */
void rt_clock_sync(int n);
/* Whether this build counts (0 in rt_plain.c). */
int rt_counting(void);

#endif
