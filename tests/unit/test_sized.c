/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Windows a caller sizes (bga_rsv_set_size, <bgalloc/window.h>): any size
 * up to a group, past rsv_max, or up to rsv_max where that is more; a
 * sized handle books every window whole at its size, and a request of
 * its whole size leaves no window.  The unsized windows: test_windows.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "refmodel.h"
#include "requests.h"
#include "testutil.h"

/* A volume of `blocks` in groups of `bpg`, windows from 8 blocks doubling
 * up to rsv_max. */
static struct bga_volume *make(uint64_t blocks, uint32_t bpg, uint32_t rsv_max)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	bga_config_init(&cfg, blocks);
	cfg.blocks_per_group = bpg;
	cfg.rsv_default = 8;
	cfg.rsv_max = rsv_max;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	return vol;
}

/* bga_rsv_set_size takes any size up to blocks_per_group, the group
 * itself included and past rsv_max (which caps only an unsized window's
 * doubling), and a window then books that many. */
Test(sized, set_size_up_to_a_group)
{
	struct bga_volume *vol = make(4096, 1024, 100);
	struct bga_rsv *h;
	cr_assert_eq(bga_rsv_open(vol, &h), 0);
	cr_assert_eq(bga_rsv_set_size(h, 1025), -EINVAL, "above a group");
	cr_assert_eq(bga_rsv_set_size(h, 1024), 0, "a whole group");
	cr_assert_eq(bga_rsv_set_size(h, 100), 0, "rsv_max");
	struct bga_extent e, w;
	cr_assert_eq(alloc_at(vol, 0, 1, 1, h, 0, &e), 0);
	cr_assert_eq(bga_rsv_window(h, &w), 0);
	cr_assert_eq(e.len + w.len, 100, "a window of rsv_max books rsv_max");
	struct bga_rsv *big;
	cr_assert_eq(bga_rsv_open(vol, &big), 0);
	cr_assert_eq(bga_rsv_set_size(big, 700), 0, "past rsv_max");
	cr_assert_eq(alloc_at(vol, 2048, 1, 1, big, 0, &e), 0);
	cr_assert_eq(bga_rsv_window(big, &w), 0);
	cr_assert_eq(e.len + w.len, 700, "a window sized past rsv_max books its size");
	cr_assert_eq(w.start, e.start + e.len, "one run");
	bga_rsv_close(big);
	bga_rsv_close(h);
	assert_clean(vol);
	bga_destroy(vol);
}

/* A sized handle (bga_rsv_set_size) books every window at its size, the
 * first one included: not in a shorter free run at the goal (which a
 * request of one block would fit), and never doubled; so a file written
 * a block a call books once per size, each window one extent. */
Test(sized, sized_handle_books_whole_windows)
{
	struct bga_volume *vol = make(4096, 1024, 256);
	struct bga_extent used, e, w;
	/* [0, 100) in use but for a hole of 10 at 40 */
	cr_assert_eq(alloc_at(vol, 0, 100, 100, NULL, BGA_EXACT_GOAL, &used), 0);
	cr_assert_eq(used.start, 0);
	cr_assert_eq(bga_free(vol, 40, 10), 0);
	struct bga_rsv *h;
	cr_assert_eq(bga_rsv_open(vol, &h), 0);
	cr_assert_eq(bga_rsv_set_size(h, 64), 0);
	uint64_t goal = 40, start = 0;
	for (uint32_t i = 0; i < 3 * 64; i++) {
		cr_assert_eq(alloc_at(vol, goal, 1, 1, h, 0, &e), 0);
		if (i % 64 == 0) {
			/* a booking: the window holds all 64, this block included */
			cr_assert_eq(bga_rsv_window(h, &w), 0);
			cr_assert_eq(e.len + w.len, 64, "window %u booked %lu blocks, not its size", i / 64,
				     (unsigned long)(e.len + w.len));
			cr_assert_eq(w.start, e.start + 1);
			cr_assert(e.start >= 100, "booked in the short run at the goal (%lu)", (unsigned long)e.start);
			start = e.start;
		} else {
			cr_assert_eq(e.start, start + i % 64, "block %u is not its window's next", i);
		}
		goal = e.start + 1;
	}
	bga_rsv_close(h);
	cr_assert_eq(bga_free_exact(vol), 4096 - 90 - 3 * 64);
	assert_clean(vol);
	bga_destroy(vol);
}

/* A sized handle's request of its whole size (or more) takes all of the
 * run it books, so no window is left linked: the next request books
 * again, at the size, right after. */
Test(sized, sized_handle_request_of_its_size_leaves_no_window)
{
	struct bga_volume *vol = make_volume(1 << 16, 4096, 0);
	struct bga_rsv *h;
	struct bga_extent e, w;
	cr_assert_eq(bga_rsv_open(vol, &h), 0);
	cr_assert_eq(bga_rsv_set_size(h, 32), 0);
	cr_assert_eq(alloc_at(vol, 100, 1, 40, h, 0, &e), 0);
	cr_assert_eq(e.len, 40, "all of a request longer than the size");
	cr_assert_eq(bga_rsv_window(h, &w), 0);
	cr_assert_eq(w.len, 0);
	uint64_t end = e.start + e.len;
	cr_assert_eq(alloc_at(vol, end, 1, 1, h, 0, &e), 0);
	cr_assert_eq(e.start, end, "the next window goes on in place");
	cr_assert_eq(bga_rsv_window(h, &w), 0);
	cr_assert_eq(e.len + w.len, 32, "booked at the size, not doubled");
	bga_rsv_close(h);
	assert_clean(vol);
	bga_destroy(vol);
}

/* Where rsv_max is more than a group, bga_rsv_set_size takes any size up
 * to rsv_max, as before sizes past it were taken up to a group; a window
 * is still at most a group. */
Test(sized, set_size_up_to_rsv_max_past_a_group)
{
	struct bga_volume *vol = make(1024, 256, 300);
	struct bga_rsv *h;
	cr_assert_eq(bga_rsv_open(vol, &h), 0);
	cr_assert_eq(bga_rsv_set_size(h, 301), -EINVAL, "above rsv_max and a group");
	cr_assert_eq(bga_rsv_set_size(h, 300), 0, "rsv_max, past a group");
	struct bga_extent e, w;
	cr_assert_eq(alloc_at(vol, 0, 1, 1, h, 0, &e), 0);
	cr_assert_eq(bga_rsv_window(h, &w), 0);
	cr_assert_leq(e.len + w.len, 256, "a window is at most a group");
	cr_assert_gt(w.len, 0, "a window was booked");
	bga_rsv_close(h);
	assert_clean(vol);
	bga_destroy(vol);
}
