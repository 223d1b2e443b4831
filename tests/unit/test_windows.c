/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Windows that own their blocks (lib/core/window.h): a handle's window and a
 * CPU's locality window hold blocks nobody else gets, hand them out with
 * no group lock, count them as free everywhere, and give them back before
 * any -ENOSPC, to an exact goal, to a trim, and when closed; a store writes
 * them as free.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "contend.h"
#include "refmodel.h"
#include "requests.h"
#include "group.h"
#include "window.h"
#include "memio.h"
#include "snapshot.h"
#include "testutil.h"

static uint64_t lock_acquisitions(struct bga_volume *vol)
{
	struct bga_stats st;
	cr_assert_eq(bga_stats(vol, &st), 0);
	return st.lock_acquisitions;
}

Test(windows, owner_takes_without_a_group_lock)
{
	struct bga_volume *vol = make_volume(1 << 16, 4096, 0);
	struct bga_extent w, e;
	struct bga_rsv *rsv = window_at(vol, 1000, 64, &w);
	/* bga_stats takes every group's lock itself: that many per call */
	uint64_t locks = lock_acquisitions(vol), per_call = lock_acquisitions(vol) - locks;
	locks += per_call;
	for (uint64_t b = w.start; b < w.start + w.len; b++) {
		cr_assert_eq(alloc_at(vol, b, 1, 1, rsv, 0, &e), 0);
		cr_assert_eq(e.start, b, "a file written in order stays contiguous");
	}
	cr_assert_eq(lock_acquisitions(vol) - per_call, locks, "allocations from the window took a group lock");
	/* bad input still gets its errno, though the window could serve it */
	cr_assert_eq(alloc_at(vol, 1 << 16, 1, 1, rsv, 0, &e), -EINVAL, "a goal past the end");
	cr_assert_eq(alloc_at(vol, 0, 2, 1, rsv, 0, &e), -EINVAL, "min_len > max_len");
	/* the window is used up: the next one is booked under a lock, right after */
	cr_assert_eq(alloc_at(vol, w.start + w.len, 1, 1, rsv, 0, &e), 0);
	cr_assert_eq(e.start, w.start + w.len);
	cr_assert_gt(lock_acquisitions(vol) - 2 * per_call, locks);
	bga_rsv_close(rsv);
	assert_clean(vol);
	cr_assert_eq(bga_free_exact(vol), (1 << 16) - 65, "closing gave the rest back");
	bga_destroy(vol);
}

struct listing {
	struct bga_extent window;
	uint64_t blocks;
	bool window_seen;
};

static int list_cb(void *ctx, uint64_t start, uint64_t len)
{
	struct listing *l = ctx;
	if (start <= l->window.start && start + len >= l->window.start + l->window.len)
		l->window_seen = true;
	l->blocks += len;
	return 0;
}

#define discard ignore_extent

Test(windows, remainders_are_free_but_nobody_elses)
{
	struct bga_volume *vol = make_volume(1 << 16, 4096, 0);
	struct bga_extent w, e;
	struct bga_rsv *rsv = window_at(vol, 1000, 64, &w);
	cr_assert_eq(bga_free_exact(vol), (1 << 16) - 1, "a window's unused blocks are free");
	struct bga_stats st;
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_assert_eq(st.rsv_window_blocks, 63);
	cr_assert_eq(st.free_blocks, (1 << 16) - 1);
	/* nobody else gets them: a plain goal inside lands past the window */
	cr_assert_eq(alloc_at(vol, w.start + 5, 1, 1, NULL, 0, &e), 0);
	cr_assert(e.start >= w.start + w.len || e.start < w.start, "got %llu inside the window",
		  (unsigned long long)e.start);
	cr_assert_eq(bga_free(vol, e.start, 1), 0);
	/* freeing one is freeing a block nobody holds: refused, nothing changed */
	void *before, *after;
	size_t blen, alen;
	cr_assert_eq(bga__snapshot(vol, &before, &blen), 0);
	cr_assert_eq(bga_free(vol, w.start + 3, 1), -EINVAL);
	cr_assert_eq(bga_free(vol, w.start - 1, 2), -EINVAL, "a range reaching into the window");
	cr_assert_eq(bga_free_deferred(vol, w.start + 3, 1, 1), -EINVAL);
	cr_assert_eq(bga__snapshot(vol, &after, &alen), 0);
	cr_assert(blen == alen && memcmp(before, after, blen) == 0, "a refused free changed the state");
	free(before);
	free(after);
	/* bga_foreach_free lists them */
	struct listing l = {w, 0, false};
	cr_assert_eq(bga_foreach_free(vol, 0, 1 << 16, 1, list_cb, &l), 0);
	cr_assert_eq(l.blocks, (1 << 16) - 1);
	cr_assert(l.window_seen, "the window's blocks were listed free");
	bga_rsv_close(rsv);
	assert_clean(vol);
	bga_destroy(vol);
}

Test(windows, an_exact_goal_takes_the_window_from_there_on)
{
	struct bga_volume *vol = make_volume(1 << 16, 4096, 0);
	struct bga_extent w, e, left;
	struct bga_rsv *rsv = window_at(vol, 2000, 64, &w);
	cr_assert_eq(alloc_at(vol, w.start + 20, 4, 4, NULL, BGA_EXACT_GOAL, &e), 0);
	cr_assert_eq(e.start, w.start + 20);
	cr_assert_eq(bga_rsv_window(rsv, &left), 0);
	cr_assert_eq(left.start, w.start);
	cr_assert_eq(left.len, 20, "the window keeps what lies before the goal");
	for (uint64_t b = w.start; b < w.start + 20; b++) {
		cr_assert_eq(alloc_at(vol, b, 1, 1, rsv, 0, &e), 0);
		cr_assert_eq(e.start, b);
	}
	cr_assert_eq(alloc_at(vol, w.start + 20, 1, 1, rsv, 0, &e), 0);
	cr_assert(e.start < w.start + 20 || e.start >= w.start + 24, "the thief's blocks handed out again");
	assert_clean(vol);
	bga_rsv_close(rsv);
	assert_clean(vol);
	bga_destroy(vol);
}

/* An exact goal at the window's next block takes the front of the
 * remainder: the window keeps the part after the extent (bga_rsv_open),
 * and its file's next append comes from there. */
Test(windows, an_exact_goal_at_the_window_front_leaves_it_the_rest)
{
	struct bga_volume *vol = make_volume(1 << 16, 4096, 0);
	struct bga_extent w, e, left;
	struct bga_rsv *rsv = window_at(vol, 2000, 64, &w);
	cr_assert_eq(alloc_at(vol, w.start, 4, 4, rsv, BGA_EXACT_GOAL, &e), 0);
	cr_assert_eq(e.start, w.start);
	cr_assert_eq(e.len, 4);
	cr_assert_eq(bga_rsv_window(rsv, &left), 0);
	cr_assert_eq(left.start, w.start + 4, "the window keeps what lies after the extent: [%llu, +%llu)",
		     (unsigned long long)left.start, (unsigned long long)left.len);
	cr_assert_eq(left.len, w.len - 4);
	cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 1, rsv, 0, &e), 0);
	cr_assert_eq(e.start, w.start + 4, "the next append from the window");
	assert_clean(vol);
	bga_rsv_close(rsv);
	assert_clean(vol);
	bga_destroy(vol);
}

/* A window doubles whenever more than half of the last one was used
 * (bga_rsv_open), a window its booking request used up whole too: with
 * requests of 16 from windows of 8, the first window is used up, and the
 * second, for a request of its size, is booked doubled at 32 and keeps
 * 16 for the next request, which it serves. */
Test(windows, a_window_used_up_by_its_booking_doubles_the_next)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	test_config_init(&cfg, 1 << 16, 4096, 0);
	cfg.rsv_default = 8; /* a handle never sized: a sized one keeps its size */
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	struct bga_rsv *rsv;
	struct bga_extent e, w;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 16, rsv, 0, &e), 0);
	cr_assert_eq(e.len, 16);
	cr_assert_eq(bga_rsv_window(rsv, &w), 0);
	cr_assert_eq(w.len, 0, "the first request used up its window");
	cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 16, rsv, 0, &e), 0);
	cr_assert_eq(bga_rsv_window(rsv, &w), 0);
	cr_assert_eq(w.len, 16, "a window of 32 keeps 16 (windows of 8, then 32): it holds %llu",
		     (unsigned long long)w.len);
	cr_assert_eq(w.start, e.start + e.len);
	uint64_t next = w.start;
	cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 16, rsv, 0, &e), 0);
	cr_assert_eq(e.start, next, "the third request from the window");
	assert_clean(vol);
	bga_rsv_close(rsv);
	assert_clean(vol);
	bga_destroy(vol);
}

/* All or nothing through a handle takes from what its window holds at the
 * call (bga_alloc_vec), a nearly full volume's too, where the counter's
 * lock-free path cannot decide: the window serves, and keeps the rest. */
Test(windows, all_or_nothing_takes_from_the_window_near_full)
{
	enum { N = 4096 };
	struct bga_volume *vol = make_volume(N, 512, 0);
	struct bga_extent w, left, out[4];
	struct bga_rsv *rsv = window_at(vol, 1000, 16, &w);
	/* everything else used: 15 blocks free, all in the window (fewer than
	 * any counter batch, so only the exact count decides) */
	cr_assert_eq(bga_claim(vol, 0, w.start - 1), 0);
	cr_assert_eq(bga_claim(vol, w.start + w.len, N - w.start - w.len), 0);
	cr_assert_eq(bga_free_exact(vol), w.len);
	struct bga_request r = {.goal = BGA_NO_GOAL, .min_len = 1, .max_len = 8, .rsv = rsv,
				.flags = BGA_ALL_OR_NOTHING};
	size_t n = 0;
	cr_assert_eq(bga_alloc_vec(vol, &r, 8, out, 4, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(out[0].start, w.start, "from the window's front");
	cr_assert_eq(out[0].len, 8);
	cr_assert_eq(bga_rsv_window(rsv, &left), 0);
	cr_assert_eq(left.start, w.start + 8, "the window keeps the rest: [%llu, +%llu)",
		     (unsigned long long)left.start, (unsigned long long)left.len);
	cr_assert_eq(left.len, w.len - 8);
	assert_clean(vol);
	bga_rsv_close(rsv);
	assert_clean(vol);
	bga_destroy(vol);
}

/* Windows hold most of a nearly full volume: every block is still handed
 * out, to plain, exact and reserved requests, before -ENOSPC. */
Test(windows, never_cause_false_enospc_when_they_hold_everything)
{
	enum { N = 4096, BPG = 512, FILES = 8 };
	struct bga_volume *vol = make_volume(N, BPG, 0);
	struct bga_rsv *rsv[FILES];
	struct bga_extent w;
	for (int i = 0; i < FILES; i++)
		rsv[i] = window_at(vol, (uint64_t)i * BPG, 256, &w); /* coloured: at most 224 in */
	cr_assert_eq(bga_reserve(vol, 10), 0, "window blocks are free: they can be promised");
	struct bga_extent e;
	cr_assert_eq(alloc_at(vol, 0, 8, 8, NULL, BGA_USE_RESERVED, &e), 0);
	uint64_t got = 8 + FILES;
	for (;;) {
		int rc = alloc_at(vol, BGA_NO_GOAL, 1, 64, NULL, 0, &e);
		if (rc == -ENOSPC)
			break;
		cr_assert_eq(rc, 0);
		got += e.len;
	}
	cr_assert_eq(got, N - 2, "blocks left unhanded: %llu", (unsigned long long)(N - 2 - got));
	cr_assert_eq(bga_free_exact(vol), 2, "the two still reserved");
	cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 2, NULL, BGA_USE_RESERVED, &e), 0);
	cr_assert_eq(e.len, 2);
	/* the owners' windows were taken back: their next allocation fails cleanly */
	cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 1, rsv[3], 0, &e), -ENOSPC);
	assert_clean(vol);
	for (int i = 0; i < FILES; i++)
		bga_rsv_close(rsv[i]);
	assert_clean(vol);
	bga_destroy(vol);
}

Test(windows, trim_takes_them_back_and_discards_them)
{
	struct bga_volume *vol = make_volume(1 << 14, 4096, 0);
	struct bga_extent w, e;
	struct bga_rsv *rsv = window_at(vol, 100, 256, &w);
	uint64_t trimmed = 0;
	cr_assert_eq(bga_trim(vol, 0, 1 << 14, 1, discard, NULL, &trimmed), 0);
	cr_assert_eq(trimmed, (1 << 14) - 1, "every free block, the window's too");
	cr_assert_eq(bga_rsv_window(rsv, &e), 0);
	cr_assert_eq(e.len, 0, "the window was taken back");
	cr_assert_eq(alloc_at(vol, w.start, 1, 1, rsv, 0, &e), 0);
	assert_clean(vol);
	bga_rsv_close(rsv);
	bga_destroy(vol);
}

/* A store writes windows' unused blocks as free; what an owner takes after
 * a store is written by the next one, although no group lock saw it. */
Test(windows, stored_as_free_and_takes_stored_next_time)
{
	struct bga_volume *vol = make_volume(1 << 16, 4096, 0), *back;
	struct bga_extent w, e;
	struct bga_rsv *rsv = window_at(vol, 3000, 64, &w);
	struct memio m;
	struct bga_io io;
	memio_init(&m, &io);
	cr_assert_eq(bga_store(vol, &io), 0);
	cr_assert_eq(bga_load(&io, NULL, &back), 0);
	cr_assert_eq(bga_free_exact(back), (1 << 16) - 1);
	cr_assert_eq(alloc_at(back, w.start, 63, 63, NULL, BGA_EXACT_GOAL, &e), 0, "the window's blocks are free");
	assert_clean(back);
	bga_destroy(back);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(alloc_at(vol, w.start + i, 1, 1, rsv, 0, &e), 0);
	cr_assert_eq(bga_store(vol, &io), 0);
	cr_assert_eq(bga_load(&io, NULL, &back), 0);
	cr_assert_eq(bga_free_exact(back), (1 << 16) - 11, "the ten taken from the window were stored");
	cr_assert_eq(alloc_at(back, w.start, 1, 1, NULL, BGA_EXACT_GOAL, &e), -ENOSPC);
	cr_assert_eq(alloc_at(back, w.start + 10, 53, 53, NULL, BGA_EXACT_GOAL, &e), 0);
	bga_destroy(back);
	bga_rsv_close(rsv);
	memio_free(&m);
	assert_clean(vol);
	bga_destroy(vol);
}

/* ---- locality windows ---- */

struct local_arg {
	struct bga_volume *vol;
	int cpu;
	uint64_t groups[64];
	int n;
};

static void *small_files(void *arg)
{
	struct local_arg *a = arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(a->cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0)
		return (void *)1;
	for (int i = 0; i < 64; i++) {
		struct bga_extent e;
		if (alloc_at(a->vol, BGA_NO_GOAL, 1, 4, NULL, 0, &e) != 0)
			return (void *)2;
		a->groups[a->n++] = e.start / 4096;
	}
	return NULL;
}

/*
 * A CPU's locality window costs free space where nobody contends (its
 * blocks stand at the front of a run while holes behind it wait), so
 * small goal-less requests book none until their home group's lock is
 * found held: then the CPU's home moves to where the walk went, and its
 * next small requests come from a window booked there, without a lock.
 */
Test(windows, small_goalless_requests_use_the_cpu_window_only_under_contention)
{
	struct bga_volume *vol = make_volume(1 << 16, 4096, 0);
	struct local_arg a = {vol, 0, {0}, 0};
	void *rc;
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, small_files, &a), 0);
	pthread_join(t, &rc);
	cr_assert_null(rc);
	struct bga_stats st;
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_assert_eq(st.rsv_window_blocks, 0, "no contention, yet a window holds %llu blocks",
		     (unsigned long long)st.rsv_window_blocks);
	for (int i = 1; i < a.n; i++)
		cr_assert_eq(a.groups[i], a.groups[0], "small files left their home group");
	/* the home's lock held once: the walk goes elsewhere, the home with it */
	cpu_set_t set, old;
	cr_assert_eq(sched_getaffinity(0, sizeof(old), &old), 0);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	cr_assert_eq(sched_setaffinity(0, sizeof(set), &set), 0);
	struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = 1, .max_len = 4};
	struct bga_extent e;
	cr_assert_eq(contend_alloc(vol, a.groups[0], &req, &e), 0);
	uint64_t moved = e.start / 4096;
	cr_assert_neq(moved, a.groups[0], "served in the group whose lock was held");
	uint64_t lock0 = lock_acquisitions(vol);
	for (int i = 0; i < 16; i++) {
		cr_assert_eq(bga_alloc(vol, &req, &e), 0);
		cr_assert_eq(e.start / 4096, moved, "the home did not move with the contention");
	}
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_assert_gt(st.rsv_window_blocks, 0, "contention booked no locality window");
	/* the booking took a lock, the window's takes none (stats take some
	 * of their own: count only the requests') */
	uint64_t lock1 = lock_acquisitions(vol);
	cr_assert_eq(bga_stats(vol, &st), 0);
	uint64_t per_stats = lock_acquisitions(vol) - lock1;
	cr_assert_leq(lock1 - lock0 - per_stats, 2, "%llu locks for 16 small requests",
		      (unsigned long long)(lock1 - lock0 - per_stats));
	cr_assert_eq(sched_setaffinity(0, sizeof(old), &old), 0);
	assert_clean(vol);
	bga_destroy(vol);
}

/*
 * A window serves a request whole or not at all: a remainder shorter
 * than the request is given back and the next window booked where it
 * started, so a file written in order gets the whole request, in place,
 * where the blocks after the window are free (it used to get what the
 * remainder held, and ask again).
 */
Test(windows, a_request_longer_than_the_remainder_goes_on_in_place_whole)
{
	struct bga_volume *vol = make_volume(1 << 16, 4096, 0);
	struct bga_extent held, e;
	struct bga_rsv *rsv = window_at(vol, 1000, 8, &held); /* 1000 taken, [1001, 1008) held */
	cr_assert_eq(alloc_at(vol, 1001, 1, 5, rsv, 0, &e), 0);
	cr_assert_eq(e.start, 1001);
	cr_assert_eq(e.len, 5, "served from the window");
	cr_assert_eq(alloc_at(vol, 1006, 1, 4, rsv, 0, &e), 0);
	cr_assert_eq(e.start, 1006, "the file went elsewhere");
	cr_assert_eq(e.len, 4, "cut at the window's end: %llu of 4", (unsigned long long)e.len);
	cr_assert_eq(bga_rsv_window(rsv, &held), 0);
	cr_assert(held.len == 0 || held.start == 1010, "the next window follows the file");
	/* with the blocks after it taken, the file moves on whole */
	struct bga_extent w;
	cr_assert_eq(alloc_at(vol, 1010, 1, 1, rsv, 0, &e), 0);
	cr_assert_eq(bga_rsv_window(rsv, &w), 0);
	uint64_t end = w.start + w.len;
	cr_assert_eq(alloc_at(vol, end, 20, 20, NULL, BGA_EXACT_GOAL, &e), 0);
	cr_assert_eq(alloc_at(vol, w.start, 1, w.len + 3, rsv, 0, &e), 0);
	cr_assert_eq(e.len, w.len + 3, "a request the free space holds whole came back cut");
	bga_rsv_close(rsv);
	assert_clean(vol);
	bga_destroy(vol);
}

/* ---- two writers in one directory ---- */

struct dir_writer {
	struct bga_volume *vol;
	uint64_t dir;        /* the directory's goal */
	bool busy;           /* hold the group's lock while the first file goes on */
	uint64_t first[2];   /* where each file started */
	bool contiguous;     /* the first file stayed in one extent */
};

static void *write_two_files(void *arg)
{
	struct dir_writer *d = arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set); /* steering is per CPU: both files on one */
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0)
		return (void *)1;
	struct bga_rsv *rsv;
	struct bga_extent e;
	if (bga_rsv_open(d->vol, &rsv) != 0 || bga_rsv_set_size(rsv, 8) != 0 ||
	    alloc_at(d->vol, d->dir, 1, 1, rsv, 0, &e) != 0)
		return (void *)2;
	d->first[0] = e.start;
	d->contiguous = true;
	for (uint64_t b = d->first[0] + 1; b < d->first[0] + 8; b++)
		if (alloc_at(d->vol, b, 1, 1, rsv, 0, &e) != 0 || e.start != b)
			d->contiguous = false;
	/* the window is used up: the next block books under the group's lock */
	struct contend_holder h = {d->vol, d->first[0] / 4096, 0};
	pthread_t t;
	if (d->busy) {
		if (pthread_create(&t, NULL, contend_hold_group, &h) != 0)
			return (void *)3;
		while (!__atomic_load_n(&h.held, __ATOMIC_ACQUIRE))
			sched_yield();
	}
	if (alloc_at(d->vol, d->first[0] + 8, 1, 1, rsv, 0, &e) != 0 || e.start != d->first[0] + 8)
		d->contiguous = false;
	if (d->busy)
		pthread_join(t, NULL);
	bga_rsv_close(rsv);
	if (bga_rsv_open(d->vol, &rsv) != 0 || alloc_at(d->vol, d->dir, 1, 1, rsv, 0, &e) != 0)
		return (void *)4;
	d->first[1] = e.start;
	bga_rsv_close(rsv);
	return NULL;
}

/* write_two_files on a thread of its own, which it pins to CPU 0 */
static void run_dir_writer(struct dir_writer *d)
{
	pthread_t t;
	void *rc;
	cr_assert_eq(pthread_create(&t, NULL, write_two_files, d), 0);
	pthread_join(t, &rc);
	cr_assert_null(rc, "write_two_files failed at step %p", rc);
}

/* A file that goes on in a group another CPU holds stays contiguous, and
 * its CPU's next file starts elsewhere (steer.h): two writers in one
 * directory stop taking turns at its group's lock.  Unbusy, the next file
 * starts in the directory's group. */
Test(windows, a_busy_directory_group_steers_the_next_file_away)
{
	for (int busy = 0; busy < 2; busy++) {
		struct bga_volume *vol = make_volume(1 << 20, 4096, 0);
		struct dir_writer d = {.vol = vol, .dir = 10 * 4096, .busy = busy};
		run_dir_writer(&d);
		cr_assert_eq(d.first[0] / 4096, 10, "the first file starts in the directory's group");
		cr_assert(d.contiguous, "the first file went on in place (busy %d)", busy);
		if (busy)
			cr_assert_neq(d.first[1] / 4096, 10, "the next file started in the busy group");
		else
			cr_assert_eq(d.first[1] / 4096, 10, "the next file left an idle group");
		assert_clean(vol);
		bga_destroy(vol);
	}
}

/*
 * A booking that finds no run of a window's size in a group lowers the
 * group's max_run (allocations never do), so the index stops sending later
 * bookings through it; and a first pass that finds no room marks the group
 * (BGA_GROUP_NO_ROOM), so later first passes skip it until whatever could
 * make room clears the mark: a free into the group, a window's unlink.
 * With many writers, every new file's booking looked through each group
 * the windows had filled.
 */
Test(windows, a_group_without_room_is_corrected_and_skipped_until_something_is_freed)
{
	struct bga_volume *vol = make_volume(1 << 16, 4096, 0);
	struct bga_extent e;
	/* group 3 all in 7-block extents with a free block after each */
	for (uint64_t b = 3 * 4096; b + 7 <= 4 * 4096; b += 8)
		cr_assert_eq(alloc_at(vol, b, 7, 7, NULL, BGA_EXACT_GOAL, &e), 0);
	struct bga_group *grp = bga__group_lookup(vol, 3);
	cr_assert_gt(grp->max_run, 1, "allocations left max_run at %u: the test needs it stale", grp->max_run);
	cr_assert_eq(grp->flags & BGA_GROUP_NO_ROOM, 0);
	struct bga_rsv *rsv;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	/* a first window, used up whole (a request of twice its size: one
	 * of its size would book it doubled): the next asks for room (a
	 * first window asks only for what its file asked) */
	cr_assert_eq(alloc_at(vol, 6 * 4096, 16, 16, rsv, 0, &e), 0);
	cr_assert_eq(alloc_at(vol, 3 * 4096 + 3, 1, 1, rsv, 0, &e), 0); /* an allocated goal */
	cr_assert_neq(e.start / 4096, 3, "a window went into a group of one-block holes");
	cr_assert_eq(grp->max_run, 1, "max_run still %u after a booking found no room", grp->max_run);
	cr_assert(grp->flags & BGA_GROUP_NO_ROOM, "the failed first pass left no mark");
	bga_rsv_close(rsv);
	cr_assert(grp->flags & BGA_GROUP_NO_ROOM, "an unlink in another group cleared it");
	cr_assert_eq(bga_free(vol, 3 * 4096 + 8, 7), 0);
	cr_assert_eq(grp->flags & BGA_GROUP_NO_ROOM, 0, "a free into the group left the mark");
	/* a window's unlink clears it too (the run after it is nobody's room now) */
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	cr_assert_eq(alloc_at(vol, 5 * 4096, 1, 1, rsv, 0, &e), 0);
	struct bga_group *g5 = bga__group_lookup(vol, 5);
	bga__group_lock(vol, 5);
	g5->flags |= BGA_GROUP_NO_ROOM;
	bga__group_unlock(vol, 5);
	bga_rsv_close(rsv);
	cr_assert_eq(g5->flags & BGA_GROUP_NO_ROOM, 0, "an unlink left the mark");
	assert_clean(vol);
	bga_destroy(vol);
}

/* No group has room for the largest window: a booking's second pass
 * takes a shorter run rather than failing. */
Test(windows, booked_in_a_short_run_when_no_group_has_room)
{
	struct bga_volume *vol = make_volume(4096, 512, 0);
	struct bga_extent e, w;
	for (uint64_t g = 0; g < 8; g++)
		cr_assert_eq(alloc_at(vol, g * 512 + 300, 1, 1, NULL, BGA_EXACT_GOAL, &e), 0);
	struct bga_rsv *rsv;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	cr_assert_eq(alloc_at(vol, 0, 1, 1, rsv, 0, &e), 0);
	cr_assert_eq(bga_rsv_window(rsv, &w), 0);
	cr_assert_gt(w.len, 0, "a window was booked");
	cr_assert_eq(e.start / 512, w.start / 512);
	bga_rsv_close(rsv);
	assert_clean(vol);
	bga_destroy(vol);
}

/*
 * The same when the directory's group is full and the first file's
 * window went on in the next group with room, busy there (steer.h,
 * bga__steer_window_busy): the steering is for the directory (the file's
 * aim), so the next file aimed at it starts from the CPU's home instead
 * of walking from the full group into the busy one again, where every
 * writer of the directory would meet.  Unbusy, it goes there as before.
 */
Test(windows, a_busy_group_past_a_full_directory_group_steers_the_next_file_away)
{
	for (int busy = 0; busy < 2; busy++) {
		struct bga_volume *vol = make_volume(1 << 20, 4096, 0);
		struct bga_extent e;
		for (uint64_t b = 10 * 4096; b < 11 * 4096; b += 256)
			cr_assert_eq(alloc_at(vol, b, 256, 256, NULL, BGA_EXACT_GOAL, &e), 0);
		struct dir_writer d = {.vol = vol, .dir = 10 * 4096, .busy = busy};
		run_dir_writer(&d);
		cr_assert_eq(d.first[0] / 4096, 11, "the first file went on past the full group");
		cr_assert(d.contiguous, "the first file went on in place (busy %d)", busy);
		if (busy)
			cr_assert(d.first[1] / 4096 != 11 && d.first[1] / 4096 != 10,
				  "the next file started at %llu, in the busy group or the full one",
				  (unsigned long long)d.first[1]);
		else
			cr_assert_eq(d.first[1] / 4096, 11, "the next file left an idle group");
		assert_clean(vol);
		bga_destroy(vol);
	}
}

/*
 * A file whose windows are sized to it (bga_rsv_set_size) books once, so
 * it meets a busy directory group only at its first booking (route.c,
 * steer.h's bga__steer_file_busy): the walk takes the next group with
 * room, and the CPU's next file aimed at the directory starts from the
 * CPU's home, not from where this one went, where every writer that met
 * at the directory would go too.  Unbusy, both files start in the
 * directory's group.
 */
Test(windows, a_sized_file_that_found_its_directory_busy_steers_the_next_file_home)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set); /* steering is per CPU: both files on one */
	cr_assert_eq(sched_setaffinity(0, sizeof(set), &set), 0);
	for (int busy = 0; busy < 2; busy++) {
		struct bga_volume *vol = make_volume(1 << 20, 4096, 0);
		uint64_t first[2];
		for (int f = 0; f < 2; f++) {
			struct bga_rsv *rsv;
			struct bga_extent e;
			cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
			cr_assert_eq(bga_rsv_set_size(rsv, 64), 0);
			struct bga_request req = {.goal = 10 * 4096, .min_len = 1, .max_len = 1, .rsv = rsv};
			cr_assert_eq(busy && f == 0 ? contend_alloc(vol, 10, &req, &e) : bga_alloc(vol, &req, &e), 0);
			first[f] = e.start;
			bga_rsv_close(rsv);
		}
		if (busy) {
			cr_assert_neq(first[0] / 4096, 10, "the first file waited for the busy group");
			cr_assert(first[1] / 4096 != first[0] / 4096 && first[1] / 4096 != 10,
				  "the next file started at %llu, where the first went (%llu) or in the busy group",
				  (unsigned long long)first[1], (unsigned long long)first[0]);
		} else {
			cr_assert_eq(first[0] / 4096, 10);
			cr_assert_eq(first[1] / 4096, 10, "the next file left an idle directory group");
		}
		assert_clean(vol);
		bga_destroy(vol);
	}
}

/*
 * A request at least as long as the handle's window and shorter than
 * twice it books the window doubled (bga_rsv_open): the window reaches
 * past the extent, so the file's next blocks stay its own, and a new
 * file's first window looked for from there starts past them.  A request
 * of twice the window or more still goes on past a window it uses up.
 */
Test(windows, a_request_as_long_as_its_window_books_it_doubled)
{
	struct bga_volume *vol = make_volume(1 << 16, 4096, 0);
	struct bga_extent e, w;
	struct bga_config cfg;
	bga_config_init(&cfg, 1 << 16);
	const uint64_t size = cfg.rsv_default;
	for (uint64_t len = size; len <= 2 * size; len += size / 2) {
		struct bga_rsv *rsv, *next;
		cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
		cr_assert_eq(alloc_at(vol, 1000 * len, len, len, rsv, 0, &e), 0);
		cr_assert_eq(e.start, 1000 * len);
		cr_assert_eq(e.len, len);
		cr_assert_eq(bga_rsv_window(rsv, &w), 0);
		if (len < 2 * size) {
			cr_assert_eq(w.start, e.start + len, "a request of %llu: the window goes on after it",
				     (unsigned long long)len);
			cr_assert_eq(w.len, 2 * size - len, "a request of %llu: the window booked at %llu, not %llu",
				     (unsigned long long)len, (unsigned long long)(2 * size),
				     (unsigned long long)(len + w.len));
		} else {
			cr_assert_eq(w.len, 0, "a request of twice the window uses it up");
		}
		/* the next file, aimed right after the first one's extent */
		cr_assert_eq(bga_rsv_open(vol, &next), 0);
		cr_assert_eq(alloc_at(vol, e.start + len, 1, 1, next, 0, &w), 0);
		if (len < 2 * size)
			cr_assert(w.start < e.start || w.start >= e.start + 2 * size,
				  "the next file took %llu, in the window of the first (a request of %llu at %llu)",
				  (unsigned long long)w.start, (unsigned long long)len, (unsigned long long)e.start);
		cr_assert_eq(alloc_at(vol, e.start + len, 1, 1, rsv, 0, &e), 0);
		if (len < 2 * size)
			cr_assert_eq(e.start, 1000 * len + len, "the first file goes on in place");
		bga_rsv_close(next);
		bga_rsv_close(rsv);
	}
	assert_clean(vol);
	bga_destroy(vol);
}

/*
 * Files appended side by side (room.c): file B, `first` blocks written in
 * order, runs into file A, begun right after B's window and grown `grown`
 * blocks in place meanwhile; B's next window goes past A's, with room
 * kept after it.  Returns how far past the end of A's window B's next
 * extent starts.
 */
static uint64_t room_left_after(uint64_t first, uint64_t grown)
{
	struct bga_volume *vol = make_volume(1 << 16, 1 << 15, 0);
	struct bga_rsv *a, *b;
	struct bga_extent e, w;
	cr_assert_eq(bga_rsv_open(vol, &a), 0);
	cr_assert_eq(bga_rsv_open(vol, &b), 0);
	uint64_t bnext = 0, anext;
	for (uint64_t n = 0; n < first; n++, bnext = e.start + e.len)
		cr_assert_eq(alloc_at(vol, bnext, 1, 1, b, 0, &e), 0);
	cr_assert_eq(bga_rsv_window(b, &w), 0);
	anext = w.start + w.len; /* A begins where B's window ends */
	for (uint64_t n = 0; n < grown; n++, anext = e.start + e.len) {
		cr_assert_eq(alloc_at(vol, anext, 1, 1, a, 0, &e), 0);
		cr_assert_eq(e.start, anext, "file A goes on in place (block %llu)", (unsigned long long)n);
	}
	cr_assert_eq(bga_rsv_window(a, &w), 0);
	uint64_t a_end = w.start + w.len;
	do { /* B uses its window up and runs into A */
		cr_assert_eq(alloc_at(vol, bnext, 1, 1, b, 0, &e), 0);
	} while (e.start == bnext && (bnext = e.start + e.len) != 0);
	cr_assert_geq(e.start, a_end, "B's next window at %llu, before A's window's end %llu",
		      (unsigned long long)e.start, (unsigned long long)a_end);
	bga_rsv_close(a);
	bga_rsv_close(b);
	assert_clean(vol);
	bga_destroy(vol);
	return e.start - a_end;
}

Test(windows, the_room_after_a_file_that_grew_in_place_follows_its_growth)
{
	struct bga_config cfg;
	bga_config_init(&cfg, 1 << 16);
	const uint64_t big = cfg.rsv_max + 1; /* B's windows grew past rsv_max */
	/* A not yet past twice rsv_max: the fixed room */
	cr_assert_eq(room_left_after(big, cfg.rsv_max), cfg.rsv_max, "A's windows grew at most twice rsv_max");
	/* past it: twice what its windows grew, at least twice what it wrote */
	uint64_t grown = 3 * cfg.rsv_max, room = room_left_after(big, grown);
	cr_assert_geq(room, 2 * grown, "room %llu after a file that grew %llu", (unsigned long long)room,
		      (unsigned long long)grown);
	cr_assert_leq(room, 2 * (grown + cfg.rsv_max), "room %llu after a file that grew %llu",
		      (unsigned long long)room, (unsigned long long)grown);
	/* at most half the group */
	cr_assert_eq(room_left_after(big, 10000), (1 << 15) / 2);
	/* B a small file whose later window this is: the fixed room */
	cr_assert_eq(room_left_after(4, grown), cfg.rsv_max, "a small file's later window");
}
