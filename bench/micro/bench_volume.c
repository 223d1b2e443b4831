/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Volume benchmarks (the `bga-bench` executable): churn, hot-group churn,
 * extents, fill to full and sparse search, each for three variants:
 *
 *   __bgalloc   bga_create() with the default configuration;
 *   __baseline  cfg.flags = BGA_GLOBAL_LOCK | BGA_ATOMIC_COUNTERS (one lock,
 *               one shared counter: ext3 before 2.5.x, fuse2fs);
 *   __ext2      libext2fs on a mke2fs image behind one mutex (peer_ext2.c).
 *
 * Names are <benchmark>__<variant>/real_time/threads:N, which
 * volume_ratios.py parses.  items_per_second is the throughput of the whole
 * run (all threads, wall clock).  Every thread draws from its own
 * fixed-seed xorshift64* stream, so runs are repeatable.
 *
 * Choices that the numbers depend on:
 *  - churn: a 2^20-block volume and a working set of 4096 blocks split
 *    evenly between threads.  One item = free a random block of the
 *    thread's set + allocate one block at a random goal into its slot.
 *    "_half" pre-fills a random pattern in setup so that half of all blocks
 *    are in use (for the peer, counting the blocks mke2fs's metadata holds:
 *    the same fraction, not the same pattern).
 *  - hot: as churn on the empty volume, but every allocation (and the
 *    initial working set) aims at goal 0.
 *  - extents: random lengths 8..256, min_len = max_len = len for every
 *    variant (exactly what the peer's ext2fs_new_range is asked, so every
 *    variant moves the same number of blocks), random goal; each thread
 *    keeps at most 1024/threads extents live and frees the oldest first.
 *    One item = one extent allocated (and, in steady state, one freed).
 *  - fill: one iteration = allocate single blocks with no goal until
 *    -ENOSPC on a 2^20-block volume, check that the blocks handed out equal
 *    the free count at start, then free everything back (a few dozen range
 *    frees, negligible next to a million allocations).  One item = one block.
 *    The peer has no "no goal"; it gets what a fuse2fs-style caller passes,
 *    the block after its previous one (threads start spread out).
 *  - sparse: a 2^35-block volume (2^20 groups of 32768).  "_full" is full
 *    but for its last group, filled in setup by 2^20 - 1 whole-group
 *    allocations (min_len = max_len = 32768, BGA_EXACT_GOAL) and kept
 *    across runs; "_empty" is untouched.  One item = one single-block
 *    allocation at goal 0, freed straight back.  libext2fs is not run here:
 *    a 128 TiB mke2fs image is out of reach of a benchmark.  The setup
 *    time is reported as the counter fill_setup_s.
 *
 * Run, then read the ratios from the medians of that one run:
 *   bga-bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
 *             --benchmark_enable_random_interleaving=true \
 *             --benchmark_out=vol.json --benchmark_out_format=json
 *   bench/report/volume_ratios.py vol.json
 * Interleaving spreads a shared machine's changing load over every variant
 * instead of letting it land on whichever ran at the wrong moment.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bgalloc.h>

#include "peer_ext2.h"
#include "rng.h"
#include "shim.h"
#include "vol.h"

enum variant { V_BGA, V_BASE, V_EXT2 };

static const char *const variant_name[] = {"bgalloc", "baseline", "ext2"};

/* ---- one face over the three allocators ------------------------------ */

static int vol_open(struct vol *vl, enum variant v, uint64_t nblocks)
{
	int rc;

	memset(vl, 0, sizeof(*vl));
	if (v != V_EXT2)
		return vol_open_bga(vl, nblocks, v == V_BASE);
	rc = peer_ext2_create(NULL, nblocks, &vl->peer);
	if (rc)
		return rc;
	vl->nblocks = peer_ext2_nblocks(vl->peer);
	return 0;
}

static void vol_close(struct vol *vl)
{
	if (vl->peer)
		peer_ext2_destroy(vl->peer);
	if (vl->bga)
		bga_destroy(vl->bga);
	vl->peer = NULL;
	vl->bga = NULL;
}

static uint64_t vol_free_count(struct vol *vl)
{
	if (vl->bga)
		return bga_free_exact(vl->bga);
	return peer_ext2_free_blocks(vl->peer);
}

/* ---- free-run lists (single-threaded, setup only) --------------------- */

struct runs {
	struct bga_extent *e;
	size_t n, cap;
};

static int runs_add(void *ctx, uint64_t start, uint64_t len)
{
	struct runs *r = ctx;

	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 64;
		struct bga_extent *e = realloc(r->e, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		r->e = e;
		r->cap = cap;
	}
	r->e[r->n].start = start;
	r->e[r->n].len = len;
	r->n++;
	return 0;
}

/*
 * Every free extent of the volume now.  bgalloc's are split at group edges
 * (as bga_foreach_free reports them), so giving them back is one
 * single-group free each, the common case, not a free across groups.
 */
static int vol_free_runs(struct vol *vl, struct runs *out)
{
	memset(out, 0, sizeof(*out));
	if (vl->bga)
		return bga_foreach_free(vl->bga, 0, vl->nblocks, 1, runs_add, out);

	ext2fs_block_bitmap map = peer_ext2_fs(vl->peer)->block_map;
	uint64_t first = peer_ext2_fs(vl->peer)->super->s_first_data_block;
	uint64_t end = vl->nblocks - 1;
	blk64_t b = first, z, s;

	while (b <= end && ext2fs_find_first_zero_block_bitmap2(map, b, end, &z) == 0) {
		if (ext2fs_find_first_set_block_bitmap2(map, z, end, &s) != 0)
			s = end + 1;
		if (runs_add(out, z, s - z))
			return -ENOMEM;
		b = s;
	}
	return 0;
}

/*
 * Mark a random pattern in use until `frac` of all blocks are: each free
 * block is taken with the probability that gets there in expectation.
 * bgalloc takes its runs with BGA_EXACT_GOAL; the peer marks its bitmap
 * directly (what ext2fs_block_alloc_stats_range does for a caller that
 * already chose its blocks).
 */
static int vol_prefill(struct vol *vl, double frac, uint64_t seed)
{
	uint64_t free0 = vol_free_count(vl), used0 = vl->nblocks - free0;
	double want = frac * (double)vl->nblocks - (double)used0;
	uint64_t thresh, gsize = 32768;
	struct runs fr;
	struct rng r;
	int rc;

	if (want <= 0 || free0 == 0)
		return 0;
	thresh = want >= (double)free0 ? UINT64_MAX : (uint64_t)(want / (double)free0 * 18446744073709551616.0);
	rng_seed(&r, seed, 77);
	rc = vol_free_runs(vl, &fr);
	if (rc)
		goto out;
	for (size_t i = 0; i < fr.n && !rc; i++) {
		uint64_t b = fr.e[i].start, end = fr.e[i].start + fr.e[i].len;

		while (b < end && !rc) {
			uint64_t s, stop;

			if (rng_next(&r) >= thresh) {
				b++;
				continue;
			}
			/* a run of chosen blocks, kept inside one group */
			s = b++;
			stop = (s / gsize + 1) * gsize;
			while (b < end && b < stop && rng_next(&r) < thresh)
				b++;
			if (!vl->bga) {
				ext2fs_block_alloc_stats_range(peer_ext2_fs(vl->peer), s, (blk_t)(b - s), +1);
			} else {
				struct bga_request req = {
					.goal = s, .min_len = b - s, .max_len = b - s, .flags = BGA_EXACT_GOAL,
				};
				struct bga_extent e;

				rc = bga_alloc(vl->bga, &req, &e);
				if (!rc && (e.start != s || e.len != b - s))
					rc = -EIO;
			}
			/* the block that ended the run stays free */
			if (b < end && b < stop)
				b++;
		}
	}
out:
	free(fr.e);
	return rc;
}

#define THREADS .threads = {1, 2, 4, 16, 64}

/*
 * The teardown of a context that holds nothing but its volume and plain
 * memory (churn's and extents'): each starts with its struct vol, so the
 * context pointer is the volume's.
 */
static void vol_ctx_teardown(struct bench_state *st)
{
	struct vol *vl = bench_ctx(st);

	if (!vl)
		return;
	vol_close(vl);
	free(vl);
}


/* ---- churn and hot-group churn ---------------------------------------- */

#define CHURN_BLOCKS (UINT64_C(1) << 20)
#define CHURN_WSET 4096

struct churn_ctx {
	struct vol vol;
	int hot;
	uint64_t slot[CHURN_WSET];
};

static void churn_setup(struct bench_state *st, enum variant v, double frac, int hot)
{
	struct churn_ctx *c = calloc(1, sizeof(*c));
	struct bga_extent e;
	struct rng r;
	int rc;

	if (!c) {
		fprintf(stderr, "bench setup: out of memory\n");
		return;
	}
	c->hot = hot;
	rc = vol_open(&c->vol, v, CHURN_BLOCKS);
	if (!rc && frac > 0)
		rc = vol_prefill(&c->vol, frac, 1);
	rng_seed(&r, 2, 0);
	for (int i = 0; i < CHURN_WSET && !rc; i++) {
		rc = vol_alloc(&c->vol, hot ? 0 : rng_below(&r, c->vol.nblocks), 1, 1, NULL, &e);
		c->slot[i] = e.start;
	}
	if (rc) {
		fprintf(stderr, "churn setup (%s): %s\n", variant_name[v], strerror(-rc));
		vol_close(&c->vol);
		free(c);
		return;
	}
	bench_set_ctx(st, c);
}

static void churn(struct bench_state *st)
{
	struct churn_ctx *c = bench_ctx(st);
	int nthr = bench_threads(st), ti = bench_thread_index(st);
	uint64_t per = CHURN_WSET / (uint64_t)nthr, *slot, n, ops = 0;
	struct bga_extent e;
	struct rng r;
	int rc = 0;

	bench_pin(st);

	if (!c) {
		bench_skip(st, "setup failed (see stderr)");
		return;
	}
	n = c->vol.nblocks;
	slot = c->slot + (uint64_t)ti * per;
	rng_seed(&r, 1000 + (uint64_t)ti, 1);
	while (!rc && bench_keep_running_batch(st, 64)) {
		for (int i = 0; i < 64; i++) {
			uint64_t k = rng_below(&r, per);
			uint64_t goal = c->hot ? 0 : rng_below(&r, n);

			rc = vol_free(&c->vol, slot[k], 1);
			if (rc)
				break;
			rc = vol_alloc(&c->vol, goal, 1, 1, NULL, &e);
			if (rc)
				break;
			slot[k] = e.start;
		}
		ops += 64;
	}
	bench_set_items(st, (int64_t)ops);
	if (rc)
		bench_skip(st, rc == -ENOSPC ? "churn: unexpected ENOSPC" : "churn: alloc/free failed");
}

/* ---- extents ---------------------------------------------------------- */

#define EXT_BLOCKS (UINT64_C(1) << 20)
#define EXT_LIVE 1024

struct ext_ctx {
	struct vol vol;
	struct bga_extent live[EXT_LIVE];
};

static void ext_setup(struct bench_state *st, enum variant v)
{
	struct ext_ctx *c = calloc(1, sizeof(*c));
	int rc;

	if (!c) {
		fprintf(stderr, "bench setup: out of memory\n");
		return;
	}
	rc = vol_open(&c->vol, v, EXT_BLOCKS);
	if (rc) {
		free(c);
		fprintf(stderr, "extents setup (%s): %s\n", variant_name[v], strerror(-rc));
		return;
	}
	bench_set_ctx(st, c);
}

static void extents(struct bench_state *st)
{
	struct ext_ctx *c = bench_ctx(st);
	int nthr = bench_threads(st), ti = bench_thread_index(st);
	uint64_t cap = EXT_LIVE / (uint64_t)nthr, head = 0, count = 0, ops = 0, blocks = 0;
	struct bga_extent *ring, e;
	struct rng r;
	int rc = 0;

	bench_pin(st);

	if (!c) {
		bench_skip(st, "setup failed (see stderr)");
		return;
	}
	ring = c->live + (uint64_t)ti * cap;
	rng_seed(&r, 3000 + (uint64_t)ti, 3);
	while (!rc && bench_keep_running_batch(st, 16)) {
		for (int i = 0; i < 16; i++) {
			uint64_t len = 8 + rng_below(&r, 249);
			uint64_t goal = rng_below(&r, c->vol.nblocks);

			if (count == cap) {
				rc = vol_free(&c->vol, ring[head].start, ring[head].len);
				if (rc)
					break;
				head = (head + 1) % cap;
				count--;
			}
			rc = vol_alloc(&c->vol, goal, len, len, NULL, &e);
			if (rc)
				break;
			ring[(head + count) % cap] = e;
			count++;
			blocks += e.len;
		}
		ops += 16;
	}
	bench_set_items(st, (int64_t)ops);
	bench_set_counter(st, "blocks_per_extent", ops ? (double)blocks / (double)ops : 0);
	if (rc)
		bench_skip(st, "extents: alloc/free failed");
}

/* ---- fill to full ----------------------------------------------------- */

#define FILL_BLOCKS (UINT64_C(1) << 20)

struct fill_ctx {
	struct vol vol;
	uint64_t free_at_start;
	struct runs free_runs; /* what to give back after each fill */
	pthread_barrier_t bar;
	_Atomic uint64_t total;
	_Atomic int bad;       /* 1: count mismatch, 2: alloc error, 3: refill error */
};

static void fill_setup(struct bench_state *st, enum variant v)
{
	struct fill_ctx *c = calloc(1, sizeof(*c));
	int rc;

	if (!c) {
		fprintf(stderr, "bench setup: out of memory\n");
		return;
	}
	rc = vol_open(&c->vol, v, FILL_BLOCKS);
	if (!rc)
		rc = vol_free_runs(&c->vol, &c->free_runs);
	if (rc) {
		vol_close(&c->vol);
		free(c->free_runs.e);
		free(c);
		fprintf(stderr, "fill setup (%s): %s\n", variant_name[v], strerror(-rc));
		return;
	}
	c->free_at_start = vol_free_count(&c->vol);
	pthread_barrier_init(&c->bar, NULL, (unsigned)bench_threads(st));
	bench_set_ctx(st, c);
}

static void fill_teardown(struct bench_state *st)
{
	struct fill_ctx *c = bench_ctx(st);

	if (!c)
		return;
	pthread_barrier_destroy(&c->bar);
	vol_close(&c->vol);
	free(c->free_runs.e);
	free(c);
}

static void fill(struct bench_state *st)
{
	struct fill_ctx *c = bench_ctx(st);
	int nthr = bench_threads(st), ti = bench_thread_index(st);
	uint64_t items = 0;

	bench_pin(st);

	if (!c) {
		bench_skip(st, "setup failed (see stderr)");
		return;
	}
	/* Every thread runs the same number of iterations, so the barriers
	 * below always see all of them. */
	while (bench_keep_running_batch(st, 1)) {
		uint64_t n = 0, goal = BGA_NO_GOAL;
		struct bga_extent e;
		int rc;

		if (!c->vol.bga)
			goal = c->vol.nblocks / (uint64_t)nthr * (uint64_t)ti;
		while ((rc = vol_alloc(&c->vol, goal, 1, 1, NULL, &e)) == 0) {
			n++;
			if (!c->vol.bga)
				goal = e.start + 1;
		}
		if (rc != -ENOSPC)
			atomic_store(&c->bad, 2);
		atomic_fetch_add(&c->total, n);
		items += n;
		pthread_barrier_wait(&c->bar);
		if (ti == 0) {
			if (atomic_load(&c->total) != c->free_at_start || vol_free_count(&c->vol) != 0)
				atomic_store(&c->bad, 1);
			for (size_t i = 0; i < c->free_runs.n; i++)
				if (vol_free(&c->vol, c->free_runs.e[i].start, c->free_runs.e[i].len))
					atomic_store(&c->bad, 3);
			atomic_store(&c->total, 0);
		}
		pthread_barrier_wait(&c->bar);
	}
	bench_set_items(st, (int64_t)items);
	if (ti == 0) {
		switch (atomic_load(&c->bad)) {
		case 1:
			bench_skip(st, "fill: blocks handed out != free blocks at start");
			break;
		case 2:
			bench_skip(st, "fill: allocation failed with an error other than ENOSPC");
			break;
		case 3:
			bench_skip(st, "fill: freeing the filled volume failed");
			break;
		}
	}
}

/* ---- sparse search ---------------------------------------------------- */

#define SPARSE_GROUPS (UINT64_C(1) << 20)
#define SPARSE_BPG UINT64_C(32768)

/*
 * The full-but-one volume costs 2^20 allocations to build, so each of the
 * four sparse volumes is built once, on first use, and kept until exit
 * (each run gives back what it takes, so runs see the same state, and runs
 * may come in any order, e.g. with --benchmark_enable_random_interleaving).
 * A full one holds about 40 MB.
 */
struct sparse_cache {
	int valid;
	struct vol vol;
	double setup_s;
};

static struct sparse_cache sparse[2][2]; /* [variant][full] */

static void sparse_drop_all(void)
{
	for (int v = 0; v < 2; v++)
		for (int f = 0; f < 2; f++)
			if (sparse[v][f].valid)
				vol_close(&sparse[v][f].vol);
}

static void sparse_setup(struct bench_state *st, enum variant v, int full)
{
	static int registered;
	struct sparse_cache *c = &sparse[v][full];
	double t0;
	int rc;

	if (c->valid) {
		bench_set_ctx(st, c);
		return;
	}
	if (!registered++)
		atexit(sparse_drop_all);
	t0 = now_s();
	rc = vol_open(&c->vol, v, SPARSE_GROUPS * SPARSE_BPG);
	/* every group but the last, the farthest from goal 0 */
	for (uint64_t g = 0; full && !rc && g < SPARSE_GROUPS - 1; g++) {
		struct bga_request req = {
			.goal = g * SPARSE_BPG, .min_len = SPARSE_BPG, .max_len = SPARSE_BPG,
			.flags = BGA_EXACT_GOAL,
		};
		struct bga_extent e;

		rc = bga_alloc(c->vol.bga, &req, &e);
	}
	if (rc) {
		fprintf(stderr, "sparse setup (%s, %s): %s\n", variant_name[v], full ? "full" : "empty",
			strerror(-rc));
		vol_close(&c->vol);
		return;
	}
	c->setup_s = now_s() - t0;
	if (full)
		fprintf(stderr, "sparse setup (%s): 2^20 - 1 whole-group allocations in %.3f s\n",
			variant_name[v], c->setup_s);
	c->valid = 1;
	bench_set_ctx(st, c);
}

static void sparse_search(struct bench_state *st)
{
	struct sparse_cache *c = bench_ctx(st);
	uint64_t ops = 0;
	struct bga_extent e;
	int rc = 0;

	if (!c) {
		bench_skip(st, "setup failed (see stderr)");
		return;
	}
	while (!rc && bench_keep_running_batch(st, 64)) {
		for (int i = 0; i < 64; i++) {
			rc = vol_alloc(&c->vol, 0, 1, 1, NULL, &e);
			if (rc)
				break;
			rc = vol_free(&c->vol, e.start, 1);
			if (rc)
				break;
		}
		ops += 64;
	}
	bench_set_items(st, (int64_t)ops);
	bench_set_counter(st, "fill_setup_s", c->setup_s);
	if (rc)
		bench_skip(st, "sparse: alloc/free failed");
}

/* ---- registration ----------------------------------------------------- */

/* One benchmark per (body, variant), so the variant is in the name. */
#define BENCH_VARIANT(name, body, setup_call, teardown_fn)                      \
	static void name##_setup(struct bench_state *st)                          \
	{                                                                         \
		setup_call;                                                       \
	}                                                                         \
	static void name(struct bench_state *st)                                  \
	{                                                                         \
		body(st);                                                         \
	}                                                                         \
	BENCH(name, .setup = name##_setup, .teardown = teardown_fn, THREADS)

BENCH_VARIANT(churn_empty__bgalloc, churn, churn_setup(st, V_BGA, 0, 0), vol_ctx_teardown);
BENCH_VARIANT(churn_empty__baseline, churn, churn_setup(st, V_BASE, 0, 0), vol_ctx_teardown);
BENCH_VARIANT(churn_empty__ext2, churn, churn_setup(st, V_EXT2, 0, 0), vol_ctx_teardown);

BENCH_VARIANT(churn_half__bgalloc, churn, churn_setup(st, V_BGA, 0.5, 0), vol_ctx_teardown);
BENCH_VARIANT(churn_half__baseline, churn, churn_setup(st, V_BASE, 0.5, 0), vol_ctx_teardown);
BENCH_VARIANT(churn_half__ext2, churn, churn_setup(st, V_EXT2, 0.5, 0), vol_ctx_teardown);

BENCH_VARIANT(hot__bgalloc, churn, churn_setup(st, V_BGA, 0, 1), vol_ctx_teardown);
BENCH_VARIANT(hot__baseline, churn, churn_setup(st, V_BASE, 0, 1), vol_ctx_teardown);
BENCH_VARIANT(hot__ext2, churn, churn_setup(st, V_EXT2, 0, 1), vol_ctx_teardown);

BENCH_VARIANT(extents__bgalloc, extents, ext_setup(st, V_BGA), vol_ctx_teardown);
BENCH_VARIANT(extents__baseline, extents, ext_setup(st, V_BASE), vol_ctx_teardown);
BENCH_VARIANT(extents__ext2, extents, ext_setup(st, V_EXT2), vol_ctx_teardown);

BENCH_VARIANT(fill__bgalloc, fill, fill_setup(st, V_BGA), fill_teardown);
BENCH_VARIANT(fill__baseline, fill, fill_setup(st, V_BASE), fill_teardown);
BENCH_VARIANT(fill__ext2, fill, fill_setup(st, V_EXT2), fill_teardown);

BENCH_VARIANT(sparse_empty__bgalloc, sparse_search, sparse_setup(st, V_BGA, 0), NULL);
BENCH_VARIANT(sparse_empty__baseline, sparse_search, sparse_setup(st, V_BASE, 0), NULL);
BENCH_VARIANT(sparse_full__bgalloc, sparse_search, sparse_setup(st, V_BGA, 1), NULL);
BENCH_VARIANT(sparse_full__baseline, sparse_search, sparse_setup(st, V_BASE, 1), NULL);
