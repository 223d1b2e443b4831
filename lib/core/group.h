/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_GROUP_H
#define BGA_GROUP_H

/*
 * Group operations: geometry of a group, its lock, the words of its
 * bitmap, and the group index (group.c, groupidx.c).  The structs and
 * their invariants are in types.h.
 */

#include "types.h"

/* ---- geometry helpers ---- */

static inline uint64_t bga__group_of(const struct bga_volume *vol, uint64_t block)
{
	/* The default (32768) and most configurations are powers of two. */
	return bga_likely(vol->bpg_shift) ? block >> vol->bpg_shift : block / vol->cfg.blocks_per_group;
}

static inline uint64_t bga__group_first(const struct bga_volume *vol, uint64_t g)
{
	return g * (uint64_t)vol->cfg.blocks_per_group;
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
	uint32_t room = 64 - from % 64;
	uint64_t w = map[from / 64] >> (from % 64); /* the top from % 64 bits read as free: room caps them */
	uint32_t skip = ~w ? (uint32_t)__builtin_ctzll(~w) : 64;
	if (skip >= room)
		return false;
	w >>= skip;
	room -= skip;
	uint32_t run = w ? (uint32_t)__builtin_ctzll(w) : room;
	if (run < min || (run < max && run == room))
		return false;
	*start = from + skip;
	*len = run < max ? run : max;
	return true;
}

/* ---- group.c: one group, under its lock ---- */

/* Chunk c, made now for geometry geo if missing, with grow_lock held.
 * NULL on ENOMEM. */
struct bga_chunk *bga__chunk_create_locked(struct bga_volume *vol, const struct bga_geom *geo, uint64_t c);
/*
 * The chunk c, installed on first touch (taking grow_lock); NULL on
 * ENOMEM.  The caller must hold no group lock (the lock order above):
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

/* Group g's lock: its slot of the hashed lock table. */
static inline void bga__group_lock(struct bga_volume *vol, uint64_t g)
{
	bga__lockdep_acquire(BGA_LOCKDEP_GROUP, bga_locktab_slot(vol->locks, g), true);
	bga__locktab_lock(vol->locks, g);
}

static inline bool bga__group_trylock(struct bga_volume *vol, uint64_t g)
{
	bool ok = bga__locktab_trylock(vol->locks, g);
	if (ok)
		bga__lockdep_acquire(BGA_LOCKDEP_GROUP, bga_locktab_slot(vol->locks, g), false);
	return ok;
}

static inline void bga__group_unlock(struct bga_volume *vol, uint64_t g)
{
	bga__lockdep_release(BGA_LOCKDEP_GROUP, bga_locktab_slot(vol->locks, g));
	bga__locktab_unlock(vol->locks, g);
}

/*
 * The same with group g's slot found once (bga__group_slot), for the hot
 * paths that take and release one group lock: the table's pointer and
 * mask are reloaded after every locked instruction otherwise.
 */
static inline struct locktab_slot *bga__group_slot(struct bga_volume *vol, uint64_t g)
{
	return bga__locktab_slot_of(vol->locks, g);
}

static inline void bga__group_lock_at(struct bga_volume *vol, uint64_t g, struct locktab_slot *s)
{
	(void)g;
	bga__lockdep_acquire(BGA_LOCKDEP_GROUP, bga_locktab_slot(vol->locks, g), true);
	bga__locktab_lock_slot(vol->locks, s);
}

static inline bool bga__group_trylock_at(struct bga_volume *vol, uint64_t g, struct locktab_slot *s)
{
	(void)g;
	bool ok = bga__locktab_trylock_slot(vol->locks, s);
	if (ok)
		bga__lockdep_acquire(BGA_LOCKDEP_GROUP, bga_locktab_slot(vol->locks, g), false);
	return ok;
}

static inline void bga__group_unlock_at(struct bga_volume *vol, uint64_t g, struct locktab_slot *s)
{
	(void)g;
	bga__lockdep_release(BGA_LOCKDEP_GROUP, bga_locktab_slot(vol->locks, g));
	bga__locktab_unlock_slot(vol->locks, s);
}

/* The uncontended fas acquire of group g's lock and its release
 * (bga__locktab_trylock_fas): the fast paths of bga_free and bga_alloc,
 * which leave every other case to the _at forms. */
static inline bool bga__group_trylock_fas_at(struct bga_volume *vol, uint64_t g, struct locktab_slot *s)
{
	(void)g;
	bool ok = bga__locktab_trylock_fas(vol->locks, s);
	if (ok) /* a try cannot deadlock: no order check, as bga__group_trylock_at */
		bga__lockdep_acquire(BGA_LOCKDEP_GROUP, bga_locktab_slot(vol->locks, g), false);
	return ok;
}

static inline void bga__group_unlock_fas_at(struct bga_volume *vol, uint64_t g, struct locktab_slot *s)
{
	(void)vol;
	(void)g;
	bga__lockdep_release(BGA_LOCKDEP_GROUP, bga_locktab_slot(vol->locks, g));
	bga__locktab_unlock_fas(s);
}

/* The volume's two mutexes, with their places in the lock order. */
static inline void bga__grow_lock(struct bga_volume *vol)
{
	bga__lockdep_acquire(BGA_LOCKDEP_GROW, 0, true);
	pthread_mutex_lock(&vol->grow_lock);
}

static inline void bga__grow_unlock(struct bga_volume *vol)
{
	bga__lockdep_release(BGA_LOCKDEP_GROW, 0);
	pthread_mutex_unlock(&vol->grow_lock);
}

/*
 * Find a free run of min..max blocks in group g that starts at or after
 * offset `from`, inside the group's span.  Returns true and fills *off
 * and *len.
 */
bool bga__group_find_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t from, uint32_t min,
			    uint32_t max, uint32_t *off, uint32_t *len);
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

static inline void bga__group_take_word_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g,
					       uint32_t off, uint32_t len)
{
	if (bga__group_took_word_locked(grp, off, len))
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
/* Blocks that trims hold claimed for their discard (types.h, bga_claim). */
uint32_t bga__group_claimed_locked(const struct bga_group *grp);
/* Clear the bits of those blocks in `map`, a copy of the group's bitmap. */
void bga__group_clear_claimed_locked(const struct bga_group *grp, uint64_t *map);
/* Allocate grp->ext if needed; NULL on ENOMEM. */
struct bga_group_ext *bga__group_ext_locked(struct bga_group *grp);
/* True when bit off of the group is set (used). */
bool bga__group_test_locked(const struct bga_volume *vol, const struct bga_group *grp, uint64_t g, uint32_t off);

/* ---- groupidx.c: the group index ---- */

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

#endif
