/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What bga-lab shows: the table and verdicts on stdout, every sample in a
 * JSON file (jansson), and a PNG through gnuplot with the key outside the
 * plotted area.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "lab.h"

static void loadavg(char *buf, size_t len)
{
	FILE *f = fopen("/proc/loadavg", "r");
	buf[0] = 0;
	if (f) {
		if (fgets(buf, (int)len, f))
			buf[strcspn(buf, " \n")] = 0;
		fclose(f);
	}
}

static void cell_column(const struct lab_cell *c, unsigned reps, int which, double *out)
{
	for (unsigned i = 0; i < reps; i++)
	{
		const struct lab_sample *s = &c->samples[i];
		out[i] = which == 0 ? s->ops_per_s : which == 1 ? s->cpu_share : which == 3 ? s->steal
			 : s->cpu_s > 0 ? (double)s->ops / s->cpu_s : 0; /* 2: ops per CPU-second */
	}
}

void lab_print(const struct lab_params *p, const struct lab_result *r)
{
	char la[64];
	double x[LAB_MAX_REPS];

	loadavg(la, sizeof(la));
	printf("bga-lab %s: measured through the %s\n", p->command, p->api);
	printf("machine: %u CPUs allowed, load average %s at the end; threads %s; %u repetitions of %s per cell\n",
	       r->ncpus, la, p->pin ? "pinned" : "not pinned", p->reps, p->ops ? "a fixed count of ops" : "a fixed time");
	if (!strcmp(p->command, "lock"))
		printf("lock: hold %llu ns, think %llu ns, spread %llu keys, slots %u (0: auto); calibrated loop %.3f ns/iteration\n",
		       (unsigned long long)p->hold_ns, (unsigned long long)p->think_ns, (unsigned long long)p->spread,
		       p->slots, lab_spin_ns_per_iter());
	else
		printf("counter: %s, batch %d (0: auto)\n", p->limited ? "bga_counter_add_limited far from the limit" : "bga_counter_add(c, 1)",
		       p->batch);
	printf("%-7s %-14s %9s %13s %11s %9s %6s %6s  %s\n", "threads", "variant", "Mops/s", "min-max", "Mops/cpu-s",
	       "cpu_share", "steal", "spread", "what ran");
	for (unsigned i = 0; i < r->ncells; i++) {
		const struct lab_cell *c = &r->cells[i];
		const struct lab_variant *v = &p->variants[c->variant];
		cell_column(c, p->reps, 0, x);
		double med = lab_median(x, p->reps), lo = lab_quantile(x, p->reps, 0), hi = lab_quantile(x, p->reps, 1);
		double q1 = lab_quantile(x, p->reps, 0.25), q3 = lab_quantile(x, p->reps, 0.75);
		cell_column(c, p->reps, 2, x);
		double percpu = lab_median(x, p->reps);
		cell_column(c, p->reps, 3, x);
		double steal = lab_median(x, p->reps);
		cell_column(c, p->reps, 1, x);
		char mm[32];
		snprintf(mm, sizeof(mm), "%.1f-%.1f", lo / 1e6, hi / 1e6);
		printf("%-7u %-14s %9.2f %13s %11.2f %9.2f %6.2f %6.2f  %s (%s)\n", c->threads, v->name, med / 1e6, mm,
		       percpu / 1e6, lab_median(x, p->reps), steal, med > 0 ? (q3 - q1) / med : 0, c->desc, v->where);
	}
	for (unsigned t = 0; t < r->nceilings; t++) {
		const struct lab_ceiling *cl = &r->ceilings[t];
		if (cl->n)
			printf("ceiling threads=%u: C=%.2fx (%u processes of %s at 1 thread at once over one alone, median of %u)\n",
			       cl->threads, cl->value, cl->procs, p->variants[0].name, cl->n);
	}
	for (unsigned i = 0; i < r->nverdicts; i++)
		printf("%s\n%s\n", r->verdicts[i].wall.line, r->verdicts[i].cpu.line);
	fflush(stdout);
}

void lab_print_csv(const struct lab_params *p, const struct lab_result *r)
{
	printf("command,variant,where,threads,rep,ops_per_s,cpu_share,wall_s,cpu_s,steal,ops\n");
	for (unsigned i = 0; i < r->ncells; i++) {
		const struct lab_cell *c = &r->cells[i];
		const struct lab_variant *v = &p->variants[c->variant];
		for (unsigned k = 0; k < p->reps; k++) {
			const struct lab_sample *x = &c->samples[k];
			printf("%s,%s,%s,%u,%u,%.6g,%.4f,%.6f,%.6f,%.4f,%llu\n", p->command, v->name, v->where, c->threads, k,
			       x->ops_per_s, x->cpu_share, x->wall_s, x->cpu_s, x->steal, (unsigned long long)x->ops);
		}
	}
	fflush(stdout);
}

int lab_write_json(const struct lab_params *p, const struct lab_result *r, const char *path)
{
	char la[64];
	json_t *root = json_object(), *params = json_object(), *cells = json_array(), *ceil = json_array(),
	       *verd = json_array(), *threads = json_array(), *variants = json_array();

	loadavg(la, sizeof(la));
	for (unsigned i = 0; i < p->nthreads; i++)
		json_array_append_new(threads, json_integer(p->threads[i]));
	for (unsigned i = 0; i < p->nvariants; i++)
		json_array_append_new(variants, json_pack("{s:s, s:s}", "name", p->variants[i].name, "where", p->variants[i].where));
	json_object_set_new(params, "threads", threads);
	json_object_set_new(params, "variants", variants);
	json_object_set_new(params, "reps", json_integer(p->reps));
	json_object_set_new(params, "seconds", p->ops ? json_null() : json_real(p->seconds));
	json_object_set_new(params, "ops_per_thread", p->ops ? json_integer((json_int_t)p->ops) : json_null());
	json_object_set_new(params, "pin", json_boolean(p->pin));
	json_object_set_new(params, "ceiling", json_boolean(p->ceiling));
	if (!strcmp(p->command, "counter")) {
		json_object_set_new(params, "batch", json_integer(p->batch));
		json_object_set_new(params, "limited", json_boolean(p->limited));
	} else {
		json_object_set_new(params, "hold_ns", json_integer((json_int_t)p->hold_ns));
		json_object_set_new(params, "think_ns", json_integer((json_int_t)p->think_ns));
		json_object_set_new(params, "slots", json_integer(p->slots));
		json_object_set_new(params, "spread", json_integer((json_int_t)p->spread));
		json_object_set_new(params, "spin_ns_per_iter", json_real(lab_spin_ns_per_iter()));
	}
	for (unsigned i = 0; i < r->ncells; i++) {
		const struct lab_cell *c = &r->cells[i];
		json_t *s = json_array();
		for (unsigned k = 0; k < p->reps; k++) {
			const struct lab_sample *x = &c->samples[k];
			json_array_append_new(s, json_pack("{s:i, s:f, s:f, s:f, s:f, s:f, s:I}", "rep", k, "ops_per_s", x->ops_per_s,
							   "cpu_share", x->cpu_share, "wall_s", x->wall_s, "cpu_s", x->cpu_s,
							   "steal", x->steal,
							   "ops", (json_int_t)x->ops));
		}
		json_array_append_new(cells, json_pack("{s:s, s:i, s:s, s:o}", "variant", p->variants[c->variant].name,
						       "threads", c->threads, "what_ran", c->desc, "samples", s));
	}
	for (unsigned t = 0; t < r->nceilings; t++) {
		const struct lab_ceiling *cl = &r->ceilings[t];
		if (!cl->n)
			continue;
		json_t *a = json_array(), *b = json_array();
		for (unsigned k = 0; k < cl->n; k++) {
			json_array_append_new(a, json_real(cl->alone[k]));
			json_array_append_new(b, json_real(cl->together[k]));
		}
		json_array_append_new(ceil, json_pack("{s:i, s:i, s:f, s:o, s:o}", "threads", cl->threads, "procs", cl->procs,
						      "value", cl->value, "alone_ops_per_s", a, "together_ops_per_s", b));
	}
	for (unsigned i = 0; i < r->nverdicts; i++) {
		const struct lab_verdict *v = &r->verdicts[i];
		json_t *o = json_pack("{s:i, s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:s, s:s}", "threads",
				      v->threads, "a", p->variants[v->a].name, "b", p->variants[v->b].name,
				      "ratio", v->ratio, "ci_lo", v->ci_lo, "ci_hi", v->ci_hi, "p", v->p,
				      "cpu_share", v->cpu_share, "spread_a", v->spread_a, "spread_b", v->spread_b,
				      "ceiling", v->ceiling, "outcome", v->outcome, "line", v->line);
		json_object_set_new(o, "p_holm", json_real(v->wall.p_holm));
		json_object_set_new(o, "cpu", json_pack("{s:b, s:f, s:f, s:f, s:f, s:f, s:s, s:s}", "valid", v->cpu.valid,
							"ratio", v->cpu.ratio, "ci_lo", v->cpu.ci_lo, "ci_hi", v->cpu.ci_hi,
							"p", v->cpu.p, "p_holm", v->cpu.p_holm, "outcome", v->cpu.outcome,
							"line", v->cpu.line));
		json_array_append_new(verd, o);
	}
	json_object_set_new(root, "tool", json_string("bga-lab"));
	json_object_set_new(root, "command", json_string(p->command));
	json_object_set_new(root, "api", json_string(p->api));
	json_object_set_new(root, "started", json_string(r->started));
	json_object_set_new(root, "cpus_allowed", json_integer(r->ncpus));
	json_object_set_new(root, "loadavg_end", json_string(la));
	json_object_set_new(root, "thresholds",
			    json_pack("{s:f, s:f, s:f, s:f, s:f, s:i, s:s}", "cpu_share_min", p->th.share_min, "spread_max",
				      p->th.spread_max, "ceiling_min", p->th.ceiling_min, "alpha", p->th.alpha, "same_margin",
				      p->th.same_margin, "min_reps", LAB_MIN_REPS, "correction", "holm"));
	json_object_set_new(root, "params", params);
	json_object_set_new(root, "cells", cells);
	json_object_set_new(root, "ceilings", ceil);
	json_object_set_new(root, "verdicts", verd);
	json_object_set_new(root, "checks_failed", json_boolean(r->failed));
	int rc = strcmp(path, "-") ? json_dump_file(root, path, JSON_INDENT(1))
				   : json_dumpf(root, stdout, JSON_INDENT(1)) || fputc('\n', stdout) == EOF || fflush(stdout);
	if (rc)
		fprintf(stderr, "bga-lab: could not write %s\n", path);
	json_decref(root);
	return rc ? -1 : 0;
}

/*
 * Median ops/s against threads per variant (bars: min..max), and the
 * ceiling line: the fastest variant's 1-thread median times C at each
 * thread count (C = 1 at one thread).  The key sits outside, right of the
 * plotted area, so no line runs under it.
 */
int lab_write_png(const struct lab_params *p, const struct lab_result *r, const char *dir, const char *stem)
{
	char dat[600], gp[600], png[600], cmd[700];
	double x[LAB_MAX_REPS];
	unsigned nv = p->nvariants;

	if (access("/usr/bin/gnuplot", X_OK) != 0 && system("command -v gnuplot >/dev/null 2>&1") != 0) {
		fprintf(stderr, "bga-lab: gnuplot not found (Debian: gnuplot-nox): no PNG\n");
		return -1;
	}
	snprintf(dat, sizeof(dat), "%s/%s.dat", dir, stem);
	snprintf(gp, sizeof(gp), "%s/%s.gp", dir, stem);
	snprintf(png, sizeof(png), "%s/%s.png", dir, stem);
	FILE *f = fopen(dat, "w");
	if (!f)
		return -1;
	/* one block per variant: threads median min max; then the ceiling */
	double best1 = 0;
	int one = -1;
	for (unsigned t = 0; t < p->nthreads; t++)
		if (p->threads[t] == 1)
			one = (int)t;
	for (unsigned vi = 0; vi < nv; vi++) {
		fprintf(f, "# %s\n", p->variants[vi].name);
		for (unsigned t = 0; t < p->nthreads; t++) {
			const struct lab_cell *c = &r->cells[t * nv + vi];
			cell_column(c, p->reps, 0, x);
			double m = lab_median(x, p->reps) / 1e6;
			fprintf(f, "%u %g %g %g\n", c->threads, m, lab_quantile(x, p->reps, 0) / 1e6,
				lab_quantile(x, p->reps, 1) / 1e6);
			if ((int)t == one && m > best1)
				best1 = m;
		}
		fprintf(f, "\n\n");
	}
	bool ceiling = one >= 0 && best1 > 0;
	if (ceiling) {
		fprintf(f, "# ceiling\n");
		for (unsigned t = 0; t < p->nthreads; t++) {
			const struct lab_ceiling *cl = &r->ceilings[t];
			if (p->threads[t] == 1)
				fprintf(f, "1 %g\n", best1);
			else if (cl->n)
				fprintf(f, "%u %g\n", p->threads[t], best1 * cl->value);
		}
		fprintf(f, "\n\n");
	}
	fclose(f);
	f = fopen(gp, "w");
	if (!f)
		return -1;
	unsigned tmax = 1;
	for (unsigned t = 0; t < p->nthreads; t++)
		if (p->threads[t] > tmax)
			tmax = p->threads[t];
	fprintf(f, "# made by bga-lab; run with gnuplot to redo the PNG\n");
	fprintf(f, "set terminal pngcairo size 1000,560 font 'DejaVu Sans,11' noenhanced\n");
	fprintf(f, "set output '%s'\n", png);
	fprintf(f, "set title 'bga-lab %s: %s (%s)'\n", p->command,
		!strcmp(p->command, "counter") ? (p->limited ? "add_limited" : "add") : "lock, unlock", r->started);
	fprintf(f, "set key outside right top vertical Left reverse box\n");
	fprintf(f, "set logscale x 2\nset xrange [0.8:%g]\nset yrange [0:*]\nset grid\n", tmax * 1.25);
	fprintf(f, "set xtics (");
	for (unsigned t = 0; t < p->nthreads; t++)
		fprintf(f, "%s\"%u\" %u", t ? ", " : "", p->threads[t], p->threads[t]);
	fprintf(f, ")\nset xlabel 'threads'\nset ylabel 'Mops/s (median; bars: min..max)'\n");
	fprintf(f, "plot ");
	for (unsigned vi = 0; vi < nv; vi++)
		fprintf(f, "%s'%s' index %u using 1:2:3:4 with yerrorlines lw 2 title '%s (%s)'", vi ? ", \\\n     " : "", dat,
			vi, p->variants[vi].name, p->variants[vi].where);
	if (ceiling)
		fprintf(f, ", \\\n     '%s' index %u using 1:2 with lines dt 2 lw 2 lc 'gray30' title 'ceiling: best 1-thread x C'",
			dat, nv);
	fprintf(f, "\nunset output\n");
	fclose(f);
	snprintf(cmd, sizeof(cmd), "gnuplot '%s' 2>&1", gp);
	int rc = system(cmd);
	if (rc != 0) {
		fprintf(stderr, "bga-lab: gnuplot failed on %s\n", gp);
		return -1;
	}
	return 0;
}
