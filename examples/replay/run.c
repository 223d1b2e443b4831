/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-replay run: a trace played against allocators, one after another,
 * on one thread pinned to one CPU (so that a goal-less request's home,
 * chosen by CPU, is the same every time).
 *
 * Replay: each call the recording made and that succeeded is made again
 * with the same arguments.  The blocks it gets differ from the recorded
 * ones, so a map from each recorded block to the block the replay got in
 * its place (8 bytes a block of the trace's volume) turns later frees of
 * recorded blocks into frees of the replay's; a goal is moved the same
 * way (the block after the replay's copy of goal - 1, as a file's next
 * write aims past its last block).  Blocks the replay got beyond what the
 * recording got are freed at once, and recorded blocks it could not get
 * are counted as a shortfall and never freed.
 *
 * --verify: the recorded results, applied (each extent an allocation
 * returned claimed with bga_claim, each free freed): the end must be the
 * free map the recording ended with.
 */
#define _GNU_SOURCE
#include "replay.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "backend.h"
#include "freemap.h"
#include "trace.h"

extern char **environ;

#define NONE UINT64_MAX
#define MAX_OUT 65536

struct sample {
	size_t rec;
	uint64_t free_blocks;
	double score_bga, score_ceph;
};

struct file {
	struct bga_rsv *rsv;
	struct bga_extent *ext;
	size_t n, cap;
	int open;
};

struct errcount {
	int err;
	uint64_t n;
};

struct result {
	char label[96];
	uint64_t calls, ns, replayed, recorded_failures;
	uint64_t failures, partial, short_blocks, extra_blocks, free_errors;
	struct errcount errs[8];
	uint64_t files, file_extents, objects, object_extents;
	struct sample *samples;
	size_t nsamples;
	struct freemap end;
	double rate;         /* calls a second, the median over the repetitions */
	uint64_t mismatches; /* --verify: recorded results that did not apply */
	int verify_end;      /* --verify: 1 the end hash matched the recording's, 0 not, -1 no end record */
};

struct ctx {
	const struct trace *t;
	struct backend *be;
	struct result *res;
	uint64_t *map, unit;
	struct file *files;
	size_t nfiles;
	struct bga_extent *out, *runs;
	size_t nruns, cruns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void count_err(struct result *r, int err)
{
	r->failures++;
	for (int i = 0; i < 8; i++)
		if (r->errs[i].err == err || !r->errs[i].n) {
			r->errs[i].err = err;
			r->errs[i].n++;
			return;
		}
}

static int by_start(const void *a, const void *b)
{
	const struct bga_extent *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Runs of ext[0..n) once sorted and merged. */
static size_t merged(struct bga_extent *ext, size_t n)
{
	if (!n)
		return 0;
	qsort(ext, n, sizeof(*ext), by_start);
	size_t k = 1;
	for (size_t i = 1; i < n; i++)
		if (ext[i].start != ext[i - 1].start + ext[i - 1].len)
			k++;
	return k;
}

static struct file *file_of(struct ctx *c, uint64_t id)
{
	if (!id)
		return NULL;
	if (id >= c->nfiles) {
		size_t nn = c->nfiles ? c->nfiles : 64;
		while (nn <= id)
			nn *= 2;
		struct file *nf = realloc(c->files, nn * sizeof(*nf));
		if (!nf)
			return NULL;
		memset(nf + c->nfiles, 0, (nn - c->nfiles) * sizeof(*nf));
		c->files = nf;
		c->nfiles = nn;
	}
	return &c->files[id];
}

static void file_done(struct ctx *c, struct file *f)
{
	if (f->n) {
		c->res->files++;
		c->res->file_extents += merged(f->ext, f->n);
	}
	free(f->ext);
	memset(f, 0, sizeof(*f));
}

static int add_run(struct ctx *c, uint64_t start, uint64_t len)
{
	if (c->nruns && c->runs[c->nruns - 1].start + c->runs[c->nruns - 1].len == start) {
		c->runs[c->nruns - 1].len += len;
		return 0;
	}
	if (c->nruns == c->cruns) {
		struct bga_extent *nr = realloc(c->runs, (c->cruns = c->cruns ? 2 * c->cruns : 256) * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		c->runs = nr;
	}
	c->runs[c->nruns++] = (struct bga_extent){start, len};
	return 0;
}

/* The replay's blocks for recorded [start, start + len), as runs, unmapped. */
static void take_runs(struct ctx *c, uint64_t start, uint64_t len)
{
	uint64_t end = start + len > c->t->h.nblocks ? c->t->h.nblocks : start + len;
	for (uint64_t b = start; b < end; b++) {
		if (c->map[b] == NONE) {
			c->res->short_blocks++;
			continue;
		}
		add_run(c, c->map[b], 1);
		c->map[b] = NONE;
	}
}

static uint64_t goal_of(struct ctx *c, uint64_t goal)
{
	if (goal == BGA_NO_GOAL || goal >= c->t->h.nblocks)
		return goal;
	if (goal && c->map[goal - 1] != NONE)
		return c->map[goal - 1] + 1;
	return c->map[goal] != NONE ? c->map[goal] : goal;
}

static int timed(struct ctx *c, int rc, uint64_t t0)
{
	c->res->ns += now_ns() - t0;
	c->res->calls++;
	return rc;
}

static void replay_alloc(struct ctx *c, const struct trace_rec *r)
{
	const struct bga_extent *rec = trace_ext(c->t, r);
	struct file *f = file_of(c, r->args[0]);
	struct bga_request req = {.goal = goal_of(c, r->args[1]), .min_len = r->args[2], .max_len = r->args[3],
	                          .flags = (uint32_t)r->args[4], .align = r->args[5]};
	uint64_t want = r->op == BGT_ALLOC_VEC ? r->args[6] : 0;
	size_t max_out = r->op == BGT_ALLOC_VEC ? (r->args[7] < MAX_OUT ? r->args[7] : MAX_OUT) : 1, n = 0;
	uint64_t t0 = now_ns();
	int rc = timed(c, backend_alloc(c->be, f ? f->rsv : NULL, &req, want, c->out, max_out, &n), t0);
	uint64_t got = 0, recorded = 0;
	for (uint32_t i = 0; i < r->next; i++)
		recorded += rec[i].len;
	if (rc) {
		count_err(c->res, rc);
		c->res->short_blocks += recorded;
		return;
	}
	/* recorded block k of the call -> the replay's block k */
	uint32_t ri = 0;
	uint64_t roff = 0;
	c->nruns = 0;
	for (size_t i = 0; i < n; i++) {
		got += c->out[i].len;
		for (uint64_t k = 0; k < c->out[i].len; k++) {
			if (ri < r->next && rec[ri].start + roff < c->t->h.nblocks) {
				c->map[rec[ri].start + roff] = c->out[i].start + k;
				if (++roff == rec[ri].len) {
					ri++;
					roff = 0;
				}
			} else {
				add_run(c, c->out[i].start + k, 1);
			}
		}
	}
	if (got < recorded) {
		c->res->partial++;
		c->res->short_blocks += recorded - got;
	}
	if (c->nruns) {
		uint64_t extra = 0;
		for (size_t i = 0; i < c->nruns; i++)
			extra += c->runs[i].len;
		c->res->extra_blocks += extra;
		t0 = now_ns();
		if (timed(c, backend_free(c->be, c->runs, c->nruns), t0))
			c->res->free_errors++;
	}
	if (f) {
		if (f->n + n > f->cap) {
			size_t nc = f->cap ? 2 * f->cap : 16;
			while (nc < f->n + n)
				nc *= 2;
			struct bga_extent *ne = realloc(f->ext, nc * sizeof(*ne));
			if (!ne)
				return;
			f->ext = ne;
			f->cap = nc;
		}
		memcpy(f->ext + f->n, c->out, n * sizeof(*c->out));
		f->n += n;
	} else {
		c->res->objects++;
		c->res->object_extents += merged(c->out, n);
	}
}

static void replay_one(struct ctx *c, const struct trace_rec *r)
{
	const struct bga_extent *e = trace_ext(c->t, r);
	uint64_t t0;
	int rc = 0;
	if (r->rc && r->op != BGT_INIT_FREE && r->op != BGT_END) {
		c->res->recorded_failures++;
		return;
	}
	c->res->replayed++;
	switch (r->op) {
	case BGT_ALLOC:
	case BGT_ALLOC_VEC:
		replay_alloc(c, r);
		return;
	case BGT_FREE:
	case BGT_FREE_VEC:
	case BGT_FREE_DEFERRED:
	case BGT_FREE_DEFERRED_VEC:
		c->nruns = 0;
		if (r->op == BGT_FREE_VEC || r->op == BGT_FREE_DEFERRED_VEC)
			for (uint32_t i = 0; i < r->next; i++)
				take_runs(c, e[i].start, e[i].len);
		else
			take_runs(c, r->args[0], r->args[1]);
		if (!c->nruns)
			return;
		t0 = now_ns();
		if (r->op == BGT_FREE_DEFERRED)
			rc = backend_free_deferred(c->be, c->runs, c->nruns, r->args[2]);
		else if (r->op == BGT_FREE_DEFERRED_VEC)
			rc = backend_free_deferred(c->be, c->runs, c->nruns, r->args[0]);
		else
			rc = backend_free(c->be, c->runs, c->nruns);
		timed(c, rc, t0);
		break;
	case BGT_COMMIT:
		t0 = now_ns();
		rc = timed(c, backend_commit(c->be, r->args[0]), t0);
		break;
	case BGT_CLAIM:
		t0 = now_ns();
		rc = timed(c, backend_claim(c->be, r->args[0], r->args[1]), t0);
		if (rc)
			count_err(c->res, rc);
		else
			for (uint64_t b = r->args[0]; b < r->args[0] + r->args[1] && b < c->t->h.nblocks; b++)
				c->map[b] = b;
		return;
	case BGT_RESERVE:
	case BGT_UNRESERVE:
		t0 = now_ns();
		rc = timed(c, backend_reserve(c->be, r->args[0], r->op == BGT_UNRESERVE), t0);
		if (rc && r->op == BGT_RESERVE) {
			count_err(c->res, rc);
			return;
		}
		break;
	case BGT_RSV_OPEN: {
		struct file *f = file_of(c, r->args[0]);
		if (!f)
			return;
		if (f->open)
			file_done(c, f);
		t0 = now_ns();
		rc = timed(c, backend_rsv_open(c->be, &f->rsv), t0);
		f->open = !rc;
		break;
	}
	case BGT_RSV_CLOSE:
	case BGT_RSV_SET_SIZE: {
		struct file *f = file_of(c, r->args[0]);
		if (!f || !f->open)
			return;
		t0 = now_ns();
		if (r->op == BGT_RSV_CLOSE) {
			backend_rsv_close(c->be, f->rsv);
			timed(c, 0, t0);
			file_done(c, f);
		} else {
			rc = timed(c, backend_rsv_set_size(c->be, f->rsv, (uint32_t)r->args[1]), t0);
		}
		break;
	}
	default:
		return;
	}
	if (rc)
		c->res->free_errors++;
}

/* --verify: the recorded results applied as they are. */
static void verify_one(struct ctx *c, const struct trace_rec *r, struct bga_volume *vol)
{
	const struct bga_extent *e = trace_ext(c->t, r);
	int rc = 0;
	if (r->rc || r->op == BGT_INIT_FREE)
		return;
	c->res->replayed++;
	uint64_t t0 = now_ns();
	switch (r->op) {
	case BGT_ALLOC:
	case BGT_ALLOC_VEC:
		for (uint32_t i = 0; i < r->next && !rc; i++)
			rc = bga_claim(vol, e[i].start, e[i].len);
		break;
	case BGT_FREE: rc = bga_free(vol, r->args[0], r->args[1]); break;
	case BGT_FREE_VEC: rc = r->next ? bga_free_vec(vol, e, r->next) : 0; break;
	case BGT_FREE_DEFERRED: rc = bga_free_deferred(vol, r->args[0], r->args[1], r->args[2]); break;
	case BGT_FREE_DEFERRED_VEC: rc = r->next ? bga_free_deferred_vec(vol, e, r->next, r->args[0]) : 0; break;
	case BGT_COMMIT: rc = bga_commit(vol, r->args[0]); break;
	case BGT_CLAIM: rc = bga_claim(vol, r->args[0], r->args[1]); break;
	case BGT_END: {
		struct freemap m;
		if (!freemap_of_volume(vol, c->unit, 0, &m))
			c->res->verify_end = m.hash == r->args[0];
		return;
	}
	default: return; /* windows and reservations choose no blocks */
	}
	timed(c, rc, t0);
	if (rc && c->res->mismatches++ < 5)
		fprintf(stderr, "bga-replay: --verify: seq %" PRIu64 " %s did not apply: %s\n", r->seq, bgt_op_name(r->op),
		        bga_strerror(rc));
}

static void sample(struct ctx *c, size_t i)
{
	struct result *res = c->res;
	struct freemap m;
	if (backend_freemap(c->be, c->unit, &m))
		return;
	res->samples[res->nsamples++] = (struct sample){i, m.free_blocks, m.score_bga, m.score_ceph};
}

/* The trace's starting free extents (its init_free records). */
static struct bga_extent *start_map(const struct trace *t, size_t *n)
{
	size_t k = 0;
	for (size_t i = 0; i < t->nrec; i++)
		if (t->rec[i].op == BGT_INIT_FREE)
			k += t->rec[i].next;
	struct bga_extent *e = malloc((k ? k : 1) * sizeof(*e));
	if (!e)
		return NULL;
	k = 0;
	for (size_t i = 0; i < t->nrec; i++)
		if (t->rec[i].op == BGT_INIT_FREE) {
			memcpy(e + k, trace_ext(t, &t->rec[i]), t->rec[i].next * sizeof(*e));
			k += t->rec[i].next;
		}
	qsort(e, k, sizeof(*e), by_start);
	*n = k;
	return e;
}

static int run_one(const struct run_opts *o, const struct trace *t, const char *spec, struct result *res)
{
	size_t ninit;
	struct bga_extent *init = start_map(t, &ninit);
	struct ctx c = {.t = t, .res = res, .unit = t->h.block_size ? t->h.block_size : 4096};
	int rc = -1;
	unsigned samples = o->samples ? o->samples : 100;
	size_t step = t->nrec / samples ? t->nrec / samples : 1;
	snprintf(res->label, sizeof(res->label), "%s%s", spec, o->verify ? " --verify" : "");
	res->verify_end = -1;
	if (!init || !(res->samples = calloc(t->nrec / step + 2, sizeof(*res->samples))) ||
	    !(c.out = malloc(MAX_OUT * sizeof(*c.out))) || !(c.map = malloc(t->h.nblocks * sizeof(*c.map)))) {
		fprintf(stderr, "bga-replay: out of memory (the block map needs 8 bytes a block)\n");
		goto out;
	}
	/* blocks in use when the recording began are the embedder's, at the
	 * same place in every allocator: frees of them free them there */
	for (uint64_t b = 0; b < t->h.nblocks; b++)
		c.map[b] = b;
	for (size_t i = 0; i < ninit; i++)
		for (uint64_t b = init[i].start; b < init[i].start + init[i].len && b < t->h.nblocks; b++)
			c.map[b] = NONE;
	if (backend_open(o->verify ? "bgalloc" : spec, t->h.nblocks, t->h.blocks_per_group ? t->h.blocks_per_group : 32768,
	                 t->h.first_data_block, init, ninit, &c.be))
		goto out;
	struct bga_volume *vol = o->verify ? backend_volume(c.be) : NULL;
	sample(&c, 0);
	for (size_t i = 0; i < t->nrec; i++) {
		if (o->verify)
			verify_one(&c, &t->rec[i], vol);
		else
			replay_one(&c, &t->rec[i]);
		if ((i + 1) % step == 0 || i + 1 == t->nrec)
			sample(&c, i + 1);
	}
	for (size_t i = 0; i < c.nfiles; i++)
		if (c.files[i].open) {
			backend_rsv_close(c.be, c.files[i].rsv);
			file_done(&c, &c.files[i]);
		}
	rc = backend_freemap(c.be, c.unit, &res->end);
out:
	backend_close(c.be);
	free(c.files);
	free(c.runs);
	free(c.map);
	free(c.out);
	free(init);
	return rc;
}

/* One CPU, the same every run where it is allowed: CPU 0, else the first
 * the process may use. */
static int pin(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set)) {
			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			return sched_setaffinity(0, sizeof(set), &set) ? -1 : cpu;
		}
	return -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double per(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0;
}

static double mean_score(const struct result *r)
{
	double sum = 0;
	for (size_t i = 0; i < r->nsamples; i++)
		sum += r->samples[i].score_bga;
	return r->nsamples ? sum / (double)r->nsamples : 0;
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
	char hash[17];
	snprintf(hash, sizeof(hash), "%016" PRIx64, r->end.hash);
	json_t *j = json_pack("{s:s,s:I,s:f,s:f,s:I,s:f,s:I,s:f,s:I,s:I,s:I,s:I,s:o,s:f,s:{s:I,s:I,s:I,s:f,s:f,s:s},s:o}",
	                      "allocator", r->label, "calls", (json_int_t)r->calls, "seconds_in_calls", (double)r->ns / 1e9,
	                      "calls_per_second", r->rate, "files",
	                      (json_int_t)r->files, "extents_per_file", per(r->file_extents, r->files), "objects",
	                      (json_int_t)r->objects, "extents_per_object", per(r->object_extents, r->objects),
	                      "failures", (json_int_t)r->failures, "partial", (json_int_t)r->partial, "short_blocks",
	                      (json_int_t)r->short_blocks, "extra_blocks", (json_int_t)r->extra_blocks, "errors", errs,
	                      "mean_score", mean_score(r), "end", "free_blocks", (json_int_t)r->end.free_blocks, "free_extents",
	                      (json_int_t)r->end.free_extents, "longest_run", (json_int_t)r->end.longest, "score",
	                      r->end.score_bga, "ceph_score", r->end.score_ceph, "hash", hash, "samples", s);
	if (r->verify_end >= 0)
		json_object_set_new(j, "verify", json_pack("{s:I,s:b}", "mismatches", (json_int_t)r->mismatches,
		                                           "end_matches_recording", r->verify_end));
	return j;
}

/* gnuplot, when installed, draws DIR/score.png from DIR/score.dat. */
static void plot(const char *dir, const struct trace *t, const char *name, struct result *res, int n)
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
	for (int a = 0; a < n; a++) {
		fprintf(d, "# %s\n", res[a].label);
		for (size_t i = 0; i < res[a].nsamples; i++)
			fprintf(d, "%zu %.6f %.6f\n", res[a].samples[i].rec, res[a].samples[i].score_bga,
			        res[a].samples[i].score_ceph);
		fputs("\n\n", d);
	}
	fclose(d);
	fprintf(g,
	        "# made by bga-replay run; run gnuplot on it to redo the PNG\n"
	        "set terminal pngcairo size 1000,600 font 'DejaVu Sans,11' noenhanced\n"
	        "set output '%s'\nset title 'fragmentation over the trace %s (%zu records, %" PRIu64 " blocks)'\n"
	        "set xlabel 'records replayed'\nset ylabel 'score (0: free space in the longest runs, 1: all single blocks)'\n"
	        "set key outside right top\nset grid\nplot ",
	        png, name, t->nrec, t->h.nblocks);
	for (int a = 0; a < n; a++)
		fprintf(g,
		        "%s'%s' index %d using 1:2 with lines lw 2 lc %d title '%s: bgalloc score', '%s' index %d using 1:3 "
		        "with lines dt 2 lc %d title '%s: ceph score'",
		        a ? ", \\\n     " : "", dat, a, a + 1, res[a].label, dat, a, a + 1, res[a].label);
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

int run_main(const struct run_opts *o)
{
	struct trace t;
	if (trace_read(o->trace, &t))
		return 1;
	int n = o->nallocs ? o->nallocs : 1, rc = 0;
	const char *def[] = {"bgalloc"};
	const char *const *specs = o->nallocs ? o->allocs : def;
	struct result *res = calloc((size_t)n, sizeof(*res));
	if (!res) {
		trace_free(&t);
		return 2;
	}
	int cpu = pin();
	const char *name = strrchr(o->trace, '/') ? strrchr(o->trace, '/') + 1 : o->trace;
	printf("trace %s: %zu records from %s, %" PRIu64 " blocks of %u bytes, %u a group; one thread on cpu %d\n", name,
	       t.nrec, t.h.source[0] ? t.h.source : "?", t.h.nblocks, t.h.block_size, t.h.blocks_per_group, cpu);
	unsigned reps = o->reps ? o->reps : 1;
	double *rate = calloc(reps, sizeof(*rate));
	for (int a = 0; a < n && rate; a++) {
		/* repetitions: the median rate; each must end in the same map */
		uint64_t hash = 0;
		for (unsigned k = 0; k < reps; k++) {
			if (k)
				free(res[a].samples);
			memset(&res[a], 0, sizeof(res[a]));
			if (run_one(o, &t, specs[a], &res[a])) {
				rc = 1;
				break;
			}
			rate[k] = res[a].ns ? (double)res[a].calls * 1e9 / (double)res[a].ns : 0;
			if (k && res[a].end.hash != hash) {
				fprintf(stderr, "bga-replay: %s: repetition %u ended in another free map\n", specs[a], k + 1);
				rc = 1;
			}
			hash = res[a].end.hash;
		}
		if (rc) {
			free(res[a].samples);
			res[a].samples = NULL;
			n = a;
			break;
		}
		qsort(rate, reps, sizeof(*rate), cmp_double);
		res[a].rate = rate[reps / 2];
	}
	free(rate);
	printf("%-26s %8s %10s %6s %8s %7s %7s %8s %8s %8s %8s %9s\n", "allocator", "calls", "calls/s", "files",
	       "ext/file", "objects", "ext/obj", "failures", "score", "ceph", "mean", "free");
	for (int a = 0; a < n; a++) {
		struct result *r = &res[a];
		printf("%-26s %8" PRIu64 " %10.0f %6" PRIu64 " %8.2f %7" PRIu64 " %7.2f %8" PRIu64 " %8.4f %8.4f %8.4f %9" PRIu64
		       "\n",
		       r->label, r->calls, r->rate, r->files,
		       per(r->file_extents, r->files), r->objects, per(r->object_extents, r->objects), r->failures,
		       r->end.score_bga, r->end.score_ceph, mean_score(r), r->end.free_blocks);
	}
	printf("(calls/s: time inside the allocator's calls, median of %u; score, ceph: bgalloc's and Ceph's\n"
	       " fragmentation scores at the end; mean: bgalloc's over the samples)\n", reps);
	for (int a = 0; a < n; a++) {
		struct result *r = &res[a];
		if (r->failures || r->partial) {
			printf("%s: %" PRIu64 " failed, %" PRIu64 " partial, %" PRIu64 " recorded blocks not had%s", r->label,
			       r->failures, r->partial, r->short_blocks, r->errs[0].n ? ":" : "");
			for (int i = 0; i < 8 && r->errs[i].n; i++)
				printf(" %s x%" PRIu64, bga_strerror(r->errs[i].err), r->errs[i].n);
			putchar('\n');
		}
		if (r->verify_end >= 0 || o->verify) {
			printf("verify: %" PRIu64 " records applied, %" PRIu64 " did not apply; end %s\n", r->replayed,
			       r->mismatches,
			       r->verify_end < 0 ? "unknown (the trace has no end record)"
			                         : r->verify_end ? "matches the recording's free map"
			                                         : "differs from the recording's free map");
			if (r->mismatches || r->verify_end == 0)
				rc = 1;
		}
	}
	for (int a = 0; a < n; a++)
		printf("hash %s %016" PRIx64 "\n", res[a].label, res[a].end.hash);
	if (o->out_dir && n) {
		json_t *j = json_pack("{s:s,s:I,s:I,s:i,s:o}", "trace", name, "records", (json_int_t)t.nrec, "nblocks",
		                      (json_int_t)t.h.nblocks, "cpu", cpu, "allocators", json_array());
		for (int a = 0; a < n; a++)
			json_array_append_new(json_object_get(j, "allocators"), result_json(&res[a]));
		char path[4096];
		snprintf(path, sizeof(path), "%s", o->out_dir);
		for (char *sl = strchr(path + 1, '/');; sl = strchr(sl + 1, '/')) { /* mkdir -p */
			if (sl)
				*sl = 0;
			mkdir(path, 0777);
			if (!sl)
				break;
			*sl = '/';
		}
		snprintf(path, sizeof(path), "%s/replay.json", o->out_dir);
		if (json_dump_file(j, path, JSON_INDENT(2) | JSON_SORT_KEYS)) {
			fprintf(stderr, "bga-replay: cannot write %s\n", path);
			rc = 2;
		} else {
			printf("json: %s\n", path);
			plot(o->out_dir, &t, name, res, n);
		}
		json_decref(j);
	}
	for (int a = 0; a < n; a++)
		free(res[a].samples);
	free(res);
	trace_free(&t);
	return rc;
}

static int print_cb(void *ctx, uint64_t start, uint64_t len)
{
	struct freemap *m = ctx;
	if (m->cur_len && m->cur_start + m->cur_len == start) {
		m->cur_len += len;
		return 0;
	}
	if (m->cur_len)
		printf("%" PRIu64 " %" PRIu64 "\n", m->cur_start, m->cur_len);
	m->cur_start = start;
	m->cur_len = len;
	return 0;
}

int extents_image(const char *path, uint64_t base)
{
	struct bga_io io;
	struct bga_volume *vol;
	struct bga_config cfg;
	int rc = 0;
	if (image_open(path, base, &io, &vol))
		return 1;
	struct freemap m = {0};
	bga_volume_config(vol, &cfg);
	printf("nblocks %" PRIu64 "\nkind free\n", cfg.nblocks);
	if (cfg.nblocks > cfg.first_data_block)
		rc = bga_foreach_free(vol, 0, cfg.nblocks, 1, print_cb, &m);
	if (!rc && m.cur_len)
		printf("%" PRIu64 " %" PRIu64 "\n", m.cur_start, m.cur_len);
	if (rc)
		fprintf(stderr, "%s: %s\n", path, bga_strerror(rc));
	bga_destroy(vol);
	bga_io_file_close(&io);
	return rc ? 1 : 0;
}

int hash_image(const char *path, uint64_t base)
{
	struct bga_io io;
	struct bga_volume *vol;
	int rc = 0;
	if (image_open(path, base, &io, &vol))
		return 1;
	struct freemap m;
	rc = freemap_of_volume(vol, 4096, 0, &m);
	if (!rc)
		printf("free blocks: %" PRIu64 "\nhash %016" PRIx64 "\n", m.free_blocks, m.hash);
	bga_destroy(vol);
	bga_io_file_close(&io);
	return rc ? 1 : 0;
}
