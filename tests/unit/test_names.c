/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The clearer names of the public calls (lib/abi/names.c): each is the
 * call it names, through the public API only.
 */
#include <errno.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "testutil.h"

Test(names, each_is_the_call_it_names)
{
	struct bga_volume *vol = make_volume(4096, 256, 0);
	struct bga_extent e;
	struct bga_request req = {.goal = 10, .min_len = 100, .max_len = 100};
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_expect_eq(bga_free_blocks_sum(vol), bga_free_exact(vol));
	cr_expect_eq(bga_free_blocks_sum(vol), 3996);
	cr_expect_eq(bga_free_blocks_read(vol), bga_free_estimate(vol));
	cr_expect_eq(bga_free_blocks_read(NULL), 0);
	cr_expect_eq(bga_free_blocks_sum(NULL), 0);

	struct bga_rsv *rsv;
	cr_assert_eq(bga_window_open(vol, &rsv), 0);
	cr_expect_eq(bga_window_set_size(rsv, 64), 0);
	struct bga_request wr = {.goal = 1000, .min_len = 1, .max_len = 1, .rsv = rsv};
	cr_assert_eq(bga_alloc(vol, &wr, &e), 0);
	struct bga_extent a, b;
	cr_assert_eq(bga_window_get(rsv, &a), 0);
	cr_assert_eq(bga_rsv_window(rsv, &b), 0);
	cr_expect(a.start == b.start && a.len == b.len);
	cr_expect_gt(a.len, 0);
	cr_expect_eq(bga_window_set_size(rsv, 0), 0);
	cr_assert_eq(bga_window_get(rsv, &a), 0);
	cr_expect_eq(a.len, 0, "size 0 gives the window back");
	cr_expect_eq(bga_window_set_size(NULL, 1), -EINVAL);
	cr_expect_eq(bga_window_get(NULL, &a), -EINVAL);
	cr_expect_eq(bga_window_open(NULL, &rsv), -EINVAL);
	bga_window_close(rsv);
	bga_window_close(NULL);
	cr_expect_eq(bga_free_blocks_sum(vol), 3995);
	bga_destroy(vol);
}

