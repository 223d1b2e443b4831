/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-scale's report: medians and the JSON document (its keys are what
 * bench/report/report.py, compare.sh and the plots read).  Tables, tests and plots
 * are bench/report/report.py's job.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "scale_ctx.h"

/* ---- results -------------------------------------------------------------------- */

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

/* The median of a cell's throughput (share false) or CPU share (true). */
static double cell_median(const struct cellres *cr, bool share)
{
	double v[MAX_REPS];

	for (int k = 0; k < cr->nreps; k++)
		v[k] = share ? cr->r[k].cpu_share : cr->r[k].ops_per_s;
	return median_of(v, cr->nreps);
}

/* A cell's ratio to its workload's baseline at the same thread count. */
struct ratio {
	bool have;    /* false: the cell is the baseline, or its baseline did not run */
	double ratio; /* median ops/s over the baseline's */
	double share; /* the lower of the two cells' median CPU shares */
	bool decided; /* 1 thread, or share >= CPU_SHARE_MIN */
};

static struct ratio ratio_of(const struct cellres *cells, int ncells, const struct cellres *cr)
{
	struct ratio q = {0};
	enum variant base = workloads[cr->w].baseline;

	if (cr->v == base)
		return q;
	for (int i = 0; i < ncells; i++) {
		const struct cellres *b = &cells[i];
		double mb, sa, sb;

		if (b->w != cr->w || b->v != base || b->nthreads != cr->nthreads || !b->nreps || !cr->nreps)
			continue;
		mb = cell_median(b, false);
		sa = cell_median(cr, true);
		sb = cell_median(b, true);
		q.have = mb > 0;
		q.ratio = q.have ? cell_median(cr, false) / mb : 0;
		q.share = sa < sb ? sa : sb;
		q.decided = cr->nthreads < 2 || q.share >= CPU_SHARE_MIN;
		break;
	}
	return q;
}

void write_text(FILE *f, const struct cellres *cells, int ncells)
{
	fprintf(f, "bga-scale: medians per cell; a ratio is the variant over its workload's baseline at the same "
		   "threads, called at 2+ threads only with CPU share >= %.2f\n", CPU_SHARE_MIN);
	for (int i = 0; i < ncells; i++) {
		const struct cellres *cr = &cells[i];
		struct ratio q = ratio_of(cells, ncells, cr);

		if (!cr->nreps)
			continue;
		fprintf(f, "%-16s %3d threads  %-13s %10.4g ops/s  cpu share %.2f", workloads[cr->w].name,
			cr->nthreads, variant_name[cr->v], cell_median(cr, false), cell_median(cr, true));
		if (q.have && q.decided)
			fprintf(f, "  %.2fx %s", q.ratio, variant_name[workloads[cr->w].baseline]);
		else if (q.have)
			fprintf(f, "  %.2fx %s: cannot decide (cpu share %.2f < %.2f: the threads did not get the CPUs)",
				q.ratio, variant_name[workloads[cr->w].baseline], q.share, CPU_SHARE_MIN);
		fputc('\n', f);
	}
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

int write_json(const char *path, struct cellres *cells, int ncells, double started, double wall)
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
		sysconf(_SC_NPROCESSORS_ONLN), sysconf(_SC_NPROCESSORS_CONF), scale.xfer_ns[0], scale.xfer_ns[1]);
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
	json_str(f, cpu_source());
	fprintf(f, "},\n  \"meta\": {");
	for (int i = 0; i < scale.opt.nmeta; i++) {
		const char *eq = strchr(scale.opt.meta[i], '=');
		char key[128];

		snprintf(key, sizeof(key), "%.*s", (int)(eq - scale.opt.meta[i]), scale.opt.meta[i]);
		fprintf(f, "%s", i ? ", " : "");
		json_str(f, key);
		fprintf(f, ": ");
		json_str(f, eq + 1);
	}
	fprintf(f, "},\n  \"config\": {\"duration_s\": %g, \"reps\": %d, \"threads\": [", scale.opt.duration, scale.opt.reps);
	for (int i = 0; i < scale.opt.nthreads; i++)
		fprintf(f, "%s%d", i ? ", " : "", scale.opt.threads[i]);
	fprintf(f, "], \"volume_blocks\": %llu, \"blocks_per_group\": 32768, \"working_set\": %u, "
		   "\"file_blocks\": %u, \"writer_files\": %d, \"append_files\": %d, \"append_blocks\": %llu, "
		   "\"script_files\": %d, \"commit_every\": %u, "
		   "\"batch\": %d, \"counter_batch\": %d, \"seed\": %llu, \"peer_image_blocks\": %llu, "
		   "\"peer_append_image_blocks\": %llu, \"scale.peer_rebuilds\": %d, \"interleaved_reps\": true, "
		   "\"timer_policy\": \"%s\", \"pinning\": \"%s\", \"cpus_allowed\": %d, \"cpu_share_min\": %.2f, "
		   "\"cpu_share_of\": \"cpu / (wall x min(threads, CPUs))\"},\n",
		(unsigned long long)scale.opt.nblocks, scale.opt.working_set, scale.opt.file_blocks, WRITER_FILES, APPEND_FILES,
		(unsigned long long)scale.opt.app_blocks, SCRIPT_FILES,
		scale.opt.commit_every, BATCH, COUNTER_BATCH, (unsigned long long)scale.opt.seed,
		(unsigned long long)(scale.peers[0] ? peer_ext2_nblocks(scale.peers[0]) : 0),
		(unsigned long long)(scale.peers[1] ? peer_ext2_nblocks(scale.peers[1]) : 0), scale.peer_rebuilds,
		scale.timer_policy_fifo ? "SCHED_FIFO" : "SCHED_OTHER",
		scale.opt.no_pin || !scale.ncpus_allowed ? "none" : "round-robin", scale.ncpus_allowed, CPU_SHARE_MIN);
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

		if (!scale.opt.wl_on[w])
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
			if (!scale.opt.var_on[wl->variants[i]])
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
			fprintf(f, "\"median_cpu_share\": %.4g, ", cell_median(cr, true));
			{
				struct ratio q = ratio_of(cells, ncells, cr);

				if (q.have)
					fprintf(f, "\"ratio_to_baseline\": %.4g, \"ratio_cpu_share\": %.4g, "
						   "\"ratio_verdict\": \"%s\", ",
						q.ratio, q.share, q.decided ? "decided" : "cannot decide");
			}
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
			if (wl_files((enum wl_id)w) && (cr->v == V_BGA || cr->v == V_BASE)) {
				fprintf(f, ", \"rsv_hit_pct\": ");
				json_doubles(f, cr, 6);
			}
			fprintf(f, ", \"errors\": %llu", (unsigned long long)errors);
			if (wl_files((enum wl_id)w)) {
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
