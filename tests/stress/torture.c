/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The torture test of issue 10: threads mix every public call (allocations
 * plain, at a goal, exact, through windows and on reservations; frees,
 * deferred frees and commits; reservations; trim, foreach, stats, check;
 * grow across chunk boundaries) with the ownership of every block checked:
 *
 *  - an owner map holds, per block, 0 (free), the owning thread, PENDING
 *    (waiting on a deferred free of txn pend_txn[b]) or TRIM (claimed by a
 *    trim while its callback runs).  Every block handed out must be free
 *    in the map, or pending on a txn whose commit has begun; anything else
 *    is a block handed out twice or a deferred block reused too early;
 *  - exact goals aim half the time at a block another thread's window
 *    held lately, so windows are taken back while their owners allocate
 *    from them (trims take them back too);
 *  - the volume is never near full (threads hold a few thousand of its
 *    250,000+ blocks, reservations a few hundred), so any -ENOSPC or
 *    -EAGAIN for a request of at most 8 blocks is false (the exact
 *    near-full oracle is stress_reliability's "enospc");
 *  - bga_alloc_vec (plain, aligned, all or nothing, through the window,
 *    on reservations) checks every extent's shape and the total against
 *    `want`; bga_claim of a random range takes what it gets as an
 *    allocation, and of a range inside an extent the thread holds must be
 *    -EBUSY; bga_free_vec frees several held extents at once, and with an
 *    extent named twice must be -EINVAL with the blocks still allocated;
 *  - concurrent bga_check may only report the cross-group sums (bgalloc.h);
 *  - at the end, with the threads' extents still held and every deferred
 *    free committed, the statistics are exact: bga_free_exact and
 *    bga_stats' free count, histogram and extent count equal a walk of
 *    bga_foreach_free, which finds no held block free and every block it
 *    does not find held; then everything is freed (bga_free_vec): bga_check
 *    clean and bga_free_exact equal to the capacity, so no block was lost.
 *
 * Duration: BGA_STRESS_SECONDS (stress_time.h; 3 s by default, so it runs
 * in `make test`); a plain program, so it runs under ThreadSanitizer.
 *   BGA_STRESS_SECONDS=1800 build/release/tests/torture
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc.h>

#include "shown.h"
#include "stress_time.h"
#include "testutil.h"

#define THREADS 6
#define BPG 64u
#define START_BLOCKS (TEST_CHUNK_GROUPS * BPG - 6000u) /* just under one chunk of 64-block groups */
#define MAX_BLOCKS (2 * TEST_CHUNK_GROUPS * BPG + 40000u) /* grown across two chunk boundaries */
#define HELD 64
#define PENDING 0xfe
#define TRIM 0xfd
#define MIN(a, b) ((a) < (b) ? (a) : (b))

static struct bga_volume *vol;
static uint8_t *owner;
static uint64_t *pend_txn;
static uint64_t open_txn = 1;   /* atomic: the txn deferred frees join */
static uint64_t committing;     /* atomic: the highest txn whose commit has begun */
static uint64_t deadline;
static int failures;
static uint64_t ops[THREADS];
static uint64_t window_at[THREADS]; /* atomic: a block thread id - 1 has in its window lately */
static uint64_t grown = START_BLOCKS; /* atomic: the size the last finished grow made */

static void fail(const char *what, long long a, long long b)
{
	if (__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED) < 20)
		fprintf(stderr, "torture: %s (%lld, %lld)\n", what, a, b);
}

/* Take block b for `who`: it must be free, or pending on a txn whose
 * commit has begun. */
static void claim(uint64_t b, uint8_t who)
{
	uint8_t cur = __atomic_load_n(&owner[b], __ATOMIC_ACQUIRE);
	for (;;) {
		bool ok = cur == 0 || (cur == PENDING && __atomic_load_n(&pend_txn[b], __ATOMIC_ACQUIRE) <=
								   __atomic_load_n(&committing, __ATOMIC_ACQUIRE));
		if (!ok) {
			fail(cur == PENDING ? "deferred block handed out before its commit" : "block handed out twice",
			     (long long)b, cur);
			return;
		}
		if (__atomic_compare_exchange_n(&owner[b], &cur, who, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return;
	}
}

static void set_range(struct bga_extent e, uint8_t v)
{
	for (uint64_t b = e.start; b < e.start + e.len; b++)
		__atomic_store_n(&owner[b], v, __ATOMIC_RELEASE);
}

static void got(struct bga_extent e, const struct bga_request *req, uint8_t who)
{
	struct bga_config cfg;
	bga_volume_config(vol, &cfg);
	if (e.len < req->min_len || e.len > req->max_len || e.start + e.len > cfg.nblocks)
		fail("extent outside the request", (long long)e.start, (long long)e.len);
	if ((req->flags & BGA_EXACT_GOAL) && e.start != req->goal)
		fail("exact goal not honoured", (long long)e.start, (long long)req->goal);
	for (uint64_t b = e.start; b < e.start + e.len; b++)
		claim(b, who);
}

static int trim_cb(void *ctx, uint64_t start, uint64_t len)
{
	(void)ctx;
	for (uint64_t b = start; b < start + len; b++)
		claim(b, TRIM);
	/* Given back before bga_trim frees them: still allocated until then. */
	set_range((struct bga_extent){start, len}, 0);
	return 0;
}

static int foreach_cb(void *ctx, uint64_t start, uint64_t len)
{
	uint64_t *prev_end = ctx;
	if (start < *prev_end || len == 0)
		fail("foreach out of order", (long long)start, (long long)*prev_end);
	*prev_end = start + len;
	return 0;
}

struct thread {
	int id;
	struct rng rng;
	struct bga_extent held[HELD];
	int n;
	struct bga_rsv *rsv;
	uint64_t reserved;
};

static void drop(struct thread *t, int k, bool deferred)
{
	struct bga_extent e = t->held[k];
	t->held[k] = t->held[--t->n];
	if (deferred) {
		uint64_t txn = __atomic_load_n(&open_txn, __ATOMIC_ACQUIRE);
		for (uint64_t b = e.start; b < e.start + e.len; b++)
			__atomic_store_n(&pend_txn[b], txn, __ATOMIC_RELEASE);
		set_range(e, PENDING);
		int rc = bga_free_deferred(vol, e.start, e.len, txn);
		if (rc == 0)
			return;
		set_range(e, (uint8_t)t->id);
		if (rc != -EINVAL) /* -EINVAL: that txn's commit began meanwhile */
			fail("free_deferred", rc, (long long)e.start);
		t->held[t->n++] = e;
		return;
	}
	set_range(e, 0);
	int rc = bga_free(vol, e.start, e.len);
	if (rc)
		fail("free of an owned extent", rc, (long long)e.start);
}

static void alloc_one(struct thread *t)
{
	struct bga_config cfg;
	bga_volume_config(vol, &cfg);
	struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = 1 + below(&t->rng, 8)};
	req.max_len = req.min_len + below(&t->rng, 64);
	switch (below(&t->rng, 6)) {
	case 0:
		break;
	case 1:
		req.goal = below(&t->rng, cfg.nblocks);
		break;
	case 2:
		/* Half the time into another thread's window, which is then
		 * taken back from under its owner, maybe mid-allocation. */
		req.goal = below(&t->rng, cfg.nblocks);
		if (below(&t->rng, 2))
			req.goal = __atomic_load_n(&window_at[below(&t->rng, THREADS)], __ATOMIC_RELAXED);
		req.flags = BGA_EXACT_GOAL;
		break;
	case 3:
	case 4:
		req.rsv = t->rsv;
		req.goal = t->n ? t->held[t->n - 1].start + t->held[t->n - 1].len : BGA_NO_GOAL;
		if (req.goal >= cfg.nblocks)
			req.goal = BGA_NO_GOAL;
		break;
	default:
		if (t->reserved < req.min_len && bga_reserve(vol, 256) == 0)
			t->reserved += 256;
		if (t->reserved >= req.min_len) {
			/* The pool is shared: draw no more than this thread put in. */
			req.flags = BGA_USE_RESERVED;
			req.max_len = MIN(req.max_len, t->reserved);
		}
		break;
	}
	struct bga_extent e;
	int rc = bga_alloc(vol, &req, &e);
	if (rc == 0) {
		got(e, &req, (uint8_t)t->id);
		struct bga_extent w;
		if (req.rsv && bga_rsv_window(t->rsv, &w) == 0 && w.len)
			__atomic_store_n(&window_at[t->id - 1], w.start + below(&t->rng, w.len), __ATOMIC_RELAXED);
		if (req.flags & BGA_USE_RESERVED)
			t->reserved -= e.len;
		t->held[t->n++] = e;
	} else if (!((rc == -ENOSPC || rc == -EAGAIN) && (req.flags & BGA_EXACT_GOAL))) {
		/* An exact goal may be taken, or pending (then -EAGAIN). */
		fail(rc == -EAGAIN ? "false -EAGAIN far from full" : "alloc failed far from full", rc,
		     (long long)(req.flags << 8 | (req.rsv != NULL) << 4 | req.min_len));
	}
}

/* Shape of bga_alloc_vec's answer: n extents of the request's shape, in
 * out[] order not mergeable (an extent that continues the one before
 * starts a new one only when the two exceed max_len), want at most (all
 * of it with BGA_ALL_OR_NOTHING). */
static void got_vec(const struct bga_extent *out, size_t n, size_t max_out, uint64_t want,
		    const struct bga_request *req, uint8_t who)
{
	uint64_t sum = 0, align = req->align > 1 ? req->align : 1;
	if (n == 0 || n > max_out)
		fail("alloc_vec: extent count", (long long)n, (long long)max_out);
	for (size_t i = 0; i < n && i < max_out; i++) {
		if (out[i].start % align || out[i].len % align)
			fail("alloc_vec: extent not aligned", (long long)out[i].start, (long long)out[i].len);
		if (i && out[i - 1].start + out[i - 1].len == out[i].start && out[i - 1].len + out[i].len <= req->max_len)
			fail("alloc_vec: adjacent pieces not merged", (long long)out[i].start, (long long)out[i - 1].len);
		got(out[i], req, who);
		sum += out[i].len;
	}
	if (sum > want || ((req->flags & BGA_ALL_OR_NOTHING) && sum != want))
		fail("alloc_vec: total against want", (long long)sum, (long long)want);
}

static void alloc_vec_one(struct thread *t)
{
	struct bga_config cfg;
	bga_volume_config(vol, &cfg);
	uint64_t align = 1ull << below(&t->rng, 4);
	struct bga_request req = {.goal = BGA_NO_GOAL, .align = align > 1 ? align : 0};
	req.min_len = align * (1 + below(&t->rng, 2));
	/* max_len past a group now and then: pieces merge across groups */
	req.max_len = req.min_len + align * below(&t->rng, below(&t->rng, 4) ? 16 : 3 * BPG / align);
	uint64_t want = req.min_len + align * below(&t->rng, 48);
	size_t max_out = 1 + (size_t)below(&t->rng, MIN(8, (uint64_t)(HELD - t->n)));
	if (below(&t->rng, 2))
		req.flags |= BGA_ALL_OR_NOTHING;
	switch (below(&t->rng, 4)) {
	case 0:
		req.goal = below(&t->rng, cfg.nblocks);
		break;
	case 1:
		req.rsv = t->rsv;
		break;
	case 2:
		if (t->reserved < want && bga_reserve(vol, 512) == 0)
			t->reserved += 512;
		if (t->reserved >= want) /* the pool is shared: no more than ours */
			req.flags |= BGA_USE_RESERVED;
		break;
	default:
		break;
	}
	struct bga_extent out[8];
	size_t n = 0;
	int rc = bga_alloc_vec(vol, &req, want, out, max_out, &n);
	if (rc == 0) {
		got_vec(out, n, max_out, want, &req, (uint8_t)t->id);
		for (size_t i = 0; i < n && i < max_out; i++) {
			if (req.flags & BGA_USE_RESERVED)
				t->reserved -= out[i].len;
			t->held[t->n++] = out[i];
		}
	} else if (!(rc == -ENOSPC && (req.flags & BGA_ALL_OR_NOTHING))) {
		/* Far from full only all of want in max_out extents may not
		 * fit; pending frees never make the difference. */
		fail(rc == -EAGAIN ? "alloc_vec: false -EAGAIN far from full" : "alloc_vec failed far from full", rc,
		     (long long)(req.flags << 8 | (req.rsv != NULL) << 4 | align));
	}
}

/* bga_claim: inside an extent this thread holds, -EBUSY, nothing changed;
 * of a random range (groups spanned now and then), an allocation if it
 * succeeds, -EBUSY if any block is taken or pending. */
static void claim_one(struct thread *t)
{
	if (t->n && below(&t->rng, 2)) {
		struct bga_extent e = t->held[below(&t->rng, (uint64_t)t->n)];
		uint64_t off = below(&t->rng, e.len), len = 1 + below(&t->rng, e.len - off);
		int rc = bga_claim(vol, e.start + off, len);
		if (rc != -EBUSY)
			fail("claim of a held range not -EBUSY", rc, (long long)(e.start + off));
		return;
	}
	/* Inside what a finished grow opened: a grow in flight has the new
	 * size published before its groups' new blocks are (-EINVAL). */
	struct bga_extent e = {.len = 1 + below(&t->rng, 16)};
	e.start = below(&t->rng, __atomic_load_n(&grown, __ATOMIC_ACQUIRE) - e.len);
	int rc = bga_claim(vol, e.start, e.len);
	if (rc == 0) {
		struct bga_request req = {.min_len = e.len, .max_len = e.len};
		got(e, &req, (uint8_t)t->id);
		t->held[t->n++] = e;
	} else if (rc != -EBUSY) {
		fail("claim far from full", rc, (long long)e.start);
	}
}

/* bga_free_vec of up to 4 held extents (in the order held, which is
 * not sorted); one time in 8 with the first named twice: -EINVAL, and
 * the blocks still allocated (a claim of them is -EBUSY). */
static void free_vec_some(struct thread *t)
{
	struct bga_extent ext[5];
	size_t k = 1 + (size_t)below(&t->rng, MIN(4, (uint64_t)t->n));
	for (size_t i = 0; i < k; i++) { /* k random held extents to the end */
		int j = (int)below(&t->rng, (uint64_t)(t->n - (int)i));
		struct bga_extent tmp = t->held[j];
		t->held[j] = t->held[t->n - 1 - (int)i];
		t->held[t->n - 1 - (int)i] = tmp;
		ext[i] = tmp;
	}
	if (below(&t->rng, 8) == 0) {
		ext[k] = ext[0];
		int rc = bga_free_vec(vol, ext, k + 1);
		if (rc != -EINVAL)
			fail("free_vec of an extent named twice not -EINVAL", rc, (long long)ext[0].start);
		rc = bga_claim(vol, ext[0].start, ext[0].len);
		if (rc != -EBUSY)
			fail("free_vec -EINVAL changed something: claim", rc, (long long)ext[0].start);
		return;
	}
	for (size_t i = 0; i < k; i++)
		set_range(ext[i], 0);
	int rc = bga_free_vec(vol, ext, k);
	if (rc) {
		for (size_t i = 0; i < k; i++)
			set_range(ext[i], (uint8_t)t->id);
		fail("free_vec of owned extents", rc, (long long)ext[0].start);
		return;
	}
	t->n -= (int)k;
}

static void *work(void *arg)
{
	struct thread *t = arg;
	if (bga_rsv_open(vol, &t->rsv))
		fail("rsv_open", 0, 0);
	for (uint64_t i = 0; stress_go_on(i, 2000, deadline); i++) {
		uint64_t op = below(&t->rng, 1000);
		if (t->n == HELD || (t->n > 0 && op < 420)) {
			if (op % 8 == 1)
				free_vec_some(t);
			else
				drop(t, (int)below(&t->rng, (uint64_t)t->n), op % 4 == 0);
		} else if (op < 950) {
			if (op % 8 < 2)
				alloc_vec_one(t);
			else if (op % 8 == 2)
				claim_one(t);
			else
				alloc_one(t);
		} else if (op < 960) {
			uint64_t txn = __atomic_fetch_add(&open_txn, 1, __ATOMIC_ACQ_REL);
			uint64_t c = __atomic_load_n(&committing, __ATOMIC_ACQUIRE);
			while (c < txn && !__atomic_compare_exchange_n(&committing, &c, txn, false, __ATOMIC_ACQ_REL,
								       __ATOMIC_ACQUIRE))
				;
			int rc = bga_commit(vol, txn);
			if (rc && rc != -EINVAL) /* -EINVAL: a later txn committed first */
				fail("commit", rc, (long long)txn);
		} else if (op < 970) {
			struct bga_config cfg;
			bga_volume_config(vol, &cfg);
			uint64_t from = below(&t->rng, cfg.nblocks - 1);
			int rc = bga_trim(vol, from, MIN(cfg.nblocks, from + 4096), 1 + below(&t->rng, 8), trim_cb,
					  NULL, NULL);
			if (rc)
				fail("trim", rc, (long long)from);
		} else if (op < 975) {
			struct bga_config cfg;
			bga_volume_config(vol, &cfg);
			uint64_t prev = 0, from = below(&t->rng, cfg.nblocks - 1);
			int rc = bga_foreach_free(vol, from, MIN(cfg.nblocks, from + 8192), 1, foreach_cb, &prev);
			if (rc)
				fail("foreach", rc, (long long)from);
		} else if (op < 980) {
			struct bga_stats st;
			if (bga_stats(vol, &st))
				fail("stats", 0, 0);
		} else if (op < 983) {
			struct bga_check_report r;
			if (bga_check(vol, &r) == -EUCLEAN && r.group != UINT64_MAX)
				fail(r.message, (long long)r.group, (long long)r.block);
		} else if (op < 990) {
			struct bga_config cfg;
			bga_volume_config(vol, &cfg);
			uint64_t to = cfg.nblocks + 1 + below(&t->rng, 2000);
			int rc = to <= MAX_BLOCKS ? bga_grow(vol, to) : 0;
			uint64_t was = __atomic_load_n(&grown, __ATOMIC_ACQUIRE);
			while (rc == 0 && to <= MAX_BLOCKS && was < to &&
			       !__atomic_compare_exchange_n(&grown, &was, to, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				;
			if (rc && !(rc == -EINVAL && bga_volume_config(vol, &cfg) == 0 && cfg.nblocks > to))
				fail("grow", rc, (long long)to); /* -EINVAL: another grow went further */
		} else if (op < 995) {
			if (t->reserved && bga_unreserve(vol, t->reserved) == 0)
				t->reserved = 0;
		} else {
			bga_rsv_set_size(t->rsv, (uint32_t)below(&t->rng, 64));
		}
		ops[t->id - 1]++;
	}
	if (t->reserved && bga_unreserve(vol, t->reserved))
		fail("unreserve", (long long)t->reserved, 0);
	bga_rsv_close(t->rsv);
	return NULL;
}

static int walk_cb(void *ctx, uint64_t start, uint64_t len)
{
	free_recount_add(ctx, len);
	for (uint64_t b = start; b < start + len; b++) {
		uint8_t o = __atomic_load_n(&owner[b], __ATOMIC_RELAXED);
		if (o != 0 && o != PENDING) /* pending ones are committed now */
			fail("a held block is free", (long long)b, o);
		owner[b] = 0xff; /* seen free */
	}
	return 0;
}

/* Quiescent, every deferred free committed, the threads' extents held:
 * the free count, bga_stats and the owner map agree with a walk exactly. */
static void exact_stats(uint64_t nblocks)
{
	struct free_recount w;
	memset(&w, 0, sizeof(w));
	if (bga_foreach_free(vol, 0, nblocks, 1, walk_cb, &w))
		fail("final foreach", 0, 0);
	uint64_t held = 0;
	for (uint64_t b = 0; b < nblocks; b++) {
		if (owner[b] == 0xff)
			owner[b] = 0;
		else if (owner[b] >= 1 && owner[b] <= THREADS)
			held++;
		else
			fail("a block neither free nor held (lost)", (long long)b, owner[b]);
	}
	struct bga_stats st;
	if (bga_stats(vol, &st))
		fail("final stats", 0, 0);
	if (bga_free_exact(vol) != w.free || st.free_blocks != w.free || w.free + held != nblocks)
		fail("free count against the walk", (long long)bga_free_exact(vol), (long long)w.free);
	if (st.free_extents != w.extents)
		fail("stats free_extents against the walk", (long long)st.free_extents, (long long)w.extents);
	for (int k = 0; k < BGA_HIST_ORDERS; k++)
		if (st.hist_count[k] != w.count[k] || st.hist_blocks[k] != w.blocks[k])
			fail("stats histogram against the walk", k, (long long)st.hist_count[k]);
	if (st.deferred_blocks || st.reserved_blocks)
		fail("deferred or reserved blocks left", (long long)st.deferred_blocks, (long long)st.reserved_blocks);
}

/* One failing call of the final phase: rc must be a failure (one of
 * `ok`, 0-terminated), and nothing the API shows may change but what the
 * header lets it (shown.h). */
static void fails_cleanly(const char *what, struct bga_rsv *h, enum shown_allow allow, int rc, const int *ok,
			  const struct shown *before)
{
	bool expected = false;
	for (const int *e = ok; *e; e++)
		expected |= rc == *e;
	if (!expected)
		fail(what, rc, 0);
	struct shown after;
	char msg[160];
	if (shown_take(vol, &h, 1, true, &after))
		fail("shown_take", 0, 0);
	if (shown_diff(before, &after, allow, msg, sizeof(msg))) {
		fprintf(stderr, "torture: %s failed with %d and %s\n", what, rc, msg);
		fail("a failed call changed what the API shows", rc, 0);
	}
}

#define FAILS(what, allow, call, ...)                                                                         \
	do {                                                                                                  \
		struct shown before_;                                                                         \
		if (shown_take(vol, &h, 1, true, &before_))                                                   \
			fail("shown_take", 0, 0);                                                             \
		fails_cleanly(what, h, allow, (call), (const int[]){__VA_ARGS__, 0}, &before_);               \
	} while (0)

/*
 * Quiescent, after the threads' run: every public call that can fail,
 * failing, on the state the run left (a handle's window open, blocks
 * reserved, a deferred free pending, a held extent), each compared before
 * and after on all the API shows.  `held` is an extent some thread holds.
 */
static void failures_change_nothing(struct bga_extent held)
{
	struct bga_config cfg;
	bga_volume_config(vol, &cfg);
	struct bga_rsv *h;
	struct bga_extent e, d, hx, out[2];
	size_t n;
	if (bga_rsv_open(vol, &h))
		return fail("rsv_open", 0, 0);
	struct bga_request r = {.goal = BGA_NO_GOAL, .min_len = 1, .max_len = 1, .rsv = h};
	if (bga_alloc(vol, &r, &hx) || bga_reserve(vol, 16))
		return fail("final phase setup", 0, 0);
	struct bga_request p = {.goal = BGA_NO_GOAL, .min_len = 4, .max_len = 4};
	if (bga_alloc(vol, &p, &d))
		return fail("final phase setup", 1, 0);
	uint64_t txn = __atomic_load_n(&open_txn, __ATOMIC_RELAXED) + 1;
	if (bga_free_deferred(vol, d.start, 2, txn))
		return fail("final phase setup", 2, 0);

	struct bga_request big = {.goal = BGA_NO_GOAL, .min_len = 1, .max_len = BPG, .flags = BGA_ALL_OR_NOTHING};
	FAILS("alloc_vec: more than fits", SHOWN_RECLAIM, bga_alloc_vec(vol, &big, 3 * BPG, out, 2, &n), -ENOSPC);
	big.rsv = h;
	FAILS("alloc_vec through a handle: more than fits", SHOWN_RECLAIM,
	      bga_alloc_vec(vol, &big, 3 * BPG, out, 2, &n), -ENOSPC);
	big.min_len = big.max_len = 2 * BPG;
	FAILS("alloc: past a group", SHOWN_RECLAIM, bga_alloc(vol, &big, &e), -ENOSPC, -EINVAL);
	struct bga_request exact = {.goal = held.start, .min_len = 1, .max_len = 1, .flags = BGA_EXACT_GOAL};
	FAILS("alloc: an exact goal held", SHOWN_RECLAIM, bga_alloc(vol, &exact, &e), -ENOSPC);
	exact.goal = d.start;
	FAILS("alloc: an exact goal pending", SHOWN_RECLAIM, bga_alloc(vol, &exact, &e), -EAGAIN);
	exact.min_len = 0;
	FAILS("alloc: min_len 0", SHOWN_NOTHING, bga_alloc(vol, &exact, &e), -EINVAL);
	FAILS("free: pending", SHOWN_NOTHING, bga_free(vol, d.start, 1), -EINVAL);
	FAILS("free: past the end", SHOWN_NOTHING, bga_free(vol, cfg.nblocks - 1, 2), -EINVAL);
	struct bga_extent twice[2] = {held, held};
	FAILS("free_vec: twice", SHOWN_NOTHING, bga_free_vec(vol, twice, 2), -EINVAL);
	struct bga_extent mixed[2] = {held, {d.start, 3}};
	FAILS("free_vec: a pending block", SHOWN_NOTHING, bga_free_vec(vol, mixed, 2), -EINVAL);
	FAILS("free_deferred: txn 0", SHOWN_NOTHING, bga_free_deferred(vol, held.start, held.len, 0), -EINVAL);
	FAILS("free_deferred: pending", SHOWN_NOTHING, bga_free_deferred(vol, d.start, 1, txn), -EINVAL);
	FAILS("commit: backwards", SHOWN_NOTHING, bga_commit(vol, txn - 2), -EINVAL);
	FAILS("reserve: more than free", SHOWN_NOTHING, bga_reserve(vol, cfg.nblocks), -ENOSPC);
	FAILS("unreserve: more than reserved", SHOWN_NOTHING, bga_unreserve(vol, 17), -EINVAL);
	FAILS("claim: held", SHOWN_CLAIM_CUT, bga_claim(vol, held.start, held.len), -EBUSY);
	FAILS("claim: across a pending block", SHOWN_CLAIM_CUT, bga_claim(vol, d.start, 4), -EBUSY);
	FAILS("grow: a shrink", SHOWN_NOTHING, bga_grow(vol, cfg.nblocks - 1), -EINVAL);
	FAILS("rsv_set_size: past rsv_max", SHOWN_NOTHING, bga_rsv_set_size(h, cfg.rsv_max + 1), -EINVAL);
	FAILS("foreach_free: an empty range", SHOWN_NOTHING, bga_foreach_free(vol, 5, 5, 1, foreach_cb, &n), -EINVAL);
	FAILS("trim: min_len 0", SHOWN_NOTHING, bga_trim(vol, 0, cfg.nblocks, 0, trim_cb, NULL, NULL), -EINVAL);

	if (bga_commit(vol, txn) || bga_free(vol, d.start + 2, 2) ||
	    bga_free(vol, hx.start, hx.len) || bga_unreserve(vol, 16))
		fail("final phase cleanup", 0, 0);
	bga_rsv_close(h);
	__atomic_store_n(&open_txn, txn + 1, __ATOMIC_RELAXED);
}

int main(void)
{
	double seconds = stress_seconds(3.0);
	struct bga_config cfg;
	bga_config_init(&cfg, START_BLOCKS);
	cfg.blocks_per_group = BPG;
	owner = calloc(MAX_BLOCKS, 1);
	pend_txn = calloc(MAX_BLOCKS, sizeof(*pend_txn));
	if (!owner || !pend_txn || bga_create(&cfg, &vol)) {
		fprintf(stderr, "torture: setup failed\n");
		return 2;
	}
	deadline = stress_deadline(seconds);
	pthread_t th[THREADS];
	struct thread t[THREADS];
	for (int i = 0; i < THREADS; i++) {
		t[i] = (struct thread){.id = i + 1, .rng = {0x9e3779b97f4a7c15ull * (uint64_t)(i + 1)}};
		pthread_create(&th[i], NULL, work, &t[i]);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	uint64_t txn = __atomic_load_n(&open_txn, __ATOMIC_RELAXED);
	__atomic_store_n(&committing, txn, __ATOMIC_RELAXED);
	if (bga_commit(vol, txn))
		fail("final commit", (long long)txn, 0);
	struct bga_check_report r;
	if (bga_check(vol, &r))
		fail(r.message, (long long)r.group, (long long)r.block);
	bga_volume_config(vol, &cfg);
	exact_stats(cfg.nblocks);
	for (int i = 0; i < THREADS; i++)
		if (t[i].n) {
			failures_change_nothing(t[i].held[0]);
			break;
		}
	for (int i = 0; i < THREADS; i++) {
		for (int k = 0; k < t[i].n; k++)
			set_range(t[i].held[k], 0);
		if (t[i].n && bga_free_vec(vol, t[i].held, (size_t)t[i].n))
			fail("final free_vec", i, t[i].n);
	}
	if (bga_check(vol, &r))
		fail(r.message, (long long)r.group, (long long)r.block);
	if (bga_free_exact(vol) != cfg.nblocks)
		fail("blocks lost: free_exact below the capacity", (long long)bga_free_exact(vol),
		     (long long)cfg.nblocks);
	uint64_t total = 0;
	for (int i = 0; i < THREADS; i++)
		total += ops[i];
	printf("torture: %.0f s, %d threads, %llu operations, grown to %llu blocks, %d failures\n", seconds, THREADS,
	       (unsigned long long)total, (unsigned long long)cfg.nblocks, failures);
	bga_destroy(vol);
	free(owner);
	free(pend_txn);
	return failures ? 1 : 0;
}
