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
 * the median per cell, the configuration and the machine; on stderr, the
 * defaults first and one line per cell last, where a ratio at 2+ threads
 * whose threads did not get the CPUs says "cannot decide" (CPU_SHARE_MIN,
 * as bga-lab and counter_bench do), so that no tool prints a bare figure
 * the others would contradict.  Tables, tests and plots are
 * bench/report/report.py's job.
 *
 * Workloads and variants are described in scale_workloads.c, the peer's
 * image in scale_run.c; scale_ctx.h says which file holds what.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "scale_ctx.h"
#include "xfer.h"

/* ---- options ------------------------------------------------------------ */


/* One cache line between the first two allowed CPUs, ns per transfer, at
 * the start and at the end of the run (xfer.h); < 0: not measured. */
#define XFER_PINGS 200000u

/* ---- command line ---------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bga-scale [options]\n"
		"  --quick              threads 1,2,8,64, 5 reps of 0.03 s (under 30 s)\n"
		"  --full               threads 1..128, 10 reps of 0.5 s\n"
		"  -w, --workloads=LIST churn,hot,extents,writers,script,counter,appenders-own,\n"
		"                       appenders-shared (default all but counter: counter modes are\n"
		"                       compared by `bga-lab counter`, which gives verdicts)\n"
		"  -t, --threads=LIST   thread counts (default 1,2,4,8,16,32,64,128)\n"
		"  -r, --reps=N         repetitions per cell, median taken (default 5)\n"
		"  -d, --duration=S     seconds per repetition (default 0.1)\n"
		"  -V, --variants=LIST  bgalloc,baseline,ext2,bgalloc-nowin,percpu,atomic (default all)\n"
		"  -j, --json=PATH      write the results there ('-' = stdout)\n"
		"      --blocks=N       volume size in blocks (default 1048576)\n"
		"      --append-blocks=N  the appenders' volume size in blocks (default 4194304)\n"
		"      --working-set=N  churn/hot working set, blocks (default 4096)\n"
		"      --file-blocks=N  writers' and appenders' file length, blocks (default 256)\n"
		"      --commit-every=N script: ops of all threads between commits (default 1024)\n"
		"      --seed=N         random seed (default 1)\n"
		"      --meta=KEY=VAL   record KEY in the JSON's meta (e.g. git=$(git rev-parse HEAD))\n"
		"      --no-pin         leave worker placement to the scheduler (default: bound\n"
		"                       round-robin to the allowed CPUs)\n"
		"  -q, --quiet          no progress line\n"
		"      --list           list workloads and variants\n"
		"defaults, also said in the first line on stderr: workers pinned round-robin to the\n"
		"allowed CPUs; the timer thread SCHED_FIFO where permitted (else SCHED_OTHER, as the\n"
		"JSON's timer_policy says); 5 repetitions of 0.1 s per cell, interleaved across\n"
		"variants, median taken.  At the end, one line per cell on stderr: its median\n"
		"ops/s and CPU share (CPU time / (wall x min(threads, CPUs))), and its ratio to the\n"
		"workload's baseline; at 2+ threads a ratio whose CPU share is under 0.80 (the\n"
		"threshold of bga-lab and counter_bench) says \"cannot decide\", here and in the JSON.\n");
}

/* A comma list with no empty item: strtok_r would skip one, and "1,,2" or
 * "churn," is a typo, not a list. */
static bool list_ok(const char *arg, const char *what)
{
	size_t len = strlen(arg);
	if (len && arg[0] != ',' && arg[len - 1] != ',' && !strstr(arg, ",,"))
		return true;
	fprintf(stderr, "bga-scale: bad %s list '%s': an empty item\n", what, arg);
	return false;
}

static int parse_list(const char *arg, const char *const *names, int n, bool *on)
{
	char *dup = list_ok(arg, "name") ? strdup(arg) : NULL, *save = NULL;

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
	char *dup = list_ok(arg, "thread") ? strdup(arg) : NULL, *save = NULL;

	if (!dup)
		return -1;
	scale.opt.nthreads = 0;
	for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		long t = strtol(tok, &end, 10);

		if (*end || t < 1 || t > MAX_THREADS || scale.opt.nthreads == 64) {
			fprintf(stderr, "bga-scale: bad thread count '%s' (1..%d)\n", tok, MAX_THREADS);
			free(dup);
			return -1;
		}
		scale.opt.threads[scale.opt.nthreads++] = (int)t;
	}
	free(dup);
	return scale.opt.nthreads ? 0 : -1;
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
	enum { O_QUICK = 256, O_FULL, O_BLOCKS, O_APPBLOCKS, O_WSET, O_FILE, O_COMMIT, O_SEED, O_META, O_LIST, O_NOPIN };
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
		{"append-blocks", required_argument, NULL, O_APPBLOCKS},
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
	scale.opt.duration = 0.1;
	scale.opt.reps = 5;
	memcpy(scale.opt.threads, all_threads, sizeof(all_threads));
	scale.opt.nthreads = 8;
	/* The counter comparison is bga-lab's (tools/lab): it measures
	 * each cell's CPU share and the ceiling before it calls a difference,
	 * so that two tools cannot give opposite significant answers. */
	for (int i = 0; i < W_COUNT; i++)
		scale.opt.wl_on[i] = i != W_COUNTER;
	for (int i = 0; i < V_COUNT; i++)
		scale.opt.var_on[i] = true;
	scale.opt.nblocks = UINT64_C(1) << 20;
	scale.opt.app_blocks = UINT64_C(1) << 22;
	scale.opt.working_set = 4096;
	scale.opt.file_blocks = 256;
	scale.opt.commit_every = 1024;
	scale.opt.seed = 1;

	while ((ch = getopt_long(argc, argv, "w:t:r:d:V:j:qh", lo, NULL)) != -1) {
		switch (ch) {
		case O_QUICK:
			scale.opt.duration = 0.03;
			scale.opt.reps = 5;
			scale.opt.threads[0] = 1, scale.opt.threads[1] = 2, scale.opt.threads[2] = 8, scale.opt.threads[3] = 64;
			scale.opt.nthreads = 4;
			break;
		case O_FULL:
			scale.opt.duration = 0.5;
			scale.opt.reps = 10;
			memcpy(scale.opt.threads, all_threads, sizeof(all_threads));
			scale.opt.nthreads = 8;
			break;
		case 'w':
			if (parse_list(optarg, wl_names, W_COUNT, scale.opt.wl_on))
				return -1;
			break;
		case 't':
			if (parse_threads(optarg))
				return -1;
			break;
		case 'r':
			if (parse_u64(optarg, 1, MAX_REPS, &u))
				return -1;
			scale.opt.reps = (int)u;
			break;
		case 'd': {
			char *end;

			scale.opt.duration = strtod(optarg, &end);
			if (*end || !(scale.opt.duration >= 0.001 && scale.opt.duration <= 60)) {
				fprintf(stderr, "bga-scale: duration must be 0.001..60 s\n");
				return -1;
			}
			break;
		}
		case 'V':
			if (parse_list(optarg, variant_name, V_COUNT, scale.opt.var_on))
				return -1;
			break;
		case 'j':
			scale.opt.json = optarg;
			break;
		case O_BLOCKS:
			if (parse_u64(optarg, 65536, UINT64_C(1) << 32, &scale.opt.nblocks))
				return -1;
			break;
		case O_APPBLOCKS:
			if (parse_u64(optarg, 65536, UINT64_C(1) << 32, &scale.opt.app_blocks))
				return -1;
			break;
		case O_WSET:
			if (parse_u64(optarg, 1, 1 << 20, &u))
				return -1;
			scale.opt.working_set = (uint32_t)u;
			break;
		case O_FILE:
			if (parse_u64(optarg, 1, 1 << 16, &u))
				return -1;
			scale.opt.file_blocks = (uint32_t)u;
			break;
		case O_COMMIT:
			if (parse_u64(optarg, 1, UINT32_MAX, &u))
				return -1;
			scale.opt.commit_every = (uint32_t)u;
			break;
		case O_SEED:
			if (parse_u64(optarg, 0, UINT64_MAX, &scale.opt.seed))
				return -1;
			break;
		case O_META:
			if (!strchr(optarg, '=') || scale.opt.nmeta == 32) {
				fprintf(stderr, "bga-scale: --meta wants KEY=VALUE\n");
				return -1;
			}
			scale.opt.meta[scale.opt.nmeta++] = optarg;
			break;
		case 'q':
			scale.opt.quiet = true;
			break;
		case O_NOPIN:
			scale.opt.no_pin = true;
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
		for (int i = 0; scale.opt.wl_on[w] && i < workloads[w].nvariants; i++)
			if (scale.opt.var_on[workloads[w].variants[i]])
				total += scale.opt.nthreads;
	if (total == 0) {
		fprintf(stderr, "bga-scale: no cell selected\n");
		return 2;
	}
	fprintf(stderr, "bga-scale: %d reps x %g s per cell, interleaved, median taken; workers %s; timer thread "
			"SCHED_FIFO where permitted; ratios at 2+ threads need CPU share >= %.2f\n",
		scale.opt.reps, scale.opt.duration,
		scale.opt.no_pin || !scale.ncpus_allowed ? "not pinned" : "pinned round-robin to the allowed CPUs",
		CPU_SHARE_MIN);
	cells = calloc((size_t)total, sizeof(*cells));
	if (!cells)
		return 1;
	if (scale.ncpus_allowed >= 2)
		scale.xfer_ns[0] = xfer_line_ns(scale.cpus[0], scale.cpus[1], XFER_PINGS);
	if (scale.opt.wl_on[W_COUNTER])
		fprintf(stderr, "bga-scale: counter: per-CPU adds on %s, CPU-id source %s\n", counter_path(),
			cpu_source());

	for (int w = 0; w < W_COUNT; w++) {
		const struct workload *wl = &workloads[w];

		if (!scale.opt.wl_on[w])
			continue;
		for (int ti = 0; ti < scale.opt.nthreads; ti++) {
			int first = ncells, nt = scale.opt.threads[ti];

			for (int i = 0; i < wl->nvariants; i++) {
				if (!scale.opt.var_on[wl->variants[i]])
					continue;
				cells[ncells].w = (enum wl_id)w;
				cells[ncells].v = wl->variants[i];
				cells[ncells].nthreads = nt;
				ncells++;
			}
			for (int rep = 0; rep < scale.opt.reps; rep++) {
				for (int ci = first; ci < ncells; ci++) {
					struct cellres *cr = &cells[ci];
					struct result *r = &cr->r[rep];

					/* on a terminal the line is rewritten per repetition;
					 * in a log, one line per row of the table */
					if (!scale.opt.quiet && tty)
						fprintf(stderr, "\r\033[K[cell %d/%d] %-8s threads %3d  %-13s rep %d/%d",
							done + 1 + (ci - first), total, wl->name, nt,
							variant_name[cr->v], rep + 1, scale.opt.reps);
					else if (!scale.opt.quiet && rep == 0 && ci == first)
						fprintf(stderr, "[cells %d-%d/%d] %s, %d threads, %d reps x %g s\n",
							done + 1, done + ncells - first, total, wl->name, nt, scale.opt.reps,
							scale.opt.duration);
					if (run_rep((enum wl_id)w, cr->v, nt, rep, r)) {
						fprintf(stderr, "\nbga-scale: %s/%s/%d threads could not run\n", wl->name,
							variant_name[cr->v], nt);
						return 1;
					}
					cr->nreps = rep + 1;
					if (r->errors && !scale.opt.quiet)
						fprintf(stderr, "%sbga-scale: %s/%s/%d threads rep %d: %llu failed calls\n",
							tty ? "\n" : "", wl->name, variant_name[cr->v], nt, rep + 1,
							(unsigned long long)r->errors);
				}
			}
			done = ncells;
		}
	}
	if (scale.ncpus_allowed >= 2)
		scale.xfer_ns[1] = xfer_line_ns(scale.cpus[0], scale.cpus[1], XFER_PINGS);
	if (!scale.opt.quiet)
		fprintf(stderr, "%s[%d cells, %.1f s]\n", tty ? "\r\033[K" : "", total, now_s() - t_start);
	write_text(stderr, cells, ncells);
	if (scale.opt.json && write_json(scale.opt.json, cells, ncells, started, now_s() - t_start))
		return 1;
	if (!scale.opt.json)
		fprintf(stderr, "bga-scale: no --json given; results not written\n");
	for (int i = 0; i < 2; i++)
		if (scale.peers[i])
			peer_ext2_destroy(scale.peers[i]);
	free(cells);
	return 0;
}
