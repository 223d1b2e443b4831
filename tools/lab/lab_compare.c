/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-lab compare A.json B.json: a before/after of two runs' JSON files
 * (say, two builds of the library).  Each cell (variant, threads) found in
 * both is compared on its samples' ops/s: B's median over A's, the
 * two-sided Mann-Whitney p of the two runs' samples (independent runs: no
 * pairing, so no paired CI), and Holm's correction over every cell
 * compared.  A cell is "B faster" or "B slower" when p_holm < alpha and
 * the medians differ in that direction by more than the margin of "no
 * significant difference" (10%): two runs minutes apart are not paired,
 * and the machine drifts between them by a few percent
 * (docs/TOOLS.md#two-runs-of-one-build-compared);
 * otherwise "no difference shown" (the test found none; it does not rule
 * one out).  Each cell is compared
 * on wall-clock ops/s (judged where both runs' threads got the CPUs) and
 * on operations per CPU-second (judged at 1 thread, or where they got
 * the CPUs), as the runs' own verdicts are.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lab.h"

struct side {
	json_t *root;
	const char *command;
};

static int load(const char *path, struct side *s)
{
	json_error_t err;
	s->root = json_load_file(path, 0, &err);
	if (!s->root) {
		fprintf(stderr, "bga-lab compare: %s: %s (line %d)\n", path, err.text, err.line);
		return -1;
	}
	json_t *tool = json_object_get(s->root, "tool"), *cells = json_object_get(s->root, "cells");
	s->command = json_string_value(json_object_get(s->root, "command"));
	if (!json_is_string(tool) || strcmp(json_string_value(tool), "bga-lab") || !json_is_array(cells) || !s->command) {
		fprintf(stderr, "bga-lab compare: %s: not a bga-lab JSON file (no tool, command or cells)\n", path);
		json_decref(s->root);
		return -1;
	}
	return 0;
}

/* The samples' ops/s (cpu: ops per CPU-second) and median CPU share of one cell. */
static unsigned samples(json_t *cell, bool cpu, double *x, double *share)
{
	json_t *arr = json_object_get(cell, "samples"), *e;
	size_t i;
	unsigned n = 0;
	double sh[LAB_MAX_REPS];
	json_array_foreach(arr, i, e)
	{
		if (n == LAB_MAX_REPS)
			break;
		double c = json_number_value(json_object_get(e, "cpu_s"));
		x[n] = cpu ? (c > 0 ? json_number_value(json_object_get(e, "ops")) / c : 0)
			   : json_number_value(json_object_get(e, "ops_per_s"));
		sh[n++] = json_number_value(json_object_get(e, "cpu_share"));
	}
	*share = lab_median(sh, n);
	return n;
}

/* One comparison: a cell on one measure. */
struct row {
	const char *variant;
	int threads;
	bool cpu;       /* ops per CPU-second, else wall-clock ops/s */
	bool judged;    /* in Holm's family: the measure stands for speed here */
	double ratio, p, p_holm, share;
	unsigned na, nb;
};

static void compare_cell(json_t *x, json_t *y, bool cpu, struct row *r)
{
	static double va[LAB_MAX_REPS], vb[LAB_MAX_REPS];
	double sa, sb;
	r->cpu = cpu;
	r->na = samples(x, cpu, va, &sa);
	r->nb = samples(y, cpu, vb, &sb);
	double ma = lab_median(va, r->na);
	r->ratio = ma > 0 ? lab_median(vb, r->nb) / ma : 0;
	r->p = r->p_holm = lab_mwu_p(va, r->na, vb, r->nb);
	r->share = sa < sb ? sa : sb;
	/* as the run's own verdicts: the wall clock where the threads got the
	 * CPUs, CPU time at 1 thread or where they ran together */
	r->judged = r->na >= LAB_MIN_REPS && r->nb >= LAB_MIN_REPS &&
		    (cpu ? r->threads == 1 || r->share >= LAB_SHARE_MIN : r->share >= LAB_SHARE_MIN);
}

int lab_compare_main(int argc, char **argv)
{
	double alpha = LAB_ALPHA, margin = LAB_SAME_MARGIN;
	if (argc != 2) {
		fprintf(stderr, "usage: bga-lab compare A.json B.json\n");
		return 2;
	}
	struct side a, b;
	if (load(argv[0], &a))
		return 2;
	if (load(argv[1], &b)) {
		json_decref(a.root);
		return 2;
	}
	if (strcmp(a.command, b.command))
		fprintf(stderr, "bga-lab compare: note: A ran '%s', B ran '%s'\n", a.command, b.command);
	if (!json_equal(json_object_get(a.root, "params"), json_object_get(b.root, "params")))
		fprintf(stderr, "bga-lab compare: note: the runs' parameters differ (\"params\" in the files)\n");

	json_t *ca = json_object_get(a.root, "cells"), *cb = json_object_get(b.root, "cells"), *x, *y;
	size_t i, j;
	struct row rows[LAB_MAX_COMPARISONS];
	unsigned nrows = 0;
	json_array_foreach(cb, j, y)
	{
		const char *name = json_string_value(json_object_get(y, "variant"));
		int threads = (int)json_integer_value(json_object_get(y, "threads"));
		json_array_foreach(ca, i, x)
		{
			const char *an = json_string_value(json_object_get(x, "variant"));
			if (!name || !an || strcmp(an, name) || json_integer_value(json_object_get(x, "threads")) != threads ||
			    nrows + 2 > sizeof(rows) / sizeof(rows[0]))
				continue;
			for (int cpu = 0; cpu < 2; cpu++) {
				rows[nrows] = (struct row){.variant = name, .threads = threads};
				compare_cell(x, y, cpu, &rows[nrows++]);
			}
			break;
		}
	}
	if (nrows == 0) {
		fprintf(stderr, "bga-lab compare: no cell (variant, threads) is in both files\n");
		json_decref(a.root);
		json_decref(b.root);
		return 2;
	}
	/* Holm over the judged comparisons */
	struct row *judged[LAB_MAX_COMPARISONS];
	double p_of[LAB_MAX_COMPARISONS] = {0}, p_holm[LAB_MAX_COMPARISONS];
	unsigned m = 0;
	for (unsigned k = 0; k < nrows; k++)
		if (rows[k].judged) {
			p_of[m] = rows[k].p;
			judged[m++] = &rows[k];
		}
	lab_holm(p_of, p_holm, m);
	for (unsigned k = 0; k < m; k++)
		judged[k]->p_holm = p_holm[k];
	printf("A: %s\nB: %s\n", argv[0], argv[1]);
	for (unsigned k = 0; k < nrows; k++) {
		const struct row *r = &rows[k];
		printf("compare%s threads=%d %s B/A=%.2fx%s reps=%u/%u p=%.4f ", r->cpu ? "-cpu" : "", r->threads, r->variant,
		       r->ratio, r->cpu ? " per CPU-second" : "", r->na, r->nb, r->p);
		if (r->na < LAB_MIN_REPS || r->nb < LAB_MIN_REPS)
			printf("p_holm=n/a: inconclusive (fewer than %d repetitions)\n", LAB_MIN_REPS);
		else if (!r->judged)
			printf("cpu_share=%.2f: inconclusive (cpu_share < %.2f in a run)\n", r->share, LAB_SHARE_MIN);
		else if (r->p_holm < alpha && r->ratio > 1 - margin && r->ratio < 1 + margin)
			printf("p_holm=%.4f: inconclusive (a difference under %.0f%%: two runs apart in time drift that much)\n",
			       r->p_holm, 100 * margin);
		else if (r->p_holm < alpha)
			printf("p_holm=%.4f: B %s\n", r->p_holm, r->ratio > 1 ? "faster" : "slower");
		else
			printf("p_holm=%.4f: no difference shown\n", r->p_holm);
	}
	json_decref(a.root);
	json_decref(b.root);
	return 0;
}
