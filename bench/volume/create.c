/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-create: what a volume costs before it is used.
 *
 *   bga-create [-n PAIRS] [-r REPS]
 *
 * For each size (2^16, 2^20, 2^32 and 2^48 blocks; the default config but
 * for 2^48, which needs 2^16 blocks a group to stay within 2^32 groups) it
 * times PAIRS create+destroy pairs, one clock reading around each pair,
 * and prints the median and the 10th/90th percentiles in microseconds:
 * the median of REPS such medians is the figure.  Then, in a fresh state
 * for each size, the growth of the process's resident set (/proc/self/statm)
 * from before bga_create to after one bga_alloc of one block, with the
 * volume still alive: what a user pays for a volume they touch once
 * (it includes the library's code paged in on first use), and beside it
 * the bytes malloc handed out for it (mallinfo2).  That comes first, each
 * size in a child process of its own.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bgalloc.h>

#include "args.h"
#include "rng.h"

static long resident_kib(void)
{
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f == NULL)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &res) != 2)
		res = -1;
	fclose(f);
	return res < 0 ? -1 : res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Bytes malloc has handed out and not taken back, mmapped ones included. */
static long heap_kib(void)
{
	struct mallinfo2 mi = mallinfo2();
	return (long)((mi.uordblks + mi.hblkhd) / 1024);
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "bga-create: %s: %s\n", what, bga_strerror(rc));
	exit(1);
}

static void config_for(struct bga_config *cfg, unsigned shift)
{
	bga_config_init(cfg, UINT64_C(1) << shift);
	if (shift == 48)
		cfg->blocks_per_group = 1u << 16;
}

/* In a fresh process, so that no earlier volume's freed memory is reused. */
static void rss_once(unsigned shift)
{
	struct bga_config cfg;
	config_for(&cfg, shift);
	struct bga_volume *vol;
	long before = resident_kib(), heap0 = heap_kib();
	int rc = bga_create(&cfg, &vol);
	if (rc)
		die("bga_create", rc);
	long created = resident_kib(), heap1 = heap_kib();
	struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = 1, .max_len = 1};
	struct bga_extent ext;
	rc = bga_alloc(vol, &req, &ext);
	if (rc)
		die("bga_alloc", rc);
	long after = resident_kib(), heap2 = heap_kib();
	printf("2^%-10u %14ld %14ld %14ld %14ld\n", shift, created - before, after - before, heap1 - heap0,
	       heap2 - heap0);
	fflush(stdout);
	bga_destroy(vol);
}

int main(int argc, char **argv)
{
	int pairs = 500, reps = 5, opt;
	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		if (opt == 'n')
			pairs = arg_int("bga-create", "-n PAIRS", optarg, 1, 1000000);
		else if (opt == 'r')
			reps = arg_int("bga-create", "-r REPS", optarg, 1, 1000);
		else {
			fprintf(stderr, "usage: bga-create [-n PAIRS] [-r REPS]\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bga-create: unexpected argument '%s'\nusage: bga-create [-n PAIRS] [-r REPS]\n", argv[optind]);
		return 2;
	}
	static const unsigned shifts[] = {16, 20, 32, 48};
	double *t = malloc((size_t)pairs * sizeof(*t)), *med = malloc((size_t)reps * sizeof(*med));
	if (t == NULL || med == NULL)
		return 1;
	printf("%-12s %14s %14s %14s %14s   (KiB, each size in a fresh child process)\n", "blocks",
	       "rss created", "rss +1 alloc", "heap created", "heap +1 alloc");
	fflush(stdout);
	for (size_t s = 0; s < sizeof(shifts) / sizeof(shifts[0]); s++) {
		pid_t pid = fork();
		if (pid == 0) {
			rss_once(shifts[s]);
			_exit(0);
		}
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
	}
	printf("\n");
	printf("%-12s %10s %10s %10s   (us per create+destroy, %d pairs, median of %d runs)\n", "blocks", "median",
	       "p10", "p90", pairs, reps);
	for (size_t s = 0; s < sizeof(shifts) / sizeof(shifts[0]); s++) {
		struct bga_config cfg;
		config_for(&cfg, shifts[s]);
		double p10 = 0, p90 = 0;
		for (int r = 0; r < reps; r++) {
			for (int i = 0; i < pairs; i++) {
				struct bga_volume *vol;
				double t0 = now_s();
				int rc = bga_create(&cfg, &vol);
				if (rc)
					die("bga_create", rc);
				bga_destroy(vol);
				t[i] = (now_s() - t0) * 1e6;
			}
			med[r] = bench_median(t, pairs);
			p10 += t[pairs / 10] / reps;
			p90 += t[pairs * 9 / 10] / reps;
		}
		printf("2^%-10u %10.2f %10.2f %10.2f\n", shifts[s], bench_median(med, reps), p10, p90);
	}
	free(t);
	free(med);
	return 0;
}
