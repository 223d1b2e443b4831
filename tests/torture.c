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
 *  - concurrent bga_check may only report the cross-group sums (bgalloc.h);
 *  - at the end everything is freed and committed: bga_check clean and
 *    bga_free_exact equal to the capacity, so no block was lost.
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

#include "stress_time.h"
#include "testutil.h"

#define THREADS 6
#define BPG 64u
#define START_BLOCKS 250000u /* just under one chunk of 4096 64-block groups */
#define MAX_BLOCKS 600000u   /* grown across two chunk boundaries */
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

static void *work(void *arg)
{
	struct thread *t = arg;
	if (bga_rsv_open(vol, &t->rsv))
		fail("rsv_open", 0, 0);
	for (uint64_t i = 0; stress_go_on(i, 2000, deadline); i++) {
		uint64_t op = below(&t->rng, 1000);
		if (t->n == HELD || (t->n > 0 && op < 420)) {
			drop(t, (int)below(&t->rng, (uint64_t)t->n), op % 4 == 0);
		} else if (op < 950) {
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
	while (t->n)
		drop(t, t->n - 1, false);
	if (t->reserved && bga_unreserve(vol, t->reserved))
		fail("unreserve", (long long)t->reserved, 0);
	bga_rsv_close(t->rsv);
	return NULL;
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
