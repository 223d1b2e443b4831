/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_CROWD_H
#define BGA_CROWD_H

/*
 * A crowded group (crowd.c): two questions placement asks of the windows
 * a group already holds before it books one more there, each under that
 * group's lock.
 */

#include "types.h"

struct bga_actx;
struct bga_group;

/* Does the group hold BGA_IDLE_CROWD or more first windows not taken
 * from since their booking (new files written a little and left open
 * together)?  A file's first window then keeps no room after another
 * window. */
bool bga__crowd_idle_locked(const struct bga_group *grp);
/* The most blocks a window booked in group g may hold, and the room kept
 * after another window there: the group's share while it is crowded and
 * no other group has room; UINT32_MAX for no share. */
uint32_t bga__crowd_share_locked(const struct bga_volume *vol, const struct bga_actx *ac, const struct bga_group *grp,
				 uint64_t g);

#endif
