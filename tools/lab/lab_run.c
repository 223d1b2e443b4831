/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The harness: cells run interleaved, repetition by repetition, each with
 * its CPU share; the ceiling measured beside them.  lab.h states the method.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab.h"

const struct lab_params *lab_cur;

uint64_t lab_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The critical section's length is a calibrated empty loop: a clock read
 * per iteration would cost more than the shortest holds asked for. */
static double spin_ns_per_iter = 1.0;

static void spin_iters(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		__asm__ __volatile__("" ::: "memory");
}

void lab_spin_calibrate(void)
{
	/* The fastest of five: a descheduled trial only ever reads slower. */
	double best = 1e9;
	for (int t = 0; t < 5; t++) {
		uint64_t t0 = lab_now_ns();
		spin_iters(2000000);
		double ns = (double)(lab_now_ns() - t0) / 2000000.0;
		if (ns < best)
			best = ns;
	}
	spin_ns_per_iter = best > 0.01 ? best : 0.01;
}

double lab_spin_ns_per_iter(void)
{
	return spin_ns_per_iter;
}

void *lab_alloc_lines(size_t size)
{
	void *p = aligned_alloc(LAB_CACHELINE, (size + LAB_CACHELINE - 1) & ~(size_t)(LAB_CACHELINE - 1));
	if (p)
		memset(p, 0, size);
	return p;
}

int lab_check_sum(const char *name, int64_t sum, uint64_t total)
{
	if (sum == (int64_t)total)
		return 0;
	fprintf(stderr, "bga-lab: %s: sum %lld after %llu adds\n", name, (long long)sum, (unsigned long long)total);
	return -1;
}

void lab_spin_ns(uint64_t ns)
{
	if (ns)
		spin_iters((uint64_t)((double)ns / spin_ns_per_iter + 0.5));
}

unsigned lab_cpus_allowed(int *cpus, unsigned max)
{
	cpu_set_t set;
	unsigned n = 0;

	if (sched_getaffinity(0, sizeof(set), &set) != 0) {
		cpus[0] = 0;
		return 1;
	}
	for (int c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	return n ? n : 1;
}

/* The machine's steal and total jiffies (/proc/stat's first line): in a VM
 * a thread's CPU time runs on while the host has taken its vCPU away, so
 * the CPU share alone would not see that loss. */
static void stat_jiffies(uint64_t *steal, uint64_t *total)
{
	unsigned long long v[10] = {0};
	FILE *f = fopen("/proc/stat", "r");
	*steal = *total = 0;
	if (!f)
		return;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
		   &v[7]) == 8) {
		*steal = v[7];
		for (int i = 0; i < 8; i++)
			*total += v[i];
	}
	fclose(f);
}

struct cell_run {
	const struct lab_variant *v;
	void *obj;
	unsigned nthreads;
	uint64_t ops;
	const int *cpus;
	unsigned ncpus;
	bool pin;
	volatile int go, stop;
	int ready;
};

struct worker {
	struct cell_run *run;
	unsigned tid;
	uint64_t ops, cpu_ns, end_ns;
	pthread_t th;
};

static void pin_to(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct cell_run *run = w->run;

	if (run->pin)
		pin_to(run->cpus[w->tid % run->ncpus]);
	__atomic_fetch_add(&run->ready, 1, __ATOMIC_ACQ_REL);
	while (!__atomic_load_n(&run->go, __ATOMIC_ACQUIRE))
		sched_yield(); /* with more threads than CPUs, let the others arrive */
	uint64_t c0 = thread_cpu_ns();
	w->ops = run->v->work(run->obj, w->tid, run->ops, &run->stop);
	w->cpu_ns = thread_cpu_ns() - c0;
	w->end_ns = lab_now_ns();
	return NULL;
}

/* One cell: nthreads threads on a fresh object.  Returns 0 or -1. */
static int run_cell(const struct lab_params *p, const struct lab_variant *v, unsigned nthreads,
		    const int *cpus, unsigned ncpus, bool pin, struct lab_sample *out, char *desc, size_t desclen)
{
	struct cell_run run = {.v = v, .nthreads = nthreads, .ops = p->ops, .cpus = cpus, .ncpus = ncpus, .pin = pin};
	struct worker *w = calloc(nthreads, sizeof(*w));
	unsigned started = 0;
	int rc = 0;

	if (!w)
		return -1;
	run.obj = v->setup(v, nthreads);
	if (!run.obj) {
		free(w);
		return -1;
	}
	for (unsigned i = 0; i < nthreads; i++) {
		w[i].run = &run;
		w[i].tid = i;
		if (pthread_create(&w[i].th, NULL, worker_main, &w[i]) != 0) {
			fprintf(stderr, "bga-lab: pthread_create: %s\n", strerror(errno));
			rc = -1;
			break;
		}
		started++;
	}
	while (__atomic_load_n(&run.ready, __ATOMIC_ACQUIRE) < (int)started)
		sched_yield();
	uint64_t st0, tot0, st1, tot1;
	stat_jiffies(&st0, &tot0);
	uint64_t t0 = lab_now_ns();
	__atomic_store_n(&run.go, 1, __ATOMIC_RELEASE);
	if (!p->ops && started) {
		struct timespec ts = {(time_t)p->seconds, (long)((p->seconds - (double)(time_t)p->seconds) * 1e9)};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
	__atomic_store_n(&run.stop, 1, __ATOMIC_RELEASE);
	uint64_t total = 0, cpu = 0, end = t0;
	for (unsigned i = 0; i < started; i++) {
		pthread_join(w[i].th, NULL);
		total += w[i].ops;
		cpu += w[i].cpu_ns;
		if (w[i].end_ns > end)
			end = w[i].end_ns;
	}
	stat_jiffies(&st1, &tot1);
	out->steal = tot1 > tot0 ? (double)(st1 - st0) / (double)(tot1 - tot0) : 0;
	if (v->finish(run.obj, total, desc, desclen) != 0)
		rc = -1;
	double wall = (double)(end - t0) / 1e9;
	unsigned eff = nthreads < ncpus ? nthreads : ncpus;
	out->ops = total;
	out->wall_s = wall;
	out->cpu_s = (double)cpu / 1e9;
	out->ops_per_s = wall > 0 ? (double)total / wall : 0;
	/* CPU time the host stole is no CPU the threads had. */
	out->cpu_share = wall > 0 ? out->cpu_s * (1 - out->steal) / (wall * eff) : 0;
	free(w);
	return rc;
}

/*
 * One ceiling trial: `procs` processes, each running the first variant at
 * one thread, at once (pinned to distinct CPUs with --pin); the sum of
 * their rates.  procs == 1 is "one alone".  The processes share nothing:
 * whatever they lose against procs x alone is the machine's.
 */
static double ceiling_trial(const struct lab_params *p, unsigned procs, const int *cpus, unsigned ncpus)
{
	int fds[LAB_MAX_THREADS_LIST][2];
	pid_t pids[LAB_MAX_THREADS_LIST];
	double sum = 0;

	for (unsigned i = 0; i < procs; i++) {
		if (pipe(fds[i]) != 0)
			return 0;
		fflush(NULL);
		pids[i] = fork();
		if (pids[i] < 0)
			return 0;
		if (pids[i] == 0) {
			struct lab_sample s = {0};
			char desc[64];
			close(fds[i][0]);
			run_cell(p, &p->variants[0], 1, &cpus[i % ncpus], 1, p->pin, &s, desc, sizeof(desc));
			ssize_t n = write(fds[i][1], &s.ops_per_s, sizeof(s.ops_per_s));
			_exit(n == (ssize_t)sizeof(s.ops_per_s) ? 0 : 1);
		}
		close(fds[i][1]);
	}
	for (unsigned i = 0; i < procs; i++) {
		double r = 0;
		int st;
		if (read(fds[i][0], &r, sizeof(r)) != (ssize_t)sizeof(r))
			r = 0;
		close(fds[i][0]);
		waitpid(pids[i], &st, 0);
		sum += r;
	}
	return sum;
}

static struct lab_cell *cell_of(struct lab_result *r, const struct lab_params *p, unsigned ti, unsigned vi)
{
	return &r->cells[ti * p->nvariants + vi];
}

int lab_run(const struct lab_params *p, struct lab_result *r)
{
	int cpus[1024];
	unsigned ncpus = lab_cpus_allowed(cpus, 1024);
	time_t now = time(NULL);

	memset(r, 0, sizeof(*r));
	lab_cur = p;
	r->ncpus = ncpus;
	strftime(r->started, sizeof(r->started), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	r->ncells = p->nthreads * p->nvariants;
	r->cells = calloc(r->ncells, sizeof(*r->cells));
	r->ceilings = calloc(p->nthreads, sizeof(*r->ceilings));
	r->nceilings = p->nthreads;
	if (!r->cells || !r->ceilings)
		return -ENOMEM;
	for (unsigned ti = 0; ti < p->nthreads; ti++) {
		for (unsigned vi = 0; vi < p->nvariants; vi++) {
			struct lab_cell *c = cell_of(r, p, ti, vi);
			c->variant = vi;
			c->threads = p->threads[ti];
			c->samples = calloc(p->reps, sizeof(*c->samples));
			if (!c->samples)
				return -ENOMEM;
		}
		struct lab_ceiling *cl = &r->ceilings[ti];
		cl->threads = p->threads[ti];
		cl->procs = p->threads[ti] < ncpus ? p->threads[ti] : ncpus;
		if (cl->procs > LAB_MAX_THREADS_LIST)
			cl->procs = LAB_MAX_THREADS_LIST;
		cl->alone = calloc(p->reps, sizeof(double));
		cl->together = calloc(p->reps, sizeof(double));
		if (!cl->alone || !cl->together)
			return -ENOMEM;
	}
	for (unsigned rep = 0; rep < p->reps; rep++) {
		if (!p->quiet)
			fprintf(stderr, "\rbga-lab: repetition %u/%u", rep + 1, p->reps), fflush(stderr);
		/* The order rotates, so no variant always runs first (after the
		 * ceiling's processes) or last; the thread counts rotate too. */
		for (unsigned tj = 0; tj < p->nthreads; tj++) {
			unsigned ti = (tj + rep) % p->nthreads;
			for (unsigned vj = 0; vj < p->nvariants; vj++) {
				unsigned vi = (vj + rep) % p->nvariants;
				struct lab_cell *c = cell_of(r, p, ti, vi);
				if (run_cell(p, &p->variants[vi], p->threads[ti], cpus, ncpus, p->pin, &c->samples[rep],
					     c->desc, sizeof(c->desc)) != 0)
					r->failed = 1;
			}
			struct lab_ceiling *cl = &r->ceilings[ti];
			if (p->ceiling && cl->procs > 1) {
				cl->alone[cl->n] = ceiling_trial(p, 1, cpus, ncpus);
				cl->together[cl->n] = ceiling_trial(p, cl->procs, cpus, ncpus);
				cl->n++;
			}
		}
	}
	if (!p->quiet)
		fprintf(stderr, "\r%40s\r", "");
	for (unsigned ti = 0; ti < p->nthreads; ti++) {
		struct lab_ceiling *cl = &r->ceilings[ti];
		double ratio[LAB_MAX_REPS];
		for (unsigned i = 0; i < cl->n; i++)
			ratio[i] = cl->alone[i] > 0 ? cl->together[i] / cl->alone[i] : 0;
		cl->value = cl->n ? lab_median(ratio, cl->n) : 0;
	}
	lab_verdicts(p, r);
	return r->failed ? -EIO : 0;
}

void lab_result_free(struct lab_result *r)
{
	for (unsigned i = 0; i < r->ncells; i++)
		free(r->cells[i].samples);
	for (unsigned i = 0; r->ceilings && i < r->nceilings; i++) {
		free(r->ceilings[i].alone);
		free(r->ceilings[i].together);
	}
	free(r->cells);
	free(r->ceilings);
	free(r->verdicts);
	memset(r, 0, sizeof(*r));
}
