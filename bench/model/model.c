// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * bga-model: the demo's workloads (bench/scale/scale_workloads.c) on N modelled
 * cores that take turns, one operation at a time, so that what they share
 * depends on the code alone and never on the host's scheduler or load.
 * Without a clock (--xfer 0, the default) the turns are a fixed round
 * (core 0, 1, ..., N-1, 0, ...); with one (--ipa A --xfer X: clock.h),
 * the next operation is the one of the core whose modelled clock is
 * earliest (ties in round order), and a lock another core holds at that
 * instant is found held (rt.c): a trylock fails on the library's own path.
 * The measured phase runs from when every core has done its warm-up
 * operations for rounds x N operations of any cores, every core at work
 * throughout.
 *
 *   bga-model [--ncpus K] [-w WORKLOAD] [-v VARIANT] [-t N,N,...]
 *             [--rounds R] [--ipa A --xfer X] [--time]
 *
 * One JSON object a line per (workload, variant, cores): the counts of the
 * measured rounds.  Built twice (bench/model/CMakeLists.txt):
 *  - bga-model: lib/ instrumented, rt.c counting every access by line;
 *  - bga-model-plain: the release library, rt_plain.c; callgrind counts
 *    its instructions per operation with --toggle-collect=model_op_measured
 *    (bench/model/model.sh), and --time gives the CPU time per operation
 *    of one core, unmodelled, for the CPI.
 *
 * Each modelled core is a thread whose CPU id is its core number (the
 * library reads it where it reads rseq's cpu_id: bga__rseq_cpu_off is
 * pointed at a thread-local of this file), and _SC_NPROCESSORS_CONF says
 * K (--ncpus, default 64): the library sizes its per-CPU state as on a
 * K-CPU machine.  The counter's rseq sections read the kernel's cpu_id,
 * so BGA_COUNTER_RSEQ=0 sends it to its CAS path, which indexes its slots
 * by the same CPU id.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bgalloc.h>
#include <bgalloc/counter.h>

#include "measure.h"
#include "workloads.h"
#include "percpu.h"
#include "rng.h"
#include "rt.h"
#include "types.h"

/* ---- the modelled CPU ------------------------------------------------------ */

static long model_ncpus = 64;
static double clk_ipa = 1, clk_xfer; /* --ipa, --xfer: clock.h */
static int real_cpus; /* --measure: this machine's CPUs, not modelled ones */

long __real_sysconf(int);

/* The library's CPU count (bga__cpu_count) and auto-sizing: the link
 * sends lib/'s calls of sysconf here (-Wl,--wrap=sysconf,
 * bench/model/CMakeLists.txt), and nothing else's. */
long __wrap_sysconf(int name)
{
	if (!real_cpus && (name == _SC_NPROCESSORS_CONF || name == _SC_NPROCESSORS_ONLN))
		return model_ncpus;
	return __real_sysconf(name);
}

/* The library reads the CPU id inline at the thread pointer plus
 * bga__rseq_cpu_off, which must be positive: the rseq area of glibc's
 * thread descriptor, unregistered (GLIBC_TUNABLES=glibc.pthread.rseq=0,
 * main() sees to it) so that the kernel never writes it. */
static void be_core(int core)
{
	*(volatile int32_t *)((char *)__builtin_thread_pointer() + bga__rseq_cpu_off) = core;
	rt_set_core(core);
}


/* ---- the baton ------------------------------------------------------------------- */

static struct run *the_run;
/* under the baton: ops done by each core, cores set up and torn down,
 * cores past their warm-up, the measured phase's state and its ops */
static long done_ops[RT_MAX_CORES], measured_ops;
static bool torn[RT_MAX_CORES];
static int set_up, warmed, measure_state; /* 0 before, 1 in, 2 after */

static void take(struct core *c)
{
	while (sem_wait(&c->turn) && errno == EINTR)
		;
}

/* The next turn: setups in round order, then the operations, each of the
 * core with the earliest modelled clock (ties: the next in round order
 * from c; without a clock, the next in round order), then teardowns in
 * round order. */
static void pass(struct run *r, struct core *c)
{
	int n = r->ncores, next = -1;

	if (set_up < n) {
		next = set_up;
	} else if (measure_state < 2 && !(clk_xfer > 0)) {
		next = (c->idx + 1) % n;
	} else if (measure_state < 2) {
		for (int k = 1; k <= n; k++) {
			int i = (c->idx + k) % n;
			if (next < 0 || rt_clock(i) < rt_clock(next))
				next = i;
		}
	} else {
		for (int i = n - 1; i >= 0; i--)
			if (!torn[i])
				next = i;
	}
	if (next >= 0)
		sem_post(&r->cores[next].turn);
}

static void *core_main(void *arg)
{
	struct core *c = arg;
	struct run *r = the_run;

	be_core(c->idx);
	take(c);
	model_setup(r, c);
	if (++set_up == r->ncores)
		rt_clock_sync(r->ncores);
	pass(r, c);
	for (;;) {
		take(c);
		if (measure_state == 2)
			break;
		if (measure_state == 1) {
			if (r->v == V_LIMITED)
				model_op_limited_measured(r, c);
			else
				model_op_measured(r, c);
			rt_op_done();
		} else if (r->v == V_LIMITED) {
			model_op_limited(r, c);
		} else {
			model_op(r, c);
		}
		if (++done_ops[c->idx] == r->warm && ++warmed == r->ncores) {
			measure_state = 1;
			rt_measure(1);
		} else if (measure_state == 1 && ++measured_ops == r->rounds * r->ncores) {
			measure_state = 2;
			rt_measure(0);
		}
		pass(r, c);
	}
	model_teardown(r, c);
	torn[c->idx] = true;
	pass(r, c);
	return NULL;
}

/* Register what the report should name, and the lock words. */
static void register_objects(struct run *r)
{
	if (r->vol) {
		struct bga_volume *v = r->vol;
		struct bga_locktab *t = v->locks;

		rt_object(v, 1, sizeof(*v), "struct bga_volume");
		rt_object(v->cpu, v->ncpu, sizeof(v->cpu[0]), "struct bga_percpu");
		rt_lock_range(t->slots, t->mask + 1, sizeof(t->slots[0]), "struct locktab_slot");
	}
	if (r->locks) {
		rt_lock_range(r->locks->slots, r->locks->mask + 1, sizeof(r->locks->slots[0]), "struct locktab_slot");
		return;
	}
	struct bga_counter *ctr = r->vol ? r->vol->used : r->ctr;
	rt_object(ctr, 1, offsetof(struct bga_counter, slots), "struct bga_counter");
	rt_object(ctr->slots, ctr->nslots, sizeof(ctr->slots[0]), "struct counter_slot");
	rt_rseq_slots(ctr->slots, ctr->nslots, sizeof(ctr->slots[0]));
	rt_lock_range(&ctr->lock, 1, sizeof(ctr->lock), "struct bga_counter");
}


static int run_one(enum wl w, enum var v, int ncores, long rounds, FILE *out)
{
	struct run r = {.w = w, .v = v, .ncores = ncores, .rounds = rounds};
	int rc;

	r.warm = model_warm_ops(w);
	rt_reset();
	be_core(0);
	rc = model_target_create(&r);
	if (rc) {
		fprintf(stderr, "bga-model: %s/%s: %s\n", wl_name[w], var_name[v], bga_strerror(rc));
		return 1;
	}
	register_objects(&r);
	r.cores = aligned_alloc(128, sizeof(*r.cores) * (size_t)ncores);
	memset(r.cores, 0, sizeof(*r.cores) * (size_t)ncores);
	the_run = &r;
	memset(done_ops, 0, sizeof(done_ops));
	memset(torn, 0, sizeof(torn));
	measured_ops = set_up = warmed = measure_state = 0;
	rt_clock_config(clk_ipa, clk_xfer, w != W_LOCK);
	for (int i = 0; i < ncores; i++) {
		r.cores[i].idx = i;
		rng_seed(&r.cores[i].rng, 1 + (uint64_t)w, (uint64_t)i);
		sem_init(&r.cores[i].turn, 0, i == 0);
	}
	/* glibc registers rseq in a new thread unless its creator's cpu_id
	 * says registration failed (-2): the modelled id of this thread
	 * would turn the kernel's writes on in the cores */
	*(volatile int32_t *)((char *)__builtin_thread_pointer() + bga__rseq_cpu_off) = -2;
	for (int i = 0; i < ncores; i++)
		if (pthread_create(&r.cores[i].th, NULL, core_main, &r.cores[i])) {
			fprintf(stderr, "bga-model: cannot start thread %d\n", i);
			exit(1);
		}
	uint64_t errors = 0;
	for (int i = 0; i < ncores; i++) {
		pthread_join(r.cores[i].th, NULL);
		errors += r.cores[i].errors;
		sem_destroy(&r.cores[i].turn);
	}
	be_core(0);
	fprintf(out, "{\"workload\": \"%s\", \"variant\": \"%s\", \"cores\": %d, \"ncpus\": %ld, \"errors\": %" PRIu64
		     ", \"ipa\": %g, \"xfer\": %g, ",
		wl_name[w], var_name[v], ncores, model_ncpus, errors, clk_ipa, clk_xfer);
	if (rt_counting())
		rt_report(out, 40);
	else
		fprintf(out, "\"ops\": %ld", rounds * ncores);
	fprintf(out, "}\n");
	fflush(out);
	model_target_destroy(&r);
	free(r.cores);
	return 0;
}

/* CPU time of one core's operations, unmodelled (no baton): ns per op,
 * the best of five runs of `ops`. */
static double time_one(enum wl w, enum var v, long ops)
{
	struct run r = {.w = w, .v = v, .ncores = 1};
	struct core c = {0};
	double best = 0;
	void (*op)(struct run *, struct core *) = v == V_LIMITED ? model_op_limited : model_op;

	be_core(0);
	if (model_target_create(&r))
		return -1;
	rng_seed(&c.rng, 1 + (uint64_t)w, 0);
	model_setup(&r, &c);
	for (long k = 0; k < (long)APPEND_FILES * FILE_BLOCKS + 64; k++)
		op(&r, &c);
	for (int rep = 0; rep < 5; rep++) {
		struct timespec a, b;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
		for (long k = 0; k < ops; k++)
			op(&r, &c);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
		double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)ops;
		if (rep == 0 || ns < best)
			best = ns;
	}
	model_teardown(&r, &c);
	model_target_destroy(&r);
	return best;
}

static int find(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], s))
			return i;
	return -1;
}

int main(int argc, char **argv)
{
	int w = W_CHURN, v = V_BGA, cores[16] = {1, 2}, ncores = 2, timing = 0, cpu_a = -1, cpu_b = -1, slices = 8;
	long rounds = 0;
	double slice_s = 0.1;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--time")) {
			timing = 1;
			continue;
		}
		if (!val) {
			fprintf(stderr, "bga-model: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--ncpus")) {
			model_ncpus = atol(val);
		} else if (!strcmp(a, "-w")) {
			w = find(wl_name, W_N, val);
		} else if (!strcmp(a, "-v")) {
			v = find(var_name, V_N, val);
		} else if (!strcmp(a, "--measure")) {
			if (sscanf(val, "%d,%d", &cpu_a, &cpu_b) != 2 || cpu_a < 0 || cpu_b < 0 || cpu_a == cpu_b)
				cpu_a = cpu_b = -2;
		} else if (!strcmp(a, "--slices")) {
			slices = atoi(val);
		} else if (!strcmp(a, "--slice-s")) {
			slice_s = atof(val);
		} else if (!strcmp(a, "--ipa")) {
			clk_ipa = atof(val);
		} else if (!strcmp(a, "--xfer")) {
			clk_xfer = atof(val);
		} else if (!strcmp(a, "--rounds")) {
			rounds = atol(val);
		} else if (!strcmp(a, "-t")) {
			char *s = (char *)val, *end;
			for (ncores = 0; ncores < 16 && *s; ncores++, s = *end ? end + 1 : end)
				cores[ncores] = (int)strtol(s, &end, 10);
		} else {
			fprintf(stderr, "bga-model: unknown option %s\n", a);
			return 2;
		}
	}
	if (w < 0 || v < 0 || !(clk_ipa > 0) || !(clk_xfer >= 0) || model_ncpus < 1 || model_ncpus > RT_MAX_CORES || (timing && w == W_LOCK) ||
	    cpu_a == -2 || (cpu_a >= 0 && (rt_counting() || w > W_APP_OWN || slices < 1 || !(slice_s > 0)))) {
		fprintf(stderr, "usage: bga-model [--ncpus 1..64] [-w churn|writers|appenders-own|counter|lock] "
				"[-v bgalloc|baseline|percpu|atomic|fas|ticket|mcs|mutex|whole|limited] [-t N,...] [--rounds R]\n"
				"       [--ipa INSTR_PER_ACCESS --xfer TRANSFER_IN_INSTR] [--time]\n"
				"       bga-model-plain --measure CPU,CPU [-w churn|writers|appenders-own] [--slices K] "
				"[--slice-s S]\n");
		return 2;
	}
	if (cpu_a >= 0) {
		/* the release library as a program runs it: the kernel's CPU
		 * ids (rseq registered), this machine's CPU count */
		real_cpus = 1;
		const char *t = getenv("GLIBC_TUNABLES");
		if (__rseq_size == 0 && t && strstr(t, "glibc.pthread.rseq=0")) {
			unsetenv("GLIBC_TUNABLES");
			execv("/proc/self/exe", argv);
			perror("bga-model: exec");
			return 1;
		}
		return model_measure((enum wl)w, cpu_a, cpu_b, slices, slice_s, stdout);
	}
	for (int i = 0; i < ncores; i++)
		if (cores[i] < 1 || cores[i] > model_ncpus) {
			fprintf(stderr, "bga-model: %d cores on %ld CPUs\n", cores[i], model_ncpus);
			return 2;
		}
	/* the counter's CAS path, which takes its slot by the modelled CPU id */
	setenv("BGA_COUNTER_RSEQ", "0", 1);
	/* the library reads the CPU id where rseq's cpu_id would be: the
	 * area must be one the kernel does not update */
	if (__rseq_size != 0) {
		const char *t = getenv("GLIBC_TUNABLES");
		if (t && strstr(t, "glibc.pthread.rseq=0")) {
			fprintf(stderr, "bga-model: rseq still registered\n");
			return 1;
		}
		setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0", 1);
		execv("/proc/self/exe", argv);
		perror("bga-model: exec");
		return 1;
	}
	bga__rseq_cpu_off = __rseq_offset + (ptrdiff_t)offsetof(struct rseq, cpu_id);
	if (timing) {
		printf("{\"workload\": \"%s\", \"variant\": \"%s\", \"ns_per_op\": %.3f}\n", wl_name[w], var_name[v],
		       time_one((enum wl)w, (enum var)v, w == W_COUNTER ? 2000000 : 200000));
		return 0;
	}
	if (!rounds)
		rounds = w == W_CHURN ? 400 : w == W_COUNTER || w == W_LOCK ? 2048 : 512;
	for (int i = 0; i < ncores; i++)
		if (run_one((enum wl)w, (enum var)v, cores[i], rounds, stdout))
			return 1;
	return 0;
}
