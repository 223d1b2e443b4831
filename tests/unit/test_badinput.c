/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bad input, function by function: every public call of <bgalloc.h> with
 * each class of bad argument must return the errno its contract documents,
 * exactly, and leave the volume byte-for-byte as it was (bga__snapshot()).
 * The cases form one table (BADINPUT_CASES) so a missing class is easy to
 * spot; Criterion runs each row as its own test.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <bgalloc.h>
#include <bgalloc/locktab.h>

#include "memio.h"
#include "snapshot.h"

/*
 * Fixtures, each a volume in a known state built through the public API:
 *
 * FX_MAIN  1000 blocks, 128 per group, first_data_block 2, rsv_max 64.
 *          [10, 18) and [200, 216) allocated; [200, 204) waiting on a
 *          deferred free of txn 5; txn 3 committed; 10 blocks reserved;
 *          one window handle open.
 * FX_FULL  128 blocks, 64 per group, all allocated; [8, 16) waiting on a
 *          deferred free of txn 2; txn 1 committed.
 * FX_PROMISED 256 blocks, 128 per group; [0, 200) allocated and the
 *          other 56 blocks promised by bga_reserve(56).
 * FX_JOIN  128 blocks, 64 per group; only [64, 96) free, and [96, 100)
 *          waiting on a deferred free of txn 1: after the commit they join
 *          into a run of 36 although only 4 blocks are pending.
 */
enum fixture { FX_MAIN, FX_FULL, FX_PROMISED, FX_JOIN };

#define MAIN_NBLOCKS 1000
#define MAIN_BPG 128
#define MAIN_FDB 2
#define MAIN_RSV_MAX 64
#define MAIN_RESERVED 10
#define MAIN_LAST_TXN 3

struct bctx {
	struct bga_volume *vol;
	struct bga_rsv *rsv;
	struct bga_config cfg;
	struct bga_extent ext;
	int cb_calls;
};

static int count_cb(void *ctx, uint64_t start, uint64_t len)
{
	(void)start;
	(void)len;
	((struct bctx *)ctx)->cb_calls++;
	return 0;
}

static int alloc_req(struct bctx *c, uint64_t goal, uint64_t min_len, uint64_t max_len, uint32_t flags,
		     struct bga_rsv *rsv)
{
	struct bga_request req = { .goal = goal, .min_len = min_len, .max_len = max_len, .rsv = rsv, .flags = flags };

	return bga_alloc(c->vol, &req, &c->ext);
}

static int alloc_aligned(struct bctx *c, uint64_t goal, uint64_t min_len, uint64_t max_len, uint64_t align,
			 uint32_t flags)
{
	struct bga_request req = { .goal = goal, .min_len = min_len, .max_len = max_len, .flags = flags, .align = align };

	return bga_alloc(c->vol, &req, &c->ext);
}

/* bga_alloc_vec; null selects an argument to pass as NULL (1 req, 2 out,
 * 3 n_out).  *n_out must be 0 after any error. */
static int alloc_vec(struct bctx *c, uint64_t goal, uint64_t min_len, uint64_t max_len, uint64_t align,
		     uint32_t flags, uint64_t want, size_t max_out, int null)
{
	struct bga_request req = { .goal = goal, .min_len = min_len, .max_len = max_len, .flags = flags, .align = align };
	struct bga_extent out[4];
	size_t n = 77;
	int rc = bga_alloc_vec(c->vol, null == 1 ? NULL : &req, want, null == 2 ? NULL : out, max_out,
			       null == 3 ? NULL : &n);
	if (rc != 0 && null != 3)
		cr_expect_eq(n, 0, "a failed bga_alloc_vec() left *n_out %zu", n);
	return rc;
}

/* bga_free_vec of two extents (a second of length 0 is passed as n = 1). */
static int free_vec2(struct bctx *c, uint64_t s0, uint64_t l0, uint64_t s1, uint64_t l1)
{
	struct bga_extent v[2] = {{s0, l0}, {s1, l1}};
	return bga_free_vec(c->vol, v, l1 ? 2 : 1);
}

/* bga_free_deferred_vec of two extents (a second of length 0 is passed as n = 1). */
static int fdef_vec2(struct bctx *c, uint64_t s0, uint64_t l0, uint64_t s1, uint64_t l1, uint64_t txn)
{
	struct bga_extent v[2] = {{s0, l0}, {s1, l1}};
	return bga_free_deferred_vec(c->vol, v, l1 ? 2 : 1, txn);
}

static int used_cb(void *ctx, uint64_t start, uint64_t len, uint32_t flags)
{
	(void)start;
	(void)len;
	(void)flags;
	((struct bctx *)ctx)->cb_calls++;
	return 0;
}

/* bga_group_stats with st->size set to size; a refused call must leave
 * *st as it was. */
static int group_stats(struct bctx *c, uint64_t g, uint32_t size)
{
	struct bga_group_stats st;
	memset(&st, 0x77, sizeof(st));
	st.size = size;
	int rc = bga_group_stats(c->vol, g, &st);
	if (rc != 0)
		cr_expect_eq(st.group, 0x7777777777777777ull, "a refused bga_group_stats() wrote *st");
	return rc;
}

/* bga_longest_free_sum; *len must stay put on an error. */
static int longest(struct bctx *c, int null_len)
{
	uint64_t len = 77, group = 77;
	int rc = bga_longest_free_sum(c->vol, null_len ? NULL : &len, &group);
	if (rc != 0)
		cr_expect(len == 77 && group == 77, "a refused bga_longest_free_sum() wrote its results");
	return rc;
}

/* bga_store_tagged with an io whose callback `null` (1 read, 2 write,
 * 3 flush) is NULL: nothing may be written, the tag unchanged. */
static int store_tagged_null_cb(struct bctx *c, int null)
{
	static struct constio empty;
	struct bga_io io = {.ctx = &empty, .read = constio_read, .write = constio_write, .flush = constio_flush};
	if (null == 1)
		io.read = NULL;
	else if (null == 2)
		io.write = NULL;
	else
		io.flush = NULL;
	uint64_t before, after;
	cr_assert_eq(bga_volume_tag(c->vol, &before), 0);
	int rc = bga_store_tagged(c->vol, &io, 99);
	cr_assert_eq(bga_volume_tag(c->vol, &after), 0);
	cr_expect_eq(after, before, "a refused bga_store_tagged() changed the tag");
	return rc;
}

/* bga_create() with one field of a valid config changed; *out must stay put. */
enum cfg_field { CF_NONE, CF_NBLOCKS, CF_BPG, CF_FDB, CF_LOCK_SLOTS, CF_BATCH, CF_RSV_DEFAULT, CF_RSV_MAX, CF_FLAGS,
		 CF_LOCK_KIND, CF_STRIPE };

static int create_with(enum cfg_field field, uint64_t value)
{
	struct bga_config cfg;
	struct bga_volume *sentinel = (struct bga_volume *)&cfg, *out = sentinel;
	int rc;

	/* A valid base (create_valid_base checks it), then one field broken. */
	bga_config_init(&cfg, 4096);
	cfg.blocks_per_group = 256;
	cfg.rsv_max = 64;
	switch (field) {
	case CF_NONE: break;
	case CF_NBLOCKS: cfg.nblocks = value; break;
	case CF_BPG: cfg.blocks_per_group = (uint32_t)value; cfg.rsv_max = 0; cfg.rsv_default = 0; break;
	case CF_FDB: cfg.first_data_block = value; break;
	case CF_LOCK_SLOTS: cfg.lock_slots = (uint32_t)value; break;
	case CF_BATCH: cfg.counter_batch = (int32_t)value; break;
	case CF_RSV_DEFAULT: cfg.rsv_default = (uint32_t)value; break;
	case CF_RSV_MAX: cfg.rsv_max = (uint32_t)value; break;
	case CF_FLAGS: cfg.flags = (uint32_t)value; break;
	case CF_LOCK_KIND: cfg.lock_kind = (uint32_t)value; break;
	case CF_STRIPE: cfg.stripe = (uint32_t)value; break;
	}
	rc = bga_create(&cfg, &out);
	if (rc == 0) {
		bga_destroy(out);
		return rc;
	}
	cr_expect_eq(out, sentinel, "a failed bga_create() wrote *out");
	return rc;
}

static int create_null_out(void)
{
	struct bga_config cfg;

	bga_config_init(&cfg, 4096);
	return bga_create(&cfg, NULL);
}

static int lock_stats(struct bctx *c, uint32_t slot, int null_out)
{
	struct bga_lock_stats ls;

	return bga_lock_stats(c->vol, slot, null_out ? NULL : &ls);
}

static uint32_t lock_slots(struct bctx *c)
{
	struct bga_config cfg;

	cr_assert_eq(bga_volume_config(c->vol, &cfg), 0);
	return cfg.lock_slots;
}

/* An allocation through a window handle opened on another volume. */
static int alloc_foreign_rsv(struct bctx *c)
{
	struct bga_config cfg;
	struct bga_volume *other;
	struct bga_rsv *rsv;
	int rc, rc2;

	bga_config_init(&cfg, MAIN_NBLOCKS);
	cfg.blocks_per_group = MAIN_BPG;
	cr_assert_eq(bga_create(&cfg, &other), 0);
	cr_assert_eq(bga_rsv_open(other, &rsv), 0);
	rc = alloc_req(c, BGA_NO_GOAL, 1, 4, 0, rsv);
	rc2 = alloc_req(c, 300, 1, 4, 0, rsv); /* with a goal too */
	rc = rc == -EINVAL ? rc2 : rc;
	bga_rsv_close(rsv);
	cr_expect_eq(bga_free_exact(other), MAIN_NBLOCKS, "the other volume was touched");
	bga_destroy(other);
	return rc;
}

#define R (c->rsv)
#define V (c->vol)
#define NB MAIN_NBLOCKS
#define NOG BGA_NO_GOAL

/*
 * X(name, fixture, expected, call): `call` is an int expression over
 * `c` (struct bctx *).  Expected values are the contracts' errnos; rows
 * that expect 0 are no-op successes that must not change the state either.
 */
#define BADINPUT_CASES(X)                                                                               \
	/* bga_create: NULL arguments, then each config field out of range */                          \
	X(create_null_cfg, FX_MAIN, -EINVAL, bga_create(NULL, &c->vol))                                  \
	X(create_null_out, FX_MAIN, -EINVAL, create_null_out())                                          \
	X(create_valid_base, FX_MAIN, 0, create_with(CF_NONE, 0))                                        \
	X(create_nblocks_0, FX_MAIN, -EINVAL, create_with(CF_NBLOCKS, 0))                                \
	X(create_nblocks_over_max, FX_MAIN, -EINVAL, create_with(CF_NBLOCKS, BGA_MAX_BLOCKS + 1))        \
	X(create_nblocks_u64_max, FX_MAIN, -EINVAL, create_with(CF_NBLOCKS, UINT64_MAX))                 \
	X(create_bpg_0, FX_MAIN, -EINVAL, create_with(CF_BPG, 0))                                        \
	X(create_bpg_32, FX_MAIN, -EINVAL, create_with(CF_BPG, 32))                                      \
	X(create_bpg_not_multiple_of_64, FX_MAIN, -EINVAL, create_with(CF_BPG, 100))                     \
	X(create_bpg_over_max, FX_MAIN, -EINVAL, create_with(CF_BPG, (1u << 20) + 64))                   \
	X(create_fdb_eq_nblocks, FX_MAIN, -EINVAL, create_with(CF_FDB, 4096))                            \
	X(create_fdb_past_nblocks, FX_MAIN, -EINVAL, create_with(CF_FDB, UINT64_MAX))                    \
	X(create_lock_slots_not_pow2, FX_MAIN, -EINVAL, create_with(CF_LOCK_SLOTS, 3))                   \
	X(create_lock_slots_over_max, FX_MAIN, -EINVAL, create_with(CF_LOCK_SLOTS, 1u << 21))            \
	X(create_batch_negative, FX_MAIN, -EINVAL, create_with(CF_BATCH, (uint64_t)(int64_t)-1))         \
	X(create_batch_int_min, FX_MAIN, -EINVAL, create_with(CF_BATCH, (uint64_t)(int64_t)INT32_MIN))   \
	X(create_batch_over_max, FX_MAIN, -EINVAL, create_with(CF_BATCH, (1u << 24) + 1))                \
	X(create_rsv_default_over_max, FX_MAIN, -EINVAL, create_with(CF_RSV_DEFAULT, 65))              \
	X(create_rsv_max_over_max, FX_MAIN, -EINVAL, create_with(CF_RSV_MAX, (1u << 20) + 1))            \
	X(create_rsv_max_over_bpg_is_fine, FX_MAIN, 0, create_with(CF_RSV_MAX, 257))                     \
	X(create_flags_unknown_bit3, FX_MAIN, -EINVAL, create_with(CF_FLAGS, 1u << 3))                   \
	X(create_start_full_is_fine, FX_MAIN, 0, create_with(CF_FLAGS, BGA_START_FULL))                  \
	X(create_stripe_over_bpg, FX_MAIN, -EINVAL, create_with(CF_STRIPE, 257))                         \
	X(create_stripe_u32_max, FX_MAIN, -EINVAL, create_with(CF_STRIPE, UINT32_MAX))                   \
	X(create_stripe_eq_bpg_is_fine, FX_MAIN, 0, create_with(CF_STRIPE, 256))                         \
	X(create_flags_unknown_bit31, FX_MAIN, -EINVAL, create_with(CF_FLAGS, 1u << 31))                 \
	X(create_lock_kind_past_mutex, FX_MAIN, -EINVAL, create_with(CF_LOCK_KIND, 5))                   \
	X(create_lock_kind_u32_max, FX_MAIN, -EINVAL, create_with(CF_LOCK_KIND, UINT32_MAX))             \
	X(create_fdb_eq_bpg_is_fine, FX_MAIN, 0, create_with(CF_FDB, 256))                               \
	/* bga_alloc: NULL arguments */                                                                 \
	X(alloc_null_vol, FX_MAIN, -EINVAL, bga_alloc(NULL, &(struct bga_request){ .goal = NOG, .min_len = 1, .max_len = 1 }, &c->ext)) \
	X(alloc_null_req, FX_MAIN, -EINVAL, bga_alloc(V, NULL, &c->ext))                                 \
	X(alloc_null_out, FX_MAIN, -EINVAL, bga_alloc(V, &(struct bga_request){ .goal = NOG, .min_len = 1, .max_len = 1 }, NULL)) \
	/* bga_alloc: lengths */                                                                        \
	X(alloc_min_0, FX_MAIN, -EINVAL, alloc_req(c, NOG, 0, 8, 0, NULL))                              \
	X(alloc_min_max_0, FX_MAIN, -EINVAL, alloc_req(c, NOG, 0, 0, 0, NULL))                          \
	X(alloc_min_gt_max, FX_MAIN, -EINVAL, alloc_req(c, NOG, 9, 8, 0, NULL))                         \
	X(alloc_min_huge_gt_max, FX_MAIN, -EINVAL, alloc_req(c, NOG, UINT64_MAX, 1, 0, NULL))           \
	X(alloc_min_gt_max_with_rsv, FX_MAIN, -EINVAL, alloc_req(c, NOG, 9, 8, 0, R))                   \
	X(alloc_rsv_of_another_volume, FX_MAIN, -EINVAL, alloc_foreign_rsv(c))                          \
	/* bga_alloc: goals */                                                                          \
	X(alloc_goal_eq_nblocks, FX_MAIN, -EINVAL, alloc_req(c, NB, 1, 1, 0, NULL))                     \
	X(alloc_goal_past_end, FX_MAIN, -EINVAL, alloc_req(c, NOG - 1, 1, 1, 0, NULL))                  \
	X(alloc_exact_without_goal, FX_MAIN, -EINVAL, alloc_req(c, NOG, 1, 1, BGA_EXACT_GOAL, NULL))    \
	X(alloc_exact_goal_past_end, FX_MAIN, -EINVAL, alloc_req(c, NB + 5, 1, 1, BGA_EXACT_GOAL, NULL)) \
	X(alloc_exact_goal_allocated, FX_MAIN, -ENOSPC, alloc_req(c, 12, 1, 1, BGA_EXACT_GOAL, NULL))   \
	X(alloc_exact_goal_run_too_short, FX_MAIN, -ENOSPC, alloc_req(c, 8, 3, 3, BGA_EXACT_GOAL, NULL)) \
	X(alloc_exact_goal_below_fdb, FX_MAIN, -ENOSPC, alloc_req(c, 0, 1, 1, BGA_EXACT_GOAL, NULL))    \
	X(alloc_exact_goal_whole, FX_MAIN, -EINVAL, alloc_req(c, 20, 1, 8, BGA_EXACT_GOAL | BGA_WHOLE, NULL)) \
	X(alloc_whole_unknown_flag_beside, FX_MAIN, -EINVAL, alloc_req(c, 20, 1, 8, BGA_WHOLE | 1u << 4, NULL)) \
	X(alloc_exact_goal_crosses_group, FX_MAIN, -ENOSPC, alloc_req(c, 2 * MAIN_BPG - 2, 4, 4, BGA_EXACT_GOAL, NULL)) \
	/* bga_alloc: flags and reservations */                                                         \
	X(alloc_unknown_flag_bit2, FX_MAIN, -EINVAL, alloc_req(c, NOG, 1, 1, 1u << 2, NULL))            \
	X(alloc_unknown_flag_bit31, FX_MAIN, -EINVAL, alloc_req(c, 100, 1, 1, 1u << 31, NULL))          \
	X(alloc_use_reserved_over_reserved, FX_MAIN, -EINVAL, alloc_req(c, NOG, MAIN_RESERVED + 1, 20, BGA_USE_RESERVED, NULL)) \
	X(alloc_use_reserved_none, FX_FULL, -EINVAL, alloc_req(c, NOG, 1, 1, BGA_USE_RESERVED, NULL))   \
	X(alloc_full_would_fit_after_commit, FX_FULL, -EAGAIN, alloc_req(c, NOG, 4, 8, 0, NULL))        \
	X(alloc_full_no_run_even_after_commit, FX_FULL, -ENOSPC, alloc_req(c, NOG, 9, 9, 0, NULL))      \
	X(alloc_deferred_joins_free_run, FX_JOIN, -EAGAIN, alloc_req(c, NOG, 36, 36, 0, NULL))        \
	X(alloc_deferred_joins_free_run_goal, FX_JOIN, -EAGAIN, alloc_req(c, 70, 33, 40, 0, NULL))     \
	X(alloc_deferred_joins_still_short, FX_JOIN, -ENOSPC, alloc_req(c, NOG, 37, 37, 0, NULL))      \
	X(alloc_full_goal_deferred_no_run, FX_FULL, -ENOSPC, alloc_req(c, 20, 9, 16, 0, NULL))          \
	X(alloc_promised_space, FX_PROMISED, -ENOSPC, alloc_req(c, NOG, 1, 1, 0, NULL))                 \
	X(alloc_promised_space_goal, FX_PROMISED, -ENOSPC, alloc_req(c, 100, 1, 8, 0, NULL))            \
	X(alloc_promised_use_reserved_over, FX_PROMISED, -EINVAL, alloc_req(c, NOG, 57, 57, BGA_USE_RESERVED, NULL)) \
	/* bga_alloc: the allocation unit */                                                            \
	X(alloc_align_not_pow2, FX_MAIN, -EINVAL, alloc_aligned(c, NOG, 3, 3, 3, 0))                     \
	X(alloc_align_over_bpg, FX_MAIN, -EINVAL, alloc_aligned(c, NOG, 256, 256, 256, 0))               \
	X(alloc_align_u64_max, FX_MAIN, -EINVAL, alloc_aligned(c, NOG, 1, 1, UINT64_MAX, 0))             \
	X(alloc_align_min_not_multiple, FX_MAIN, -EINVAL, alloc_aligned(c, NOG, 2, 4, 4, 0))             \
	X(alloc_align_max_not_multiple, FX_MAIN, -EINVAL, alloc_aligned(c, NOG, 4, 6, 4, 0))             \
	X(alloc_align_exact_goal_unaligned, FX_MAIN, -EINVAL, alloc_aligned(c, 21, 4, 4, 4, BGA_EXACT_GOAL)) \
	X(alloc_align_exact_goal_allocated, FX_MAIN, -ENOSPC, alloc_aligned(c, 16, 4, 4, 4, BGA_EXACT_GOAL)) \
	X(alloc_align_promised_space, FX_PROMISED, -ENOSPC, alloc_aligned(c, NOG, 8, 8, 8, 0))           \
	X(alloc_align_no_aligned_run, FX_JOIN, -ENOSPC, alloc_aligned(c, NOG, 64, 64, 64, 0))            \
	X(alloc_align_after_commit, FX_FULL, -EAGAIN, alloc_aligned(c, NOG, 8, 8, 8, 0))                 \
	/* bga_alloc_vec */                                                                             \
	X(alloc_vec_null_vol, FX_MAIN, -EINVAL, bga_alloc_vec(NULL, &(struct bga_request){ .goal = NOG, .min_len = 1, .max_len = 1 }, 1, &c->ext, 1, &(size_t){ 0 })) \
	X(alloc_vec_null_req, FX_MAIN, -EINVAL, alloc_vec(c, NOG, 1, 8, 0, 0, 8, 4, 1))                       \
	X(alloc_vec_null_out, FX_MAIN, -EINVAL, alloc_vec(c, NOG, 1, 8, 0, 0, 8, 4, 2))                       \
	X(alloc_vec_null_n_out, FX_MAIN, -EINVAL, alloc_vec(c, NOG, 1, 8, 0, 0, 8, 4, 3))                     \
	X(alloc_vec_max_out_0, FX_MAIN, -EINVAL, alloc_vec(c, NOG, 1, 8, 0, 0, 8, 0, 0))                      \
	X(alloc_vec_want_0, FX_MAIN, -EINVAL, alloc_vec(c, NOG, 1, 8, 0, 0, 0, 4, 0))                         \
	X(alloc_vec_min_0, FX_MAIN, -EINVAL, alloc_vec(c, NOG, 0, 8, 0, 0, 8, 4, 0))                          \
	X(alloc_vec_min_gt_max, FX_MAIN, -EINVAL, alloc_vec(c, NOG, 9, 8, 0, 0, 8, 4, 0))                     \
	X(alloc_vec_want_not_multiple_of_align, FX_MAIN, -EINVAL, alloc_vec(c, NOG, 4, 8, 4, 0, 10, 4, 0))    \
	X(alloc_vec_align_not_pow2, FX_MAIN, -EINVAL, alloc_vec(c, NOG, 6, 6, 6, 0, 12, 4, 0))                \
	X(alloc_vec_exact_goal, FX_MAIN, -EINVAL, alloc_vec(c, 20, 1, 8, 0, BGA_EXACT_GOAL, 8, 4, 0))         \
	X(alloc_vec_unknown_flag, FX_MAIN, -EINVAL, alloc_vec(c, NOG, 1, 8, 0, 1u << 9, 8, 4, 0))             \
	X(alloc_vec_goal_past_end, FX_MAIN, -EINVAL, alloc_vec(c, NB, 1, 8, 0, 0, 8, 4, 0))                   \
	X(alloc_vec_use_reserved_none, FX_FULL, -EINVAL, alloc_vec(c, NOG, 1, 8, 0, BGA_USE_RESERVED, 8, 4, 0)) \
	X(alloc_vec_use_reserved_below_min, FX_MAIN, -EINVAL, alloc_vec(c, NOG, 16, 16, 0, BGA_USE_RESERVED, 16, 4, 0)) \
	X(alloc_vec_promised_space, FX_PROMISED, -ENOSPC, alloc_vec(c, NOG, 1, 8, 0, 0, 8, 4, 0))             \
	X(alloc_vec_after_commit, FX_FULL, -EAGAIN, alloc_vec(c, NOG, 4, 8, 0, 0, 8, 4, 0))                   \
	X(alloc_vec_all_more_than_free, FX_JOIN, -ENOSPC, alloc_vec(c, NOG, 1, 64, 0, BGA_ALL_OR_NOTHING, 37, 4, 0)) \
	X(alloc_vec_all_after_commit, FX_JOIN, -EAGAIN, alloc_vec(c, NOG, 1, 64, 0, BGA_ALL_OR_NOTHING, 36, 4, 0)) \
	X(alloc_vec_all_over_reserved, FX_MAIN, -ENOSPC, alloc_vec(c, NOG, 1, 64, 0, BGA_ALL_OR_NOTHING | BGA_USE_RESERVED, 11, 4, 0)) \
	/* bga_claim */                                                                                 \
	X(claim_null_vol, FX_MAIN, -EINVAL, bga_claim(NULL, 500, 1))                                     \
	X(claim_len_0, FX_MAIN, -EINVAL, bga_claim(V, 500, 0))                                           \
	X(claim_past_end, FX_MAIN, -EINVAL, bga_claim(V, NB - 1, 2))                                     \
	X(claim_start_eq_nblocks, FX_MAIN, -EINVAL, bga_claim(V, NB, 1))                                 \
	X(claim_len_wraps, FX_MAIN, -EINVAL, bga_claim(V, 500, UINT64_MAX))                              \
	X(claim_below_fdb, FX_MAIN, -EINVAL, bga_claim(V, 0, 1))                                         \
	X(claim_allocated, FX_MAIN, -EBUSY, bga_claim(V, 12, 1))                                         \
	X(claim_partly_allocated, FX_MAIN, -EBUSY, bga_claim(V, 5, 10))                                  \
	X(claim_across_groups_partly_allocated, FX_MAIN, -EBUSY, bga_claim(V, 100, 2 * MAIN_BPG))        \
	X(claim_deferred, FX_MAIN, -EBUSY, bga_claim(V, 201, 1))                                         \
	X(claim_deferred_in_full, FX_FULL, -EBUSY, bga_claim(V, 8, 8))                                   \
	X(claim_promised_space, FX_PROMISED, -ENOSPC, bga_claim(V, 200, 1))                              \
	/* bga_free_vec */                                                                              \
	X(free_vec_null_vol, FX_MAIN, -EINVAL, bga_free_vec(NULL, &c->ext, 1))                           \
	X(free_vec_null_ext, FX_MAIN, -EINVAL, bga_free_vec(V, NULL, 1))                                 \
	X(free_vec_n_0, FX_MAIN, -EINVAL, bga_free_vec(V, &c->ext, 0))                                   \
	X(free_vec_len_0, FX_MAIN, -EINVAL, free_vec2(c, 0 + 10, 0, 210, 2))                             \
	X(free_vec_overlap, FX_MAIN, -EINVAL, free_vec2(c, 10, 4, 12, 2))                                \
	X(free_vec_same_twice, FX_MAIN, -EINVAL, free_vec2(c, 10, 2, 10, 2))                             \
	X(free_vec_one_free, FX_MAIN, -EINVAL, free_vec2(c, 10, 8, 500, 1))                              \
	X(free_vec_one_deferred, FX_MAIN, -EINVAL, free_vec2(c, 210, 2, 202, 1))                         \
	X(free_vec_one_past_end, FX_MAIN, -EINVAL, free_vec2(c, 10, 8, NB - 1, 2))                       \
	X(free_vec_one_below_fdb, FX_MAIN, -EINVAL, free_vec2(c, 10, 8, 0, 1))                           \
	/* bga_free: NULL, zero length, out of range, below first_data_block, not allocated */          \
	X(free_null_vol, FX_MAIN, -EINVAL, bga_free(NULL, 10, 1))                                        \
	X(free_len_0, FX_MAIN, -EINVAL, bga_free(V, 10, 0))                                              \
	X(free_start_eq_nblocks, FX_MAIN, -EINVAL, bga_free(V, NB, 1))                                   \
	X(free_past_end, FX_MAIN, -EINVAL, bga_free(V, NB - 1, 2))                                       \
	X(free_len_wraps, FX_MAIN, -EINVAL, bga_free(V, 10, UINT64_MAX))                                 \
	X(free_start_huge, FX_MAIN, -EINVAL, bga_free(V, UINT64_MAX, 1))                                 \
	X(free_below_fdb, FX_MAIN, -EINVAL, bga_free(V, 0, 1))                                           \
	X(free_straddles_fdb, FX_MAIN, -EINVAL, bga_free(V, MAIN_FDB - 1, 2))                            \
	X(free_free_block, FX_MAIN, -EINVAL, bga_free(V, 500, 1))                                        \
	X(free_double_tail, FX_MAIN, -EINVAL, bga_free(V, 10, 9))                                        \
	X(free_double_head, FX_MAIN, -EINVAL, bga_free(V, 9, 9))                                         \
	X(free_deferred_block, FX_MAIN, -EINVAL, bga_free(V, 201, 1))                                    \
	X(free_alloc_and_deferred, FX_MAIN, -EINVAL, bga_free(V, 200, 16))                               \
	X(free_across_groups_partly_free, FX_MAIN, -EINVAL, bga_free(V, 10, MAIN_BPG * 2))              \
	/* bga_free_deferred: the same, plus txn rules */                                               \
	X(fdef_null_vol, FX_MAIN, -EINVAL, bga_free_deferred(NULL, 10, 1, 6))                            \
	X(fdef_len_0, FX_MAIN, -EINVAL, bga_free_deferred(V, 10, 0, 6))                                  \
	X(fdef_past_end, FX_MAIN, -EINVAL, bga_free_deferred(V, NB - 1, 2, 6))                           \
	X(fdef_len_wraps, FX_MAIN, -EINVAL, bga_free_deferred(V, 10, UINT64_MAX, 6))                     \
	X(fdef_below_fdb, FX_MAIN, -EINVAL, bga_free_deferred(V, 1, 1, 6))                               \
	X(fdef_free_block, FX_MAIN, -EINVAL, bga_free_deferred(V, 500, 1, 6))                            \
	X(fdef_partly_free, FX_MAIN, -EINVAL, bga_free_deferred(V, 16, 4, 6))                            \
	X(fdef_already_deferred, FX_MAIN, -EINVAL, bga_free_deferred(V, 203, 1, 6))                      \
	X(fdef_already_deferred_same_txn, FX_MAIN, -EINVAL, bga_free_deferred(V, 200, 4, 5))             \
	X(fdef_overlaps_deferred, FX_MAIN, -EINVAL, bga_free_deferred(V, 202, 4, 6))                     \
	X(fdef_txn_0, FX_MAIN, -EINVAL, bga_free_deferred(V, 10, 1, 0))                                  \
	X(fdef_txn_eq_committed, FX_MAIN, -EINVAL, bga_free_deferred(V, 10, 1, MAIN_LAST_TXN))           \
	X(fdef_txn_below_committed, FX_MAIN, -EINVAL, bga_free_deferred(V, 10, 1, MAIN_LAST_TXN - 1))    \
	/* bga_free_deferred_vec: bga_free_vec's checks and bga_free_deferred's txn rules */           \
	X(fdefv_null_vol, FX_MAIN, -EINVAL, bga_free_deferred_vec(NULL, &(struct bga_extent){ 10, 1 }, 1, 6)) \
	X(fdefv_null_ext, FX_MAIN, -EINVAL, bga_free_deferred_vec(V, NULL, 1, 6))                       \
	X(fdefv_n_0, FX_MAIN, -EINVAL, bga_free_deferred_vec(V, &(struct bga_extent){ 10, 1 }, 0, 6))   \
	X(fdefv_len_0, FX_MAIN, -EINVAL, fdef_vec2(c, 10, 0, 210, 2, 6))                                \
	X(fdefv_overlap, FX_MAIN, -EINVAL, fdef_vec2(c, 10, 4, 12, 2, 6))                               \
	X(fdefv_same_twice, FX_MAIN, -EINVAL, fdef_vec2(c, 10, 2, 10, 2, 6))                            \
	X(fdefv_one_free, FX_MAIN, -EINVAL, fdef_vec2(c, 10, 8, 500, 1, 6))                             \
	X(fdefv_one_deferred, FX_MAIN, -EINVAL, fdef_vec2(c, 210, 2, 202, 1, 6))                        \
	X(fdefv_one_past_end, FX_MAIN, -EINVAL, fdef_vec2(c, 10, 8, NB - 1, 2, 6))                      \
	X(fdefv_one_len_wraps, FX_MAIN, -EINVAL, fdef_vec2(c, 10, 8, 210, UINT64_MAX, 6))               \
	X(fdefv_one_below_fdb, FX_MAIN, -EINVAL, fdef_vec2(c, 10, 8, 0, 1, 6))                          \
	X(fdefv_txn_0, FX_MAIN, -EINVAL, fdef_vec2(c, 10, 8, 210, 2, 0))                                \
	X(fdefv_txn_eq_committed, FX_MAIN, -EINVAL, fdef_vec2(c, 10, 8, 210, 2, MAIN_LAST_TXN))         \
	X(fdefv_txn_below_committed, FX_MAIN, -EINVAL, fdef_vec2(c, 10, 8, 210, 2, MAIN_LAST_TXN - 1))  \
	X(fdefv_full_partly_deferred, FX_FULL, -EINVAL, fdef_vec2(c, 4, 4, 12, 8, 3))                   \
	/* bga_commit */                                                                                \
	X(commit_null_vol, FX_MAIN, -EINVAL, bga_commit(NULL, 4))                                        \
	X(commit_txn_0, FX_MAIN, -EINVAL, bga_commit(V, 0))                                              \
	X(commit_backwards, FX_MAIN, -EINVAL, bga_commit(V, MAIN_LAST_TXN - 1))                          \
	X(commit_same_txn_is_noop, FX_MAIN, 0, bga_commit(V, MAIN_LAST_TXN))                             \
	X(commit_full_backwards, FX_FULL, -EINVAL, bga_commit(V, 0))                                     \
	/* bga_reserve / bga_unreserve / bga_reserved */                                                \
	X(reserve_null_vol, FX_MAIN, -EINVAL, bga_reserve(NULL, 1))                                      \
	X(reserve_0, FX_MAIN, -EINVAL, bga_reserve(V, 0))                                                \
	X(reserve_over_nblocks, FX_MAIN, -EINVAL, bga_reserve(V, NB + 1))                                \
	X(reserve_u64_max, FX_MAIN, -EINVAL, bga_reserve(V, UINT64_MAX))                                 \
	X(reserve_more_than_unpromised, FX_MAIN, -ENOSPC,                                               \
	  bga_reserve(V, bga_free_exact(V) - MAIN_RESERVED + 1))                                        \
	X(reserve_exactly_nblocks, FX_MAIN, -ENOSPC, bga_reserve(V, NB))                                 \
	X(reserve_full, FX_FULL, -ENOSPC, bga_reserve(V, 1))                                             \
	X(reserve_all_promised, FX_PROMISED, -ENOSPC, bga_reserve(V, 1))                                 \
	X(unreserve_null_vol, FX_MAIN, -EINVAL, bga_unreserve(NULL, 1))                                  \
	X(unreserve_0, FX_MAIN, -EINVAL, bga_unreserve(V, 0))                                            \
	X(unreserve_over_reserved, FX_MAIN, -EINVAL, bga_unreserve(V, MAIN_RESERVED + 1))                \
	X(unreserve_u64_max, FX_MAIN, -EINVAL, bga_unreserve(V, UINT64_MAX))                             \
	X(unreserve_none_reserved, FX_FULL, -EINVAL, bga_unreserve(V, 1))                                \
	X(reserved_null_vol, FX_MAIN, 0, (int)bga_reserved(NULL))                                        \
	X(free_estimate_null_vol, FX_MAIN, 0, (int)bga_free_estimate(NULL))                              \
	X(free_exact_null_vol, FX_MAIN, 0, (int)bga_free_exact(NULL))                                    \
	/* windows */                                                                                   \
	X(rsv_open_null_vol, FX_MAIN, -EINVAL, bga_rsv_open(NULL, &c->rsv))                              \
	X(rsv_open_null_out, FX_MAIN, -EINVAL, bga_rsv_open(V, NULL))                                    \
	X(rsv_set_size_null, FX_MAIN, -EINVAL, bga_rsv_set_size(NULL, 8))                                \
	X(rsv_set_size_over_group, FX_MAIN, -EINVAL, bga_rsv_set_size(R, MAIN_BPG + 1))                   \
	X(rsv_set_size_u32_max, FX_MAIN, -EINVAL, bga_rsv_set_size(R, UINT32_MAX))                       \
	X(rsv_window_null_rsv, FX_MAIN, -EINVAL, bga_rsv_window(NULL, &c->ext))                          \
	X(rsv_window_null_out, FX_MAIN, -EINVAL, bga_rsv_window(R, NULL))                                \
	/* bga_foreach_free / bga_trim: the callback must not run */                                    \
	X(foreach_null_vol, FX_MAIN, -EINVAL, bga_foreach_free(NULL, 0, NB, 1, count_cb, c))             \
	X(foreach_null_cb, FX_MAIN, -EINVAL, bga_foreach_free(V, 0, NB, 1, NULL, c))                     \
	X(foreach_from_eq_to, FX_MAIN, -EINVAL, bga_foreach_free(V, 5, 5, 1, count_cb, c))               \
	X(foreach_from_gt_to, FX_MAIN, -EINVAL, bga_foreach_free(V, 6, 5, 1, count_cb, c))               \
	X(foreach_to_past_end, FX_MAIN, -EINVAL, bga_foreach_free(V, 0, NB + 1, 1, count_cb, c))         \
	X(foreach_to_u64_max, FX_MAIN, -EINVAL, bga_foreach_free(V, 0, UINT64_MAX, 1, count_cb, c))      \
	X(foreach_min_len_0, FX_MAIN, -EINVAL, bga_foreach_free(V, 0, NB, 0, count_cb, c))               \
	X(trim_null_vol, FX_MAIN, -EINVAL, bga_trim(NULL, 0, NB, 1, count_cb, c, NULL))                  \
	X(trim_null_cb, FX_MAIN, -EINVAL, bga_trim(V, 0, NB, 1, NULL, c, NULL))                          \
	X(trim_from_eq_to, FX_MAIN, -EINVAL, bga_trim(V, 5, 5, 1, count_cb, c, NULL))                    \
	X(trim_from_gt_to, FX_MAIN, -EINVAL, bga_trim(V, 6, 5, 1, count_cb, c, NULL))                    \
	X(trim_to_past_end, FX_MAIN, -EINVAL, bga_trim(V, 0, NB + 1, 1, count_cb, c, NULL))              \
	X(trim_min_len_0, FX_MAIN, -EINVAL, bga_trim(V, 0, NB, 0, count_cb, c, NULL))                    \
	/* bga_foreach_used: the callback must not run */                                             \
	X(used_null_vol, FX_MAIN, -EINVAL, bga_foreach_used(NULL, 0, NB, used_cb, c))                    \
	X(used_null_cb, FX_MAIN, -EINVAL, bga_foreach_used(V, 0, NB, NULL, c))                           \
	X(used_from_eq_to, FX_MAIN, -EINVAL, bga_foreach_used(V, 5, 5, used_cb, c))                      \
	X(used_from_gt_to, FX_MAIN, -EINVAL, bga_foreach_used(V, 6, 5, used_cb, c))                      \
	X(used_to_past_end, FX_MAIN, -EINVAL, bga_foreach_used(V, 0, NB + 1, used_cb, c))                \
	X(used_to_u64_max, FX_MAIN, -EINVAL, bga_foreach_used(V, 0, UINT64_MAX, used_cb, c))             \
	/* the longest free run, group statistics */                                                   \
	X(longest_null_vol, FX_MAIN, -EINVAL, bga_longest_free_sum(NULL, &(uint64_t){ 0 }, NULL))        \
	X(longest_null_len, FX_MAIN, -EINVAL, longest(c, 1))                                             \
	X(longest_null_group_is_fine, FX_MAIN, 0, bga_longest_free_sum(V, &(uint64_t){ 0 }, NULL))      \
	X(longest_read_null_vol, FX_MAIN, 0, (int)bga_longest_free_read(NULL))                           \
	X(group_stats_null_vol, FX_MAIN, -EINVAL, bga_group_stats(NULL, 0, &(struct bga_group_stats){ .size = sizeof(struct bga_group_stats) })) \
	X(group_stats_null_out, FX_MAIN, -EINVAL, bga_group_stats(V, 0, NULL))                           \
	X(group_stats_size_0, FX_MAIN, -EINVAL, group_stats(c, 0, 0))                                    \
	X(group_stats_size_short, FX_MAIN, -EINVAL, group_stats(c, 0, sizeof(struct bga_group_stats) - 1)) \
	X(group_stats_group_eq_groups, FX_MAIN, -EINVAL, group_stats(c, (NB + MAIN_BPG - 1) / MAIN_BPG, sizeof(struct bga_group_stats))) \
	X(group_stats_group_u64_max, FX_MAIN, -EINVAL, group_stats(c, UINT64_MAX, sizeof(struct bga_group_stats))) \
	X(group_stats_untouched_is_fine, FX_MAIN, 0, group_stats(c, 5, sizeof(struct bga_group_stats)))  \
	/* the clearer names: the old calls' rows, through the new names */                            \
	X(free_blocks_read_null_vol, FX_MAIN, 0, (int)bga_free_blocks_read(NULL))                        \
	X(free_blocks_sum_null_vol, FX_MAIN, 0, (int)bga_free_blocks_sum(NULL))                          \
	X(window_open_null_vol, FX_MAIN, -EINVAL, bga_window_open(NULL, &c->rsv))                        \
	X(window_open_null_out, FX_MAIN, -EINVAL, bga_window_open(V, NULL))                              \
	X(window_set_size_null, FX_MAIN, -EINVAL, bga_window_set_size(NULL, 8))                          \
	X(window_set_size_over_group, FX_MAIN, -EINVAL, bga_window_set_size(R, MAIN_BPG + 1))             \
	X(window_get_null_rsv, FX_MAIN, -EINVAL, bga_window_get(NULL, &c->ext))                          \
	X(window_get_null_out, FX_MAIN, -EINVAL, bga_window_get(R, NULL))                                \
	/* the store's tag */                                                                          \
	X(tag_store_null_vol, FX_MAIN, -EINVAL, bga_store_tagged(NULL, &(struct bga_io){ .read = constio_read, .write = constio_write, .flush = constio_flush }, 1)) \
	X(tag_store_null_io, FX_MAIN, -EINVAL, bga_store_tagged(V, NULL, 1))                             \
	X(tag_store_null_read, FX_MAIN, -EINVAL, store_tagged_null_cb(c, 1))                             \
	X(tag_store_null_write, FX_MAIN, -EINVAL, store_tagged_null_cb(c, 2))                            \
	X(tag_store_null_flush, FX_MAIN, -EINVAL, store_tagged_null_cb(c, 3))                            \
	X(tag_volume_null_vol, FX_MAIN, -EINVAL, bga_volume_tag(NULL, &(uint64_t){ 0 }))                 \
	X(tag_volume_null_out, FX_MAIN, -EINVAL, bga_volume_tag(V, NULL))                                \
	/* stats, lock stats, check, config */                                                          \
	X(stats_null_vol, FX_MAIN, -EINVAL, bga_stats(NULL, &(struct bga_stats){ 0 }))                   \
	X(stats_null_out, FX_MAIN, -EINVAL, bga_stats(V, NULL))                                          \
	X(lock_stats_null_vol, FX_MAIN, -EINVAL, bga_lock_stats(NULL, 0, &(struct bga_lock_stats){ 0 })) \
	X(lock_stats_null_out, FX_MAIN, -EINVAL, lock_stats(c, 0, 1))                                    \
	X(lock_stats_slot_eq_slots, FX_MAIN, -EINVAL, lock_stats(c, lock_slots(c), 0))                   \
	X(lock_stats_slot_u32_max, FX_MAIN, -EINVAL, lock_stats(c, UINT32_MAX, 0))                       \
	X(check_null_vol, FX_MAIN, -EINVAL, bga_check(NULL, NULL))                                       \
	X(check_clean_null_report, FX_MAIN, 0, bga_check(V, NULL))                                       \
	X(volume_config_null_vol, FX_MAIN, -EINVAL, bga_volume_config(NULL, &c->cfg))                    \
	X(volume_config_null_out, FX_MAIN, -EINVAL, bga_volume_config(V, NULL))                          \
	/* bga_grow */                                                                                  \
	X(grow_null_vol, FX_MAIN, -EINVAL, bga_grow(NULL, NB + 1))                                       \
	X(grow_shrink, FX_MAIN, -EINVAL, bga_grow(V, NB - 1))                                            \
	X(grow_to_0, FX_MAIN, -EINVAL, bga_grow(V, 0))                                                   \
	X(grow_past_max, FX_MAIN, -EINVAL, bga_grow(V, BGA_MAX_BLOCKS + 1))                              \
	X(grow_u64_max, FX_MAIN, -EINVAL, bga_grow(V, UINT64_MAX))                                       \
	X(grow_same_size, FX_MAIN, 0, bga_grow(V, NB))

#define X_FN(name, fx, expected, call) \
	static int call_##name(struct bctx *c) \
	{                                      \
		(void)c;                       \
		return (call);                 \
	}
BADINPUT_CASES(X_FN)
#undef X_FN

struct bcase {
	const char *name;
	enum fixture fx;
	int expected;
	int (*call)(struct bctx *c);
};

#define X_ROW(name, fx, expected, call) { #name, fx, expected, call_##name },
static struct bcase cases[] = { BADINPUT_CASES(X_ROW) };
#undef X_ROW

static void setup_main(struct bctx *c)
{
	bga_config_init(&c->cfg, MAIN_NBLOCKS);
	c->cfg.blocks_per_group = MAIN_BPG;
	c->cfg.first_data_block = MAIN_FDB;
	c->cfg.rsv_max = MAIN_RSV_MAX;
	cr_assert_eq(bga_create(&c->cfg, &c->vol), 0);
	cr_assert_eq(alloc_req(c, 10, 8, 8, BGA_EXACT_GOAL, NULL), 0);
	cr_assert_eq(alloc_req(c, 200, 16, 16, BGA_EXACT_GOAL, NULL), 0);
	cr_assert_eq(bga_commit(c->vol, MAIN_LAST_TXN), 0);
	cr_assert_eq(bga_free_deferred(c->vol, 200, 4, 5), 0);
	cr_assert_eq(bga_reserve(c->vol, MAIN_RESERVED), 0);
	cr_assert_eq(bga_rsv_open(c->vol, &c->rsv), 0);
	cr_assert_eq(bga_free_exact(c->vol), MAIN_NBLOCKS - MAIN_FDB - 24);
}

/* Two groups of 64 blocks, both wholly allocated. */
static void setup_two_used_groups(struct bctx *c)
{
	bga_config_init(&c->cfg, 128);
	c->cfg.blocks_per_group = 64;
	c->cfg.rsv_max = 64;
	cr_assert_eq(bga_create(&c->cfg, &c->vol), 0);
	cr_assert_eq(alloc_req(c, 0, 64, 64, BGA_EXACT_GOAL, NULL), 0);
	cr_assert_eq(alloc_req(c, 64, 64, 64, BGA_EXACT_GOAL, NULL), 0);
}

static void setup_full(struct bctx *c)
{
	setup_two_used_groups(c);
	cr_assert_eq(bga_commit(c->vol, 1), 0);
	cr_assert_eq(bga_free_deferred(c->vol, 8, 8, 2), 0);
	cr_assert_eq(bga_free_exact(c->vol), 0);
}

static void setup_join(struct bctx *c)
{
	setup_two_used_groups(c);
	cr_assert_eq(bga_free(c->vol, 64, 32), 0);
	cr_assert_eq(bga_free_deferred(c->vol, 96, 4, 1), 0);
	cr_assert_eq(bga_free_exact(c->vol), 32);
}

static void setup_promised(struct bctx *c)
{
	bga_config_init(&c->cfg, 256);
	c->cfg.blocks_per_group = 128;
	cr_assert_eq(bga_create(&c->cfg, &c->vol), 0);
	cr_assert_eq(alloc_req(c, 0, 128, 128, BGA_EXACT_GOAL, NULL), 0);
	cr_assert_eq(alloc_req(c, 128, 72, 72, BGA_EXACT_GOAL, NULL), 0);
	cr_assert_eq(bga_reserve(c->vol, 56), 0);
	cr_assert_eq(bga_free_exact(c->vol), 56);
}

#define NCASES (sizeof(cases) / sizeof(cases[0]))

/*
 * Criterion hands each parameter to a fresh worker process as bytes, where
 * pointers into this image need not hold, so the parameter is a row index.
 */
ParameterizedTestParameters(badinput, table)
{
	static size_t rows[NCASES];
	size_t i;

	for (i = 0; i < NCASES; i++)
		rows[i] = i;
	return cr_make_param_array(size_t, rows, NCASES);
}

ParameterizedTest(size_t *row, badinput, table)
{
	const struct bcase *bc = &cases[*row];
	struct bctx c;
	void *before, *after;
	size_t blen, alen;
	uint64_t free_before, reserved_before;
	int rc;

	memset(&c, 0, sizeof(c));
	switch (bc->fx) {
	case FX_MAIN: setup_main(&c); break;
	case FX_FULL: setup_full(&c); break;
	case FX_PROMISED: setup_promised(&c); break;
	case FX_JOIN: setup_join(&c); break;
	}
	cr_assert_eq(bga__snapshot(c.vol, &before, &blen), 0);
	free_before = bga_free_exact(c.vol);
	reserved_before = bga_reserved(c.vol);
	{
		struct bga_volume *vol = c.vol;
		struct bga_rsv *rsv = c.rsv;

		rc = bc->call(&c);
		/* A NULL-out case may have been handed our pointers: keep ours. */
		c.vol = vol;
		c.rsv = rsv;
	}
	cr_expect_eq(rc, bc->expected, "%s: returned %d (%s), the contract says %d (%s)", bc->name, rc,
		     bga_strerror(rc), bc->expected, bga_strerror(bc->expected));
	if (bc->expected < 0)
		cr_expect_eq(c.cb_calls, 0, "%s: rejected call ran its callback %d times", bc->name, c.cb_calls);
	cr_assert_eq(bga__snapshot(c.vol, &after, &alen), 0);
	cr_expect(alen == blen && memcmp(before, after, blen) == 0, "%s: the volume's state changed", bc->name);
	cr_expect_eq(bga_free_exact(c.vol), free_before, "%s: free count changed", bc->name);
	cr_expect_eq(bga_reserved(c.vol), reserved_before, "%s: reserved count changed", bc->name);
	cr_expect_eq(bga_check(c.vol, NULL), 0, "%s: bga_check not clean after", bc->name);
	free(before);
	free(after);
	bga_rsv_close(c.rsv);
	bga_destroy(c.vol);
}

/* The table reaches every function that can fail; this counts rows per
 * family so deleting a family's rows fails loudly. */
Test(badinput, table_covers_every_function)
{
	static const char *const prefixes[] = { "create_", "alloc_", "free_", "fdef_", "commit_", "reserve_",
						"unreserve_", "reserved_", "free_estimate_", "free_exact_",
						"rsv_open_", "rsv_set_size_", "rsv_window_", "foreach_", "trim_",
						"stats_", "lock_stats_", "check_", "volume_config_", "grow_",
						"alloc_vec_", "claim_", "free_vec_", "fdefv_", "used_", "longest_",
						"longest_read_", "group_stats_", "free_blocks_read_", "free_blocks_sum_",
						"window_open_", "window_set_size_", "window_get_", "tag_store_",
						"tag_volume_" };
	enum { NPREFIXES = sizeof(prefixes) / sizeof(prefixes[0]) };
	size_t i, j, n[NPREFIXES] = { 0 };

	/* Each row counts for the longest prefix it has, so "free_" rows
	 * are not made up by "free_estimate_" or "free_exact_" ones. */
	for (j = 0; j < NCASES; j++) {
		size_t best = NPREFIXES, best_len = 0;

		for (i = 0; i < NPREFIXES; i++) {
			size_t len = strlen(prefixes[i]);

			if (len > best_len && strncmp(cases[j].name, prefixes[i], len) == 0) {
				best = i;
				best_len = len;
			}
		}
		cr_expect_neq(best, (size_t)NPREFIXES, "row %s belongs to no family", cases[j].name);
		if (best < NPREFIXES)
			n[best]++;
	}
	for (i = 0; i < NPREFIXES; i++)
		cr_expect_geq(n[i], 1, "no bad-input row for %s*", prefixes[i]);
}

/* Calls with nothing to return must cope with NULL. */
Test(badinput, null_handles_ignored)
{
	bga_destroy(NULL);
	bga_rsv_close(NULL);
	cr_expect_eq(bga_free_exact(NULL), 0);
	cr_expect_eq(bga_free_estimate(NULL), 0);
	cr_expect_eq(bga_reserved(NULL), 0);
}

/*
 * bga_strerror never returns NULL, for any int; each code a function of
 * <bgalloc.h> returns is named by its own string (which starts with the
 * code's name), the sign does not matter; an errno it only passes through
 * is named as glibc names it, with a pointer that stays the same from call
 * to call; anything else is "unknown error".
 */
Test(badinput, strerror_total)
{
	static const struct {
		int code;
		const char *name;
	} known[] = { { EINVAL, "EINVAL" }, { ENOSPC, "ENOSPC" }, { EAGAIN, "EAGAIN" }, { ENOMEM, "ENOMEM" },
		      { EUCLEAN, "EUCLEAN" }, { ENODATA, "ENODATA" }, { EBUSY, "EBUSY" }, { EIO, "EIO" },
		      { EBADMSG, "EBADMSG" } };
	static const struct {
		int code;
		const char *text;
	} passed[] = { { ENOENT, "ENOENT: No such file or directory" }, { EPERM, "EPERM: Operation not permitted" },
		       { EACCES, "EACCES: Permission denied" } };
	static const int unknown[] = { 9999, 4095, INT_MAX, INT_MIN };
	size_t i, j;

	cr_expect_str_eq(bga_strerror(0), "success");
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		const char *s = bga_strerror(-known[i].code);

		cr_assert_not_null(s);
		cr_expect(strncmp(s, known[i].name, strlen(known[i].name)) == 0 && s[strlen(known[i].name)] == ':',
			  "bga_strerror(-%s) is \"%s\"", known[i].name, s);
		cr_expect_str_eq(bga_strerror(known[i].code), s, "sign of %s matters", known[i].name);
		for (j = 0; j < i; j++)
			cr_expect_str_neq(bga_strerror(-known[j].code), s, "%s and %s share a string",
					  known[j].name, known[i].name);
	}
	for (i = 0; i < sizeof(passed) / sizeof(passed[0]); i++) {
		const char *s = bga_strerror(-passed[i].code);

		cr_expect_str_eq(s, passed[i].text, "code %d", -passed[i].code);
		cr_expect_eq(bga_strerror(passed[i].code), s, "code %d: a second string", passed[i].code);
	}
	cr_expect_str_neq(bga_strerror(-ENOENT), bga_strerror(-EPERM), "two passed-through codes share a buffer");
	for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		cr_assert_not_null(bga_strerror(unknown[i]));
		cr_expect_str_eq(bga_strerror(unknown[i]), "unknown error", "code %d", unknown[i]);
		if (unknown[i] != INT_MIN)
			cr_expect_str_eq(bga_strerror(-unknown[i]), "unknown error", "code %d", -unknown[i]);
	}
}

/*
 * A window turned off with bga_rsv_set_size(0) is still a valid handle:
 * it holds no window, and allocations through it fall back to the plain
 * path instead of failing.
 */
Test(badinput, window_after_set_size_0)
{
	struct bctx c;
	struct bga_extent w;

	memset(&c, 0, sizeof(c));
	setup_main(&c);
	cr_assert_eq(alloc_req(&c, 300, 1, 1, 0, c.rsv), 0);
	cr_assert_eq(bga_rsv_set_size(c.rsv, 0), 0);
	cr_assert_eq(bga_rsv_window(c.rsv, &w), 0);
	cr_expect_eq(w.len, 0, "a window size of 0 left a window of %lu", (unsigned long)w.len);
	cr_expect_eq(alloc_req(&c, 300, 1, 4, 0, c.rsv), 0);
	cr_expect_eq(bga_rsv_window(c.rsv, &w), 0);
	cr_expect_eq(w.len, 0, "allocating through a turned-off handle booked a window");
	cr_expect_eq(bga_check(c.vol, NULL), 0);
	bga_rsv_close(c.rsv);
	bga_destroy(c.vol);
}

/*
 * rsv_max is "the largest window" (bgalloc.h): a request longer than the
 * window may be served, but the window booked for it stays within rsv_max.
 * (Found by fuzz_ops: tests/fuzz/crashes/fuzz_ops-window-longer-than-rsv_max.)
 */
Test(badinput, window_capped_at_rsv_max)
{
	struct bctx c;
	struct bga_extent w;

	memset(&c, 0, sizeof(c));
	bga_config_init(&c.cfg, 1024);
	c.cfg.blocks_per_group = 256;
	c.cfg.rsv_default = 8;
	c.cfg.rsv_max = 16;
	cr_assert_eq(bga_create(&c.cfg, &c.vol), 0);
	cr_assert_eq(bga_rsv_open(c.vol, &c.rsv), 0);
	cr_assert_eq(alloc_req(&c, 0, 1, 128, 0, c.rsv), 0);
	cr_assert_eq(bga_rsv_window(c.rsv, &w), 0);
	cr_expect_leq(w.len, c.cfg.rsv_max, "window [%lu, +%lu) is longer than rsv_max %u", (unsigned long)w.start,
		      (unsigned long)w.len, c.cfg.rsv_max);
	cr_expect_eq(bga_check(c.vol, NULL), 0);
	bga_rsv_close(c.rsv);
	bga_destroy(c.vol);
}
