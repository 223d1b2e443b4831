/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Promises of <bgalloc.h> that an outside torture pass found broken, one
 * deterministic case each:
 *  - bga_alloc's -EAGAIN (not -ENOSPC) when a commit would make room,
 *    with the run the commit forms passing through a window's remainder
 *    (a handle's, a CPU's locality window), or the count short because
 *    of a reservation;
 *  - a failed BGA_EXACT_GOAL request leaves the volume as it was: no
 *    window is cut for a request that does not succeed;
 *  - bga_reserve never overcommits, even when a lazy load's first read of
 *    a chunk finds less free space than its descriptors said (a group
 *    quarantined, a free count repaired downwards);
 *  - a store while a trim's discard runs writes the blocks the trim
 *    claimed as free: no caller owns them (bga_trim, bga_store).
 * The thread is pinned to one CPU, so every goal-less request meets the
 * same locality window.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "contend.h"
#include "persist_image.h"
#include "testutil.h"

static void pin_to_one_cpu(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &set);
	cr_assert_eq(sched_setaffinity(0, sizeof(set), &set), 0);
}

static int alloc_at(struct bga_volume *vol, uint64_t goal, uint64_t min, uint64_t max, struct bga_rsv *rsv,
		    uint32_t flags, struct bga_extent *e)
{
	struct bga_request req = {.goal = goal, .min_len = min, .max_len = max, .rsv = rsv, .flags = flags};
	return bga_alloc(vol, &req, e);
}

/* Allocate exactly [start, start + len) with a plain request. */
static void take(struct bga_volume *vol, uint64_t start, uint64_t len)
{
	struct bga_extent e;
	cr_assert_eq(alloc_at(vol, start, len, len, NULL, BGA_EXACT_GOAL, &e), 0);
	cr_assert_eq(e.start, start);
	cr_assert_eq(e.len, len);
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

/*
 * Two chunks of 64-block groups, stored, with chunk 1's first group
 * damaged in one of two ways, and loaded lazily: chunk 1 is not read
 * until touched.  Whatever bga_reserve promised before the read
 * must still be there after it.
 */
static void reserve_across_a_damaging_read(bool quarantine)
{
	enum { BPG = 64 };
	const uint64_t g = TEST_CHUNK_GROUPS, b = g * BPG;
	struct bga_volume *vol = make_volume(UINT64_C(2) * TEST_CHUNK_GROUPS * BPG, BPG, 0), *back;
	struct memio m;
	struct bga_io io;
	struct bga_extent e;
	take(vol, 3, 2);
	take(vol, b + 3, 2);
	memio_init(&m, &io);
	cr_assert_eq(bga_store(vol, &io), 0);
	uint64_t uuid = bga_pf_get64(sb_in_force(&m) + BGA_SB_UUID);
	struct bga_pgroup r;
	desc_slot_in_force(&m, BPG, g, uuid, &r);
	cr_assert_eq(r.free, BPG - 2);
	if (quarantine) {
		m.buf[bga_pf_bitmap_off(BPG, g, r.slot) + 4] ^= 0x10; /* its descriptor stays valid */
	} else {
		struct bga_pgroup more = r;
		more.free = BPG; /* the bitmap, which is sound, says 62 */
		desc_rewrite(&m, BPG, g, &r, &more);
	}
	cr_assert_eq(bga_load(&io, NULL, &back), 0);
	uint64_t f = bga_free_exact(back);
	int rc = bga_reserve(back, f);
	cr_assert(rc == 0 || rc == -ENOSPC, "%d", rc);
	struct bga_stats st;
	cr_assert_eq(bga_stats(back, &st), 0); /* reads chunk 1 */
	cr_assert_eq(st.groups_quarantined, quarantine ? 1 : 0);
	cr_assert_eq(st.groups_repaired, quarantine ? 0 : 1);
	cr_assert_leq(bga_reserved(back), bga_free_exact(back), "reserved %llu, free %llu",
		      (unsigned long long)bga_reserved(back), (unsigned long long)bga_free_exact(back));
	if (rc == -ENOSPC)
		cr_assert_eq(bga_reserve(back, bga_free_exact(back)), 0, "all that is free now can be promised");
	/* every promised block can be drawn */
	for (uint64_t left; (left = bga_reserved(back)) != 0;) {
		rc = alloc_at(back, BGA_NO_GOAL, 1, BPG, NULL, BGA_USE_RESERVED, &e);
		cr_assert_eq(rc, 0, "a draw on a promise of %llu: %d", (unsigned long long)left, rc);
	}
	cr_assert_eq(bga_free_exact(back), 0);
	if (quarantine)
		assert_only_quarantine(back, 1, g);
	else
		assert_clean(back);
	bga_destroy(back);
	memio_free(&m);
	bga_destroy(vol);
}

Test(reserve, kept_when_a_lazy_read_quarantines_a_group)
{
	reserve_across_a_damaging_read(true);
}

Test(reserve, kept_when_a_lazy_read_repairs_a_count_downwards)
{
	reserve_across_a_damaging_read(false);
}

/* The other half of the rule: space not read yet is promised once it is,
 * so neither a reservation nor an allocation that needs it fails. */
Test(reserve, unread_space_is_read_when_a_promise_needs_it)
{
	enum { BPG = 64 };
	const uint64_t n = UINT64_C(2) * TEST_CHUNK_GROUPS * BPG, b = TEST_CHUNK_GROUPS * BPG;
	struct bga_volume *vol = make_volume(n, BPG, 0), *back;
	struct memio m;
	struct bga_io io;
	struct bga_extent e;
	take(vol, 3, 2);
	take(vol, b + 3, 2);
	memio_init(&m, &io);
	cr_assert_eq(bga_store(vol, &io), 0);
	cr_assert_eq(bga_load(&io, NULL, &back), 0);
	cr_assert_eq(bga_free_exact(back), n - 4, "unread chunks count as free");
	cr_assert_eq(bga_free(back, 3, 2), 0, "reads chunk 0 only");
	cr_assert_eq(bga_reserve(back, b), 0, "all of chunk 0");
	cr_assert_eq(alloc_at(back, 0, 1, 1, NULL, 0, &e), 0, "chunk 1's space, read for it");
	cr_assert_eq(bga_reserve(back, b - 3), 0, "the rest");
	cr_assert_eq(bga_free_exact(back), b - 3 + b, "reserved blocks are free");
	cr_assert_eq(alloc_at(back, 0, 1, 1, NULL, 0, &e), -ENOSPC, "all promised");
	assert_clean(back);
	bga_destroy(back);
	memio_free(&m);
	bga_destroy(vol);
}

/*
 * Four groups of 64: a few extents in groups 0 and 1, groups 2 and 3
 * untouched (a trim claims them whole, with no bitmap).  A store runs
 * while the trim's first discard is under way, from the discard itself
 * or from another thread the discard waits for; the image must hold
 * exactly the blocks callers hold: the trim's claims are stored free.
 */
struct store_in_discard {
	struct bga_volume *vol;
	struct bga_io io;
	bool other_thread;
	int calls, store_rc;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int phase; /* 1: store asked, 2: store done */
};

static void *store_thread(void *arg)
{
	struct store_in_discard *t = arg;
	pthread_mutex_lock(&t->mu);
	while (t->phase != 1)
		pthread_cond_wait(&t->cv, &t->mu);
	pthread_mutex_unlock(&t->mu);
	int rc = bga_store(t->vol, &t->io);
	pthread_mutex_lock(&t->mu);
	t->store_rc = rc;
	t->phase = 2;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

static int discard_and_store(void *ctx, uint64_t start, uint64_t len)
{
	(void)start;
	(void)len;
	struct store_in_discard *t = ctx;
	if (t->calls++ != 0)
		return 0;
	if (!t->other_thread) {
		t->store_rc = bga_store(t->vol, &t->io);
		return 0;
	}
	pthread_mutex_lock(&t->mu);
	t->phase = 1;
	pthread_cond_broadcast(&t->cv);
	while (t->phase != 2)
		pthread_cond_wait(&t->cv, &t->mu);
	pthread_mutex_unlock(&t->mu);
	return 0;
}

static void store_during_a_discard(bool other_thread)
{
	enum { BPG = 64 };
	struct bga_volume *vol = make_volume(4 * BPG, BPG, 0), *back;
	struct memio m;
	struct store_in_discard t = {.vol = vol, .other_thread = other_thread};
	pthread_mutex_init(&t.mu, NULL);
	pthread_cond_init(&t.cv, NULL);
	take(vol, 0, 10);
	take(vol, 20, 5);
	take(vol, 40, 20);
	take(vol, 64, 10);
	take(vol, 100, 1);
	struct usedmap want, got;
	cr_assert_eq(usedmap_take(vol, &want), 0);
	memio_init(&m, &t.io);
	pthread_t th;
	if (other_thread)
		cr_assert_eq(pthread_create(&th, NULL, store_thread, &t), 0);
	uint64_t trimmed = 0;
	cr_assert_eq(bga_trim(vol, 0, 4 * BPG, 1, discard_and_store, &t, &trimmed), 0);
	if (other_thread)
		pthread_join(th, NULL);
	cr_assert_eq(t.store_rc, 0);
	cr_assert_eq(trimmed, 4 * BPG - 46);
	cr_assert_eq(bga_load(&t.io, NULL, &back), 0);
	assert_clean(back);
	cr_assert_eq(bga_free_exact(back), 4 * BPG - 46, "the image holds %llu free, callers hold 46 blocks",
		     (unsigned long long)bga_free_exact(back));
	cr_assert_eq(usedmap_take(back, &got), 0);
	cr_assert(usedmap_equal(&got, &want), "the image is not what callers held");
	/* the trim gave its claims back: the next store changes nothing */
	cr_assert_eq(bga_store(vol, &t.io), 0);
	bga_destroy(back);
	cr_assert_eq(bga_load(&t.io, NULL, &back), 0);
	usedmap_free(&got);
	cr_assert_eq(usedmap_take(back, &got), 0);
	cr_assert(usedmap_equal(&got, &want));
	assert_clean(back);
	bga_destroy(back);
	usedmap_free(&got);
	usedmap_free(&want);
	memio_free(&m);
	bga_destroy(vol);
	pthread_cond_destroy(&t.cv);
	pthread_mutex_destroy(&t.mu);
}

Test(trim, a_store_from_the_discard_writes_its_claims_free)
{
	store_during_a_discard(false);
}

Test(trim, a_store_from_another_thread_during_the_discard_writes_its_claims_free)
{
	store_during_a_discard(true);
}
