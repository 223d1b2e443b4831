/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Packing (<bgalloc/alloc.h>, "Where a request looks"; <bgalloc/window.h>,
 * bga_rsv_open): a handle's first request gets no window of its own when
 * files whose first request was as long seldom asked again on the calling
 * CPU; it goes into the first hole of its group, from the group's start,
 * that holds it (first fit).  Files that grow keep their windows, and a
 * window's booking takes a run that holds the whole request before a
 * shorter one, taking the other windows back first when only they hold
 * one.  A crowded group with no room elsewhere shares its free space
 * among its windows.  A file's goal-less first window goes on from the
 * CPU's last one (next fit) until a commit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "refmodel.h"
#include "testutil.h"
#include "pin.h"

/* What a CPU must see before it decides (search.c's BGA_SHOWN_LEARN),
 * and the length of a stream request (window.h's BGA_LOCAL_MAX_REQ). */
#define LEARN 16
#define STREAM 16

static struct bga_volume *make(uint64_t nblocks, uint32_t bpg, struct refmodel *m)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	bga_config_init(&cfg, nblocks);
	cfg.blocks_per_group = bpg;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	cr_assert_eq(refmodel_init(m, &cfg), 0);
	return vol;
}

/* One request through `rsv`, judged by the model. */
static struct bga_extent ask(struct bga_volume *vol, struct refmodel *m, struct bga_rsv *rsv, uint64_t goal,
			     uint64_t min, uint64_t max)
{
	struct bga_request req = {.goal = goal, .min_len = min, .max_len = max, .rsv = rsv};
	struct bga_extent e = {0, 0};
	int rc = bga_alloc(vol, &req, &e);
	cr_assert_eq(rc, 0, "alloc: %s", bga_strerror(rc));
	cr_assert_eq(refmodel_alloc_check(m, &req, rc, &e), 0, "%s", m->err);
	return e;
}

static void give_back(struct bga_volume *vol, struct refmodel *m, uint64_t start, uint64_t len)
{
	cr_assert_eq(bga_free(vol, start, len), 0);
	cr_assert_eq(refmodel_free(m, start, len), 0);
}

/*
 * `n` files of one goal-less request of `len` blocks each (asks twice:
 * each asks again right after), their blocks given back: what the calling
 * CPU sees files of that first length do.
 */
static void show_files(struct bga_volume *vol, struct refmodel *m, uint64_t len, int n, bool twice)
{
	for (int i = 0; i < n; i++) {
		struct bga_rsv *rsv;
		cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
		struct bga_extent a = ask(vol, m, rsv, BGA_NO_GOAL, 1, len), b = {0, 0};
		if (twice)
			b = ask(vol, m, rsv, a.start + a.len, 1, len);
		bga_rsv_close(rsv);
		give_back(vol, m, a.start, a.len);
		if (twice)
			give_back(vol, m, b.start, b.len);
	}
}

/* Group 0 of the volume wholly used, then the holes [at[i], at[i] + len[i]) freed. */
static void holes(struct bga_volume *vol, struct refmodel *m, uint32_t bpg, const uint32_t *at, const uint32_t *len,
		  int n)
{
	uint64_t g0 = m->cfg.first_data_block;
	struct bga_request fill = {.goal = g0, .min_len = bpg - g0, .max_len = bpg - g0, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	int rc = bga_alloc(vol, &fill, &e);
	cr_assert_eq(rc, 0);
	cr_assert_eq(refmodel_alloc_check(m, &fill, rc, &e), 0, "%s", m->err);
	for (int i = 0; i < n; i++)
		give_back(vol, m, at[i], len[i]);
}

/* A volume of `groups` groups of 4096 with group 0 holed as holes() does. */
static struct bga_volume *make_holed(uint64_t groups, struct refmodel *m, const uint32_t *at, const uint32_t *len,
				     int n)
{
	struct bga_volume *vol = make(groups * 4096, 4096, m);
	holes(vol, m, 4096, at, len, n);
	return vol;
}

/* The volume against the model, then both gone. */
static void finish(struct bga_volume *vol, struct refmodel *m)
{
	cr_assert_eq(refmodel_compare(m, vol), 0, "%s", m->err);
	refmodel_fini(m);
	assert_clean(vol);
	bga_destroy(vol);
}

/* A packed file: its one request, and no window left behind. */
static struct bga_extent packed_file(struct bga_volume *vol, struct refmodel *m, uint64_t len)
{
	struct bga_rsv *rsv;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	struct bga_extent e = ask(vol, m, rsv, BGA_NO_GOAL, 1, len), w;
	cr_assert_eq(bga_rsv_window(rsv, &w), 0);
	cr_assert_eq(w.len, 0, "a file that files like it showed to stay small books no window (%llu held)",
		     (unsigned long long)w.len);
	bga_rsv_close(rsv);
	return e;
}

/*
 * Files whose first request was 3 blocks never asked again on this CPU:
 * the next such file goes into the first hole of its group, from the
 * group's start, that holds all of it (first fit, as ext2 places a small
 * file): the 5 before the 3 that fits it exactly, past the 2 that is too
 * short, then the 40-block run; and a run that opens below the last
 * packed file is the next one's, not a run past that file's end (no
 * packing cursor: files made later fill what the deletes left low).
 */
Test(packing, small_files_take_the_first_hole_that_holds_them)
{
	cpu_set_t old;
	cr_assert_eq(test_pin_one_cpu(&old), 0);
	struct refmodel m;
	struct bga_volume *vol = make(2 * 4096, 4096, &m);
	show_files(vol, &m, 3, LEARN, false);
	const uint32_t at[] = {100, 200, 300, 1000}, len[] = {5, 2, 3, 40};
	holes(vol, &m, 4096, at, len, 4);
	cr_assert_eq(packed_file(vol, &m, 3).start, 100, "the first hole that holds 3, not the 3 that fits exactly");
	cr_assert_eq(packed_file(vol, &m, 3).start, 300, "past the 2 left at 103 and the 2 at 200");
	cr_assert_eq(packed_file(vol, &m, 3).start, 1000, "no shorter hole holds it: the 40-block run");
	/* a run of a stream's length opens below the last packed file */
	give_back(vol, &m, 20, STREAM + 4);
	cr_assert_eq(packed_file(vol, &m, 3).start, 20, "the lower run, not on from the last packed file");
	cr_assert_eq(packed_file(vol, &m, 3).start, 23);
	cr_assert_eq(test_unpin(&old), 0);
	finish(vol, &m);
}

/*
 * Files whose first request was 3 blocks went on asking on this CPU (as
 * interleaved writers do): a file with such a first request books a
 * window, however many files since asked only once, until fewer than one
 * in four of those seen grew.
 */
Test(packing, files_that_grow_keep_their_windows)
{
	cpu_set_t old;
	cr_assert_eq(test_pin_one_cpu(&old), 0);
	struct refmodel m;
	struct bga_volume *vol = make(2 * 4096, 4096, &m);
	show_files(vol, &m, 3, LEARN, true);
	for (int i = 0; i < 3 * LEARN; i++) {
		struct bga_rsv *rsv;
		cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
		struct bga_extent e = ask(vol, &m, rsv, BGA_NO_GOAL, 1, 3), w;
		cr_assert_eq(bga_rsv_window(rsv, &w), 0);
		cr_assert_gt(w.len, 0, "file %d: files of its first length grew here: it books a window", i);
		bga_rsv_close(rsv);
		give_back(vol, &m, e.start, e.len);
	}
	/* LEARN grew of 4 * LEARN seen: no longer fewer than one in four */
	struct bga_rsv *rsv;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	struct bga_extent e = ask(vol, &m, rsv, BGA_NO_GOAL, 1, 3), w;
	cr_assert_eq(bga_rsv_window(rsv, &w), 0);
	cr_assert_gt(w.len, 0, "one in four grew: still a window");
	bga_rsv_close(rsv);
	give_back(vol, &m, e.start, e.len);
	/* and the next one packs */
	e = packed_file(vol, &m, 3);
	give_back(vol, &m, e.start, e.len);
	cr_assert_eq(test_unpin(&old), 0);
	finish(vol, &m);
}

/*
 * A file's first window where no run has room for it (holes of 1 and 4
 * blocks only, the 1 nearer its goal): its request of 1..4 blocks is
 * served whole from the 4, not cut to the 1 (bga_rsv_open).
 */
Test(packing, a_window_takes_a_whole_run_before_a_shorter_one)
{
	struct refmodel m;
	const uint32_t at[] = {100, 200}, len[] = {1, 4};
	struct bga_volume *vol = make_holed(1, &m, at, len, 2);
	struct bga_rsv *rsv;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	struct bga_extent e = ask(vol, &m, rsv, 50, 1, 4);
	cr_assert_eq(e.start, 200, "the run that holds all of it, at 200, not %llu", (unsigned long long)e.start);
	cr_assert_eq(e.len, 4);
	bga_rsv_close(rsv);
	finish(vol, &m);
}

/*
 * A file that gave back the tail of what its window handed it, then asks
 * again from the first block it gave back (the block after what it kept):
 * it goes on there, its window's remainder given back so that the next
 * booking holds both (bga_rsv_open), not from where the window stood.
 * A used goal in that range (a file written at random offsets) is served
 * by the window as before.
 */
Test(packing, a_file_goes_on_from_the_tail_it_gave_back)
{
	struct refmodel m;
	struct bga_volume *vol = make(2 * 4096, 4096, &m);
	struct bga_rsv *rsv;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	struct bga_extent a = ask(vol, &m, rsv, 100, 1, 4), w;
	cr_assert_eq(a.start, 100);
	cr_assert_eq(a.len, 4);
	cr_assert_eq(bga_rsv_window(rsv, &w), 0);
	cr_assert_eq(w.start, 104, "the window goes on after the request");
	give_back(vol, &m, 102, 2);
	struct bga_extent b = ask(vol, &m, rsv, 102, 1, 4);
	cr_assert_eq(b.start, 102, "on from the tail given back, not %llu", (unsigned long long)b.start);
	cr_assert_eq(b.len, 4);
	/* a used block the window handed out, as a goal: the window serves */
	cr_assert_eq(bga_rsv_window(rsv, &w), 0);
	cr_assert_gt(w.len, 0);
	uint64_t next = w.start;
	struct bga_extent c = ask(vol, &m, rsv, 100, 1, 1);
	cr_assert_eq(c.start, next, "a used goal: the window's next block %llu, not %llu", (unsigned long long)next,
		     (unsigned long long)c.start);
	bga_rsv_close(rsv);
	finish(vol, &m);
}

/*
 * A booking that no free run can hold whole, while another file's window
 * holds blocks that would (group 0 used but for a 2-block hole and a
 * 24-block one, the other window's 7-block remainder at the start of the
 * 24): the other windows are taken back and the whole request placed
 * there, not cut to the 16 outside that window nor to the 2 nearer the
 * goal (<bgalloc/alloc.h>, where a request looks, 3; bga_rsv_open).
 */
Test(packing, a_booking_takes_windows_back_before_a_short_run)
{
	struct refmodel m;
	const uint32_t at[] = {100, 1000}, len[] = {2, 24};
	struct bga_volume *vol = make_holed(1, &m, at, len, 2);
	struct bga_rsv *other, *rsv;
	struct bga_extent w;
	cr_assert_eq(bga_rsv_open(vol, &other), 0);
	struct bga_extent a = ask(vol, &m, other, BGA_NO_GOAL, 1, 1);
	cr_assert_eq(a.start, 1000, "the other file's first window in the first run of 12 or more");
	cr_assert_eq(bga_rsv_window(other, &w), 0);
	cr_assert(w.start == 1001 && w.len > 0, "the other file holds a window after its block");
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	struct bga_extent e = ask(vol, &m, rsv, BGA_NO_GOAL, 1, 20);
	cr_assert_eq(e.len, 20, "all of the request, not a run of %llu at %llu", (unsigned long long)e.len,
		     (unsigned long long)e.start);
	cr_assert_eq(e.start, 1001, "where the other window stood");
	cr_assert_eq(bga_rsv_window(other, &w), 0);
	cr_assert_eq(w.len, 0, "the other window was taken back");
	bga_rsv_close(rsv);
	bga_rsv_close(other);
	finish(vol, &m);
}

/*
 * A file's first window with a goal inside a used stretch of its group
 * (holes of 20 blocks at 100 and at 3000, the goal at 2000): the first
 * run from the group's start that holds twice its window, at 100,
 * not the run on from the goal (first fit in the goal's group, as
 * bga_rsv_open says); the goal's own run comes first only when it
 * starts there.
 */
Test(packing, a_first_window_takes_the_first_run_of_its_group)
{
	struct refmodel m;
	const uint32_t at[] = {100, 3000}, len[] = {20, 20};
	struct bga_volume *vol = make_holed(2, &m, at, len, 2);
	struct bga_rsv *rsv;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	struct bga_extent e = ask(vol, &m, rsv, 2000, 1, 1);
	cr_assert_eq(e.start, 100, "the group's first run of 16 or more, not %llu", (unsigned long long)e.start);
	bga_rsv_close(rsv);
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	e = ask(vol, &m, rsv, 3000, 1, 1);
	cr_assert_eq(e.start, 3000, "a goal where a run starts: there");
	bga_rsv_close(rsv);
	finish(vol, &m);
}

/*
 * The longest window a file that keeps writing 8 blocks a request holds
 * (its windows double: 8, 16, 32, 64...) in group 0 of a volume of
 * `groups` groups of 4096, whose only free run there, 1000 blocks, also
 * holds `others` files' windows (sized ones, when `sized`: booked at
 * their goals, so they stay in group 0 whatever room the others have).
 */
static uint64_t longest_window_beside(uint32_t others, uint64_t groups, bool sized)
{
	struct refmodel m;
	const uint32_t at[] = {2000}, len[] = {1000};
	struct bga_volume *vol = make_holed(groups, &m, at, len, 1);
	struct bga_rsv *o[8], *rsv;
	struct bga_extent w;
	for (uint32_t i = 0; i < others; i++) {
		cr_assert_eq(bga_rsv_open(vol, &o[i]), 0);
		if (sized)
			cr_assert_eq(bga_rsv_set_size(o[i], 8), 0);
		ask(vol, &m, o[i], 2000 + 8 * i, 1, 1);
		cr_assert_eq(bga_rsv_window(o[i], &w), 0);
		cr_assert(w.len > 0 && w.start < 4096, "file %u holds a window in group 0", i);
	}
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	uint64_t goal = 2900, longest = 0;
	for (int i = 0; i < 16; i++) {
		struct bga_extent e = ask(vol, &m, rsv, goal, 8, 8);
		goal = e.start + e.len;
		cr_assert_eq(bga_rsv_window(rsv, &w), 0);
		longest = w.len > longest ? w.len : longest;
	}
	bga_rsv_close(rsv);
	for (uint32_t i = 0; i < others; i++)
		bga_rsv_close(o[i]);
	finish(vol, &m);
	return longest;
}

/*
 * A crowded group's windows share its free space (bga_rsv_open): with 8
 * other windows in the volume's only group, a growing file's window is
 * at most a quarter of the group's free blocks (under 1000) over the 9
 * windows, 27 blocks; with 7 it doubles as before, past 32.
 */
Test(packing, a_crowded_group_shares_its_free_space_among_its_windows)
{
	uint64_t seven = longest_window_beside(7, 1, false), eight = longest_window_beside(8, 1, false);
	cr_assert_gt(seven, 32, "7 other windows: the window doubles on (%llu)", (unsigned long long)seven);
	cr_assert_leq(eight, 1000 / (4 * 9), "8 other windows: at most its share (%llu)", (unsigned long long)eight);
	cr_assert_gt(eight, 0);
}

/*
 * The share holds only while no other group has room (bga_rsv_open):
 * the same 8 other windows (sized, so they stay in group 0) with a
 * second, empty group in the volume, and the growing file's window
 * doubles on past 32 as before; with one group, at most its share.
 */
Test(packing, a_crowded_group_shares_only_while_no_other_has_room)
{
	uint64_t one = longest_window_beside(8, 1, true), two = longest_window_beside(8, 2, true);
	cr_assert_leq(one, 1000 / (4 * 9), "one group: at most its share (%llu)", (unsigned long long)one);
	cr_assert_gt(two, 32, "another group with room: the window doubles on (%llu)", (unsigned long long)two);
}

/* A file of one goal-less request of `len` blocks through its own handle,
 * closed: where it went. */
static struct bga_extent one_file(struct bga_volume *vol, struct refmodel *m, uint64_t len)
{
	struct bga_rsv *rsv;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	struct bga_extent e = ask(vol, m, rsv, BGA_NO_GOAL, len, len);
	bga_rsv_close(rsv);
	return e;
}

/*
 * Files written one after another (first requests past a stream's
 * length: windows, not packed) go on from the last one's first extent
 * (next fit), past a hole a free opened below them, until a commit frees
 * blocks: then the next one fills from the group's start again (first
 * fit), and the one after goes on from it.
 */
Test(packing, a_first_window_goes_on_from_the_last_until_a_commit)
{
	cpu_set_t old;
	cr_assert_eq(test_pin_one_cpu(&old), 0);
	struct refmodel m;
	struct bga_volume *vol = make(2 * 4096, 4096, &m);
	struct bga_extent a = one_file(vol, &m, 20), b = one_file(vol, &m, 20);
	cr_assert_eq(b.start, a.start + 20, "the second file right after the first");
	give_back(vol, &m, a.start, a.len); /* a hole that holds the next file, below it */
	struct bga_extent c = one_file(vol, &m, 20);
	cr_assert_eq(c.start, b.start + 20, "on from the last file, not into the hole at %llu (got %llu)",
		     (unsigned long long)a.start, (unsigned long long)c.start);
	cr_assert_eq(bga_free_deferred(vol, b.start, b.len, 1), 0);
	cr_assert_eq(refmodel_free_deferred(&m, b.start, b.len, 1), 0);
	cr_assert_eq(bga_commit(vol, 1), 0);
	cr_assert_eq(refmodel_commit(&m, 1), 0);
	struct bga_extent d = one_file(vol, &m, 30);
	cr_assert_eq(d.start, a.start, "after a commit freed blocks: the group's first run that holds it, not %llu",
		     (unsigned long long)d.start);
	cr_assert_eq(one_file(vol, &m, 4).start, d.start + 30, "and on from that one");
	cr_assert_eq(test_unpin(&old), 0);
	finish(vol, &m);
}

/*
 * A packed file goes on at the CPU's next-fit place (where the last file
 * placed in order ended) when the free run there starts there and holds
 * it, past a hole below that holds it too: files written one after
 * another, packed or not, lie in the order they came.  Where the run
 * there is too short, it takes the first hole of its group that holds it
 * (first fit), and the place stays where it was: the next file goes on
 * from it, not from the hole.
 */
Test(packing, a_packed_file_goes_on_at_the_next_fit_place_when_its_run_holds_it)
{
	cpu_set_t old;
	cr_assert_eq(test_pin_one_cpu(&old), 0);
	struct refmodel m;
	struct bga_volume *vol = make(2 * 4096, 4096, &m);
	show_files(vol, &m, 3, LEARN, false);
	/* a file freed by a commit below the place: the place forgotten,
	 * the next file at the home's start */
	struct bga_extent f = one_file(vol, &m, 20);
	cr_assert_eq(bga_free_deferred(vol, f.start, f.len, 1), 0);
	cr_assert_eq(refmodel_free_deferred(&m, f.start, f.len, 1), 0);
	cr_assert_eq(bga_commit(vol, 1), 0);
	cr_assert_eq(refmodel_commit(&m, 1), 0);
	uint64_t x = one_file(vol, &m, 20).start;
	cr_assert_eq(x, m.cfg.first_data_block, "the group's first block, not %llu", (unsigned long long)x);
	give_back(vol, &m, x + 5, 6); /* a hole below the place that holds 3 twice */
	cr_assert_eq(packed_file(vol, &m, 3).start, x + 20, "right after the file before it, not in the hole");
	cr_assert_eq(packed_file(vol, &m, 3).start, x + 23, "and on from the packed one");
	/* the run at the place (x + 26) cut to 2 blocks */
	struct bga_request one = {.goal = x + 28, .min_len = 1, .max_len = 1, .flags = BGA_EXACT_GOAL};
	struct bga_extent blk;
	int rc = bga_alloc(vol, &one, &blk);
	cr_assert_eq(rc, 0);
	cr_assert_eq(refmodel_alloc_check(&m, &one, rc, &blk), 0, "%s", m.err);
	cr_assert_eq(packed_file(vol, &m, 3).start, x + 5, "the run at the place is too short: first fit");
	give_back(vol, &m, x + 28, 1);
	uint64_t at = packed_file(vol, &m, 3).start;
	cr_assert_eq(at, x + 26, "the place stayed where it was, not after the hole's file (got %llu)",
		     (unsigned long long)at);
	cr_assert_eq(test_unpin(&old), 0);
	finish(vol, &m);
}

/* One block at `at`, by its exact goal. */
static void take_block(struct bga_volume *vol, struct refmodel *m, uint64_t at)
{
	struct bga_request one = {.goal = at, .min_len = 1, .max_len = 1, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	int rc = bga_alloc(vol, &one, &e);
	cr_assert_eq(rc, 0);
	cr_assert_eq(refmodel_alloc_check(m, &one, rc, &e), 0, "%s", m->err);
}

static void free_deferred(struct bga_volume *vol, struct refmodel *m, uint64_t start, uint64_t len, uint64_t txn)
{
	cr_assert_eq(bga_free_deferred(vol, start, len, txn), 0);
	cr_assert_eq(refmodel_free_deferred(m, start, len, txn), 0);
}

static void commit(struct bga_volume *vol, struct refmodel *m, uint64_t txn)
{
	cr_assert_eq(bga_commit(vol, txn), 0);
	cr_assert_eq(refmodel_commit(m, txn), 0);
}

/*
 * A commit makes a CPU forget its next-fit place only when it frees
 * blocks below the place in the place's group (holes next fit would pass
 * over): a commit of blocks above it, or in another group, or of
 * nothing, leaves it, and the next file goes on from the last.
 */
Test(packing, a_commit_forgets_the_next_fit_place_only_for_blocks_freed_below_it)
{
	cpu_set_t old;
	cr_assert_eq(test_pin_one_cpu(&old), 0);
	struct refmodel m;
	struct bga_volume *vol = make(2 * 4096, 4096, &m);
	struct bga_extent a = one_file(vol, &m, 20), b = one_file(vol, &m, 20);
	cr_assert_eq(b.start, a.start + 20);
	take_block(vol, &m, a.start + 1000); /* above the place */
	take_block(vol, &m, 4096 + 100);     /* in the other group */
	free_deferred(vol, &m, a.start + 1000, 1, 1);
	free_deferred(vol, &m, 4096 + 100, 1, 1);
	commit(vol, &m, 1);
	commit(vol, &m, 2); /* frees nothing */
	give_back(vol, &m, a.start, a.len); /* a plain free below it: no commit */
	struct bga_extent c = one_file(vol, &m, 20);
	cr_assert_eq(c.start, b.start + 20, "the place kept: on from the last file, not %llu",
		     (unsigned long long)c.start);
	free_deferred(vol, &m, b.start, b.len, 3); /* below the place */
	commit(vol, &m, 3);
	struct bga_extent d = one_file(vol, &m, 30);
	cr_assert_eq(d.start, a.start, "the place forgotten: the group's first run that holds it, not %llu",
		     (unsigned long long)d.start);
	cr_assert_eq(test_unpin(&old), 0);
	finish(vol, &m);
}

/*
 * Where a new file of 20 blocks (packed: of 3, once files of 3 showed
 * they stay small) goes when group 0 is wholly used but for the hole
 * [100, 140) and blocks [pstart, pstart + plen) wait for a commit, on a
 * volume of `groups` groups of 4096.
 */
static uint64_t new_file_beside_waiting(uint64_t groups, uint32_t pstart, uint32_t plen, bool packed)
{
	cpu_set_t old;
	cr_assert_eq(test_pin_one_cpu(&old), 0);
	struct refmodel m;
	struct bga_volume *vol = make(groups * 4096, 4096, &m);
	if (packed)
		show_files(vol, &m, 3, LEARN, false);
	uint32_t at[] = {100}, len[] = {40};
	holes(vol, &m, 4096, at, len, 1);
	free_deferred(vol, &m, pstart, plen, 1);
	uint64_t got = packed ? packed_file(vol, &m, 3).start : one_file(vol, &m, 20).start;
	commit(vol, &m, 1);
	cr_assert_eq(test_unpin(&old), 0);
	finish(vol, &m);
	return got;
}

/*
 * A new file (a first window, or a packed file) passes over a run that
 * borders blocks waiting for a commit while its group holds more than
 * twice as many waiting blocks as free ones (a round of deletes not yet
 * committed, which would leave the file an island in what it frees): it
 * goes to the next group, and with no other group, into that run after
 * all.  A run away from the waiting blocks, or a round of a few blocks,
 * changes nothing: the file takes the hole as before.
 */
Test(packing, a_new_file_passes_over_a_run_beside_deletes_waiting_for_a_commit)
{
	uint64_t w = new_file_beside_waiting(2, 140, 2000, false), p = new_file_beside_waiting(2, 140, 2000, true);
	cr_assert_geq(w, 4096, "a first window beside 2000 waiting blocks: the next group, not %llu",
		      (unsigned long long)w);
	cr_assert_geq(p, 4096, "a packed file beside them: the next group, not %llu", (unsigned long long)p);
	cr_assert_eq(new_file_beside_waiting(1, 140, 2000, false), 100, "no other group: the hole after all");
	cr_assert_eq(new_file_beside_waiting(2, 1000, 2000, false), 100, "the waiting blocks away from the hole");
	cr_assert_eq(new_file_beside_waiting(2, 140, 10, false), 100, "10 waiting blocks beside 40 free");
	cr_assert_eq(new_file_beside_waiting(2, 140, 10, true), 100, "a packed file beside them too");
	cr_assert_eq(new_file_beside_waiting(2, 140, 80, false), 100, "80 waiting blocks beside 40 free: not more than twice");
	cr_assert_geq(new_file_beside_waiting(2, 140, 81, false), 4096, "81 waiting blocks beside 40 free: the next group");
}

/*
 * A booking that no free run holds whole, nor any other window (group
 * 0 used but for holes of 2, 12 and 30 blocks, in that order from the
 * goal; the file asks for 1 to 40): the first run that holds half of
 * the request (20) is looked for before any shorter one, so the file
 * gets the 30-block hole, not the 2 nearest the goal nor the 12 (bga_rsv_open).
 */
Test(packing, a_booking_no_run_holds_takes_the_first_run_of_half_before_a_shorter_one)
{
	struct refmodel m;
	const uint32_t at[] = {100, 500, 1000}, len[] = {2, 12, 30};
	struct bga_volume *vol = make_holed(1, &m, at, len, 3);
	struct bga_rsv *rsv;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	struct bga_extent e = ask(vol, &m, rsv, 50, 1, 40);
	cr_assert_eq(e.start, 1000, "the run that holds half of it, at 1000, not %llu+%llu", (unsigned long long)e.start,
		     (unsigned long long)e.len);
	cr_assert_eq(e.len, 30);
	bga_rsv_close(rsv);
	finish(vol, &m);
}

/*
 * Beside one open file's window (a log kept open), a file's goal-less
 * first window takes the first run of the group, from its start, that
 * holds it (first fit: the hole a free left below), not the run on from
 * the CPU's next-fit place; with no other window in the group it goes
 * on from there (bga_rsv_open).
 */
Test(packing, a_first_window_beside_one_open_file_takes_the_first_run_of_its_group)
{
	cpu_set_t old;
	cr_assert_eq(test_pin_one_cpu(&old), 0);
	struct refmodel m;
	struct bga_volume *vol = make(2 * 4096, 4096, &m);
	struct bga_extent a = one_file(vol, &m, 30), b = one_file(vol, &m, 30);
	cr_assert_eq(b.start, a.start + 30, "the second file right after the first");
	give_back(vol, &m, a.start, a.len); /* a hole that holds the next file, below it */
	struct bga_rsv *log;
	cr_assert_eq(bga_rsv_open(vol, &log), 0);
	struct bga_extent l = ask(vol, &m, log, BGA_NO_GOAL, 1, 1), w;
	cr_assert_eq(l.start, b.start + 30, "no other window: on from the last file (got %llu)",
		     (unsigned long long)l.start);
	cr_assert_eq(bga_rsv_window(log, &w), 0);
	cr_assert_gt(w.len, 0, "the open file holds a window");
	struct bga_extent c = one_file(vol, &m, 30);
	cr_assert_eq(c.start, a.start, "beside the open file: the group's first run that holds it, not %llu",
		     (unsigned long long)c.start);
	bga_rsv_close(log);
	cr_assert_eq(test_unpin(&old), 0);
	finish(vol, &m);
}

/* A new file of one request of up to `len` blocks; *window: the blocks
 * its handle's window held after it. */
static struct bga_extent new_file(struct bga_volume *vol, struct refmodel *m, uint64_t len, uint64_t *window)
{
	struct bga_rsv *rsv;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	struct bga_extent e = ask(vol, m, rsv, BGA_NO_GOAL, 1, len), w;
	cr_assert_eq(bga_rsv_window(rsv, &w), 0);
	*window = w.len;
	bga_rsv_close(rsv);
	return e;
}

/*
 * A hole for a new file (<bgalloc/alloc.h>, where a request looks, 2):
 * files whose first request was 2 blocks grew one time in three on this
 * CPU (too often to be packed, more often whole than not), and the home
 * group's free space is in pieces (holes of 1-3 blocks, none longer):
 * the next such file takes the first hole of exactly 2, past the 3 and
 * the 1 before it, and books no window.  Files of 3 blocks, half of
 * which grew, book a window as before (none of the holes of 3 holds
 * one).  Once
 * the group has a long run again (its free space not in pieces), a file
 * of 2 books a window too, not the hole of 2 left.
 */
Test(packing, a_new_file_mostly_whole_takes_a_hole_of_its_length_in_a_group_in_pieces)
{
	cpu_set_t old;
	cr_assert_eq(test_pin_one_cpu(&old), 0);
	struct refmodel m;
	struct bga_volume *vol = make(2 * 4096, 4096, &m);
	show_files(vol, &m, 2, 12, false);
	show_files(vol, &m, 2, 6, true);
	show_files(vol, &m, 3, LEARN / 2, false);
	show_files(vol, &m, 3, LEARN / 2, true);
	uint32_t at[34] = {100, 200, 300, 400}, len[34] = {3, 1, 2, 2};
	for (int i = 4; i < 34; i++) {
		at[i] = 1000 + 10 * (uint32_t)(i - 4);
		len[i] = 3;
	}
	holes(vol, &m, 4096, at, len, 34);
	uint64_t w;
	struct bga_extent e = new_file(vol, &m, 2, &w);
	cr_assert_eq(e.start, 300, "the first hole of exactly 2, past the 3 at 100 and the 1 at 200 (got %llu)",
		     (unsigned long long)e.start);
	cr_assert_eq(w, 0, "a file put in a hole books no window (%llu held)", (unsigned long long)w);
	e = new_file(vol, &m, 3, &w);
	cr_assert_gt(w, 0, "half the files of 3 grew here: a window, not a hole of 3 (got %llu)",
		     (unsigned long long)e.start);
	cr_assert_geq(e.start, 4096, "no hole of group 0 holds a first window");
	give_back(vol, &m, 2000, 100); /* a long run: the free space no longer in pieces */
	e = new_file(vol, &m, 2, &w);
	cr_assert_neq(e.start, 400, "a group with a long run is next fit's: not the hole of 2 at 400");
	cr_assert_gt(w, 0, "and the file books a window");
	cr_assert_eq(test_unpin(&old), 0);
	finish(vol, &m);
}

/*
 * A file's first window looks for a run of twice its size (bga_rsv_open):
 * holes of 14 blocks at 100 (one and a half windows of rsv_default 8,
 * and more) and of 16 at 3000, the goal at 2000 in a used stretch: the
 * file's first block goes at 3000, where its window and as much again
 * fit, not into the hole at 100 that a file written a block and then a
 * page at a time would outgrow at its second request.
 */
Test(packing, a_first_window_passes_a_hole_shorter_than_twice_its_size)
{
	struct refmodel m;
	const uint32_t at[] = {100, 3000}, len[] = {14, 16};
	struct bga_volume *vol = make_holed(2, &m, at, len, 2);
	struct bga_rsv *rsv;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	struct bga_extent e = ask(vol, &m, rsv, 2000, 1, 1);
	cr_assert_eq(e.start, 3000, "the first run of 16 or more, not %llu", (unsigned long long)e.start);
	e = ask(vol, &m, rsv, 3001, 1, 15);
	cr_assert_eq(e.start, 3001, "the file goes on in place: %llu", (unsigned long long)e.start);
	cr_assert_eq(e.len, 15);
	bga_rsv_close(rsv);
	finish(vol, &m);
}

/*
 * A packed file longer than a block goes first fit in its home's group
 * (group 0 here) when the next-fit place has moved on to the next group
 * and the home's group is nearly full: into the hole deletes left there,
 * not at the place.  With no run there that holds it, and for a
 * one-block file, at the place as before.
 */
Test(packing, a_packed_file_fills_its_nearly_full_home_group_before_the_next_groups_place)
{
	cpu_set_t old;
	cr_assert_eq(test_pin_one_cpu(&old), 0);
	struct refmodel m;
	struct bga_volume *vol = make(2 * 4096, 4096, &m);
	show_files(vol, &m, 3, LEARN, false);
	show_files(vol, &m, 1, LEARN, false);
	const uint32_t at[] = {100, 200}, len[] = {3, 1};
	holes(vol, &m, 4096, at, len, 2);
	struct bga_extent f = one_file(vol, &m, 20); /* a first window: the place moves on to group 1 */
	cr_assert_geq(f.start, 4096, "group 0 has no run for it (got %llu)", (unsigned long long)f.start);
	uint64_t place = f.start + f.len;
	cr_assert_eq(packed_file(vol, &m, 3).start, 100, "the home group's hole, not the place");
	cr_assert_eq(packed_file(vol, &m, 3).start, place, "no run in the home group holds it: the place");
	cr_assert_eq(packed_file(vol, &m, 1).start, place + 3, "a one-block file goes on at the place");
	cr_assert_eq(test_unpin(&old), 0);
	finish(vol, &m);
}
