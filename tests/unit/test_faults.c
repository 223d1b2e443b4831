/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Allocation failure, everywhere it can happen: each operation runs once
 * per k = 1, 2, ... with the k-th allocator call failing, until a run
 * makes fewer than k calls.  A run that fails must return -ENOMEM (or the
 * operation's own documented error), leave the volume byte-for-byte as it
 * was (bga__snapshot), counts and bga_check included, and keep nothing
 * allocated once the volume is destroyed.
 *
 * This file: bga_create and the primitives' constructors, every operation
 * on a volume (the ops[] table), and the CPU-id source's last resort when
 * neither rseq nor sched_getcpu answers.  Persistence, lazily read chunks
 * and window booking are in test_faults_persist.c.
 *
 * The allocator is wrapped at link time for the fault tests only
 * (faultwrap.h, and bga_fault_test in tests/CMakeLists.txt).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <bgalloc.h>
#include <bgalloc/counter.h>
#include <bgalloc/locktab.h>

#include "faultwrap.h"
#include "testutil.h"

#include "cpu.h"
#include "types.h"
#include "snapshot.h"

/* ---- bga_create and the primitives' constructors ---- */

static void create_every_k(const struct bga_config *cfg, const char *what)
{
	for (long k = 1;; k++) {
		struct bga_volume *sentinel = (struct bga_volume *)&k, *vol = sentinel;
		fault_track();
		fault_arm(k);
		int rc = bga_create(cfg, &vol);
		long calls = fault_disarm();
		if (rc == 0) {
			assert_clean(vol);
			bga_destroy(vol);
		} else {
			cr_assert_eq(rc, -ENOMEM, "%s, k=%ld: %d", what, k, rc);
			cr_assert_eq(vol, sentinel, "%s, k=%ld: a failed create wrote *out", what, k);
		}
		fault_untrack(what, k);
		if (calls < k) {
			cr_assert_eq(rc, 0);
			cr_assert_gt(k, 2, "%s: create allocates", what);
			return;
		}
	}
}

Test(faults, create_cleans_up_a_half_built_volume)
{
	struct bga_config cfg;
	bga_config_init(&cfg, 3 * TEST_CHUNK_GROUPS * 64 + 100); /* a short last group in chunk 3 */
	cfg.blocks_per_group = 64;
	cfg.first_data_block = 7; /* chunk 0 built at create as well */
	create_every_k(&cfg, "default");
	cfg.flags = BGA_ATOMIC_COUNTERS | BGA_GLOBAL_LOCK;
	create_every_k(&cfg, "baseline");
	cfg.flags = 0;
	cfg.lock_kind = BGA_LOCK_MCS;
	create_every_k(&cfg, "mcs");
}

Test(faults, counter_and_locktab_create)
{
	for (long k = 1;; k++) {
		struct bga_counter *c = NULL;
		fault_track();
		fault_arm(k);
		int rc = bga_counter_create(&c, 5, 0, BGA_COUNTER_PERCPU);
		long calls = fault_disarm();
		if (rc == 0) {
			cr_assert_eq(bga_counter_sum(c), 5);
			bga_counter_destroy(c);
		} else {
			cr_assert_eq(rc, -ENOMEM);
		}
		fault_untrack("counter", k);
		if (calls < k)
			break;
	}
	for (uint32_t kind = BGA_LOCK_FAS; kind <= BGA_LOCK_MUTEX; kind++) {
		for (long k = 1;; k++) {
			struct bga_locktab *t = NULL;
			fault_track();
			fault_arm(k);
			int rc = bga_locktab_create(&t, 8, (enum bga_lock_kind)kind);
			long calls = fault_disarm();
			if (rc == 0) {
				bga_locktab_lock(t, 3);
				bga_locktab_unlock(t, 3);
				bga_locktab_destroy(t);
			} else {
				cr_assert_eq(rc, -ENOMEM);
			}
			fault_untrack("locktab", k);
			if (calls < k)
				break;
		}
	}
}

/* ---- operations on a volume ---- */

/* 2 chunks of BPG-block groups, and a short last group in a third. */
#define NBLOCKS (2 * CHUNK_BLOCKS + 100)

struct fx {
	struct bga_volume *vol;
	struct bga_rsv *rsv;
	uint64_t txn;
	int cb_calls;
	uint64_t arg;
};

static void fx_plain(struct fx *f)
{
	struct bga_config cfg;
	bga_config_init(&cfg, NBLOCKS);
	cfg.blocks_per_group = BPG;
	cfg.rsv_max = 64;
	cr_assert_eq(bga_create(&cfg, &f->vol), 0);
}

/* Whole groups 100..139 and the 16 around chunk 1's start allocated,
 * group 5 wholly allocated, a few pieces here and there, a window open. */
static void fx_used(struct fx *f)
{
	fx_plain(f);
	for (uint64_t g = 100; g < 140; g++)
		alloc_exact(f->vol, g * BPG, BPG);
	for (uint64_t g = TEST_CHUNK_GROUPS - 6; g < TEST_CHUNK_GROUPS + 10; g++)
		alloc_exact(f->vol, g * BPG, BPG);
	alloc_exact(f->vol, 5 * BPG, BPG);
	alloc_exact(f->vol, 7 * BPG + 3, 9);
	alloc_exact(f->vol, 9 * BPG + 60, 4); /* a run across groups 9 and 10 */
	alloc_exact(f->vol, 10 * BPG, 4);
	cr_assert_eq(bga_rsv_open(f->vol, &f->rsv), 0);
	/* a window linked (the snapshots then hold one) */
	struct bga_request req = {.goal = 20 * BPG, .min_len = 1, .max_len = 1, .rsv = f->rsv};
	struct bga_extent e, w;
	cr_assert_eq(bga_alloc(f->vol, &req, &e), 0);
	cr_assert_eq(bga_rsv_window(f->rsv, &w), 0);
	cr_assert_gt(w.len, 0);
}

/* fx_used, and pending deferred frees in several groups and chunks. */
static void fx_pending(struct fx *f)
{
	fx_used(f);
	cr_assert_eq(bga_free_deferred(f->vol, 5 * BPG + 1, 3, 2), 0);
	cr_assert_eq(bga_free_deferred(f->vol, 101 * BPG, 3 * BPG, 2), 0);
	cr_assert_eq(bga_free_deferred(f->vol, (TEST_CHUNK_GROUPS - 1) * BPG + 10, 2 * BPG, 3), 0);
	cr_assert_eq(bga_free_deferred(f->vol, 7 * BPG + 4, 1, 4), 0);
}

/* Every block allocated, some waiting on a commit (so -EAGAIN). */
static void fx_full_pending(struct fx *f)
{
	f->vol = make_volume_with(8 * BPG, BPG, 0, 0, 0);
	for (uint64_t g = 0; g < 8; g++)
		alloc_exact(f->vol, g * BPG, BPG);
	cr_assert_eq(bga_free_deferred(f->vol, 3 * BPG + 10, 6, 1), 0);
}

/* One chunk of 200 groups, pieces allocated and pending: for the
 * operations that allocate per group, where k runs into hundreds. */
static void fx_small(struct fx *f)
{
	f->vol = make_volume_with(200 * BPG, BPG, 0, 0, 0);
	for (uint64_t g = 10; g < 200; g += 7)
		alloc_exact(f->vol, g * BPG + g % 50, 5);
	alloc_exact(f->vol, 3 * BPG, BPG);
	cr_assert_eq(bga_free_deferred(f->vol, 3 * BPG + 8, 8, 1), 0);
	cr_assert_eq(bga_free_deferred(f->vol, 17 * BPG + 17, 2, 2), 0);
}

static int count_cb(void *ctx, uint64_t start, uint64_t len)
{
	(void)start;
	(void)len;
	((struct fx *)ctx)->cb_calls++;
	return 0;
}

struct op {
	const char *name;
	void (*setup)(struct fx *f);
	int (*run)(struct fx *f);
	int fail_rc; /* besides -ENOMEM, an error the run may give when memory fails (0: none) */
	int want;    /* the result without faults */
	bool walk;   /* stops part way (trim): the free blocks, not every byte, stay as they were */
};

static int op_alloc(struct fx *f, uint64_t goal, uint64_t min, uint64_t max, uint32_t flags, struct bga_rsv *rsv)
{
	struct bga_request req = {.goal = goal, .min_len = min, .max_len = max, .rsv = rsv, .flags = flags};
	struct bga_extent e;
	return bga_alloc(f->vol, &req, &e);
}

static int run_alloc_untouched_chunk(struct fx *f) { return op_alloc(f, CHUNK_BLOCKS + 5000, 4, 4, BGA_EXACT_GOAL, NULL); }
static int run_alloc_goal_untouched(struct fx *f) { return op_alloc(f, CHUNK_BLOCKS + 5000, 4, 4, 0, NULL); }
static int run_trim_untouched(struct fx *f) { return bga_trim(f->vol, CHUNK_BLOCKS + 7, CHUNK_BLOCKS + 9 * BPG, 1, count_cb, f, NULL); }
static int run_alloc_no_goal(struct fx *f) { return op_alloc(f, BGA_NO_GOAL, 1, 100, 0, NULL); }
static int run_alloc_goal(struct fx *f) { return op_alloc(f, CHUNK_BLOCKS + 77, 2, 30, 0, NULL); }
static int run_alloc_window(struct fx *f) { return op_alloc(f, CHUNK_BLOCKS + 300, 1, 3, 0, f->rsv); }
static int run_alloc_window_no_goal(struct fx *f) { return op_alloc(f, BGA_NO_GOAL, 1, 3, 0, f->rsv); }
static int run_alloc_would_fit(struct fx *f) { return op_alloc(f, BGA_NO_GOAL, 4, 6, 0, NULL); }
static int run_alloc_would_fit_goal(struct fx *f) { return op_alloc(f, 3 * BPG + 10, 6, 6, BGA_EXACT_GOAL, NULL); }
static int run_free_in_used_group(struct fx *f) { return bga_free(f->vol, 5 * BPG + 3, 1); }
static int run_free_40_groups(struct fx *f) { return bga_free(f->vol, 100 * BPG, 40 * BPG); }
static int run_free_across_chunks(struct fx *f) { return bga_free(f->vol, (TEST_CHUNK_GROUPS - 6) * BPG + 1, 16 * BPG - 2); }
static int run_free_crossing_groups(struct fx *f) { return bga_free(f->vol, 9 * BPG + 60, 8); }
static int run_fdef_in_used_group(struct fx *f) { return bga_free_deferred(f->vol, 5 * BPG + 3, 1, 9); }
static int run_fdef_40_groups(struct fx *f) { return bga_free_deferred(f->vol, 100 * BPG, 40 * BPG, 9); }
static int run_fdef_across_chunks(struct fx *f) { return bga_free_deferred(f->vol, (TEST_CHUNK_GROUPS - 6) * BPG, 16 * BPG, 9); }
static int run_commit_all(struct fx *f) { return bga_commit(f->vol, 10); }
static int run_commit_some(struct fx *f) { return bga_commit(f->vol, 3); }
static int run_grow_in_chunk(struct fx *f) { return bga_grow(f->vol, NBLOCKS + 1000); }
static int run_grow_new_chunks(struct fx *f) { return bga_grow(f->vol, 5 * CHUNK_BLOCKS + 10); }
static int run_grow_chunk_edge(struct fx *f) { return bga_grow(f->vol, 3 * CHUNK_BLOCKS); }
/* Trim allocates per group it claims from (a run list, a bitmap for a
 * wholly free group). */
static int run_trim(struct fx *f) { return bga_trim(f->vol, 0, 200 * BPG, 1, count_cb, f, NULL); }
static int run_trim_part(struct fx *f) { return bga_trim(f->vol, (TEST_CHUNK_GROUPS - 11) * BPG, (TEST_CHUNK_GROUPS + 14) * BPG + 7, 8, count_cb, f, NULL); }
static int run_foreach(struct fx *f) { return bga_foreach_free(f->vol, 0, NBLOCKS, 1, count_cb, f); }
static int run_stats(struct fx *f)
{
	struct bga_stats st;
	return bga_stats(f->vol, &st);
}
static int run_rsv_open(struct fx *f)
{
	struct bga_rsv *r = NULL;
	int rc = bga_rsv_open(f->vol, &r);
	if (rc == 0)
		bga_rsv_close(r);
	return rc;
}
static int run_check(struct fx *f) { return bga_check(f->vol, NULL); }

/* A BGA_START_FULL volume of 8 groups with free runs of 10, 10, 15 and
 * 15 blocks (groups 0, 0, 1, 2): all or nothing of 30 in two extents
 * fits only in the two runs of 15, which a greedy carve from group 0
 * misses: its pieces are given back (allocating nothing), and the fit
 * (vec_fit.c) takes the runs of 15. */
static void fx_runs(struct fx *f)
{
	f->vol = make_volume_with(8 * BPG, BPG, 0, BGA_START_FULL, 0);
	cr_assert_eq(bga_free(f->vol, 0, 10), 0);
	cr_assert_eq(bga_free(f->vol, 20, 10), 0);
	cr_assert_eq(bga_free(f->vol, BPG, 15), 0);
	cr_assert_eq(bga_free(f->vol, 2 * BPG, 15), 0);
}
static int op_vec(struct fx *f, uint64_t min, uint64_t max, uint64_t want, size_t max_out)
{
	struct bga_request req = {.goal = 0, .min_len = min, .max_len = max, .flags = BGA_ALL_OR_NOTHING};
	struct bga_extent out[4];
	size_t n = 0;
	int rc = bga_alloc_vec(f->vol, &req, want, out, max_out, &n);
	uint64_t got = 0;
	for (size_t i = 0; i < n; i++)
		got += out[i].len;
	cr_assert(rc != 0 ? n == 0 : got == want && n <= max_out, "alloc_vec: %d, %zu extents of %llu blocks", rc, n,
		  (unsigned long long)got);
	return rc;
}
static int run_vec_fit(struct fx *f) { return op_vec(f, 1, BPG, 30, 2); }
/* fx_full_pending: 6 blocks pending in group 3, nothing free: after the
 * commit they hold 6 as extents of 2 .. 4, two at most (a step of 4 and a
 * rest of 2: the fit's rests are ordered). */
static int run_vec_after_commit(struct fx *f) { return op_vec(f, 2, 4, 6, 2); }
/* Claims that give wholly free groups a bitmap (groups 30 and 32, in
 * part), and that read an untouched chunk's descriptors first. */
static int run_claim_groups(struct fx *f) { return bga_claim(f->vol, 30 * BPG + 5, 2 * BPG); }
static int run_claim_untouched(struct fx *f) { return bga_claim(f->vol, CHUNK_BLOCKS + 3 * BPG + 1, 10); }
static int run_free_vec(struct fx *f)
{
	const struct bga_extent e[] = {{100 * BPG, 5}, {5 * BPG + 2, 3}, {TEST_CHUNK_GROUPS * BPG, BPG}};
	return bga_free_vec(f->vol, e, 3);
}
static int run_fdef_vec(struct fx *f)
{
	const struct bga_extent e[] = {{101 * BPG, 5}, {5 * BPG + 9, 3}};
	return bga_free_deferred_vec(f->vol, e, 2, 9);
}
static int used_cb(void *ctx, uint64_t start, uint64_t len, uint32_t flags)
{
	(void)flags;
	return count_cb(ctx, start, len);
}
static int run_foreach_used(struct fx *f) { return bga_foreach_used(f->vol, 0, NBLOCKS, used_cb, f); }
static int run_group_stats(struct fx *f)
{
	struct bga_group_stats st = {.size = sizeof(st)};
	int rc = bga_group_stats(f->vol, 7, &st); /* 9 allocated, one of them pending */
	cr_assert(rc != 0 || st.free_blocks == BPG - 9, "group 7: %llu free", (unsigned long long)st.free_blocks);
	return rc;
}
static int run_longest(struct fx *f)
{
	uint64_t len = 0, g = 0;
	int rc = bga_longest_free_sum(f->vol, &len, &g);
	cr_assert(rc != 0 || len == BPG, "longest %llu", (unsigned long long)len);
	return rc;
}

static const struct op ops[] = {
	{"alloc in an untouched chunk", fx_plain, run_alloc_untouched_chunk, 0, 0, false},
	{"alloc with a goal in an untouched chunk", fx_plain, run_alloc_goal_untouched, 0, 0, false},
	{"trim of an untouched chunk", fx_plain, run_trim_untouched, 0, 0, true},
	{"alloc without a goal", fx_used, run_alloc_no_goal, 0, 0, false},
	{"alloc with a goal", fx_used, run_alloc_goal, 0, 0, false},
	{"alloc through a window", fx_used, run_alloc_window, 0, 0, false},
	{"alloc through a window, no goal", fx_used, run_alloc_window_no_goal, 0, 0, false},
	{"alloc that waits on a commit", fx_full_pending, run_alloc_would_fit, -ENOSPC, -EAGAIN, false},
	{"exact alloc that waits on a commit", fx_full_pending, run_alloc_would_fit_goal, -ENOSPC, -EAGAIN, false},
	{"free in a wholly used group", fx_used, run_free_in_used_group, 0, 0, false},
	{"free over 40 groups", fx_used, run_free_40_groups, 0, 0, false},
	{"free across chunks", fx_used, run_free_across_chunks, 0, 0, false},
	{"free across two groups", fx_used, run_free_crossing_groups, 0, 0, false},
	{"deferred free in a wholly used group", fx_used, run_fdef_in_used_group, 0, 0, false},
	{"deferred free over 40 groups", fx_used, run_fdef_40_groups, 0, 0, false},
	{"deferred free across chunks", fx_used, run_fdef_across_chunks, 0, 0, false},
	{"commit of every record", fx_pending, run_commit_all, 0, 0, false},
	{"commit of some records", fx_pending, run_commit_some, 0, 0, false},
	{"grow inside the last chunk", fx_used, run_grow_in_chunk, 0, 0, false},
	{"grow into new chunks", fx_used, run_grow_new_chunks, 0, 0, false},
	{"grow to a chunk's edge", fx_used, run_grow_chunk_edge, 0, 0, false},
	{"trim", fx_small, run_trim, 0, 0, true},
	{"trim across chunks", fx_used, run_trim_part, 0, 0, true},
	{"foreach", fx_pending, run_foreach, 0, 0, false},
	{"stats", fx_pending, run_stats, 0, 0, false},
	{"rsv_open", fx_used, run_rsv_open, 0, 0, false},
	{"check", fx_pending, run_check, 0, 0, false},
	{"all or nothing vec that the fit serves", fx_runs, run_vec_fit, 0, 0, false},
	{"all or nothing vec that waits on a commit", fx_full_pending, run_vec_after_commit, 0, -EAGAIN, false},
	{"claim across wholly free groups", fx_used, run_claim_groups, 0, 0, false},
	{"claim in an untouched chunk", fx_plain, run_claim_untouched, 0, 0, false},
	{"free_vec of three extents", fx_used, run_free_vec, 0, 0, false},
	{"free_deferred_vec", fx_used, run_fdef_vec, 0, 0, false},
	{"foreach_used", fx_pending, run_foreach_used, 0, 0, false},
	{"group_stats", fx_pending, run_group_stats, 0, 0, false},
	{"longest_free_sum", fx_pending, run_longest, 0, 0, false},
};

static void teardown(struct fx *f)
{
	bga_rsv_close(f->rsv);
	bga_destroy(f->vol);
}

/* The volume's free extents, as bga_foreach_free gives them. */
struct extents {
	struct bga_extent *e;
	size_t n, cap;
};

static int collect(void *ctx, uint64_t start, uint64_t len)
{
	struct extents *x = ctx;
	if (x->n == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 64;
		x->e = realloc(x->e, x->cap * sizeof(*x->e));
		cr_assert_not_null(x->e);
	}
	x->e[x->n++] = (struct bga_extent){start, len};
	return 0;
}

static struct extents free_extents(struct bga_volume *vol)
{
	struct extents x = {NULL, 0, 0};
	struct bga_config cfg;
	cr_assert_eq(bga_volume_config(vol, &cfg), 0);
	cr_assert_eq(bga_foreach_free(vol, 0, cfg.nblocks, 1, collect, &x), 0);
	return x;
}

static void op_every_k(const struct op *op)
{
	for (long k = 1;; k++) {
		struct fx f = {0};
		void *before, *after;
		size_t blen, alen;
		fault_track();
		op->setup(&f);
		cr_assert_eq(bga__snapshot(f.vol, &before, &blen), 0);
		struct extents ext0 = free_extents(f.vol);
		uint64_t free0 = bga_free_exact(f.vol), res0 = bga_reserved(f.vol);
		fault_arm(k);
		int rc = op->run(&f);
		long calls = fault_disarm();
		if (calls < k)
			cr_assert_eq(rc, op->want, "%s: %d without a fault", op->name, rc);
		else if (rc != op->want)
			cr_assert(rc == -ENOMEM || (op->fail_rc && rc == op->fail_rc),
				  "%s, k=%ld: %d (%s) when memory ran out", op->name, k, rc, bga_strerror(rc));
		if (rc != 0) {
			cr_assert_eq(bga__snapshot(f.vol, &after, &alen), 0);
			cr_assert(op->walk || (alen == blen && memcmp(before, after, blen) == 0),
				  "%s, k=%ld: a failed call (%d) changed the volume", op->name, k, rc);
			free(after);
			struct extents ext1 = free_extents(f.vol);
			cr_assert(ext1.n == ext0.n && (ext0.n == 0 || memcmp(ext0.e, ext1.e, ext0.n * sizeof(*ext0.e)) == 0),
				  "%s, k=%ld: a failed call (%d) changed the free extents", op->name, k, rc);
			free(ext1.e);
			cr_assert_eq(bga_free_exact(f.vol), free0, "%s, k=%ld", op->name, k);
			cr_assert_eq(bga_reserved(f.vol), res0, "%s, k=%ld", op->name, k);
		}
		free(before);
		free(ext0.e);
		struct bga_check_report r;
		cr_assert_eq(bga_check(f.vol, &r), 0, "%s, k=%ld: %s", op->name, k, r.message);
		teardown(&f);
		fault_untrack(op->name, k);
		if (calls < k) {
			cr_log_info("%s: failed each of its %ld allocations in turn", op->name, k - 1);
			return;
		}
	}
}

ParameterizedTestParameters(faults, every_k)
{
	static size_t rows[sizeof(ops) / sizeof(ops[0])];
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		rows[i] = i;
	return cr_make_param_array(size_t, rows, sizeof(ops) / sizeof(ops[0]));
}

ParameterizedTest(size_t *row, faults, every_k) { op_every_k(&ops[*row]); }

static uint64_t deferred_blocks(struct bga_volume *vol)
{
	struct bga_stats st;
	cr_assert_eq(bga_stats(vol, &st), 0);
	return st.deferred_blocks;
}

/*
 * bga_commit's contract: a commit needs no memory.  Every record
 * fx_pending makes is released by a commit while each allocator call in
 * turn fails, the part of wholly used group 5 included, whose release
 * needs a bitmap that bga_free_deferred made; committing the same txn
 * again changes nothing.  No block is lost or freed twice.
 */
Test(faults, commit_releases_every_record_without_memory)
{
	for (long k = 1;; k++) {
		struct fx f = {0};
		fault_track();
		fx_pending(&f);
		uint64_t free0 = bga_free_exact(f.vol), pending0 = deferred_blocks(f.vol);
		cr_assert_gt(pending0, 0);
		fault_arm(k);
		int rc = bga_commit(f.vol, 10);
		long calls = fault_disarm();
		cr_assert_eq(rc, 0, "k=%ld: bga_commit returned %d (%s)", k, rc, bga_strerror(rc));
		cr_assert_eq(deferred_blocks(f.vol), 0, "k=%ld: %llu blocks still wait on a commit", k,
			     (unsigned long long)deferred_blocks(f.vol));
		cr_assert_eq(bga_free_exact(f.vol), free0 + pending0, "k=%ld", k);
		cr_assert_eq(bga_commit(f.vol, 10), 0, "k=%ld: the same txn again", k);
		cr_assert_eq(bga_free_exact(f.vol), free0 + pending0, "k=%ld", k);
		struct bga_check_report r;
		cr_assert_eq(bga_check(f.vol, &r), 0, "k=%ld: %s", k, r.message);
		teardown(&f);
		fault_untrack("commit", k);
		if (calls < k)
			break;
	}
}

/* ---- the CPU-id hash fallback (cpu.c) ---- */

/* Take this thread's rseq area away, as a seccomp filter or valgrind
 * would leave it: the kernel marks cpu_id uninitialised (negative).
 * False when glibc registered one and it could not be unregistered. */
static bool rseq_unregister(void)
{
	if (__rseq_size == 0)
		return true;
	void *area = (char *)__builtin_thread_pointer() + __rseq_offset;
	/* glibc registers its whole area (32 bytes); __rseq_size may say less. */
	static const unsigned lens[] = {32, 0};
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		unsigned len = lens[i] ? lens[i] : __rseq_size;
		if (syscall(SYS_rseq, area, len, RSEQ_FLAG_UNREGISTER, RSEQ_SIG) == 0)
			return true;
	}
	return false;
}

struct hash_thread {
	bool unregistered;
	char source[16];
	unsigned cpu, again;
	int rc, failures;
	int64_t sum;
	uint64_t free_after;
};

static void *hash_worker(void *arg)
{
	struct hash_thread *h = arg;
	h->unregistered = rseq_unregister();
	if (!h->unregistered)
		return NULL;
	fault_getcpu_fails = true;
	snprintf(h->source, sizeof(h->source), "%s", bga__cpu_source());
	h->cpu = bga__cpu_current();
	h->again = bga__cpu_current();
	/* The counter and the volume on this thread's hashed slot. */
	struct bga_counter *c;
	h->rc = bga_counter_create(&c, 0, 4, BGA_COUNTER_PERCPU);
	if (h->rc)
		return NULL;
	for (int i = 0; i < 1000; i++)
		bga_counter_add(c, i % 7);
	h->sum = bga_counter_sum(c);
	bga_counter_destroy(c);
	struct bga_config cfg;
	struct bga_volume *vol;
	bga_config_init(&cfg, 16 * BPG);
	cfg.blocks_per_group = BPG;
	if ((h->rc = bga_create(&cfg, &vol)) != 0)
		return NULL;
	for (int i = 0; i < 500; i++) {
		struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = 1, .max_len = 5};
		struct bga_extent e;
		if (bga_alloc(vol, &req, &e) != 0 || bga_free(vol, e.start, e.len) != 0)
			h->failures++;
	}
	h->failures += bga_check(vol, NULL) != 0;
	h->free_after = bga_free_exact(vol);
	bga_destroy(vol);
	return NULL;
}

Test(cpu, hash_fallback_when_rseq_and_getcpu_fail)
{
	struct hash_thread h[3];
	pthread_t t[3];
	memset(h, 0, sizeof(h));
	for (int i = 0; i < 3; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, hash_worker, &h[i]), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	if (!h[0].unregistered)
		cr_skip_test("this kernel would not unregister glibc's rseq area");
	for (int i = 0; i < 3; i++) {
		cr_assert_str_eq(h[i].source, "hash", "thread %d: neither rseq nor getcpu, yet source %s", i,
				 h[i].source);
		cr_assert_lt(h[i].cpu, bga__cpu_count(), "the hash stays in range");
		cr_assert_eq(h[i].cpu, h[i].again, "a thread keeps its hashed CPU");
		cr_assert_eq(h[i].rc, 0);
		cr_assert_eq(h[i].sum, 2997, "every add counted");
		cr_assert_eq(h[i].failures, 0);
		cr_assert_eq(h[i].free_after, 16 * BPG);
	}
	/* And this thread, untouched, still has a real source. */
	cr_assert_str_neq(bga__cpu_source(), "hash");
}
