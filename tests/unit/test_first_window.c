/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where a file's first window goes (lib/alloc/search.c,
 * place_window_locked): into the first run that holds its fit, a longer
 * one beside another file's window, past a hole a file outgrew, and side
 * by side with a crowd of idle new files.  The windows themselves:
 * test_windows.c.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "refmodel.h"
#include "requests.h"
#include "testutil.h"

/* Pin the caller to CPU 0 (its old set in *old): one CPU's home, next-fit
 * place and memory of its files. */
static void pin_cpu0(cpu_set_t *old)
{
	cpu_set_t set;
	cr_assert_eq(sched_getaffinity(0, sizeof(*old), old), 0);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	cr_assert_eq(sched_setaffinity(0, sizeof(set), &set), 0);
}

/*
 * A file's first window packs: from the home's low end, into the first
 * free run that holds what the file asked for, or its window twice over
 * (smaller holes are passed over), from that run's start, so it splits no run it
 * does not fill.  The model finds that run on its own.
 */
Test(windows, a_first_window_packs_into_the_first_run_that_holds_it)
{
	cpu_set_t old;
	pin_cpu0(&old);
	struct bga_config cfg;
	bga_config_init(&cfg, 4096);
	cfg.blocks_per_group = 4096; /* one group: every CPU's home */
	struct bga_volume *vol;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	struct refmodel m;
	cr_assert_eq(refmodel_init(&m, &cfg), 0);
	struct bga_extent e;
	struct bga_request all = {.goal = 0, .min_len = 600, .max_len = 600, .flags = BGA_EXACT_GOAL};
	cr_assert_eq(bga_alloc(vol, &all, &e), 0);
	cr_assert_eq(refmodel_alloc_check(&m, &all, 0, &e), 0, "%s", m.err);
	/* holes of 3, 7, 5, 10 and 30 blocks */
	const uint64_t holes[][2] = {{20, 3}, {100, 7}, {200, 5}, {300, 10}, {400, 30}};
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(bga_free(vol, holes[i][0], holes[i][1]), 0);
		cr_assert_eq(refmodel_free(&m, holes[i][0], holes[i][1]), 0);
	}
	for (uint32_t want = 1; want <= 12; want += 11) {
		struct bga_rsv *rsv;
		cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
		/* its request, or its window twice over */
		uint64_t win = 2 * cfg.rsv_default, fit = want > win ? want : win, first = 0;
		while (refmodel_run_at(&m, first, false) < fit)
			first++;
		struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = 1, .max_len = want, .rsv = rsv};
		cr_assert_eq(bga_alloc(vol, &req, &e), 0);
		cr_assert_eq(e.start, first, "a first window of %u at %llu, the first run of %llu is at %llu", want,
			     (unsigned long long)e.start, (unsigned long long)fit, (unsigned long long)first);
		cr_assert_eq(e.len, want);
		cr_assert_eq(refmodel_alloc_check(&m, &req, 0, &e), 0, "%s", m.err);
		struct bga_extent w;
		cr_assert_eq(bga_rsv_window(rsv, &w), 0);
		if (w.len)
			cr_assert_eq(w.start, e.start + e.len, "the window goes on from the extent");
		bga_rsv_close(rsv);
		cr_assert_eq(refmodel_compare(&m, vol), 0, "%s", m.err);
	}
	refmodel_fini(&m);
	cr_assert_eq(sched_setaffinity(0, sizeof(old), &old), 0);
	assert_clean(vol);
	bga_destroy(vol);
}

/*
 * New files written a block each and left open together (a database's
 * catalogs) keep no room after each other's windows once the group holds
 * eight such idle first windows (search.c, BGA_IDLE_CROWD): the first
 * eight lie a room past every other window's end, the ninth starts right
 * where one of theirs ends.  Files that took from their windows again
 * since (grew) make no crowd: the ninth keeps room after every window.
 */
Test(windows, a_crowd_of_idle_new_files_keeps_no_room_after_their_windows)
{
	enum { CROWD = 8 };
	for (int grow = 0; grow <= 1; grow++) {
		struct bga_volume *vol = make_volume(1 << 16, 1 << 15, 0);
		struct bga_rsv *rsv[CROWD + 1];
		struct bga_extent e, w;
		uint64_t ends[CROWD];
		for (int i = 0; i <= CROWD; i++) {
			cr_assert_eq(bga_rsv_open(vol, &rsv[i]), 0);
			cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 1, rsv[i], 0, &e), 0);
			int at_an_end = 0;
			for (int j = 0; j < i; j++)
				at_an_end += e.start == ends[j];
			cr_assert_eq(at_an_end, i == CROWD && !grow, "%s: file %d at %llu, %d windows ending at it",
				     grow ? "files that grew" : "idle new files", i, (unsigned long long)e.start, at_an_end);
			if (grow && i < CROWD) /* the file asks again: its window served it */
				cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 1, rsv[i], 0, &e), 0);
			cr_assert_eq(bga_rsv_window(rsv[i], &w), 0);
			cr_assert_gt(w.len, 0, "file %d keeps a window", i);
			if (i < CROWD)
				ends[i] = w.start + w.len;
		}
		for (int i = 0; i <= CROWD; i++)
			bga_rsv_close(rsv[i]);
		assert_clean(vol);
		bga_destroy(vol);
	}
}

/*
 * A hole a file outgrew is passed over by the next file's first window
 * (search.c, outgrown_hole_locked): a file put in a hole of 18 blocks
 * (its first window's fit is 16) that asks for more than the hole holds
 * goes on elsewhere; deleted and written again, the next new file's
 * first window goes past the hole, where one that no file outgrew (the
 * same hole, on a volume where the file never asked for more) takes it.
 */
Test(windows, a_hole_a_file_outgrew_is_passed_over_by_the_next_new_file)
{
	enum { HOLE = 100, HOLE_LEN = 18, USED = 600 };
	cpu_set_t old;
	pin_cpu0(&old);
	for (int outgrow = 0; outgrow <= 1; outgrow++) {
		struct bga_config cfg;
		bga_config_init(&cfg, 4096);
		cfg.blocks_per_group = 4096; /* one group: every CPU's home */
		cr_assert_eq(2 * cfg.rsv_default, 16, "the first window's fit the hole is sized for");
		struct bga_volume *vol;
		cr_assert_eq(bga_create(&cfg, &vol), 0);
		struct bga_extent e, f;
		struct bga_request all = {.goal = 0, .min_len = USED, .max_len = USED, .flags = BGA_EXACT_GOAL};
		cr_assert_eq(bga_alloc(vol, &all, &e), 0);
		cr_assert_eq(bga_free(vol, HOLE, HOLE_LEN), 0);
		struct bga_rsv *rsv;
		cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
		cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 1, rsv, 0, &e), 0);
		cr_assert_eq(e.start, HOLE, "the first file's first window takes the hole");
		uint64_t len = 1;
		if (outgrow) { /* on in order, for more than the hole holds */
			cr_assert_eq(alloc_at(vol, HOLE + 1, 1, HOLE_LEN, rsv, 0, &f), 0);
			cr_assert_geq(f.start, USED, "the file went on past the hole, at %llu", (unsigned long long)f.start);
			cr_assert_eq(f.len, HOLE_LEN);
		}
		bga_rsv_close(rsv);
		/* deleted, and committed: the CPU's next-fit place is forgotten */
		cr_assert_eq(bga_free_deferred(vol, e.start, len, 1), 0);
		if (outgrow)
			cr_assert_eq(bga_free_deferred(vol, f.start, f.len, 1), 0);
		cr_assert_eq(bga_commit(vol, 1), 0);
		cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
		cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 1, rsv, 0, &e), 0);
		if (outgrow)
			cr_assert_geq(e.start, USED, "the next file took %llu, in the hole its like outgrew",
				      (unsigned long long)e.start);
		else
			cr_assert_eq(e.start, HOLE, "the next file took %llu, not the hole no file outgrew",
				     (unsigned long long)e.start);
		bga_rsv_close(rsv);
		assert_clean(vol);
		bga_destroy(vol);
	}
	cr_assert_eq(sched_setaffinity(0, sizeof(old), &old), 0);
}

/*
 * A new file's first window in a group that holds another file's window
 * looks for a run of 5/2 its window (search.c, BGA_FIRST_FIT_BESIDE),
 * where one in a group with no other window looks for twice it: with
 * holes of 18 and 22 blocks (a window of 8), a file written alone takes
 * the first, a file written beside an open one the second.
 */
Test(windows, a_first_window_beside_another_looks_for_a_longer_run)
{
	enum { HOLE = 100, SHORT = 18, LONG_HOLE = 200, LONG = 22, USED = 600, OTHER = 3000 };
	cpu_set_t old;
	pin_cpu0(&old);
	struct bga_config cfg;
	bga_config_init(&cfg, 4096);
	cfg.blocks_per_group = 4096; /* one group: every CPU's home */
	cr_assert_eq(cfg.rsv_default, 8, "the window the holes are sized for");
	struct bga_volume *vol;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	struct bga_extent e;
	struct bga_request all = {.goal = 0, .min_len = USED, .max_len = USED, .flags = BGA_EXACT_GOAL};
	cr_assert_eq(bga_alloc(vol, &all, &e), 0);
	cr_assert_eq(bga_free(vol, HOLE, SHORT), 0);
	cr_assert_eq(bga_free(vol, LONG_HOLE, LONG), 0);
	struct bga_rsv *alone, *other, *beside;
	cr_assert_eq(bga_rsv_open(vol, &alone), 0);
	cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 1, alone, 0, &e), 0);
	cr_assert_eq(e.start, HOLE, "a file written alone took %llu, not the first run of twice its window",
		     (unsigned long long)e.start);
	bga_rsv_close(alone);
	/* deleted, and committed: the CPU's next-fit place is forgotten */
	cr_assert_eq(bga_free_deferred(vol, e.start, 1, 1), 0);
	cr_assert_eq(bga_commit(vol, 1), 0);
	cr_assert_eq(bga_rsv_open(vol, &other), 0);
	cr_assert_eq(alloc_at(vol, OTHER, 1, 1, other, 0, &e), 0);
	cr_assert_eq(e.start, OTHER);
	struct bga_extent w;
	cr_assert_eq(bga_rsv_window(other, &w), 0);
	cr_assert_gt(w.len, 0, "the open file keeps a window");
	cr_assert_eq(bga_rsv_open(vol, &beside), 0);
	cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 1, beside, 0, &e), 0);
	cr_assert_eq(e.start, LONG_HOLE, "a file written beside an open one took %llu, not the first run of 5/2 its window",
		     (unsigned long long)e.start);
	bga_rsv_close(beside);
	bga_rsv_close(other);
	cr_assert_eq(sched_setaffinity(0, sizeof(old), &old), 0);
	assert_clean(vol);
	bga_destroy(vol);
}

/* A volume of four groups of bpg blocks, the caller pinned to CPU 0. */
static struct bga_volume *four_groups_on_cpu0(cpu_set_t *old, uint32_t bpg)
{
	pin_cpu0(old);
	struct bga_config cfg;
	bga_config_init(&cfg, 4 * (uint64_t)bpg);
	cfg.blocks_per_group = bpg;
	struct bga_volume *vol;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	return vol;
}

/*
 * The CPU's next-fit place (lib/alloc/pack.c, bga__pack_booked) does not
 * follow a new file that the walk moved out of its goal's group: that
 * file went where there was room, and the goal-less file written next
 * goes on beside the last one the place followed, not beside the moved one.
 */
Test(windows, a_new_file_moved_out_of_its_goals_group_leaves_the_place)
{
	enum { BPG = 4096 };
	cpu_set_t old;
	struct bga_volume *vol = four_groups_on_cpu0(&old, BPG);
	struct bga_extent e, a, b, c;
	cr_assert_eq(alloc_at(vol, BPG, BPG, BPG, NULL, BGA_EXACT_GOAL, &e), 0); /* group 1 full */
	struct bga_rsv *ra, *rb, *rc;
	cr_assert_eq(bga_rsv_open(vol, &ra), 0);
	cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 1, ra, 0, &a), 0);
	cr_assert_eq(bga_rsv_open(vol, &rb), 0);
	cr_assert_eq(alloc_at(vol, BPG + 10, 1, 1, rb, 0, &b), 0);
	cr_assert_neq(b.start / BPG, 1, "group 1 is full");
	cr_assert_neq(b.start / BPG, a.start / BPG, "the walk took %llu, in the first file's group",
		      (unsigned long long)b.start);
	cr_assert_eq(bga_rsv_open(vol, &rc), 0);
	cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 1, rc, 0, &c), 0);
	cr_assert_eq(c.start / BPG, a.start / BPG,
		     "the file after one moved out of its goal's group took %llu, beside it (%llu), not beside %llu",
		     (unsigned long long)c.start, (unsigned long long)b.start, (unsigned long long)a.start);
	cr_assert_gt(c.start, a.start, "it goes on from the place");
	bga_rsv_close(rc);
	bga_rsv_close(rb);
	bga_rsv_close(ra);
	cr_assert_eq(sched_setaffinity(0, sizeof(old), &old), 0);
	assert_clean(vol);
	bga_destroy(vol);
}

/*
 * Nor does the place follow an old file's first window booked at its goal
 * (a file packed at its first request, grown at a goal elsewhere, as a
 * database file is): the new file written next goes on where the CPU's
 * new files went, not among the old file's blocks.
 */
Test(windows, an_old_files_booking_at_its_goal_leaves_the_place)
{
	enum { BPG = 4096, LEARN = 40 };
	cpu_set_t old;
	struct bga_volume *vol = four_groups_on_cpu0(&old, BPG);
	struct bga_extent e, x, y;
	uint64_t home = UINT64_MAX;
	/* files of a block that never grow: the next such file is packed */
	for (int i = 0; i < LEARN; i++) {
		struct bga_rsv *r;
		cr_assert_eq(bga_rsv_open(vol, &r), 0);
		cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 1, r, 0, &e), 0);
		home = e.start / BPG;
		bga_rsv_close(r);
	}
	uint64_t far = (home + 2) % 4 * BPG;
	struct bga_rsv *rx, *ry;
	cr_assert_eq(bga_rsv_open(vol, &rx), 0);
	cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 1, rx, 0, &x), 0);
	cr_assert_eq(x.start / BPG, home);
	struct bga_extent w;
	cr_assert_eq(bga_rsv_window(rx, &w), 0);
	cr_assert_eq(w.len, 0, "the file's first request was packed, no window booked");
	cr_assert_eq(alloc_at(vol, far + 100, 1, 1, rx, 0, &x), 0);
	cr_assert_eq(x.start, far + 100, "its later request books its first window at its goal");
	cr_assert_eq(bga_rsv_open(vol, &ry), 0);
	cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 1, ry, 0, &y), 0);
	cr_assert_eq(y.start / BPG, home, "the next new file took %llu, beside the old file's %llu, not in group %llu",
		     (unsigned long long)y.start, (unsigned long long)x.start, (unsigned long long)home);
	bga_rsv_close(ry);
	bga_rsv_close(rx);
	cr_assert_eq(sched_setaffinity(0, sizeof(old), &old), 0);
	assert_clean(vol);
	bga_destroy(vol);
}

/*
 * But an old file's first window booked at its goal in a group before the
 * place's takes the place back with it (pack.c, bga__pack_booked): the
 * room there, below the groups written since, is filled first: the new
 * file written next goes into the old file's group, not the last one's.
 */
Test(windows, an_old_files_booking_before_the_places_group_takes_the_place_back)
{
	enum { BPG = 4096, LEARN = 40, LAST = 3 };
	cpu_set_t old;
	struct bga_volume *vol = four_groups_on_cpu0(&old, BPG);
	struct bga_extent e, x, y, z;
	/* files of a block that never grow: the next such file is packed */
	for (int i = 0; i < LEARN; i++) {
		struct bga_rsv *r;
		cr_assert_eq(bga_rsv_open(vol, &r), 0);
		cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 1, r, 0, &e), 0);
		bga_rsv_close(r);
	}
	struct bga_rsv *rx, *ry, *rz;
	cr_assert_eq(bga_rsv_open(vol, &rx), 0);
	cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 1, rx, 0, &x), 0);
	struct bga_extent w;
	cr_assert_eq(bga_rsv_window(rx, &w), 0);
	cr_assert_eq(w.len, 0, "the file's first request was packed, no window booked");
	/* a new file of a length not learned books its first window at its
	 * goal in the last group: the place follows it there */
	cr_assert_eq(bga_rsv_open(vol, &rz), 0);
	cr_assert_eq(alloc_at(vol, LAST * BPG + 1000, 8, 8, rz, 0, &z), 0);
	cr_assert_eq(z.start, LAST * BPG + 1000, "the new file's first window at its goal");
	/* the old file's later request books its first window at its goal,
	 * in a group before the place's */
	uint64_t back = (x.start / BPG == 1 ? 0 : 1) * BPG + 2000;
	cr_assert_eq(alloc_at(vol, back, 1, 1, rx, 0, &x), 0);
	cr_assert_eq(x.start, back, "its later request books its first window at its goal");
	cr_assert_eq(bga_rsv_open(vol, &ry), 0);
	cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 1, ry, 0, &y), 0);
	cr_assert_eq(y.start / BPG, back / BPG,
		     "the next new file took %llu, not beside the old file's %llu, but in the group of the place it left (%llu)",
		     (unsigned long long)y.start, (unsigned long long)x.start, (unsigned long long)z.start);
	bga_rsv_close(ry);
	bga_rsv_close(rz);
	bga_rsv_close(rx);
	cr_assert_eq(sched_setaffinity(0, sizeof(old), &old), 0);
	assert_clean(vol);
	bga_destroy(vol);
}
