/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga_alloc_vec: where its pieces come from (alloc.h, where a request
 * looks), on live and lazily loaded volumes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "memio.h"
#include "testutil.h"

static struct bga_volume *full_volume(uint64_t nblocks, uint32_t bpg)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	bga_config_init(&cfg, nblocks);
	cfg.blocks_per_group = bpg;
	cfg.flags = BGA_START_FULL;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	return vol;
}

/* The thread stays on one CPU, so its locality window is one window. */
static void pin(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &set);
	cr_assert_eq(sched_setaffinity(0, sizeof(set), &set), 0);
}

/*
 * The outside pass's case: a goal-less bga_alloc of one block books the
 * CPU's locality window in one of the two free runs; a goal-less
 * bga_alloc_vec of 12 must not take from that window (it is bga_alloc's
 * alone), and takes one extent where one run holds all 12.
 */
Test(vec, goalless_never_takes_the_locality_window)
{
	pin();
	struct bga_volume *vol = full_volume(4 * 256, 256);
	cr_assert_eq(bga_free(vol, 9, 8), 0);
	cr_assert_eq(bga_free(vol, 600, 16), 0);
	struct bga_request one = {.goal = BGA_NO_GOAL, .min_len = 1, .max_len = 1};
	struct bga_extent e, out[16];
	cr_assert_eq(bga_alloc(vol, &one, &e), 0);
	cr_assert(e.start == 9 || e.start == 600, "the one block at %lu", (unsigned long)e.start);
	struct bga_request r = {.goal = BGA_NO_GOAL, .min_len = 4, .max_len = 16};
	size_t n = 0;
	cr_assert_eq(bga_alloc_vec(vol, &r, 12, out, 16, &n), 0);
	/* Whether the CPU booked a locality window there depends on whether
	 * it found its home contended (lib/README.md, where blocks go): the
	 * answer is judged against the runs outside windows either way. */
	struct bga_group_stats gs = {.size = sizeof(gs)};
	cr_assert_eq(bga_group_stats(vol, e.start / 256, &gs), 0);
	if (e.start == 9 || gs.window_blocks == 0) {
		/* [600, 616), or what is left of it, holds all 12 */
		cr_assert_eq(n, 1, "split into %zu extents: [%lu,+%lu) ...", n, (unsigned long)out[0].start,
			     (unsigned long)out[0].len);
		cr_assert_eq(out[0].start, e.start == 600 ? 601 : 600);
		cr_assert_eq(out[0].len, 12);
	} else {
		/* the locality window holds the rest of [600, 616): only
		 * [9, 17) lies outside windows, and a partial result is a
		 * success */
		cr_assert_eq(n, 1);
		cr_assert_eq(out[0].start, 9);
		cr_assert_eq(out[0].len, 8);
	}
	/* bga_alloc with BGA_WHOLE agrees on the same state */
	cr_assert_eq(bga_free(vol, out[0].start, out[0].len), 0);
	struct bga_request w = {.goal = BGA_NO_GOAL, .min_len = 4, .max_len = 12, .flags = BGA_WHOLE};
	cr_assert_eq(bga_alloc(vol, &w, &e), 0);
	cr_assert_eq(e.start, out[0].start);
	cr_assert_eq(e.len, out[0].len);
	assert_clean(vol);
	bga_destroy(vol);
}

/*
 * The outside pass's case: on a lazily loaded volume all or nothing
 * split a request that the goal's own free run holds ([0,+3) [68,+6)
 * where [68, 104) holds all 9): the unread chunk counted as used, the
 * fit placed it.  Live, prefetched and lazily loaded answer alike.
 */
Test(vec, lazy_load_all_or_nothing_keeps_the_goals_run)
{
	for (int how = 0; how < 3; how++) {
		struct bga_volume *vol = full_volume(3 * 64, 64);
		cr_assert_eq(bga_free(vol, 0, 10), 0);
		cr_assert_eq(bga_free(vol, 68, 36), 0);
		struct memio m;
		struct bga_io io;
		memio_init(&m, &io);
		if (how) {
			cr_assert_eq(bga_store(vol, &io), 0);
			bga_destroy(vol);
			if (how == 1) {
				cr_assert_eq(bga_load(&io, NULL, &vol), 0);
			} else {
				cr_assert_eq(bga_load(&io, NULL, &vol), 0);
				cr_assert_eq(bga_prefetch(vol), 0);
			}
		}
		for (int all = 1; all >= 0; all--) { /* all or nothing first: the chunk still unread */
			struct bga_request r = {.goal = 81, .min_len = 2, .max_len = 10,
						.flags = all ? BGA_ALL_OR_NOTHING : 0};
			struct bga_extent out[4];
			size_t n = 0;
			cr_assert_eq(bga_alloc_vec(vol, &r, 9, out, 4, &n), 0);
			cr_assert_eq(n, 1, "how %d all %d: %zu extents, the first [%lu,+%lu)", how, all, n,
				     (unsigned long)out[0].start, (unsigned long)out[0].len);
			cr_assert_eq(out[0].start, 68);
			cr_assert_eq(out[0].len, 9);
			cr_assert_eq(bga_free(vol, 68, 9), 0);
		}
		assert_clean(vol);
		bga_destroy(vol);
		memio_free(&m);
	}
}
