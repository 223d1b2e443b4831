/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The held map (lib/core/window.h): a bit a block over a group's window
 * remainders, made once frees look through more than BGA_HELD_MIN_WINDOWS
 * windows and gone with the group's last one.  A free of a remainder's
 * block stays refused whatever the windows did before (handed out, freed,
 * raised by an exact goal, booked again); a free of a handed-out block is
 * taken.
 */
#include <errno.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "requests.h"
#include "group.h"
#include "window.h"
#include "testutil.h"

/*
 * n more windows in group 0 of vol, sized 16, 100 blocks apart from `at`
 * (free there), and the held map (window.h) made by a free that looks
 * through them all: more than BGA_HELD_MIN_WINDOWS, with `others`.
 */
static void crowd(struct bga_volume *vol, uint64_t at, uint32_t n, uint32_t others, struct bga_rsv **h)
{
	struct bga_extent w, e;
	cr_assert_gt(n + others, BGA_HELD_MIN_WINDOWS);
	for (uint32_t i = 0; i < n; i++)
		h[i] = window_at(vol, at + 100 * i, 16, &w);
	struct bga_group *grp = bga__group_lookup(vol, 0);
	cr_assert_null(grp->ext->held, "no map while frees look through a few windows");
	cr_assert_eq(alloc_at(vol, at + 100 * n, 1, 1, NULL, 0, &e), 0);
	cr_assert_eq(bga_free(vol, e.start, 1), 0);
	cr_assert_not_null(grp->ext->held, "a free looked through more than BGA_HELD_MIN_WINDOWS");
}

static void uncrowd(struct bga_rsv **h, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		bga_rsv_close(h[i]);
}

/*
 * a's window booked by window_at(vol, 1000, ...), b's (wb) since booked
 * inside a's first range, `many` crowding the group: a's close leaves
 * every block of b's remainder unfreeable; then everything goes back
 * but the block each of `many` took.
 */
static void close_first_then_second(struct bga_volume *vol, struct bga_rsv *a, struct bga_rsv *b,
				    const struct bga_extent *wb, struct bga_rsv **many)
{
	bga_rsv_close(a);
	for (uint64_t blk = wb->start; blk < wb->start + wb->len; blk++)
		cr_assert_eq(bga_free(vol, blk, 1), -EINVAL, "block %llu is b's remainder", (unsigned long long)blk);
	cr_assert_eq(bga_check(vol, NULL), 0);
	bga_rsv_close(b);
	uncrowd(many, BGA_HELD_MIN_WINDOWS);
	cr_assert_eq(bga_free(vol, 1000, 1), 0);
	cr_assert_eq(bga_free(vol, wb->start - 1, 1), 0);
	cr_assert_eq(bga_free_exact(vol), (1 << 16) - BGA_HELD_MIN_WINDOWS);
	cr_assert_eq(bga_check(vol, NULL), 0);
	bga_destroy(vol);
}

/*
 * The held map (window.h): a free of a block in another window's
 * remainder is refused even when that window was booked over blocks the
 * first window had handed out, its owner freed, and the first window's
 * close then cleared its own range of the map.
 */
Test(held, a_remainder_booked_where_another_window_handed_out_stays_unfreeable)
{
	struct bga_volume *vol = make_volume(1 << 16, 4096, 0);
	struct bga_extent wa, wb, e;
	struct bga_rsv *a = window_at(vol, 1000, 64, &wa), *many[BGA_HELD_MIN_WINDOWS];
	crowd(vol, 2000, BGA_HELD_MIN_WINDOWS, 1, many);
	for (uint64_t b = wa.start; b < wa.start + 31; b++)
		cr_assert_eq(alloc_at(vol, b, 1, 1, a, 0, &e), 0);
	/* a's owner frees what its window handed it, the window still open */
	cr_assert_eq(bga_free(vol, wa.start, 31), 0);
	struct bga_rsv *b = window_at(vol, wa.start, 16, &wb);
	cr_assert_eq(wb.start, wa.start + 1, "b is booked inside a's first range");
	close_first_then_second(vol, a, b, &wb, many);
}

/* The same after the front of a remainder went to an exact goal (a
 * raise, window.c): those blocks, freed, lie inside the first window's
 * range when another window books them. */
Test(held, a_remainder_booked_where_an_exact_goal_raised_another_stays_unfreeable)
{
	struct bga_volume *vol = make_volume(1 << 16, 4096, 0);
	struct bga_extent wa, wb, e;
	struct bga_rsv *a = window_at(vol, 1000, 64, &wa), *many[BGA_HELD_MIN_WINDOWS];
	crowd(vol, 2000, BGA_HELD_MIN_WINDOWS, 1, many);
	cr_assert_eq(alloc_at(vol, wa.start, 8, 8, NULL, BGA_EXACT_GOAL, &e), 0);
	cr_assert_eq(e.start, wa.start);
	struct bga_extent left;
	cr_assert_eq(bga_rsv_window(a, &left), 0);
	cr_assert_eq(left.start, wa.start + 8, "the exact goal took the remainder's front");
	cr_assert_eq(bga_free(vol, e.start, 8), 0);
	struct bga_rsv *b = window_at(vol, wa.start, 8, &wb);
	cr_assert_eq(wb.start, wa.start + 1);
	close_first_then_second(vol, a, b, &wb, many);
}

/* The held map is made by a free that looks through more than
 * BGA_HELD_MIN_WINDOWS windows, and goes with the group's last window;
 * while it exists a free of a remainder is still refused and one of a
 * window's handed-out blocks still taken. */
Test(held, held_map_made_past_its_windows_and_gone_with_the_last)
{
	struct bga_volume *vol = make_volume(1 << 16, 4096, 0);
	struct bga_rsv *many[BGA_HELD_MIN_WINDOWS + 1];
	struct bga_extent w;
	crowd(vol, 1000, BGA_HELD_MIN_WINDOWS + 1, 0, many);
	cr_assert_eq(bga_rsv_window(many[0], &w), 0);
	cr_assert_eq(bga_free(vol, w.start, 1), -EINVAL, "a remainder's block");
	cr_assert_eq(bga_free(vol, w.start - 1, 1), 0, "the block the window handed out");
	/* a window booked while the map exists */
	struct bga_rsv *late = window_at(vol, 3000, 16, &w);
	cr_assert_eq(bga_free(vol, w.start + w.len - 1, 1), -EINVAL, "a remainder's block");
	cr_assert_eq(bga_check(vol, NULL), 0);
	bga_rsv_close(late);
	uncrowd(many, BGA_HELD_MIN_WINDOWS + 1);
	cr_assert_null(bga__group_lookup(vol, 0)->ext->held, "gone with the last window");
	cr_assert_eq(bga_check(vol, NULL), 0);
	bga_destroy(vol);
}
