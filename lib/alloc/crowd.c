/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A crowded group (crowd.h): what placement (search.c,
 * place_window_locked and try_group_locked) reads of the other windows a
 * group holds before it books one more there.
 */
#include "crowd.h"
#include "actx.h"
#include "group.h"
#include "groupidx.h"
#include "window.h"
#include "percpu.h"

/*
 * A file's first window keeps no room after another window where the
 * group holds BGA_IDLE_CROWD or more windows that are their files' first
 * and were not taken from since booking (window.h, first_cur): a crowd
 * of new files, each written a little and then left open.  A database
 * builds its catalogs so, dozens of files of a block or two held open
 * together, and each new one, booked past the room kept after the one
 * before, lay a room away from it: they live on, and every free run the
 * volume later had was cut at the room's length (pgbench's end score,
 * docs/HISTORY.md#placement-on-recorded-histories-where-pgbenchs-free-space-ends-in-window-sized-pieces-2026-12-05).
 * Without the room they lie side by side.  Files that grow side by
 * side (a store's tables) took from their windows past their first
 * request, so they make no crowd and keep their room, where a cap on
 * every window's room cost lsm its end score.  Eight, a crowd: one idle
 * new file is any writer's file just begun, and lsm's end went again;
 * two or three are a few writers' (dbench8's, a log writer's), whose
 * files then lay among each other's and split more, and logs aged
 * worse; eight to a dozen moved pgbench and little else
 * (docs/HISTORY.md#placement-on-recorded-histories-a-crowd-of-idle-new-files-keeps-no-room-2026-12-05).
 */
#define BGA_IDLE_CROWD 8
bool bga__crowd_idle_locked(const struct bga_group *grp)
{
	return bga__window_idle_first_upto_locked(grp, BGA_IDLE_CROWD) >= BGA_IDLE_CROWD;
}

/*
 * A crowded group's windows share its free space: in a group that holds
 * BGA_SHARE_WINDOWS windows or more, while no other group has a run for
 * the window and its room (the index's hint), a window booked there, and
 * the room kept after another one, is at most 1/BGA_SHARE_PART of the
 * group's free blocks (grp->free: outside every window) over the windows
 * it would then hold (at least rsv_default).  Many files written at once
 * with nowhere else to go, each a little at a time, otherwise each held
 * a window of up to rsv_max with room after it, and what they left
 * unused cut the group's free space in as many pieces as there were
 * files (fio at random offsets across many files:
 * BENCHMARKS.md#placement-on-recorded-histories); XFS shrinks its
 * speculative preallocation as free space runs low in the same spirit.
 * A few windows in a group keep their sizes, so a few writers' files
 * stay whole; and while other groups have room, windows spread out to
 * them instead, so interleaved writers' files stay whole.  Not for a
 * sized window (the caller's size), a unit's (whole units) or a
 * locality window.  UINT32_MAX: no share.
 */
#define BGA_SHARE_WINDOWS 8
#define BGA_SHARE_PART 4
uint32_t bga__crowd_share_locked(const struct bga_volume *vol, const struct bga_actx *ac, const struct bga_group *grp,
				 uint64_t g)
{
	if (ac->sized || ac->take.align != 1 || ac->book == &ac->pc->local.win)
		return UINT32_MAX;
	/* Other groups' room first: the count walks every window's line. */
	uint64_t ng = ac->take.geo->ngroups, len = (uint64_t)ac->take.room + ac->wsize;
	if (bga__idx_next(vol, 0, g, len) < g || bga__idx_next(vol, g + 1, ng, len) < ng)
		return UINT32_MAX;
	uint32_t n = bga__window_count_locked(grp);
	if (n < BGA_SHARE_WINDOWS)
		return UINT32_MAX;
	return BGA_MAX(grp->free / (BGA_SHARE_PART * (n + 1)), vol->cfg.rsv_default);
}
