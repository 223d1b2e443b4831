/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bitmap scans over one 32768-bit block group: bga_bitmap_next_zero under
 * each scan implementation, beside libext2fs's
 * ext2fs_find_first_zero_block_bitmap2 on a bitarray bitmap of the same
 * contents, plus the bulk popcount and the allocator's short-run search.
 *
 * The argument picks the map:
 *   0  every bit set but the last; scan from 0 (the whole group is skipped)
 *   1  half full, the first half set (a group filled in order); scan from 0
 *   2  half full, random bits; scan from a random position (the common
 *      case: the answer is in the first word or the next)
 * Time per iteration is the time of one scan.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc/bitmap.h>

/* Inside the library (tests/cycles/reach.txt): each scan implementation is
 * timed in turn, and only bga__bitmap_use_impl (bitmap_impl.h) picks one;
 * the public bga_bitmap_next_zero always runs the one chosen at load. */
#include "bitmap_impl.h"
#include "peer_ext2.h"
#include "shim.h"

#define GROUP_BITS 32768u
#define NFROM 4096u /* random start positions, a power of two */
#define BATCH 64

struct bm_ctx {
	uint64_t *map;
	uint64_t from[NFROM];
	struct peer_ext2 *peer;
	ext2fs_block_bitmap bmap;
};

static uint64_t bm_rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

static struct bm_ctx *bm_ctx_new(struct bench_state *st, int kind)
{
	struct bm_ctx *c = calloc(1, sizeof(*c));
	uint64_t seed = 0x9e3779b97f4a7c15ULL;

	if (!c)
		return NULL;
	c->map = aligned_alloc(64, GROUP_BITS / 8);
	if (!c->map) {
		free(c);
		return NULL;
	}
	memset(c->map, 0, GROUP_BITS / 8);
	switch (kind) {
	case 0:
		bga_bitmap_set_range(c->map, 0, GROUP_BITS - 1);
		break;
	case 1:
		bga_bitmap_set_range(c->map, 0, GROUP_BITS / 2);
		break;
	default:
		for (unsigned i = 0; i < GROUP_BITS / 64; i++)
			c->map[i] = bm_rnd(&seed);
		for (unsigned i = 0; i < NFROM; i++)
			c->from[i] = bm_rnd(&seed) % GROUP_BITS;
	}
	bench_set_ctx(st, c);
	return c;
}

static void bm_ctx_free(struct bench_state *st)
{
	struct bm_ctx *c = bench_ctx(st);

	bga__bitmap_use_impl(NULL);
	if (!c)
		return;
	if (c->bmap)
		ext2fs_free_block_bitmap(c->bmap);
	peer_ext2_destroy(c->peer);
	free(c->map);
	free(c);
}

static void bm_setup_auto(struct bench_state *st)
{
	bga__bitmap_use_impl(NULL);
	bm_ctx_new(st, (int)bench_arg(st));
}

static void bm_setup_scalar(struct bench_state *st)
{
	bga__bitmap_use_impl("scalar");
	bm_ctx_new(st, (int)bench_arg(st));
}

static void bm_setup_avx2(struct bench_state *st)
{
	/* On a CPU without AVX2 the run reports the error below. */
	if (bga__bitmap_use_impl("avx2") == 0)
		bm_ctx_new(st, (int)bench_arg(st));
}

/*
 * The same contents in a libext2fs bitarray bitmap of a one-group file
 * system: a block bitmap made with ext2fs_allocate_block_bitmap covers
 * blocks [0, 32768) of an mke2fs -b 4096 image of 32768 blocks.
 */
static void bm_setup_ext2(struct bench_state *st)
{
	struct bm_ctx *c = bm_ctx_new(st, (int)bench_arg(st));
	ext2_filsys fs;

	if (!c || peer_ext2_create(NULL, GROUP_BITS, &c->peer))
		return;
	fs = peer_ext2_fs(c->peer);
	if (fs->super->s_first_data_block != 0 || peer_ext2_nblocks(c->peer) < GROUP_BITS ||
	    ext2fs_allocate_block_bitmap(fs, "bench", &c->bmap)) {
		c->bmap = NULL;
		return;
	}
	for (uint64_t b = 0; b < GROUP_BITS; b++)
		if (c->map[b / 64] >> (b % 64) & 1)
			ext2fs_mark_block_bitmap2(c->bmap, b);
}

static volatile uint64_t bm_sink;

static void bm_next_zero(struct bench_state *st)
{
	const struct bm_ctx *c = bench_ctx(st);
	uint64_t acc = 0, k = 0;
	bool rand_from = bench_arg(st) == 2;

	if (!c) {
		bench_skip(st, "setup failed (no AVX2 on this CPU?)");
		return;
	}
	while (bench_keep_running_batch(st, BATCH))
		for (int i = 0; i < BATCH; i++) {
			uint64_t from = rand_from ? c->from[k % NFROM] : 0;

			k++;

			acc += bga_bitmap_next_zero(c->map, GROUP_BITS, from);
		}
	bm_sink = acc;
	bench_set_items(st, (int64_t)k);
}

static void bm_bitmap_next_zero_auto(struct bench_state *st)
{
	bm_next_zero(st);
}

static void bm_bitmap_next_zero_scalar(struct bench_state *st)
{
	bm_next_zero(st);
}

static void bm_bitmap_next_zero_avx2(struct bench_state *st)
{
	bm_next_zero(st);
}

static void bm_bitmap_next_zero_ext2(struct bench_state *st)
{
	const struct bm_ctx *c = bench_ctx(st);
	uint64_t acc = 0, k = 0;
	bool rand_from = bench_arg(st) == 2;

	if (!c || !c->bmap) {
		bench_skip(st, "libext2fs peer setup failed");
		return;
	}
	/* Same answers, or the comparison means nothing. */
	for (unsigned i = 0; i < NFROM; i++) {
		uint64_t from = rand_from ? c->from[i] : 0, want;
		blk64_t got = 0;

		want = bga_bitmap_next_zero(c->map, GROUP_BITS, from);
		if (ext2fs_find_first_zero_block_bitmap2(c->bmap, from, GROUP_BITS - 1, &got))
			got = GROUP_BITS;
		if (got != want) {
			bench_skip(st, "libext2fs and bgalloc disagree");
			return;
		}
	}
	while (bench_keep_running_batch(st, BATCH))
		for (int i = 0; i < BATCH; i++) {
			uint64_t from = rand_from ? c->from[k % NFROM] : 0;

			k++;
			blk64_t out = 0;

			ext2fs_find_first_zero_block_bitmap2(c->bmap, from, GROUP_BITS - 1, &out);
			acc += out;
		}
	bm_sink = acc;
	bench_set_items(st, (int64_t)k);
}

BENCH(bm_bitmap_next_zero_auto, .setup = bm_setup_auto, .teardown = bm_ctx_free,
      .args = {0, 1, 2}, .nargs = 3);
BENCH(bm_bitmap_next_zero_scalar, .setup = bm_setup_scalar, .teardown = bm_ctx_free,
      .args = {0, 1, 2}, .nargs = 3);
BENCH(bm_bitmap_next_zero_avx2, .setup = bm_setup_avx2, .teardown = bm_ctx_free,
      .args = {0, 1, 2}, .nargs = 3);
BENCH(bm_bitmap_next_zero_ext2, .setup = bm_setup_ext2, .teardown = bm_ctx_free,
      .args = {0, 1, 2}, .nargs = 3);

/* popcount of the whole group (half-random map): what set/clear_range of a
 * long extent and a group's free-count check cost. */
static void bm_popcount(struct bench_state *st)
{
	const struct bm_ctx *c = bench_ctx(st);
	uint64_t acc = 0;

	if (!c) {
		bench_skip(st, "setup failed (no AVX2 on this CPU?)");
		return;
	}
	while (bench_keep_running_batch(st, BATCH))
		for (int i = 0; i < BATCH; i++)
			acc += bga_bitmap_popcount(c->map, (uint64_t)i, GROUP_BITS);
	bm_sink = acc;
}

static void bm_bitmap_popcount_scalar(struct bench_state *st)
{
	bm_popcount(st);
}

static void bm_bitmap_popcount_avx2(struct bench_state *st)
{
	bm_popcount(st);
}

BENCH(bm_bitmap_popcount_scalar, .setup = bm_setup_scalar, .teardown = bm_ctx_free,
      .args = {2}, .nargs = 1);
BENCH(bm_bitmap_popcount_avx2, .setup = bm_setup_avx2, .teardown = bm_ctx_free,
      .args = {2}, .nargs = 1);

/* The allocator's hot call: a run of 1..8 free bits near a random goal in a
 * half-full group. */
static void bm_bitmap_find_zero_run_auto(struct bench_state *st)
{
	const struct bm_ctx *c = bench_ctx(st);
	uint64_t acc = 0, k = 0, len = 0;

	if (!c) {
		bench_skip(st, "setup failed");
		return;
	}
	while (bench_keep_running_batch(st, BATCH))
		for (int i = 0; i < BATCH; i++)
			acc += bga_bitmap_find_zero_run(c->map, GROUP_BITS, c->from[k++ % NFROM], 1, 8,
							&len) + len;
	bm_sink = acc;
	bench_set_items(st, (int64_t)k);
}

BENCH(bm_bitmap_find_zero_run_auto, .setup = bm_setup_auto, .teardown = bm_ctx_free,
      .args = {2}, .nargs = 1);
