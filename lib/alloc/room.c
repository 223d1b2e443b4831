/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The room kept after another window (room.h).  Files appended side by
 * side (a log and a dump written at once, a database's tables) each book
 * their next window past the room kept after the other's; a file that
 * has shown it grows goes on through that room at once, and when the room
 * is a fixed size the two files take turns cutting each other.
 */
#include "room.h"
#include "actx.h"
#include "group.h"
#include "window.h"

/*
 * After a window whose file has grown in place past BGA_ROOM_GROWN_PAST
 * times rsv_max (its windows booked one after another, each where the
 * one before ended: it filled every window it was given, the largest
 * ones included), the room is BGA_ROOM_GROWN_TIMES that growth rather
 * than rsv_max: the file has shown it goes on, and as ext3 doubles a
 * window in place and mballoc normalises a request by its file's size,
 * the room follows the file.  A booking after it that the room and its
 * own need do not fit goes on to the next run, so the growing file's
 * next blocks stay free.  A file that has grown less keeps the fixed
 * room, as before: small files written beside each other (a store's
 * catalogs, a build's objects) still lie close.  Twice the growth, past
 * twice rsv_max, at most half the group, from the sweep of the three
 * (docs/HISTORY.md#placement-on-recorded-histories-two-files-appended-side-by-side-2026-12-06):
 * once the growth kept redis's files less whole; three and four times
 * split mariadb's files more; eight times and more split xapian's; past
 * any growth, lsm's or pgbench's end score was lost (their small
 * windows' room grew too); past rsv_max once, mariadb's scores aged
 * worse and pgbench's end was lost; a quarter or an eighth of the group
 * as the cap kept redis's files less whole.  Not for a later window of a file whose own windows grew
 * no more than rsv_max in a row (ac->book: it went on elsewhere before and
 * stays small): put that far past a grown file, it cut a free run deep
 * inside, and xapian's end score went past the bar the place's rule had
 * met; a new file's first window (nothing grown yet) and a grown file's
 * window take the larger room, as redis's log and dump do.
 */
#define BGA_ROOM_GROWN_TIMES 2
#define BGA_ROOM_GROWN_PAST 2
#define BGA_ROOM_GROUP_PART 2

uint32_t bga__room_after_locked(struct bga_volume *vol, const struct bga_actx *ac, struct bga_group *grp, uint64_t g,
				uint32_t off, uint32_t *len, uint32_t need, uint32_t room, uint32_t share)
{
	const struct bga_window *w = bga__window_ends_at_locked(grp, off);
	if (w == NULL)
		return 0;
	if (w->grown <= (uint64_t)vol->cfg.rsv_max * BGA_ROOM_GROWN_PAST ||
	    (ac->book->grown != 0 && ac->book->grown <= vol->cfg.rsv_max))
		return room;
	uint32_t bpg = vol->cfg.blocks_per_group, most = BGA_MIN(share, bpg / BGA_ROOM_GROUP_PART), a = ac->take.align;
	/* whole units (room is): the window after it starts on one */
	uint32_t r = (uint32_t)BGA_MAX(room, BGA_MIN((uint64_t)w->grown * BGA_ROOM_GROWN_TIMES, most) / a * a), run;
	/* the whole run, so that a caller passing over it goes on past its end */
	if (r > room && *len < r + need && bga__group_run_at_locked(vol, grp, g, off, *len, bpg, &run))
		*len = run;
	return r;
}
