/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where the route's phases look (search.h; the route itself, the order in
 * which a request meets them, is route.c's): the exact goal, a handle's
 * window (take, book in place, book by the walk; a small file's first
 * request packed instead), the CPU's locality window, and the group walk
 * with the placement it does under each group's lock (next fit for a
 * file's first window, and for a packed file whose run at the next-fit
 * place holds it; first fit from the group's start for other packed
 * files and for a first window in a crowded or nearly full group; a
 * new file's goal group passed over where its run borders a round of
 * deletes waiting for a commit; room kept after other windows).  The
 * handle's state (struct bga_rsv, handle.h) is decided here.  Blocks
 * are charged as they are taken, in charge.c; nothing is charged before
 * a run is found.
 */
#include <errno.h>
#include <sched.h>

#include "rcu.h"

#include "search.h"
#include "request.h"
#include "actx.h"
#include "group.h"
#include "window.h"
#include "percpu.h"
#include "charge.h"
#include "deferred.h"
#include "steer.h"
#include "pack.h"
#include "crowd.h"
#include "room.h"

/* Busy groups skipped with trylock before an allocation blocks on a lock. */
#define BGA_BUSY_SKIPS 3

/* A file's first window looks for a run of this many times its size
 * (bga__alloc_window). */
#define BGA_FIRST_FIT 2
/* In a group that holds another window, 5/2 times (BGA_FIRST_FIT_BESIDE
 * halves): a new file written beside an open one (a benchmark's clients,
 * a build's jobs) is placed by first fit from the group's start
 * (next_fit_off), into the holes the files deleted there left, and
 * such a file, begun with a block, went on past twice its window and
 * outgrew the hole; a file written alone goes on at the next-fit place
 * and keeps twice, where a larger fit for every first window left the
 * holes that small files fill empty (kernel's mean score).  Two and a
 * half, the middle of the fits that met dbench8's extents per file and
 * lost no history's bar
 * (docs/HISTORY.md#where-files-written-in-order-split-a-first-window-beside-another-looks-for-more-2026-12-05). */
#define BGA_FIRST_FIT_BESIDE 5

/* A file's first window (ac->fit set for it, bga__alloc_window), not a
 * sized, aligned or locality window. */
static inline bool first_window(const struct bga_actx *ac)
{
	return ac->fit != 0 && !ac->sized && ac->take.align == 1 && ac->book != &ac->pc->local.win;
}

/*
 * A file's first window goes on from its goal in the goal's group (the
 * CPU's next-fit position, bga__pack_next, or its home's start), and a
 * packed file at that position (try_group_locked), unless the group
 * holds BGA_NEXT_FIT_WINDOWS other windows or more (files written beside
 * an open one), or at most 1/BGA_NEXT_FIT_FREE_PART of it is free: there
 * it takes the first run from the group's start that holds it (first
 * fit), as before next fit, which kept fiomix's mean and pylib's
 * requests whole
 * (docs/HISTORY.md#placement-on-recorded-histories-variants-tried-for-the-end-score-2026-12-05);
 * one, not two: beside a file kept open (a database's log), next fit put
 * each small file written meanwhile between the large ones written
 * before and after it, where first fit puts it in a low hole, and the
 * large ones lie together (lsm's extents per file and end score,
 * docs/HISTORY.md#placement-on-recorded-histories-a-databases-files-2026-12-05);
 * a quarter, not a tenth, since packed files go on too: the files
 * written into a group that deletes left nearly full fill its holes,
 * and kernel's end held (BENCHMARKS.md#placement-on-recorded-histories).
 */
#define BGA_NEXT_FIT_WINDOWS 1
#define BGA_NEXT_FIT_FREE_PART 4
static bool next_fit_off(const struct bga_volume *vol, const struct bga_group *grp)
{
	return grp->free < vol->cfg.blocks_per_group / BGA_NEXT_FIT_FREE_PART ||
	       bga__window_count_upto_locked(grp, BGA_NEXT_FIT_WINDOWS) >= BGA_NEXT_FIT_WINDOWS;
}

/*
 * A new file's first extent (a first window, or a packed file) passes
 * over its goal's group when the run it would take there from the goal
 * borders blocks that wait for a commit (bga_free_deferred), while more
 * than BGA_PENDING_TIMES times as many of the group's blocks wait as are
 * free (a large round of deletes not yet committed): the walk's other groups
 * come first, and that group last, from its start, as the walk visits
 * any group, so the file is never refused for it.  The commit joins the
 * waiting blocks with the runs beside them; a file put in such a run
 * meanwhile stays an island in what the commit frees.  Files written
 * while a round of deletes waited (a clone begun while postmark's
 * deletes waited for their commit) went, at the next-fit place, into
 * the holes between the dying files, and kernel's end stayed under the
 * peer's only where the place happened to lie elsewhere when the round
 * began: at one value of BGA_NEXT_FIT_FREE_PART
 * (docs/HISTORY.md#placement-on-recorded-histories-files-written-while-deletes-wait-2026-12-05).
 * A waiting round of a few blocks in a group with room, or a run away
 * from the waiting blocks, changes nothing: files written beside a few
 * deletes, or into the clean run after a deleted tree, go where they did.
 */
#define BGA_PENDING_TIMES 2
static bool borders_pending_locked(struct bga_volume *vol, struct bga_group *grp, uint64_t g, uint32_t from,
				   uint32_t need)
{
	const struct bga_group_ext *ext = grp->ext;
	if (ext == NULL || ext->dfree_blocks <= (uint64_t)grp->free * BGA_PENDING_TIMES)
		return false; /* pending is made with a group's first record */
	uint32_t off, len, bpg = vol->cfg.blocks_per_group;
	if (!bga__group_find_locked(vol, grp, g, from, need, bpg, &off, &len))
		return false;
	return (off > 0 && bga_bitmap_range_is_set(ext->pending, off - 1, 1)) ||
	       (off + len < bpg && bga_bitmap_range_is_set(ext->pending, off + len, 1));
}

/*
 * A file's first window passes over a hole shorter than
 * BGA_OUTGROWN_WINDOWS windows that ends where a file written in order
 * ran into another file's block (one of the last BGA_OUTGROWN places
 * noted in the group, bga__window_outgrown_note_locked): a file
 * outgrew that hole, and the next new file first fit put there was
 * written as the one before it and outgrew it at the same block, round
 * after round (a benchmark's files deleted and written again).
 * A larger fit for every first window would pass over such holes too,
 * but over the holes that small files fill as well, and the free space
 * aged worse (kernel's mean score); a hole no file outgrew is filled as
 * before, and a large one is left to first fit, which a file outgrowing
 * it cuts little.  Sixteen places, under four windows: eight places
 * forgot pgbench's holes too soon, six windows moved debs's end
 * (docs/HISTORY.md#where-files-written-in-order-split-the-holes-files-outgrew-remembered-2026-12-05).
 */
#define BGA_OUTGROWN_WINDOWS 4
static bool outgrown_hole_locked(const struct bga_actx *ac, const struct bga_group *grp, uint32_t off, uint32_t len,
				 uint32_t big)
{
	return first_window(ac) && len < big && len < ac->wsize * BGA_OUTGROWN_WINDOWS &&
	       bga__window_outgrown_locked(grp, off + len);
}

/*
 * Where a window goes in group g, with its lock held (*off, *len: the run
 * it starts; false when none here):
 *  - on from the goal, when the run at the goal starts there and, on a
 *    first pass, holds the whole request (at_goal: the goal's own group):
 *    its file stays contiguous;
 *  - else the first run, from the goal on in the goal's group (a file's
 *    first window's goal is where the CPU's last one ended, next fit,
 *    bga__alloc_window; from the group's start for a first window where
 *    next_fit_off says so: first fit, which aged the free space better
 *    than best fit on the recorded histories, the holes low in the group
 *    filled before the runs above them are cut, where best fit cut the
 *    large runs that later deletes would have joined;
 *    BENCHMARKS.md#placement-on-recorded-histories) and from the start
 *    in any other, of at least the first pass's size: ac->fit for a
 *    file's first window (its request, or its window BGA_FIRST_FIT
 *    times over, BGA_FIRST_FIT_BESIDE halves in a group that holds
 *    another window, passing over a hole a file outgrew,
 *    outgrown_hole_locked: what the file has asked for, so a new file packs into
 *    the first run that holds it and never waits on room it has not
 *    shown it needs), else ac->take.room, as mballoc looks for its normalized
 *    size (a file that outgrew a window has shown that it grows; a
 *    window booked in a small hole would be cut short by the blocks
 *    after it, and its file would need a new extent at every window).
 *    The second pass of a booking asks for any run.  Either way room
 *    (ac->take.room, more after a file that grew: room.c) right after another
 *    window is left to that window's file to grow into (a run too short to
 *    hold room for both is passed over): files written side by side, each
 *    a little at a time, then grow apart instead of taking turns.
 * A window so starts where a free run starts (or room past another
 * window), and never cuts a run it does not fill into two free pieces.
 * The group is looked through once: from `from` to its end, then from 0
 * to `from`.  A pass for ac->take.room that finds nothing marks it
 * BGA_GROUP_NO_ROOM, and later such passes skip it until something makes
 * room (groupdesc.h; docs/HISTORY.md#many-writers-changes).  *none is
 * set when no free run of the size asked for was found anywhere in it
 * (then its max_run overstates, and the caller lowers it, as a plain
 * search does).  Runs are looked for up to the larger of ac->take.max and the
 * window's size ac->wsize, and room kept, each at most `share`
 * (crowd.c, bga__crowd_share_locked); the caller cuts them.
 */
static bool place_window_locked(struct bga_volume *vol, const struct bga_actx *ac, struct bga_group *grp, uint64_t g,
				uint32_t from, bool at_goal, uint32_t share, uint32_t *off, uint32_t *len, bool *none)
{
	uint32_t want = BGA_MAX(ac->take.max, BGA_MIN(ac->wsize, share)), room = BGA_MIN(ac->take.room, share);
	uint32_t need = BGA_MAX(ac->take.min, ac->fit ? ac->fit : room);
	if (first_window(ac) && bga__window_count_upto_locked(grp, 1) != 0)
		need = BGA_MAX(need, BGA_MIN(ac->wsize * BGA_FIRST_FIT_BESIDE / 2, vol->cfg.blocks_per_group));
	uint32_t big = BGA_MAX(want, room + need), a = ac->take.align;
	/* a first pass goes on in place only with the whole request (a
	 * sized window's: all of the window) */
	uint32_t here = ac->sized ? need : (room != 0 || ac->fit != 0) ? ac->take.max : ac->take.min;
	*none = false;
	if (at_goal && first_window(ac) && borders_pending_locked(vol, grp, g, from, need))
		return false; /* the walk's other groups first */
	if (at_goal && bga__group_find_unit_locked(vol, grp, g, from, here, want, a, off, len) && *off == from)
		return true;
	if (!at_goal || (first_window(ac) && next_fit_off(vol, grp)))
		from = 0; /* another group, or a file's first window in a group
			   * next fit does not suit: first fit */
	/* A sized window not in place goes on from where the last sized one
	 * booked here ended (ext4's stream allocation goes on from its last
	 * start): the runs before it were looked at then, so the look does
	 * not go through the other files' windows again (round to it, as
	 * any look). */
	if (ac->sized && grp->ext && grp->ext->sized_next > from && grp->ext->sized_next < vol->cfg.blocks_per_group)
		from = grp->ext->sized_next;
	bool first = room != 0 && need == room;
	if (first && (grp->flags & BGA_GROUP_NO_ROOM))
		return false; /* found none last time, and nothing made room since */
	bool found = false;
	for (uint32_t start = from, stop = UINT32_MAX;; stop = start, start = 0) {
		/* runs found up to `big` long: the caller cuts them to the window */
		for (uint32_t at = start; at < stop && bga__group_find_unit_locked(vol, grp, g, at, need, big, a, off, len);) {
			found = true;
			if (*off >= stop)
				break; /* the first round saw it */
			if (outgrown_hole_locked(ac, grp, *off, *len, big)) {
				at = *off + *len; /* a hole a file outgrew */
				continue;
			}
			uint32_t r = room ? bga__room_after_locked(vol, ac, grp, g, *off, len, need, room, share) : 0;
			if (r == 0 || (first_window(ac) && bga__crowd_idle_locked(grp)))
				return true; /* no window before it; new files left open together: side by side */
			if (*len >= r + need) {
				*off += r; /* that window's file grows into the first room (room.c) */
				*len -= r;
				return true;
			}
			at = *off + *len; /* too short to share: the next run */
		}
		if (start == 0)
			break;
	}
	*none = !found;
	if (first)
		grp->flags |= BGA_GROUP_NO_ROOM;
	return false;
}

/*
 * Try one group under its lock.  `from` is the first offset to look at
 * (at_goal: the goal's offset in the goal's group).  With ac->book, a run
 * of up to ac->wsize blocks is looked for (place_window_locked), and
 * becomes that window (window.h) once up to ac->take.max of it is taken.
 * -ENOSPC: no run here (or ac->take.stop says the count ruled the whole
 * request out).
 */
static inline __attribute__((always_inline)) int
try_group_locked(struct bga_volume *vol, struct bga_actx *ac, uint64_t g, uint32_t from, bool at_goal,
		 struct bga_extent *out)
{
	struct bga_group *grp = bga__group_lookup(vol, g);
	struct bga_window *book = ac->book;
	uint32_t share = book ? bga__crowd_share_locked(vol, ac, grp, g) : UINT32_MAX;
	uint32_t off, len, wsize = BGA_MIN(ac->wsize, share), want = BGA_MAX(ac->take.max, wsize);
	bool none = false;
	bool found;
	if (book)
		found = place_window_locked(vol, ac, grp, g, from, at_goal, share, &off, &len, &none);
	else if (at_goal && ac->fit != 0 && borders_pending_locked(vol, grp, g, from, ac->fit))
		found = false; /* a packed file: the walk's other groups first */
	else if (at_goal && ac->fit != 0) {
		/* a packed file, in the group it starts in: at the CPU's
		 * next-fit place when the free run there starts at it and
		 * holds the file (next_fit_off permitting), else first fit
		 * from the group's start (alloc_packed) */
		bool there = ac->at_next && !next_fit_off(vol, grp) &&
			     bga__group_find_locked(vol, grp, g, from, ac->fit, vol->cfg.blocks_per_group, &off, &len) &&
			     off == from;
		found = there || bga__group_find_locked(vol, grp, g, 0, ac->fit, vol->cfg.blocks_per_group, &off, &len);
		none = !found;
	} else {
		found = bga__group_find_unit_locked(vol, grp, g, from, ac->take.min, want, ac->take.align, &off, &len);
	}
	if (!found) {
		/* A failed whole-group search means max_run overstated the
		 * longest run: fix it so the index stops pointing here
		 * (allocations never lower it; without this, every booking
		 * after the groups filled with windows looked through each
		 * of them again). */
		if ((from == 0 && !book) || none)
			bga__group_refresh_locked(vol, grp, g);
		return -ENOSPC;
	}
	/*
	 * A bga_alloc_vec piece whose goal lies inside a free run, not at
	 * its start, would split that run in two: the piece starts at the
	 * run's first aligned block instead, which the run holds as well,
	 * so no free extent is added for the goal's sake (bgalloc.h,
	 * bga_alloc_vec; Ceph's allocators take a free extent from its
	 * start).  A goal right after what was taken before (the next piece,
	 * a file written in order) is a run's start already.
	 */
	if (at_goal && !book && off == from && ac->whole) {
		uint32_t s = bga__group_run_start_locked(vol, grp, g, off);
		if (s < off) {
			uint64_t first = bga__group_first(vol, g);
			s = (uint32_t)((first + s + ac->take.align - 1) / ac->take.align * ac->take.align - first);
			off = BGA_MIN(s, off);
		}
	}
	/* The window is at most its size (never above rsv_max); an extent
	 * longer than the window goes on past it. */
	uint32_t wlen = BGA_MIN(len, wsize);
	len = BGA_MIN(len, ac->take.max);
	int rc = bga__take_locked(vol, &ac->take, grp, g, off, &len);
	if (rc)
		return rc;
	if (book) {
		bga__window_book_locked(vol, grp, g, book, off, len, wlen);
		/* a handle's first window: idle while cur stays here (crowd.c, bga__crowd_idle_locked) */
		book->first_cur = book != &ac->pc->local.win && !ac->req->rsv->booked ? off + len : 0;
	}
	if (book && ac->sized && grp->ext)
		grp->ext->sized_next = off + wlen; /* no ext: taken whole, no window linked */
	out->start = bga__group_first(vol, g) + off;
	out->len = len;
	return 0;
}

static int try_group(struct bga_volume *vol, struct bga_actx *ac, uint64_t g, uint32_t from, bool at_goal, bool wait,
		     struct bga_extent *out)
{
	int rc;
	if (bga__group_ensure_lock(vol, g, wait, &rc) == NULL)
		return rc;
	rc = try_group_locked(vol, ac, g, from, at_goal, out);
	bga__group_unlock(vol, g);
	return rc;
}

/*
 * The group walk: find and take a run of ac->take.min..ac->take.max blocks (and
 * book ac->book over it), the goal's group from ac->goal onwards, then
 * the index from the next group round to the goal's group again.  Busy
 * groups are skipped (trylock) a few times before the walk blocks;
 * skipped groups are visited again at the end, so contention never
 * causes a false -ENOSPC.  ac->goal_busy: the goal's group was skipped.
 * Stops at once when ac->take.stop is set.  0, -ENOSPC, -ENOMEM or ac->take.stop.
 */
int bga__search(struct bga_volume *vol, struct bga_actx *ac, struct bga_extent *out)
{
	const struct bga_geom *geo = ac->take.geo;
	struct bga_gpos at = bga__gpos(vol, ac->goal);
	uint64_t g0 = at.g, skipped[BGA_BUSY_SKIPS];
	unsigned nskipped = 0;
	int rc = try_group(vol, ac, g0, at.off, true, false, out);
	if (rc != -EBUSY && rc != -ENOSPC)
		return rc;
	if (ac->take.stop)
		return ac->take.stop;
	if (rc == -EBUSY)
		skipped[nskipped++] = g0;
	ac->goal_busy = rc == -EBUSY;

	uint64_t n = geo->ngroups;
	/* Two segments: (g0, n) then [0, g0]; g0 again from its start. */
	for (int seg = 0; seg < 2; seg++) {
		uint64_t g = seg == 0 ? g0 + 1 : 0, end = seg == 0 ? n : g0 + 1;
		while ((g = bga__idx_next(vol, g, end, BGA_MAX(ac->take.min, ac->fit ? ac->fit : ac->take.room))) < end) {
			bool wait = nskipped >= BGA_BUSY_SKIPS;
			rc = try_group(vol, ac, g, 0, false, wait, out);
			if (rc == -EBUSY)
				skipped[nskipped++] = g;
			else if (rc != -ENOSPC)
				return rc;
			else if (ac->take.stop)
				return ac->take.stop;
			g++;
		}
	}
	for (unsigned i = 0; i < nskipped; i++) {
		rc = try_group(vol, ac, skipped[i], 0, false, true, out);
		if (rc != -ENOSPC || ac->take.stop)
			return ac->take.stop ? ac->take.stop : rc;
	}
	return -ENOSPC;
}

/*
 * The exact goal: the run that starts there, or -ENOSPC.  In a group that
 * holds windows the run goes on through their remainders, which it takes
 * back (window.c: windows' blocks are window.c's to cut).
 */
int bga__alloc_exact(struct bga_volume *vol, struct bga_actx *ac, struct bga_extent *out)
{
	struct bga_gpos at = bga__gpos(vol, ac->req->goal);
	uint32_t len;
	int rc;
	struct bga_group *grp = bga__group_ensure_lock(vol, at.g, true, &rc);
	if (grp == NULL)
		return rc;
	if (ac->keep_windows) {
		/* a remainder is marked used: the run at the goal ends at it */
		rc = bga__group_run_at_locked(vol, grp, at.g, at.off, ac->take.min, ac->take.max, &len) ? 0 : -ENOSPC;
		len -= len % ac->take.align;
		if (rc == 0)
			rc = bga__take_locked(vol, &ac->take, grp, at.g, at.off, &len);
	} else {
		rc = bga__window_take_exact_locked(vol, &ac->take, grp, at.g, at.off, &len);
	}
	if (rc == 0) {
		out->start = ac->req->goal;
		out->len = len;
	}
	bga__group_unlock(vol, at.g);
	return rc;
}

/*
 * The CPU's locality window (window.h), for a small goal-less request:
 * its remainder under its group's lock when it holds the whole request
 * (a shorter one is given back: a request one run could hold is never
 * split over the end of a window), else a new window booked by the walk
 * from the CPU's home (ac->goal), in the first run that holds the whole
 * request, or any run when none does.  One thread books at a time
 * (local.booking); -EBUSY, with nothing taken, while another does, or
 * when no contention left the window a booking (local.left): the caller
 * walks without it.  Other threads on the CPU take from the window
 * meanwhile.
 */
int bga__alloc_local(struct bga_volume *vol, struct bga_actx *ac, struct bga_extent *out)
{
	struct bga_percpu *pc = ac->pc;
	if (__atomic_exchange_n(&pc->local.booking, 1, __ATOMIC_ACQUIRE))
		return -EBUSY;
	struct bga_window *w = &pc->local.win;
	uint32_t min = ac->take.min;
	ac->take.min = ac->take.max;
	int rc = bga__window_take_or_drop(vol, &ac->take, w, out) ? 0 : -ENOSPC;
	ac->take.min = min;
	ac->take.stop = 0; /* whatever it ruled out was max_len: the walk decides */
	if (rc != 0 && __atomic_load_n(&pc->local.left, __ATOMIC_RELAXED) == 0) {
		rc = -EBUSY; /* no contention: the walk, as first fit */
	} else if (rc != 0) {
		ac->book = w;
		ac->wsize = BGA_MIN(BGA_LOCAL_WINDOW, vol->cfg.blocks_per_group);
		ac->fit = ac->take.max;
		rc = bga__search(vol, ac, out);
		if (rc == -ENOSPC && !ac->take.stop) {
			ac->fit = 0;
			rc = bga__search(vol, ac, out);
		}
	}
	if (rc == 0 && ac->book != NULL) {
		uint32_t left = __atomic_load_n(&pc->local.left, __ATOMIC_RELAXED);
		__atomic_store_n(&pc->local.left, left ? left - 1 : 0, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&pc->local.booking, 0, __ATOMIC_RELEASE);
	return ac->take.stop ? ac->take.stop : rc;
}

/*
 * Take the whole request, ac->take.max blocks, from the handle's window,
 * charged (charge.c), with the window's group lock held.  False when the
 * window cannot serve: then it is given back (a remainder shorter than
 * the request too: the next window is booked from where it started, so a
 * file written in order goes on in place, and its request is never cut
 * at a window's end while the free space could hold it whole), and the
 * handle's next one doubles when this one served its file well (more
 * than half used, as ext3 does).  A failed take leaves ac->take.stop clear:
 * a count that ruled out max_len says nothing of min_len, and the walk
 * that follows decides.
 */
static bool handle_take_locked(struct bga_volume *vol, struct bga_actx *ac, struct bga_rsv *rsv,
			       struct bga_extent *out)
{
	bool used_half;
	uint32_t min = ac->take.min;
	ac->take.min = ac->take.max;
	bool taken = bga__window_take_or_drop_locked(vol, &ac->take, &rsv->win, out, &used_half);
	ac->take.min = min;
	if (taken) {
		rsv->hits++;
		return true;
	}
	ac->take.stop = 0; /* whatever it ruled out was max_len: the walk decides */
	if (used_half && !rsv->sized)
		rsv->size = BGA_MIN(rsv->size * 2, vol->cfg.rsv_max);
	return false;
}

void bga__rsv_count(struct bga_volume *vol, struct bga_rsv *rsv, uint64_t misses)
{
	uint64_t hits = rsv->hits;
	if (hits != 0)
		bga__pack_grew(vol, rsv); /* its window served a later request */
	if (hits + misses == 0)
		return;
	struct bga_percpu *pc = bga__percpu(vol);
	rsv->hits = 0;
	__atomic_fetch_add(&pc->rsv.allocs, hits + misses, __ATOMIC_RELAXED);
	__atomic_fetch_add(&pc->rsv.hits, hits, __ATOMIC_RELAXED);
}

/*
 * The handle's next window, booked from `goal` (ac->goal, ac->book,
 * ac->wsize): right after the old one when there is no goal, so a file
 * written in order stays contiguous; a first window without a goal from
 * the CPU's home, where goal-less requests pack (steer.h).
 */
static void window_next(struct bga_volume *vol, struct bga_actx *ac, struct bga_rsv *rsv, uint64_t goal)
{
	const struct bga_geom *geo = ac->take.geo;
	uint64_t next = rsv->booked ? bga__window_end_block(vol, &rsv->win) : BGA_NO_GOAL;
	if (goal == BGA_NO_GOAL)
		goal = next < geo->nblocks ? next : bga__home(ac->pc, geo->nblocks);
	ac->goal = goal;
	ac->book = &rsv->win;
	uint32_t a = ac->take.align;
	/* A request that would use the whole window up (at least its
	 * size, less than twice it) books it doubled now, the doubling
	 * that using it up earns (bga_rsv_open): the window reaches past
	 * the extent, so the file's next blocks stay its own (ext3's
	 * window grows in place).  Used up whole, the window left
	 * nothing after the file's end, and a new file's first window,
	 * looked for from the next-fit place, began right there
	 * (BENCHMARKS.md#where-files-written-in-order-split).  A request
	 * larger still goes past its window, as before: its file has no
	 * window to reach past it. */
	if (!rsv->sized && a == 1 && rsv->size <= ac->take.max && (uint64_t)rsv->size * 2 > ac->take.max)
		rsv->size = BGA_MIN(rsv->size * 2, vol->cfg.rsv_max);
	ac->wsize = BGA_MIN(rsv->size, vol->cfg.blocks_per_group);
	if (a > 1) {
		/* An aligned window: whole units, at least one, and never past
		 * rsv_max (route checked that rsv_max holds a unit). */
		uint32_t cap = BGA_MIN(vol->cfg.rsv_max, vol->cfg.blocks_per_group) / a * a;
		ac->wsize = BGA_MIN((ac->wsize + a - 1) / a * a, cap);
	}
	/* A size the caller set is the size of every window, the first
	 * included (XFS's extent size hint): the first pass wants a run of
	 * all of it (and of the request), taken at the goal or in the first
	 * run on from it that holds it, with no room kept after other
	 * windows and none looked for; so the file books once a size.  Only
	 * when no run anywhere holds it does the second pass take less. */
	ac->sized = rsv->sized;
	if (rsv->sized) {
		uint32_t fit = BGA_MAX(ac->take.max, ac->wsize);
		ac->fit = BGA_MIN((fit + a - 1) / a * a, vol->cfg.blocks_per_group / a * a);
		ac->take.room = 0;
	}
}

/*
 * A packed file's request (pack.h), no window booked.  With a goal,
 * as a plain request: the run at the goal, then the walk.  Without one,
 * first fit from the CPU's home where bga__pack_home_first says so;
 * else at the CPU's next-fit place (bga__pack_next: where the last file
 * it placed in order ended) when the free run there starts there and
 * holds all of max_len, so that files written one after another, packed
 * or not, lie in the order they came and a round deleted together frees
 * one run (aged's and debs's end scores); else from the CPU's home
 * (ac->goal, steered as a plain goal-less request is; the place's group
 * when there is one): the first run in its group, from the group's
 * start, that holds all of max_len, then the walk's other groups, first
 * fit, as ext2 and first fit place a small file (they aged best on the
 * recorded histories: BENCHMARKS.md#placement-on-recorded-histories),
 * the place left where it was, so that later files go on from it rather
 * than from a hole; a shorter run only when none holds it.  Where it
 * went moves the CPU's home as a plain goal-less request's does.
 */
static int alloc_packed(struct bga_volume *vol, struct bga_actx *ac, struct bga_extent *out)
{
	uint32_t min = ac->take.min;
	ac->book = NULL;
	ac->take.room = 0;
	ac->fit = ac->req->goal == BGA_NO_GOAL ? ac->take.max : 0;
	ac->take.min = ac->take.max;
	uint64_t next = ac->fit != 0 ? bga__pack_next(ac->pc) : BGA_NO_GOAL;
	ac->at_next = next < ac->take.geo->nblocks && !bga__pack_home_first(vol, ac->take.geo, ac->goal, next, ac->fit);
	ac->goal = ac->at_next ? next : ac->goal;
	int rc = bga__search(vol, ac, out);
	if (rc == 0 && ac->at_next && out->start == next)
		bga__pack_set_next(ac->pc, out->start + out->len); /* taken at the place */
	ac->at_next = false;
	ac->take.min = min;
	ac->fit = 0;
	if (ac->take.stop)
		ac->take.stop = 0; /* the count ruled out max_len: the walk for min_len decides */
	else if (rc != -ENOSPC)
		goto out;
	if (min < ac->take.max)
		rc = bga__search(vol, ac, out);
out:
	ac->note = true;
	return ac->take.stop ? ac->take.stop : rc;
}

/*
 * A request that no free run holds whole: runs of at least half of
 * max_len looked for first, then a quarter, and so on down to min_len
 * (ext2's and mballoc's retries with a smaller goal length), so its
 * file gets the few longest pieces the free space has, not the first
 * run from the goal however short: near full, a database's large files
 * took their first piece from the few-block holes at a group's start
 * (docs/HISTORY.md#placement-on-recorded-histories-a-databases-files-2026-12-05).
 */
static int search_halving(struct bga_volume *vol, struct bga_actx *ac, struct bga_extent *out)
{
	uint32_t min = ac->take.min, a = ac->take.align;
	int rc = -ENOSPC;
	for (uint32_t part = ac->take.max / 2 / a * a; part > min && rc == -ENOSPC; part = part / 2 / a * a) {
		ac->take.min = part;
		rc = bga__search(vol, ac, out);
		ac->take.stop = 0; /* the count ruled out `part`, not min_len */
	}
	ac->take.min = min;
	return rc == -ENOSPC ? bga__search(vol, ac, out) : rc;
}

/*
 * A bga_alloc_vec piece whose file ran out of its window near its group's
 * end: the free run from where the file stopped goes on to the group's
 * end but is shorter than the piece.  It is taken as it is (at least
 * min_len), and the next piece goes on at the next group's first block:
 * one physical run across the seam, where a booking elsewhere left the
 * tail to another file's first window, which outgrew it (lmdb's extents per file,
 * docs/HISTORY.md#placement-on-recorded-histories-the-held-out-misses-of-2026-12-05-xapians-end-lmdbs-extents-per-file).
 * A single-extent request still asks for a run that holds all of it, and
 * an aligned piece one of whole aligned blocks.  False, nothing taken,
 * when the run does not reach the group's end.
 */
static bool group_tail_locked(struct bga_volume *vol, struct bga_actx *ac, struct bga_group *grp, uint64_t g,
			      uint32_t from, struct bga_extent *out)
{
	uint32_t bpg = vol->cfg.blocks_per_group, off, len;
	if (ac->take.align != 1 || from >= bpg ||
	    !bga__group_find_locked(vol, grp, g, from, ac->take.min, bpg, &off, &len) || off != from ||
	    off + len != bpg || len >= ac->take.max || bga__take_locked(vol, &ac->take, grp, g, off, &len) != 0)
		return false;
	out->start = bga__group_first(vol, g) + off;
	out->len = len;
	return true;
}

/*
 * The window phase: the handle's own window first; when it is used up,
 * the next window booked right after it under the same lock hold if it
 * lies in the same group (a file written in order), else by the walk,
 * first with room to grow, then anywhere (place_window_locked).  A file's
 * first window starts from the steered goal (ac->goal, as a plain
 * request's walk would: steer.h); later ones follow their file.  0;
 * ac->take.stop; or another error, and the route goes on as a plain request.
 * Sets ac->note when the CPU's hints learn from where the extent went (a
 * first window booked by the walk for a goal).
 */
int bga__alloc_window(struct bga_volume *vol, struct bga_actx *ac, struct bga_extent *out)
{
	struct bga_rsv *rsv = ac->req->rsv;
	uint64_t want = ac->req->goal, steered = ac->goal;
	int rc = -ENOSPC;
	/* the file's first request (counted once it is served), or a later
	 * one: the file grew (bga_alloc_vec's pieces are not counted) */
	bool first_req = rsv->first == 0 && !ac->whole && !ac->keep_windows;
	if (rsv->first != 0) {
		bga__pack_grew(vol, rsv);
	} else if (first_req && ac->take.align == 1 && !rsv->booked && !rsv->sized &&
		   bga__pack_decides(ac->pc, ac->take.max)) {
		bga__rsv_count(vol, rsv, 1);
		rc = alloc_packed(vol, ac, out);
		if (rc == 0)
			bga__pack_first(ac->pc, rsv, ac->take.max);
		return rc;
	}
	/* A new file that files like it showed to stay whole more often than
	 * not, goal-less: a hole of exactly its length first (hole.c). */
	if (first_req && ac->take.align == 1 && !rsv->booked && !rsv->sized && want == BGA_NO_GOAL &&
	    bga__pack_mostly_whole(ac->pc, ac->take.max) && bga__alloc_hole(vol, ac, out) == 0) {
		bga__rsv_count(vol, rsv, 1);
		bga__pack_first(ac->pc, rsv, ac->take.max);
		ac->note = true;
		return 0;
	}
	ac->take.room = BGA_MIN(vol->cfg.rsv_max, vol->cfg.blocks_per_group) / ac->take.align * ac->take.align;
	ac->fit = 0;
	ac->sized = false;
	ac->book = NULL;
	ac->note = false;
	if (rsv->win.linked) {
		uint64_t g = rsv->win.group;
		bool busy = bga__group_lock_busy(vol, g);
		/* a free goal among the blocks the window handed out: the
		 * file goes on from blocks it gave back, and the window's
		 * remainder goes back too, so the next booking can start at
		 * the goal and hold them both (handle.h); a used one (a file
		 * written at random offsets) is the window's as before */
		struct bga_group *grp = bga__group_lookup(vol, g); /* it holds the window */
		bool back = bga__goal_behind_window(vol, rsv, want) &&
			    !bga__group_test_locked(vol, grp, g, (uint32_t)(want - bga__group_first(vol, g)));
		if (back)
			bga__window_drop_locked(vol, grp, &rsv->win);
		if (!back && handle_take_locked(vol, ac, rsv, out)) {
			rc = 0;
		} else if (!ac->take.stop) {
			/* on from where the window stopped, whatever block the
			 * request names: the file's blocks stay together */
			window_next(vol, ac, rsv, back ? want : BGA_NO_GOAL);
			struct bga_gpos at = bga__gpos(vol, ac->goal);
			if (at.g == g && ac->vec && !back && group_tail_locked(vol, ac, grp, g, at.off, out)) {
				ac->book = NULL; /* taken plain: the next piece books on */
				rc = 0;
			} else if (at.g == g) {
				rc = try_group_locked(vol, ac, g, at.off, true, out);
				if (rc != 0 || out->start != ac->goal) /* not in place */
					bga__window_outgrown_note_locked(vol, grp, g, at.off, ac->take.max);
			}
		}
		bga__group_unlock(vol, g);
		if (busy)
			bga__steer_window_busy(vol, ac->pc, g, rsv->win.aim, ac->take.geo->nblocks);
		if (rc == 0 && ac->book == NULL)
			return 0; /* served by the window (counted in the handle) */
	}
	bga__rsv_count(vol, rsv, 1);
	if (ac->take.stop)
		return ac->take.stop;
	if (rc != 0) {
		bool first = ac->book == NULL && !rsv->booked;
		/* A file's first window goes on from where the CPU's last
		 * one (or a packed file) took its first extent (next fit),
		 * until a commit frees blocks below that place
		 * (bga__pack_next): files written one after another lie
		 * in the order they came, so a round deleted together frees
		 * one run, where first fit put each file of a later round into
		 * the holes between an earlier round's survivors, and their
		 * deletes cut the runs around them (kernel's end score,
		 * BENCHMARKS.md#the-placement-policy-every-history-side-by-side). */
		uint64_t next = first && want == BGA_NO_GOAL && ac->take.align == 1 && !rsv->sized ? bga__pack_next(ac->pc)
											       : BGA_NO_GOAL;
		if (ac->book == NULL)
			window_next(vol, ac, rsv, !first ? want : next < ac->take.geo->nblocks ? next : steered);
		/* A file's first window asks only for what the file asked
		 * for (place_window_locked): its request, or its window
		 * BGA_FIRST_FIT times over, whichever is larger, so a file
		 * that fills its first window still goes on in place for as
		 * much again, while holes shorter than that are left to
		 * smaller files.  Twice, not one and a half: a file whose
		 * first request was a block and whose next filled a 64 KiB
		 * page (dbench's files) outgrew a hole of one and a half
		 * windows at its second request, and the next new file took
		 * the same hole a block shorter and outgrew it in turn
		 * (BENCHMARKS.md#where-files-written-in-order-split). */
		if (!rsv->booked && !rsv->sized) {
			uint32_t a = ac->take.align, fit = BGA_MAX(ac->take.max, ac->wsize * BGA_FIRST_FIT);
			ac->fit = BGA_MIN((fit + a - 1) / a * a, vol->cfg.blocks_per_group / a * a);
		}
		rc = bga__search(vol, ac, out);
		bool goal_busy = ac->goal_busy;
		if (rc == -ENOSPC && !ac->take.stop && (ac->take.room != 0 || ac->sized)) {
			ac->take.room = 0;
			ac->fit = 0;
			ac->sized = false;
			uint32_t min = ac->take.min;
			if (min < ac->take.max) {
				ac->take.min = ac->take.max;
				rc = bga__search(vol, ac, out);
				ac->take.stop = 0;
				/* No free run holds all of it: the other windows'
				 * remainders are taken back (<bgalloc/alloc.h>,
				 * where a request looks, 3) and the whole request
				 * looked for again before a shorter run is cut, so
				 * an open file's tail never shortens another file
				 * that one run could hold (mballoc discards its
				 * preallocations and tries again only before a
				 * failure).  Not for a later bga_alloc_vec piece:
				 * its call has a result already, so a shorter run
				 * or the end of its carve comes first. */
				if (rc == -ENOSPC && !ac->keep_windows && bga__window_reclaim(vol, ac->take.geo) != 0) {
					rc = bga__search(vol, ac, out);
					ac->take.stop = 0;
				}
				ac->take.min = min;
			}
			if (rc == -ENOSPC)
				rc = search_halving(vol, ac, out);
			ac->goal_busy = goal_busy; /* what the goal's group was at the first walk */
		}
		ac->note = first && want != BGA_NO_GOAL;
	}
	if (rc == 0 && !rsv->booked)
		bga__pack_booked(vol, ac->pc, want, first_req, out);
	if (rc == 0)
		rsv->booked = true;
	if (rc == 0 && first_req)
		bga__pack_first(ac->pc, rsv, ac->take.max);
	/* A window that the request booking it used up whole was more than
	 * half used: the next is twice as large (bgalloc.h, bga_rsv_open),
	 * so a writer's windows grow past its requests; one with a
	 * remainder doubles when it is given back (handle_take_locked). */
	if (rc == 0 && ac->book && !rsv->win.linked && !rsv->sized)
		rsv->size = BGA_MIN(rsv->size * 2, vol->cfg.rsv_max);
	return ac->take.stop ? ac->take.stop : rc;
}
