/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGALLOC_COUNTER_H
#define BGALLOC_COUNTER_H

/*
 * Per-CPU approximate counter, after the kernel's percpu_counter.
 *
 * A counter holds a shared total and one slot per possible CPU
 * (_SC_NPROCESSORS_CONF), each slot on its own 128-byte line.
 * bga_counter_add() adds to the calling CPU's slot, keeping the slot within
 * batch-1 of zero; an add that would take the slot to +-batch or beyond
 * folds the slot (and the delta) into the total under a small per-counter
 * lock, leaving batch/2 towards the add's sign in the slot when the slot's
 * last fold went the other way (so a CPU that goes up and down by less
 * than 1.5 batch at a time stops folding; a count that only grows folds
 * every batch).  The true value is total + sum(slots).  (DESIGN.md's
 * "Counter folds" says exchange-to-zero; a reversing fold keeps batch/2
 * instead, because a writer's alloc/free sawtooth folded twice a file on
 * every CPU: BENCHMARKS.md#the-model-of-n-cores.  Still under the lock,
 * still within the same error bound.)
 *
 * How a slot is updated is chosen when the counter is created, and
 * reported by bga_counter_mode_name():
 *   "percpu-rseq"  a restartable sequence (Linux rseq, on the area glibc
 *                  2.35+ registers): load, check, plain store, no locked
 *                  instruction.  Used on x86-64 when glibc registered rseq
 *                  in the creating thread and the kernel offers
 *                  membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ), which
 *                  the exact folds use to stop adders (the process is
 *                  registered for it on first use).  A thread that has no
 *                  rseq area still works, through the lock.
 *   "percpu-cas"   a relaxed CAS on the slot: under valgrind, with
 *                  GLIBC_TUNABLES=glibc.pthread.rseq=0 or
 *                  BGA_COUNTER_RSEQ=0, in ThreadSanitizer builds, on other
 *                  architectures, and without that membarrier.
 *   "atomic"       BGA_COUNTER_ATOMIC.
 * Every promise below holds on either path.
 *
 * In BGA_COUNTER_ATOMIC mode the same API drives one shared atomic integer,
 * the baseline the per-CPU mode is measured against; read and sum are then
 * both exact.
 *
 * Threads: every function but destroy may be called from any thread at
 * any time.  No thread registration is needed.  bga_counter_destroy() must
 * run with no other call in flight.  The value must stay within int64_t.
 *
 * Error bound: at any instant, bga_counter_read() differs from the exact
 * value by at most bga_counter_error_bound() = (nslots + 1) * (batch - 1).
 * It holds however many threads share a slot (after migration, or when the
 * CPU id falls back to a per-thread hash): a slot never holds batch or more
 * in magnitude, because its CAS refuses, and at most one fold (itself under
 * batch) is between a slot and the total at a time.  The "+ 1" is that
 * fold.  It is 0 when batch is 1 and in atomic mode.
 */

#include <stdint.h>

#include <bgalloc/export.h>

#ifdef __cplusplus
extern "C" {
#endif

struct bga_counter;

/*
 * BGA_COUNTER_PERCPU_CAS is BGA_COUNTER_PERCPU on the "percpu-cas" path
 * whatever the process offers, so that one program can compare the two
 * per-CPU paths (bga-lab does); such a counter reports BGA_COUNTER_PERCPU
 * from bga_counter_mode_of() and "percpu-cas" from bga_counter_mode_name().
 */
enum bga_counter_mode { BGA_COUNTER_PERCPU = 0, BGA_COUNTER_ATOMIC = 1, BGA_COUNTER_PERCPU_CAS = 2 };

/*
 * Create a counter holding initial.  batch 0 means auto:
 * max(32, 2 * ncpus); batch 1 makes every add fold (read is then exact).
 *
 * Returns: 0, with *out set to the counter.
 * Errors:
 *  -EINVAL  out is NULL, batch < 0, or an unknown mode; *out untouched.
 *  -ENOMEM  the counter could not be allocated.
 */
BGA_EXTERN int bga_counter_create(struct bga_counter **out, int64_t initial, int32_t batch,
                                  enum bga_counter_mode mode);

/*
 * Destroy a counter and free its memory.  NULL is ignored.
 *
 * Returns: nothing.
 * Errors: none.
 * Threads: no other call on the counter may be in flight.
 */
BGA_EXTERN void bga_counter_destroy(struct bga_counter *c);

/*
 * Add delta, which may be negative, to the counter.
 *
 * Returns: nothing.
 * Errors: none.
 * Threads: any thread.  Lock-free unless the slot folds, which happens
 *   about once per batch units added on a CPU, or at once when
 *   |delta| >= batch: then the fold lock.
 */
BGA_EXTERN void bga_counter_add(struct bga_counter *c, int64_t delta);

/*
 * Read the counter's approximate value in O(1).  One load of the shared
 * total, off by at most bga_counter_error_bound(c) from the exact value
 * at the instant of that load.
 *
 * Returns: the approximate value.
 * Errors: none.
 * Threads: any thread; no lock.
 */
BGA_EXTERN int64_t bga_counter_read(const struct bga_counter *c);

/*
 * Sum the counter's exact value, in O(nslots).  It includes every add
 * that completed before the call started.
 *
 * Returns: the exact value.
 * Errors: none.
 * Threads: any thread; takes the counter's fold lock, so that no fold is
 *   seen half done.
 */
BGA_EXTERN int64_t bga_counter_sum(struct bga_counter *c);

/*
 * Compare the counter's value with rhs.  Uses read() when it is farther
 * than the error bound from rhs (O(1)), the exact sum otherwise
 * (O(nslots)), so the answer is always exact for some instant during the
 * call.
 *
 * Returns: -1, 0 or 1 as the value is <, == or > rhs.
 * Errors: none.
 * Threads: any thread; near rhs, the fold lock.
 */
BGA_EXTERN int bga_counter_compare(struct bga_counter *c, int64_t rhs);

/*
 * Add delta only if the value stays <= limit afterwards.  Exact under
 * concurrency (linearizable): each call takes effect at one instant within
 * it, succeeding iff value + delta <= limit at that instant, whatever other
 * add, add_limited (with any limit) or sum calls run concurrently.  So if
 * every positive change goes through add_limited with this limit, the value
 * never exceeds it, and a failure means the limit really was in the way.
 * A plain positive bga_counter_add can of course push past any limit.
 * A delta <= 0 always succeeds (it is a plain add).
 *
 * Cost: lock-free while ceiling + error bound + delta <= limit and the
 * delta fits the caller's slot.  The ceiling is a bound on the total that
 * the counter sets, under its lock, halfway from the total to
 * limit - error bound whenever the total would pass it, so that the
 * lock-free path reads a value written a few times a fill rather than on
 * every fold; it stops short of total + error bound + delta <= limit by at
 * most half the room left (after frees, by more, until the first limited
 * add it stops lowers it).  A delta that does not fit the slot takes the
 * lock: while total + error bound + delta <= limit still holds, it folds
 * only the caller's slot into the total; nearer the limit it decides on
 * the exact value with every slot sealed (O(nslots)).  Once a counter has
 * seen add_limited, plain adds whose folds would grow the total also seal
 * every slot: that is what keeps the lock-free path exact.  On the
 * percpu-rseq path sealing every slot also costs one
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) system call, which
 * interrupts each CPU running a thread of the process; folds of one slot
 * and the exact sum do not need it.  Atomic mode: a CAS loop.
 *
 * Returns: 0 when added.
 * Errors:
 *  -ENOSPC  the value would exceed limit; nothing changed.
 * Threads: any thread; the fold lock as "Cost" says.
 */
BGA_EXTERN int bga_counter_add_limited(struct bga_counter *c, int64_t delta, int64_t limit);

/*
 * Report the most bga_counter_read() can be off by.  That is
 * (nslots + 1) * (batch - 1), 0 in atomic mode.  See "Error bound" above.
 *
 * Returns: the bound.
 * Errors: none.
 */
BGA_EXTERN int64_t bga_counter_error_bound(const struct bga_counter *c);

/*
 * Report the batch in use, after resolving 0 (auto).
 *
 * Returns: the batch.
 * Errors: none.
 */
BGA_EXTERN int32_t bga_counter_batch(const struct bga_counter *c);

/*
 * Report the mode the counter was created with.
 *
 * Returns: BGA_COUNTER_PERCPU or BGA_COUNTER_ATOMIC (a
 *   BGA_COUNTER_PERCPU_CAS counter reports BGA_COUNTER_PERCPU).
 * Errors: none.
 */
BGA_EXTERN enum bga_counter_mode bga_counter_mode_of(const struct bga_counter *c);

/*
 * Tell whether the counter's adds run as restartable sequences.  That is
 * "percpu-rseq" above.  Fixed for the counter's life.
 *
 * Returns: 1 when they do, 0 otherwise.
 * Errors: none.
 */
BGA_EXTERN int bga_counter_uses_rseq(const struct bga_counter *c);

/*
 * Name how adds update the counter.  The name is "percpu-rseq",
 * "percpu-cas" or "atomic" (see the top of this header).  For reports.
 *
 * Returns: a static string, never NULL.
 * Errors: none.
 */
BGA_EXTERN const char *bga_counter_mode_name(const struct bga_counter *c);

#ifdef __cplusplus
}
#endif

#endif
