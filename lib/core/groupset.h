/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_GROUPSET_H
#define BGA_GROUPSET_H

/*
 * A set of groups in two levels of atomic bitmaps, so that a walk over
 * the groups that hold something (pending deferred frees: deferred.c;
 * linked windows: window.c) costs a word per 64 chunks, not a look at
 * every group: one bit per group in its chunk (`chunk_map`, BGA_CHUNK_WORDS
 * words of struct bga_chunk) and one bit per chunk in the volume
 * (map `vmap` of the chunk directory: BGA_DIR_DFREE or BGA_DIR_WINS,
 * types.h).  Bits change only with the group's lock
 * held, so a group's bit is exact under its lock; a walker that holds no
 * lock sees every group that was in the set before it started and is in
 * it still.
 */

#include <stddef.h>

#include "types.h"
#include "group.h"

/* The chunk map at byte `off` of group g's chunk (offsetof(struct
 * bga_chunk, x)); the chunk exists. */
static inline uint64_t *bga__gset_chunk_map(const struct bga_volume *vol, size_t off, uint64_t g)
{
	return (uint64_t *)((char *)bga__chunk_get(vol, g >> BGA_CHUNK_SHIFT) + off);
}

/*
 * Add group i of chunk c.  Group bit before chunk bit: see gset_remove.
 * A bit already set is not written again: the words are shared by 64
 * groups (or chunks), and a locked write to a line another CPU holds is
 * a cross-CPU transfer.  A set bit read here stays set until the group's
 * own removal (under its lock, which the caller holds), and a remover of
 * another group that clears the chunk bit looks at the group bits after
 * (SEQ_CST), sees ours, and sets it back.
 */
static inline void bga__gset_add(const struct bga_volume *vol, size_t off, unsigned vmap, uint64_t g)
{
	uint64_t *chunk_map = bga__gset_chunk_map(vol, off, g);
	uint64_t *vol_map = bga__dir_word(vol, vmap, g >> BGA_CHUNK_SHIFT);
	uint64_t c = g >> BGA_CHUNK_SHIFT, i = g & (BGA_CHUNK_GROUPS - 1);
	uint64_t gb = UINT64_C(1) << (i % 64), cb = UINT64_C(1) << (c % 64);
	if (!(__atomic_load_n(&chunk_map[i / 64], __ATOMIC_SEQ_CST) & gb))
		__atomic_fetch_or(&chunk_map[i / 64], gb, __ATOMIC_SEQ_CST);
	if (!(__atomic_load_n(vol_map, __ATOMIC_SEQ_CST) & cb))
		__atomic_fetch_or(vol_map, cb, __ATOMIC_SEQ_CST);
}

/* No group of the chunk ch is in the set whose chunk map is chunk_map. */
static inline bool bga__gset_chunk_empty(const struct bga_chunk *ch, const uint64_t *chunk_map)
{
	for (uint32_t w = 0, n = bga__chunk_words(ch); w < n; w++)
		if (__atomic_load_n(&chunk_map[w], __ATOMIC_SEQ_CST))
			return false;
	return true;
}

/*
 * Remove group g (its lock held).  Clearing the chunk bit races with another
 * group of the chunk adding itself: clear, look again, and set it back if
 * a group bit appeared (the index's summaries do the same).
 */
static inline void bga__gset_remove(const struct bga_volume *vol, size_t off, unsigned vmap, uint64_t g)
{
	uint64_t c = g >> BGA_CHUNK_SHIFT, i = g & (BGA_CHUNK_GROUPS - 1), m = UINT64_C(1) << (c % 64);
	const struct bga_chunk *ch = bga__chunk_get(vol, c);
	uint64_t *chunk_map = (uint64_t *)((const char *)ch + off);
	uint64_t *vol_map = bga__dir_word(vol, vmap, c);
	__atomic_fetch_and(&chunk_map[i / 64], ~(UINT64_C(1) << (i % 64)), __ATOMIC_SEQ_CST);
	if (!bga__gset_chunk_empty(ch, chunk_map))
		return;
	__atomic_fetch_and(vol_map, ~m, __ATOMIC_SEQ_CST);
	if (!bga__gset_chunk_empty(ch, chunk_map))
		__atomic_fetch_or(vol_map, m, __ATOMIC_SEQ_CST);
}

/*
 * The first group in [g, gend) of the set, or gend.  `off` is the offset
 * of the chunk map inside struct bga_chunk (offsetof(struct bga_chunk, x)),
 * `vmap` the directory's map of chunk bits; gend is within the
 * caller's geometry or bga__dir_chunks().
 */
static inline uint64_t bga__gset_next(const struct bga_volume *vol, unsigned vmap, size_t off, uint64_t g,
				      uint64_t gend)
{
	uint64_t cend = (gend + BGA_CHUNK_GROUPS - 1) >> BGA_CHUNK_SHIFT;
	while (g < gend) {
		uint64_t c = bga__dir_next_set(vol, vmap, g >> BGA_CHUNK_SHIFT, cend);
		if (c >= cend)
			return gend;
		uint64_t base = c << BGA_CHUNK_SHIFT, lim = BGA_MIN(gend - base, (uint64_t)BGA_CHUNK_GROUPS);
		const uint64_t *map = (const uint64_t *)((const char *)bga__chunk_get(vol, c) + off);
		uint64_t i = bga__atomic_next_set(map, lim, g > base ? g - base : 0);
		if (i < lim)
			return base + i;
		g = base + BGA_CHUNK_GROUPS;
	}
	return gend;
}

#endif
