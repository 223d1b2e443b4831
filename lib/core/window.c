/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Windows that own their blocks: booking, giving back, taking back before
 * -ENOSPC, and what frees, checks and stores need to know of them.  The
 * contract and the span word are in window.h; the owners are rsv.c (a
 * file's handle) and the CPUs (a locality window for small files, booked
 * in search.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "groupset.h"
#include "group.h"
#include "window.h"
#include "charge.h"

/*
 * The set of groups that may hold windows (groupset.h): a group joins when
 * a window is linked and leaves only when a reclaim walk finds its list
 * empty, not at every unlink.  A file's windows follow one another in one
 * group, each unlink followed by the next link, and two writers' groups
 * share the set's words: joining and leaving each time would move those
 * lines between their CPUs at every window.
 */
static void join(struct bga_volume *vol, uint64_t g)
{
	bga__gset_add(vol, offsetof(struct bga_chunk, wins), BGA_DIR_WINS, g);
}

/*
 * A held map (window.h): lines of its own, as a bitmap's are, so that
 * writers of two groups' maps (two CPUs' directories) never share a line
 * through the heap's neighbours.
 */
static uint64_t *held_map_new(const struct bga_volume *vol)
{
	size_t bytes = ((size_t)vol->cfg.blocks_per_group / 8 + BGA_CACHELINE - 1) / BGA_CACHELINE * BGA_CACHELINE;
	uint64_t *map = aligned_alloc(BGA_CACHELINE, bytes);
	if (map != NULL)
		memset(map, 0, bytes);
	return map;
}

void bga__window_book_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, struct bga_window *w,
			     uint32_t off, uint32_t taken, uint32_t wlen)
{
	bga__group_assert_locked(vol, g);
	BGA_ASSERT(!w->linked);
	uint64_t old = __atomic_load_n(&w->span, __ATOMIC_RELAXED);
	struct bga_group_ext *ext = taken < wlen ? bga__group_ext_locked(grp) : NULL;
	w->held_from = off + taken;
	w->grown = (w->group == g && w->end == off ? w->grown : 0) + wlen;
	if (ext == NULL) {
		/* nothing left: where it ended is all the owner needs */
		__atomic_store_n(&w->group, g, __ATOMIC_RELEASE);
		w->start = off;
		w->end = off + taken;
		__atomic_store_n(&w->span, bga__wspan_next(old, off + taken, off + taken), __ATOMIC_RELEASE);
		return;
	}
	BGA_ASSERT(grp->bitmap != NULL);
	/* The bitmap exists (the allocation that books took part of the
	 * group), so this cannot fail. */
	int rc = bga__group_take_locked(vol, grp, g, off + taken, wlen - taken);
	BGA_ASSERT(rc == 0);
	(void)rc;
	__atomic_store_n(&w->group, g, __ATOMIC_RELEASE);
	w->start = off;
	w->end = off + wlen;
	__atomic_store_n(&w->span, bga__wspan_next(old, off + taken, off + wlen), __ATOMIC_RELEASE);
	w->stored = UINT32_MAX; /* never stored: the group is dirty anyway */
	if (ext->held)
		bga_bitmap_set_range(ext->held, off + taken, wlen - taken);
	join(vol, g);
	w->next = ext->windows;
	if (w->next)
		w->next->pprev = &w->next;
	ext->windows = w;
	w->pprev = &ext->windows;
	w->linked = true;
}

/*
 * Lower w's end to `at` (never below cur), giving [max(cur, at), end)
 * back to the group.  Group lock held: only the owner's lock-free take
 * races, and it only raises cur.
 */
static uint32_t cut_locked(struct bga_volume *vol, struct bga_group *grp, struct bga_window *w, uint32_t at)
{
	uint64_t s = __atomic_load_n(&w->span, __ATOMIC_ACQUIRE);
	uint32_t from, end;
	do {
		/* Frozen only by an exact goal that holds this group's windows
		 * still around its cut (bga__window_hold_locked): a store
		 * holds every group lock, so it never meets a cut.  The bit
		 * stays as it is. */
		from = BGA_MAX(bga__wspan_cur(s), at);
		end = bga__wspan_end(s);
		if (from >= end)
			return 0;
	} while (!__atomic_compare_exchange_n(&w->span, &s, (s & ~(BGA_WSPAN_MASK << BGA_WSPAN_BITS)) |
							       ((uint64_t)from << BGA_WSPAN_BITS),
					      false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
	w->end = from;
	if (grp->ext->held)
		bga_bitmap_clear_range(grp->ext->held, from, end - from); /* [held_from, end) keeps the rest */
	/* booked with a bitmap, and bitmaps are never dropped: cannot fail */
	bga__group_release_locked(vol, grp, w->group, from, end - from);
	return end - from;
}

/* Does the held map have a bit set in [off, off + len)? */
static bool held_any(const struct bga_group_ext *ext, uint32_t off, uint32_t len)
{
	return bga_bitmap_next_set(ext->held, off + len, off) < off + len;
}

/*
 * The held map after w's unlink (window.h): w's bits go, [held_from, end)
 * (its remainder is given back already).  That range holds only w's bits
 * unless a block in it was freed and booked again (held_lost): then the
 * other windows' remainders are put back.  An empty list leaves an empty
 * map, which goes.
 */
static void unhold_locked(struct bga_group *grp, const struct bga_window *w)
{
	struct bga_group_ext *ext = grp->ext;
	if (ext->held == NULL)
		return;
	if (w->end > w->held_from)
		bga_bitmap_clear_range(ext->held, w->held_from, w->end - w->held_from);
	if (ext->windows == NULL) {
		BGA_ASSERT(!held_any(ext, 0, grp->hi));
		free(ext->held);
		ext->held = NULL;
		ext->held_lost = false;
		return;
	}
	if (!ext->held_lost)
		return;
	for (const struct bga_window *o = ext->windows; o; o = o->next) {
		uint64_t s = __atomic_load_n(&o->span, __ATOMIC_ACQUIRE);
		uint32_t cur = bga__wspan_cur(s), end = bga__wspan_end(s);
		if (end > cur)
			bga_bitmap_set_range(ext->held, cur, end - cur);
	}
}

uint32_t bga__window_drop_locked(struct bga_volume *vol, struct bga_group *grp, struct bga_window *w)
{
	BGA_ASSERT(w->linked);
	uint32_t n = cut_locked(vol, grp, w, 0);
	BGA_ASSERT(*w->pprev == w);
	*w->pprev = w->next;
	if (w->next)
		w->next->pprev = w->pprev;
	w->next = NULL;
	w->pprev = NULL;
	w->linked = false;
	unhold_locked(grp, w);
	/* The store wrote the remainder as free while it was linked; what the
	 * owner took since is allocated, so the group must be stored again.
	 * The run after it is no longer another window's room. */
	grp->flags = (grp->flags & ~(uint32_t)BGA_GROUP_NO_ROOM) | BGA_GROUP_DIRTY;
	return n;
}

bool bga__window_take_locked(struct bga_volume *vol, struct bga_take *ac, struct bga_window *w, struct bga_extent *out)
{
	uint64_t s = __atomic_load_n(&w->span, __ATOMIC_ACQUIRE);
	for (;;) {
		uint32_t cur = bga__wspan_cur(s), len = BGA_MIN(ac->max, bga__wspan_end(s) - cur);
		/* An aligned request takes whole units from an aligned cur
		 * (a window booked for it is; one an unaligned request moved
		 * on is not, and is given back by the caller). */
		if (ac->align > 1) {
			if ((bga__group_first(vol, w->group) + cur) % ac->align)
				return false;
			len -= len % ac->align;
		}
		if (len < ac->min || bga__charge_locked(vol, ac, &len) != 0)
			return false;
		/* a CAS: a locality window's other users take without the lock */
		if (__atomic_compare_exchange_n(&w->span, &s, s + len, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			out->start = bga__group_first(vol, w->group) + cur;
			out->len = len;
			return true;
		}
		bga__uncharge(vol, ac, len);
	}
}

bool bga__window_take_or_drop_locked(struct bga_volume *vol, struct bga_take *ac, struct bga_window *w,
				     struct bga_extent *out, bool *used_half)
{
	if (bga__window_take_locked(vol, ac, w, out))
		return true;
	if (used_half) {
		uint64_t s = __atomic_load_n(&w->span, __ATOMIC_ACQUIRE);
		*used_half = 2 * (bga__wspan_cur(s) - w->start) > bga__wspan_end(s) - w->start;
	}
	bga__window_drop_locked(vol, bga__group_lookup(vol, w->group), w); /* it holds the window */
	return false;
}

bool bga__window_take_or_drop(struct bga_volume *vol, struct bga_take *ac, struct bga_window *w,
			      struct bga_extent *out)
{
	if (!w->linked)
		return false;
	uint64_t g = w->group;
	bga__group_lock(vol, g);
	bool taken = bga__window_take_or_drop_locked(vol, ac, w, out, NULL);
	bga__group_unlock(vol, g);
	return taken;
}

/*
 * Blocks of a window's remainder at the goal are nobody's yet, so the run
 * at the goal is made of free and remainder blocks, and a request that
 * succeeds takes them back (ext4 discards a preallocation in the way the
 * same way).  One that fails, for want of a run or of the count, cuts
 * nothing.  Each window in the way keeps what bga_claim would leave it
 * (bga__window_cut_out_locked): the part of its remainder before the
 * extent, or, when the extent covers the remainder's first block (an
 * exact goal at the window's next block), the part after it, so the
 * window still serves its file.  The windows are held still from the
 * count of the run to the cut: an owner's lock-free take meanwhile would
 * take blocks of the run counted.
 */
int bga__window_take_exact_locked(struct bga_volume *vol, struct bga_take *ac, struct bga_group *grp, uint64_t g,
				  uint32_t from, uint32_t *len)
{
	if (!grp->ext || !grp->ext->windows) {
		if (!bga__group_run_at_locked(vol, grp, g, from, ac->min, ac->max, len))
			return -ENOSPC;
		*len -= *len % ac->align;
		return bga__take_locked(vol, ac, grp, g, from, len);
	}
	bga__window_hold_locked(grp, true);
	*len = bga__window_run_locked(grp, from, ac->max);
	*len -= *len % ac->align; /* ac->min and ac->max are multiples of it */
	int rc = *len < ac->min ? -ENOSPC : bga__charge_locked(vol, ac, len);
	if (rc == 0)
		bga__window_cut_out_locked(vol, grp, g, from, *len);
	bga__window_hold_locked(grp, false);
	if (rc)
		return rc;
	/* windows are booked in groups with a bitmap: this cannot fail */
	rc = bga__group_take_locked(vol, grp, g, from, *len);
	BGA_ASSERT(rc == 0);
	return rc;
}

const struct bga_window *bga__window_ends_at_locked(const struct bga_group *grp, uint32_t off)
{
	for (const struct bga_window *w = grp->ext ? grp->ext->windows : NULL; w; w = w->next)
		if (w->end == off)
			return w;
	return NULL;
}

/* Stored as off + 1, so that a zeroed ext (calloc) holds none; the
 * oldest is overwritten, so a place a file outgrew long ago, since
 * freed or filled, is forgotten. */
void bga__window_outgrown_note_locked(const struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t from,
				      uint32_t want)
{
	struct bga_group_ext *ext = grp->ext;
	uint32_t off = from, bpg = vol->cfg.blocks_per_group;
	if (ext == NULL)
		return;
	while (off < bpg && off - from < want && !bga__group_test_locked(vol, grp, g, off))
		off++;
	if (off >= bpg || off - from >= want || bga__window_outgrown_locked(grp, off))
		return;
	ext->outgrown[ext->outgrown_next] = off + 1;
	ext->outgrown_next = (uint8_t)((ext->outgrown_next + 1) % BGA_OUTGROWN);
}

bool bga__window_outgrown_locked(const struct bga_group *grp, uint32_t end)
{
	const struct bga_group_ext *ext = grp->ext;
	for (uint32_t i = 0; ext != NULL && i < BGA_OUTGROWN; i++)
		if (ext->outgrown[i] == end + 1)
			return true;
	return false;
}

/*
 * Does [off, off + len) overlap w's remainder?  [start, end) holds it and
 * is read off the cold line; the owner's span is read only when that
 * overlaps, which a free of another file's blocks never does.
 */
static bool overlaps(const struct bga_window *w, uint32_t off, uint32_t len)
{
	if (BGA_MAX(w->start, off) >= BGA_MIN(w->end, off + len))
		return false;
	uint64_t s = __atomic_load_n(&w->span, __ATOMIC_ACQUIRE);
	uint32_t cur = bga__wspan_cur(s), end = bga__wspan_end(s);
	return BGA_MAX(cur, off) < BGA_MIN(end, off + len);
}

uint32_t bga__window_cut_range_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t at,
				      uint32_t len)
{
	(void)g;
	uint32_t n = 0;
	for (struct bga_window *w = grp->ext ? grp->ext->windows : NULL; w; w = w->next)
		if (overlaps(w, at, len))
			n += cut_locked(vol, grp, w, at);
	return n;
}

/*
 * Raise w's cur to `to` (below its end), giving [cur, to) back to the
 * group: the front of the remainder goes, the rest stays w's.  Group lock
 * held: the owner's lock-free take races, and its CAS then fails and
 * reads the new cur.  [start, cur) then counts blocks the owner did not
 * take, which only the doubling rule's used-half reads.
 */
static uint32_t raise_locked(struct bga_volume *vol, struct bga_group *grp, struct bga_window *w, uint32_t to)
{
	uint64_t s = __atomic_load_n(&w->span, __ATOMIC_ACQUIRE);
	uint32_t cur;
	do {
		cur = bga__wspan_cur(s);
		if (cur >= to)
			return 0;
		if (to >= bga__wspan_end(s))
			return cut_locked(vol, grp, w, cur);
	} while (!__atomic_compare_exchange_n(&w->span, &s, (s & ~BGA_WSPAN_MASK) | to, false, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	if (grp->ext->held) {
		/* free now inside w's [held_from, end): another window may book it */
		bga_bitmap_clear_range(grp->ext->held, cur, to - cur);
		grp->ext->held_lost = true;
	}
	bga__group_release_locked(vol, grp, w->group, cur, to - cur);
	return to - cur;
}

uint32_t bga__window_cut_out_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t at,
				    uint32_t len)
{
	(void)g;
	uint32_t n = 0;
	for (struct bga_window *w = grp->ext ? grp->ext->windows : NULL; w; w = w->next) {
		if (!overlaps(w, at, len))
			continue;
		if (at > bga__wspan_cur(__atomic_load_n(&w->span, __ATOMIC_ACQUIRE)))
			n += cut_locked(vol, grp, w, at);
		else
			n += raise_locked(vol, grp, w, at + len);
	}
	return n;
}

/* Does a window's remainder overlap [off, off + len)?  *n: the windows
 * looked through. */
static bool any_overlaps(const struct bga_group *grp, uint32_t off, uint32_t len, uint32_t *n)
{
	*n = 0;
	for (const struct bga_window *w = grp->ext->windows; w; w = w->next, ++*n)
		if (overlaps(w, off, len))
			return true;
	return false;
}

/*
 * Make the group's held map from its windows' remainders (window.h): each
 * window's range starts at its cur now, so what it handed out before is
 * not its to clear at its unlink.  Without memory the frees go on looking
 * through the windows.
 */
static void held_build_locked(const struct bga_volume *vol, struct bga_group_ext *ext)
{
	uint64_t *map = held_map_new(vol);
	if (map == NULL)
		return;
	for (struct bga_window *w = ext->windows; w; w = w->next) {
		uint64_t s = __atomic_load_n(&w->span, __ATOMIC_ACQUIRE);
		uint32_t cur = bga__wspan_cur(s), end = bga__wspan_end(s);
		w->held_from = cur;
		if (end > cur)
			bga_bitmap_set_range(map, cur, end - cur);
	}
	ext->held = map;
	ext->held_lost = false;
}

bool bga__window_overlaps_locked(const struct bga_volume *vol, struct bga_group *grp, uint32_t off, uint32_t len)
{
	struct bga_group_ext *ext = grp->ext;
	uint32_t n;
	if (ext->held == NULL) {
		if (any_overlaps(grp, off, len, &n))
			return true;
		if (n > BGA_HELD_MIN_WINDOWS)
			held_build_locked(vol, ext);
		return false;
	}
	if (!held_any(ext, off, len)) {
		BGA_ASSERT(!any_overlaps(grp, off, len, &n));
		return false;
	}
	if (any_overlaps(grp, off, len, &n))
		return true;
	/* blocks a window handed out, freed (or checked for a free) while it
	 * is linked: once free they may be booked inside its range */
	ext->held_lost = true;
	return false;
}

uint32_t bga__window_unheld_locked(const struct bga_group *grp)
{
	for (const struct bga_window *w = grp->ext && grp->ext->held ? grp->ext->windows : NULL; w; w = w->next) {
		uint64_t s = __atomic_load_n(&w->span, __ATOMIC_ACQUIRE);
		/* (a remainder past the span is bga_check's other report) */
		for (uint32_t b = bga__wspan_cur(s); b < BGA_MIN(bga__wspan_end(s), grp->hi); b++)
			if (!((grp->ext->held[b / 64] >> (b % 64)) & 1))
				return b;
	}
	return UINT32_MAX;
}

uint32_t bga__window_run_locked(const struct bga_group *grp, uint32_t from, uint32_t max)
{
	uint32_t at = from, stop = BGA_MIN(grp->hi, from + max);
	if (from >= stop)
		return 0; /* past the group's span (a grow not yet opened it) */
	while (at < stop) {
		if (!((grp->bitmap[at / 64] >> (at % 64)) & 1)) {
			at = (uint32_t)bga_bitmap_next_set(grp->bitmap, stop, at);
			continue;
		}
		uint32_t next = at; /* past the remainder that holds `at`, if one does */
		for (const struct bga_window *w = grp->ext->windows; w; w = w->next) {
			uint64_t s = __atomic_load_n(&w->span, __ATOMIC_ACQUIRE);
			if (bga__wspan_cur(s) <= at && at < bga__wspan_end(s))
				next = bga__wspan_end(s);
		}
		if (next == at)
			break;
		at = next;
	}
	return BGA_MIN(at, stop) - from;
}

uint64_t bga__window_next_group(const struct bga_volume *vol, uint64_t g, uint64_t end)
{
	return bga__gset_next(vol, BGA_DIR_WINS, offsetof(struct bga_chunk, wins), g, end);
}

uint32_t bga__window_held_locked(const struct bga_group *grp)
{
	uint32_t n = 0;
	for (const struct bga_window *w = grp->ext ? grp->ext->windows : NULL; w; w = w->next) {
		uint64_t s = __atomic_load_n(&w->span, __ATOMIC_ACQUIRE);
		n += bga__wspan_end(s) - bga__wspan_cur(s);
	}
	return n;
}

uint32_t bga__window_count_upto_locked(const struct bga_group *grp, uint32_t cap)
{
	uint32_t n = 0;
	for (const struct bga_window *w = grp->ext ? grp->ext->windows : NULL; w && n < cap; w = w->next)
		n++;
	return n;
}

uint32_t bga__window_idle_first_upto_locked(const struct bga_group *grp, uint32_t cap)
{
	uint32_t n = 0;
	for (const struct bga_window *w = grp->ext ? grp->ext->windows : NULL; w && n < cap; w = w->next)
		n += w->first_cur != 0 && bga__wspan_cur(__atomic_load_n(&w->span, __ATOMIC_ACQUIRE)) == w->first_cur;
	return n;
}

uint32_t bga__window_count_locked(const struct bga_group *grp)
{
	return bga__window_count_upto_locked(grp, UINT32_MAX);
}

uint64_t bga__window_reclaim(struct bga_volume *vol, const struct bga_geom *geo)
{
	/* The caller's groups: a request that fails costs what its volume
	 * has (bgalloc.h, bga_alloc). */
	uint64_t n = 0, end = geo->ngroups;
	for (uint64_t g = 0; (g = bga__window_next_group(vol, g, end)) < end; g++) {
		bga__group_lock(vol, g);
		struct bga_group *grp = bga__group_lookup(vol, g); /* it held windows */
		for (struct bga_window *w = grp->ext->windows; w; w = w->next)
			n += cut_locked(vol, grp, w, 0);
		if (grp->ext->windows == NULL)
			bga__gset_remove(vol, offsetof(struct bga_chunk, wins), BGA_DIR_WINS, g);
		bga__group_unlock(vol, g);
	}
	return n;
}

void bga__window_hold_locked(const struct bga_group *grp, bool freeze)
{
	for (struct bga_window *w = grp->ext ? grp->ext->windows : NULL; w; w = w->next) {
		if (freeze)
			__atomic_fetch_or(&w->span, BGA_WSPAN_FROZEN, __ATOMIC_ACQ_REL);
		else
			__atomic_fetch_and(&w->span, ~BGA_WSPAN_FROZEN, __ATOMIC_ACQ_REL);
	}
}

void bga__window_freeze_all(struct bga_volume *vol, bool freeze)
{
	uint64_t end = bga__dir_chunks(vol) << BGA_CHUNK_SHIFT;
	for (uint64_t g = 0; (g = bga__window_next_group(vol, g, end)) < end; g++)
		bga__window_hold_locked(bga__group_lookup(vol, g), freeze);
}

void bga__window_clear_held_locked(const struct bga_group *grp, uint64_t *map)
{
	for (const struct bga_window *w = grp->ext ? grp->ext->windows : NULL; w; w = w->next) {
		uint64_t s = __atomic_load_n(&w->span, __ATOMIC_ACQUIRE);
		uint32_t cur = bga__wspan_cur(s), end = bga__wspan_end(s);
		if (end > cur)
			bga_bitmap_clear_range(map, cur, end - cur);
	}
}

void bga__window_stored_locked(struct bga_group *grp)
{
	for (struct bga_window *w = grp->ext ? grp->ext->windows : NULL; w; w = w->next)
		w->stored = bga__wspan_cur(__atomic_load_n(&w->span, __ATOMIC_ACQUIRE));
}

bool bga__window_moved_locked(const struct bga_group *grp)
{
	for (const struct bga_window *w = grp->ext ? grp->ext->windows : NULL; w; w = w->next)
		if (bga__wspan_cur(__atomic_load_n(&w->span, __ATOMIC_ACQUIRE)) != w->stored)
			return true;
	return false;
}

void bga__window_destroy_group(struct bga_group *grp)
{
	while (grp->ext->windows) {
		struct bga_window *w = grp->ext->windows;
		grp->ext->windows = w->next;
		if (w->next)
			w->next->pprev = &grp->ext->windows;
		w->next = NULL;
		w->pprev = NULL;
		w->linked = false;
	}
	free(grp->ext->held);
	grp->ext->held = NULL;
}
