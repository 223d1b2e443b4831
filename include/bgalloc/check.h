/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGALLOC_CHECK_H
#define BGALLOC_CHECK_H

/*
 * The invariant check: bga_check.
 *
 * A part of <bgalloc.h>, which programs include; its opening comment gives
 * the conventions every contract here follows (errors, -EAGAIN and
 * -ENOSPC, threads).  This file compiles on its own.
 */

#include <stdint.h>

#include <bgalloc/export.h>
#include <bgalloc/volume.h>

#ifdef __cplusplus
extern "C" {
#endif

struct bga_check_report {
	int violations;   /* number found (the walk goes on after the first) */
	uint64_t group;   /* group of the first violation, or UINT64_MAX */
	uint64_t block;   /* block involved, or UINT64_MAX */
	char message[160]; /* the first violation in words; "" when clean */
};

/*
 * Check every invariant of a volume.  Each bitmap's popcount against its group's free
 * count; the sum of group free counts against the free counter (exact);
 * the group index against each group's summary; nothing below
 * first_data_block or past the end marked free; windows disjoint and
 * inside their groups; every pending deferred block marked allocated;
 * reserved <= free.
 * Run while other threads allocate, free, commit, reserve or grow, it
 * reads each group under that group's lock and never reports a false
 * per-group or index violation (bitmap against count, longest run, index
 * and chunk-summary bits, windows, pending blocks, spans).  Only its two
 * cross-group comparisons, the groups' summed free count against the
 * counter and reserved against free, add up figures taken at different
 * instants and may report a difference that no instant had; they are
 * reported after every per-group finding (report->group UINT64_MAX).
 * report may be NULL.
 *
 * Returns: 0 when every invariant holds.
 * Errors:
 *  -EUCLEAN an invariant does not hold (*report says which).
 *  -EINVAL  vol is NULL.
 *  -ENOMEM  a lazily loaded volume's unread bitmaps could not be read
 *           into memory (nothing checked).
 * Threads: any thread.  Reads every unread chunk first (grow_lock); then
 *   takes one group lock at a time; the counter's fold lock.
 */
BGA_EXTERN int bga_check(struct bga_volume *vol, struct bga_check_report *report);

#ifdef __cplusplus
}
#endif

#endif
