/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGALLOC_COUNTER_H
#define BGALLOC_COUNTER_H

/*
 * Per-CPU approximate counter, after the kernel's percpu_counter.
 *
 * A counter holds a shared total and one slot per possible CPU, each slot on
 * its own 128-byte line.  bga_counter_add() adds to the calling CPU's slot
 * with a relaxed atomic; when a slot's magnitude reaches `batch` it is
 * folded into the total.  The true value is total + sum(slots).
 *
 * In BGA_COUNTER_ATOMIC mode the same API drives one shared atomic integer,
 * the baseline the per-CPU mode is measured against; read and sum are then
 * both exact.
 *
 * Threading: every function but destroy may be called from any thread at
 * any time.  No thread registration is needed.  bga_counter_destroy() must
 * run with no other call in flight.
 *
 * Error bound: bga_counter_read() differs from the exact value by at most
 * bga_counter_error_bound() = batch * nslots.
 */

#include <stdint.h>

#include <bgalloc/export.h>

#ifdef __cplusplus
extern "C" {
#endif

struct bga_counter;

enum bga_counter_mode { BGA_COUNTER_PERCPU = 0, BGA_COUNTER_ATOMIC = 1 };

/*
 * Create a counter holding `initial`.  batch 0 means auto:
 * max(32, 2 * ncpus).
 * Returns 0, -EINVAL (out NULL, batch < 0, unknown mode) or -ENOMEM.
 */
BGA_EXTERN int bga_counter_create(struct bga_counter **out, int64_t initial, int32_t batch,
                                  enum bga_counter_mode mode);

/* Free the counter.  NULL is ignored.  No other call may be in flight. */
BGA_EXTERN void bga_counter_destroy(struct bga_counter *c);

/* Add `delta` (may be negative).  Lock-free unless the slot folds. */
BGA_EXTERN void bga_counter_add(struct bga_counter *c, int64_t delta);

/* Approximate value in O(1): the shared total only.  Off by at most
 * bga_counter_error_bound(c). */
BGA_EXTERN int64_t bga_counter_read(const struct bga_counter *c);

/*
 * Exact value: includes every add that completed before the call started.
 * O(nslots); takes the counter's fold lock so no fold is seen half done.
 */
BGA_EXTERN int64_t bga_counter_sum(struct bga_counter *c);

/*
 * Compare the value with `rhs`: returns -1, 0 or 1.  Uses read() when it
 * is farther than the error bound from rhs, the exact sum otherwise, so the
 * answer is always exact.
 */
BGA_EXTERN int bga_counter_compare(struct bga_counter *c, int64_t rhs);

/*
 * Add `delta` only if the value stays <= `limit` afterwards.  Exact under
 * concurrency: no interleaving of add_limited calls can push the value past
 * `limit` (plain bga_counter_add is not limited, of course).  A delta <= 0
 * always succeeds.  Returns 0 when added, -ENOSPC when it would exceed.
 * Fast path (no lock) while total + error bound + delta <= limit.
 */
BGA_EXTERN int bga_counter_add_limited(struct bga_counter *c, int64_t delta, int64_t limit);

/* batch * nslots: the most read() can be off by (0 in atomic mode). */
BGA_EXTERN int64_t bga_counter_error_bound(const struct bga_counter *c);

/* The batch in use (after resolving 0 = auto). */
BGA_EXTERN int32_t bga_counter_batch(const struct bga_counter *c);

/* The mode the counter was created with. */
BGA_EXTERN enum bga_counter_mode bga_counter_mode_of(const struct bga_counter *c);

#ifdef __cplusplus
}
#endif

#endif
