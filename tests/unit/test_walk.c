/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The read-only walks and what they report: bga_foreach_used (with
 * bga_foreach_free), the longest free run (bga_longest_free_sum and
 * bga_longest_free_read), bga_group_stats, and a lazily loaded volume's
 * answers.  Each test states the header's promise and checks it through
 * the public API only: what the caller can do next (free, allocate,
 * commit, load), and the other walks (bga_foreach_free) as the promise
 * names them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <bgalloc.h>
#include <bgalloc/locktab.h>

#include "memio.h"
#include "requests.h"
#include "testutil.h"

/* ---- collecting what the walks report ---- */

struct ext_list {
	struct bga_extent e[4096];
	uint32_t flags[4096];
	size_t n;
};

static int collect_free(void *ctx, uint64_t start, uint64_t len)
{
	struct ext_list *l = ctx;
	cr_assert_lt(l->n, 4096);
	l->e[l->n].start = start;
	l->e[l->n].len = len;
	l->flags[l->n++] = 0;
	return 0;
}

static int collect_used(void *ctx, uint64_t start, uint64_t len, uint32_t flags)
{
	struct ext_list *l = ctx;
	cr_assert_lt(l->n, 4096);
	l->e[l->n].start = start;
	l->e[l->n].len = len;
	l->flags[l->n++] = flags;
	return 0;
}

/* One byte per block: 0 not reported, 1 free, 2 used, 3 used and deferred. */
static unsigned char *paint(struct bga_volume *vol, uint64_t nblocks, uint64_t from, uint64_t to)
{
	unsigned char *m = calloc(nblocks, 1);
	static struct ext_list f, u;
	f.n = u.n = 0;
	cr_assert_eq(bga_foreach_free(vol, from, to, 1, collect_free, &f), 0);
	cr_assert_eq(bga_foreach_used(vol, from, to, collect_used, &u), 0);
	for (size_t i = 0; i < f.n; i++)
		for (uint64_t b = f.e[i].start; b < f.e[i].start + f.e[i].len; b++) {
			cr_assert_eq(m[b], 0, "block %lu reported twice", (unsigned long)b);
			m[b] = 1;
		}
	for (size_t i = 0; i < u.n; i++) {
		cr_assert(u.flags[i] == 0 || u.flags[i] == BGA_USED_DEFERRED, "unknown flags %u", u.flags[i]);
		cr_assert_gt(u.e[i].len, 0);
		if (i > 0)
			cr_assert_geq(u.e[i].start, u.e[i - 1].start + u.e[i - 1].len, "used extents out of order");
		for (uint64_t b = u.e[i].start; b < u.e[i].start + u.e[i].len; b++) {
			cr_assert_eq(m[b], 0, "block %lu reported free and used", (unsigned long)b);
			m[b] = u.flags[i] ? 3 : 2;
		}
	}
	return m;
}

/* ---- bga_foreach_used ---- */

Test(foreach_used, complement_of_foreach_free_with_deferred_flagged)
{
	enum { NB = 1000, BPG = 128, FDB = 3 };
	struct bga_volume *vol = make_volume(NB, BPG, FDB);
	struct bga_extent e;
	struct bga_request req = {.goal = 10, .min_len = 40, .max_len = 40};
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(bga_claim(vol, 120, 20), 0);            /* spans groups 0 and 1 */
	cr_assert_eq(bga_free_deferred(vol, 125, 5, 2), 0); /* pending inside it */
	cr_assert_eq(bga_claim(vol, 600, 1), 0);
	/* a window: its remainder is free, not used */
	struct bga_extent we, win;
	struct bga_rsv *rsv = window_alloc(vol, 800, 1, 1, &we, &win);

	unsigned char *m = paint(vol, NB, 0, NB);
	for (uint64_t b = 0; b < NB; b++) {
		unsigned char want = b < FDB ? 0 : (b >= 125 && b < 130) ? 3
				     : (b >= e.start && b < e.start + e.len) || (b >= 120 && b < 140) || b == 600 ||
						       b == we.start
					       ? 2
					       : 1;
		cr_expect_eq(m[b], want, "block %lu: %d, want %d", (unsigned long)b, m[b], want);
	}
	free(m);
	if (win.len)
		cr_expect_eq(win.start, we.start + 1, "the window's remainder follows its allocation");

	/* split at group boundaries, flags never mixed, the range clipped */
	struct ext_list u = {.n = 0};
	cr_assert_eq(bga_foreach_used(vol, 122, 135, collect_used, &u), 0);
	cr_assert_eq(u.n, 4);
	cr_expect(u.e[0].start == 122 && u.e[0].len == 3 && u.flags[0] == 0);
	cr_expect(u.e[1].start == 125 && u.e[1].len == 3 && u.flags[1] == BGA_USED_DEFERRED);
	cr_expect(u.e[2].start == 128 && u.e[2].len == 2 && u.flags[2] == BGA_USED_DEFERRED,
		  "no split at the group boundary 128: %lu+%lu", (unsigned long)u.e[2].start,
		  (unsigned long)u.e[2].len);
	cr_expect(u.e[3].start == 130 && u.e[3].len == 5 && u.flags[3] == 0);
	bga_window_close(rsv);
	bga_destroy(vol);
}

static int stop_at_second(void *ctx, uint64_t start, uint64_t len, uint32_t flags)
{
	(void)start;
	(void)len;
	(void)flags;
	return ++*(int *)ctx == 2 ? 42 : 0;
}

Test(foreach_used, callback_return_stops_the_walk)
{
	struct bga_volume *vol = make_volume(512, 64, 0);
	for (uint64_t b = 0; b < 512; b += 100)
		cr_assert_eq(bga_claim(vol, b, 1), 0);
	int calls = 0;
	cr_expect_eq(bga_foreach_used(vol, 0, 512, stop_at_second, &calls), 42);
	cr_expect_eq(calls, 2);
	bga_destroy(vol);
}

/* After random work the two walks still partition the data blocks, and
 * the deferred flags follow the frees the test made. */
Test(foreach_used, random_work_partitions_the_volume)
{
	enum { NB = 4096, BPG = 256 };
	struct bga_volume *vol = make_volume(NB, BPG, 1);
	unsigned char *want = calloc(NB, 1); /* 1 free, 2 used, 3 pending */
	struct rng r = {0x1234567};
	uint64_t txn = 1;
	memset(want + 1, 1, NB - 1);
	for (int step = 0; step < 3000; step++) {
		uint64_t b = 1 + below(&r, NB - 1), len = 1 + below(&r, 16);
		if (b + len > NB)
			len = NB - b;
		int op = (int)below(&r, 4);
		if (op == 0 && bga_claim(vol, b, len) == 0)
			memset(want + b, 2, len);
		else if (op == 1 && bga_free(vol, b, len) == 0)
			memset(want + b, 1, len);
		else if (op == 2 && bga_free_deferred(vol, b, len, txn + 1) == 0)
			memset(want + b, 3, len);
		else if (op == 3 && below(&r, 8) == 0) {
			cr_assert_eq(bga_commit(vol, ++txn), 0);
			for (uint64_t i = 0; i < NB; i++)
				if (want[i] == 3)
					want[i] = 1;
		}
	}
	unsigned char *m = paint(vol, NB, 0, NB);
	for (uint64_t i = 0; i < NB; i++)
		cr_expect_eq(m[i], want[i], "block %lu: %d, want %d", (unsigned long)i, m[i], want[i]);
	free(m);
	free(want);
	bga_destroy(vol);
}

/* ---- the longest free run ---- */

struct longest_oracle {
	uint64_t len, group;
	uint32_t bpg;
};

static int longest_cb(void *ctx, uint64_t start, uint64_t len)
{
	struct longest_oracle *o = ctx;
	if (len > o->len) {
		o->len = len;
		o->group = start / o->bpg;
	}
	return 0;
}

/* The promise: a request of min_len *len can be met now, one of *len + 1
 * cannot; the run is the longest bga_foreach_free reports, and the group
 * the lowest holding one that long. */
static void check_longest(struct bga_volume *vol, uint64_t nblocks, uint32_t bpg)
{
	uint64_t len = 77, group = 77;
	cr_assert_eq(bga_longest_free_sum(vol, &len, &group), 0);
	struct longest_oracle o = {0, UINT64_MAX, bpg};
	cr_assert_eq(bga_foreach_free(vol, 0, nblocks, 1, longest_cb, &o), 0);
	cr_expect_eq(len, o.len, "longest %lu, bga_foreach_free's longest %lu", (unsigned long)len,
		     (unsigned long)o.len);
	cr_expect_eq(group, o.len ? o.group : UINT64_MAX);
	uint64_t read = bga_longest_free_read(vol);
	cr_expect_geq(read, len, "the read bound %lu is below the run %lu (no windows here)", (unsigned long)read,
		      (unsigned long)len);
	cr_expect_leq(read, bpg);
	if (len < bpg) {
		/* with a goal: a goal-less request may book a CPU's window */
		struct bga_request req = {.goal = 0, .min_len = len + 1, .max_len = len + 1};
		struct bga_extent e;
		int rc = bga_alloc(vol, &req, &e);
		cr_expect(rc == -ENOSPC || rc == -EAGAIN, "a run of %lu + 1 was found: %d", (unsigned long)len, rc);
	}
	if (len) {
		struct bga_request req = {.goal = 0, .min_len = len, .max_len = len};
		struct bga_extent e;
		cr_expect_eq(bga_alloc(vol, &req, &e), 0, "no run of %lu", (unsigned long)len);
		cr_expect_eq(bga_free(vol, e.start, e.len), 0);
	}
}

Test(longest_free, fresh_full_and_random)
{
	enum { NB = 8192, BPG = 512 };
	struct bga_volume *vol = make_volume(NB, BPG, 0);
	check_longest(vol, NB, BPG);
	cr_assert_eq(bga_claim(vol, 0, NB), 0);
	uint64_t len = 1, group = 1;
	cr_assert_eq(bga_longest_free_sum(vol, &len, &group), 0);
	cr_expect(len == 0 && group == UINT64_MAX);
	cr_expect_eq(bga_longest_free_read(vol), 0);
	struct rng r = {99};
	for (int round = 0; round < 40; round++) {
		for (int i = 0; i < 50; i++) {
			uint64_t b = below(&r, NB), l = 1 + below(&r, 40);
			if (b + l > NB)
				l = NB - b;
			if (below(&r, 2))
				(void)bga_free(vol, b, l);
			else
				(void)bga_claim(vol, b, l);
		}
		check_longest(vol, NB, BPG);
	}
	bga_destroy(vol);
}

/* Window remainders are free: the exact run counts them. */
Test(longest_free, counts_window_remainders)
{
	enum { NB = 256, BPG = 64 };
	struct bga_config cfg;
	bga_config_init(&cfg, NB);
	cfg.blocks_per_group = BPG;
	cfg.rsv_default = 32;
	struct bga_volume *vol;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	cr_assert_eq(bga_claim(vol, 0, NB), 0);
	cr_assert_eq(bga_free(vol, 64, 40), 0); /* the one free run: [64, 104) */
	struct bga_extent e, win;
	struct bga_rsv *rsv = window_alloc(vol, 64, 1, 1, &e, &win);
	uint64_t len, group;
	cr_assert_eq(bga_longest_free_sum(vol, &len, &group), 0);
	/* [64, 104) but the one allocated block, free whether or not a
	 * window holds it: the run reaches past the window's end */
	uint64_t want = e.start - 64 > 103 - e.start ? e.start - 64 : 103 - e.start;
	cr_expect_eq(len, want, "longest %lu, want %lu (window %lu+%lu)", (unsigned long)len, (unsigned long)want,
		     (unsigned long)win.start, (unsigned long)win.len);
	cr_expect_eq(group, 1);
	bga_rsv_close(rsv);
	bga_destroy(vol);
}

/* A large untouched volume answers from the index, not group by group. */
Test(longest_free, untouched_large_volume)
{
	struct bga_volume *vol = make_volume(UINT64_C(1) << 40, 32768, 0);
	uint64_t len, group;
	cr_assert_eq(bga_longest_free_sum(vol, &len, &group), 0);
	cr_expect_eq(len, 32768);
	cr_expect_eq(group, 0);
	cr_expect_eq(bga_longest_free_read(vol), 32768);
	bga_destroy(vol);
}

/* ---- bga_group_stats ---- */

static struct bga_group_stats gstats(struct bga_volume *vol, uint64_t g)
{
	struct bga_group_stats st;
	memset(&st, 0xa5, sizeof(st));
	st.size = sizeof(st);
	cr_assert_eq(bga_group_stats(vol, g, &st), 0);
	cr_expect_eq(st.size, sizeof(st));
	cr_expect_eq(st.group, g);
	return st;
}

Test(group_stats, figures_agree_with_the_walks)
{
	enum { NB = 1000, BPG = 128, FDB = 2 };
	struct bga_config cfg;
	bga_config_init(&cfg, NB);
	cfg.blocks_per_group = BPG;
	cfg.first_data_block = FDB;
	cfg.rsv_default = 16;
	struct bga_volume *vol;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	cr_assert_eq(bga_claim(vol, 130, 50), 0);           /* group 1 */
	cr_assert_eq(bga_free_deferred(vol, 140, 6, 1), 0);
	struct bga_extent e, win;
	struct bga_rsv *rsv = window_alloc(vol, 600, 2, 2, &e, &win);

	struct bga_stats vst;
	cr_assert_eq(bga_stats(vol, &vst), 0);
	uint64_t sum_free = 0;
	for (uint64_t g = 0; g < vst.groups; g++) {
		struct bga_group_stats st = gstats(vol, g);
		uint64_t first = g * BPG, end = first + BPG < NB ? first + BPG : NB;
		struct longest_oracle o = {0, UINT64_MAX, BPG};
		struct free_recount fr;
		memset(&fr, 0, sizeof(fr));
		cr_assert_eq(bga_foreach_free(vol, first, end, 1, longest_cb, &o), 0);
		struct ext_list f = {.n = 0};
		cr_assert_eq(bga_foreach_free(vol, first, end, 1, collect_free, &f), 0);
		for (size_t i = 0; i < f.n; i++)
			free_recount_add(&fr, f.e[i].len);
		cr_expect_eq(st.first_block, first);
		cr_expect_eq(st.span_blocks, end - (g == 0 ? FDB : first), "group %lu", (unsigned long)g);
		cr_expect_eq(st.free_blocks, fr.free, "group %lu", (unsigned long)g);
		cr_expect_eq(st.longest_run, o.len, "group %lu", (unsigned long)g);
		cr_expect_eq(st.reserved0, 0);
		cr_expect_lt(st.lock_slot, vst.lock_slots);
		sum_free += st.free_blocks;
		if (g == 1) {
			cr_expect_eq(st.deferred_blocks, 6);
			cr_expect(st.flags & BGA_GSTAT_INITIALISED);
			cr_expect_geq(st.longest_run_hint, st.longest_run, "no windows in group 1");
		} else {
			cr_expect_eq(st.deferred_blocks, 0);
		}
		if (g == e.start / BPG) {
			cr_expect_eq(st.windows, win.len ? 1 : 0);
			cr_expect_eq(st.window_blocks, win.len);
		} else {
			cr_expect_eq(st.windows, 0);
			cr_expect_eq(st.window_blocks, 0);
		}
		if (g >= 2 && g != e.start / BPG)
			cr_expect_eq(st.flags, 0, "group %lu was never touched: flags %x", (unsigned long)g, st.flags);
	}
	cr_expect_eq(sum_free, bga_free_blocks_sum(vol));
	/* reading a group made nothing */
	struct bga_stats after;
	cr_assert_eq(bga_stats(vol, &after), 0);
	cr_expect_eq(after.groups_initialised, vst.groups_initialised);
	bga_rsv_close(rsv);
	bga_destroy(vol);
}

Test(group_stats, lock_figures_are_the_slots)
{
	struct bga_volume *vol = make_volume(4096, 256, 0);
	struct bga_extent e;
	struct bga_request req = {.goal = 300, .min_len = 1, .max_len = 1};
	for (int i = 0; i < 10; i++)
		cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	struct bga_lock_stats before, after;
	uint32_t slot = gstats(vol, 1).lock_slot;
	cr_assert_eq(bga_lock_stats(vol, slot, &before), 0);
	struct bga_group_stats st = gstats(vol, 1);
	cr_assert_eq(bga_lock_stats(vol, slot, &after), 0);
	cr_expect_eq(st.lock_slot, slot);
	cr_expect(before.acquisitions <= st.lock_acquisitions && st.lock_acquisitions <= after.acquisitions);
	cr_expect(before.contended <= st.lock_contended && st.lock_contended <= after.contended);
	cr_expect(before.wait_ns <= st.lock_wait_ns && st.lock_wait_ns <= after.wait_ns);
	bga_destroy(vol);
}

/* Growable: a larger caller struct is filled up to the library's size and
 * told so; a smaller one than the first layout is refused untouched. */
Test(group_stats, size_field)
{
	struct bga_volume *vol = make_volume(1024, 128, 0);
	struct {
		struct bga_group_stats st;
		unsigned char tail[24];
	} big;
	memset(&big, 0x5a, sizeof(big));
	big.st.size = sizeof(big);
	cr_assert_eq(bga_group_stats(vol, 3, &big.st), 0);
	cr_expect_eq(big.st.size, sizeof(struct bga_group_stats));
	for (size_t i = 0; i < sizeof(big.tail); i++)
		cr_expect_eq(big.tail[i], 0x5a, "byte %zu past the library's struct written", i);
	struct bga_group_stats small;
	memset(&small, 0x5a, sizeof(small));
	small.size = sizeof(small) - 8;
	cr_expect_eq(bga_group_stats(vol, 3, &small), -EINVAL);
	cr_expect_eq(small.group, 0x5a5a5a5a5a5a5a5aull, "a refused call wrote *st");
	bga_destroy(vol);
}

static struct bga_volume *load(struct bga_io *io)
{
	struct bga_volume *vol;
	cr_assert_eq(bga_load(io, NULL, &vol), 0);
	return vol;
}

/* A lazily loaded volume answers as the one stored: its unread groups are
 * read when asked about, pending frees come back allocated, and the read
 * bound stays an upper bound while bitmaps are unread. */
Test(lazy_load, walks_and_figures_as_stored)
{
	enum { BPG = 64, NB = BPG * 2 * TEST_CHUNK_GROUPS }; /* two chunks */
	struct memio m;
	struct bga_io io;
	memio_init(&m, &io);
	struct bga_volume *vol = make_volume(NB, BPG, 0);
	uint64_t g1 = TEST_CHUNK_GROUPS + 5, b1 = g1 * BPG; /* a group of the second chunk */
	cr_assert_eq(bga_claim(vol, b1, 40), 0);
	cr_assert_eq(bga_free_deferred(vol, b1 + 10, 5, 1), 0);
	for (uint64_t g = 0; g < 2 * TEST_CHUNK_GROUPS; g += 7)
		cr_assert_eq(bga_claim(vol, g * BPG + 3, 1 + g % 50), g == g1 ? -EBUSY : 0);
	cr_assert_eq(bga_store(vol, &io), 0);
	struct bga_group_stats want = gstats(vol, g1);
	uint64_t len0, group0;
	cr_assert_eq(bga_longest_free_sum(vol, &len0, &group0), 0);

	struct bga_volume *back = load(&io);
	cr_expect_geq(bga_longest_free_read(back), len0);
	struct bga_group_stats got = gstats(back, g1);
	cr_expect_eq(got.free_blocks, want.free_blocks);
	cr_expect_eq(got.longest_run, want.longest_run);
	cr_expect_eq(got.deferred_blocks, 0, "a stored pending free loads allocated");
	struct ext_list u = {.n = 0};
	cr_assert_eq(bga_foreach_used(back, b1, b1 + BPG, collect_used, &u), 0);
	cr_assert_eq(u.n, 1);
	cr_expect(u.e[0].start == b1 && u.e[0].len == 40 && u.flags[0] == 0);
	uint64_t len, group;
	cr_assert_eq(bga_longest_free_sum(back, &len, &group), 0);
	cr_expect(len == len0 && group == group0);
	bga_destroy(back);
	bga_destroy(vol);
	memio_free(&m);
}

#define discard_ok ignore_extent

/* The flags as the header states them: an untouched group has no bitmap
 * (not initialised) and is wholly free; a trimmed group is marked until
 * something is freed into it; and longest_free_sum of a full volume is
 * 0 with no group. */
Test(group_stats, flags_initialised_and_trimmed)
{
	struct bga_volume *vol = make_volume(4 * 64, 64, 0);
	struct bga_group_stats st = {.size = sizeof(st)};
	cr_assert_eq(bga_group_stats(vol, 2, &st), 0);
	cr_assert_eq(st.flags & (BGA_GSTAT_INITIALISED | BGA_GSTAT_TRIMMED), 0);
	cr_assert_eq(st.free_blocks, 64);
	cr_assert_eq(bga_claim(vol, 64 + 3, 5), 0);
	cr_assert_eq(bga_trim(vol, 0, 4 * 64, 1, discard_ok, NULL, NULL), 0);
	st.size = sizeof(st);
	cr_assert_eq(bga_group_stats(vol, 1, &st), 0);
	cr_assert_eq(st.flags & (BGA_GSTAT_INITIALISED | BGA_GSTAT_TRIMMED), BGA_GSTAT_INITIALISED | BGA_GSTAT_TRIMMED);
	cr_assert_eq(st.free_blocks, 64 - 5);
	cr_assert_eq(bga_free(vol, 64 + 4, 1), 0);
	st.size = sizeof(st);
	cr_assert_eq(bga_group_stats(vol, 1, &st), 0);
	cr_assert_eq(st.flags & BGA_GSTAT_TRIMMED, 0, "freed into since the trim");
	cr_assert_eq(st.free_blocks, 64 - 4);
	/* full: no free run anywhere */
	cr_assert_eq(bga_claim(vol, 0, 64), 0);
	cr_assert_eq(bga_claim(vol, 64, 3), 0);
	cr_assert_eq(bga_claim(vol, 64 + 4, 1), 0);
	cr_assert_eq(bga_claim(vol, 64 + 8, 4 * 64 - 72), 0);
	cr_assert_eq(bga_free_exact(vol), 0);
	uint64_t len = 7, g = 7;
	cr_assert_eq(bga_longest_free_sum(vol, &len, &g), 0);
	cr_assert_eq(len, 0);
	cr_assert_eq(g, UINT64_MAX);
	bga_destroy(vol);
}
