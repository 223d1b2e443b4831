/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-scale: the scalability report driven by `make demo`.
 *
 * A plain pthreads driver with one harness for every workload.  A cell is
 * (workload, thread count, variant); each repetition of a cell creates its
 * threads, lets each build its own state (untimed), releases them all at
 * once through a barrier, sleeps for a fixed wall time while they run, then
 * raises a shared `stop` flag.  Workers read the flag once per batch of
 * operations and never read the clock inside their loop, so at 128 threads
 * on 2 cores the driver's own cost is one relaxed load per batch.  The
 * throughput of a repetition is the sum of every thread's operations over
 * the time from the first thread's start to the moment `stop` is raised
 * (each thread reads the clock twice per repetition, outside its loop; the
 * batch that straddles the stop counts half).  The timer thread runs
 * SCHED_FIFO where permitted so that it raises `stop` on time even with
 * 128 threads queued on 2 CPUs.  Workers are bound round-robin to the
 * allowed CPUs (--no-pin: not), so "2 threads" means 2 CPUs at once.
 * Per cell the JSON also keeps the share of the CPUs the process got (a
 * busy shared machine shows here), the share of lock acquisitions that
 * waited (bgalloc variants) and, for writers, extents per file and the
 * window hit ratio.
 *
 * Repetitions are interleaved across variants (rep 1 of every variant, then
 * rep 2, ...), so a burst of noise from a shared machine lands on all
 * variants alike instead of on one column.
 *
 * Output: one JSON document (--json) with every repetition's raw figures,
 * the median per cell, the configuration and the machine.  Tables, tests
 * and plots are bench/report.py's job.
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
 *
 * Variants:
 *  bgalloc        bga_create() defaults.
 *  baseline       BGA_GLOBAL_LOCK | BGA_ATOMIC_COUNTERS: one lock and one
 *                 shared counter, ext3 before the 2.5 patches.
 *  ext2           libext2fs on an mke2fs image behind one mutex, as fuse2fs
 *                 (bench/peer_ext2.c).  Mapping: one block is
 *                 ext2fs_new_block2 + alloc_stats; an extent is
 *                 ext2fs_new_range(MIN_LENGTH) for exactly that length; a
 *                 free is alloc_stats_range(-1).  Writers run without
 *                 windows (goal = last + 1 only; libext2fs has none);
 *                 script frees at once (libext2fs has no deferral; fuse2fs
 *                 has no journal).  BGA_NO_GOAL is goal 0.
 *  bgalloc-nowin  (writers only) bgalloc with no window: what windows buy.
 *  percpu/atomic  (counter only) BGA_COUNTER_PERCPU / BGA_COUNTER_ATOMIC.
 *
 * The peer's image is made once per process (mke2fs on a sparse file) and
 * reset between repetitions by freeing everything the workload allocated;
 * its free count is checked against the pristine one, and a fresh image is
 * made if it ever differs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bgalloc.h>
#include <bgalloc/counter.h>
#include <bgalloc/locktab.h>

#include "cpu.h" /* bga__cpu_source: the counter's CPU-id source, for the report */
#include "peer_ext2.h"
#include "rng.h"
#include "xfer.h"
#include "vol.h"

#define CACHELINE 128
#define MAX_THREADS 1024
#define MAX_REPS 100

/*
 * Operations between two looks at `stop` (a relaxed load of a line that is
 * written once per repetition): a batch is a few microseconds of work, so
 * the load is noise next to it, and the last batch of each thread, which
 * straddles the stop and is counted as half, moves a repetition's count by
 * at most threads * BATCH / 2 operations (512 at 128 threads).
 */
#define BATCH 8
#define COUNTER_BATCH 256

enum variant { V_BGA, V_BASE, V_EXT2, V_NOWIN, V_PERCPU, V_ATOMIC, V_COUNT };

static const char *const variant_name[V_COUNT] = {
	"bgalloc", "baseline", "ext2", "bgalloc-nowin", "percpu", "atomic",
};

/* Said in the JSON, and so in the report, next to every table. */
static const char *const variant_doc[V_COUNT] = {
	"bgalloc with its defaults (per-group locks in a hashed table, per-CPU counters)",
	"bgalloc with BGA_GLOBAL_LOCK | BGA_ATOMIC_COUNTERS: one lock, one shared counter (ext3 before the patch)",
	"libext2fs on a mke2fs image, one mutex around every call, as fuse2fs",
	"bgalloc defaults, allocating without a reservation window",
	"bga_counter in BGA_COUNTER_PERCPU mode",
	"bga_counter in BGA_COUNTER_ATOMIC mode (one shared atomic)",
};

enum wl_id { W_CHURN, W_HOT, W_EXTENTS, W_WRITERS, W_SCRIPT, W_COUNTER, W_COUNT };

struct workload {
	const char *name, *title, *op, *notes;
	enum variant variants[4];
	int nvariants;
	enum variant baseline;
};

static const struct workload workloads[W_COUNT] = {
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
};

/* ---- options ------------------------------------------------------------ */

static struct opts {
	double duration;
	int reps;
	int threads[64], nthreads;
	bool wl_on[W_COUNT];
	bool var_on[V_COUNT];
	uint64_t nblocks;
	uint32_t working_set;
	uint32_t file_blocks;
	uint32_t commit_every;
	uint64_t seed;
	const char *json;
	bool no_pin;
	const char *meta[32];
	int nmeta;
	bool quiet;
} opt;

/* ---- the allocators behind one face -------------------------------------- */

static struct peer_ext2 *peer;   /* made once per process */
static uint64_t peer_pristine;   /* its free count right after mke2fs */
static int peer_rebuilds;

static int peer_get(void)
{
	int rc;

	if (peer)
		return 0;
	rc = peer_ext2_create(NULL, opt.nblocks, &peer);
	if (rc) {
		fprintf(stderr, "bga-scale: cannot make the libext2fs image: %s\n", strerror(-rc));
		return rc;
	}
	peer_pristine = peer_ext2_free_blocks(peer);
	return 0;
}

static int vol_open(struct vol *vl, enum variant v)
{
	memset(vl, 0, sizeof(*vl));
	if (v == V_EXT2) {
		int rc = peer_get();

		if (rc)
			return rc;
		vl->peer = peer;
		vl->nblocks = peer_ext2_nblocks(peer);
		return 0;
	}
	return vol_open_bga(vl, opt.nblocks, v == V_BASE);
}

/* The peer outlives the cell; it must come back exactly as it was. */
static void vol_close(struct vol *vl)
{
	if (vl->bga)
		bga_destroy(vl->bga);
	if (vl->peer && peer_ext2_free_blocks(vl->peer) != peer_pristine) {
		fprintf(stderr, "bga-scale: ext2 image not back to its pristine free count; making a fresh one\n");
		peer_ext2_destroy(peer);
		peer = NULL;
		peer_rebuilds++;
	}
	memset(vl, 0, sizeof(*vl));
}

/* ---- one repetition -------------------------------------------------------- */

struct cell;

/*
 * One thread's state, on its own lines.  ops/errors/t_start/t_end are
 * written by the worker and read by the main thread after the joins.
 */
struct worker {
	struct cell *cell;
	int idx;
	struct rng rng;
	uint64_t ops, ops_done, errors; /* ops: as counted (last batch half); ops_done: all */
	double t_start, t_end;
	/* workload state */
	uint64_t *blk;          /* churn/hot: the thread's share of the working set */
	struct bga_extent *ext; /* extents: the FIFO (len 0 = empty) */
	uint32_t n, head, count;
	void *wstate;
	uint64_t files_done, file_extents;
} __attribute__((aligned(CACHELINE)));

struct cell {
	enum wl_id w;
	enum variant v;
	int nthreads;
	int rep;
	struct vol vol;
	struct bga_counter *counter;
	pthread_barrier_t start, done;
	/* written by the main thread once, read by every worker per batch */
	_Alignas(CACHELINE) atomic_int stop;
	/* script: the running transaction and the op count that paces commits */
	_Alignas(CACHELINE) _Atomic uint64_t txn;
	_Alignas(CACHELINE) _Atomic uint64_t script_ops;
	_Alignas(CACHELINE) struct worker *workers;
};

static inline bool should_stop(struct cell *c)
{
	return atomic_load_explicit(&c->stop, memory_order_relaxed);
}

/* -- churn and hot ---------------------------------------------------------- */

#define NO_BLOCK UINT64_MAX

static int churn_setup(struct worker *wk)
{
	struct cell *c = wk->cell;
	uint32_t share = opt.working_set / (uint32_t)c->nthreads;
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

#define WRITER_FILES 4

struct wfile {
	uint32_t next, blocks;
	struct bga_extent *ext; /* at most file_blocks of them */
};

struct writer {
	struct wfile f[WRITER_FILES];
	uint32_t cur;
	struct bga_rsv *rsv;
};

static uint64_t dir_goal_shared(const struct vol *vl)
{
	/* group 1: past the peer's first-group metadata, the same block for
	 * every variant */
	return vl->nblocks > 65536 ? 32768 : 0;
}

static bool writer_windows(const struct cell *c)
{
	return c->v == V_BGA || c->v == V_BASE;
}

static int writers_setup(struct worker *wk)
{
	struct writer *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	wk->wstate = w;
	for (int i = 0; i < WRITER_FILES; i++) {
		w->f[i].ext = calloc(opt.file_blocks, sizeof(struct bga_extent));
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
	uint64_t dir = dir_goal_shared(vl);

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
			if (++f->blocks < opt.file_blocks)
				continue;
			/* file complete: close its window, start the next file
			 * in place of the oldest one */
			files++;
			extents += f->next;
			bga_rsv_close(w->rsv);
			w->rsv = NULL;
			w->cur = (w->cur + 1) % WRITER_FILES;
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
	for (int i = 0; i < WRITER_FILES; i++) {
		if (w->f[i].ext)
			wfile_delete(&wk->cell->vol, &w->f[i], &errors);
		free(w->f[i].ext);
	}
	wk->errors += errors;
	free(w);
	wk->wstate = NULL;
}

/* -- script mix ------------------------------------------------------------------ */

#define SCRIPT_FILES 16
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

			if (before / opt.commit_every != (before + BATCH) / opt.commit_every)
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
static const char *counter_path(void)
{
	struct bga_counter *c;
	const char *name = "unknown";

	if (bga_counter_create(&c, 0, 0, BGA_COUNTER_PERCPU) == 0) {
		name = bga_counter_mode_name(c);
		bga_counter_destroy(c);
	}
	return name;
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

static int wl_setup(struct worker *wk)
{
	switch (wk->cell->w) {
	case W_CHURN:
	case W_HOT:
		return churn_setup(wk);
	case W_EXTENTS:
		return extents_setup(wk);
	case W_WRITERS:
		return writers_setup(wk);
	case W_SCRIPT:
		return script_setup(wk);
	default:
		return 0;
	}
}

static void wl_loop(struct worker *wk)
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

static void wl_teardown(struct worker *wk)
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
		writers_teardown(wk);
		break;
	case W_SCRIPT:
		script_teardown(wk);
		break;
	default:
		break;
	}
}

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct cell *c = wk->cell;

	if (wl_setup(wk))
		wk->errors++;
	pthread_barrier_wait(&c->start);
	wk->t_start = now_s();
	wl_loop(wk);
	wk->t_end = now_s();
	/* the last batch began before the stop and ended at or after it */
	int batch = c->w == W_COUNTER ? COUNTER_BATCH : BATCH;

	wk->ops_done = wk->ops;
	if (wk->ops >= (uint64_t)batch)
		wk->ops -= (uint64_t)batch / 2;
	/* nobody frees (untimed) while another thread is still measured */
	pthread_barrier_wait(&c->done);
	wl_teardown(wk);
	return NULL;
}

struct result {
	double ops_per_s, elapsed, extents_per_file;
	double tail;      /* last thread's stop - the stop signal (not measured time) */
	double lock_wait; /* bgalloc variants: % of lock acquisitions in the window that waited */
	double rsv_hit;   /* writers through windows: allocations served from the window, % */
	double cpu_share; /* process CPU time in the window / (elapsed * min(threads, CPUs)) */
	uint64_t ops, errors, files;
};

static bool timer_policy_fifo = true; /* until refused once */

/* The CPUs this process may run on, in order: workers are bound to them
 * round-robin. */
static int cpus[CPU_SETSIZE], ncpus_allowed;
/* One cache line between the first two allowed CPUs, ns per transfer, at
 * the start and at the end of the run (xfer.h); < 0: not measured. */
static double xfer_ns[2] = {-1, -1};
#define XFER_PINGS 200000u

static void cpus_init(void)
{
	cpu_set_t set;

	ncpus_allowed = 0;
	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set))
			cpus[ncpus_allowed++] = i;
}

/* Switch the calling (timer) thread to SCHED_FIFO 1 or back to normal. */
static bool timer_fifo(bool on)
{
	struct sched_param sp = {.sched_priority = on ? 1 : 0};

	if (on && !timer_policy_fifo)
		return false;
	if (pthread_setschedparam(pthread_self(), on ? SCHED_FIFO : SCHED_OTHER, &sp)) {
		timer_policy_fifo = false;
		return false;
	}
	return true;
}

/* Lock acquisitions and those that found the lock held, over every slot. */
static void lock_totals(struct bga_volume *vol, uint64_t *acq, uint64_t *cont)
{
	struct bga_config cfg;
	struct bga_lock_stats ls;

	*acq = *cont = 0;
	if (!vol || bga_volume_config(vol, &cfg))
		return;
	for (uint32_t s = 0; bga_lock_stats(vol, s, &ls) == 0; s++) {
		*acq += ls.acquisitions;
		*cont += ls.contended;
	}
}

static int run_rep(enum wl_id w, enum variant v, int nthreads, int rep, struct result *res)
{
	struct cell *c;
	pthread_t *tids;
	pthread_attr_t attr;
	struct timespec until;
	double t0, t_stop, t_first = 0, t_end = 0;
	uint64_t acq0, cont0, acq1, cont1;
	struct rusage ru0, ru1;
	bool fifo;
	int rc = 0, started = 0;

	c = aligned_alloc(CACHELINE, (sizeof(*c) + CACHELINE - 1) / CACHELINE * CACHELINE);
	if (!c)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	c->w = w;
	c->v = v;
	c->nthreads = nthreads;
	c->rep = rep;
	atomic_init(&c->stop, 0);
	atomic_init(&c->txn, 1);
	atomic_init(&c->script_ops, 0);
	c->workers = aligned_alloc(CACHELINE, sizeof(struct worker) * (size_t)nthreads);
	tids = calloc((size_t)nthreads, sizeof(*tids));
	if (!c->workers || !tids) {
		rc = -ENOMEM;
		goto out_free;
	}
	memset(c->workers, 0, sizeof(struct worker) * (size_t)nthreads);
	if (w == W_COUNTER)
		rc = bga_counter_create(&c->counter, 0, 0,
					v == V_ATOMIC ? BGA_COUNTER_ATOMIC : BGA_COUNTER_PERCPU);
	else
		rc = vol_open(&c->vol, v);
	if (rc)
		goto out_free;

	pthread_barrier_init(&c->start, NULL, (unsigned)nthreads + 1);
	pthread_barrier_init(&c->done, NULL, (unsigned)nthreads + 1);
	/* 128 threads x 8 MiB default stacks is 1 GiB of address space for
	 * loops that need a few KiB */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	/* workers are ordinary threads, whatever the timer thread is */
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
	for (int i = 0; i < nthreads; i++) {
		struct worker *wk = &c->workers[i];

		/*
		 * Bound round-robin to the allowed CPUs, as will-it-scale binds
		 * its tasks.  Left to itself the scheduler was seen (kernel
		 * 6.18, 2 vCPUs) to keep both threads of a 2-thread cell on
		 * one CPU for a whole repetition (each got 50%), so the cell
		 * measured neither contention nor parallelism.
		 */
		if (!opt.no_pin && ncpus_allowed > 0) {
			cpu_set_t one;

			CPU_ZERO(&one);
			CPU_SET(cpus[i % ncpus_allowed], &one);
			pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
		}
		wk->cell = c;
		wk->idx = i;
		rng_seed(&wk->rng, opt.seed + (uint64_t)rep * 1000003u + (uint64_t)i,
			 (uint64_t)w * 131 + (uint64_t)nthreads);
		if (pthread_create(&tids[i], &attr, worker_main, wk)) {
			fprintf(stderr, "bga-scale: pthread_create failed at thread %d\n", i);
			abort(); /* the barrier counts on every thread */
		}
		started++;
	}
	pthread_attr_destroy(&attr);

	/*
	 * The timer thread sleeps through the repetition.  At 128 threads on
	 * 2 CPUs an ordinary thread waking from that sleep can wait a whole
	 * scheduling round (tens to hundreds of ms under EEVDF) before it
	 * runs to raise `stop`; SCHED_FIFO wakes it at once.  Where that is
	 * not permitted the repetition just runs longer: the figures stay
	 * right, because time is measured up to the moment `stop` is raised.
	 */
	fifo = timer_fifo(true);
	pthread_barrier_wait(&c->start);
	t0 = now_s();
	getrusage(RUSAGE_SELF, &ru0);
	lock_totals(c->vol.bga, &acq0, &cont0);
	{
		double t = t0 + opt.duration;

		until.tv_sec = (time_t)t;
		until.tv_nsec = (long)((t - (double)until.tv_sec) * 1e9);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
			;
	}
	getrusage(RUSAGE_SELF, &ru1);
	t_stop = now_s();
	lock_totals(c->vol.bga, &acq1, &cont1);
	atomic_store_explicit(&c->stop, 1, memory_order_relaxed);
	if (fifo)
		timer_fifo(false);
	pthread_barrier_wait(&c->done);

	for (int i = 0; i < started; i++)
		pthread_join(tids[i], NULL);

	/* summed after the joins: teardown (freeing what the workload holds)
	 * can fail too, and that counts as an error of the repetition */
	uint64_t extents = 0;

	memset(res, 0, sizeof(*res));
	for (int i = 0; i < nthreads; i++) {
		struct worker *wk = &c->workers[i];

		res->ops += wk->ops;
		res->errors += wk->errors;
		res->files += wk->files_done;
		extents += wk->file_extents;
		if (wk->t_end > t_end)
			t_end = wk->t_end;
		if (i == 0 || wk->t_start < t_first)
			t_first = wk->t_start;
	}
	/*
	 * From the first worker's start to the stop signal.  Not from t0: the
	 * workers may run before the main thread is back from the barrier.
	 * Not to the last worker's stop: under oversubscription a worker that
	 * was off the CPU when `stop` rose needs up to a scheduling round to
	 * see it, and that tail, which adds a few ops and much time, would
	 * read as a collapse that is not there.
	 */
	res->elapsed = t_stop - t_first;
	res->tail = t_end - t_stop;
	{
		double cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec + ru1.ru_stime.tv_sec -
				      ru0.ru_stime.tv_sec) +
			     (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec + ru1.ru_stime.tv_usec -
				      ru0.ru_stime.tv_usec) * 1e-6;
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		double lanes = (double)(nthreads < ncpu ? nthreads : ncpu);

		res->cpu_share = t_stop > t0 ? cpu / ((t_stop - t0) * lanes) : 0;
	}
	if (res->elapsed <= 0) {
		res->elapsed = 0;
		res->errors++;
	}
	res->ops_per_s = res->elapsed > 0 ? (double)res->ops / res->elapsed : 0;
	res->extents_per_file = res->files ? (double)extents / (double)res->files : 0;

	if (w == W_COUNTER) {
		/* the exact sum must account for every add */
		uint64_t done = 0;

		for (int i = 0; i < nthreads; i++)
			done += c->workers[i].ops_done;
		if ((uint64_t)bga_counter_sum(c->counter) != done)
			res->errors++;
		bga_counter_destroy(c->counter);
	} else {
		struct bga_stats st;

		res->lock_wait = acq1 > acq0 ? 100.0 * (double)(cont1 - cont0) / (double)(acq1 - acq0) : 0;
		if (c->vol.bga && bga_stats(c->vol.bga, &st) == 0)
			res->rsv_hit = 100.0 * st.rsv_hit_ratio;
		vol_close(&c->vol);
	}
	pthread_barrier_destroy(&c->start);
	pthread_barrier_destroy(&c->done);
out_free:
	free(tids);
	free(c->workers);
	free(c);
	return rc;
}

/* ---- results -------------------------------------------------------------------- */

struct cellres {
	enum wl_id w;
	enum variant v;
	int nthreads;
	int nreps;
	struct result r[MAX_REPS];
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median_of(const double *v, int n)
{
	double *s = malloc(sizeof(double) * (size_t)n);
	double m;

	if (!s || n == 0) {
		free(s);
		return 0;
	}
	memcpy(s, v, sizeof(double) * (size_t)n);
	qsort(s, (size_t)n, sizeof(double), cmp_double);
	m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon++;
		while (*colon == ' ' || *colon == '\t')
			colon++;
		colon[strcspn(colon, "\n")] = 0;
		snprintf(buf, len, "%s", colon);
		break;
	}
	fclose(f);
}

static void json_doubles(FILE *f, const struct cellres *cr, int which)
{
	fputc('[', f);
	for (int i = 0; i < cr->nreps; i++) {
		const struct result *r = &cr->r[i];
		double x = which == 0 ? r->ops_per_s
			   : which == 1 ? r->elapsed
			   : which == 2 ? r->extents_per_file
			   : which == 3 ? r->tail
			   : which == 4 ? r->cpu_share
			   : which == 5 ? r->lock_wait
					: r->rsv_hit;

		fprintf(f, "%s%.4g", i ? ", " : "", x);
	}
	fputc(']', f);
}

static int write_json(const char *path, struct cellres *cells, int ncells, double started, double wall)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
	struct utsname u;
	char model[256], when[64];
	time_t t = (time_t)started;

	if (!f) {
		fprintf(stderr, "bga-scale: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	cpu_model(model, sizeof(model));
	uname(&u);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));

	fprintf(f, "{\n  \"tool\": \"bga-scale\",\n  \"format\": 1,\n  \"started\": \"%s\",\n", when);
	fprintf(f, "  \"wall_s\": %.3f,\n", wall);
	fprintf(f, "  \"machine\": {\"nproc\": %ld, \"nproc_conf\": %ld, \"line_transfer_ns\": [%.1f, %.1f], "
		   "\"cpu_model\": ",
		sysconf(_SC_NPROCESSORS_ONLN), sysconf(_SC_NPROCESSORS_CONF), xfer_ns[0], xfer_ns[1]);
	json_str(f, model);
	fprintf(f, ", \"kernel\": ");
	json_str(f, u.release);
	fprintf(f, ", \"kernel_version\": ");
	json_str(f, u.version);
	fprintf(f, ", \"arch\": ");
	json_str(f, u.machine);
	fprintf(f, ", \"counter_path\": ");
	json_str(f, counter_path());
	fprintf(f, ", \"cpu_source\": ");
	json_str(f, bga__cpu_source());
	fprintf(f, "},\n  \"meta\": {");
	for (int i = 0; i < opt.nmeta; i++) {
		const char *eq = strchr(opt.meta[i], '=');
		char key[128];

		snprintf(key, sizeof(key), "%.*s", (int)(eq - opt.meta[i]), opt.meta[i]);
		fprintf(f, "%s", i ? ", " : "");
		json_str(f, key);
		fprintf(f, ": ");
		json_str(f, eq + 1);
	}
	fprintf(f, "},\n  \"config\": {\"duration_s\": %g, \"reps\": %d, \"threads\": [", opt.duration, opt.reps);
	for (int i = 0; i < opt.nthreads; i++)
		fprintf(f, "%s%d", i ? ", " : "", opt.threads[i]);
	fprintf(f, "], \"volume_blocks\": %llu, \"blocks_per_group\": 32768, \"working_set\": %u, "
		   "\"file_blocks\": %u, \"writer_files\": %d, \"script_files\": %d, \"commit_every\": %u, "
		   "\"batch\": %d, \"counter_batch\": %d, \"seed\": %llu, \"peer_image_blocks\": %llu, "
		   "\"peer_rebuilds\": %d, \"interleaved_reps\": true, \"timer_policy\": \"%s\", "
		   "\"pinning\": \"%s\", \"cpus_allowed\": %d},\n",
		(unsigned long long)opt.nblocks, opt.working_set, opt.file_blocks, WRITER_FILES, SCRIPT_FILES,
		opt.commit_every, BATCH, COUNTER_BATCH, (unsigned long long)opt.seed,
		(unsigned long long)(peer ? peer_ext2_nblocks(peer) : 0), peer_rebuilds,
		timer_policy_fifo ? "SCHED_FIFO" : "SCHED_OTHER",
		opt.no_pin || !ncpus_allowed ? "none" : "round-robin", ncpus_allowed);
	fprintf(f, "  \"variants\": {");
	for (int v = 0; v < V_COUNT; v++) {
		fprintf(f, "%s\"%s\": ", v ? ", " : "", variant_name[v]);
		json_str(f, variant_doc[v]);
	}
	fprintf(f, "},\n  \"workloads\": [");
	bool firstw = true;

	for (int w = 0; w < W_COUNT; w++) {
		const struct workload *wl = &workloads[w];
		bool firstc = true;

		if (!opt.wl_on[w])
			continue;
		fprintf(f, "%s\n    {\"name\": \"%s\", \"title\": ", firstw ? "" : ",", wl->name);
		json_str(f, wl->title);
		fprintf(f, ", \"op\": ");
		json_str(f, wl->op);
		fprintf(f, ", \"notes\": ");
		json_str(f, wl->notes);
		fprintf(f, ", \"baseline\": \"%s\", \"variants\": [", variant_name[wl->baseline]);
		bool firstv = true;

		for (int i = 0; i < wl->nvariants; i++) {
			if (!opt.var_on[wl->variants[i]])
				continue;
			fprintf(f, "%s\"%s\"", firstv ? "" : ", ", variant_name[wl->variants[i]]);
			firstv = false;
		}
		fprintf(f, "],\n     \"cells\": [");
		for (int i = 0; i < ncells; i++) {
			struct cellres *cr = &cells[i];
			double v[MAX_REPS];
			uint64_t errors = 0;

			if (cr->w != (enum wl_id)w)
				continue;
			for (int k = 0; k < cr->nreps; k++) {
				v[k] = cr->r[k].ops_per_s;
				errors += cr->r[k].errors;
			}
			fprintf(f, "%s\n      {\"threads\": %d, \"variant\": \"%s\", \"median_ops_per_s\": %.6g, ",
				firstc ? "" : ",", cr->nthreads, variant_name[cr->v], median_of(v, cr->nreps));
			fprintf(f, "\"ops_per_s\": ");
			json_doubles(f, cr, 0);
			fprintf(f, ", \"elapsed_s\": ");
			json_doubles(f, cr, 1);
			fprintf(f, ", \"ops\": [");
			for (int k = 0; k < cr->nreps; k++)
				fprintf(f, "%s%llu", k ? ", " : "", (unsigned long long)cr->r[k].ops);
			fprintf(f, "], \"tail_s\": ");
			json_doubles(f, cr, 3);
			fprintf(f, ", \"cpu_share\": ");
			json_doubles(f, cr, 4);
			if (cr->v == V_BGA || cr->v == V_BASE || cr->v == V_NOWIN) {
				fprintf(f, ", \"lock_wait_pct\": ");
				json_doubles(f, cr, 5);
			}
			if (w == W_WRITERS && (cr->v == V_BGA || cr->v == V_BASE)) {
				fprintf(f, ", \"rsv_hit_pct\": ");
				json_doubles(f, cr, 6);
			}
			fprintf(f, ", \"errors\": %llu", (unsigned long long)errors);
			if (w == W_WRITERS) {
				for (int k = 0; k < cr->nreps; k++)
					v[k] = cr->r[k].extents_per_file;
				fprintf(f, ", \"extents_per_file\": ");
				json_doubles(f, cr, 2);
				fprintf(f, ", \"median_extents_per_file\": %.6g", median_of(v, cr->nreps));
			}
			fputc('}', f);
			firstc = false;
		}
		fprintf(f, "]}");
		firstw = false;
	}
	fprintf(f, "\n  ]\n}\n");
	if (f != stdout && fclose(f)) {
		fprintf(stderr, "bga-scale: writing %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- command line ---------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bga-scale [options]\n"
		"  --quick              threads 1,2,8,64, 5 reps of 0.03 s (under 30 s)\n"
		"  --full               threads 1..128, 10 reps of 0.5 s\n"
		"  -w, --workloads=LIST churn,hot,extents,writers,script,counter (default all)\n"
		"  -t, --threads=LIST   thread counts (default 1,2,4,8,16,32,64,128)\n"
		"  -r, --reps=N         repetitions per cell, median taken (default 5)\n"
		"  -d, --duration=S     seconds per repetition (default 0.1)\n"
		"  -V, --variants=LIST  bgalloc,baseline,ext2,bgalloc-nowin,percpu,atomic (default all)\n"
		"  -j, --json=PATH      write the results there ('-' = stdout)\n"
		"      --blocks=N       volume size in blocks (default 1048576)\n"
		"      --working-set=N  churn/hot working set, blocks (default 4096)\n"
		"      --file-blocks=N  writers' file length, blocks (default 256)\n"
		"      --commit-every=N script: ops of all threads between commits (default 1024)\n"
		"      --seed=N         random seed (default 1)\n"
		"      --meta=KEY=VAL   record KEY in the JSON's meta (e.g. git=$(git rev-parse HEAD))\n"
		"      --no-pin         leave worker placement to the scheduler (default: bound\n"
		"                       round-robin to the allowed CPUs)\n"
		"  -q, --quiet          no progress line\n"
		"      --list           list workloads and variants\n");
}

static int parse_list(const char *arg, const char *const *names, int n, bool *on)
{
	char *dup = strdup(arg), *save = NULL;

	if (!dup)
		return -1;
	memset(on, 0, sizeof(bool) * (size_t)n);
	for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int i;

		for (i = 0; i < n && strcmp(tok, names[i]); i++)
			;
		if (i == n) {
			fprintf(stderr, "bga-scale: unknown name '%s'\n", tok);
			free(dup);
			return -1;
		}
		on[i] = true;
	}
	free(dup);
	return 0;
}

static int parse_threads(const char *arg)
{
	char *dup = strdup(arg), *save = NULL;

	opt.nthreads = 0;
	for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		long t = strtol(tok, &end, 10);

		if (*end || t < 1 || t > MAX_THREADS || opt.nthreads == 64) {
			fprintf(stderr, "bga-scale: bad thread count '%s' (1..%d)\n", tok, MAX_THREADS);
			free(dup);
			return -1;
		}
		opt.threads[opt.nthreads++] = (int)t;
	}
	free(dup);
	return opt.nthreads ? 0 : -1;
}

static int parse_u64(const char *arg, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || *end || v < lo || v > hi) {
		fprintf(stderr, "bga-scale: '%s' is not a number in %llu..%llu\n", arg, (unsigned long long)lo,
			(unsigned long long)hi);
		return -1;
	}
	*out = v;
	return 0;
}

static int parse_args(int argc, char **argv)
{
	static const int all_threads[] = {1, 2, 4, 8, 16, 32, 64, 128};
	static const char *wl_names[W_COUNT];
	enum { O_QUICK = 256, O_FULL, O_BLOCKS, O_WSET, O_FILE, O_COMMIT, O_SEED, O_META, O_LIST, O_NOPIN };
	static const struct option lo[] = {
		{"quick", no_argument, NULL, O_QUICK},
		{"full", no_argument, NULL, O_FULL},
		{"workloads", required_argument, NULL, 'w'},
		{"threads", required_argument, NULL, 't'},
		{"reps", required_argument, NULL, 'r'},
		{"duration", required_argument, NULL, 'd'},
		{"variants", required_argument, NULL, 'V'},
		{"json", required_argument, NULL, 'j'},
		{"blocks", required_argument, NULL, O_BLOCKS},
		{"working-set", required_argument, NULL, O_WSET},
		{"file-blocks", required_argument, NULL, O_FILE},
		{"commit-every", required_argument, NULL, O_COMMIT},
		{"seed", required_argument, NULL, O_SEED},
		{"meta", required_argument, NULL, O_META},
		{"quiet", no_argument, NULL, 'q'},
		{"no-pin", no_argument, NULL, O_NOPIN},
		{"list", no_argument, NULL, O_LIST},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	uint64_t u;
	int ch;

	for (int i = 0; i < W_COUNT; i++)
		wl_names[i] = workloads[i].name;
	opt.duration = 0.1;
	opt.reps = 5;
	memcpy(opt.threads, all_threads, sizeof(all_threads));
	opt.nthreads = 8;
	for (int i = 0; i < W_COUNT; i++)
		opt.wl_on[i] = true;
	for (int i = 0; i < V_COUNT; i++)
		opt.var_on[i] = true;
	opt.nblocks = UINT64_C(1) << 20;
	opt.working_set = 4096;
	opt.file_blocks = 256;
	opt.commit_every = 1024;
	opt.seed = 1;

	while ((ch = getopt_long(argc, argv, "w:t:r:d:V:j:qh", lo, NULL)) != -1) {
		switch (ch) {
		case O_QUICK:
			opt.duration = 0.03;
			opt.reps = 5;
			opt.threads[0] = 1, opt.threads[1] = 2, opt.threads[2] = 8, opt.threads[3] = 64;
			opt.nthreads = 4;
			break;
		case O_FULL:
			opt.duration = 0.5;
			opt.reps = 10;
			memcpy(opt.threads, all_threads, sizeof(all_threads));
			opt.nthreads = 8;
			break;
		case 'w':
			if (parse_list(optarg, wl_names, W_COUNT, opt.wl_on))
				return -1;
			break;
		case 't':
			if (parse_threads(optarg))
				return -1;
			break;
		case 'r':
			if (parse_u64(optarg, 1, MAX_REPS, &u))
				return -1;
			opt.reps = (int)u;
			break;
		case 'd': {
			char *end;

			opt.duration = strtod(optarg, &end);
			if (*end || !(opt.duration >= 0.001 && opt.duration <= 60)) {
				fprintf(stderr, "bga-scale: duration must be 0.001..60 s\n");
				return -1;
			}
			break;
		}
		case 'V':
			if (parse_list(optarg, variant_name, V_COUNT, opt.var_on))
				return -1;
			break;
		case 'j':
			opt.json = optarg;
			break;
		case O_BLOCKS:
			if (parse_u64(optarg, 65536, UINT64_C(1) << 32, &opt.nblocks))
				return -1;
			break;
		case O_WSET:
			if (parse_u64(optarg, 1, 1 << 20, &u))
				return -1;
			opt.working_set = (uint32_t)u;
			break;
		case O_FILE:
			if (parse_u64(optarg, 1, 1 << 16, &u))
				return -1;
			opt.file_blocks = (uint32_t)u;
			break;
		case O_COMMIT:
			if (parse_u64(optarg, 1, UINT32_MAX, &u))
				return -1;
			opt.commit_every = (uint32_t)u;
			break;
		case O_SEED:
			if (parse_u64(optarg, 0, UINT64_MAX, &opt.seed))
				return -1;
			break;
		case O_META:
			if (!strchr(optarg, '=') || opt.nmeta == 32) {
				fprintf(stderr, "bga-scale: --meta wants KEY=VALUE\n");
				return -1;
			}
			opt.meta[opt.nmeta++] = optarg;
			break;
		case 'q':
			opt.quiet = true;
			break;
		case O_NOPIN:
			opt.no_pin = true;
			break;
		case O_LIST:
			for (int w = 0; w < W_COUNT; w++) {
				printf("%-8s %s; variants:", workloads[w].name, workloads[w].title);
				for (int i = 0; i < workloads[w].nvariants; i++)
					printf(" %s", variant_name[workloads[w].variants[i]]);
				printf(" (baseline %s)\n", variant_name[workloads[w].baseline]);
			}
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bga-scale: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct cellres *cells;
	int ncells = 0, total = 0, done = 0;
	bool tty = isatty(STDERR_FILENO);
	double started = (double)time(NULL), t_start = now_s();

	if (parse_args(argc, argv))
		return 2;
	cpus_init();
	for (int w = 0; w < W_COUNT; w++)
		for (int i = 0; opt.wl_on[w] && i < workloads[w].nvariants; i++)
			if (opt.var_on[workloads[w].variants[i]])
				total += opt.nthreads;
	if (total == 0) {
		fprintf(stderr, "bga-scale: no cell selected\n");
		return 2;
	}
	cells = calloc((size_t)total, sizeof(*cells));
	if (!cells)
		return 1;
	if (ncpus_allowed >= 2)
		xfer_ns[0] = xfer_line_ns(cpus[0], cpus[1], XFER_PINGS);
	if (opt.wl_on[W_COUNTER])
		fprintf(stderr, "bga-scale: counter: per-CPU adds on %s, CPU-id source %s\n", counter_path(),
			bga__cpu_source());

	for (int w = 0; w < W_COUNT; w++) {
		const struct workload *wl = &workloads[w];

		if (!opt.wl_on[w])
			continue;
		for (int ti = 0; ti < opt.nthreads; ti++) {
			int first = ncells, nt = opt.threads[ti];

			for (int i = 0; i < wl->nvariants; i++) {
				if (!opt.var_on[wl->variants[i]])
					continue;
				cells[ncells].w = (enum wl_id)w;
				cells[ncells].v = wl->variants[i];
				cells[ncells].nthreads = nt;
				ncells++;
			}
			for (int rep = 0; rep < opt.reps; rep++) {
				for (int ci = first; ci < ncells; ci++) {
					struct cellres *cr = &cells[ci];
					struct result *r = &cr->r[rep];

					/* on a terminal the line is rewritten per repetition;
					 * in a log, one line per row of the table */
					if (!opt.quiet && tty)
						fprintf(stderr, "\r\033[K[cell %d/%d] %-8s threads %3d  %-13s rep %d/%d",
							done + 1 + (ci - first), total, wl->name, nt,
							variant_name[cr->v], rep + 1, opt.reps);
					else if (!opt.quiet && rep == 0 && ci == first)
						fprintf(stderr, "[cells %d-%d/%d] %s, %d threads, %d reps x %g s\n",
							done + 1, done + ncells - first, total, wl->name, nt, opt.reps,
							opt.duration);
					if (run_rep((enum wl_id)w, cr->v, nt, rep, r)) {
						fprintf(stderr, "\nbga-scale: %s/%s/%d threads could not run\n", wl->name,
							variant_name[cr->v], nt);
						return 1;
					}
					cr->nreps = rep + 1;
					if (r->errors && !opt.quiet)
						fprintf(stderr, "%sbga-scale: %s/%s/%d threads rep %d: %llu failed calls\n",
							tty ? "\n" : "", wl->name, variant_name[cr->v], nt, rep + 1,
							(unsigned long long)r->errors);
				}
			}
			done = ncells;
		}
	}
	if (ncpus_allowed >= 2)
		xfer_ns[1] = xfer_line_ns(cpus[0], cpus[1], XFER_PINGS);
	if (!opt.quiet)
		fprintf(stderr, "%s[%d cells, %.1f s]\n", tty ? "\r\033[K" : "", total, now_s() - t_start);
	if (opt.json && write_json(opt.json, cells, ncells, started, now_s() - t_start))
		return 1;
	if (!opt.json)
		fprintf(stderr, "bga-scale: no --json given; results not written\n");
	if (peer)
		peer_ext2_destroy(peer);
	free(cells);
	return 0;
}
