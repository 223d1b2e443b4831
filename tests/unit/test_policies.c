/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Filesystem policies: windows, deferred frees, reservations, trim, stats. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "testutil.h"
#include "threads.h"
#include <bgalloc/counter.h>

#include "refmodel.h"
#include "types.h"
#include "pin.h"

static struct bga_volume *make(uint64_t nblocks, uint32_t bpg)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	bga_config_init(&cfg, nblocks);
	cfg.blocks_per_group = bpg;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	return vol;
}

static int alloc1(struct bga_volume *vol, uint64_t goal, struct bga_rsv *rsv, uint32_t flags, uint64_t *blk)
{
	struct bga_request req = {.goal = goal, .min_len = 1, .max_len = 1, .rsv = rsv, .flags = flags};
	struct bga_extent e;
	int rc = bga_alloc(vol, &req, &e);
	if (rc == 0)
		*blk = e.start;
	return rc;
}

/* ---- goal-less requests: packed from the home ---- */

/*
 * Goal-less requests pack from the low end of the calling CPU's home
 * group, as first fit would, and the home stays there while nobody
 * contends for it (alloc.h, "Where a request looks"): each request is
 * judged by the model as if its goal were the home's first block, whole
 * where a run holds it (refmodel_alloc_whole_check), through allocations
 * and frees that leave holes behind.  Moving the home on after each
 * allocation spread goal-less data, and the holes its frees left, over
 * the whole volume (BENCHMARKS.md#placement-on-recorded-histories).
 */
Test(home, goalless_requests_pack_first_fit_from_the_home)
{
	cpu_set_t old;
	cr_assert_eq(test_pin_one_cpu(&old), 0);
	struct bga_config cfg;
	bga_config_init(&cfg, 4 * 2048);
	cfg.blocks_per_group = 2048;
	struct bga_volume *vol;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	struct refmodel m;
	cr_assert_eq(refmodel_init(&m, &cfg), 0);
	struct bga_extent e, got[256];
	unsigned n = 0;
	/* the first request of a fresh volume finds the home's first block */
	struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = 1, .max_len = 1};
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(e.start % cfg.blocks_per_group, 0, "a fresh home group's first block is %llu",
		     (unsigned long long)e.start);
	uint64_t home = e.start;
	cr_assert_eq(refmodel_alloc_check(&m, &req, 0, &e), 0, "%s", m.err);
	got[n++] = e;
	uint64_t seed = 42;
	for (int i = 0; i < 3000; i++) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		if (n > 0 && (n == 256 || seed % 3 == 0)) {
			unsigned k = (unsigned)(seed >> 8) % n;
			cr_assert_eq(bga_free(vol, got[k].start, got[k].len), 0);
			cr_assert_eq(refmodel_free(&m, got[k].start, got[k].len), 0);
			got[k] = got[--n];
			continue;
		}
		req.min_len = 1 + (seed >> 16) % 4;
		req.max_len = req.min_len + (seed >> 24) % 60;
		/* the model's rule for a request kept whole, at the home */
		struct bga_request as_home = req;
		as_home.goal = home;
		as_home.flags |= BGA_WHOLE;
		int rc = bga_alloc(vol, &req, &e);
		if (rc == 0)
			cr_assert_eq(refmodel_alloc_whole_check(&m, &as_home, &e), 0, "request %d: %s", i, m.err);
		cr_assert_eq(refmodel_alloc_check(&m, &req, rc, &e), 0, "request %d: %s", i, m.err);
		if (rc == 0)
			got[n++] = e;
	}
	struct bga_stats st;
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_assert_eq(st.rsv_window_blocks, 0, "no contention, yet a locality window");
	cr_assert_eq(refmodel_compare(&m, vol), 0, "%s", m.err);
	refmodel_fini(&m);
	cr_assert_eq(test_unpin(&old), 0);
	assert_clean(vol);
	bga_destroy(vol);
}

/* ---- steering around a busy goal group ---- */

/*
 * Where `n` allocations at goal 0 land, counted as in group 0 or not,
 * with the test thread pinned (steering state is per CPU).
 */
static unsigned allocs_in_group0(struct bga_volume *vol, unsigned n, uint32_t bpg)
{
	unsigned in0 = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t b = UINT64_MAX;
		cr_assert_eq(alloc1(vol, 0, NULL, 0, &b), 0);
		in0 += b < bpg;
	}
	return in0;
}

/*
 * A goal group found busy sends this CPU elsewhere for 64 allocations; found
 * busy again as soon as the CPU comes back, for twice as long; after 64
 * uncontended allocations back in it, the next busy spell costs 64 again.
 * "Busy" is the group's lock slot held by the test itself (fas and mutex
 * trylocks both refuse a holder), so the searches pass it over.
 */
Test(steering, backs_off_from_a_group_that_stays_busy)
{
	const uint32_t bpg = 4096;
	struct bga_config cfg;
	struct bga_volume *vol;
	cpu_set_t allowed, one;
	int cpu = 0;
	cr_assert_eq(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
	while (!CPU_ISSET(cpu, &allowed))
		cpu++;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	cr_assert_eq(pthread_setaffinity_np(pthread_self(), sizeof(one), &one), 0);
	bga_config_init(&cfg, 64 * bpg);
	cfg.blocks_per_group = bpg;
	cfg.lock_slots = 64; /* group 0 alone in its slot */
	cr_assert_eq(bga_create(&cfg, &vol), 0);

	bga_locktab_lock(vol->locks, 0);
	cr_assert_eq(allocs_in_group0(vol, 1, bpg), 0, "a busy goal group is passed over");
	cr_assert_eq(allocs_in_group0(vol, 64, bpg), 0, "64 steered allocations");
	cr_assert_eq(allocs_in_group0(vol, 1, bpg), 0, "back, and busy again");
	bga_locktab_unlock(vol->locks, 0);
	cr_assert_eq(allocs_in_group0(vol, 128, bpg), 0, "the second spell lasts twice as long");
	cr_assert_eq(allocs_in_group0(vol, 64, bpg), 64, "then the goal group again, uncontended");

	bga_locktab_lock(vol->locks, 0);
	cr_assert_eq(allocs_in_group0(vol, 1, bpg), 0);
	bga_locktab_unlock(vol->locks, 0);
	cr_assert_eq(allocs_in_group0(vol, 64, bpg), 0, "a fresh busy spell costs 64 again");
	cr_assert_eq(allocs_in_group0(vol, 1, bpg), 1);

	struct bga_check_report rep;
	cr_assert_eq(bga_check(vol, &rep), 0, "%s", rep.message);
	bga_destroy(vol);
}

/* ---- reservation windows ---- */

#define WRITERS 16
#define FILE_BLOCKS 512

struct writers {
	struct bga_volume *vol;
	bool windows;
	pthread_barrier_t round;
	uint64_t extents[WRITERS];
	int failures;
	int check_failures;
};

static void write_file(void *ctx, int id)
{
	struct writers *w = ctx;
	struct bga_rsv *rsv = NULL;
	if (w->windows && bga_rsv_open(w->vol, &rsv) != 0)
		__atomic_fetch_add(&w->failures, 1, __ATOMIC_RELAXED);
	uint64_t last = BGA_NO_GOAL, extents = 0;
	for (int b = 0; b < FILE_BLOCKS; b++) {
		uint64_t blk, goal = last == BGA_NO_GOAL ? BGA_NO_GOAL : last + 1;
		if (goal != BGA_NO_GOAL && goal >= (uint64_t)WRITERS * FILE_BLOCKS * 8)
			goal = BGA_NO_GOAL;
		if (alloc1(w->vol, goal, rsv, 0, &blk) != 0) {
			__atomic_fetch_add(&w->failures, 1, __ATOMIC_RELAXED);
			break;
		}
		if (last == BGA_NO_GOAL || blk != last + 1)
			extents++;
		last = blk;
		/* Every writer takes one block per round: truly interleaved. */
		int r = pthread_barrier_wait(&w->round);
		if (r == PTHREAD_BARRIER_SERIAL_THREAD && b % 64 == 0 && bga_check(w->vol, NULL) != 0)
			__atomic_fetch_add(&w->check_failures, 1, __ATOMIC_RELAXED);
		pthread_barrier_wait(&w->round);
	}
	w->extents[id] = extents;
	bga_rsv_close(rsv);
}

static double interleaved_writers(bool windows)
{
	struct writers w = {.windows = windows};
	struct bga_config cfg;
	bga_config_init(&cfg, (uint64_t)WRITERS * FILE_BLOCKS * 8);
	cfg.blocks_per_group = 8192;
	cr_assert_eq(bga_create(&cfg, &w.vol), 0);
	pthread_barrier_init(&w.round, NULL, WRITERS);
	cr_assert_eq(test_threads_run(WRITERS, write_file, &w), 0);
	pthread_barrier_destroy(&w.round);
	cr_assert_eq(w.failures, 0, "no false ENOSPC");
	cr_assert_eq(w.check_failures, 0, "windows stayed disjoint and the volume consistent");
	assert_clean(w.vol);
	cr_assert_eq(bga_free_exact(w.vol), cfg.nblocks - (uint64_t)WRITERS * FILE_BLOCKS);
	bga_destroy(w.vol);
	double sum = 0;
	for (int i = 0; i < WRITERS; i++)
		sum += (double)w.extents[i];
	return sum / WRITERS;
}

Test(windows, cut_extents_per_file_eightfold)
{
	double without = interleaved_writers(false);
	double with = interleaved_writers(true);
	cr_log_info("extents per file: %.1f without windows, %.1f with", without, with);
	cr_assert_leq(with * 8, without, "with windows %.1f, without %.1f extents per file", with, without);
}

Test(windows, grow_while_used_and_cap_at_max)
{
	struct bga_volume *vol = make(1 << 16, 4096);
	struct bga_rsv *rsv;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	struct bga_extent win;
	uint64_t blk, last = 0;
	cr_assert_eq(alloc1(vol, 100, rsv, 0, &blk), 0);
	cr_assert_eq(blk, 100);
	cr_assert_eq(bga_rsv_window(rsv, &win), 0);
	cr_assert_eq(win.start, 101, "the window holds what the first allocation left");
	cr_assert_eq(win.len, 7, "first window has rsv_default blocks");
	/* Windows follow each other, so each one's size is the distance
	 * between the ends of the blocks they held. */
	uint64_t sizes[16], n = 0, end = win.start + win.len;
	sizes[n++] = 8;
	last = blk;
	for (int i = 0; i < 3000; i++) {
		cr_assert_eq(alloc1(vol, last + 1, rsv, 0, &blk), 0);
		cr_assert_eq(blk, last + 1, "a file written in order stays contiguous");
		last = blk;
		cr_assert_eq(bga_rsv_window(rsv, &win), 0);
		if (win.len != 0 && win.start + win.len != end && n < 16) {
			sizes[n++] = win.start + win.len - end;
			end = win.start + win.len;
		}
	}
	cr_assert_geq(n, 6);
	for (uint64_t i = 1; i < n; i++)
		cr_assert(sizes[i] == 2 * sizes[i - 1] || sizes[i] == 1027, "window %lu: %lu after %lu",
			  (unsigned long)i, (unsigned long)sizes[i], (unsigned long)sizes[i - 1]);
	cr_assert_eq(sizes[n - 1], 1027, "capped at rsv_max");
	struct bga_stats st;
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_assert_gt(st.rsv_hit_ratio, 0.99, "hit ratio %f", st.rsv_hit_ratio);
	assert_clean(vol);
	bga_rsv_close(rsv);
	bga_destroy(vol);
}

Test(windows, others_avoid_then_close_returns_blocks)
{
	struct bga_volume *vol = make(4096, 4096);
	struct bga_rsv *rsv;
	uint64_t blk;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	cr_assert_eq(bga_rsv_set_size(rsv, 64), 0);
	cr_assert_eq(alloc1(vol, 1000, rsv, 0, &blk), 0);
	cr_assert_eq(blk, 1000);
	cr_assert_eq(alloc1(vol, 1010, NULL, 0, &blk), 0);
	cr_assert(blk < 1000 || blk >= 1064, "a plain allocation avoids the window (got %lu)", (unsigned long)blk);
	cr_assert_eq(bga_free(vol, blk, 1), 0);
	bga_rsv_close(rsv);
	cr_assert_eq(alloc1(vol, 1010, NULL, 0, &blk), 0);
	cr_assert_eq(blk, 1010, "closing returned the window's blocks at once");
	assert_clean(vol);
	bga_destroy(vol);
}

Test(windows, size_zero_turns_off)
{
	struct bga_volume *vol = make(4096, 4096);
	struct bga_rsv *rsv;
	struct bga_extent win;
	uint64_t blk;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	cr_assert_eq(alloc1(vol, 10, rsv, 0, &blk), 0);
	cr_assert_eq(bga_rsv_window(rsv, &win), 0);
	cr_assert_eq(win.len, 7, "an 8-block window, one block taken");
	cr_assert_eq(bga_rsv_set_size(rsv, 0), 0);
	cr_assert_eq(bga_rsv_window(rsv, &win), 0);
	cr_assert_eq(win.len, 0, "size 0 drops the window");
	cr_assert_eq(alloc1(vol, 20, rsv, 0, &blk), 0);
	cr_assert_eq(bga_rsv_window(rsv, &win), 0);
	cr_assert_eq(win.len, 0, "and books no new one");
	cr_assert_eq(bga_rsv_set_size(rsv, 4097), -EINVAL, "above a group");
	cr_assert_eq(bga_rsv_set_size(NULL, 8), -EINVAL);
	bga_rsv_close(rsv);
	bga_destroy(vol);
}

Test(windows, never_cause_false_enospc)
{
	struct bga_volume *vol = make(256, 256);
	struct bga_rsv *rsv[8];
	uint64_t blk, got = 0;
	for (int i = 0; i < 8; i++) {
		cr_assert_eq(bga_rsv_open(vol, &rsv[i]), 0);
		cr_assert_eq(bga_rsv_set_size(rsv[i], 32), 0);
		cr_assert_eq(alloc1(vol, (uint64_t)i * 32, rsv[i], 0, &blk), 0);
	}
	/* Eight windows now book every block; plain callers still get them all. */
	while (alloc1(vol, 0, NULL, 0, &blk) == 0)
		got++;
	cr_assert_eq(got, 256 - 8);
	cr_assert_eq(bga_free_exact(vol), 0);
	cr_assert_eq(alloc1(vol, 0, rsv[3], 0, &blk), -ENOSPC, "full is full, with or without a window");
	assert_clean(vol);
	for (int i = 0; i < 8; i++)
		bga_rsv_close(rsv[i]);
	bga_destroy(vol);
}

/*
 * A file's first window (a handle's first request) goes in the first
 * free run of its goal's group, from the group's start, that holds
 * twice its window (first fit), not in a shorter one before it nor in
 * the smallest: judged on the model's map of a group cut into holes of
 * 1 to 40 blocks, file after file.
 */
/*
 * `n` files on the calling CPU that each ask twice through their handle
 * (goal `goal`; their blocks freed again): files whose first request is
 * `len` long grow there, and keep their windows (alloc.h, "Where a
 * request looks").
 */
static void show_growing_files(struct bga_volume *vol, struct refmodel *m, uint64_t goal, uint64_t len, int n)
{
	for (int i = 0; i < n; i++) {
		struct bga_rsv *rsv;
		struct bga_extent e[2];
		cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
		for (int k = 0; k < 2; k++) {
			struct bga_request req = {.goal = k ? e[0].start + e[0].len : goal, .min_len = 1, .max_len = len,
						  .rsv = rsv};
			int rc = bga_alloc(vol, &req, &e[k]);
			cr_assert_eq(refmodel_alloc_check(m, &req, rc, &e[k]), 0, "%s", m->err);
		}
		bga_rsv_close(rsv);
		for (int k = 0; k < 2; k++) {
			cr_assert_eq(bga_free(vol, e[k].start, e[k].len), 0);
			cr_assert_eq(refmodel_free(m, e[k].start, e[k].len), 0);
		}
	}
}

Test(windows, first_window_first_fit_in_goal_group)
{
	struct bga_config cfg;
	bga_config_init(&cfg, 2 * 4096);
	cfg.blocks_per_group = 4096;
	struct bga_volume *vol;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	struct refmodel m;
	cr_assert_eq(refmodel_init(&m, &cfg), 0);
	/* files of one block grow on this CPU: the files below keep windows
	 * (each asks once: without this they would pack after 16) */
	cpu_set_t old;
	cr_assert_eq(test_pin_one_cpu(&old), 0);
	show_growing_files(vol, &m, 4096, 1, 16);
	uint32_t g0 = (uint32_t)cfg.first_data_block, need = 2 * cfg.rsv_default;
	struct bga_request fill = {.goal = g0, .min_len = 4096 - g0, .max_len = 4096 - g0, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &fill, &e), 0);
	cr_assert_eq(refmodel_alloc_check(&m, &fill, 0, &e), 0, "%s", m.err);
	uint64_t seed = 7;
	for (uint32_t at = g0 + 64; at + 80 < 4096;) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		uint32_t len = 1 + (uint32_t)(seed % 40);
		cr_assert_eq(bga_free(vol, at, len), 0);
		cr_assert_eq(refmodel_free(&m, at, len), 0);
		at += len + 1 + (uint32_t)((seed >> 8) % 60);
	}
	for (int file = 0; file < 40; file++) {
		/* the model's first run of at least `need` in group 0 */
		uint64_t best = 0, best_len = UINT64_MAX;
		for (uint64_t b = g0; b < 4096;) {
			uint64_t r = b;
			while (r < 4096 && m.state[r] == REFM_FREE)
				r++;
			if (r - b >= need) {
				best = b;
				best_len = r - b;
				break;
			}
			b = r == b ? b + 1 : r;
		}
		if (best_len == UINT64_MAX)
			break;
		struct bga_rsv *rsv;
		cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
		struct bga_request req = {.goal = g0, .min_len = 1, .max_len = 1, .rsv = rsv};
		int rc = bga_alloc(vol, &req, &e);
		cr_assert_eq(refmodel_alloc_check(&m, &req, rc, &e), 0, "file %d: %s", file, m.err);
		cr_assert_eq(e.start, best, "file %d: the first run of %u or more starts at %llu (%llu long), not %llu",
			     file, need, (unsigned long long)best, (unsigned long long)best_len,
			     (unsigned long long)e.start);
		struct bga_extent win;
		cr_assert_eq(bga_rsv_window(rsv, &win), 0);
		cr_assert(win.len == 0 || (win.start == e.start + 1 && win.start + win.len <= best + best_len),
			  "file %d: the window stays in its run", file);
		bga_rsv_close(rsv); /* its tail goes back */
	}
	cr_assert_eq(test_unpin(&old), 0);
	cr_assert_eq(refmodel_compare(&m, vol), 0, "%s", m.err);
	refmodel_fini(&m);
	assert_clean(vol);
	bga_destroy(vol);
}

/* ---- deferred frees ---- */

Test(deferred, blocks_wait_for_commit)
{
	struct bga_volume *vol = make(128, 64);
	struct bga_request req = {.goal = 0, .min_len = 64, .max_len = 64};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(bga_free_deferred(vol, 10, 20, 5), 0);
	cr_assert_eq(bga_free_deferred(vol, 100, 10, 7), 0);
	cr_assert_eq(bga_free_exact(vol), 0, "pending blocks are not free");
	assert_clean(vol);
	req.min_len = req.max_len = 1;
	cr_assert_eq(bga_alloc(vol, &req, &e), -EAGAIN, "would fit after a commit");
	req.min_len = req.max_len = 21;
	cr_assert_eq(bga_alloc(vol, &req, &e), -ENOSPC, "21 blocks would not fit even then");
	cr_assert_eq(bga_free_deferred(vol, 15, 1, 6), -EINVAL, "already pending");
	cr_assert_eq(bga_free(vol, 15, 1), -EINVAL, "pending blocks cannot be freed again");
	cr_assert_eq(bga_commit(vol, 4), 0);
	cr_assert_eq(bga_free_exact(vol), 0, "txn 4 releases nothing");
	cr_assert_eq(bga_commit(vol, 6), 0);
	cr_assert_eq(bga_free_exact(vol), 20);
	cr_assert_eq(bga_commit(vol, 5), -EINVAL, "commits do not go backwards");
	cr_assert_eq(bga_free_deferred(vol, 30, 1, 6), -EINVAL, "txn already committed");
	cr_assert_eq(bga_commit(vol, 7), 0);
	cr_assert_eq(bga_free_exact(vol), 30);
	struct bga_stats st;
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_assert_eq(st.deferred_blocks, 0);
	cr_assert_eq(st.last_committed_txn, 7);
	assert_clean(vol);
	bga_destroy(vol);
}

Test(deferred, free_block_and_spanning_range)
{
	struct bga_volume *vol = make(256, 64);
	struct bga_request req = {.goal = 0, .min_len = 64, .max_len = 64};
	struct bga_extent e;
	for (int i = 0; i < 3; i++)
		cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(bga_free_deferred(vol, 190, 10, 1), -EINVAL, "blocks 192.. are free");
	cr_assert_eq(bga_free_deferred(vol, 0, 1, 0), -EINVAL, "txn 0");
	cr_assert_eq(bga_free_deferred(vol, 50, 100, 1), 0, "a range over three groups");
	struct bga_stats st;
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_assert_eq(st.deferred_blocks, 100);
	assert_clean(vol);
	cr_assert_eq(bga_commit(vol, 1), 0);
	cr_assert_eq(bga_free_exact(vol), 164);
	assert_clean(vol);
	bga_destroy(vol);
}

/* ---- delayed-allocation reservations ---- */

Test(reserve, unreserved_cannot_eat_reserved)
{
	struct bga_volume *vol = make(1000, 1024);
	struct bga_request req = {.goal = 0, .min_len = 11, .max_len = 11};
	struct bga_extent e;
	cr_assert_eq(bga_reserve(vol, 990), 0);
	cr_assert_eq(bga_reserve(vol, 11), -ENOSPC, "would overcommit");
	cr_assert_eq(bga_alloc(vol, &req, &e), -ENOSPC);
	req.min_len = 1;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(e.len, 10, "shrunk to what is not promised");
	req.min_len = req.max_len = 5;
	req.flags = BGA_USE_RESERVED;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(bga_reserved(vol), 985);
	cr_assert_eq(bga_unreserve(vol, 986), -EINVAL);
	cr_assert_eq(bga_unreserve(vol, 985), 0);
	cr_assert_eq(bga_reserved(vol), 0);
	cr_assert_eq(bga_reserve(vol, 0), -EINVAL);
	cr_assert_eq(bga_reserve(vol, 1001), -EINVAL);
	cr_assert_eq(bga_free_exact(vol), 985);
	assert_clean(vol);
	bga_destroy(vol);
}

#define RTHREADS 16

struct rstress {
	struct bga_volume *vol;
	int stop;
	int violations;
	int reserved_enospc;
	uint64_t txn;
};

static void *reserve_worker(void *arg)
{
	struct rstress *rs = arg;
	uint64_t s = (uint64_t)(uintptr_t)&s ^ 0x5bd1e995;
	uint64_t held[64];
	int n = 0;
	for (int i = 0; i < 4000; i++) {
		uint64_t k = 1 + rng_next(&s) % 4;
		if (n + (int)k <= 64 && bga_reserve(rs->vol, k) == 0) {
			for (uint64_t j = 0; j < k; j++) {
				uint64_t blk;
				int rc = alloc1(rs->vol, rng_next(&s) % 1100, NULL, BGA_USE_RESERVED, &blk);
				if (rc == 0)
					held[n++] = blk;
				else
					__atomic_fetch_add(&rs->reserved_enospc, 1, __ATOMIC_RELAXED);
			}
		}
		uint64_t blk;
		if (n < 64 && alloc1(rs->vol, BGA_NO_GOAL, NULL, 0, &blk) == 0)
			held[n++] = blk;
		if (bga_reserve(rs->vol, 3) == 0 && bga_unreserve(rs->vol, 3) != 0)
			__atomic_fetch_add(&rs->violations, 1, __ATOMIC_RELAXED);
		while (n > 32 || (n > 0 && rng_next(&s) % 3 == 0)) {
			uint64_t b = held[--n];
			uint64_t txn = __atomic_load_n(&rs->txn, __ATOMIC_RELAXED) + 1;
			int rc = (rng_next(&s) & 1) ? bga_free(rs->vol, b, 1) : bga_free_deferred(rs->vol, b, 1, txn);
			/* The sampler commits in a tight loop: a txn read a moment
			 * ago may be committed already; a later one is fine. */
			for (int retry = 0; rc == -EINVAL && retry < 1000; retry++)
				rc = bga_free_deferred(rs->vol, b, 1, __atomic_load_n(&rs->txn, __ATOMIC_RELAXED) + 1);
			if (rc != 0)
				__atomic_fetch_add(&rs->violations, 1, __ATOMIC_RELAXED);
		}
	}
	while (n > 0)
		if (bga_free(rs->vol, held[--n], 1) != 0)
			__atomic_fetch_add(&rs->violations, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Samples the invariant free - reserved >= 0 (used <= capacity) and commits. */
static void *sampler(void *arg)
{
	struct rstress *rs = arg;
	while (!__atomic_load_n(&rs->stop, __ATOMIC_RELAXED)) {
		int64_t used = bga_counter_sum(rs->vol->used);
		if (used > (int64_t)rs->vol->geom->capacity)
			__atomic_fetch_add(&rs->violations, 1, __ATOMIC_RELAXED);
		uint64_t t = __atomic_add_fetch(&rs->txn, 1, __ATOMIC_RELAXED);
		if (bga_commit(rs->vol, t) != 0)
			__atomic_fetch_add(&rs->violations, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

Test(reserve, sixteen_threads_near_full, .timeout = 120)
{
	/* 16 threads hold up to 64 blocks each: 1024 of 1100 usable. */
	struct rstress rs = {.vol = make(1100, 256)};
	pthread_t t[RTHREADS], smp;
	pthread_create(&smp, NULL, sampler, &rs);
	for (int i = 0; i < RTHREADS; i++)
		pthread_create(&t[i], NULL, reserve_worker, &rs);
	for (int i = 0; i < RTHREADS; i++)
		pthread_join(t[i], NULL);
	__atomic_store_n(&rs.stop, 1, __ATOMIC_RELAXED);
	pthread_join(smp, NULL);
	cr_assert_eq(rs.violations, 0, "free - reserved went negative or a call failed");
	cr_assert_eq(rs.reserved_enospc, 0, "a reserved allocation failed");
	cr_assert_eq(bga_commit(rs.vol, rs.txn + 2), 0);
	cr_assert_eq(bga_reserved(rs.vol), 0);
	cr_assert_eq(bga_free_exact(rs.vol), 1100);
	assert_clean(rs.vol);
	bga_destroy(rs.vol);
}


/* -EAGAIN only when the request would succeed after the commit, with
 * its alignment: in the last group of a volume whose size is not a
 * multiple of align, the pending run 193..197 holds an aligned pair
 * (194) but no aligned four (196..199 passes the end). */
Test(deferred, eagain_counts_alignment_in_a_short_last_group)
{
	struct bga_volume *vol = make(198, 64);
	struct bga_extent e;
	fill_groups(vol, 3, 64);
	struct bga_request all = {.goal = 192, .min_len = 6, .max_len = 6, .flags = BGA_EXACT_GOAL};
	cr_assert_eq(bga_alloc(vol, &all, &e), 0);
	cr_assert_eq(bga_free_deferred(vol, 193, 5, 1), 0);
	struct bga_request four = {.goal = BGA_NO_GOAL, .min_len = 4, .max_len = 4, .align = 4};
	struct bga_request two = {.goal = BGA_NO_GOAL, .min_len = 2, .max_len = 2, .align = 2};
	e.start = e.len = 77;
	cr_assert_eq(bga_alloc(vol, &four, &e), -ENOSPC, "no aligned four even after the commit");
	cr_assert_eq(bga_alloc(vol, &two, &e), -EAGAIN, "an aligned pair once 193..197 is free");
	cr_assert_eq(e.start, 77);
	cr_assert_eq(e.len, 77);
	cr_assert_eq(bga_free_exact(vol), 0, "a refused request changed the free count");
	cr_assert_eq(bga_commit(vol, 1), 0);
	cr_assert_eq(bga_alloc(vol, &four, &e), -ENOSPC);
	cr_assert_eq(bga_alloc(vol, &two, &e), 0);
	cr_assert_eq(e.start, 194);
	cr_assert_eq(e.len, 2);
	assert_clean(vol);
	bga_destroy(vol);
}
