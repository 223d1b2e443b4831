/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The chunk directory: where each chunk's pointer and its bits in the
 * index summaries and the group sets live (types.h).  A volume's
 * directory follows its size: create makes one segment for the volume's
 * chunks (64 at least), and a grow past it adds a segment as large as
 * everything before it, so a volume grown from one chunk to the largest
 * has 16 segments, and no segment ever moves: lock-free readers keep
 * using the words they found.
 *
 * Sizing for the largest volume up front instead (the directory and 21
 * summaries of 2^20 chunks, 11 MiB of calloc) made every create cost the
 * same, whatever the size, most of it mapping and unmapping that memory
 * (bga-create;
 * docs/HISTORY.md#what-a-volume-cost-to-create-at-517cb88-and-before).
 */
#include <stdlib.h>

#include "group.h"

_Static_assert(((uint64_t)BGA_DIR_CHUNKS0 << (BGA_DIR_SEGS - 1)) == BGA_DIR_MAX_CHUNKS, "one segment per doubling");

/*
 * n chunk pointers and the maps after them (types.h), zeroed.  calloc,
 * not an aligned allocation and a memset: a large segment comes from
 * fresh pages that need no zeroing, so the pointers of a huge volume's
 * untouched chunks cost no resident memory (BENCHMARKS.md#volume-creation).
 * Nothing needs the
 * cache-line alignment the segments had: their words are read by every
 * thread and written at chunk installs and summary changes.
 */
static struct bga_chunk **seg_alloc(uint64_t n)
{
	return calloc(1, n * sizeof(struct bga_chunk *) + BGA_DIR_MAPS * (n / 64) * sizeof(uint64_t));
}

int bga__dir_init(struct bga_volume *vol, uint64_t nchunks)
{
	unsigned shift = nchunks <= BGA_DIR_CHUNKS0 ? (unsigned)__builtin_ctz(BGA_DIR_CHUNKS0)
						    : 64u - (unsigned)__builtin_clzll(nchunks - 1);
	vol->dir0_chunks = UINT64_C(1) << shift;
	vol->dir0_shift = shift;
	vol->dir0 = seg_alloc(vol->dir0_chunks);
	if (vol->dir0 == NULL)
		return -ENOMEM;
	vol->dirseg[0] = vol->dir0;
	vol->dir_chunks = vol->dir0_chunks;
	return 0;
}

int bga__dir_reserve(struct bga_volume *vol, uint64_t nchunks)
{
	uint64_t have = vol->dir_chunks;
	while (have < nchunks) {
		/* the next segment: as many chunks as all before it */
		unsigned s = 64u - (unsigned)__builtin_clzll(have >> vol->dir0_shift);
		if (s >= BGA_DIR_SEGS) /* GCOVR_EXCL_BR_LINE: bga_grow refuses past BGA_MAX_BLOCKS first */
			return -ENOMEM; /* past the largest volume: bga_grow rules it out */
		struct bga_chunk **seg = seg_alloc(have);
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
