/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_GROUPIDX_H
#define BGA_GROUPIDX_H

/*
 * The group index (groupidx.c): per order k, one bit per group set iff
 * its max_run >= 2^k, with a summary bit per chunk, flipped with atomic
 * or/and so that searches never lock.
 */

#include "types.h"

/* Update group g's index bits from max_run old_run to new_run.  Caller
 * holds g's lock; g's chunk exists. */
void bga__idx_update(struct bga_volume *vol, uint64_t g, uint32_t old_run, uint32_t new_run);
/* Set summary bits for a freshly installed chunk. */
void bga__idx_chunk_installed(struct bga_volume *vol, uint64_t c);
/* Mark chunks [c0, c1) as untouched, all-free groups in the summary. */
void bga__idx_mark_untouched(struct bga_volume *vol, uint64_t c0, uint64_t c1);
/*
 * First group in [from, to) that may hold a free run of min_len blocks,
 * or `to` when none does.  Lock-free; the answer is a hint that the caller
 * checks under the group's lock, but it never misses a group whose index
 * bits were stable during the call.
 */
uint64_t bga__idx_next(const struct bga_volume *vol, uint64_t from, uint64_t to, uint64_t min_len);
/* Could any group of geo hold a free run of min_len?  False only when the
 * index shows none, with no summary recheck in flight (groupidx.c). */
bool bga__idx_may_fit(const struct bga_volume *vol, const struct bga_geom *geo, uint64_t min_len);

#endif
