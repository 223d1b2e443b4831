/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_BENCH_VOL_H
#define BGA_BENCH_VOL_H

/*
 * One face over the allocators the benchmark drivers compare: a bgalloc
 * volume (default or baseline configuration) or the libext2fs peer.  How
 * each driver makes and keeps its peer differs, so opening the peer side
 * is theirs; allocation and freeing are the same everywhere.
 */

#include <stdbool.h>
#include <stdint.h>

#include <bgalloc.h>

#include "peer_ext2.h"

struct vol {
	uint64_t nblocks;
	struct bga_volume *bga;  /* the bgalloc side, or NULL ... */
	struct peer_ext2 *peer;  /* ... when the peer serves */
};

/* A bgalloc volume of nblocks; baseline: BGA_GLOBAL_LOCK |
 * BGA_ATOMIC_COUNTERS (one lock, one shared counter). */
static inline int vol_open_bga(struct vol *vl, uint64_t nblocks, bool baseline)
{
	struct bga_config cfg;

	bga_config_init(&cfg, nblocks);
	if (baseline)
		cfg.flags = BGA_GLOBAL_LOCK | BGA_ATOMIC_COUNTERS;
	vl->nblocks = nblocks;
	vl->peer = NULL;
	return bga_create(&cfg, &vl->bga);
}

/*
 * For the peer, min_len and rsv are ignored: one block through
 * ext2fs_new_block2, or exactly max_len through ext2fs_new_range; a goal
 * of BGA_NO_GOAL (or past the end) means the start of the file system.
 */
static inline int vol_alloc(struct vol *vl, uint64_t goal, uint64_t min_len, uint64_t max_len,
			    struct bga_rsv *rsv, struct bga_extent *out)
{
	if (vl->bga) {
		struct bga_request req = {
			.goal = goal, .min_len = min_len, .max_len = max_len, .rsv = rsv, .flags = 0,
		};

		return bga_alloc(vl->bga, &req, out);
	}
	if (goal >= vl->nblocks)
		goal = goal == BGA_NO_GOAL ? 0 : goal % vl->nblocks;
	out->len = max_len;
	if (max_len == 1)
		return peer_ext2_alloc_block(vl->peer, goal, &out->start);
	return peer_ext2_alloc_range(vl->peer, goal, max_len, &out->start);
}

static inline int vol_free(struct vol *vl, uint64_t start, uint64_t len)
{
	if (vl->bga)
		return bga_free(vl->bga, start, len);
	return peer_ext2_free(vl->peer, start, len);
}

#endif
