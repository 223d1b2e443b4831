/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_WINDOW_H
#define BGA_WINDOW_H

/*
 * Windows that own their blocks (struct bga_window, below), as ext4's
 * preallocations do: booking marks the whole window used in its group in
 * one locked step (bga__window_book_locked), and the owner's allocations
 * then take from it with one CAS on its span word, no group lock and no
 * bitmap write (bga__window_take).  What is left is taken back under the
 * group lock: by the owner when the window is used up or closed, by any
 * caller before an -ENOSPC (bga__window_reclaim), by an exact goal that
 * lands in it, and never counted as used: the remainder was charged to
 * nobody.
 *
 * The span word, 64 bits: cur (bits 0-20) and end (21-41), offsets in the
 * group, at most 2^20; FROZEN (42), set by a store while it copies the
 * group (takes fail and go to the locked path meanwhile); a generation
 * (43-63), bumped whenever the window moves (its group or start change),
 * so a taker's CAS never succeeds on a span it read for another group.
 *
 * Who writes the span, and how:
 *  - the owner's take: cur += len, CAS, no lock;
 *  - a cut (reclaim, exact goal, the owner's drop): end lowered to no less
 *    than cur, CAS, under the group lock;
 *  - a booking: a new span with the generation bumped, under the group
 *    lock, by the owner only;
 *  - a store: FROZEN set and cleared, with every group lock held;
 *  - an exact goal: FROZEN set and cleared on the windows of its group,
 *    under that group's lock, so that the run it measures through their
 *    remainders holds still until it cuts them (or decides not to).
 * So [cur, end) only ever shrinks while the window is linked, and every
 * block in it is marked used in the bitmap and owned by nobody.  Cuts and
 * bookings, the only writers of end, also copy it into w->end (a line
 * away from the span): readers holding the group lock (frees, placement,
 * unlinks) read that copy and [start, end), and the span itself only
 * when they need cur, so they leave the owner's line alone.
 *
 * The held map (struct bga_group_ext.held, a bit a block, under the group
 * lock): what a free reads to learn that its range is in no remainder
 * without reading every window of the group (each another file's line).
 * A free that looked through more than BGA_HELD_MIN_WINDOWS windows makes
 * it (each window's held_from its cur then), and it goes with the group's
 * last window: a few windows cost a free less to read than the map's
 * lines, which neighbouring windows share, cost bookings and unlinks to
 * write.  While it exists:
 *  - Every block of a linked window's remainder has its bit set (a
 *    booking sets [held_from, end), held_from its cur then).
 *  - A set bit of a window's [held_from, end) is that window's until its
 *    unlink, which clears that range; a cut clears the blocks it gives
 *    back, so [held_from, end) holds all of a window's bits.
 *  - The owner's lock-free takes leave their blocks' bits set: a free
 *    that meets a set bit looks through the windows, and when none holds
 *    the block (the owner freeing what its window handed it) it sets
 *    held_lost: such a block may be booked again, by another window,
 *    inside the first one's [held_from, end).  An unlink then puts back
 *    the other windows' remainders after clearing its range, and so does
 *    one after a raise (the front of a remainder given back, free inside
 *    [held_from, end)).  With no window left linked the map is clear and
 *    held_lost false again.
 * A clear bit says "no remainder"; a set one only "look".
 */
/* Up to this many windows in a group, frees look through them
 * (BENCHMARKS.md#the-model-of-n-cores). */
#define BGA_HELD_MIN_WINDOWS 16

#include "types.h"
#include "chunk.h"

/*
 * A window: blocks of one group that a handle (rsv.c) or a CPU (its
 * locality window, search.c's alloc_local) took from the group in one
 * locked step and hands out without the group's lock (window.c, after
 * ext4's preallocations).  Blocks [start, cur) went to the owner's allocations
 * and are theirs now; the remainder [cur, end) is marked used in the
 * group's bitmap but charged to nobody: it counts as free (bga_free_exact,
 * bga_check, the store) and is taken back before any -ENOSPC.
 *
 * `span` packs cur, end, a frozen bit and a generation (above); it is
 * the one field that changes without the group lock: an owner advances
 * cur with a CAS, a thief (reclaim, exact goal) lowers end with a CAS
 * under the group lock.  group and start change only while the window is
 * unlinked, or, for a locality window, with the generation bumped, so a
 * CAS that succeeds read the group its span belongs to.
 *
 * Linked into its group's list (unsorted) while `linked`; the list and
 * `linked` change under the group lock, and only by the owner (or the
 * volume's destroy).  Remainders of different windows never overlap: each
 * was free when booked.
 */
struct bga_window {
	/* Read by other threads under the group lock (list walks, frees,
	 * placement), and written only under it: a line apart from `span`,
	 * which the owner's takes write at every allocation, so that those
	 * readers do not pull the owner's line away (and it not theirs).
	 * Its neighbours' bookings and unlinks write next and pprev, so
	 * nothing the owner's take reads lives here. */
	struct bga_window *next;
	/* what points at this window while it is linked (the list's head or
	 * the previous window's next): its unlink touches its neighbours'
	 * lines, not every window booked after it */
	struct bga_window **pprev;
	uint32_t start;
	uint32_t end;     /* span's end, copied at every change of it (all under the
			   * group lock): what a locked reader looks at instead of span */
	uint32_t stored;  /* cur when the last store copied the group (persist.c), under
			   * every group lock */
	uint32_t held_from; /* cur at booking: the held map's bits are [held_from, end) */
	/* A handle's first window: cur at booking, so "not taken from since"
	 * is cur == first_cur (placement's crowd of idle new files, search.c);
	 * 0 for any other window.  Written by the booker under the group lock. */
	uint32_t first_cur;
	/* Blocks its owner's windows were booked over in a row, each where
	 * the one before ended (this one's included): how far its file has
	 * grown in place (placement's room, room.c).  The booker's, under
	 * the group lock. */
	uint32_t grown;
	uint64_t span __attribute__((aligned(BGA_CACHELINE))); /* atomic: the span word above */
	/* Beside span, the owner's: every take reads them, and on the line
	 * above an unlink of the window booked next to this one would move
	 * them away from the owner between two of its takes
	 * (BENCHMARKS.md#the-model-of-n-cores). */
	uint64_t group;   /* atomic for locality windows */
	/* The group a handle's file aimed at before its first window was
	 * booked (its first request's goal; UINT64_MAX: none), the owner's:
	 * where its contention steers from (steer.h, bga__steer_window_busy). */
	uint64_t aim;
	bool linked;
};


/*
 * Locality windows (ext4's locality-group preallocation): a goal-less
 * request of at most BGA_LOCAL_MAX_REQ blocks (ext4's mb_stream_req
 * default) without a handle comes from its CPU's window, booked
 * BGA_LOCAL_WINDOW blocks at a time (ext4's lg prealloc, 512) near the
 * CPU's home, while its home is contended (BGA_LOCAL_BOOKINGS).  So small
 * unrelated files from CPUs that meet stop sharing a group, and their
 * allocations take no group lock.
 */
#define BGA_LOCAL_MAX_REQ 16
#define BGA_LOCAL_WINDOW 512

/*
 * Bookings of a CPU's locality window after its home group was last found
 * busy.  The window buys a group lock saved per small request where
 * another CPU contends for the home; without contention it costs free
 * space: its blocks stand at the front of a run while the holes before
 * it wait, where first fit would fill them (BENCHMARKS.md#placement-on-recorded-histories), so goal-less requests then walk from the home as first
 * fit does.
 */
#define BGA_LOCAL_BOOKINGS 8

/* A CPU's locality window (percpu.h): the window, the flag that lets
 * one thread at a time book it (search.c's alloc_local), and how many
 * bookings contention has left it; other threads on the CPU take from it
 * meanwhile. */
struct bga_local_window {
	struct bga_window win;
	uint32_t booking; /* atomic: 1 while a thread books */
	uint32_t left;    /* atomic (relaxed, a hint): bookings left, BGA_LOCAL_BOOKINGS
			   * when a goal-less walk found the home's lock held */
};

#define BGA_WSPAN_BITS 21
#define BGA_WSPAN_MASK ((UINT64_C(1) << BGA_WSPAN_BITS) - 1)
#define BGA_WSPAN_FROZEN (UINT64_C(1) << 42)
#define BGA_WSPAN_GEN_SHIFT 43

static inline uint32_t bga__wspan_cur(uint64_t s)
{
	return (uint32_t)(s & BGA_WSPAN_MASK);
}

static inline uint32_t bga__wspan_end(uint64_t s)
{
	return (uint32_t)((s >> BGA_WSPAN_BITS) & BGA_WSPAN_MASK);
}

/* The span [cur, end) with the generation after the one in `old`. */
static inline uint64_t bga__wspan_next(uint64_t old, uint32_t cur, uint32_t end)
{
	uint64_t gen = (old >> BGA_WSPAN_GEN_SHIFT) + 1;
	return (gen << BGA_WSPAN_GEN_SHIFT) | ((uint64_t)end << BGA_WSPAN_BITS) | cur;
}

/*
 * Take min..max blocks from the front of w's remainder, charged to the
 * used counter against `cap` (a capacity never above the real one)
 * through the counter's lock-free path.  No lock: any thread may call it
 * on any window at any time.  False, with nothing taken or charged, when
 * the remainder is shorter than min, the window is frozen, the counter's
 * lock-free path cannot decide, or `goal` (BGA_NO_GOAL: none) names a
 * block the window has handed out, [start, cur) of its group: then the
 * file goes on from a block it gave back (handle.h,
 * bga__goal_behind_window; only the owner passes a goal, and it reads
 * start, which only its own bookings write).
 */
static inline __attribute__((always_inline)) bool bga__window_take(struct bga_volume *vol, struct bga_window *w,
								    uint64_t goal, uint32_t min, uint32_t max,
								    int64_t cap, struct bga_extent *out)
{
	uint64_t s = __atomic_load_n(&w->span, __ATOMIC_ACQUIRE);
	for (;;) {
		uint32_t cur = bga__wspan_cur(s), end = bga__wspan_end(s);
		if (end - cur < min || (s & BGA_WSPAN_FROZEN))
			return false;
		/* acquire: pairs with the booker's release, so a group read
		 * here that is newer than `s` makes the CAS below fail */
		uint64_t g = __atomic_load_n(&w->group, __ATOMIC_ACQUIRE);
		/* The first block it would hand out, once: the CAS's barrier
		 * would make the compiler reload what it is made of.  It serves
		 * the goal's check too: an in-order append's goal is this block
		 * and BGA_NO_GOAL lies past it, so start is looked at only for
		 * a goal before it. */
		uint64_t at = bga__group_first(vol, g) + cur;
		if (goal < at && goal >= at - cur + w->start)
			return false;
		uint32_t len = BGA_MIN(max, end - cur);
		if (!bga__counter_add_limited_fast(vol->used, len, cap))
			return false;
		if (__atomic_compare_exchange_n(&w->span, &s, s + len, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			out->start = at;
			out->len = len;
			return true;
		}
		bga__counter_add(vol->used, -(int64_t)len); /* a thief cut it meanwhile */
	}
}

/* ---- window.c ---- */

/* The block right after the end of w's span: where w's owner's next
 * window starts when its file is written in order.  The owner's call. */
static inline uint64_t bga__window_end_block(const struct bga_volume *vol, const struct bga_window *w)
{
	return bga__group_first(vol, w->group) + bga__wspan_end(__atomic_load_n(&w->span, __ATOMIC_RELAXED));
}

/*
 * Book w over [off, off + wlen) of group g, whose first `taken` blocks the
 * caller has just taken (and charged) for the allocation that booked it:
 * the rest is marked used, uncharged, and w is linked with [off + taken,
 * off + wlen) left.  Nothing is linked when nothing is left, or when the
 * group's window list cannot be allocated (no memory: the window then
 * ends with the taken blocks), but w's span and group still say where it
 * ended.  The group must have a bitmap when anything is left.
 */
void bga__window_book_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, struct bga_window *w,
			     uint32_t off, uint32_t taken, uint32_t wlen);
/* bga__window_take with the window's group lock held, charged through
 * the request (charge.c: reservations, the exact count near full).  False
 * when the remainder is shorter than ac->min or the charge fails
 * (ac->stop may be set). */
bool bga__window_take_locked(struct bga_volume *vol, struct bga_take *ac, struct bga_window *w,
			     struct bga_extent *out);
/* bga__window_take_locked, and when it cannot serve, w's remainder given
 * back and w unlinked (w linked, its group's lock held).  *used_half
 * (unless NULL), when false is returned: more than half of w went to its
 * owner (ext3's rule for doubling the next window). */
bool bga__window_take_or_drop_locked(struct bga_volume *vol, struct bga_take *ac, struct bga_window *w,
				     struct bga_extent *out, bool *used_half);
/* The same taking w's group lock (no group lock held); false at once when
 * w is not linked.  The locality window's: its users are serialised by
 * bga_local_window.booking, and other takers never unlink it. */
bool bga__window_take_or_drop(struct bga_volume *vol, struct bga_take *ac, struct bga_window *w,
			      struct bga_extent *out);
/* An exact goal at `from` in group g, locked: take the run that starts
 * there, ac->min..ac->max of it (a multiple of ac->align), charged
 * (bga__take_locked): the free run, or in a group that holds windows the
 * run of free and remainder blocks, cutting the windows it crosses.  0,
 * -ENOSPC (no run: nothing cut), -ENOMEM or the charge's error
 * (ac->stop). */
int bga__window_take_exact_locked(struct bga_volume *vol, struct bga_take *ac, struct bga_group *grp, uint64_t g,
				  uint32_t from, uint32_t *len);
/* Give w's remainder back to its group and unlink it; the group's lock is
 * held, w linked.  Returns the blocks given back. */
uint32_t bga__window_drop_locked(struct bga_volume *vol, struct bga_group *grp, struct bga_window *w);
/* Give back the part of every window's remainder in group g at or after
 * offset `at` that overlaps [at, at + len).  Returns the blocks given back. */
uint32_t bga__window_cut_range_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t at,
				      uint32_t len);
/* Give back the blocks of every window's remainder in group g that lie in
 * [at, at + len) (bga_claim): a window keeps the part of its remainder
 * before `at`, or, when the range covers the remainder's front, the part
 * after it; the other part is given back too.  Returns the blocks given
 * back. */
uint32_t bga__window_cut_out_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t at,
				    uint32_t len);
/* A file written in order could not go on in place at offset `from` of
 * group g for `want` blocks (search.c): the block that cut the free run
 * there short, when one did (the end of the hole the file outgrew), is
 * noted, one of the last BGA_OUTGROWN such places (groupdesc.h), once;
 * nothing where the group has no ext. */
void bga__window_outgrown_note_locked(const struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t from,
				      uint32_t want);
/* Is `end` one of the places noted there? */
bool bga__window_outgrown_locked(const struct bga_group *grp, uint32_t end);
/* The group's window that ends at `off` (one of them), or NULL. */
const struct bga_window *bga__window_ends_at_locked(const struct bga_group *grp, uint32_t off);
/* Does [off, off + len) overlap a window's remainder in this group?  The
 * held map answers no for a range with no bit set; a set bit that no
 * remainder holds sets held_lost; without a map, the windows are looked
 * through, and the map made when there were more than
 * BGA_HELD_MIN_WINDOWS (above). */
bool bga__window_overlaps_locked(const struct bga_volume *vol, struct bga_group *grp, uint32_t off, uint32_t len);
/* The first block of a linked window's remainder whose bit in the held
 * map is clear (bga_check), or UINT32_MAX (also without a map). */
uint32_t bga__window_unheld_locked(const struct bga_group *grp);
/* The length of the run at `from` of blocks free or in a window's
 * remainder, up to max (0 when `from` is neither).  The remainders move
 * under it unless the group's windows are held (bga__window_hold_locked). */
uint32_t bga__window_run_locked(const struct bga_group *grp, uint32_t from, uint32_t max);
/* The first group in [g, end) that may hold windows (a superset), or end. */
uint64_t bga__window_next_group(const struct bga_volume *vol, uint64_t g, uint64_t end);
/* Blocks the group's windows hold (their remainders), at the instant each
 * span is read. */
uint32_t bga__window_held_locked(const struct bga_group *grp);
/* Windows linked into the group that are their file's first window and
 * were not taken from since booking (cur still first_cur), counting no
 * further than cap. */
uint32_t bga__window_idle_first_upto_locked(const struct bga_group *grp, uint32_t cap);
/* Windows linked into the group (bga_group_stats). */
uint32_t bga__window_count_locked(const struct bga_group *grp);
/* The same, counting no further than `cap` (placement asks only whether
 * a group holds at least so many: every window it walks is a line another
 * thread writes). */
uint32_t bga__window_count_upto_locked(const struct bga_group *grp, uint32_t cap);
/*
 * Take back the remainder of every window in the volume (each owner's
 * next take finds its window empty and books another) in geo's groups
 * (the caller's geometry, under RCU).  Returns the blocks given back.
 * Takes group locks one at a time.
 */
uint64_t bga__window_reclaim(struct bga_volume *vol, const struct bga_geom *geo);
/*
 * Freeze (or thaw) every window of the volume for a store, with every
 * group lock held: while frozen, takes fail (and go to the locked path,
 * which waits for the store), so remainders hold still while it copies.
 */
void bga__window_freeze_all(struct bga_volume *vol, bool freeze);
/* Freeze (or thaw) the windows of one group, its lock held: owners'
 * takes fail meanwhile and go to the locked path, which waits for the
 * lock; cuts still work on a frozen span. */
void bga__window_hold_locked(const struct bga_group *grp, bool freeze);
/* Clear the bits of the group's window remainders in `map`, a copy of its
 * bitmap. */
void bga__window_clear_held_locked(const struct bga_group *grp, uint64_t *map);
/* Unlink every window of a group at destroy (handles stay valid to close). */
void bga__window_destroy_group(struct bga_group *grp);
/* A store copied the group (frozen): remember where each window stood. */
void bga__window_stored_locked(struct bga_group *grp);
/* Did an owner take from one of the group's windows since the last store
 * copied it?  (Takes leave the group's dirty flag alone: no group lock.) */
bool bga__window_moved_locked(const struct bga_group *grp);

#endif
