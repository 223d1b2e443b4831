/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_WALK_H
#define BGA_WALK_H

/*
 * The walks' reading of a group (walk.c): one instant of it under its
 * lock, and its free runs, shared by foreach, trim, check and stats.
 */

#include "types.h"

/* One instant of a group, as a walk reads it under the group's lock. */
struct bga__group_view {
	bool initialised, quarantined, trimmed;
	uint32_t lo;       /* span start (first_data_block) */
	uint32_t max_run;  /* the index's bound (an untouched group: its span) */
	uint32_t held;     /* window remainders, shown free in the map */
	uint32_t windows;  /* windows linked */
	uint32_t deferred; /* blocks pending a deferred free */
};
/* bga__walk_copy (below) with the whole view, and the pending map into
 * `pending` (bpg bits) when not NULL. */
uint32_t bga__walk_view(struct bga_volume *vol, uint64_t g, uint64_t *map, uint64_t *pending,
			struct bga__group_view *v);
/* Copy group g's free-space map (set = used) under its lock, windows'
 * remainders shown free (*held of them); returns the span end;
 * *initialised says whether the group had a bitmap. */
uint32_t bga__walk_copy(struct bga_volume *vol, uint64_t g, uint64_t *map, bool *initialised, uint32_t *held);
/* fn for each free run of at least min_len in [from, to) of map. */
int bga__walk_each_run(const uint64_t *map, uint32_t from, uint32_t to, uint64_t min_len,
		       int (*fn)(void *, uint32_t, uint32_t), void *arg);

#endif
