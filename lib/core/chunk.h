/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_CHUNK_H
#define BGA_CHUNK_H

/*
 * The chunk (2048 groups' descriptors and their index bits), where a
 * block is: its group, a group's first block and span, the chunk
 * directory (chunkdir.c) and a group's chunk (NULL while untouched), and
 * the lock-free bit walk the index and the group sets share.  No locks;
 * the volume is in types.h, a group's descriptor in groupdesc.h.
 */

#include "types.h"
#include "groupdesc.h"

/*
 * A chunk: descriptors for BGA_CHUNK_GROUPS consecutive groups and, per
 * order k, one bit per group that is set iff the group's max_run >= 2^k.
 * Bits are flipped with atomic or/and so readers never lock.
 */
struct bga_chunk {
	uint64_t bits[BGA_ORDERS][BGA_CHUNK_WORDS];
	/*
	 * Summary rechecks in flight (groupidx.c summary_recheck): while it is
	 * non-zero, a summary bit of this chunk may read clear for a moment
	 * although one of its groups has the order's bit.  bga_check waits
	 * for it to drain before it calls that a violation.
	 */
	uint32_t clearing;
	/*
	 * Words of the maps above (bits, dfree, wins) that can hold a bit:
	 * those of the groups the volume's geometry has in this chunk, so a
	 * chunk of a small volume is looked over in a word or two, not 64
	 * (bga__chunk_words).  Set at the chunk's making and raised by a grow
	 * (SEQ_CST) before it publishes the geometry that opens groups past
	 * it; only ever raised, and a bit is only ever set for an open
	 * group, so every set bit lies below it.
	 */
	uint32_t nwords;
	uint64_t dfree[BGA_CHUNK_WORDS]; /* groups holding pending deferred frees (atomic) */
	uint64_t wins[BGA_CHUNK_WORDS];  /* groups that may hold windows (atomic; window.c) */
	struct bga_group groups[BGA_CHUNK_GROUPS];
};

/* The words of chunk ch's group maps that can hold a bit (nwords). */
static inline uint32_t bga__chunk_words(const struct bga_chunk *ch)
{
	return __atomic_load_n(&ch->nwords, __ATOMIC_SEQ_CST);
}

static inline uint64_t bga__group_of(const struct bga_volume *vol, uint64_t block)
{
	/* The default (32768) and most configurations are powers of two. */
	return bga_likely(vol->bpg_shift) ? block >> vol->bpg_shift : block / vol->cfg.blocks_per_group;
}

static inline uint64_t bga__group_first(const struct bga_volume *vol, uint64_t g)
{
	return g * (uint64_t)vol->cfg.blocks_per_group;
}

/* Where a block is: its group, the group's first block, and the block's
 * offset in the group. */
struct bga_gpos {
	uint64_t g, first;
	uint32_t off;
};

static inline struct bga_gpos bga__gpos(const struct bga_volume *vol, uint64_t block)
{
	uint64_t g = bga__group_of(vol, block), first = bga__group_first(vol, g);
	return (struct bga_gpos){.g = g, .first = first, .off = (uint32_t)(block - first)};
}

/* The usable span [*lo, *hi) of group g, as offsets inside the group. */
static inline void bga__group_span(const struct bga_volume *vol, const struct bga_geom *geo, uint64_t g,
				   uint32_t *lo, uint32_t *hi)
{
	uint64_t first = bga__group_first(vol, g);
	uint64_t end = first + vol->cfg.blocks_per_group;
	if (end > geo->nblocks)
		end = geo->nblocks;
	*lo = first < vol->cfg.first_data_block ? (uint32_t)(vol->cfg.first_data_block - first) : 0;
	*hi = (uint32_t)(end - first);
	if (*lo > *hi)
		*lo = *hi;
}

/* Words of chunk c's group maps (struct bga_chunk's nwords)
 * that its groups in geometry geo need. */
static inline uint32_t bga__chunk_words_for(const struct bga_geom *geo, uint64_t c)
{
	uint64_t g0 = c << BGA_CHUNK_SHIFT;
	uint64_t n = g0 >= geo->ngroups ? 0 : BGA_MIN(geo->ngroups - g0, (uint64_t)BGA_CHUNK_GROUPS);
	return (uint32_t)((n + 63) / 64);
}

/* ---- the chunk directory (types.h, chunkdir.c) ---- */

/* The segment holding chunk c, its first chunk and its size in chunks. */
static inline unsigned bga__dir_seg(const struct bga_volume *vol, uint64_t c)
{
	return c < vol->dir0_chunks ? 0 : 64u - (unsigned)__builtin_clzll(c >> vol->dir0_shift);
}

static inline uint64_t bga__dir_seg_base(const struct bga_volume *vol, unsigned s)
{
	return s ? vol->dir0_chunks << (s - 1) : 0;
}

static inline uint64_t bga__dir_seg_chunks(const struct bga_volume *vol, unsigned s)
{
	return s ? vol->dir0_chunks << (s - 1) : vol->dir0_chunks;
}

/* Segment s's chunk pointers, then its maps; s holds chunks of the
 * caller's geometry (or below bga__dir_chunks()). */
static inline struct bga_chunk **bga__dir_segment(const struct bga_volume *vol, unsigned s)
{
	return __atomic_load_n(&vol->dirseg[s], __ATOMIC_ACQUIRE);
}

/* The word of map m (a summary order, BGA_DIR_DFREE or BGA_DIR_WINS)
 * holding chunk c's bit, bit c % 64; c as for bga__dir_segment. */
static inline uint64_t *bga__dir_word(const struct bga_volume *vol, unsigned m, uint64_t c)
{
	unsigned s = bga__dir_seg(vol, c);
	uint64_t n = bga__dir_seg_chunks(vol, s);
	uint64_t *maps = (uint64_t *)(bga__dir_segment(vol, s) + n);
	return maps + m * (n / 64) + (c - bga__dir_seg_base(vol, s)) / 64;
}

/* Chunks the directory holds now (acquire: their segments are visible). */
static inline uint64_t bga__dir_chunks(const struct bga_volume *vol)
{
	return __atomic_load_n(&vol->dir_chunks, __ATOMIC_ACQUIRE);
}

/*
 * First chunk in [from, end) whose bit in map m is set, or end: the
 * word-at-a-time walk of bga__atomic_next_set, segment by segment.
 * end <= bga__dir_chunks() or the caller's geometry's chunks.
 */
static inline uint64_t bga__dir_next_set(const struct bga_volume *vol, unsigned m, uint64_t from, uint64_t end)
{
	while (from < end) {
		uint64_t w = __atomic_load_n(bga__dir_word(vol, m, from), __ATOMIC_RELAXED) >> (from % 64);
		if (w) {
			from += (uint64_t)__builtin_ctzll(w);
			return from < end ? from : end;
		}
		from = (from | 63) + 1;
	}
	return end;
}

/* Chunk c, NULL while untouched; c below the caller's geometry's chunks.
 * Segment 0, sized for the volume at create, is the one a volume that
 * never grew uses: one compare more than a flat array. */
static inline struct bga_chunk *bga__chunk_get(const struct bga_volume *vol, uint64_t c)
{
	if (bga_likely(c < vol->dir0_chunks))
		return __atomic_load_n(&vol->dir0[c], __ATOMIC_ACQUIRE);
	unsigned s = bga__dir_seg(vol, c);
	return __atomic_load_n(&bga__dir_segment(vol, s)[c - bga__dir_seg_base(vol, s)], __ATOMIC_ACQUIRE);
}

/* The slot of chunk c's pointer, with grow_lock held (chunk installs). */
static inline struct bga_chunk **bga__dir_slot(const struct bga_volume *vol, uint64_t c)
{
	unsigned s = bga__dir_seg(vol, c);
	return &bga__dir_segment(vol, s)[c - bga__dir_seg_base(vol, s)];
}

/* chunkdir.c: the directory for nchunks chunks at create (grow_lock not
 * needed: nobody else sees the volume yet); 0 or -ENOMEM. */
int bga__dir_init(struct bga_volume *vol, uint64_t nchunks);
/* Segments for at least nchunks chunks, with grow_lock held: 0, or
 * -ENOMEM with the directory still valid for what it held. */
int bga__dir_reserve(struct bga_volume *vol, uint64_t nchunks);
/* Free the segments (not the chunks); at destroy. */
void bga__dir_destroy(struct bga_volume *vol);

/*
 * First set bit at or after `from` in [0, nbits) of a bitmap whose words
 * other threads flip with atomic or/and while we read (the group index,
 * the pending-free maps): each word is one relaxed atomic load, so the
 * reads are well defined, and a word is only ever seen whole.  Returns
 * nbits when none.  The maps it reads are small (64 words a chunk, one
 * bit a chunk above), so word-at-a-time is enough here.
 */
static inline uint64_t bga__atomic_next_set(const uint64_t *map, uint64_t nbits, uint64_t from)
{
	while (from < nbits) {
		uint64_t w = __atomic_load_n(&map[from / 64], __ATOMIC_RELAXED) >> (from % 64);
		if (w) {
			from += (uint64_t)__builtin_ctzll(w);
			return from < nbits ? from : nbits;
		}
		from = (from | 63) + 1;
	}
	return nbits;
}

#endif
