/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_TEST_REQUESTS_H
#define BGA_TEST_REQUESTS_H

/*
 * Requests written as one call, for Criterion suites that make many:
 * alloc_at (a request's fields as arguments), take (exactly this range),
 * window_alloc (a handle, an allocation through it, the window it booked),
 * window_at (a sized handle's window booked at a goal).
 */

#include <criterion/criterion.h>

#include <bgalloc.h>

/* bga_alloc of one request, its fields as arguments. */
static inline int alloc_at(struct bga_volume *vol, uint64_t goal, uint64_t min, uint64_t max, struct bga_rsv *rsv,
			   uint32_t flags, struct bga_extent *e)
{
	struct bga_request req = {.goal = goal, .min_len = min, .max_len = max, .rsv = rsv, .flags = flags};
	return bga_alloc(vol, &req, e);
}

/* An open handle with a window of `size` booked at `goal`, one block taken. */
static inline struct bga_rsv *window_at(struct bga_volume *vol, uint64_t goal, uint32_t size, struct bga_extent *held)
{
	struct bga_rsv *rsv;
	struct bga_extent e;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	cr_assert_eq(bga_rsv_set_size(rsv, size), 0);
	cr_assert_eq(alloc_at(vol, goal, 1, 1, rsv, 0, &e), 0);
	cr_assert_eq(bga_rsv_window(rsv, held), 0);
	cr_assert_eq(held->start, e.start + 1, "the window follows what was taken");
	cr_assert_eq(held->len, size - 1);
	return rsv;
}

/* Allocate exactly [start, start + len) with a plain request. */
static inline void take(struct bga_volume *vol, uint64_t start, uint64_t len)
{
	struct bga_extent e;
	cr_assert_eq(alloc_at(vol, start, len, len, NULL, BGA_EXACT_GOAL, &e), 0);
	cr_assert_eq(e.start, start);
	cr_assert_eq(e.len, len);
}

/* Open a window handle, allocate through it from goal (min .. max blocks)
 * into *e, and read the window it booked into *win (which must hold some
 * blocks). */
static inline struct bga_rsv *window_alloc(struct bga_volume *vol, uint64_t goal, uint64_t min, uint64_t max,
					   struct bga_extent *e, struct bga_extent *win)
{
	struct bga_rsv *rsv;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	cr_assert_eq(alloc_at(vol, goal, min, max, rsv, 0, e), 0);
	cr_assert_eq(bga_rsv_window(rsv, win), 0);
	cr_assert_gt(win->len, 0, "the handle booked no window");
	return rsv;
}

#endif
