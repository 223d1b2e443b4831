/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One block group: lazy bitmap, exact free count, free-run summary. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc/bitmap.h>

#include "bitmap_impl.h"
#include "group.h"
#include "window.h"
#include "hooks.h"

/*
 * A fresh chunk's groups for geometry geo, into calloc'd memory: groups
 * past the geometry stay zero (closed: empty span, no bits), so a chunk
 * of a small volume touches only its own groups' lines.  Full-size
 * groups, all but the first and last of a volume, get their index bits
 * a word at a time.
 */
static void group_init_fresh(struct bga_volume *vol, const struct bga_geom *geo, struct bga_chunk *ch,
			     uint64_t c)
{
	uint64_t g0 = c << BGA_CHUNK_SHIFT;
	/* (g0 < ngroups: every caller's chunk lies inside geo; the test stays
	 * as a guard) */
	uint32_t n = g0 >= geo->ngroups ? 0 : (uint32_t)BGA_MIN(geo->ngroups - g0, (uint64_t)BGA_CHUNK_GROUPS); /* GCOVR_EXCL_BR_LINE */
	uint64_t full[BGA_CHUNK_WORDS] = {0};
	for (uint32_t i = 0; i < n; i++) {
		struct bga_group *grp = &ch->groups[i];
		uint32_t lo, hi;
		bga__group_span(vol, geo, g0 + i, &lo, &hi);
		grp->hi = hi;
		if (g0 + i < vol->full_groups)
			lo = hi; /* BGA_START_FULL: wholly used, no bitmap */
		grp->free = hi - lo;
		grp->max_run = hi - lo;
		if (grp->max_run == vol->cfg.blocks_per_group) {
			full[i / 64] |= UINT64_C(1) << (i % 64);
			continue;
		}
		for (uint32_t k = 0; k <= vol->max_order && (UINT32_C(1) << k) <= grp->max_run; k++)
			ch->bits[k][i / 64] |= UINT64_C(1) << (i % 64);
	}
	ch->nwords = bga__chunk_words_for(geo, c);
	for (uint32_t k = 0; k <= vol->max_order; k++)
		for (uint32_t w = 0; w < ch->nwords; w++)
			ch->bits[k][w] |= full[w];
}

struct bga_chunk *bga__chunk_create_under_grow_lock(struct bga_volume *vol, const struct bga_geom *geo, uint64_t c)
{
	bga__lockdep_assert_held(BGA_LOCKDEP_GROW, 0);
	struct bga_chunk *ch = bga__chunk_get(vol, c);
	if (ch != NULL)
		return ch;
	/* line-aligned, as its descriptors are (groupdesc.h, struct bga_group) */
	ch = aligned_alloc(_Alignof(struct bga_chunk), sizeof(*ch));
	if (ch == NULL)
		return NULL;
	memset(ch, 0, sizeof(*ch));
	group_init_fresh(vol, geo, ch, c);
	/* A lazily loaded volume: the chunk's groups come from the image,
	 * before anyone can see the chunk (persist_load.c). */
	const struct bga_store_hooks *h = bga__store_hooks(vol);
	if (bga_unlikely(h != NULL) && h->chunk_fill(vol, ch, c) != 0) {
		free(ch); /* out of memory: the chunk stays unread */
		return NULL;
	}
	__atomic_store_n(bga__dir_slot(vol, c), ch, __ATOMIC_RELEASE);
	bga__idx_chunk_installed(vol, c);
	return ch;
}

struct bga_chunk *bga__chunk_ensure(struct bga_volume *vol, uint64_t c)
{
	struct bga_chunk *ch = bga__chunk_get(vol, c);
	if (bga_likely(ch != NULL))
		return ch;
	/* Once per chunk: serialised with bga_grow so that a grow never
	 * misses a chunk installed while it runs.  The grow takes group locks
	 * under grow_lock, so no group lock may be held here (lockdep.h). */
	bga__grow_lock(vol);
	/* The current geometry, not the caller's snapshot: grows change it
	 * only under grow_lock, which we hold. */
	ch = bga__chunk_create_under_grow_lock(vol, vol->geom, c);
	bga__grow_unlock(vol);
	return ch;
}

struct bga_group_ext *bga__group_ext_locked(struct bga_group *grp)
{
	if (grp->ext == NULL)
		grp->ext = calloc(1, sizeof(*grp->ext));
	return grp->ext;
}

void bga__group_set_run_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t run)
{
	uint32_t old = grp->max_run;
	if (old == run)
		return;
	__atomic_store_n(&grp->max_run, run, __ATOMIC_RELAXED);
	/* Index bits change only when the highest set bit of the run does. */
	if ((old | run) == 0 || (old && run && __builtin_clz(old) == __builtin_clz(run)))
		return;
	bga__idx_update(vol, g, old, run);
}

/*
 * A bitmap-less group is wholly free or wholly used.  Materialise its
 * bitmap before a partial change.  Bits outside the span stay set forever,
 * so searches never return them.
 */
void bga__group_fill_bitmap_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint64_t *map)
{
	uint32_t bpg = vol->cfg.blocks_per_group, lo, hi;
	bga__grp_span(vol, grp, g, &lo, &hi);
	if (grp->free == 0) {
		memset(map, 0xff, BGA_BITMAP_WORDS(bpg) * sizeof(uint64_t));
	} else {
		memset(map, 0, BGA_BITMAP_WORDS(bpg) * sizeof(uint64_t));
		bga_bitmap_set_range(map, 0, lo);
		bga_bitmap_set_range(map, hi, bpg - hi);
	}
	grp->bitmap = map;
}

uint32_t bga__group_copy_locked(const struct bga_volume *vol, const struct bga_group *grp, uint64_t g, uint64_t *map,
				bool commit_pending)
{
	uint32_t bpg = vol->cfg.blocks_per_group, lo, hi;
	size_t words = BGA_BITMAP_WORDS(bpg);
	bga__grp_span(vol, grp, g, &lo, &hi);
	if (grp && grp->bitmap) {
		memcpy(map, grp->bitmap, words * sizeof(uint64_t));
	} else {
		memset(map, grp && grp->free == 0 ? 0xff : 0, words * sizeof(uint64_t));
		bga_bitmap_set_range(map, 0, lo);
		bga_bitmap_set_range(map, hi, bpg - hi);
	}
	if (commit_pending && grp && grp->ext && grp->ext->pending)
		for (size_t w = 0; w < words; w++)
			map[w] &= ~grp->ext->pending[w];
	return hi;
}

uint32_t bga__group_claimed_locked(const struct bga_group *grp)
{
	uint32_t n = 0;
	for (const struct bga_trim_claim *c = grp->ext ? grp->ext->claims : NULL; c; c = c->next)
		for (size_t i = 0; i < c->n; i++)
			n += c->runs[i].len;
	return n;
}

void bga__group_clear_claimed_locked(const struct bga_group *grp, uint64_t *map)
{
	for (const struct bga_trim_claim *c = grp->ext ? grp->ext->claims : NULL; c; c = c->next)
		for (size_t i = 0; i < c->n; i++)
			bga_bitmap_clear_range(map, c->runs[i].off, c->runs[i].len);
}

int bga__group_materialise_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g)
{
	uint64_t *map = malloc(BGA_BITMAP_WORDS(vol->cfg.blocks_per_group) * sizeof(uint64_t));
	if (map == NULL)
		return -ENOMEM;
	bga__group_fill_bitmap_locked(vol, grp, g, map);
	return 0;
}

void bga__group_unmaterialise_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g)
{
	(void)vol; /* lockdep's assertion alone reads them, BGA_DEBUG only */
	(void)g;
	bga__group_assert_locked(vol, g);
	BGA_ASSERT(grp->bitmap != NULL && grp->free == 0);
	free(grp->bitmap);
	grp->bitmap = NULL;
}

bool bga__group_test_locked(const struct bga_volume *vol, const struct bga_group *grp, uint64_t g, uint32_t off)
{
	if (grp->bitmap)
		return (grp->bitmap[off / 64] >> (off % 64)) & 1;
	uint32_t lo, hi;
	bga__grp_span(vol, grp, g, &lo, &hi);
	return grp->free == 0 || off < lo || off >= hi;
}

bool bga__group_is_used_slow(const struct bga_volume *vol, const struct bga_group *grp, uint64_t g, uint32_t off, uint32_t len)
{
	if (off + len > grp->hi)
		return false; /* past the span: not (yet) part of the volume */
	if (grp->bitmap) {
		if (bga__in_one_word(off, len)) {
			uint64_t m = bga__word_mask(off, len);
			return (grp->bitmap[off / 64] & m) == m;
		}
		return bga_bitmap_range_is_set(grp->bitmap, off, len);
	}
	uint32_t lo, hi;
	bga__grp_span(vol, grp, g, &lo, &hi);
	return grp->free == 0 && off >= lo && off + len <= hi;
}

bool bga__group_find_locked(struct bga_volume *vol, struct bga_group *grp,
			    uint64_t g, uint32_t from, uint32_t min, uint32_t max, uint32_t *off, uint32_t *len)
{
	uint32_t lo, hi;
	if (grp->free < min || grp->max_run < min)
		return false;
	bga__grp_span(vol, grp, g, &lo, &hi);
	if (from < lo)
		from = lo;
	/* A free run in the goal's own word, the usual case of a goal search. */
	if (grp->bitmap && from < hi && bga__word_run(grp->bitmap, from, min, max, off, len))
		return true;
	if (from >= hi)
		return false;
	uint64_t pos, n;
	if (grp->bitmap) {
		pos = bga_bitmap_find_zero_run(grp->bitmap, hi, from, min, max, &n);
		if (pos >= hi)
			return false;
	} else {
		/* wholly free (free >= min > 0 was checked above) */
		pos = from;
		n = BGA_MIN(max, hi - from);
		if (n < min)
			return false;
	}
	*off = (uint32_t)pos;
	*len = (uint32_t)n;
	return true;
}

bool bga__group_find_exact_locked(struct bga_volume *vol, const struct bga_group *grp, uint64_t g, uint32_t *from,
				  uint32_t len, uint32_t *scan, uint32_t *off)
{
	uint32_t lo, hi;
	if (len == 0 || grp->bitmap == NULL || grp->free < len || grp->max_run < len)
		return false;
	bga__grp_span(vol, grp, g, &lo, &hi);
	for (uint64_t at = BGA_MAX(*from, lo); at < hi && *scan > 0; (*scan)--) {
		/* a run of len + 1 says the run is longer: on past its end */
		uint64_t n, pos = bga_bitmap_find_zero_run(grp->bitmap, hi, at, len, (uint64_t)len + 1, &n);
		if (pos >= hi)
			break;
		if (n == len) {
			*off = (uint32_t)pos;
			*from = (uint32_t)(pos + len);
			(*scan)--;
			return true;
		}
		at = bga_bitmap_next_set(grp->bitmap, hi, pos + n);
		*from = (uint32_t)BGA_MIN(at, hi);
	}
	*from = hi;
	return false;
}

bool bga__group_find_aligned_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t from,
				    uint32_t min, uint32_t max, uint32_t align, uint32_t *off, uint32_t *len)
{
	uint32_t lo, hi;
	if (grp->free < min || grp->max_run < min)
		return false;
	bga__grp_span(vol, grp, g, &lo, &hi);
	uint64_t first = bga__group_first(vol, g);
	/* Each free run of at least min in turn, until one holds an aligned
	 * run of min: a run that starts unaligned may still hold one. */
	for (uint32_t at = BGA_MAX(from, lo); at < hi;) {
		uint64_t pos = at, n = hi - at;
		if (grp->bitmap) {
			pos = bga_bitmap_find_zero_run(grp->bitmap, hi, at, min, hi, &n);
			if (pos >= hi)
				return false;
		}
		uint64_t a = (first + pos + align - 1) / align * align - first; /* align need not be a power of two */
		if (a + min <= pos + n) {
			uint64_t l = BGA_MIN(pos + n - a, (uint64_t)max);
			*off = (uint32_t)a;
			*len = (uint32_t)(l - l % align);
			return true;
		}
		at = (uint32_t)(pos + n);
	}
	return false;
}

/* How far back bga__group_run_start_locked looks, in bitmap words. */
#define BGA_RUN_START_WORDS 4

uint32_t bga__group_run_start_locked(struct bga_volume *vol, const struct bga_group *grp, uint64_t g, uint32_t off)
{
	uint32_t lo, hi;
	bga__grp_span(vol, grp, g, &lo, &hi);
	if (grp->bitmap == NULL)
		return grp->free ? lo : off;
	/* Word by word downwards, BGA_RUN_START_WORDS words at most (a
	 * run that starts further back is long: a split there leaves a
	 * long piece, and an unbounded look back cost a pass over the
	 * group; BENCHMARKS.md#at-a-storage-engines-allocation-unit);
	 * bits below the span are set, so it stops there at the latest. */
	for (unsigned words = 0; off > lo; words++) {
		if (words == BGA_RUN_START_WORDS)
			return off;
		uint32_t b = (off - 1) % 64;
		uint64_t w = grp->bitmap[(off - 1) / 64] << (63 - b); /* bits up to off - 1, at the top */
		if (w)
			return off - (uint32_t)__builtin_clzll(w);
		off -= b + 1;
	}
	return lo;
}

/* Free bits right below `off`, looking at two words at most; UINT32_MAX
 * when the run goes on.  Bits below the span are set, so it stops there. */
static uint32_t free_below(const uint64_t *map, uint32_t off)
{
	uint32_t n = 0;
	for (int words = 0; off > 0 && words < 2; words++) {
		uint32_t b = (off - 1) % 64;
		uint64_t w = map[(off - 1) / 64] << (63 - b);
		if (w)
			return n + (uint32_t)__builtin_clzll(w);
		n += b + 1;
		off -= b + 1;
	}
	return off == 0 ? n : UINT32_MAX;
}

/* Free bits from `end` up, two words at most; bits past the span are set. */
static uint32_t free_above(const uint64_t *map, uint32_t end, uint32_t bpg)
{
	uint32_t n = 0;
	for (int words = 0; end < bpg && words < 2; words++) {
		uint64_t w = map[end / 64] >> (end % 64);
		if (w)
			return n + (uint32_t)__builtin_ctzll(w);
		n += 64 - end % 64;
		end += 64 - end % 64;
	}
	return end >= bpg ? n : UINT32_MAX;
}

int bga__group_take_locked(struct bga_volume *vol, struct bga_group *grp,
			   uint64_t g, uint32_t off, uint32_t len)
{
	bga__group_assert_locked(vol, g);
	if (grp->bitmap == NULL) {
		uint32_t lo, hi;
		bga__grp_span(vol, grp, g, &lo, &hi);
		BGA_ASSERT(grp->free == hi - lo);
		if (off == lo && len == hi - lo) {
			/* A whole group needs no bitmap: it stays wholly used. */
			__atomic_store_n(&grp->free, 0, __ATOMIC_RELAXED);
			grp->flags |= BGA_GROUP_DIRTY;
			bga__group_set_run_locked(vol, grp, g, 0);
			return 0;
		}
		int rc = bga__group_materialise_locked(vol, grp, g);
		if (rc)
			return rc;
	}
	if (bga__in_one_word(off, len)) {
		bga__group_take_word_locked(vol, grp, g, off, len, false);
		return 0;
	}
	BGA_ASSERT(bga_bitmap_range_is_clear(grp->bitmap, off, len));
	bga__bitmap_write_range(grp->bitmap, off, len, true);
	uint32_t free = grp->free - len;
	__atomic_store_n(&grp->free, free, __ATOMIC_RELAXED);
	grp->flags |= BGA_GROUP_DIRTY;
	/* The longest run can only shrink; max_run stays an upper bound. */
	if (free == 0)
		bga__group_set_run_locked(vol, grp, g, 0);
	return 0;
}

void bga__group_release_slow(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t off, uint32_t len)
{
	if (grp->bitmap == NULL) {
		uint32_t lo, hi;
		bga__grp_span(vol, grp, g, &lo, &hi);
		BGA_ASSERT(grp->free == 0);
		if (off == lo && len == hi - lo) {
			grp->flags &= ~(uint32_t)(BGA_GROUP_TRIMMED | BGA_GROUP_NO_ROOM);
			__atomic_store_n(&grp->free, len, __ATOMIC_RELAXED);
			grp->flags |= BGA_GROUP_DIRTY;
			bga__group_set_run_locked(vol, grp, g, len);
			return;
		}
		/* The caller ran bga__group_prepare_release_locked(), which
		 * materialised the bitmap for any partial release. */
		BGA_ASSERT(0 && "release of part of an unprepared group");
		abort();
	}
	if (bga__in_one_word(off, len)) {
		bga__group_release_locked(vol, grp, g, off, len);
		return;
	}
	BGA_ASSERT(bga_bitmap_range_is_set(grp->bitmap, off, len));
	bga__bitmap_write_range(grp->bitmap, off, len, false);
	bga__group_freed_locked(vol, grp, g, off, len);
}

/*
 * The run's ends are looked for within a word or two; a run that goes on
 * further raises max_run to `free`, a valid upper bound that the next
 * search disappointed by this group makes exact again
 * (bga__group_refresh_locked): scanning whole runs on every free was a
 * large share of a churn operation
 * (docs/HISTORY.md#what-the-hot-path-inlines-and-skips).
 */
void bga__group_merge_run_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t off,
				 uint32_t len)
{
	uint32_t below = free_below(grp->bitmap, off);
	uint32_t above = free_above(grp->bitmap, off + len, vol->cfg.blocks_per_group);
	uint32_t merged = (below == UINT32_MAX || above == UINT32_MAX) ? grp->free : below + len + above;
	if (merged > grp->max_run)
		bga__group_set_run_locked(vol, grp, g, merged);
}

int bga__group_prepare_release_slow(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t off,
				    uint32_t len)
{
	uint32_t lo, hi;
	BGA_ASSERT(grp->bitmap == NULL); /* the inline part returned already */
	bga__grp_span(vol, grp, g, &lo, &hi);
	if (off == lo && len == hi - lo)
		return 0;
	return bga__group_materialise_locked(vol, grp, g);
}

void bga__group_refresh_locked(struct bga_volume *vol, struct bga_group *grp,
			       uint64_t g)
{
	uint32_t lo, hi, run;
	bga__grp_span(vol, grp, g, &lo, &hi);
	if (grp->bitmap)
		run = (uint32_t)bga_bitmap_longest_zero_run(grp->bitmap, hi);
	else
		run = grp->free;
	bga__group_set_run_locked(vol, grp, g, run);
}
