/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The group index: finds a group whose largest free run is at least a
 * given length without scanning the groups, as ext4's mb_optimize_scan does
 * with its per-order lists.
 *
 * Two levels of bitmaps per order k:
 *   chunk->bits[k]   one bit per group: max_run >= 2^k
 *   summary[k]       one bit per chunk, map k of the chunk directory
 *                    (types.h): some group of it has the bit (a chunk
 *                    not yet allocated counts as all-free groups)
 * Bits nest: bit k set implies bit k-1 set.  A search for min_len blocks
 * looks at order ceil(log2(min_len)), whose groups surely fit, and at
 * order floor(log2(min_len)) with a check of max_run, so no group that fits
 * is missed.  With 2048 groups per chunk, the summary of a 2^20-group
 * volume is 512 bits per order: a search is a handful of word scans.
 *
 * Writers hold the group's lock; bits are flipped with atomic or/and, and
 * readers take no lock.
 */
#include <bgalloc/bitmap.h>

#include "group.h"

static inline unsigned ilog2_floor(uint64_t x)
{
	return 63u - (unsigned)__builtin_clzll(x);
}

static inline unsigned ilog2_ceil(uint64_t x)
{
	return x <= 1 ? 0 : 64u - (unsigned)__builtin_clzll(x - 1);
}

/*
 * The look before the fetch_or is SEQ_CST, as the RMWs are: a setter that
 * sees the summary bit still set must see it before a clearer's andnot in
 * the single total order, so that clearer's recheck (SEQ_CST loads after
 * its andnot) then sees the setter's group bit and sets the summary back.
 * On x86 a SEQ_CST load is a plain load.
 */
static inline void bit_or(uint64_t *w, uint64_t m)
{
	if ((__atomic_load_n(w, __ATOMIC_SEQ_CST) & m) != m)
		__atomic_fetch_or(w, m, __ATOMIC_SEQ_CST);
}

static inline void bit_andnot(uint64_t *w, uint64_t m)
{
	if (__atomic_load_n(w, __ATOMIC_RELAXED) & m)
		__atomic_fetch_and(w, ~m, __ATOMIC_SEQ_CST);
}

static bool chunk_order_empty(const struct bga_chunk *ch, unsigned k)
{
	/* the words that can hold a bit (chunk.h, nwords; SEQ_CST as the
	 * recheck's other loads) */
	for (uint32_t i = 0, n = __atomic_load_n(&ch->nwords, __ATOMIC_SEQ_CST); i < n; i++)
		if (__atomic_load_n(&ch->bits[k][i], __ATOMIC_SEQ_CST))
			return false;
	return true;
}

/*
 * Clearing a summary bit races with another group of the chunk setting its
 * bit: clear, then look again, and set it back if a bit appeared.  Setters
 * set the group bit before the summary bit, so whichever order the two
 * threads run in, the summary ends up set while any group bit is, once
 * the recheck is done.  Between the clear and the set-back a summary bit
 * can read clear while a group bit is set (a setter that saw the old bit
 * skipped its own fetch_or); ch->clearing marks that window so that
 * bga_check can wait it out, and a search that misses a group in it is
 * covered by bga_alloc's retry on the exact count.
 */
static inline uint64_t *summary_word(const struct bga_volume *vol, unsigned k, uint64_t c)
{
	return bga__dir_word(vol, k, c);
}

static void summary_recheck(struct bga_volume *vol, struct bga_chunk *ch, uint64_t c, unsigned k)
{
	uint64_t m = UINT64_C(1) << (c % 64);
	if (!chunk_order_empty(ch, k))
		return;
	__atomic_fetch_add(&ch->clearing, 1, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&vol->idx_recheck_seq, 1, __ATOMIC_SEQ_CST); /* one more in flight */
	bit_andnot(summary_word(vol, k, c), m);
	if (!chunk_order_empty(ch, k))
		bit_or(summary_word(vol, k, c), m);
	__atomic_fetch_add(&vol->idx_recheck_seq, (UINT64_C(1) << 32) - 1, __ATOMIC_SEQ_CST); /* one fewer, one more done */
	__atomic_fetch_sub(&ch->clearing, 1, __ATOMIC_SEQ_CST);
}

void bga__idx_update(struct bga_volume *vol, uint64_t g, uint32_t old_run, uint32_t new_run)
{
	uint64_t c = g >> BGA_CHUNK_SHIFT;
	uint32_t i = (uint32_t)(g & (BGA_CHUNK_GROUPS - 1));
	struct bga_chunk *ch = bga__chunk_get(vol, c);
	uint64_t m = UINT64_C(1) << (i % 64);
	/* orders whose bit is set before and after: [0, nold) and [0, nnew) */
	unsigned nold = old_run ? ilog2_floor(old_run) + 1 : 0;
	unsigned nnew = new_run ? ilog2_floor(new_run) + 1 : 0;
	for (unsigned k = nold; k < nnew; k++) {
		bit_or(&ch->bits[k][i / 64], m);
		bit_or(summary_word(vol, k, c), UINT64_C(1) << (c % 64));
	}
	for (unsigned k = nnew; k < nold; k++) {
		bit_andnot(&ch->bits[k][i / 64], m);
		summary_recheck(vol, ch, c, k);
	}
}

void bga__idx_chunk_installed(struct bga_volume *vol, uint64_t c)
{
	struct bga_chunk *ch = bga__chunk_get(vol, c);
	for (unsigned k = 0; k < BGA_ORDERS; k++) {
		if (chunk_order_empty(ch, k))
			summary_recheck(vol, ch, c, k);
		else
			bit_or(summary_word(vol, k, c), UINT64_C(1) << (c % 64));
	}
}

void bga__idx_mark_untouched(struct bga_volume *vol, uint64_t c0, uint64_t c1)
{
	/* A word at a time: a 2^48-block volume marks 2^20 chunks. */
	for (uint64_t c = c0; c < c1; c = (c | 63) + 1) {
		uint64_t n = BGA_MIN(c1 - c, 64 - c % 64);
		uint64_t m = (~UINT64_C(0) >> (64 - n)) << (c % 64);
		for (unsigned k = 0; k <= vol->max_order; k++)
			bit_or(summary_word(vol, k, c), m);
	}
}

/*
 * First group in [from, to) whose order-k bit is set and, when need > 0,
 * whose max_run is at least `need`; `to` if none.
 */
static uint64_t next_in_order(const struct bga_volume *vol, unsigned k, uint64_t from, uint64_t to,
			      uint32_t need)
{
	uint64_t g = from;
	uint64_t cend = (to + BGA_CHUNK_GROUPS - 1) >> BGA_CHUNK_SHIFT;
	while (g < to) {
		uint64_t c = g >> BGA_CHUNK_SHIFT;
		if (!((__atomic_load_n(summary_word(vol, k, c), __ATOMIC_ACQUIRE) >> (c % 64)) & 1)) {
			c = bga__dir_next_set(vol, k, c + 1, cend);
			if (c >= cend)
				return to;
			g = c << BGA_CHUNK_SHIFT;
			continue;
		}
		const struct bga_chunk *ch = bga__chunk_get(vol, c);
		if (ch == NULL)
			return g; /* untouched groups are wholly free */
		uint64_t base = c << BGA_CHUNK_SHIFT;
		uint64_t lim = BGA_MIN(to - base, (uint64_t)BGA_CHUNK_GROUPS);
		for (uint64_t i = g - base; i < lim; i++) {
			i = bga__atomic_next_set(ch->bits[k], lim, i);
			if (i >= lim)
				break;
			if (need == 0 || __atomic_load_n(&ch->groups[i].max_run, __ATOMIC_RELAXED) >= need)
				return base + i;
		}
		g = base + BGA_CHUNK_GROUPS;
	}
	return to;
}

uint64_t bga__idx_next(const struct bga_volume *vol, uint64_t from, uint64_t to, uint64_t min_len)
{
	if (min_len == 0 || min_len > vol->cfg.blocks_per_group)
		return to;
	unsigned hi = ilog2_ceil(min_len), lo = ilog2_floor(min_len);
	uint64_t r = to;
	if (hi <= vol->max_order)
		r = next_in_order(vol, hi, from, to, 0);
	if (lo != hi && r > from)
		r = next_in_order(vol, lo, from, r, (uint32_t)min_len);
	return r;
}

/*
 * The index's word on a request that a search could not meet: false only
 * when no group of geo had, at one instant during the call, a max_run of
 * min_len (max_run is an upper bound, so then no run that long existed),
 * and no summary recheck was in flight (during one a group can hide for
 * a moment; the caller's retry covers it).  A few word scans per order
 * and 2048 groups: this is what bounds the time a request that cannot be
 * met takes, whatever the volume's size.
 */
bool bga__idx_may_fit(const struct bga_volume *vol, const struct bga_geom *geo, uint64_t min_len)
{
	if (min_len > vol->cfg.blocks_per_group)
		return false;
	/* As a seqlock is read: a recheck in flight at the start, or one
	 * that began or ended during the scan (the word moved), may have
	 * hidden a group from it. */
	uint64_t seq = __atomic_load_n(&vol->idx_recheck_seq, __ATOMIC_SEQ_CST);
	if (bga__idx_next(vol, 0, geo->ngroups, min_len) < geo->ngroups)
		return true;
	return (uint32_t)seq != 0 || __atomic_load_n(&vol->idx_recheck_seq, __ATOMIC_SEQ_CST) != seq;
}
