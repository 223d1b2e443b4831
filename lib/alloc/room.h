/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_ROOM_H
#define BGA_ROOM_H

/*
 * The room kept after another window (room.c): how much free space a
 * window booked right after another group member's window leaves that
 * window's file to grow into (search.c, place_window_locked).
 */

#include "types.h"

struct bga_actx;
struct bga_group;

/*
 * The room to keep in group g after the window that ends at `off`, where
 * a free run starts that a window needing `need` blocks would be booked
 * in: 0 when no window of the group ends there; else `room`, or, after a
 * window whose file has grown in place past twice rsv_max (window.h,
 * grown), twice that growth, at least `room` and at most `share` and
 * half the group, in whole units of ac->take.align, unless ac->book, the
 * window being booked, is a later window of a file whose windows grew at
 * most rsv_max in a row.  *len, the run's length as the caller measured
 * it (up to a cap of its own), is measured again, whole, when the cap may
 * have hid that room and `need` after it.  The group's lock is held;
 * nothing changes in the group.
 */
uint32_t bga__room_after_locked(struct bga_volume *vol, const struct bga_actx *ac, struct bga_group *grp, uint64_t g,
				uint32_t off, uint32_t *len, uint32_t need, uint32_t room, uint32_t share);

#endif
