/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_GROUP_H
#define BGA_GROUP_H

/*
 * One group under its lock (group.c): the words of its bitmap, finding,
 * taking and releasing runs, its chunk's install, the group by number.
 * Its descriptor and rare state, with their invariants: groupdesc.h; the
 * chunk that holds 2048 of them, and where a block is: chunk.h; the
 * locks: grouplock.h; the index: groupidx.h; the volume: types.h.
 */

#include "types.h"
#include "groupdesc.h"
#include "chunk.h"
#include "grouplock.h"
#include "groupidx.h"

/*
 * The usable span of a group as the group itself records it (grp may be
 * NULL for a group of an untouched chunk, which is always full-size).
 * Caller holds the group's lock, or the group is untouched.
 */
static inline void bga__grp_span(const struct bga_volume *vol, const struct bga_group *grp, uint64_t g,
				 uint32_t *lo, uint32_t *hi)
{
	uint64_t first = bga__group_first(vol, g);
	*hi = grp ? grp->hi : vol->cfg.blocks_per_group;
	*lo = first < vol->cfg.first_data_block ? (uint32_t)(vol->cfg.first_data_block - first) : 0;
	if (*lo > *hi)
		*lo = *hi;
}

/* Overlap of [off, off+len) in group g with a pending deferred free.
 * Inline, and here beside the pending map it reads: range.c and
 * deferred.c both ask, and range.c must not call into deferred.c, which
 * calls it. */
static inline bool bga__dfree_overlaps_locked(const struct bga_group *grp, uint32_t off, uint32_t len)
{
	return grp->ext->pending && !bga_bitmap_range_is_clear(grp->ext->pending, off, len);
}

/* ---- words of a group bitmap ---- */

/*
 * Ranges inside one word are the common case (single blocks, small
 * extents): they are handled inline, ranges that cross words go to the
 * bitmap primitives.
 */
static inline bool bga__in_one_word(uint32_t off, uint32_t len)
{
	return off / 64 == (off + len - 1) / 64;
}

/* Mask of bits [off, off + len) of off's word; the range must not cross
 * a word (1 <= len <= 64 - off % 64). */
static inline uint64_t bga__word_mask(uint32_t off, uint32_t len)
{
	return (~UINT64_C(0) >> (64 - len)) << (off % 64);
}

/*
 * The first free run at or after `from` when from's own word decides it:
 * true with *start and *len set (min <= *len <= max) when a free bit at or
 * after `from` in that word starts a run of at least min that reaches max
 * or ends inside the word.  False means "look further", not "no run".
 * Bits past a group's span are set, so a run never leaves it.
 */
static inline bool bga__word_run(const uint64_t *map, uint32_t from, uint32_t min, uint32_t max, uint32_t *start,
				 uint32_t *len)
{
	uint32_t left = 64 - from % 64;
	uint64_t w = map[from / 64] >> (from % 64); /* the top from % 64 bits read as free: `left` caps them */
	uint32_t skip = ~w ? (uint32_t)__builtin_ctzll(~w) : 64;
	if (skip >= left)
		return false;
	w >>= skip;
	left -= skip;
	uint32_t run = w ? (uint32_t)__builtin_ctzll(w) : left;
	if (run < min || (run < max && run == left))
		return false;
	*start = from + skip;
	*len = run < max ? run : max;
	return true;
}

/* ---- group.c: one group, under its lock ---- */

/* Chunk c, made now for geometry geo if missing, with grow_lock held.
 * NULL on ENOMEM. */
struct bga_chunk *bga__chunk_create_under_grow_lock(struct bga_volume *vol, const struct bga_geom *geo, uint64_t c);
/*
 * The chunk c, installed on first touch (taking grow_lock); NULL on
 * ENOMEM.  The caller must hold no group lock (the lock order, lockdep.h):
 * paths that may reach an untouched chunk call this first, then lock.
 */
struct bga_chunk *bga__chunk_ensure(struct bga_volume *vol, uint64_t c);
/* The chunk holding group g installed, as bga__chunk_ensure: 0 or -ENOMEM. */
static inline int bga__group_ensure(struct bga_volume *vol, uint64_t g)
{
	if (bga_likely(bga__chunk_get(vol, g >> BGA_CHUNK_SHIFT) != NULL))
		return 0;
	return bga__chunk_ensure(vol, g >> BGA_CHUNK_SHIFT) ? 0 : -ENOMEM;
}
/* Descriptor of g, whose chunk the caller knows to be installed (it ran
 * bga__group_ensure, or the group holds blocks, windows or pending
 * frees).  A lookup: it never allocates, so it is safe under any lock. */
static inline struct bga_group *bga__group_lookup(const struct bga_volume *vol, uint64_t g)
{
	struct bga_chunk *ch = bga__chunk_get(vol, g >> BGA_CHUNK_SHIFT);
	BGA_ASSERT(ch != NULL);
	return &ch->groups[g & (BGA_CHUNK_GROUPS - 1)];
}

/*
 * The descriptor of the group holding `block`, while its chunk is
 * installed (NULL otherwise: a hot path that must not install one), and
 * where the block is (*at).  No lock: the descriptor's fields are the
 * caller's to lock or to read as hints.
 */
static inline struct bga_group *bga__group_peek(const struct bga_volume *vol, uint64_t block, struct bga_gpos *at)
{
	uint64_t g = bga__group_of(vol, block);
	struct bga_chunk *ch = bga__chunk_get(vol, g >> BGA_CHUNK_SHIFT);
	if (ch == NULL)
		return NULL;
	uint64_t first = bga__group_first(vol, g);
	*at = (struct bga_gpos){.g = g, .first = first, .off = (uint32_t)(block - first)};
	return &ch->groups[g & (BGA_CHUNK_GROUPS - 1)];
}

/*
 * Group g installed (bga__group_ensure, before the lock: lockdep.h) and
 * its lock taken: waiting when `wait`, else tried once.  Its descriptor;
 * NULL with *rc set when not locked: -ENOMEM, or -EBUSY (a try found it
 * held).
 */
static inline struct bga_group *bga__group_ensure_lock(struct bga_volume *vol, uint64_t g, bool wait, int *rc)
{
	*rc = bga__group_ensure(vol, g);
	if (*rc)
		return NULL;
	if (wait) {
		bga__group_lock(vol, g);
	} else if (!bga__group_trylock(vol, g)) {
		*rc = -EBUSY;
		return NULL;
	}
	return bga__group_lookup(vol, g);
}

/*
 * Find a free run of min..max blocks in group g that starts at or after
 * offset `from`, inside the group's span.  Returns true and fills *off
 * and *len.
 */
bool bga__group_find_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t from, uint32_t min,
			    uint32_t max, uint32_t *off, uint32_t *len);
/*
 * The same for an aligned request: a run of min..max blocks whose absolute
 * first block is a multiple of `align` (> 1, any value) and whose length
 * is one; min and max must be multiples of align.  Looks through every
 * free run of at least min from `from` on, so an aligned run inside an
 * unaligned free extent is found.
 */
bool bga__group_find_aligned_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t from,
				    uint32_t min, uint32_t max, uint32_t align, uint32_t *off, uint32_t *len);
/*
 * The first free run of exactly `len` (> 0) blocks in group g's span
 * that starts at or after offset *from, among the next *scan free runs
 * of at least len from there (ext4's mb_max_to_scan; *scan counts down
 * the runs read): one used block (or the span's end) on each side.
 * False when there is none among them, and in a group with no bitmap
 * (wholly free).  *from is left where the look stopped: a next look goes
 * on from it.
 */
bool bga__group_find_exact_locked(struct bga_volume *vol, const struct bga_group *grp, uint64_t g, uint32_t *from,
				  uint32_t len, uint32_t *scan, uint32_t *off);
/* Where the free run that holds offset `off` (free, inside the span)
 * starts: off itself when the block below is used; a run that starts
 * more than a few words back (group.c) counts as starting at a word
 * boundary below off. */
uint32_t bga__group_run_start_locked(struct bga_volume *vol, const struct bga_group *grp, uint64_t g, uint32_t off);
/* bga__group_find_locked, or with align > 1 bga__group_find_aligned_locked:
 * a run of whole units of align blocks. */
static inline bool bga__group_find_unit_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g,
					       uint32_t from, uint32_t min, uint32_t max, uint32_t align,
					       uint32_t *off, uint32_t *len)
{
	return align > 1 ? bga__group_find_aligned_locked(vol, grp, g, from, min, max, align, off, len)
			 : bga__group_find_locked(vol, grp, g, from, min, max, off, len);
}
/* Set max_run (and the index bits) to `run`. */
void bga__group_set_run_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t run);

/* Mark [off, off+len), free and inside one word of the group's bitmap,
 * used.  The longest run can only shrink: max_run stays an upper bound,
 * and drops to 0 with the last free block: the took form returns true
 * when that must be done (bga__group_set_run_locked), which the take
 * form does. */
static inline bool bga__group_took_word_locked(struct bga_group *grp, uint32_t off, uint32_t len)
{
	uint64_t m = bga__word_mask(off, len);
	BGA_ASSERT(!(grp->bitmap[off / 64] & m));
	grp->bitmap[off / 64] |= m;
	uint32_t free = grp->free - len;
	__atomic_store_n(&grp->free, free, __ATOMIC_RELAXED);
	grp->flags |= BGA_GROUP_DIRTY;
	return free == 0;
}

/* `leaf` (a constant): the caller made sure a free block stays (len <
 * grp->free), and the form makes no call. */
static inline void bga__group_take_word_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g,
					       uint32_t off, uint32_t len, bool leaf)
{
	bool full = bga__group_took_word_locked(grp, off, len);
	if (leaf)
		BGA_ASSERT(!full);
	else if (full)
		bga__group_set_run_locked(vol, grp, g, 0);
}

/* Mark [off, off+len) used.  The range must be free.  0 or -ENOMEM. */
int bga__group_take_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t off, uint32_t len);
/* The out-of-line rest of the three below (group.c). */
int bga__group_prepare_release_slow(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t off,
				    uint32_t len);
void bga__group_release_slow(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t off, uint32_t len);
bool bga__group_is_used_slow(const struct bga_volume *vol, const struct bga_group *grp, uint64_t g, uint32_t off,
			     uint32_t len);
/* A release raised free above max_run: look for the merged run's ends
 * next to [off, off+len) and raise max_run to cover it. */
void bga__group_merge_run_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t off,
				 uint32_t len);

/*
 * Make sure a later release of [off, off+len) cannot fail: a wholly used
 * group without a bitmap gets one now.  0 or -ENOMEM.  Callers run it on
 * every group of a range before changing any, so a free stays
 * all-or-nothing even when memory runs out.
 */
static inline int bga__group_prepare_release_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g,
						    uint32_t off, uint32_t len)
{
	if (bga_likely(grp->bitmap != NULL))
		return 0;
	return bga__group_prepare_release_slow(vol, grp, g, off, len);
}

/*
 * The count and flag bookkeeping of a release of len blocks whose bits are
 * already clear; true when max_run must then be raised
 * (bga__group_merge_run_locked), which bga__group_freed_locked does.
 */
static inline bool bga__group_count_freed_locked(struct bga_group *grp, uint32_t len)
{
	/* No longer trimmed, maybe room for a window, and changed since the
	 * last store: one write. */
	grp->flags = (grp->flags & ~(uint32_t)(BGA_GROUP_TRIMMED | BGA_GROUP_NO_ROOM)) | BGA_GROUP_DIRTY;
	uint32_t free = grp->free + len;
	__atomic_store_n(&grp->free, free, __ATOMIC_RELAXED);
	/*
	 * Only the run that now holds the freed range can have grown, and
	 * max_run (an upper bound) usually covers it already: allocations
	 * leave max_run alone.
	 */
	return grp->max_run < free;
}

/* The count, flag and run bookkeeping of a release of [off, off+len)
 * whose bits are already clear. */
static inline void bga__group_freed_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g,
					   uint32_t off, uint32_t len)
{
	if (bga__group_count_freed_locked(grp, len))
		bga__group_merge_run_locked(vol, grp, g, off, len);
}

/* Mark [off, off+len) free.  The range must be used and prepared.  A
 * range inside one word of a bitmap is the inline case. */
static inline void bga__group_release_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g,
					     uint32_t off, uint32_t len)
{
	if (bga_likely(grp->bitmap != NULL && bga__in_one_word(off, len))) {
		uint64_t m = bga__word_mask(off, len);
		BGA_ASSERT((grp->bitmap[off / 64] & m) == m);
		grp->bitmap[off / 64] &= ~m;
		bga__group_freed_locked(vol, grp, g, off, len);
		return;
	}
	bga__group_release_slow(vol, grp, g, off, len);
}

/* True when every block of [off, off+len) is allocated. */
static inline bool bga__group_is_used_locked(const struct bga_volume *vol, const struct bga_group *grp, uint64_t g,
					     uint32_t off, uint32_t len)
{
	if (bga_likely(grp->bitmap != NULL && bga__in_one_word(off, len) && off + len <= grp->hi)) {
		uint64_t m = bga__word_mask(off, len);
		return (grp->bitmap[off / 64] & m) == m;
	}
	return bga__group_is_used_slow(vol, grp, g, off, len);
}
/* Recompute max_run exactly and update the index. */
void bga__group_refresh_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g);
/* Give a bitmap-less (wholly free or wholly used) group its bitmap.
 * 0 or -ENOMEM. */
int bga__group_materialise_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g);
/* Undo a materialise of a wholly used group that then did not change (a
 * failed free's prepare): the bitmap goes, as it was. */
void bga__group_unmaterialise_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g);
/* The same with a caller-supplied map of blocks_per_group bits. */
void bga__group_fill_bitmap_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint64_t *map);
/*
 * Copy group g's map of used blocks into `map` (blocks_per_group bits, set
 * = used, every bit outside the span set), whatever its storage: grp NULL
 * is an untouched group, wholly free.  With commit_pending, blocks waiting
 * on deferred frees count as free (the state after a commit).  Caller
 * holds g's lock (or grp is NULL).  Returns the span end.
 */
uint32_t bga__group_copy_locked(const struct bga_volume *vol, const struct bga_group *grp, uint64_t g, uint64_t *map,
				bool commit_pending);
/* Blocks that trims hold claimed for their discard (bga_trim_claim, above). */
uint32_t bga__group_claimed_locked(const struct bga_group *grp);
/* Clear the bits of those blocks in `map`, a copy of the group's bitmap. */
void bga__group_clear_claimed_locked(const struct bga_group *grp, uint64_t *map);
/* Allocate grp->ext if needed; NULL on ENOMEM. */
struct bga_group_ext *bga__group_ext_locked(struct bga_group *grp);
/* True when bit off of the group is set (used). */
bool bga__group_test_locked(const struct bga_volume *vol, const struct bga_group *grp, uint64_t g, uint32_t off);

/* The free run that starts at offset `from`, min..max blocks (an exact
 * goal's): true and *len, or false when `from` is used or its run is
 * shorter than min. */
static inline bool bga__group_run_at_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t from,
					    uint32_t min, uint32_t max, uint32_t *len)
{
	uint32_t off;
	return !bga__group_test_locked(vol, grp, g, from) &&
	       bga__group_find_locked(vol, grp, g, from, min, max, &off, len) && off == from;
}

#endif
