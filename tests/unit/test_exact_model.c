/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The reference model decides every allocation exactly, one thread: over
 * 40 seeds, random requests on small, nearly full volumes with handles'
 * windows, the CPU's locality window (goal-less small requests),
 * deferred frees, commits and reservations in play, each answer of
 * bga_alloc (0, -ENOSPC, -EAGAIN, -EINVAL) must be the one the model
 * gives (refmodel.h), and the volume must agree with it after every step.
 * bga_alloc_vec too: every -EAGAIN and -ENOSPC is judged by doing
 * (refmodel_alloc_vec_check: the model copied, everything pending
 * committed in the copy, the request answered there by brute force), and
 * every success by the header's shape.  Now and then the volume is
 * stored and loaded lazily, and the run goes on on the loaded volume with
 * its chunks unread; some seeds start with BGA_START_FULL and a stripe.
 * The thread is pinned to one CPU, so every goal-less request meets the
 * same locality window and each seed replays exactly.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <bgalloc.h>

#include "memio.h"
#include "refmodel.h"
#include "testutil.h"

#define SEEDS 40
#define OPS 2000
#define HANDLES 3
#define MAX_EXT 512

struct run {
	struct rng r;
	struct bga_config cfg;
	struct bga_volume *vol;
	struct refmodel m;
	struct bga_rsv *rsv[HANDLES];
	struct bga_extent ext[MAX_EXT]; /* allocated, not freed yet */
	size_t next;
	uint64_t txn;
	uint64_t seed;
	int op;
	/* exact_model/whole_rule: no handle and no goal-less small request
	 * (so no window holds blocks), and bga_alloc's one-extent rule
	 * judged on every BGA_WHOLE or aligned request */
	bool whole;
	int judged; /* requests whose placement the rule decided */
	struct memio img;
	struct bga_io io;
};

static void pin_to_one_cpu(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &set);
	cr_assert_eq(sched_setaffinity(0, sizeof(set), &set), 0);
}

static void same(struct run *t, const char *what, int rc, int want)
{
	cr_assert_eq(rc, want, "seed %" PRIu64 " op %d: %s returned %d, the model %d", t->seed, t->op, what, rc, want);
}

/*
 * exact_model/whole_rule's requests: no handle, a goal unless BGA_WHOLE
 * (a goal-less small request would book the CPU's locality window), half
 * of them BGA_WHOLE, a quarter aligned (2 .. 16, lengths rounded to it),
 * and max_len up to a group so that runs too short for it are common.
 */
static void whole_request(struct run *t, struct bga_request *req)
{
	struct rng *r = &t->r;
	uint64_t bpg = t->cfg.blocks_per_group;
	req->rsv = NULL;
	req->flags &= ~(uint32_t)BGA_EXACT_GOAL;
	if (below(r, 2))
		req->flags |= BGA_WHOLE;
	if (below(r, 3) == 0)
		req->max_len = req->min_len + below(r, bpg);
	if (below(r, 4) == 0) {
		uint64_t u = UINT64_C(2) << below(r, 4);
		req->align = u;
		req->min_len = (req->min_len + u - 1) / u * u;
		req->max_len = req->max_len < req->min_len ? req->min_len : req->max_len / u * u;
	}
	if (req->goal == BGA_NO_GOAL && !(req->flags & BGA_WHOLE))
		req->goal = below(r, t->cfg.nblocks);
}

static void op_alloc(struct run *t)
{
	struct rng *r = &t->r;
	uint64_t bpg = t->cfg.blocks_per_group;
	struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = 1 + below(r, 6)};
	req.max_len = req.min_len + below(r, 12);
	uint64_t kind = below(r, 8);
	if (kind < 3)
		req.rsv = t->rsv[below(r, HANDLES)];
	if (kind != 3 && below(r, 3) != 0)
		req.goal = below(r, t->cfg.nblocks);
	if (kind == 4 && req.goal != BGA_NO_GOAL)
		req.flags |= BGA_EXACT_GOAL;
	if (below(r, 6) == 0)
		req.flags |= BGA_USE_RESERVED;
	if (below(r, 40) == 0)
		req.min_len = req.max_len = bpg;
	if (t->whole)
		whole_request(t, &req);
	struct bga_extent e = {0, 0};
	int rc = bga_alloc(t->vol, &req, &e);
	if (t->whole && rc == 0) {
		struct bga_stats st;
		cr_assert_eq(bga_stats(t->vol, &st), 0); /* a whole request books no window */
		if (st.rsv_window_blocks == 0 && t->cfg.stripe == 0) {
			t->judged += (req.flags & BGA_WHOLE) || req.align > 1;
			cr_assert_eq(refmodel_alloc_whole_check(&t->m, &req, &e), 0, "seed %" PRIu64 " op %d: %s",
				     t->seed, t->op, t->m.err);
		}
	}
	cr_assert_eq(refmodel_alloc_check(&t->m, &req, rc, &e), 0, "seed %" PRIu64 " op %d: %s", t->seed, t->op,
		     t->m.err);
	if (rc == 0 && t->next < MAX_EXT)
		t->ext[t->next++] = e;
	else if (rc == 0)
		same(t, "free", bga_free(t->vol, e.start, e.len), refmodel_free(&t->m, e.start, e.len));
}

/*
 * bga_free_deferred_vec of [start, +len) (a piece op_free took) and
 * another extent of the list, in either order.  The other is left in the
 * list but for one case in six, so a later set may name it again once it
 * is pending, and in another it is the piece itself (an overlap): such
 * sets must fail whole and change nothing.  The model decides, and the
 * blocks are compared afterwards.
 */
static void op_free_deferred_vec(struct run *t, uint64_t start, uint64_t len)
{
	struct rng *r = &t->r;
	size_t k = below(r, t->next);
	struct bga_extent v[2] = {{start, len}, t->ext[k]};
	uint64_t bad = below(r, 6), txn = t->txn + 1 + below(r, 2);
	if (bad == 0)
		v[1] = v[0]; /* overlaps: -EINVAL */
	else if (bad == 1)
		t->ext[k] = t->ext[--t->next]; /* taken: the set must succeed */
	if (below(r, 2)) {
		struct bga_extent x = v[0];
		v[0] = v[1];
		v[1] = x;
	}
	int rc = bga_free_deferred_vec(t->vol, v, 2, txn);
	same(t, "free_deferred_vec", rc, refmodel_free_deferred_vec(&t->m, v, 2, txn));
	if (rc != 0) /* the piece op_free took stays allocated: keep it */
		t->ext[t->next++] = (struct bga_extent){start, len};
	cr_assert_eq(refmodel_compare_range(&t->m, t->vol, 0, t->cfg.nblocks), 0, "seed %" PRIu64 " op %d: %s",
		     t->seed, t->op, t->m.err);
}

/* bga_alloc_vec: plain, aligned, all or nothing, through a handle or a
 * reservation, max_out 1 .. 8. */
static void op_alloc_vec(struct run *t)
{
	struct rng *r = &t->r;
	uint64_t align = below(r, 3) == 0 ? UINT64_C(1) << below(r, 4) : 0, u = align > 1 ? align : 1;
	struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = u * (1 + below(r, 3)), .align = align};
	req.max_len = req.min_len + u * below(r, below(r, 4) ? 8 : 3 * t->cfg.blocks_per_group / u);
	uint64_t want = u * (1 + below(r, 40));
	size_t max_out = 1 + (size_t)below(r, 8), n = 0;
	if (below(r, 2))
		req.flags |= BGA_ALL_OR_NOTHING;
	if (below(r, 3) == 0)
		req.rsv = t->rsv[below(r, HANDLES)];
	if (below(r, 6) == 0)
		req.flags |= BGA_USE_RESERVED;
	if (below(r, 3) == 0 || t->whole)
		req.goal = below(r, t->cfg.nblocks);
	if (t->whole)
		req.rsv = NULL; /* no window, so that the rule is judged */
	struct bga_extent out[8];
	int rc = bga_alloc_vec(t->vol, &req, want, out, max_out, &n);
	cr_assert_eq(refmodel_alloc_vec_check(&t->m, &req, want, max_out, rc, out, rc ? 0 : n), 0,
		     "seed %" PRIu64 " op %d: %s", t->seed, t->op, t->m.err);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (t->next < MAX_EXT)
			t->ext[t->next++] = out[i];
		else
			same(t, "free", bga_free(t->vol, out[i].start, out[i].len),
			     refmodel_free(&t->m, out[i].start, out[i].len));
	}
}

/* Store, and go on with the volume loaded lazily: its chunks unread
 * until a call touches them (the model as a load gives it). */
static void op_reload(struct run *t)
{
	for (int i = 0; i < HANDLES; i++)
		bga_rsv_close(t->rsv[i]);
	cr_assert_eq(bga_store(t->vol, &t->io), 0);
	bga_destroy(t->vol);
	cr_assert_eq(bga_load(&t->io, NULL, &t->vol), 0);
	refmodel_as_loaded(&t->m);
	same(t, "free_exact", (int)(bga_free_exact(t->vol) != refmodel_free_count(&t->m)), 0);
	for (int i = 0; i < HANDLES; i++)
		cr_assert_eq(bga_rsv_open(t->vol, &t->rsv[i]), 0);
}

/* Free (now or deferred) a piece of an allocated extent. */
static void op_free(struct run *t, bool deferred)
{
	struct rng *r = &t->r;
	if (t->next == 0)
		return;
	size_t k = below(r, t->next);
	uint64_t start = t->ext[k].start, len = t->ext[k].len;
	if (len > 1 && below(r, 2)) { /* a head: the rest stays allocated */
		len = 1 + below(r, len - 1);
		t->ext[k].start += len;
		t->ext[k].len -= len;
	} else {
		t->ext[k] = t->ext[--t->next];
	}
	if (deferred && t->next > 0 && below(r, 3) == 0) {
		op_free_deferred_vec(t, start, len);
	} else if (deferred) {
		uint64_t txn = t->txn + 1 + below(r, 2);
		same(t, "free_deferred", bga_free_deferred(t->vol, start, len, txn),
		     refmodel_free_deferred(&t->m, start, len, txn));
	} else {
		same(t, "free", bga_free(t->vol, start, len), refmodel_free(&t->m, start, len));
	}
}

static void one_seed(uint64_t seed, bool whole)
{
	struct run t = {.r = {seed * 0x9e3779b97f4a7c15u + 1}, .seed = seed, .whole = whole};
	struct rng *r = &t.r;
	uint32_t bpg = 64 << below(r, 2);
	bga_config_init(&t.cfg, bpg * (1 + below(r, 4)) - below(r, 2) * (bpg / 2));
	t.cfg.blocks_per_group = bpg;
	t.cfg.first_data_block = below(r, 3) == 0 ? below(r, 8) : 0;
	t.cfg.rsv_max = 4 + (uint32_t)below(r, bpg);
	t.cfg.rsv_default = 1 + (uint32_t)below(r, t.cfg.rsv_max);
	bool full = seed % 4 == 3; /* BGA_START_FULL, its free list handed in */
	if (full)
		t.cfg.flags |= BGA_START_FULL;
	if (seed % 5 == 4)
		t.cfg.stripe = 4 << below(r, 3);
	memio_init(&t.img, &t.io);
	cr_assert_eq(bga_create(&t.cfg, &t.vol), 0);
	cr_assert_eq(refmodel_init(&t.m, &t.cfg), 0);
	t.m.window_blocks = refmodel_group_window_blocks;
	t.m.window_ctx = &t.vol;
	for (uint64_t b = t.cfg.first_data_block; full && b < t.cfg.nblocks; b += 1 + below(r, 8)) {
		uint64_t len = 1 + below(r, 16);
		len = len < t.cfg.nblocks - b ? len : t.cfg.nblocks - b;
		same(&t, "free", bga_free(t.vol, b, len), refmodel_free(&t.m, b, len));
		b += len;
	}
	for (int i = 0; i < HANDLES; i++) {
		cr_assert_eq(bga_rsv_open(t.vol, &t.rsv[i]), 0);
		cr_assert_eq(bga_rsv_set_size(t.rsv[i], 1 + (uint32_t)below(r, t.cfg.rsv_max)), 0);
	}
	for (t.op = 0; t.op < OPS; t.op++) {
		/* allocations outnumber frees until the volume is nearly full,
		 * and reservations take much of what is left */
		uint64_t free = refmodel_free_count(&t.m), pick = below(r, 20);
		if (t.op % 500 == 250) {
			op_reload(&t);
		} else if (pick < 2) {
			op_alloc_vec(&t);
		} else if (pick < 9 || (pick < 12 && free > t.cfg.nblocks / 8)) {
			op_alloc(&t);
		} else if (pick < 13) {
			op_free(&t, false);
		} else if (pick < 16) {
			op_free(&t, true);
		} else if (pick == 16) {
			uint64_t txn = t.txn + below(r, 2);
			same(&t, "commit", bga_commit(t.vol, txn ? txn : 1), refmodel_commit(&t.m, txn ? txn : 1));
			t.txn = t.m.last_txn;
		} else if (pick < 19) {
			uint64_t n = 1 + below(r, 16);
			same(&t, "reserve", bga_reserve(t.vol, n), refmodel_reserve(&t.m, n));
		} else if (t.m.reserved) {
			uint64_t n = 1 + below(r, t.m.reserved);
			same(&t, "unreserve", bga_unreserve(t.vol, n), refmodel_unreserve(&t.m, n));
		}
		if (t.op % 64 == 0 || t.op == OPS - 1) {
			cr_assert_eq(refmodel_compare(&t.m, t.vol), 0, "seed %" PRIu64 " op %d: %s", seed, t.op,
				     t.m.err);
			cr_assert_eq(refmodel_compare_walks(&t.m, t.vol), 0, "seed %" PRIu64 " op %d: %s", seed,
				     t.op, t.m.err);
		}
	}
	for (int i = 0; i < HANDLES; i++)
		bga_rsv_close(t.rsv[i]);
	cr_assert_eq(refmodel_compare(&t.m, t.vol), 0, "seed %" PRIu64 ": %s", seed, t.m.err);
	if (whole && t.cfg.stripe == 0)
		cr_assert_gt(t.judged, 20, "seed %" PRIu64 ": the rule judged only %d requests", seed, t.judged);
	refmodel_fini(&t.m);
	bga_destroy(t.vol);
	memio_free(&t.img);
}

ParameterizedTestParameters(exact_model, every_allocation)
{
	static uint64_t seeds[SEEDS];
	for (size_t i = 0; i < SEEDS; i++)
		seeds[i] = i + 1;
	return cr_make_param_array(uint64_t, seeds, SEEDS);
}

ParameterizedTest(uint64_t *seed, exact_model, every_allocation)
{
	pin_to_one_cpu();
	one_seed(*seed, false);
}

/* bga_alloc's one extent of max_len where one run holds it (BGA_WHOLE,
 * aligned requests), judged exactly where no window holds blocks. */
ParameterizedTestParameters(exact_model, whole_rule)
{
	static uint64_t seeds[SEEDS / 4];
	for (size_t i = 0; i < SEEDS / 4; i++)
		seeds[i] = 1000 + i;
	return cr_make_param_array(uint64_t, seeds, SEEDS / 4);
}

ParameterizedTest(uint64_t *seed, exact_model, whole_rule)
{
	pin_to_one_cpu();
	one_seed(*seed, true);
}
