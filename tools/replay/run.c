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
 * write aims past its last block; an anchored goal, the replay's copy of
 * its anchor moved as far as the recorded goal lay from it, or by
 * --goals).  Blocks the replay got beyond what the recording got are
 * freed at once, and recorded blocks it could not get are counted as a
 * shortfall and never freed.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "report.h"
#include "runs.h"

#define NONE UINT64_MAX
#define MAX_OUT 65536

struct file {
	struct bga_rsv *rsv;
	struct bga_extent *ext;
	int64_t *lblk;  /* ext[i]'s first block's logical place (runs_logical) */
	int64_t lnext;  /* the logical end of the file's last request */
	size_t n, cap;
	int open;
};

struct ctx {
	const struct trace *t;
	struct backend *be;
	struct result *res;
	uint64_t *map, unit;
	int64_t *lmap; /* recorded block -> its logical place in its file (runs_logical) */
	struct file *files;
	size_t nfiles;
	struct bga_extent *out, *runs;
	size_t nruns, cruns;
	int goals; /* run_opts.goals */
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
		c->res->file_lextents += runs_logical(f->ext, f->lblk, f->n);
		c->res->file_extents += runs_physical(f->ext, f->n);
	}
	free(f->ext);
	free(f->lblk);
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
	/* the block after the copy of goal - 1, unless that copy is the
	 * volume's last block: a goal past the end is refused (-EINVAL) */
	if (goal && c->map[goal - 1] != NONE && c->map[goal - 1] + 1 < c->t->h.nblocks)
		return c->map[goal - 1] + 1;
	return c->map[goal] != NONE ? c->map[goal] : goal;
}

/* The replay's copy of anchor moved d blocks, clamped to the volume's
 * data blocks (as bgafs clamps its goals); a copy the replay never got
 * (a shortfall): goal as goal_of moves it. */
static uint64_t moved(struct ctx *c, uint64_t anchor, int64_t d, uint64_t goal)
{
	uint64_t n = c->t->h.nblocks, fdb = c->t->h.first_data_block, a = c->map[anchor];
	if (a == NONE)
		return goal_of(c, goal);
	if (d < 0 && (uint64_t)-d > a - (a < fdb ? a : fdb))
		return fdb < n ? fdb : a;
	return d >= 0 && (uint64_t)d >= n - a ? n - 1 : a + (uint64_t)d;
}

/*
 * A request's goal in the replay.  An anchored one (goal_from) lies as
 * far from the replay's copy of its anchor as the recorded goal lay from
 * the anchor (a goal just past the anchor as goal_of moves it, so a
 * trace replays alike with or without goal_from), or, by --goals, at
 * the hole's logical distance from it, or just past it.
 */
static uint64_t goal_of_rec(struct ctx *c, const struct trace_rec *r)
{
	uint64_t goal = r->args[1], anchor = r->anchor;
	if (!r->anchored || anchor >= c->t->h.nblocks)
		return goal_of(c, goal);
	switch (c->goals) {
	case RUN_GOALS_DISTANCE:
		return moved(c, anchor, r->distance, goal);
	case RUN_GOALS_PAST:
		return r->distance > 0 ? goal_of(c, anchor + 1) : BGA_NO_GOAL;
	default:
		if (goal == BGA_NO_GOAL || goal >= c->t->h.nblocks || goal == anchor + 1)
			return goal_of(c, goal);
		return moved(c, anchor, (int64_t)(goal - anchor), goal);
	}
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
	struct bga_request req = {.goal = goal_of_rec(c, r), .min_len = r->args[2], .max_len = r->args[3],
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
	/* recorded block k of the call -> the replay's block k, both at the
	 * hole's logical place l0 + k */
	uint32_t ri = 0;
	uint64_t roff = 0, k0 = 0;
	int64_t l0 = f ? f->lnext : 0;
	if (f && r->anchored && r->anchor < c->t->h.nblocks && c->lmap[r->anchor] != INT64_MIN)
		l0 = c->lmap[r->anchor] + r->distance;
	c->nruns = 0;
	for (size_t i = 0; i < n; i++) {
		got += c->out[i].len;
		for (uint64_t k = 0; k < c->out[i].len; k++) {
			if (ri < r->next && rec[ri].start + roff < c->t->h.nblocks) {
				c->map[rec[ri].start + roff] = c->out[i].start + k;
				c->lmap[rec[ri].start + roff] = l0 + (int64_t)k0++;
				if (++roff == rec[ri].len) {
					ri++;
					roff = 0;
				}
			} else {
				add_run(c, c->out[i].start + k, 1);
			}
		}
	}
	/* The file holds only the blocks kept, a prefix of out[] (the rest,
	 * past what the recording got, goes back below): an extent given
	 * back is not the file's, and counted as one it made the file look
	 * split where its next request took those blocks again. */
	uint64_t kept = 0;
	for (uint32_t i = 0; i < ri; i++)
		kept += rec[i].len;
	kept += roff;
	size_t nk = 0;
	for (; nk < n && kept; nk++) {
		if (c->out[nk].len > kept)
			c->out[nk].len = kept;
		kept -= c->out[nk].len;
	}
	n = nk;
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
			if (ne)
				f->ext = ne;
			int64_t *nl = realloc(f->lblk, nc * sizeof(*nl));
			if (nl)
				f->lblk = nl;
			if (!ne || !nl)
				return;
			f->cap = nc;
		}
		memcpy(f->ext + f->n, c->out, n * sizeof(*c->out));
		int64_t l = l0;
		for (size_t i = 0; i < n; i++) {
			f->lblk[f->n + i] = l;
			l += (int64_t)c->out[i].len;
		}
		f->n += n;
		f->lnext = l;
	} else {
		c->res->objects++;
		c->res->object_extents += runs_physical(c->out, n);
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
	qsort(e, k, sizeof(*e), runs_by_start);
	*n = k;
	return e;
}

static int fits(struct backend *be, uint64_t len)
{
	struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = len, .max_len = len};
	struct bga_extent e;
	size_t n = 0;
	if (backend_alloc(be, NULL, &req, 0, &e, 1, &n) || n != 1)
		return 0;
	backend_free(be, &e, 1);
	return 1;
}

/* The largest request of at most a group that be places whole now (a
 * request that fits, shortened, fits too: a binary search below the
 * longest free run). */
static uint64_t largest_whole(struct backend *be, uint64_t group, const struct freemap *m)
{
	uint64_t lo = 0, hi = m->longest < group ? m->longest : group;
	if (!hi || fits(be, hi))
		return hi;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (fits(be, mid))
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Play t against spec into res.  stop < t->nrec: only up to record stop,
 * where res->full is taken (the probe of the largest whole request
 * changes the volume: that replay goes no further); else the whole trace,
 * ending in res->end and res->end_whole.
 */
static int run_one(const struct run_opts *o, const struct trace *t, const char *spec, struct result *res,
                   size_t stop)
{
	size_t ninit;
	struct bga_extent *init = start_map(t, &ninit);
	struct ctx c = {.t = t, .res = res, .unit = t->h.block_size ? t->h.block_size : 4096,
	                .goals = o->goals};
	int rc = -1;
	unsigned samples = o->samples ? o->samples : 100;
	size_t step = t->nrec / samples ? t->nrec / samples : 1;
	uint32_t group = t->h.blocks_per_group ? t->h.blocks_per_group : 32768;
	snprintf(res->label, sizeof(res->label), "%s%s", spec, o->verify ? " --verify" : "");
	res->verify_end = -1;
	if (!init || !(res->samples = calloc(t->nrec / step + 2, sizeof(*res->samples))) ||
	    !(c.out = malloc(MAX_OUT * sizeof(*c.out))) || !(c.map = malloc(t->h.nblocks * sizeof(*c.map))) ||
	    !(c.lmap = malloc(t->h.nblocks * sizeof(*c.lmap)))) {
		fprintf(stderr, "bga-replay: out of memory (the block maps need 16 bytes a block)\n");
		goto out;
	}
	/* blocks in use when the recording began are the embedder's, at the
	 * same place in every allocator: frees of them free them there */
	for (uint64_t b = 0; b < t->h.nblocks; b++) {
		c.map[b] = b;
		c.lmap[b] = INT64_MIN;
	}
	for (size_t i = 0; i < ninit; i++)
		for (uint64_t b = init[i].start; b < init[i].start + init[i].len && b < t->h.nblocks; b++)
			c.map[b] = NONE;
	if (backend_open(o->verify ? "bgalloc" : spec, t, t->h.nblocks, group, t->h.first_data_block, init, ninit, &c.be))
		goto out;
	struct bga_volume *vol = o->verify ? backend_volume(c.be) : NULL;
	sample(&c, 0);
	for (size_t i = 0; i < t->nrec; i++) {
		if (o->verify) {
			verify_one(&c, &t->rec[i], vol);
		} else {
			backend_at(c.be, i);
			replay_one(&c, &t->rec[i]);
		}
		if (i == stop) {
			if (!(rc = backend_freemap(c.be, c.unit, &res->full.map))) {
				res->full.whole = largest_whole(c.be, group, &res->full.map);
				res->have_full = 1;
			}
			goto out;
		}
		if ((i + 1) % step == 0 || i + 1 == t->nrec)
			sample(&c, i + 1);
	}
	for (size_t i = 0; i < c.nfiles; i++)
		if (c.files[i].open) {
			backend_rsv_close(c.be, c.files[i].rsv);
			file_done(&c, &c.files[i]);
		}
	rc = backend_freemap(c.be, c.unit, &res->end);
	if (!rc && !o->verify)
		res->end_whole = largest_whole(c.be, group, &res->end);
out:
	/* a replay stopped at the fill moment leaves files open */
	for (size_t i = 0; i < c.nfiles; i++) {
		if (c.files[i].open)
			backend_rsv_close(c.be, c.files[i].rsv);
		free(c.files[i].ext);
		free(c.files[i].lblk);
	}
	backend_close(c.be);
	free(c.files);
	free(c.runs);
	free(c.map);
	free(c.lmap);
	free(c.out);
	free(init);
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
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

/* One trace, read from path, against every allocator of o: its report,
 * and its history in h for the side-by-side table (h->res then to be
 * freed). */
static int run_trace(const struct run_opts *o, const char *path, const struct trace *t, struct history *h, int cpu)
{
	int n = o->nallocs ? o->nallocs : 1, rc = 0;
	const char *def[] = {"bgalloc"};
	const char *const *specs = o->nallocs ? o->allocs : def;
	unsigned reps = o->reps ? o->reps : 1;
	struct result *res = calloc((size_t)n, sizeof(*res));
	double *rate = calloc(reps, sizeof(*rate));
	const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	*h = (struct history){.name = name, .t = t, .full_pct = o->full_pct ? o->full_pct : 90, .res = res, .reps = reps};
	if (!res || !rate || trace_fill(t, h->full_pct, &h->fill)) {
		fprintf(stderr, "bga-replay: out of memory\n");
		free(rate);
		return 2;
	}
	printf("trace %s: %zu records from %s, %" PRIu64 " blocks of %u bytes, %u a group; one thread on cpu %d\n", name,
	       t->nrec, t->h.source[0] ? t->h.source : "?", t->h.nblocks, t->h.block_size, t->h.blocks_per_group, cpu);
	for (int a = 0; a < n; a++) {
		/* repetitions: the median rate; each must end in the same map */
		uint64_t hash = 0;
		for (unsigned k = 0; k < reps; k++) {
			if (k)
				free(res[a].samples);
			memset(&res[a], 0, sizeof(res[a]));
			if (run_one(o, t, specs[a], &res[a], SIZE_MAX)) {
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
		/* the fill moment: a replay of its own, stopped there */
		struct result at = {0};
		if (!rc && !o->verify && h->fill.first_at != SIZE_MAX) {
			if (run_one(o, t, specs[a], &at, h->fill.first_at))
				rc = 1;
			res[a].full = at.full;
			res[a].have_full = at.have_full;
			free(at.samples);
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
	h->n = n;
	if (report_trace(h, o->verify))
		rc = 1;
	for (int a = 0; a < n; a++)
		printf("hash %s %016" PRIx64 "\n", res[a].label, res[a].end.hash);
	if (o->out_dir && n) {
		char dir[4096];
		int len = o->ntraces > 1 ? snprintf(dir, sizeof(dir), "%s/%.*s", o->out_dir,
		                                    (int)(strchr(name, '.') ? strchr(name, '.') - name : (long)strlen(name)),
		                                    name)
		                         : snprintf(dir, sizeof(dir), "%s", o->out_dir);
		if (len < 0 || (size_t)len >= sizeof(dir)) {
			fprintf(stderr, "bga-replay: %s: the path is too long\n", o->out_dir);
			rc = 2;
		} else if (report_files(dir, h, cpu) && !rc) {
			rc = 2;
		}
	}
	return rc;
}

int run_main(const struct run_opts *o)
{
	struct trace *t = calloc((size_t)o->ntraces, sizeof(*t));
	struct history *h = calloc((size_t)o->ntraces, sizeof(*h));
	int rc = 0, done = 0;
	if (!t || !h) {
		free(t);
		free(h);
		return 2;
	}
	/* every trace is read, and every allocator checked against it, before
	 * any is played: bad input stops the run before it prints or writes
	 * anything.  A bad trace is bad input (1); an allocator the run
	 * cannot make (a wrong -a) is a usage error (2). */
	const char *def = "bgalloc";
	for (int i = 0; i < o->ntraces && !rc; i++) {
		if (trace_read(o->traces[i], &t[i]))
			rc = 1;
		for (int a = 0; a < (o->nallocs ? o->nallocs : 1) && !rc; a++)
			if (backend_check(o->nallocs ? o->allocs[a] : def, t[i].h.nblocks,
			                  t[i].h.blocks_per_group ? t[i].h.blocks_per_group : 32768, t[i].h.first_data_block))
				rc = 2;
	}
	int cpu = rc ? -1 : pin();
	/* a trace that fails its check (--verify) does not stop the others */
	for (int i = 0, bad = rc; i < o->ntraces && !bad; i++) {
		if (i)
			putchar('\n');
		int r = run_trace(o, o->traces[i], &t[i], &h[i], cpu);
		done = i + 1;
		rc = r > rc ? r : rc;
		bad = r && !(r == 1 && o->verify);
	}
	if (!rc && (o->ntraces > 1 || o->markdown)) {
		putchar('\n');
		report_histories(stdout, h, (size_t)o->ntraces, o->markdown);
		if (o->nallocs > 1) {
			printf("\nthe best any allocator reached:\n");
			report_best(stdout, h, (size_t)o->ntraces, o->markdown);
		}
	}
	for (int i = 0; i < done; i++) {
		for (int a = 0; a < h[i].n; a++)
			free(h[i].res[a].samples);
		free(h[i].res);
	}
	for (int i = 0; i < o->ntraces; i++)
		trace_free(&t[i]);
	free(h);
	free(t);
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
