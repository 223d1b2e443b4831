/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-lab compare A.json B.json: a before/after of two runs' JSON files
 * (say, two builds of the library).  Each cell (variant, threads) found in
 * both is compared on its samples' ops/s: B's median over A's, the
 * two-sided Mann-Whitney p of the two runs' samples (independent runs: no
 * pairing, so no paired CI), and Holm's correction over every cell
 * compared.  A cell is "B faster" or "B slower" when p_holm < alpha and
 * the medians differ in that direction; otherwise "no difference shown"
 * (the test found none; it does not rule one out).  Cells of either run
 * whose CPU share was under the threshold are named, not judged.
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

/* The samples' ops/s and median CPU share of one cell. */
static unsigned samples(json_t *cell, double *x, double *share)
{
	json_t *arr = json_object_get(cell, "samples"), *e;
	size_t i;
	unsigned n = 0;
	double sh[LAB_MAX_REPS];
	json_array_foreach(arr, i, e)
	{
		if (n == LAB_MAX_REPS)
			break;
		x[n] = json_number_value(json_object_get(e, "ops_per_s"));
		sh[n++] = json_number_value(json_object_get(e, "cpu_share"));
	}
	*share = lab_median(sh, n);
	return n;
}

struct row {
	const char *variant;
	int threads;
	double ratio, p, p_holm, share;
	unsigned na, nb;
};

int lab_compare_main(int argc, char **argv)
{
	double alpha = LAB_ALPHA, share_min = LAB_SHARE_MIN;
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
	struct row rows[LAB_MAX_THREADS_LIST * LAB_MAX_VARIANTS];
	unsigned nrows = 0;
	static double va[LAB_MAX_REPS], vb[LAB_MAX_REPS];
	json_array_foreach(cb, j, y)
	{
		const char *name = json_string_value(json_object_get(y, "variant"));
		int threads = (int)json_integer_value(json_object_get(y, "threads"));
		json_array_foreach(ca, i, x)
		{
			const char *an = json_string_value(json_object_get(x, "variant"));
			if (!name || !an || strcmp(an, name) || json_integer_value(json_object_get(x, "threads")) != threads ||
			    nrows == sizeof(rows) / sizeof(rows[0]))
				continue;
			struct row *r = &rows[nrows++];
			double sa, sb;
			r->variant = name;
			r->threads = threads;
			r->na = samples(x, va, &sa);
			r->nb = samples(y, vb, &sb);
			double ma = lab_median(va, r->na);
			r->ratio = ma > 0 ? lab_median(vb, r->nb) / ma : 0;
			r->p = lab_mwu_p(va, r->na, vb, r->nb);
			r->share = sa < sb ? sa : sb;
			break;
		}
	}
	if (nrows == 0) {
		fprintf(stderr, "bga-lab compare: no cell (variant, threads) is in both files\n");
		json_decref(a.root);
		json_decref(b.root);
		return 2;
	}
	/* Holm over the judged rows (those whose runs got the CPUs) */
	struct row *order[sizeof(rows) / sizeof(rows[0])];
	unsigned m = 0;
	for (unsigned k = 0; k < nrows; k++)
		if (rows[k].share >= share_min)
			order[m++] = &rows[k];
	for (unsigned k = 1; k < m; k++)
		for (unsigned l = k; l > 0 && order[l]->p < order[l - 1]->p; l--) {
			struct row *t = order[l];
			order[l] = order[l - 1];
			order[l - 1] = t;
		}
	double run = 0;
	for (unsigned k = 0; k < m; k++) {
		double adj = order[k]->p * (m - k);
		run = adj > run ? adj : run;
		order[k]->p_holm = run < 1 ? run : 1;
	}
	printf("A: %s\nB: %s\n", argv[0], argv[1]);
	for (unsigned k = 0; k < nrows; k++) {
		const struct row *r = &rows[k];
		printf("compare threads=%d %s B/A=%.2fx reps=%u/%u p=%.4f ", r->threads, r->variant, r->ratio, r->na, r->nb,
		       r->p);
		if (r->share < share_min)
			printf("cpu_share=%.2f: inconclusive (cpu_share < %.2f in a run)\n", r->share, share_min);
		else if (r->na < LAB_MIN_REPS || r->nb < LAB_MIN_REPS)
			printf("p_holm=%.4f: inconclusive (fewer than %d repetitions)\n", r->p_holm, LAB_MIN_REPS);
		else if (r->p_holm < alpha)
			printf("p_holm=%.4f: B %s\n", r->p_holm, r->ratio > 1 ? "faster" : "slower");
		else
			printf("p_holm=%.4f: no difference shown\n", r->p_holm);
	}
	json_decref(a.root);
	json_decref(b.root);
	return 0;
}
