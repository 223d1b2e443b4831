/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_LAB_H
#define BGA_LAB_H

/*
 * bga-lab: compare counter modes and lock kinds the way a user's program
 * meets them, through the public API of the installed library
 * (<bgalloc/counter.h>, <bgalloc/locktab.h>).  The modes the library does
 * not offer (striped, tls-fold) are the lab's own code and say so.
 *
 * The method (lab_run.c, lab_stats.c), which the man page states too:
 *   - every repetition runs every variant once, for each thread count, in
 *     an order that rotates from one repetition to the next;
 *   - each cell (variant x threads x repetition) measures wall time, the
 *     threads' CPU time and its CPU share = CPU / (wall x min(threads,
 *     CPUs allowed));
 *   - for more than one thread, each repetition also measures the ceiling:
 *     min(threads, CPUs) processes running the first variant at 1 thread
 *     at once, over one alone;
 *   - the verdict compares each variant with the first by Mann-Whitney U
 *     and a paired bootstrap CI of the ratio of medians, and refuses to
 *     call a difference when the CPUs were not there (lab_verdict()).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LAB_MAX_VARIANTS 8
#define LAB_MAX_THREADS_LIST 16
#define LAB_MAX_REPS 1000
/* Comparisons a run's verdicts or a compare make at most: two measures a
 * cell (wall clock, CPU time). */
#define LAB_MAX_COMPARISONS (2 * LAB_MAX_THREADS_LIST * LAB_MAX_VARIANTS)

/* One thing being measured: a counter mode or a lock kind. */
struct lab_variant {
	const char *name;  /* as the user spelled it on the command line */
	const char *where; /* "public API" or "lab code": printed with each result */
	/* Set up a fresh object for one cell of nthreads; returns NULL and
	 * prints why on failure. */
	void *(*setup)(const struct lab_variant *v, unsigned nthreads);
	/* The worker: run ops until *stop or `ops` (0: until stop) and
	 * return how many it ran.  `tid` is 0 .. nthreads-1. */
	uint64_t (*work)(void *obj, unsigned tid, uint64_t ops, const volatile int *stop);
	/* Check the object against `total` ops (a counter's exact sum, a
	 * lock's protected counts), describe it in `desc` (the library's path
	 * or resolved kind), free it.  Returns 0, or -1 after printing what
	 * is wrong. */
	int (*finish)(void *obj, uint64_t total, char *desc, size_t desclen);
	int arg; /* the variant's own parameter (mode, kind) */
};

/* The verdict's thresholds: the LAB_* defaults below, or the options
 * --share-min, --spread-max, --ceiling-min, --alpha, --same-margin. */
struct lab_thresholds {
	double share_min, spread_max, ceiling_min, alpha, same_margin;
};

/* Parameters shared by both commands. */
struct lab_params {
	struct lab_thresholds th;
	const char *command; /* "counter" or "lock" */
	unsigned threads[LAB_MAX_THREADS_LIST];
	unsigned nthreads;
	unsigned reps;
	double seconds;     /* per cell, when ops == 0 */
	uint64_t ops;       /* per thread per cell; 0: seconds */
	bool pin;
	bool ceiling;       /* measure the ceiling (on for > 1 thread) */
	const char *out;    /* directory for the JSON and the PNG; NULL: none */
	bool quiet;
	const char *format; /* "text" (the table), "json" or "csv" on stdout */
	/* counter */
	int32_t batch;
	bool limited;
	/* lock */
	uint64_t hold_ns;
	uint64_t think_ns;
	uint32_t slots;
	uint64_t spread;
	struct lab_variant variants[LAB_MAX_VARIANTS];
	unsigned nvariants;
	const char *api; /* what the library is reached through, for the report */
};

/* One measurement of one cell. */
struct lab_sample {
	double ops_per_s;
	double cpu_share;
	double wall_s, cpu_s;
	double steal;       /* the machine's steal time over its CPU time in the cell (/proc/stat) */
	uint64_t ops;
};

struct lab_cell {
	unsigned variant, threads;
	struct lab_sample *samples; /* reps of them */
	char desc[64];
};

struct lab_ceiling {
	unsigned threads, procs;
	double *alone, *together; /* ops/s per repetition */
	unsigned n;
	double value;             /* median of together / alone */
};

/* One comparison on one measure: wall-clock ops/s, or ops per CPU-second. */
struct lab_measure {
	bool valid;               /* cpu: only where CPU time stands for speed (lab_verdicts) */
	double ratio, ci_lo, ci_hi, p, p_holm, spread_a, spread_b;
	bool ci;                  /* the CI was computed (enough repetitions) */
	bool paired;              /* spread: of the repetitions' ratios (the CPU measure) */
	char outcome[160];
	char line[320];
};

struct lab_verdict {
	unsigned threads, a, b;   /* b / a */
	double ratio, ci_lo, ci_hi, p, cpu_share, spread_a, spread_b, ceiling;
	char outcome[160];
	char line[320];
	struct lab_measure wall;  /* the fields above, with p_holm */
	struct lab_measure cpu;   /* ops per CPU-second: 1 thread, or the CPUs were there */
};

struct lab_result {
	struct lab_cell *cells; /* nthreads x nvariants, threads-major */
	unsigned ncells;
	struct lab_ceiling *ceilings; /* per thread count; n == 0 when not measured */
	unsigned nceilings;
	struct lab_verdict *verdicts;
	unsigned nverdicts;
	unsigned ncpus;
	int failed;
	char started[32];
};

/* The number of operations a worker runs next: `chunk`, or what is left of
 * `ops` (ops > 0); 0 when done.  Workers check the stop flag only between
 * chunks, so the flag costs nothing per operation. */
static inline unsigned lab_next_chunk(uint64_t done, uint64_t ops, const volatile int *stop, unsigned chunk)
{
	if (ops)
		return ops - done < chunk ? (unsigned)(ops - done) : chunk;
	return __atomic_load_n(stop, __ATOMIC_RELAXED) ? 0 : chunk;
}

/* A worker's loop, written once: the statements after `chunk` run in place
 * (no call through a pointer, so that the loop measures them alone) until
 * ops operations are done, or, with ops 0, until *stop is set, the flag
 * read once a chunk (lab_next_chunk).  Its value: the operations done. */
#define LAB_WORK(ops, stop, chunk, ...)                                                   \
	__extension__({                                                                   \
		uint64_t lab_done_ = 0;                                                   \
		unsigned lab_k_;                                                          \
		while ((lab_k_ = lab_next_chunk(lab_done_, ops, stop, chunk)) != 0) {     \
			for (unsigned lab_i_ = 0; lab_i_ < lab_k_; lab_i_++) {            \
				__VA_ARGS__;                                              \
			}                                                         \
			lab_done_ += lab_k_;                                              \
		}                                                                 \
		lab_done_;                                                        \
	})

/* The cache line the variants pad their per-thread and per-slot data to. */
#define LAB_CACHELINE 128

/* The lab's one generator (the workers' keys, the bootstrap's draws):
 * xorshift64 (Marsaglia); the state must not be 0. */
static inline uint64_t lab_xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* lab_run.c */
/* size bytes, zeroed, aligned on a cache line (the allocation rounded up
 * to whole lines, as aligned_alloc wants); NULL when out of memory. */
void *lab_alloc_lines(size_t size);
/* A counter variant's finish: 0 when its sum is the total of the adds of
 * 1 the workers made, else -1, said on stderr as
 * "bga-lab: NAME: sum S after T adds". */
int lab_check_sum(const char *name, int64_t sum, uint64_t total);
unsigned lab_cpus_allowed(int *cpus, unsigned max);
int lab_run(const struct lab_params *p, struct lab_result *r);
void lab_result_free(struct lab_result *r);
uint64_t lab_now_ns(void);
void lab_spin_calibrate(void);
void lab_spin_ns(uint64_t ns);
double lab_spin_ns_per_iter(void);

/* lab_stats.c */
double lab_median(const double *x, unsigned n);
double lab_quantile(const double *x, unsigned n, double q);
double lab_mwu_p(const double *a, unsigned na, const double *b, unsigned nb);
void lab_ratio_ci(const double *a, const double *b, unsigned n, double *lo, double *hi);
/* Holm's step-down correction of m p values (m <= LAB_MAX_COMPARISONS):
 * p_holm[k] for p[k]. */
void lab_holm(const double *p, double *p_holm, unsigned m);
void lab_verdicts(const struct lab_params *p, struct lab_result *r);

/* The verdict's thresholds, stated in --help and the man page. */
#define LAB_SHARE_MIN 0.80   /* each cell's median CPU share */
#define LAB_SPREAD_MAX 0.25  /* (q75 - q25) / median of either variant */
#define LAB_CEILING_MIN 1.40 /* for > 1 thread: two processes got at least 1.4x one */
#define LAB_ALPHA 0.01       /* Mann-Whitney, two-sided */
#define LAB_SAME_MARGIN 0.10 /* "no significant difference": ci within 1 -+ 10% */
/* Below this many repetitions Mann-Whitney cannot reach p < 0.01 (at 5 a
 * side its least two-sided p is 2/252) and a bootstrap CI of 4 values is
 * no interval: neither is printed. */
#define LAB_MIN_REPS 5

/* lab_counter.c, lab_lock.c */
int lab_counter_variant(const char *name, struct lab_variant *v);
int lab_lock_variant(const char *name, struct lab_variant *v);
const char *lab_counter_modes(void);
const char *lab_lock_kinds(void);
extern const struct lab_params *lab_cur; /* the parameters a cell runs with */

/* lab_plugin.c: --plugin's shared objects (bga_lab_plugin.h) */
int lab_plugin_load(const char *path);
int lab_plugin_variant(const char *name, bool counter, struct lab_variant *v);
const char *lab_plugin_names(bool counter); /* "" when none */

/* lab_compare.c: bga-lab compare A.json B.json (argv: the two paths) */
int lab_compare_main(int argc, char **argv);

/* lab_out.c */
int lab_write_json(const struct lab_params *p, const struct lab_result *r, const char *path);
int lab_write_png(const struct lab_params *p, const struct lab_result *r, const char *dir, const char *stem);
void lab_print(const struct lab_params *p, const struct lab_result *r);
void lab_print_csv(const struct lab_params *p, const struct lab_result *r); /* a row per sample */

#endif
