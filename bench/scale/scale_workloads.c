/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-scale's workloads and variants: the tables main, the runner and
 * the report read, and each workload's setup, loop and teardown, which
 * worker_main (scale_run.c) calls through wl_setup/wl_loop/wl_teardown.
 *
 * Workloads (one "op" is what the throughput counts):
 *  churn    free a random block of the thread's share of a 4096-block
 *           working set, allocate one block at a random goal on a
 *           2^20-block volume.  op = one free + one allocation.
 *  hot      churn with every allocation (and the initial set) at goal 0.
 *  extents  allocate a random 8..256-block extent (min_len = max_len, what
 *           the peer's ext2fs_new_range is asked) at a random goal; each
 *           thread keeps max(1, 1024/threads) extents live and frees the
 *           oldest first.  op = one extent allocated (and one freed).
 *  writers  every thread writes 256-block files one block at a time, goal
 *           = last block + 1, through a per-file bga_rsv window (opened at
 *           file creation, closed when the file is complete); all files
 *           start at the same "directory" goal (group 1), so writers
 *           interleave as in the ext3 reservation-window case.  A thread
 *           keeps its last 4 files and deletes the oldest.  op = one block
 *           written.  Extents per completed file are reported as well.
 *  script   SDET/dbench stand-in: each thread owns 16 file slots and a
 *           "directory" group of its own; an op picks a slot and creates
 *           the file (1..4 blocks at the directory), extends it (1..4
 *           blocks at last + 1; at 8 extents or 32 blocks it is deleted
 *           instead) or deletes it (1 in 3).  Deletes free each extent with
 *           bga_free_deferred() in the running transaction; every
 *           --commit-every ops of all threads together one thread commits
 *           it (bga_commit()), as a journal thread would.  op = one file
 *           operation.
 *  counter  bga_counter_add(c, 1).  op = one add.
 *  appenders-own, appenders-shared
 *           the file system's case of issue 13: writers that keep 16
 *           complete files (and write a 17th), on their own 2^22-block
 *           volume (--append-blocks): 128 groups, room for 64 threads'
 *           directories.  -own: each thread's files start in a directory
 *           (group) of its own, 1 + idx * ((groups - 1) / threads), so the
 *           threads are as far apart as the volume allows; -shared: every
 *           file starts at group 1, as writers.  The variants are the
 *           writers': bgalloc and baseline through a window per file,
 *           bgalloc-nowin and ext2 without.  op = one block appended (its
 *           share of the oldest file's delete included).
 *
 * Variants:
 *  bgalloc        bga_create() defaults.
 *  baseline       BGA_GLOBAL_LOCK | BGA_ATOMIC_COUNTERS: one lock and one
 *                 shared counter, ext3 before the 2.5 patches.
 *  ext2           libext2fs on an mke2fs image behind one mutex, as fuse2fs
 *                 (support/peer_ext2.c).  Mapping: one block is
 *                 ext2fs_new_block2 + alloc_stats; an extent is
 *                 ext2fs_new_range(MIN_LENGTH) for exactly that length; a
 *                 free is alloc_stats_range(-1).  Writers run without
 *                 windows (goal = last + 1 only; libext2fs has none);
 *                 script frees at once (libext2fs has no deferral; fuse2fs
 *                 has no journal).  BGA_NO_GOAL is goal 0.
 *  bgalloc-nowin  (writers, appenders) bgalloc with no window: what windows buy.
 *  percpu/atomic  (counter only) BGA_COUNTER_PERCPU / BGA_COUNTER_ATOMIC.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "cpu.h" /* bga__cpu_source: see cpu_source() */
#include "scale_ctx.h"

/* ---- the tables ---------------------------------------------------------- */

const char *const variant_name[V_COUNT] = {
	"bgalloc", "baseline", "ext2", "bgalloc-nowin", "percpu", "atomic",
};

/* Said in the JSON, and so in the report, next to every table. */
const char *const variant_doc[V_COUNT] = {
	"bgalloc with its defaults (per-group locks in a hashed table, per-CPU counters)",
	"bgalloc with BGA_GLOBAL_LOCK | BGA_ATOMIC_COUNTERS: one lock, one shared counter (ext3 before the patch)",
	"libext2fs on a mke2fs image, one mutex around every call, as fuse2fs",
	"bgalloc defaults, allocating without a reservation window",
	"bga_counter in BGA_COUNTER_PERCPU mode",
	"bga_counter in BGA_COUNTER_ATOMIC mode (one shared atomic)",
};

const struct workload workloads[W_COUNT] = {
	[W_CHURN] = {"churn", "Churn, random goal (free 1 + alloc 1, 4096-block working set, 2^20 blocks)",
		     "free+alloc", "ext2: ext2fs_new_block2 at the goal + ext2fs_block_alloc_stats2", {V_BGA, V_BASE, V_EXT2}, 3, V_BASE},
	[W_HOT] = {"hot", "Hot-group churn (every allocation at goal 0)", "free+alloc",
		   "as churn; the peer scans from block 0 past its metadata every time, as it would", {V_BGA, V_BASE, V_EXT2}, 3, V_BASE},
	[W_EXTENTS] = {"extents", "Extents of 8..256 blocks, random goal, FIFO frees", "extent",
		       "min_len = max_len = len for all; ext2: ext2fs_new_range(MIN_LENGTH) for exactly len; "
		       "max(1, 1024/threads) extents live per thread",
		       {V_BGA, V_BASE, V_EXT2}, 3, V_BASE},
	[W_WRITERS] = {"writers", "Interleaved sequential writers (goal = last + 1, per-file windows)", "block",
		       "256-block files from one shared directory goal; bgalloc and baseline through a bga_rsv "
		       "window per file; ext2 and bgalloc-nowin without windows (libext2fs has none)",
		       {V_BGA, V_BASE, V_EXT2, V_NOWIN}, 4, V_BASE},
	[W_SCRIPT] = {"script", "Script mix: small files created/extended/deleted, deferred frees",
		      "file op",
		      "16 files per thread in a directory group of its own; deletes use bga_free_deferred in the "
		      "running txn, bga_commit every 1024 ops of all threads; ext2 frees at once (no journal)",
		      {V_BGA, V_BASE, V_EXT2}, 3, V_BASE},
	[W_COUNTER] = {"counter", "bga_counter_add(c, 1): per-CPU vs atomic", "add",
		       "batch 0 (auto); the exact sum is checked against the adds after every repetition",
		       {V_PERCPU, V_ATOMIC}, 2, V_ATOMIC},
	[W_APP_OWN] = {"appenders-own", "Appenders, a directory (group) of its own per thread", "block",
		       "256-block files, 16 kept per thread, oldest deleted, 2^22-block volume; bgalloc and baseline "
		       "through a bga_rsv window per file; ext2 and bgalloc-nowin without",
		       {V_BGA, V_BASE, V_EXT2, V_NOWIN}, 4, V_BASE},
	[W_APP_SHARED] = {"appenders-shared", "Appenders, every thread's files in one shared directory", "block",
			  "256-block files from group 1, 16 kept per thread, oldest deleted, 2^22-block volume; "
			  "bgalloc and baseline through a bga_rsv window per file; ext2 and bgalloc-nowin without",
			  {V_BGA, V_BASE, V_EXT2, V_NOWIN}, 4, V_BASE},
};

/* -- churn and hot ---------------------------------------------------------- */

#define NO_BLOCK UINT64_MAX

static int churn_setup(struct worker *wk)
{
	struct cell *c = wk->cell;
	uint32_t share = scale.opt.working_set / (uint32_t)c->nthreads;
	struct bga_extent e;

	wk->n = share ? share : 1;
	/* block numbers only (8 bytes a slot): the random walk over the
	 * slots is the harness's own cache footprint, kept small */
	wk->blk = malloc(wk->n * sizeof(*wk->blk));
	if (!wk->blk)
		return -ENOMEM;
	for (uint32_t i = 0; i < wk->n; i++) {
		uint64_t goal = c->w == W_HOT ? 0 : rng_below(&wk->rng, c->vol.nblocks);

		wk->blk[i] = vol_alloc(&c->vol, goal, 1, 1, NULL, &e) ? NO_BLOCK : e.start;
	}
	return 0;
}

static void churn_loop(struct worker *wk)
{
	struct cell *c = wk->cell;
	struct vol *vl = &c->vol;
	struct rng r = wk->rng; /* in a register, not reloaded after every call */
	bool hot = c->w == W_HOT;
	uint64_t ops = 0, errors = 0, *blk = wk->blk, n = wk->n, nblocks = vl->nblocks;
	struct bga_extent e;

	while (!should_stop(c)) {
		for (int k = 0; k < BATCH; k++) {
			uint64_t *b = &blk[rng_below(&r, n)];
			uint64_t goal = hot ? 0 : rng_below(&r, nblocks);

			if (*b != NO_BLOCK && vol_free(vl, *b, 1))
				errors++;
			if (vol_alloc(vl, goal, 1, 1, NULL, &e)) {
				*b = NO_BLOCK;
				errors++;
			} else {
				*b = e.start;
			}
		}
		ops += BATCH;
	}
	wk->rng = r;
	wk->ops = ops;
	wk->errors = errors;
}

static void churn_teardown(struct worker *wk)
{
	for (uint32_t i = 0; wk->blk && i < wk->n; i++)
		if (wk->blk[i] != NO_BLOCK)
			vol_free(&wk->cell->vol, wk->blk[i], 1);
	free(wk->blk);
	wk->blk = NULL;
}

static void ext_teardown(struct worker *wk)
{
	for (uint32_t i = 0; wk->ext && i < wk->n; i++)
		if (wk->ext[i].len)
			vol_free(&wk->cell->vol, wk->ext[i].start, wk->ext[i].len);
	free(wk->ext);
	wk->ext = NULL;
}

/* -- extents ------------------------------------------------------------------ */

static int extents_setup(struct worker *wk)
{
	uint32_t live = 1024 / (uint32_t)wk->cell->nthreads;

	wk->n = live ? live : 1;
	wk->head = wk->count = 0;
	wk->ext = calloc(wk->n, sizeof(*wk->ext));
	return wk->ext ? 0 : -ENOMEM;
}

static void extents_loop(struct worker *wk)
{
	struct cell *c = wk->cell;
	struct vol *vl = &c->vol;
	uint64_t ops = 0, errors = 0;

	struct rng r = wk->rng;

	while (!should_stop(c)) {
		for (int k = 0; k < BATCH; k++) {
			struct bga_extent *e = &wk->ext[wk->head];
			uint64_t len = 8 + rng_below(&r, 249);

			if (e->len && vol_free(vl, e->start, e->len))
				errors++;
			if (vol_alloc(vl, rng_below(&r, vl->nblocks), len, len, NULL, e)) {
				e->len = 0;
				errors++;
			}
			wk->head = wk->head + 1 == wk->n ? 0 : wk->head + 1;
		}
		ops += BATCH;
	}
	wk->rng = r;
	wk->ops = ops;
	wk->errors = errors;
}

/* -- writers -------------------------------------------------------------------- */

struct wfile {
	uint32_t next, blocks;
	struct bga_extent *ext; /* at most file_blocks of them */
};

/* A writer's files are a ring: the one being written, and nfiles - 1
 * complete ones; completing one deletes the oldest. */
struct writer {
	uint32_t nfiles, cur;
	uint64_t dir; /* where its files start */
	struct bga_rsv *rsv;
	struct wfile f[];
};

uint64_t wl_nblocks(enum wl_id w)
{
	return w == W_APP_OWN || w == W_APP_SHARED ? scale.opt.app_blocks : scale.opt.nblocks;
}

static uint64_t dir_goal_shared(const struct vol *vl)
{
	/* group 1: past the peer's first-group metadata, the same block for
	 * every variant */
	return vl->nblocks > 65536 ? 32768 : 0;
}

/* appenders-own: thread idx's directory, group 1 + idx * spread, the
 * threads as far apart as the groups allow (wrapping past 1 + groups - 1
 * only when there are more threads than groups) */
static uint64_t dir_goal_own(const struct worker *wk)
{
	uint64_t groups = wk->cell->vol.nblocks / 32768, spread;

	if (groups < 2)
		return 0;
	spread = (groups - 1) / (uint64_t)wk->cell->nthreads;
	if (!spread)
		spread = 1;
	return (1 + (uint64_t)wk->idx * spread % (groups - 1)) * 32768;
}

static bool writer_windows(const struct cell *c)
{
	return c->v == V_BGA || c->v == V_BASE;
}

static int writers_setup(struct worker *wk)
{
	enum wl_id id = wk->cell->w;
	uint32_t nfiles = id == W_WRITERS ? WRITER_FILES : APPEND_FILES + 1;
	struct writer *w = calloc(1, sizeof(*w) + nfiles * sizeof(w->f[0]));

	if (!w)
		return -ENOMEM;
	wk->wstate = w;
	w->nfiles = nfiles;
	w->dir = id == W_APP_OWN ? dir_goal_own(wk) : dir_goal_shared(&wk->cell->vol);
	for (uint32_t i = 0; i < nfiles; i++) {
		w->f[i].ext = calloc(scale.opt.file_blocks, sizeof(struct bga_extent));
		if (!w->f[i].ext)
			return -ENOMEM;
	}
	return 0;
}

static void wfile_delete(struct vol *vl, struct wfile *f, uint64_t *errors)
{
	for (uint32_t i = 0; i < f->next; i++)
		if (vol_free(vl, f->ext[i].start, f->ext[i].len))
			(*errors)++;
	f->next = f->blocks = 0;
}

static void writers_loop(struct worker *wk)
{
	struct cell *c = wk->cell;
	struct vol *vl = &c->vol;
	struct writer *w = wk->wstate;
	bool windows = writer_windows(c);
	uint64_t ops = 0, errors = 0, files = 0, extents = 0;
	uint64_t dir = w->dir;

	while (!should_stop(c)) {
		for (int k = 0; k < BATCH; k++) {
			struct wfile *f = &w->f[w->cur];
			struct bga_extent e;
			uint64_t goal;

			if (f->blocks == 0 && windows && !w->rsv && bga_rsv_open(vl->bga, &w->rsv))
				errors++;
			goal = f->next ? f->ext[f->next - 1].start + f->ext[f->next - 1].len : dir;
			if (goal >= vl->nblocks)
				goal = dir;
			if (vol_alloc(vl, goal, 1, 1, windows ? w->rsv : NULL, &e)) {
				errors++;
				continue;
			}
			if (f->next && f->ext[f->next - 1].start + f->ext[f->next - 1].len == e.start)
				f->ext[f->next - 1].len++;
			else
				f->ext[f->next++] = e;
			if (++f->blocks < scale.opt.file_blocks)
				continue;
			/* file complete: close its window, start the next file
			 * in place of the oldest one */
			files++;
			extents += f->next;
			bga_rsv_close(w->rsv);
			w->rsv = NULL;
			w->cur = w->cur + 1 == w->nfiles ? 0 : w->cur + 1;
			wfile_delete(vl, &w->f[w->cur], &errors);
		}
		ops += BATCH;
	}
	wk->ops = ops;
	wk->errors = errors;
	wk->files_done = files;
	wk->file_extents = extents;
}

static void writers_teardown(struct worker *wk)
{
	struct writer *w = wk->wstate;
	uint64_t errors = 0;

	if (!w)
		return;
	bga_rsv_close(w->rsv);
	for (uint32_t i = 0; i < w->nfiles; i++) {
		if (w->f[i].ext)
			wfile_delete(&wk->cell->vol, &w->f[i], &errors);
		free(w->f[i].ext);
	}
	wk->errors += errors;
	free(w);
	wk->wstate = NULL;
}

/* -- script mix ------------------------------------------------------------------ */

#define SCRIPT_MAX_EXT 8
#define SCRIPT_MAX_BLOCKS 32

struct sfile {
	uint32_t next, blocks;
	struct bga_extent ext[SCRIPT_MAX_EXT];
};

struct script {
	uint64_t dir;
	struct sfile f[SCRIPT_FILES];
};

static int script_setup(struct worker *wk)
{
	struct script *s = calloc(1, sizeof(*s));
	uint64_t groups = wk->cell->vol.nblocks / 32768;

	if (!s)
		return -ENOMEM;
	/* each script in its own directory, directories spread over the
	 * groups as Orlov spreads top-level directories (2654435761: a
	 * multiplicative hash, so threads 0, 1, 2... land far apart) */
	s->dir = groups > 1 ? (((uint64_t)wk->idx * 2654435761u + 1) % groups) * 32768 : 0;
	wk->wstate = s;
	return 0;
}

/* Free through the journal: the running transaction, which a concurrent
 * commit may close under us (then -EINVAL: take the next one). */
static int script_free(struct cell *c, uint64_t start, uint64_t len)
{
	if (c->v == V_EXT2)
		return vol_free(&c->vol, start, len);
	for (int tries = 0; tries < 8; tries++) {
		uint64_t txn = atomic_load_explicit(&c->txn, memory_order_acquire);
		int rc = bga_free_deferred(c->vol.bga, start, len, txn);

		if (rc != -EINVAL || txn == atomic_load_explicit(&c->txn, memory_order_acquire))
			return rc;
	}
	return -EINVAL;
}

static void script_commit(struct cell *c)
{
	uint64_t t = atomic_fetch_add_explicit(&c->txn, 1, memory_order_acq_rel);

	/* -EINVAL: a later txn was committed first, which covers this one */
	(void)bga_commit(c->vol.bga, t);
}

static int script_alloc(struct cell *c, uint64_t goal, uint64_t len, struct bga_extent *e)
{
	int rc = vol_alloc(&c->vol, goal, len, len, NULL, e);

	/* the space is there once the journal commits: commit and retry, as
	 * ext4 forces a commit on ENOSPC with pending frees */
	if (rc == -EAGAIN) {
		script_commit(c);
		rc = vol_alloc(&c->vol, goal, len, len, NULL, e);
	}
	return rc;
}

static void script_loop(struct worker *wk)
{
	struct cell *c = wk->cell;
	struct script *s = wk->wstate;
	bool deferred = c->v != V_EXT2;
	uint64_t ops = 0, errors = 0;

	while (!should_stop(c)) {
		for (int k = 0; k < BATCH; k++) {
			struct sfile *f = &s->f[rng_below(&wk->rng, SCRIPT_FILES)];
			uint64_t r = rng_next(&wk->rng);
			uint64_t len = 1 + (r & 3);
			bool del = f->blocks && ((r >> 8) % 3 == 0 || f->next == SCRIPT_MAX_EXT ||
						 f->blocks + len > SCRIPT_MAX_BLOCKS);

			if (del) {
				for (uint32_t i = 0; i < f->next; i++)
					if (script_free(c, f->ext[i].start, f->ext[i].len))
						errors++;
				f->next = f->blocks = 0;
				continue;
			}
			struct bga_extent *last = f->next ? &f->ext[f->next - 1] : NULL;
			uint64_t goal = last ? last->start + last->len : s->dir;
			struct bga_extent e;

			if (goal >= c->vol.nblocks)
				goal = s->dir;
			if (script_alloc(c, goal, len, &e)) {
				errors++;
				continue;
			}
			if (last && last->start + last->len == e.start)
				last->len += e.len;
			else
				f->ext[f->next++] = e;
			f->blocks += (uint32_t)e.len;
		}
		ops += BATCH;
		/* journal pacing, checked per batch so the shared line is
		 * touched once per BATCH ops, not per op */
		if (deferred) {
			uint64_t before = atomic_fetch_add_explicit(&c->script_ops, BATCH, memory_order_relaxed);

			if (before / scale.opt.commit_every != (before + BATCH) / scale.opt.commit_every)
				script_commit(c);
		}
	}
	wk->ops = ops;
	wk->errors = errors;
}

static void script_teardown(struct worker *wk)
{
	struct script *s = wk->wstate;

	if (!s)
		return;
	for (int i = 0; i < SCRIPT_FILES; i++)
		for (uint32_t j = 0; j < s->f[i].next; j++)
			if (vol_free(&wk->cell->vol, s->f[i].ext[j].start, s->f[i].ext[j].len))
				wk->errors++;
	free(s);
	wk->wstate = NULL;
}

/* -- counter -------------------------------------------------------------------- */

/* How this process's per-CPU counters add: "percpu-rseq" or "percpu-cas"
 * (bga_counter_mode_name), for the report. */
const char *counter_path(void)
{
	struct bga_counter *c;
	const char *name = "unknown";

	if (bga_counter_create(&c, 0, 0, BGA_COUNTER_PERCPU) == 0) {
		name = bga_counter_mode_name(c);
		bga_counter_destroy(c);
	}
	return name;
}

/* The library's own answer (bga__cpu_source, cpu.h: the one place of
 * bga-scale inside the library, tests/cycles/reach.txt): a report of
 * per-CPU scaling must say which CPU id the library read, and no public
 * call says it; guessing from glibc's rseq registration would report what
 * the machine offers, not what the library chose. */
const char *cpu_source(void)
{
	return bga__cpu_source();
}

static void counter_loop(struct worker *wk)
{
	struct cell *c = wk->cell;
	uint64_t ops = 0;

	while (!should_stop(c)) {
		for (int k = 0; k < COUNTER_BATCH; k++)
			bga_counter_add(c->counter, 1);
		ops += COUNTER_BATCH;
	}
	wk->ops = ops;
}

/* -- the harness ------------------------------------------------------------------ */

int wl_setup(struct worker *wk)
{
	switch (wk->cell->w) {
	case W_CHURN:
	case W_HOT:
		return churn_setup(wk);
	case W_EXTENTS:
		return extents_setup(wk);
	case W_WRITERS:
	case W_APP_OWN:
	case W_APP_SHARED:
		return writers_setup(wk);
	case W_SCRIPT:
		return script_setup(wk);
	default:
		return 0;
	}
}

void wl_loop(struct worker *wk)
{
	switch (wk->cell->w) {
	case W_CHURN:
	case W_HOT:
		churn_loop(wk);
		break;
	case W_EXTENTS:
		extents_loop(wk);
		break;
	case W_WRITERS:
	case W_APP_OWN:
	case W_APP_SHARED:
		writers_loop(wk);
		break;
	case W_SCRIPT:
		script_loop(wk);
		break;
	case W_COUNTER:
		counter_loop(wk);
		break;
	default:
		break;
	}
}

void wl_teardown(struct worker *wk)
{
	switch (wk->cell->w) {
	case W_CHURN:
	case W_HOT:
		churn_teardown(wk);
		break;
	case W_EXTENTS:
		ext_teardown(wk);
		break;
	case W_WRITERS:
	case W_APP_OWN:
	case W_APP_SHARED:
		writers_teardown(wk);
		break;
	case W_SCRIPT:
		script_teardown(wk);
		break;
	default:
		break;
	}
}
