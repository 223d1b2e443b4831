/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-replay run's reports: per trace, the allocators' table, the free
 * extents at the end by length, the moment the volume first fills to a
 * given percent; over every trace run, the histories side by side; and
 * the files of --out (replay.json, the score plot).
 */
#define _GNU_SOURCE
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <bgalloc.h>

extern char **environ;

double mean_score(const struct result *r)
{
	double sum = 0;
	for (size_t i = 0; i < r->nsamples; i++)
		sum += r->samples[i].score_bga;
	return r->nsamples ? sum / (double)r->nsamples : 0;
}

static json_t *map_json(const struct freemap *m, uint64_t whole)
{
	char hash[17];
	snprintf(hash, sizeof(hash), "%016" PRIx64, m->hash);
	json_t *hist = json_array();
	for (int o = 0; o < 64; o++)
		if (m->hist_count[o])
			json_array_append_new(hist, json_pack("{s:I,s:I,s:I}", "from", (json_int_t)(UINT64_C(1) << o),
			                                      "extents", (json_int_t)m->hist_count[o], "blocks",
			                                      (json_int_t)m->hist_blocks[o]));
	return json_pack("{s:I,s:I,s:I,s:I,s:f,s:f,s:s,s:o}", "free_blocks", (json_int_t)m->free_blocks, "free_extents",
	                 (json_int_t)m->free_extents, "longest_run", (json_int_t)m->longest, "largest_whole_request",
	                 (json_int_t)whole, "score", m->score_bga, "ceph_score", m->score_ceph, "hash", hash,
	                 "histogram", hist);
}

static json_t *result_json(const struct result *r)
{
	json_t *s = json_array(), *errs = json_object();
	for (size_t i = 0; i < r->nsamples; i++)
		json_array_append_new(s, json_pack("{s:I,s:I,s:f,s:f}", "record", (json_int_t)r->samples[i].rec, "free_blocks",
		                                   (json_int_t)r->samples[i].free_blocks, "score", r->samples[i].score_bga,
		                                   "ceph_score", r->samples[i].score_ceph));
	for (int i = 0; i < 8 && r->errs[i].n; i++)
		json_object_set_new(errs, bga_strerror(r->errs[i].err), json_integer((json_int_t)r->errs[i].n));
	json_t *j = json_pack("{s:s,s:I,s:f,s:f,s:I,s:f,s:f,s:I,s:f,s:I,s:I,s:I,s:I,s:o,s:f,s:o,s:o}", "allocator",
	                      r->label, "calls", (json_int_t)r->calls, "seconds_in_calls", (double)r->ns / 1e9,
	                      "calls_per_second", r->rate, "files", (json_int_t)r->files, "extents_per_file",
	                      per(r->file_extents, r->files), "logical_extents_per_file", per(r->file_lextents, r->files),
	                      "objects", (json_int_t)r->objects, "extents_per_object",
	                      per(r->object_extents, r->objects), "failures", (json_int_t)r->failures, "partial",
	                      (json_int_t)r->partial, "short_blocks", (json_int_t)r->short_blocks, "extra_blocks",
	                      (json_int_t)r->extra_blocks, "errors", errs, "mean_score", mean_score(r), "end",
	                      map_json(&r->end, r->end_whole), "samples", s);
	if (r->have_full)
		json_object_set_new(j, "full", map_json(&r->full.map, r->full.whole));
	if (r->verify_end >= 0)
		json_object_set_new(j, "verify", json_pack("{s:I,s:b}", "mismatches", (json_int_t)r->mismatches,
		                                           "end_matches_recording", r->verify_end));
	return j;
}

/* The free extents at the end by length, each allocator a column. */
static void histogram(const struct history *h)
{
	int lo = 64, hi = -1;
	for (int a = 0; a < h->n; a++)
		for (int o = 0; o < 64; o++)
			if (h->res[a].end.hist_count[o]) {
				lo = o < lo ? o : lo;
				hi = o > hi ? o : hi;
			}
	if (hi < 0)
		return;
	printf("free extents at the end by length in blocks (extents, %% of the free blocks):\n%-16s", "length");
	for (int a = 0; a < h->n; a++)
		printf(" %26.26s", h->res[a].label);
	putchar('\n');
	for (int o = lo; o <= hi; o++) {
		char range[48];
		snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64, UINT64_C(1) << o, (UINT64_C(2) << o) - 1);
		printf("%-16s", range);
		for (int a = 0; a < h->n; a++) {
			const struct freemap *m = &h->res[a].end;
			printf(" %17" PRIu64 " (%5.1f%%)", m->hist_count[o],
			       m->free_blocks ? 100.0 * (double)m->hist_blocks[o] / (double)m->free_blocks : 0);
		}
		putchar('\n');
	}
}

static void fill_moment(const struct history *h)
{
	const struct trace_fill *f = &h->fill;
	if (f->first_at == SIZE_MAX) {
		printf("never %u%% full: at most %" PRIu64 " of %" PRIu64 " blocks in use (%.1f%%), after record %zu\n",
		       h->full_pct, f->peak, f->capacity, 100.0 * per(f->peak, f->capacity), f->peak_at + 1);
		return;
	}
	printf("%u%% full first after record %zu of %zu (seq %" PRIu64 "):\n", h->full_pct, f->first_at + 1, h->t->nrec,
	       h->t->rec[f->first_at].seq);
	printf("%-26s %9s %8s %8s %12s %14s\n", "allocator", "free", "score", "ceph", "free extents", "largest whole");
	for (int a = 0; a < h->n; a++) {
		const struct result *r = &h->res[a];
		if (r->have_full)
			printf("%-26s %9" PRIu64 " %8.4f %8.4f %12" PRIu64 " %14" PRIu64 "\n", r->label, r->full.map.free_blocks,
			       r->full.map.score_bga, r->full.map.score_ceph, r->full.map.free_extents, r->full.whole);
	}
}

int report_trace(const struct history *h, int verify)
{
	int rc = 0;
	printf("%-26s %8s %10s %6s %8s %7s %7s %8s %8s %8s %8s %9s\n", "allocator", "calls", "calls/s", "files",
	       "ext/file", "objects", "ext/obj", "failures", "score", "ceph", "mean", "free");
	for (int a = 0; a < h->n; a++) {
		const struct result *r = &h->res[a];
		printf("%-26s %8" PRIu64 " %10.0f %6" PRIu64 " %8.2f %7" PRIu64 " %7.2f %8" PRIu64 " %8.4f %8.4f %8.4f %9" PRIu64
		       "\n",
		       r->label, r->calls, r->rate, r->files, per(r->file_extents, r->files), r->objects,
		       per(r->object_extents, r->objects), r->failures, r->end.score_bga, r->end.score_ceph, mean_score(r),
		       r->end.free_blocks);
	}
	printf("(calls/s: time inside the allocator's calls, median of %u; score, ceph: bgalloc's and Ceph's\n"
	       " fragmentation scores at the end; mean: bgalloc's over the samples)\n",
	       h->reps);
	/* the files' extents as their own maps hold them (run.c, logical_runs):
	 * ext/file counts a file whose blocks are one run in a scrambled
	 * order as one extent */
	for (int a = 0; a < h->n; a++)
		if (h->res[a].files)
			printf("%s%s %.2f%s", a ? ", " : "logical ext/file (runs in the files' own order): ", h->res[a].label,
			       per(h->res[a].file_lextents, h->res[a].files), a + 1 == h->n ? "\n" : "");
	for (int a = 0; a < h->n; a++) {
		const struct result *r = &h->res[a];
		if (r->failures || r->partial) {
			printf("%s: %" PRIu64 " failed, %" PRIu64 " partial, %" PRIu64 " recorded blocks not had%s", r->label,
			       r->failures, r->partial, r->short_blocks, r->errs[0].n ? ":" : "");
			for (int i = 0; i < 8 && r->errs[i].n; i++)
				printf(" %s x%" PRIu64, bga_strerror(r->errs[i].err), r->errs[i].n);
			putchar('\n');
		}
		/* the replay's own checks: a free, commit or claim the allocator
		 * refused, or an extent it got wrong (a reference allocator's
		 * -EIO), fails the run */
		uint64_t eio = 0;
		for (int i = 0; i < 8 && r->errs[i].n; i++)
			eio += r->errs[i].err == -EIO ? r->errs[i].n : 0;
		if (r->free_errors || eio) {
			printf("%s: %" PRIu64 " frees or commits refused, %" PRIu64
			       " allocations that broke their promise: the replay and the allocator disagree\n",
			       r->label, r->free_errors, eio);
			rc = 1;
		}
		if (r->verify_end >= 0 || verify) {
			printf("verify: %" PRIu64 " records applied, %" PRIu64 " did not apply; end %s\n", r->replayed,
			       r->mismatches,
			       r->verify_end < 0 ? "unknown (the trace has no end record)"
			       : r->verify_end   ? "matches the recording's free map"
			                         : "differs from the recording's free map");
			if (r->mismatches || r->verify_end == 0)
				rc = 1;
		}
	}
	if (!verify) {
		printf("at the end: free extents, longest free run and the largest request placed whole (blocks):\n");
		for (int a = 0; a < h->n; a++)
			printf("%-26s %12" PRIu64 " %9" PRIu64 " %9" PRIu64 "\n", h->res[a].label, h->res[a].end.free_extents,
			       h->res[a].end.longest, h->res[a].end_whole);
		histogram(h);
		fill_moment(h);
	}
	return rc;
}

void report_histories(FILE *f, const struct history *h, size_t n, int md)
{
	static const char *const head[] = {"history", "allocator", "ext/file", "end score", "mean score",
	                                   "short (blocks)", "free ext", "whole", "full: score", "full: whole"};
	const char *fmt = md ? "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n"
	                     : "%-24.24s %-22.22s %8s %9s %10s %16s %9s %7s %11s %11s\n";
	fprintf(f, fmt, head[0], head[1], head[2], head[3], head[4], head[5], head[6], head[7], head[8], head[9]);
	if (md)
		fputs("|---|---|---|---|---|---|---|---|---|---|\n", f);
	for (size_t i = 0; i < n; i++)
		for (int a = 0; a < h[i].n; a++) {
			const struct result *r = &h[i].res[a];
			char c[8][40];
			if (r->files)
				snprintf(c[0], sizeof(c[0]), "%.2f", per(r->file_extents, r->files));
			else
				snprintf(c[0], sizeof(c[0]), "%.2f/obj", per(r->object_extents, r->objects));
			snprintf(c[1], sizeof(c[1]), "%.4f", r->end.score_bga);
			snprintf(c[2], sizeof(c[2]), "%.4f", mean_score(r));
			snprintf(c[3], sizeof(c[3]), "%" PRIu64 " (%" PRIu64 ")", r->failures + r->partial, r->short_blocks);
			snprintf(c[4], sizeof(c[4]), "%" PRIu64, r->end.free_extents);
			snprintf(c[5], sizeof(c[5]), "%" PRIu64, r->end_whole);
			snprintf(c[6], sizeof(c[6]), r->have_full ? "%.4f" : "-", r->full.map.score_bga);
			snprintf(c[7], sizeof(c[7]), r->have_full ? "%" PRIu64 : "-", r->full.whole);
			fprintf(f, fmt, a ? "" : h[i].name, r->label, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]);
		}
	if (!md)
		fprintf(f, "(ext/file: extents per file, or per object where no file allocated; short: requests\n"
		           " placed short or failed, and the recorded blocks not had; free ext: free extents at the\n"
		           " end; whole: the largest request placed whole at the end, in blocks; full: at the\n"
		           " moment the volume first fills to the percent --full gives)\n");
}

/* gnuplot, when installed, draws DIR/score.png from DIR/score.dat. */
static void plot(const char *dir, const struct history *h)
{
	char dat[4096], gp[4096], png[4096];
	snprintf(dat, sizeof(dat), "%s/score.dat", dir);
	snprintf(gp, sizeof(gp), "%s/score.gp", dir);
	snprintf(png, sizeof(png), "%s/score.png", dir);
	FILE *d = fopen(dat, "w"), *g = fopen(gp, "w");
	if (!d || !g) {
		fprintf(stderr, "bga-replay: %s: %s\n", dir, strerror(errno));
		if (d)
			fclose(d);
		if (g)
			fclose(g);
		return;
	}
	for (int a = 0; a < h->n; a++) {
		fprintf(d, "# %s\n", h->res[a].label);
		for (size_t i = 0; i < h->res[a].nsamples; i++)
			fprintf(d, "%zu %.6f %.6f\n", h->res[a].samples[i].rec, h->res[a].samples[i].score_bga,
			        h->res[a].samples[i].score_ceph);
		fputs("\n\n", d);
	}
	fclose(d);
	fprintf(g,
	        "# made by bga-replay run; run gnuplot on it to redo the PNG\n"
	        "set terminal pngcairo size 1000,600 font 'DejaVu Sans,11' noenhanced\n"
	        "set output '%s'\nset title 'fragmentation over the trace %s (%zu records, %" PRIu64 " blocks)'\n"
	        "set xlabel 'records replayed'\nset ylabel 'score (0: free space in the longest runs, 1: all single blocks)'\n"
	        "set key outside right top\nset grid\n",
	        png, h->name, h->t->nrec, h->t->h.nblocks);
	if (h->fill.first_at != SIZE_MAX)
		fprintf(g, "set arrow from %zu, graph 0 to %zu, graph 1 nohead dt 3 lc rgb 'gray40'\n"
		           "set label '%u%% full' at %zu, graph 0.95 offset 0.5,0 tc rgb 'gray40'\n",
		        h->fill.first_at + 1, h->fill.first_at + 1, h->full_pct, h->fill.first_at + 1);
	fputs("plot ", g);
	for (int a = 0; a < h->n; a++)
		fprintf(g,
		        "%s'%s' index %d using 1:2 with lines lw 2 lc %d title '%s: bgalloc score', '%s' index %d using 1:3 "
		        "with lines dt 2 lc %d title '%s: ceph score'",
		        a ? ", \\\n     " : "", dat, a, a + 1, h->res[a].label, dat, a, a + 1, h->res[a].label);
	fputc('\n', g);
	fclose(g);
	pid_t pid;
	char *argv[] = {"gnuplot", gp, NULL};
	if (posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ)) {
		fprintf(stderr, "bga-replay: gnuplot not found (Debian: gnuplot-nox): %s written, no PNG\n", gp);
		return;
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fprintf(stderr, "bga-replay: gnuplot %s failed\n", gp);
	else
		printf("plot: %s\n", png);
}

int report_files(const char *dir, const struct history *h, int cpu)
{
	json_t *j = json_pack("{s:s,s:I,s:I,s:i,s:I,s:I,s:i,s:o}", "trace", h->name, "records", (json_int_t)h->t->nrec,
	                      "nblocks", (json_int_t)h->t->h.nblocks, "cpu", cpu, "capacity",
	                      (json_int_t)h->fill.capacity, "peak_used", (json_int_t)h->fill.peak, "full_percent",
	                      (int)h->full_pct, "allocators", json_array());
	if (h->fill.first_at != SIZE_MAX)
		json_object_set_new(j, "full_after_record", json_integer((json_int_t)h->fill.first_at + 1));
	for (int a = 0; a < h->n; a++)
		json_array_append_new(json_object_get(j, "allocators"), result_json(&h->res[a]));
	char path[4096];
	snprintf(path, sizeof(path), "%s", dir);
	for (char *sl = strchr(path + 1, '/');; sl = strchr(sl + 1, '/')) { /* mkdir -p */
		if (sl)
			*sl = 0;
		mkdir(path, 0777);
		if (!sl)
			break;
		*sl = '/';
	}
	snprintf(path, sizeof(path), "%s/replay.json", dir);
	int rc = 0;
	if (json_dump_file(j, path, JSON_INDENT(2) | JSON_SORT_KEYS)) {
		fprintf(stderr, "bga-replay: cannot write %s\n", path);
		rc = 2;
	} else {
		printf("json: %s\n", path);
		plot(dir, h);
	}
	json_decref(j);
	return rc;
}

/* One figure of the best-reached table, as the side-by-side table rounds
 * it; every figure but `whole` is better lower. */
static double figure(const struct result *r, int k)
{
	char b[40];
	switch (k) {
	case 0:
		snprintf(b, sizeof(b), "%.2f",
		         r->files ? per(r->file_extents, r->files) : per(r->object_extents, r->objects));
		break;
	case 1: snprintf(b, sizeof(b), "%.4f", r->end.score_bga); break;
	case 2: snprintf(b, sizeof(b), "%.4f", mean_score(r)); break;
	case 3: return (double)(r->failures + r->partial);
	default: return -(double)r->end_whole;
	}
	return strtod(b, NULL);
}

void report_best(FILE *f, const struct history *h, size_t n, int md)
{
	static const char *const head[] = {"history", "ext/file", "end score", "mean score", "short", "whole"};
	static const char *const fmt[] = {"%.2f", "%.4f", "%.4f", "%.0f", "%.0f"};
	const char *row = md ? "| %s | %s | %s | %s | %s | %s |\n" : "%-24.24s %-22s %-22s %-22s %-22s %s\n";
	fprintf(f, row, head[0], head[1], head[2], head[3], head[4], head[5]);
	if (md)
		fputs("|---|---|---|---|---|---|\n", f);
	for (size_t i = 0; i < n; i++) {
		if (!h[i].n)
			continue;
		char c[5][160];
		for (int k = 0; k < 5; k++) {
			double best = figure(&h[i].res[0], k);
			for (int a = 1; a < h[i].n; a++)
				if (figure(&h[i].res[a], k) < best)
					best = figure(&h[i].res[a], k);
			int len = snprintf(c[k], sizeof(c[k]), fmt[k], k == 4 ? -best : best);
			const char *sep = " (";
			int all = 1;
			for (int a = 0; a < h[i].n; a++)
				all &= figure(&h[i].res[a], k) == best;
			if (all && h[i].n > 1 && len > 0 && (size_t)len < sizeof(c[k]))
				len += snprintf(c[k] + len, sizeof(c[k]) - (size_t)len, " (all");
			for (int a = 0; a < h[i].n && !(all && h[i].n > 1) && len > 0 && (size_t)len < sizeof(c[k]); a++)
				if (figure(&h[i].res[a], k) == best) {
					len += snprintf(c[k] + len, sizeof(c[k]) - (size_t)len, "%s%s", sep, h[i].res[a].label);
					sep = ", ";
				}
			if (len > 0 && (size_t)len < sizeof(c[k]) - 1)
				snprintf(c[k] + len, sizeof(c[k]) - (size_t)len, ")");
		}
		fprintf(f, row, h[i].name, c[0], c[1], c[2], c[3], c[4]);
	}
	if (!md)
		fprintf(f, "(the best figure any allocator reached, and which: ext/file, end score, mean score and\n"
		           " short (requests placed short or failed) lower, whole (blocks) higher)\n");
}
