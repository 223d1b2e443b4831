/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The chunk directory: where each chunk's pointer and summary bits live
 * (types.h, struct bga_dirblock).  A volume's directory follows its size:
 * create makes one segment for the volume's chunks, and a grow past it
 * adds a segment as large as everything before it, so a volume grown
 * from one chunk to the largest has 15 segments, and no segment ever
 * moves: lock-free readers keep using the pointers they found.
 *
 * Sizing for the largest volume up front instead (the directory and 21
 * summaries of 2^20 chunks, 11 MiB of calloc) made every create cost the
 * same, whatever the size, most of it mapping and unmapping that memory
 * (bga-create; BENCHMARKS.md "Volume creation").
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

_Static_assert((UINT64_C(1) << (BGA_DIR_SEGS - 1)) == BGA_DIR_MAX_BLOCKS, "one segment per doubling");

static struct bga_dirblock *seg_alloc(uint64_t blocks)
{
	struct bga_dirblock *seg = aligned_alloc(BGA_CACHELINE, blocks * sizeof(*seg));
	if (seg)
		memset(seg, 0, blocks * sizeof(*seg));
	return seg;
}

int bga__dir_init(struct bga_volume *vol, uint64_t nchunks)
{
	uint64_t blocks = (nchunks + BGA_DIR_CHUNKS - 1) / BGA_DIR_CHUNKS;
	unsigned shift = blocks <= 1 ? 0 : 64u - (unsigned)__builtin_clzll(blocks - 1);
	vol->dir0_blocks = UINT64_C(1) << shift;
	vol->dir0_shift = shift;
	vol->dir0 = seg_alloc(vol->dir0_blocks);
	if (vol->dir0 == NULL)
		return -ENOMEM;
	vol->dirseg[0] = vol->dir0;
	vol->dir_chunks = vol->dir0_blocks * BGA_DIR_CHUNKS;
	return 0;
}

int bga__dir_reserve(struct bga_volume *vol, uint64_t nchunks)
{
	uint64_t have = vol->dir_chunks;
	while (have < nchunks) {
		uint64_t blocks = have / BGA_DIR_CHUNKS; /* as many as the segments before */
		unsigned s = 64u - (unsigned)__builtin_clzll(blocks >> vol->dir0_shift);
		if (s >= BGA_DIR_SEGS)
			return -ENOMEM; /* past the largest volume: config_check rules it out */
		struct bga_dirblock *seg = seg_alloc(blocks);
		if (seg == NULL)
			return -ENOMEM;
		/* Release: a reader that finds the chunk count or a geometry
		 * past `have` finds the segment's zeroed words. */
		__atomic_store_n(&vol->dirseg[s], seg, __ATOMIC_RELEASE);
		have *= 2;
		__atomic_store_n(&vol->dir_chunks, have, __ATOMIC_RELEASE);
	}
	return 0;
}

void bga__dir_destroy(struct bga_volume *vol)
{
	for (unsigned s = 0; s < BGA_DIR_SEGS; s++)
		free(vol->dirseg[s]);
	vol->dir0 = NULL;
}
