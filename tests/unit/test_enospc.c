/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What an answer means to the caller, written against the public header
 * only: -EAGAIN means the same request, retried after every pending
 * transaction commits and nothing else changes, succeeds; -ENOSPC means
 * it does not; a failed call changes nothing the API shows (no window
 * cut, no group initialised).  Each case is one an outside pass found
 * answered wrongly, and each retries the request after the commit to show
 * what the answer promised.  The eagain and exact_goal cases pin the
 * thread to one CPU, so every goal-less request meets the same locality
 * window.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "contend.h"
#include "memio.h"
#include "requests.h"
#include "testutil.h"

static struct bga_volume *full_volume(uint64_t nblocks, uint32_t bpg, uint32_t rsv_default)
{
	return make_volume_with(nblocks, bpg, 0, BGA_START_FULL, rsv_default);
}

static int vec(struct bga_volume *vol, uint64_t min, uint64_t max, uint64_t align, uint32_t flags, uint64_t want,
	       size_t max_out, struct bga_extent *out, size_t *n)
{
	struct bga_request r = {.goal = BGA_NO_GOAL, .min_len = min, .max_len = max, .align = align, .flags = flags};
	return bga_alloc_vec(vol, &r, want, out, max_out, n);
}

static uint64_t total(const struct bga_extent *e, size_t n)
{
	uint64_t s = 0;
	for (size_t i = 0; i < n; i++)
		s += e[i].len;
	return s;
}

static uint64_t initialised(struct bga_volume *vol)
{
	struct bga_stats st;
	cr_assert_eq(bga_stats(vol, &st), 0);
	return st.groups_initialised;
}

/* vol stored into *m (memio_init'ed here) and destroyed; the image
 * loaded lazily in its place. */
static struct bga_volume *stored_and_loaded(struct bga_volume *vol, struct memio *m)
{
	struct bga_io io;
	memio_init(m, &io);
	cr_assert_eq(bga_store(vol, &io), 0);
	bga_destroy(vol);
	cr_assert_eq(bga_load(&io, NULL, &vol), 0);
	return vol;
}

/* 1. A lazily loaded volume reads its unread chunks before it answers. */
Test(enospc, lazy_load_reads_before_all_or_nothing)
{
	uint64_t nblocks = 2 * TEST_CHUNK_GROUPS * 64;
	struct bga_volume *vol = make_volume(nblocks, 64, 0);
	struct bga_extent e;
	/* every group touched, so its free blocks are in a stored bitmap
	 * that a lazy load leaves unread */
	for (uint64_t g = 0; g < nblocks / 64; g++)
		cr_assert_eq(bga_claim(vol, g * 64 + 63, 1), 0);
	for (uint64_t g = 2; g < nblocks / 64; g++)
		cr_assert_eq(bga_free(vol, g * 64 + 63, 1), 0);
	struct bga_request r = {.goal = 0, .min_len = 64, .max_len = 64};
	cr_assert_eq(bga_alloc(vol, &r, &e), 0);
	r.goal = nblocks - 64;
	cr_assert_eq(bga_alloc(vol, &r, &e), 0);
	cr_assert_eq(bga_free(vol, nblocks - 60, 10), 0);
	struct memio m;
	struct bga_io io;
	memio_init(&m, &io);
	cr_assert_eq(bga_store(vol, &io), 0);
	bga_destroy(vol);

	for (int pending = 0; pending < 2; pending++) {
		cr_assert_eq(bga_load(&io, NULL, &vol), 0);
		cr_assert_eq(bga_free_exact(vol), nblocks - 120);
		if (pending) /* a deferred free in a chunk it reads */
			cr_assert_eq(bga_free_deferred(vol, 63, 1, 1), 0);
		struct bga_extent out[4];
		size_t n;
		int rc = vec(vol, 1, 126, 0, BGA_ALL_OR_NOTHING, 126, 4, out, &n);
		cr_assert_eq(rc, 0, "pending %d: all or nothing of 126 of %llu free: %d", pending,
			     (unsigned long long)bga_free_exact(vol), rc);
		cr_assert_eq(total(out, n), 126);
		assert_clean(vol);
		bga_destroy(vol);
	}
	memio_free(&m);
}

/* 2(a) Two runs of 10, one free and one pending: no extent of 20 exists
 * after the commit either. */
Test(enospc, no_run_after_commit_is_enospc)
{
	struct bga_volume *vol = full_volume(128, 64, 0);
	cr_assert_eq(bga_free(vol, 0, 10), 0);
	cr_assert_eq(bga_free_deferred(vol, 20, 10, 1), 0);
	struct bga_extent out[4], e;
	size_t n;
	struct bga_request r = {.goal = BGA_NO_GOAL, .min_len = 20, .max_len = 20};
	cr_assert_eq(bga_alloc(vol, &r, &e), -ENOSPC);
	cr_assert_eq(vec(vol, 20, 20, 0, BGA_ALL_OR_NOTHING, 20, 4, out, &n), -ENOSPC);
	cr_assert_eq(bga_commit(vol, 1), 0);
	cr_assert_eq(vec(vol, 20, 20, 0, BGA_ALL_OR_NOTHING, 20, 4, out, &n), -ENOSPC);
	assert_clean(vol);
	bga_destroy(vol);
}

/* 2(b) The same layout, want 20 as at most one extent of any length:
 * after the commit there are still only two runs of 10. */
Test(enospc, max_out_after_commit_is_enospc)
{
	struct bga_volume *vol = full_volume(128, 64, 0);
	cr_assert_eq(bga_free(vol, 0, 10), 0);
	cr_assert_eq(bga_free_deferred(vol, 20, 10, 1), 0);
	struct bga_extent out[1];
	size_t n;
	cr_assert_eq(vec(vol, 1, 20, 0, BGA_ALL_OR_NOTHING, 20, 1, out, &n), -ENOSPC);
	cr_assert_eq(bga_commit(vol, 1), 0);
	cr_assert_eq(vec(vol, 1, 20, 0, BGA_ALL_OR_NOTHING, 20, 1, out, &n), -ENOSPC);
	assert_clean(vol);
	bga_destroy(vol);
}

/* 2(c) Free, pending, free: the commit joins them into one run of 30, so
 * one extent of 20 fits after it: -EAGAIN, and the retry succeeds. */
Test(enospc, commit_joins_runs_is_eagain)
{
	struct bga_volume *vol = full_volume(128, 64, 0);
	cr_assert_eq(bga_free(vol, 0, 10), 0);
	cr_assert_eq(bga_free(vol, 20, 10), 0);
	cr_assert_eq(bga_free_deferred(vol, 10, 10, 1), 0);
	struct bga_extent out[1];
	size_t n;
	cr_assert_eq(vec(vol, 1, 20, 0, BGA_ALL_OR_NOTHING, 20, 1, out, &n), -EAGAIN);
	cr_assert_eq(bga_commit(vol, 1), 0);
	cr_assert_eq(vec(vol, 1, 20, 0, BGA_ALL_OR_NOTHING, 20, 1, out, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(out[0].len, 20);
	assert_clean(vol);
	bga_destroy(vol);
}

/* 2(d) A pending run that no aligned extent fits in (and 32 pending
 * single blocks): the commit gives no aligned 16, so -ENOSPC. */
Test(enospc, unaligned_pending_is_enospc)
{
	for (int singles = 0; singles < 2; singles++) {
		struct bga_volume *vol = full_volume(4096, 4096, 0);
		if (singles) {
			for (uint64_t i = 0; i < 32; i++)
				cr_assert_eq(bga_free_deferred(vol, 100 + 2 * i, 1, 1), 0);
		} else {
			cr_assert_eq(bga_free_deferred(vol, 40, 16, 1), 0);
		}
		struct bga_extent out[4], e;
		size_t n;
		struct bga_request r = {.goal = BGA_NO_GOAL, .min_len = 16, .max_len = 16, .align = 16};
		cr_assert_eq(bga_alloc(vol, &r, &e), -ENOSPC);
		cr_assert_eq(vec(vol, 16, 16, 16, 0, 16, 4, out, &n), -ENOSPC);
		cr_assert_eq(vec(vol, 16, 16, 16, BGA_ALL_OR_NOTHING, 16, 4, out, &n), -ENOSPC, "singles %d", singles);
		cr_assert_eq(bga_commit(vol, 1), 0);
		cr_assert_eq(vec(vol, 16, 16, 16, BGA_ALL_OR_NOTHING, 16, 4, out, &n), -ENOSPC);
		assert_clean(vol);
		bga_destroy(vol);
	}
}

/* The count covers want but the runs do not, with nothing pending at
 * all: -ENOSPC, never -EAGAIN. */
Test(enospc, nothing_pending_is_never_eagain)
{
	struct bga_volume *vol = full_volume(128, 64, 0);
	for (uint64_t b = 0; b < 40; b += 2)
		cr_assert_eq(bga_free(vol, b, 1), 0);
	struct bga_extent out[4];
	size_t n;
	cr_assert_eq(vec(vol, 1, 64, 0, BGA_ALL_OR_NOTHING, 20, 4, out, &n), -ENOSPC);
	/* ... and a request that fits is carved whatever the greedy order:
	 * 20 single blocks in 20 extents */
	struct bga_extent many[20];
	cr_assert_eq(vec(vol, 1, 64, 0, BGA_ALL_OR_NOTHING, 20, 20, many, &n), 0);
	cr_assert_eq(n, 20);
	assert_clean(vol);
	bga_destroy(vol);
}

/* Runs of 10, 10, 15, 15 and want 30 in two extents: it fits, in the two
 * runs of 15, whichever runs a first carve meets first. */
Test(enospc, all_or_nothing_finds_a_fit)
{
	struct bga_volume *vol = full_volume(256, 64, 0);
	cr_assert_eq(bga_free(vol, 0, 10), 0);
	cr_assert_eq(bga_free(vol, 20, 10), 0);
	cr_assert_eq(bga_free(vol, 64, 15), 0);
	cr_assert_eq(bga_free(vol, 128, 15), 0);
	struct bga_extent out[2];
	size_t n;
	cr_assert_eq(vec(vol, 1, 64, 0, BGA_ALL_OR_NOTHING, 30, 2, out, &n), 0);
	cr_assert_eq(total(out, n), 30);
	assert_clean(vol);
	bga_destroy(vol);
}

/* 3. A failed all-or-nothing call through a handle leaves its window. */
Test(enospc, failed_call_keeps_window)
{
	struct bga_volume *vol = full_volume(128, 64, 16);
	cr_assert_eq(bga_free(vol, 64, 16), 0);
	cr_assert_eq(bga_free(vol, 10, 5), 0);
	struct bga_rsv *h;
	cr_assert_eq(bga_rsv_open(vol, &h), 0);
	struct bga_request r = {.goal = 64, .min_len = 1, .max_len = 1, .rsv = h};
	struct bga_extent e, w0, w1, out[1];
	cr_assert_eq(bga_alloc(vol, &r, &e), 0);
	cr_assert_eq(e.start, 64);
	cr_assert_eq(bga_rsv_window(h, &w0), 0);
	cr_assert_eq(w0.start, 65);
	cr_assert_eq(w0.len, 15);
	struct bga_stats s0, s1;
	cr_assert_eq(bga_stats(vol, &s0), 0);
	r = (struct bga_request){.goal = BGA_NO_GOAL, .min_len = 1, .max_len = 20, .rsv = h, .flags = BGA_ALL_OR_NOTHING};
	size_t n;
	cr_assert_eq(bga_alloc_vec(vol, &r, 20, out, 1, &n), -ENOSPC);
	cr_assert_eq(bga_rsv_window(h, &w1), 0);
	cr_assert_eq(w1.start, w0.start);
	cr_assert_eq(w1.len, w0.len, "the window went from %llu to %llu blocks", (unsigned long long)w0.len,
		     (unsigned long long)w1.len);
	cr_assert_eq(bga_stats(vol, &s1), 0);
	cr_assert_eq(s1.rsv_window_blocks, s0.rsv_window_blocks);
	cr_assert_eq(s1.free_blocks, 20);
	bga_rsv_close(h);
	assert_clean(vol);
	bga_destroy(vol);
}

/* 4. A failed free leaves no bitmap behind on a BGA_START_FULL volume. */
Test(enospc, failed_free_initialises_nothing)
{
	struct bga_volume *vol = full_volume(512, 64, 0);
	cr_assert_eq(bga_free(vol, 130, 1), 0);
	cr_assert_eq(initialised(vol), 1);
	struct bga_extent v[2] = {{0, 5}, {130, 5}};
	cr_assert_eq(bga_free_vec(vol, v, 2), -EINVAL);
	cr_assert_eq(initialised(vol), 1, "a failed bga_free_vec initialised a group");
	cr_assert_eq(bga_free(vol, 60, 80), -EINVAL); /* across groups 0-2, 130 free */
	cr_assert_eq(initialised(vol), 1, "a failed bga_free initialised a group");
	cr_assert_eq(bga_free_deferred(vol, 60, 80, 1), -EINVAL);
	cr_assert_eq(initialised(vol), 1, "a failed bga_free_deferred initialised a group");
	cr_assert_eq(bga_free_exact(vol), 1);
	assert_clean(vol);
	bga_destroy(vol);
}

/* 5. The decision, as bga_claim's contract states it: a free block that a
 * trim holds for its discard is busy (-EBUSY) until the trim's callback
 * has returned; the claim then succeeds. */
struct trim_ctx {
	struct bga_volume *vol;
	int rc;
	uint64_t start;
};

static int claim_in_discard(void *ctx, uint64_t start, uint64_t len)
{
	struct trim_ctx *t = ctx;
	(void)len;
	t->start = start;
	t->rc = bga_claim(t->vol, start, 1);
	return 0;
}

Test(enospc, claim_during_trim_is_ebusy)
{
	struct bga_volume *vol = full_volume(128, 64, 0);
	cr_assert_eq(bga_free(vol, 8, 8), 0);
	struct trim_ctx t = {.vol = vol, .rc = 1};
	uint64_t trimmed;
	cr_assert_eq(bga_trim(vol, 0, 128, 1, claim_in_discard, &t, &trimmed), 0);
	cr_assert_eq(t.rc, -EBUSY);
	cr_assert_eq(bga_free_exact(vol), 8, "the failed claim changed the free count");
	cr_assert_eq(bga_claim(vol, t.start, 1), 0);
	assert_clean(vol);
	bga_destroy(vol);
}

/* 6(a). Claiming one block of a window takes that block, not the window. */
Test(enospc, claim_of_window_block_keeps_the_rest)
{
	for (int at = 0; at < 2; at++) {
		struct bga_volume *vol = full_volume(128, 64, 16);
		cr_assert_eq(bga_free(vol, 64, 16), 0);
		struct bga_rsv *h;
		cr_assert_eq(bga_rsv_open(vol, &h), 0);
		struct bga_request r = {.goal = 64, .min_len = 1, .max_len = 1, .rsv = h};
		struct bga_extent e, w;
		cr_assert_eq(bga_alloc(vol, &r, &e), 0);
		uint64_t b = at ? 70 : 65; /* the window's first block, or one inside */
		cr_assert_eq(bga_claim(vol, b, 1), 0);
		cr_assert_eq(bga_rsv_window(h, &w), 0);
		if (at) {
			cr_assert_eq(w.start, 65);
			cr_assert_eq(w.len, 5, "the window kept %llu blocks", (unsigned long long)w.len);
		} else {
			cr_assert_eq(w.start, 66);
			cr_assert_eq(w.len, 14, "the window kept %llu blocks", (unsigned long long)w.len);
		}
		cr_assert_eq(bga_free_exact(vol), 14);
		bga_rsv_close(h);
		assert_clean(vol);
		bga_destroy(vol);
	}
}

/* 6(b). rsv_allocs and rsv_hits: a handle's window hits are folded in at
 * its next miss or its close (the header says so); after the close they
 * are exact. */
Test(enospc, rsv_counts_after_close)
{
	struct bga_volume *vol = make_volume(4096, 4096, 0);
	struct bga_rsv *h;
	cr_assert_eq(bga_rsv_open(vol, &h), 0);
	struct bga_request r = {.goal = BGA_NO_GOAL, .min_len = 1, .max_len = 1, .rsv = h};
	struct bga_extent e;
	for (int i = 0; i < 8; i++)
		cr_assert_eq(bga_alloc(vol, &r, &e), 0);
	struct bga_stats st;
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_assert_leq(st.rsv_allocs, 8);
	cr_assert_leq(st.rsv_hits, st.rsv_allocs);
	bga_rsv_close(h);
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_assert_eq(st.rsv_allocs, 8);
	cr_assert_eq(st.rsv_hits, 7);
	bga_destroy(vol);
}

/* A failed claim or all-or-nothing request gives no group a bitmap. */
Test(enospc, failures_initialise_nothing)
{
	struct bga_volume *vol = make_volume(256, 64, 0);
	cr_assert_eq(bga_claim(vol, 130, 1), 0);
	cr_assert_eq(initialised(vol), 1);
	cr_assert_eq(bga_claim(vol, 10, 130), -EBUSY); /* groups 0 to 2, block 130 taken */
	cr_assert_eq(initialised(vol), 1, "a failed claim initialised a group");
	struct bga_extent out[8];
	size_t n;
	cr_assert_eq(vec(vol, 1, 64, 0, BGA_ALL_OR_NOTHING, 200, 2, out, &n), -ENOSPC);
	cr_assert_eq(initialised(vol), 1, "a failed all-or-nothing request initialised a group");
	cr_assert_eq(vec(vol, 8, 8, 0, BGA_ALL_OR_NOTHING, 64, 7, out, &n), -ENOSPC);
	cr_assert_eq(initialised(vol), 1, "a failed all-or-nothing request initialised a group");
	struct bga_stats st;
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_assert_eq(st.rsv_window_blocks, 0, "a failed request booked a window");
	assert_clean(vol);
	bga_destroy(vol);
}

/* 3 again on a volume with room to spare, where the window's lock-free
 * take serves the first piece: much free, but no run of 20. */
Test(enospc, failed_call_keeps_window_roomy)
{
	struct bga_volume *vol = full_volume(64 * 1024, 64, 16);
	cr_assert_eq(bga_free(vol, 64, 16), 0);
	for (uint64_t b = 640; b < 40000; b += 2)
		cr_assert_eq(bga_free(vol, b, 1), 0);
	struct bga_rsv *h;
	cr_assert_eq(bga_rsv_open(vol, &h), 0);
	struct bga_request r = {.goal = 64, .min_len = 1, .max_len = 1, .rsv = h};
	struct bga_extent e, w0, w1, out[1];
	cr_assert_eq(bga_alloc(vol, &r, &e), 0);
	cr_assert_eq(bga_rsv_window(h, &w0), 0);
	cr_assert_eq(w0.len, 15);
	uint64_t free0 = bga_free_exact(vol), init0 = initialised(vol);
	r = (struct bga_request){.goal = BGA_NO_GOAL, .min_len = 1, .max_len = 20, .rsv = h, .flags = BGA_ALL_OR_NOTHING};
	size_t n;
	cr_assert_eq(bga_alloc_vec(vol, &r, 20, out, 1, &n), -ENOSPC);
	cr_assert_eq(bga_rsv_window(h, &w1), 0);
	cr_assert(w1.start == w0.start && w1.len == w0.len, "the window went from [%llu, +%llu) to [%llu, +%llu)",
		  (unsigned long long)w0.start, (unsigned long long)w0.len, (unsigned long long)w1.start,
		  (unsigned long long)w1.len);
	cr_assert_eq(bga_free_exact(vol), free0);
	cr_assert_eq(initialised(vol), init0);
	bga_rsv_close(h);
	assert_clean(vol);
	bga_destroy(vol);
}

/* 1, again: a lazy load whose one chunk is unread, its wholly free
 * groups among the read ones' neighbours (fuzz_ops, from the lazy
 * seeds): all or nothing of every free block, which two free runs
 * hold, succeeds, and the caller has all of it. */
Test(enospc, lazy_load_wholly_free_groups_all_or_nothing)
{
	for (int full = 0; full < 2; full++) {
		struct bga_volume *vol = full ? full_volume(4096, 512, 0) : NULL;
		struct bga_extent e, out[16];
		size_t n;
		uint64_t want;
		if (full) {
			cr_assert_eq(bga_free(vol, 0, 1024), 0);
			want = 1024;
		} else {
			struct bga_config cfg;
			bga_config_init(&cfg, 4096);
			cfg.blocks_per_group = 512;
			cr_assert_eq(bga_create(&cfg, &vol), 0);
			cr_assert_eq(bga_claim(vol, 2048, 512), 0);
			want = 4096 - 512;
		}
		struct memio m;
		vol = stored_and_loaded(vol, &m);
		cr_assert_eq(bga_free_exact(vol), want);
		int rc = vec(vol, full ? 5 : 2, UINT64_MAX, 0, BGA_ALL_OR_NOTHING, want, 16, out, &n);
		cr_assert_eq(rc, 0, "start full %d: all or nothing of the %llu free blocks: %d", full,
			     (unsigned long long)want, rc);
		cr_assert_eq(total(out, n), want);
		cr_assert_eq(bga_free_exact(vol), 0);
		struct bga_request one = {.goal = BGA_NO_GOAL, .min_len = 1, .max_len = 1};
		cr_assert_eq(bga_alloc(vol, &one, &e), -ENOSPC);
		cr_assert_eq(bga_free_vec(vol, out, n), 0);
		cr_assert_eq(bga_free_exact(vol), want);
		assert_clean(vol);
		bga_destroy(vol);
		memio_free(&m);
	}
}

/* A min_len past a group: no run of it lies inside one group, so the
 * request cannot be met, now or after any commit: -ENOSPC, as bga_alloc
 * answers it, with all or nothing or without, and nothing changes. */
Test(enospc, min_len_past_a_group_is_enospc)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	bga_config_init(&cfg, 4 * 64);
	cfg.blocks_per_group = 64;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	struct bga_extent out[4];
	size_t n = 7;
	cr_assert_eq(vec(vol, 65, 128, 0, BGA_ALL_OR_NOTHING, 130, 4, out, &n), -ENOSPC);
	cr_assert_eq(n, 0);
	cr_assert_eq(bga_free_exact(vol), 4 * 64);
	n = 7;
	cr_assert_eq(vec(vol, 65, 128, 0, 0, 130, 4, out, &n), -ENOSPC);
	cr_assert_eq(n, 0);
	struct bga_request r = {.goal = BGA_NO_GOAL, .min_len = 65, .max_len = 128};
	cr_assert_eq(bga_alloc(vol, &r, out), -ENOSPC);
	cr_assert_eq(bga_free_exact(vol), 4 * 64);
	/* the same volume meets a min_len of a whole group */
	cr_assert_eq(vec(vol, 64, 128, 0, BGA_ALL_OR_NOTHING, 128, 2, out, &n), 0);
	cr_assert_eq(total(out, n), 128);
	assert_clean(vol);
	bga_destroy(vol);
}

/* 1 for bga_alloc: a BGA_START_FULL volume of two chunks whose only free
 * blocks lie in a group of the second, loaded lazily: the count promises
 * none of them until the chunk is read, and the allocation reads it
 * rather than answer -ENOSPC; then the volume is full. */
Test(enospc, lazy_load_reads_before_alloc)
{
	uint64_t nblocks = 2 * TEST_CHUNK_GROUPS * 64, at = (TEST_CHUNK_GROUPS + 7) * 64 + 20;
	struct bga_volume *vol = full_volume(nblocks, 64, 0);
	cr_assert_eq(bga_free(vol, at, 5), 0);
	struct memio m;
	vol = stored_and_loaded(vol, &m);
	cr_assert_eq(bga_free_exact(vol), 5);
	struct bga_request r = {.goal = BGA_NO_GOAL, .min_len = 5, .max_len = 5};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &r, &e), 0);
	cr_assert_eq(e.start, at);
	cr_assert_eq(e.len, 5);
	cr_assert_eq(bga_free_exact(vol), 0);
	r.min_len = r.max_len = 1;
	cr_assert_eq(bga_alloc(vol, &r, &e), -ENOSPC);
	assert_clean(vol);
	bga_destroy(vol);
	memio_free(&m);
}

/* All or nothing through a handle set to size 0 (its window given back):
 * served from the free space as without the handle, and no window is
 * booked (bga_alloc_vec: "with BGA_ALL_OR_NOTHING only what the window
 * holds at the call (no window is booked ...)"). */
Test(enospc, all_or_nothing_through_a_handle_of_size_0)
{
	struct bga_volume *vol = make_volume(4096, 1024, 0);
	struct bga_rsv *h;
	cr_assert_eq(bga_rsv_open(vol, &h), 0);
	struct bga_request r = {.goal = 100, .min_len = 1, .max_len = 1, .rsv = h};
	struct bga_extent e, w, out[4];
	cr_assert_eq(bga_alloc(vol, &r, &e), 0);
	cr_assert_eq(bga_rsv_window(h, &w), 0);
	cr_assert_gt(w.len, 0, "the first allocation booked a window");
	cr_assert_eq(bga_rsv_set_size(h, 0), 0);
	cr_assert_eq(bga_rsv_window(h, &w), 0);
	cr_assert_eq(w.len, 0, "size 0 gives the window back");
	uint64_t free0 = bga_free_exact(vol);
	cr_assert_eq(free0, 4095);
	r = (struct bga_request){.goal = BGA_NO_GOAL, .min_len = 1, .max_len = 40, .rsv = h, .flags = BGA_ALL_OR_NOTHING};
	size_t n = 0;
	cr_assert_eq(bga_alloc_vec(vol, &r, 40, out, 4, &n), 0);
	uint64_t got = 0;
	for (size_t i = 0; i < n; i++)
		got += out[i].len;
	cr_assert_eq(got, 40);
	cr_assert_eq(bga_free_exact(vol), free0 - 40);
	cr_assert_eq(bga_rsv_window(h, &w), 0);
	cr_assert_eq(w.len, 0, "all or nothing booked a window");
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(bga_free(vol, out[i].start, out[i].len), 0);
	cr_assert_eq(bga_free(vol, e.start, e.len), 0);
	bga_rsv_close(h);
	assert_clean(vol);
	bga_destroy(vol);
}

/* A BGA_START_FULL volume with a first_data_block: its groups start
 * used with no bitmap.  Frees reaching below first_data_block are -EINVAL
 * and change nothing (bga_free: "any block lies outside the volume or
 * below first_data_block"), whether one block, a run, or a run that
 * straddles it; a free of group 0's whole span, then of parts of others,
 * is served. */
Test(enospc, full_volume_refuses_frees_below_first_data_block)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	bga_config_init(&cfg, 64 * 4 + 40);
	cfg.blocks_per_group = 64;
	cfg.first_data_block = 10;
	cfg.flags = BGA_START_FULL;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	cr_assert_eq(bga_free_exact(vol), 0);
	uint64_t init0 = initialised(vol);
	static const uint64_t bad[][2] = {{3, 1}, {0, 10}, {4, 3}, {8, 4}, {9, 55}, {0, 64 * 4 + 40}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(bga_free(vol, bad[i][0], bad[i][1]), -EINVAL, "free %llu+%llu", (unsigned long long)bad[i][0],
			     (unsigned long long)bad[i][1]);
		cr_assert_eq(bga_free_exact(vol), 0, "a refused free changed the free count");
		cr_assert_eq(initialised(vol), init0, "a refused free made a bitmap");
	}
	cr_assert_eq(bga_free(vol, 10, 54), 0, "group 0's whole span");
	cr_assert_eq(bga_free_exact(vol), 54);
	cr_assert_eq(bga_free(vol, 64 * 4 + 30, 10), 0, "the short last group's tail");
	cr_assert_eq(bga_free(vol, 64 + 5, 1), 0);
	cr_assert_eq(bga_free_exact(vol), 54 + 10 + 1);
	cr_assert_eq(bga_free(vol, 5, 1), -EINVAL);
	cr_assert_eq(bga_free(vol, 64 * 4 + 30, 10), -EINVAL, "freed twice");
	cr_assert_eq(bga_free_exact(vol), 65);
	assert_clean(vol);
	bga_destroy(vol);
}

/* bga_free_vec naming a block of a part of the volume nothing ever
 * touched (so free): -EINVAL, and the allocated extent beside it in the
 * same call stays allocated, whichever comes first. */
Test(enospc, free_vec_with_a_never_touched_block_frees_nothing)
{
	struct bga_volume *vol = make_volume(64 * 4096, 64, 0);
	struct bga_request req = {.goal = 100, .min_len = 4, .max_len = 4, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	uint64_t free0 = bga_free_exact(vol);
	struct bga_extent pairs[2][2] = {{{100, 4}, {64 * 3000, 8}}, {{64 * 3000, 8}, {100, 4}}};
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(bga_free_vec(vol, pairs[i], 2), -EINVAL, "order %d", i);
		cr_assert_eq(bga_free_exact(vol), free0, "order %d: a refused free_vec freed something", i);
	}
	cr_assert_eq(bga_free(vol, 64 * 3000, 8), -EINVAL);
	req.min_len = req.max_len = 1;
	cr_assert_eq(bga_alloc(vol, &req, &e), -ENOSPC, "block 100 is free again");
	cr_assert_eq(bga_free(vol, 100, 4), 0);
	cr_assert_eq(bga_free_exact(vol), 64 * 4096);
	assert_clean(vol);
	bga_destroy(vol);
}

/* An aligned request that no group can hold (align = blocks_per_group:
 * only a wholly free group would do), with plenty of blocks free in
 * runs too short: -ENOSPC at once, nothing changed; a wholly free group
 * then serves it. */
Test(enospc, aligned_request_of_a_whole_group_with_every_group_started)
{
	struct bga_volume *vol = make_volume(4 * 64, 64, 0);
	struct bga_request one = {.min_len = 1, .max_len = 1, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	for (uint64_t g = 0; g < 4; g++) {
		one.goal = g * 64 + 63;
		cr_assert_eq(bga_alloc(vol, &one, &e), 0);
	}
	struct bga_request whole = {.goal = BGA_NO_GOAL, .min_len = 64, .max_len = 64, .align = 64};
	e.start = e.len = 77;
	cr_assert_eq(bga_alloc(vol, &whole, &e), -ENOSPC);
	cr_assert(e.start == 77 && e.len == 77, "a refused request wrote *out");
	cr_assert_eq(bga_free_exact(vol), 4 * 63);
	cr_assert_eq(bga_free(vol, 2 * 64 + 63, 1), 0);
	cr_assert_eq(bga_alloc(vol, &whole, &e), 0);
	cr_assert_eq(e.start, 2 * 64);
	cr_assert_eq(e.len, 64);
	assert_clean(vol);
	bga_destroy(vol);
}

/* BGA_EXACT_GOAL through a handle: the extent starts at the goal (an
 * exact goal is honoured with windows on), and the handle still books a
 * window for its next plain request. */
Test(enospc, exact_goal_through_a_handle)
{
	struct bga_volume *vol = make_volume(4 * 1024, 1024, 0);
	struct bga_rsv *h;
	cr_assert_eq(bga_rsv_open(vol, &h), 0);
	struct bga_request req = {.goal = 2000, .min_len = 5, .max_len = 5, .rsv = h, .flags = BGA_EXACT_GOAL};
	struct bga_extent e, w;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(e.start, 2000);
	cr_assert_eq(e.len, 5);
	cr_assert_eq(bga_alloc(vol, &req, &e), -ENOSPC, "the same exact goal twice");
	req.flags = 0;
	req.goal = 100;
	req.min_len = req.max_len = 1;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(bga_rsv_window(h, &w), 0);
	cr_assert_gt(w.len, 0, "a plain request through the handle booked no window");
	cr_assert_eq(bga_free_exact(vol), 4 * 1024 - 6);
	bga_rsv_close(h);
	assert_clean(vol);
	bga_destroy(vol);
}

/* ---- -EAGAIN through windows, and a failed exact goal ---- */

static void pin_to_one_cpu(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &set);
	cr_assert_eq(sched_setaffinity(0, sizeof(set), &set), 0);
}

static uint64_t window_blocks(struct bga_volume *vol)
{
	struct bga_stats st;
	cr_assert_eq(bga_stats(vol, &st), 0);
	return st.rsv_window_blocks;
}

/*
 * One group of 64: [0,13) and [16,64) allocated, [14,16) held by a window,
 * [10,14) and [16,20) pending.  After the commit [10,20) is one run of 10
 * (pending, window, pending): a request for 5 must get -EAGAIN, and the
 * same request succeeds at 10 once committed.
 */
static void eagain_through_a_window(bool handle)
{
	pin_to_one_cpu();
	struct bga_volume *vol = make_volume(64, 64, 0);
	struct bga_rsv *rsv = NULL;
	struct bga_extent e;
	take(vol, 0, 13);
	if (handle) {
		cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
		cr_assert_eq(bga_rsv_set_size(rsv, 3), 0);
		cr_assert_eq(alloc_at(vol, 13, 1, 1, rsv, 0, &e), 0);
		take(vol, 16, 48);
	} else {
		take(vol, 16, 48);
		/* a CPU books a locality window only once its home was found
		 * contended (test_windows) */
		struct bga_request one = {.goal = BGA_NO_GOAL, .min_len = 1, .max_len = 1};
		cr_assert_eq(contend_alloc(vol, 0, &one, &e), 0);
		cr_assert_eq(bga_free(vol, e.start, 1), 0);
		cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 1, 1, NULL, 0, &e), 0, "the CPU window books [13,16)");
	}
	cr_assert_eq(e.start, 13);
	cr_assert_eq(window_blocks(vol), 2, "the window keeps [14,16)");
	cr_assert_eq(bga_free_deferred(vol, 10, 4, 1), 0);
	cr_assert_eq(bga_free_deferred(vol, 16, 4, 1), 0);
	cr_assert_eq(alloc_at(vol, 0, 5, 5, NULL, 0, &e), -EAGAIN, "a commit makes [10,20) one run");
	cr_assert_eq(alloc_at(vol, 10, 5, 5, NULL, BGA_EXACT_GOAL, &e), -EAGAIN, "the same at the goal 10");
	cr_assert_eq(alloc_at(vol, 0, 11, 11, NULL, 0, &e), -ENOSPC, "no run of 11 forms");
	assert_clean(vol);
	cr_assert_eq(bga_commit(vol, 1), 0);
	cr_assert_eq(alloc_at(vol, 0, 5, 5, NULL, 0, &e), 0);
	cr_assert_eq(e.start, 10);
	cr_assert_eq(e.len, 5);
	assert_clean(vol);
	bga_rsv_close(rsv);
	bga_destroy(vol);
}

Test(eagain, through_a_handles_window)
{
	eagain_through_a_window(true);
}

Test(eagain, through_a_cpu_window)
{
	eagain_through_a_window(false);
}

/*
 * Two groups of 64.  Group 0's only free run is a window's remainder
 * [61,64); group 1 is full, with 4 single blocks pending (no run of 2
 * after the commit there); 2 blocks reserved, so 1 is unpromised.  A
 * request for 2 cannot be served now (the count), but after the commit 5
 * are unpromised and the window's 3 blocks are a run: -EAGAIN.
 */
Test(eagain, a_run_of_window_blocks_only_and_a_reservation)
{
	pin_to_one_cpu();
	struct bga_volume *vol = make_volume(128, 64, 0);
	struct bga_rsv *rsv;
	struct bga_extent e;
	take(vol, 0, 60);
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	cr_assert_eq(bga_rsv_set_size(rsv, 4), 0);
	cr_assert_eq(alloc_at(vol, 60, 1, 1, rsv, 0, &e), 0);
	cr_assert_eq(e.start, 60);
	take(vol, 64, 64);
	for (uint64_t b = 70; b < 110; b += 10)
		cr_assert_eq(bga_free_deferred(vol, b, 1, 1), 0);
	cr_assert_eq(bga_reserve(vol, 2), 0);
	cr_assert_eq(window_blocks(vol), 3);
	cr_assert_eq(alloc_at(vol, 0, 2, 2, NULL, 0, &e), -EAGAIN);
	cr_assert_eq(alloc_at(vol, BGA_NO_GOAL, 2, 2, NULL, 0, &e), -EAGAIN);
	cr_assert_eq(alloc_at(vol, 0, 4, 4, NULL, 0, &e), -ENOSPC, "no run of 4 forms anywhere");
	cr_assert_eq(bga_commit(vol, 1), 0);
	cr_assert_eq(alloc_at(vol, 0, 2, 2, NULL, 0, &e), 0);
	cr_assert_eq(e.start, 61);
	assert_clean(vol);
	bga_rsv_close(rsv);
	bga_destroy(vol);
}

/*
 * A handle's window [41,72) after [40,41); [72,100) allocated.  Exact
 * requests that fail leave the window whole; one that succeeds cuts it at
 * its goal.
 */
Test(exact_goal, a_failed_request_keeps_the_windows)
{
	struct bga_volume *vol = make_volume(1 << 12, 4096, 0);
	struct bga_rsv *rsv;
	struct bga_extent e, w;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	cr_assert_eq(bga_rsv_set_size(rsv, 32), 0);
	cr_assert_eq(alloc_at(vol, 40, 1, 1, rsv, 0, &e), 0);
	cr_assert_eq(e.start, 40);
	take(vol, 72, 28);
	cr_assert_eq(window_blocks(vol), 31);

	cr_assert_eq(alloc_at(vol, 40, 1, 16, NULL, BGA_EXACT_GOAL, &e), -ENOSPC, "block 40 is allocated");
	cr_assert_eq(window_blocks(vol), 31, "the failed request cut the window");
	cr_assert_eq(alloc_at(vol, 60, 20, 20, NULL, BGA_EXACT_GOAL, &e), -ENOSPC, "[60,72) is 12 blocks");
	cr_assert_eq(window_blocks(vol), 31, "the failed request cut the window");
	/* a charge that fails (everything else promised) cuts nothing either */
	uint64_t unpromised = bga_free_exact(vol);
	cr_assert_eq(bga_reserve(vol, unpromised), 0);
	cr_assert_eq(alloc_at(vol, 50, 1, 1, NULL, BGA_EXACT_GOAL, &e), -ENOSPC);
	cr_assert_eq(window_blocks(vol), 31, "the failed charge cut the window");
	cr_assert_eq(bga_unreserve(vol, unpromised), 0);
	/* run [60,72) of the window and [72,82) pending: -EAGAIN, window kept */
	cr_assert_eq(bga_free_deferred(vol, 72, 10, 1), 0);
	cr_assert_eq(alloc_at(vol, 60, 20, 20, NULL, BGA_EXACT_GOAL, &e), -EAGAIN);
	cr_assert_eq(window_blocks(vol), 31, "the request that got -EAGAIN cut the window");
	assert_clean(vol);

	cr_assert_eq(alloc_at(vol, 50, 4, 4, NULL, BGA_EXACT_GOAL, &e), 0);
	cr_assert_eq(e.start, 50);
	cr_assert_eq(bga_rsv_window(rsv, &w), 0);
	cr_assert_eq(w.start, 41);
	cr_assert_eq(w.len, 9, "the window keeps what lies before the goal");
	cr_assert_eq(bga_commit(vol, 1), 0);
	cr_assert_eq(alloc_at(vol, 60, 20, 20, NULL, BGA_EXACT_GOAL, &e), 0);
	assert_clean(vol);
	bga_rsv_close(rsv);
	bga_destroy(vol);
}
