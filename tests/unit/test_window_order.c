/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The order every allocating call looks in (<bgalloc/alloc.h>, "where a
 * request looks"): its own window, then free runs outside every window,
 * then other windows only before -ENOSPC; bga_alloc_vec's pieces and all
 * or nothing's fit keep it too.
 */
#include <errno.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "requests.h"
#include "testutil.h"

/* Every block in use, windows of 8 blocks (a handle books 8 at most). */
static struct bga_volume *full_volume8(uint64_t nblocks, uint32_t bpg)
{
	return make_volume_with(nblocks, bpg, 0, BGA_START_FULL, 8);
}

/* Another handle's window: `min` blocks taken at goal through a new
 * handle (windows of 8), the rest of its window expected at `win`. */
static struct bga_rsv *other_window(struct bga_volume *vol, uint64_t goal, uint32_t min, struct bga_extent win)
{
	struct bga_rsv *h;
	struct bga_extent e, w;
	cr_assert_eq(bga_rsv_open(vol, &h), 0);
	cr_assert_eq(alloc_at(vol, goal, min, min, h, 0, &e), 0);
	cr_assert_eq(bga_rsv_window(h, &w), 0);
	cr_assert_eq(w.start, win.start, "window at %lu", (unsigned long)w.start);
	cr_assert_eq(w.len, win.len);
	return h;
}

static void assert_window(struct bga_rsv *h, uint64_t start, uint64_t len)
{
	struct bga_extent w;
	cr_assert_eq(bga_rsv_window(h, &w), 0);
	cr_assert_eq(w.start, start, "the other window moved to [%lu,+%lu)", (unsigned long)w.start,
		     (unsigned long)w.len);
	cr_assert_eq(w.len, len, "the other window shrank to [%lu,+%lu)", (unsigned long)w.start,
		     (unsigned long)w.len);
}

/* A partial bga_alloc_vec is a success: it stops at the runs outside
 * windows and leaves another handle's window alone. */
Test(window_order, partial_vec_leaves_other_windows)
{
	struct bga_volume *vol = full_volume8(256, 256);
	cr_assert_eq(bga_free(vol, 20, 4), 0);
	cr_assert_eq(bga_free(vol, 100, 8), 0);
	struct bga_rsv *h = other_window(vol, 100, 1, (struct bga_extent){101, 7});
	struct bga_request r = {.goal = 0, .min_len = 2, .max_len = 4};
	struct bga_extent out[4];
	size_t n = 0;
	cr_assert_eq(bga_alloc_vec(vol, &r, 12, out, 4, &n), 0);
	cr_assert_eq(n, 1, "%zu extents: the second [%lu,+%lu)", n, (unsigned long)out[1].start,
		     (unsigned long)out[1].len);
	cr_assert_eq(out[0].start, 20);
	cr_assert_eq(out[0].len, 4);
	assert_window(h, 101, 7);
	/* with nothing outside windows, the call would fail: then the
	 * window is taken back and serves it */
	cr_assert_eq(bga_alloc_vec(vol, &r, 4, out, 4, &n), 0);
	cr_assert_geq(out[0].start, 100);
	bga_rsv_close(h);
	assert_clean(vol);
	bga_destroy(vol);
}

/* A run that ends at another window is not extended into it: the pieces
 * after the first do not take windows back.  bga_alloc agrees. */
Test(window_order, vec_does_not_extend_into_a_window)
{
	for (int call = 0; call < 3; call++) {
		struct bga_volume *vol = full_volume8(256, 256);
		cr_assert_eq(bga_free(vol, 81, 8), 0);
		struct bga_rsv *h = other_window(vol, 81, 4, (struct bga_extent){85, 4});
		cr_assert_eq(bga_free(vol, 73, 12), 0); /* [73, 85): its blocks [81, 85) too */
		struct bga_request r = {.goal = 73, .min_len = 1, .max_len = 16};
		struct bga_extent out[4];
		size_t n = 0;
		if (call == 2) {
			cr_assert_eq(bga_alloc(vol, &r, &out[0]), 0);
			n = 1;
		} else {
			r.flags = call ? BGA_ALL_OR_NOTHING : 0;
			cr_assert_eq(bga_alloc_vec(vol, &r, call ? 12 : 16, out, call ? 4 : 1, &n), 0);
		}
		cr_assert_eq(n, 1);
		cr_assert_eq(out[0].start, 73, "call %d", call);
		cr_assert_eq(out[0].len, 12, "call %d: [73,+%lu)", call, (unsigned long)out[0].len);
		assert_window(h, 85, 4);
		bga_rsv_close(h);
		assert_clean(vol);
		bga_destroy(vol);
	}
}

/* All or nothing whose greedy carve falls short (out[] fills with a
 * small first piece) takes its fit from the runs outside windows when
 * one exists: [20,+4) [40,+2), not another handle's window. */
Test(window_order, all_or_nothing_fit_outside_windows_first)
{
	struct bga_volume *vol = full_volume8(256, 256);
	cr_assert_eq(bga_free(vol, 10, 1), 0);
	cr_assert_eq(bga_free(vol, 20, 4), 0);
	cr_assert_eq(bga_free(vol, 40, 2), 0);
	cr_assert_eq(bga_free(vol, 100, 8), 0);
	struct bga_rsv *h = other_window(vol, 100, 1, (struct bga_extent){101, 7});
	struct bga_request r = {.goal = 0, .min_len = 1, .max_len = 4, .flags = BGA_ALL_OR_NOTHING};
	struct bga_extent out[2];
	size_t n = 0;
	cr_assert_eq(bga_alloc_vec(vol, &r, 6, out, 2, &n), 0);
	cr_assert_eq(n, 2);
	for (size_t i = 0; i < n; i++)
		cr_assert(out[i].start + out[i].len <= 100 || out[i].start >= 108, "[%lu,+%lu) is the window's",
			  (unsigned long)out[i].start, (unsigned long)out[i].len);
	cr_assert_eq(out[0].len + out[1].len, 6);
	assert_window(h, 101, 7);
	/* only with the window's blocks do 8 fit in 2: taken back then */
	cr_assert_eq(bga_free_vec(vol, out, n), 0);
	cr_assert_eq(bga_alloc_vec(vol, &r, 8, out, 2, &n), 0);
	cr_assert_eq(out[0].len + out[1].len, 8);
	bga_rsv_close(h);
	assert_clean(vol);
	bga_destroy(vol);
}

/* A file written in order by bga_alloc_vec through its handle, across
 * the seam between two groups: the piece that finds its window used up
 * near the group's end takes the free run left there (shorter than the
 * piece) and the next piece goes on at the next group's first block, so
 * the file stays one physical run (search.c, group_tail_locked); a
 * plain bga_alloc still asks for a run that holds all of it. */
Test(window_order, vec_through_a_handle_goes_on_across_the_group_seam)
{
	struct bga_volume *vol = make_volume_with(512, 256, 0, 0, 64);
	struct bga_rsv *h;
	cr_assert_eq(bga_rsv_open(vol, &h), 0);
	uint64_t next = 100, total = 0;
	while (next < 400) {
		struct bga_request r = {.goal = next, .min_len = 1, .max_len = 48, .rsv = h};
		struct bga_extent out[4];
		size_t n = 0;
		cr_assert_eq(bga_alloc_vec(vol, &r, 48, out, 4, &n), 0);
		for (size_t i = 0; i < n; i++) {
			cr_assert_eq(out[i].start, next, "the file split: [%lu,+%lu) after block %lu",
				     (unsigned long)out[i].start, (unsigned long)out[i].len, (unsigned long)next);
			next += out[i].len;
			total += out[i].len;
		}
	}
	cr_assert_eq(total, next - 100);
	bga_rsv_close(h);
	assert_clean(vol);
	bga_destroy(vol);
}

/* A later piece through the caller's own handle books a window; where
 * only runs shorter than the piece lie outside windows, the booking takes
 * the shorter run, not another handle's window (fuzz_ops found the
 * booking's take-back at a later piece: docs/HISTORY.md, "A
 * bga_alloc_vec piece that takes its group's tail"). */
Test(window_order, later_vec_piece_booking_leaves_other_windows)
{
	struct bga_volume *vol = full_volume8(256, 256);
	cr_assert_eq(bga_free(vol, 20, 8), 0);
	cr_assert_eq(bga_free(vol, 40, 2), 0);
	cr_assert_eq(bga_free(vol, 100, 8), 0);
	struct bga_rsv *h = other_window(vol, 100, 1, (struct bga_extent){101, 7});
	struct bga_rsv *own;
	cr_assert_eq(bga_rsv_open(vol, &own), 0);
	struct bga_request r = {.goal = 0, .min_len = 1, .max_len = 8, .rsv = own};
	struct bga_extent out[4];
	size_t n = 0;
	cr_assert_eq(bga_alloc_vec(vol, &r, 12, out, 4, &n), 0);
	uint64_t got = 0;
	for (size_t i = 0; i < n; i++) {
		cr_assert(out[i].start + out[i].len <= 101 || out[i].start >= 108,
			  "extent %zu [%lu,+%lu) is the other handle's window", i, (unsigned long)out[i].start,
			  (unsigned long)out[i].len);
		got += out[i].len;
	}
	cr_assert_eq(got, 10, "%lu blocks: [20,+8) and [40,+2) lie outside windows", (unsigned long)got);
	assert_window(h, 101, 7);
	bga_rsv_close(own);
	bga_rsv_close(h);
	assert_clean(vol);
	bga_destroy(vol);
}
