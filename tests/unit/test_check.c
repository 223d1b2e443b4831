/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The checker, proved: each test corrupts one invariant class through the
 * internal layout (lib/core/group.h, which only tests include), asserts that
 * bga_check() returns -EUCLEAN and names that class with the right group
 * and block, then restores the state, checks it clean again and destroys.
 * bga_check keeps the first violation it meets, so each corruption is
 * chosen to be the first thing the walk finds wrong.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <bgalloc.h>
#include <bgalloc/counter.h>

#include "testutil.h"

#include "group.h"
#include "window.h"

/* Group g's descriptor (single-threaded: no lock needed). */
static struct bga_group *grp_of(struct bga_volume *vol, uint64_t g)
{
	cr_assert_eq(bga__group_ensure(vol, g), 0);
	return bga__group_lookup(vol, g);
}

static void alloc_exact(struct bga_volume *vol, uint64_t start, uint64_t len)
{
	struct bga_request req = {.goal = start, .min_len = len, .max_len = len, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0, "alloc %llu+%llu", (unsigned long long)start,
		     (unsigned long long)len);
	cr_assert_eq(e.start, start);
	cr_assert_eq(e.len, len);
}

/* bga_check must report the class named by `what` first, at group g and
 * block b (UINT64_MAX where the class names none). */
static void expect_violation(struct bga_volume *vol, const char *what, uint64_t g, uint64_t b)
{
	struct bga_check_report r;
	memset(&r, 0x5a, sizeof(r));
	cr_assert_eq(bga_check(vol, &r), -EUCLEAN, "corruption '%s' not caught", what);
	cr_assert_geq(r.violations, 1);
	cr_assert(strstr(r.message, what) != NULL, "expected '%s', got '%s'", what, r.message);
	cr_assert_eq(r.group, g, "'%s': group %llu, expected %llu", r.message, (unsigned long long)r.group,
		     (unsigned long long)g);
	cr_assert_eq(r.block, b, "'%s': block %llu, expected %llu", r.message, (unsigned long long)r.block,
		     (unsigned long long)b);
	/* A NULL report gives the same verdict. */
	cr_assert_eq(bga_check(vol, NULL), -EUCLEAN);
}

static void done(struct bga_volume *vol)
{
	assert_clean(vol);
	bga_destroy(vol);
}

Test(check, clean_volume_reports_nothing)
{
	struct bga_volume *vol = make_volume(64 * 64, 64, 0);
	alloc_exact(vol, 70, 5);
	struct bga_check_report r;
	memset(&r, 0x5a, sizeof(r));
	cr_assert_eq(bga_check(vol, &r), 0);
	cr_assert_eq(r.violations, 0);
	cr_assert_eq(r.group, UINT64_MAX);
	cr_assert_eq(r.block, UINT64_MAX);
	cr_assert_eq(bga_check(NULL, &r), -EINVAL);
	done(vol);
}

Test(check, bitmap_bit)
{
	struct bga_volume *vol = make_volume(64 * 64, 64, 0);
	alloc_exact(vol, 3 * 64 + 10, 4);
	struct bga_group *grp = grp_of(vol, 3);
	cr_assert_not_null(grp->bitmap);
	/* A free block marked used behind the count's back. */
	grp->bitmap[0] |= UINT64_C(1) << 40;
	expect_violation(vol, "bitmap has", 3, UINT64_MAX);
	grp->bitmap[0] &= ~(UINT64_C(1) << 40);
	/* ... and a used block marked free. */
	grp->bitmap[0] &= ~(UINT64_C(1) << 11);
	expect_violation(vol, "bitmap has", 3, UINT64_MAX);
	grp->bitmap[0] |= UINT64_C(1) << 11;
	done(vol);
}

Test(check, group_free_count)
{
	struct bga_volume *vol = make_volume(64 * 64, 64, 0);
	alloc_exact(vol, 5 * 64 + 1, 1);
	struct bga_group *grp = grp_of(vol, 5);
	grp->free--;
	expect_violation(vol, "free count says", 5, UINT64_MAX);
	grp->free++;
	/* A group without a bitmap must be wholly free or wholly used. */
	struct bga_group *g7 = grp_of(vol, 7);
	cr_assert_null(g7->bitmap);
	cr_assert_eq(g7->free, 64);
	g7->free = 20;
	expect_violation(vol, "no bitmap but free", 7, UINT64_MAX);
	g7->free = 64;
	done(vol);
}

Test(check, counter)
{
	struct bga_volume *vol = make_volume(64 * 64, 64, 0);
	alloc_exact(vol, 100, 9);
	bga_counter_add(vol->used, 3);
	expect_violation(vol, "the counter says", UINT64_MAX, UINT64_MAX);
	bga_counter_add(vol->used, -6);
	expect_violation(vol, "the counter says", UINT64_MAX, UINT64_MAX);
	bga_counter_add(vol->used, 3);
	done(vol);
}

Test(check, index_bit)
{
	struct bga_volume *vol = make_volume(64 * 64, 64, 0);
	alloc_exact(vol, 2 * 64, 60);
	struct bga_chunk *ch = bga__chunk_get(vol, 0);
	cr_assert_not_null(ch);
	/* Order 0 is set for every group with a free block: clear group 9's. */
	cr_assert(ch->bits[0][0] & (UINT64_C(1) << 9));
	ch->bits[0][0] &= ~(UINT64_C(1) << 9);
	expect_violation(vol, "index order 0 bit", 9, UINT64_MAX);
	ch->bits[0][0] |= UINT64_C(1) << 9;
	/* A bit set that no max_run allows: order 7 (128 blocks) in groups
	 * of 64. */
	cr_assert_not(ch->bits[7][0] & (UINT64_C(1) << 2));
	ch->bits[7][0] |= UINT64_C(1) << 2;
	expect_violation(vol, "index order 7 bit is 1", 2, UINT64_MAX);
	ch->bits[7][0] &= ~(UINT64_C(1) << 2);
	done(vol);
}

Test(check, max_run_below_longest_run)
{
	struct bga_volume *vol = make_volume(64 * 64, 64, 0);
	alloc_exact(vol, 4 * 64, 8);
	struct bga_group *grp = grp_of(vol, 4);
	uint32_t old = grp->max_run;
	cr_assert_geq(old, 56);
	grp->max_run = 3; /* the index still says >= 32: the run check comes first */
	expect_violation(vol, "max_run 3 but longest free run 56", 4, UINT64_MAX);
	grp->max_run = old;
	done(vol);
}

Test(check, chunk_summary_bit)
{
	/* Two chunks: chunk 0 touched, chunk 1 untouched. */
	struct bga_volume *vol = make_volume(2 * BGA_CHUNK_GROUPS * 64, 64, 0);
	alloc_exact(vol, 64 * 10, 3);
	cr_assert_not_null(bga__chunk_get(vol, 0));
	cr_assert_null(bga__chunk_get(vol, 1));
	uint64_t *order0 = bga__dir_word(vol, 0, 0), *order3 = bga__dir_word(vol, 3, 0); /* chunks 0..63 */
	cr_assert(*order0 & 1);
	*order0 &= ~UINT64_C(1);
	/* Group 0 of chunk 0 is the first group the walk meets. */
	expect_violation(vol, "chunk summary order 0 clear", 0, UINT64_MAX);
	*order0 |= 1;
	/* An untouched chunk counts as all-free groups: every order set. */
	cr_assert(*order3 & 2);
	*order3 &= ~UINT64_C(2);
	expect_violation(vol, "untouched chunk 1: summary order 3 clear", BGA_CHUNK_GROUPS, UINT64_MAX);
	*order3 |= 2;
	done(vol);
}

/* Two handles with windows in one group; returns the group's list. */
static struct bga_window *two_windows(struct bga_volume *vol, struct bga_rsv **a, struct bga_rsv **b, uint64_t *g)
{
	cr_assert_eq(bga_rsv_open(vol, a), 0);
	cr_assert_eq(bga_rsv_open(vol, b), 0);
	cr_assert_eq(bga_rsv_set_size(*a, 16), 0);
	cr_assert_eq(bga_rsv_set_size(*b, 16), 0);
	struct bga_extent e;
	struct bga_request req = {.goal = 6 * 512, .min_len = 1, .max_len = 1, .rsv = *a};
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	*g = e.start / 512;
	req.rsv = *b;
	req.goal = *g * 512 + 256; /* free: its first window starts there */
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(e.start / 512, *g, "both windows in one group");
	struct bga_window *w = grp_of(vol, *g)->ext->windows;
	cr_assert_not_null(w);
	cr_assert_not_null(w->next, "two windows linked");
	return w;
}

/* Set a window's remainder to [cur, end), keeping its generation (and
 * the copy of its end in step). */
static void set_span(struct bga_window *w, uint32_t cur, uint32_t end)
{
	w->span = (w->span & ~((UINT64_C(1) << 42) - 1)) | ((uint64_t)end << BGA_WSPAN_BITS) | cur;
	w->end = end;
}

Test(check, window_overlap)
{
	struct bga_volume *vol = make_volume(16 * 512, 512, 0);
	struct bga_rsv *a, *b;
	uint64_t g;
	struct bga_window *w = two_windows(vol, &a, &b, &g);
	uint64_t saved = w->next->span, mine = w->span;
	uint32_t cur = bga__wspan_cur(mine), end = bga__wspan_end(mine);
	cr_assert_gt(end, cur, "the window holds blocks");
	/* Two remainders over the same blocks. */
	set_span(w->next, cur, end);
	expect_violation(vol, "overlap", g, g * 512 + cur);
	set_span(w->next, bga__wspan_cur(saved), bga__wspan_end(saved));
	assert_clean(vol);
	/* A remainder past the group's span. */
	set_span(w, cur, 513);
	expect_violation(vol, "leaves the group", g, g * 512 + cur);
	set_span(w, cur, end);
	/* The copy of its end that locked readers use, out of step. */
	w->end = end - 1;
	expect_violation(vol, "end copy", g, g * 512 + cur);
	w->end = end;
	/* A window that names another group. */
	w->group = g + 1;
	expect_violation(vol, "leaves the group", g, g * 512 + cur);
	w->group = g;
	/* A remainder over free blocks (the last blocks of the group are free). */
	set_span(w, 500, 510);
	expect_violation(vol, "holds free blocks", g, g * 512 + 500);
	set_span(w, cur, end);
	assert_clean(vol);
	bga_rsv_close(a);
	bga_rsv_close(b);
	done(vol);
}

/* The window bounds window_overlap does not break: a remainder whose cur
 * is past its end, one that starts before the window does, one below
 * the group's usable span (first_data_block), each "leaves the group". */
Test(check, window_outside_its_own_bounds)
{
	struct bga_volume *vol = make_volume(16 * 512, 512, 100);
	struct bga_rsv *a;
	cr_assert_eq(bga_rsv_open(vol, &a), 0);
	cr_assert_eq(bga_rsv_set_size(a, 16), 0);
	struct bga_extent e;
	struct bga_request req = {.goal = 100, .min_len = 1, .max_len = 1, .rsv = a};
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(e.start, 100);
	struct bga_window *w = grp_of(vol, 0)->ext->windows;
	cr_assert_not_null(w);
	uint64_t mine = w->span;
	uint32_t cur = bga__wspan_cur(mine), end = bga__wspan_end(mine), start = w->start;
	cr_assert_gt(end, cur + 1, "the window holds blocks");
	cr_assert_geq(start, 100);
	set_span(w, end, cur); /* cur past end */
	expect_violation(vol, "leaves the group", 0, end);
	set_span(w, cur, end);
	w->start = cur + 1; /* the remainder begins before the window */
	expect_violation(vol, "leaves the group", 0, cur);
	w->start = start;
	assert_clean(vol);
	w->start = 50;
	set_span(w, 50, end); /* below first_data_block */
	expect_violation(vol, "leaves the group", 0, 50);
	w->start = start;
	set_span(w, cur, end);
	assert_clean(vol);
	/* The group's bitmap lost under the window: reported (no bitmap
	 * with free blocks, and the window's blocks no longer marked used). */
	struct bga_group *grp = grp_of(vol, 0);
	uint64_t *bitmap = grp->bitmap;
	grp->bitmap = NULL;
	struct bga_check_report rep;
	cr_assert_eq(bga_check(vol, &rep), -EUCLEAN);
	cr_assert_geq(rep.violations, 2, "%d violations: %s", rep.violations, rep.message);
	grp->bitmap = bitmap;
	assert_clean(vol);
	bga_rsv_close(a);
	done(vol);
}

/* A full group claims a free run: free 0 with max_run not 0. */
Test(check, max_run_of_a_full_group)
{
	struct bga_volume *vol = make_volume(16 * 64, 64, 0);
	alloc_exact(vol, 3 * 64, 64);
	struct bga_group *grp = grp_of(vol, 3);
	cr_assert_eq(grp->free, 0);
	cr_assert_eq(grp->max_run, 0);
	grp->max_run = 1;
	expect_violation(vol, "max_run 1 but longest free run 0", 3, UINT64_MAX);
	grp->max_run = 0;
	done(vol);
}

Test(check, pending_block_marked_free)
{
	struct bga_volume *vol = make_volume(16 * 64, 64, 0);
	alloc_exact(vol, 2 * 64, 63); /* not all 64: the group keeps a bitmap */
	cr_assert_eq(bga_free_deferred(vol, 2 * 64 + 20, 3, 1), 0);
	struct bga_group *grp = grp_of(vol, 2);
	cr_assert_not_null(grp->bitmap);
	/* The pending block 21 shows free, with the count kept in step so
	 * the popcount agrees: only the deferred-free rule is broken. */
	grp->bitmap[0] &= ~(UINT64_C(1) << 21);
	grp->free++;
	expect_violation(vol, "waits on a deferred free", 2, 2 * 64 + 20);
	grp->bitmap[0] |= UINT64_C(1) << 21;
	grp->free--;
	assert_clean(vol);
	/* The pending map names a block that no record holds. */
	grp->ext->pending[0] |= UINT64_C(1) << 40;
	expect_violation(vol, "pending map disagrees", 2, 2 * 64);
	grp->ext->pending[0] &= ~(UINT64_C(1) << 40);
	assert_clean(vol);
	cr_assert_eq(bga_commit(vol, 1), 0);
	done(vol);
}

Test(check, reserved_above_free)
{
	struct bga_volume *vol = make_volume(16 * 64, 64, 0);
	for (uint64_t g = 0; g < 15; g++)
		alloc_exact(vol, g * 64, 64);
	alloc_exact(vol, 15 * 64, 40); /* 24 free */
	cr_assert_eq(bga_reserve(vol, 20), 0);
	assert_clean(vol);
	/* Twenty more reserved than free, charged to the counter as a
	 * reservation is, so the counter sum itself still agrees. */
	__atomic_fetch_add(&vol->reserved, 24, __ATOMIC_RELAXED);
	bga_counter_add(vol->used, 24);
	expect_violation(vol, "44 blocks reserved but only 24 free", UINT64_MAX, UINT64_MAX);
	__atomic_fetch_sub(&vol->reserved, 24, __ATOMIC_RELAXED);
	bga_counter_add(vol->used, -24);
	cr_assert_eq(bga_unreserve(vol, 20), 0);
	done(vol);
}

Test(check, block_below_first_data_block)
{
	struct bga_volume *vol = make_volume(16 * 64, 64, 10);
	alloc_exact(vol, 10, 2); /* group 0 gets its bitmap */
	struct bga_group *grp = grp_of(vol, 0);
	cr_assert_not_null(grp->bitmap);
	cr_assert(grp->bitmap[0] & (UINT64_C(1) << 3));
	grp->bitmap[0] &= ~(UINT64_C(1) << 3);
	grp->free++; /* popcount in step: only the span rule is broken */
	expect_violation(vol, "outside the usable span is free", 0, 3);
	grp->bitmap[0] |= UINT64_C(1) << 3;
	grp->free--;
	done(vol);
}

Test(check, block_past_the_end)
{
	/* A short last group: blocks 40..63 of group 3 lie past the end. */
	struct bga_volume *vol = make_volume(3 * 64 + 40, 64, 0);
	alloc_exact(vol, 3 * 64, 1);
	struct bga_group *grp = grp_of(vol, 3);
	cr_assert_not_null(grp->bitmap);
	grp->bitmap[0] &= ~(UINT64_C(1) << 50);
	grp->free++;
	expect_violation(vol, "outside the usable span is free", 3, 3 * 64 + 50);
	grp->bitmap[0] |= UINT64_C(1) << 50;
	grp->free--;
	done(vol);
}

Test(check, span_end_disagrees_with_geometry)
{
	struct bga_volume *vol = make_volume(16 * 64, 64, 0);
	alloc_exact(vol, 5 * 64, 1);
	struct bga_group *grp = grp_of(vol, 5);
	grp->hi = 60;
	expect_violation(vol, "span ends at 60, the geometry says 64", 5, UINT64_MAX);
	grp->hi = 64;
	done(vol);
}

Test(check, first_violation_wins_and_all_are_counted)
{
	struct bga_volume *vol = make_volume(16 * 64, 64, 0);
	alloc_exact(vol, 64, 64);
	alloc_exact(vol, 5 * 64, 1);
	struct bga_group *g5 = grp_of(vol, 5);
	g5->free -= 2;
	bga_counter_add(vol->used, 1);
	struct bga_check_report r;
	cr_assert_eq(bga_check(vol, &r), -EUCLEAN);
	cr_assert_geq(r.violations, 2, "the walk goes on after the first");
	cr_assert_eq(r.group, 5);
	cr_assert(strstr(r.message, "free count says"), "%s", r.message);
	g5->free += 2;
	bga_counter_add(vol->used, -1);
	done(vol);
}

/* A remainder block whose bit in the held map (window.h) is clear: a free
 * of it would read no window and be taken. */
Test(check, window_remainder_missing_from_the_held_map)
{
	struct bga_volume *vol = make_volume(16 * 512, 512, 0);
	struct bga_rsv *a, *b;
	uint64_t g;
	struct bga_window *w = two_windows(vol, &a, &b, &g);
	/* more windows, and a free that looks through them all makes the map */
	struct bga_rsv *many[BGA_HELD_MIN_WINDOWS];
	struct bga_extent e;
	for (uint32_t i = 0; i < BGA_HELD_MIN_WINDOWS; i++) {
		struct bga_request req = {.goal = g * 512 + 280 + 8 * i, .min_len = 1, .max_len = 1};
		cr_assert_eq(bga_rsv_open(vol, &many[i]), 0);
		cr_assert_eq(bga_rsv_set_size(many[i], 8), 0);
		req.rsv = many[i];
		cr_assert_eq(bga_alloc(vol, &req, &e), 0);
		cr_assert_eq(e.start / 512, g);
	}
	alloc_exact(vol, g * 512 + 480, 1);
	cr_assert_eq(bga_free(vol, g * 512 + 480, 1), 0);
	uint32_t cur = bga__wspan_cur(w->span), end = bga__wspan_end(w->span);
	cr_assert_gt(end, cur, "the window holds blocks");
	uint64_t *held = grp_of(vol, g)->ext->held, bit = UINT64_C(1) << ((end - 1) % 64);
	cr_assert_not_null(held, "the free made the held map");
	cr_assert(held[(end - 1) / 64] & bit, "a booking holds its remainder");
	held[(end - 1) / 64] &= ~bit;
	expect_violation(vol, "held map", g, g * 512 + end - 1);
	held[(end - 1) / 64] |= bit;
	bga_rsv_close(a);
	bga_rsv_close(b);
	for (uint32_t i = 0; i < BGA_HELD_MIN_WINDOWS; i++)
		bga_rsv_close(many[i]);
	done(vol);
}
