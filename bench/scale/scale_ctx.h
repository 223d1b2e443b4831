/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_BENCH_SCALE_CTX_H
#define BGA_BENCH_SCALE_CTX_H

/*
 * What the parts of bga-scale share: the types, and the one context
 * (struct scale_ctx, defined in scale_ctx.c) that every part reads, so that
 * no part reaches up into another for a global.  The tool (what it
 * measures and how, its output) is described at the top of scale.c; the
 * parts, each calling only those below it:
 *   scale.c            options, command line, main: the order of the cells;
 *   scale_workloads.c  the workload and variant tables, each workload's
 *                      setup, loop and teardown;
 *   scale_run.c        one repetition of a cell: threads, CPU binding,
 *                      the timer, the allocator under test;
 *   scale_report.c     medians and the JSON document;
 *   scale_ctx.c        the context.
 * Every file defines _GNU_SOURCE before its first include (cpu_set_t,
 * pthread_attr_setaffinity_np).
 */

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <bgalloc.h>
#include <bgalloc/counter.h>

#include "peer_ext2.h"
#include "rng.h"
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

/*
 * A ratio at 2 or more threads is called only where the threads got the
 * CPUs: its CPU share (CPU time / (wall x min(threads, CPUs)), the lower
 * of its two cells' medians) at least this, the threshold counter_bench
 * and bga-lab use; below it the report says "cannot decide".
 */
#define CPU_SHARE_MIN 0.80

/* Files a writer keeps, complete files an appender keeps, and files a
 * script owns (scale_workloads.c). */
#define WRITER_FILES 4
#define APPEND_FILES 16
#define SCRIPT_FILES 16

enum variant { V_BGA, V_BASE, V_EXT2, V_NOWIN, V_PERCPU, V_ATOMIC, V_COUNT };

/* New workloads go last: a workload's number seeds its threads' rngs. */
enum wl_id { W_CHURN, W_HOT, W_EXTENTS, W_WRITERS, W_SCRIPT, W_COUNTER, W_APP_OWN, W_APP_SHARED, W_COUNT };

/* The workloads that write files block by block and count their extents. */
static inline bool wl_files(enum wl_id w)
{
	return w == W_WRITERS || w == W_APP_OWN || w == W_APP_SHARED;
}

struct workload {
	const char *name, *title, *op, *notes;
	enum variant variants[4];
	int nvariants;
	enum variant baseline;
};

/* ---- the tables (scale_workloads.c) -------------------------------------- */

/* Each variant's name on the command line and in the JSON. */
extern const char *const variant_name[V_COUNT];
/* Each variant in one sentence, said in the JSON next to every table. */
extern const char *const variant_doc[V_COUNT];
/* Each workload: names, what one op is, its variants and its baseline. */
extern const struct workload workloads[W_COUNT];

/* ---- options and main (scale.c) ------------------------------------------ */

struct opts {
	double duration;
	int reps;
	int threads[64], nthreads;
	bool wl_on[W_COUNT];
	bool var_on[V_COUNT];
	uint64_t nblocks;     /* every workload's volume but the appenders' */
	uint64_t app_blocks;  /* the appenders' volume */
	uint32_t working_set;
	uint32_t file_blocks;
	uint32_t commit_every;
	uint64_t seed;
	const char *json;
	bool no_pin;
	const char *meta[32];
	int nmeta;
	bool quiet;
};


/* ---- one repetition ------------------------------------------------------- */

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

struct result {
	double ops_per_s, elapsed, extents_per_file;
	double tail;      /* last thread's stop - the stop signal (not measured time) */
	double lock_wait; /* bgalloc variants: % of lock acquisitions in the window that waited */
	double rsv_hit;   /* writers through windows: allocations served from the window, % */
	double cpu_share; /* process CPU time in the window / (elapsed * min(threads, CPUs)) */
	uint64_t ops, errors, files;
};

/* One cell's repetitions, in the order they ran. */
struct cellres {
	enum wl_id w;
	enum variant v;
	int nthreads;
	int nreps;
	struct result r[MAX_REPS];
};

/* ---- the workloads (scale_workloads.c) ------------------------------------ */

/* The size of w's volume (or peer image): opt.app_blocks for the
 * appenders, opt.nblocks for the rest. */
uint64_t wl_nblocks(enum wl_id w);

/* Build wk's state for wk->cell (untimed, in the worker's thread, the cell's
 * volume or counter open).  0, or -ENOMEM (the caller counts an error). */
int wl_setup(struct worker *wk);
/* Run batches until should_stop(); set wk->ops, errors (and writers' file
 * counts).  Reads no clock. */
void wl_loop(struct worker *wk);
/* Free what wk holds back to the volume (untimed; after every worker has
 * stopped); failed frees add to wk->errors.  Safe after a failed setup. */
void wl_teardown(struct worker *wk);
/* How this process's per-CPU counters add: "percpu-rseq" or "percpu-cas"
 * (bga_counter_mode_name), "unknown" if none could be made.  For the report. */
const char *counter_path(void);
/* Which CPU-id source the library's per-CPU paths use in this thread:
 * "rseq", "getcpu" or "hash".  For the report. */
const char *cpu_source(void);

/* ---- the runner (scale_run.c) --------------------------------------------- */

/* The run's context: one per process, in scale_ctx.c. */
struct scale_ctx {
	/* The command line, parsed once by main before any cell runs;
	 * read-only after. */
	struct opts opt;
	/* One cache line between the first two allowed CPUs, ns per
	 * transfer, at the start and at the end of the run (xfer.h, set by
	 * main); < 0: not measured. */
	double xfer_ns[2];
	/* The libext2fs peers, made on first use and kept across cells (NULL
	 * until then, and after a rebuild until the next use): [0] of
	 * opt.nblocks, [1] of opt.app_blocks (unused when the two sizes are
	 * equal); main destroys them at exit. */
	struct peer_ext2 *peers[2];
	/* Times the peer's image came back from a repetition not pristine and
	 * was made again. */
	int peer_rebuilds;
	/* Whether the timer thread still runs SCHED_FIFO; false once refused. */
	bool timer_policy_fifo;
	/* The CPUs this process may run on, in order (set by cpus_init);
	 * workers are bound to them round-robin. */
	int cpus[CPU_SETSIZE], ncpus_allowed;
};
extern struct scale_ctx scale;

/* Fill cpus[] and ncpus_allowed from this process's affinity (none on error). */
void cpus_init(void);
/* Run one repetition of (w, v, nthreads) for opt.duration and fill *res
 * (zeroed first).  0; -ENOMEM or the volume/counter's error when it could not
 * run (res untouched); aborts if a thread cannot be started.  Main thread. */
int run_rep(enum wl_id w, enum variant v, int nthreads, int rep, struct result *res);

/* ---- the report (scale_report.c) ------------------------------------------ */

/* Write every cell's figures, the configuration and the machine as one JSON
 * document to path ("-": stdout).  0, or -1 after saying why on stderr. */
int write_json(const char *path, struct cellres *cells, int ncells, double started, double wall);
/* One line per cell to f: median ops/s, median CPU share and, beside a
 * variant's ratio to its workload's baseline at the same thread count,
 * "cannot decide" where 2+ threads did not get the CPUs (CPU_SHARE_MIN). */
void write_text(FILE *f, const struct cellres *cells, int ncells);

#endif
