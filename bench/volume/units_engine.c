/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-units engine|engine-ins|writers: a storage engine's allocations at
 * its allocation unit, the workload on which Ceph BlueStore's own
 * allocators were compared with bga_alloc_vec
 * (BENCHMARKS.md#at-a-storage-engines-allocation-unit):
 *  - a 64 GiB volume of 4 KiB blocks (2^24 blocks, default groups);
 *  - requests of 64 KiB, 256 KiB or 4 MiB (16, 64, 1024 blocks) at a
 *    64 KiB unit: align = min_len = 16, max_len = want, a random
 *    unit-aligned goal, one bga_alloc_vec call per request;
 *  - a short result is given back (bga_free_vec) and counted a failure,
 *    as BlueStore's _do_alloc_write gives back what does not cover its
 *    write;
 *  - every release through bga_free_vec.
 * Scenarios:
 *  empty       the volume is filled to 50% and held there: each step
 *              frees one random object and makes one;
 *  fragmented  filled to 90% with 4 KiB-4 MiB requests (uniform in
 *              whole blocks) at a 4 KiB unit (align = min_len = 1), half
 *              of those freed at random, filled back to 90% with 64 KiB
 *              requests, which the steps then churn (free a random 64 KiB
 *              object, make one).
 * Reported: extents per request over the steps, failures (in the steps
 * and in the fills), free extents after the steps (adjacent extents
 * merged across group boundaries, as one free list would hold them),
 * bga_stats' frag_score, Ceph's fragmentation score (below), and pairs
 * (one free and one allocation) per second, the median over repetitions.
 * engine-ins runs the steps once for callgrind (bench/volume/engine_instructions.sh
 * takes the difference of two step counts).  CALL (engine's third
 * argument, engine-ins' fourth) is how a request is made: vec (the
 * default), one bga_alloc_vec; alloc, bga_alloc called until want is met,
 * each next call's goal the end of the extent before, as an engine
 * without bga_alloc_vec would; whole, the same with BGA_WHOLE.  writers: per-writer handles
 * at the unit (bga_rsv_open, req.rsv), each writing objects in turn: the
 * share of the handles' allocations that their windows served.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc.h>

#include "args.h"
#include "rng.h"
#include "units_engine.h"

#define NBLOCKS (UINT64_C(1) << 24)
#define UNIT 16
#define MAX_OUT 64

/* An object: its extents, the first inline (the usual case: no malloc in
 * the timed steps when the allocator keeps a request whole). */
struct obj {
	struct bga_extent first;
	struct bga_extent *more; /* n > 1: all n extents */
	uint32_t n;
};

struct pool {
	struct obj *o;
	size_t n, cap;
};

/* How a request is made (CALL above). */
enum engine_call { CALL_VEC, CALL_ALLOC, CALL_WHOLE };

struct engine {
	struct bga_volume *vol;
	enum engine_call call;
	struct rng rng;
	struct pool static_objs, churned; /* fragmented's survivors; the objects the steps churn */
	uint64_t used;
	uint64_t requests, extents, failures, fill_failures;
	struct bga_extent out[MAX_OUT];
};

static void pool_push(struct pool *p, const struct bga_extent *e, size_t n)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 1024;
		p->o = realloc(p->o, p->cap * sizeof(*p->o));
		if (!p->o)
			exit(1);
	}
	struct obj *o = &p->o[p->n++];
	o->n = (uint32_t)n;
	o->first = e[0];
	o->more = NULL;
	if (n > 1) {
		o->more = malloc(n * sizeof(*e));
		if (!o->more)
			exit(1);
		memcpy(o->more, e, n * sizeof(*e));
	}
}

static uint64_t obj_blocks(const struct obj *o)
{
	const struct bga_extent *e = o->n > 1 ? o->more : &o->first;
	uint64_t s = 0;
	for (uint32_t i = 0; i < o->n; i++)
		s += e[i].len;
	return s;
}

/* Free object i of p (swap-remove). */
static void pool_free(struct engine *en, struct pool *p, size_t i)
{
	struct obj *o = &p->o[i];
	en->used -= obj_blocks(o);
	if (bga_free_vec(en->vol, o->n > 1 ? o->more : &o->first, o->n) != 0) {
		fprintf(stderr, "bga_free_vec failed\n");
		exit(1);
	}
	free(o->more);
	p->o[i] = p->o[--p->n];
}

/* A request's blocks into p, its extent count into the totals. */
static void keep(struct engine *en, struct pool *p, size_t n, uint64_t got)
{
	en->extents += n;
	en->used += got;
	pool_push(p, en->out, n);
}

/* A short result given back: a failure. */
static bool give_back(struct engine *en, size_t n)
{
	if (n && bga_free_vec(en->vol, en->out, n) != 0)
		exit(1);
	return false;
}

/* The request by bga_alloc calls (CALL alloc or whole): until want is
 * met, each from the end of the extent before; touching extents are one,
 * as bga_alloc_vec merges them. */
static __attribute__((noinline)) bool request_alloc(struct engine *en, struct pool *p, uint64_t want,
						    struct bga_request *r)
{
	size_t n = 0;
	uint64_t got = 0;
	r->flags = en->call == CALL_WHOLE ? BGA_WHOLE : 0;
	while (got < want && n < MAX_OUT) {
		r->max_len = want - got;
		if (bga_alloc(en->vol, r, &en->out[n]) != 0)
			break;
		got += en->out[n].len;
		r->goal = en->out[n].start + en->out[n].len < NBLOCKS ? en->out[n].start + en->out[n].len : 0;
		if (n && en->out[n - 1].start + en->out[n - 1].len == en->out[n].start)
			en->out[n - 1].len += en->out[n].len;
		else
			n++;
	}
	if (got < want)
		return give_back(en, n);
	keep(en, p, n, got);
	return true;
}

/*
 * One request of `want` blocks at a unit, at a random unit-aligned goal:
 * into p when whole; a short result is given back.  false on a failure.
 */
static bool request(struct engine *en, struct pool *p, uint64_t want, uint64_t unit)
{
	struct bga_request r = {.goal = rng_below(&en->rng, NBLOCKS / unit) * unit,
				.min_len = unit,
				.max_len = want,
				.align = unit};
	en->requests++;
	if (en->call != CALL_VEC)
		return request_alloc(en, p, want, &r);
	size_t n = 0;
	int rc = bga_alloc_vec(en->vol, &r, want, en->out, MAX_OUT, &n);
	uint64_t got = 0;
	for (size_t i = 0; i < n; i++)
		got += en->out[i].len;
	if (rc != 0 || got < want)
		return give_back(en, n);
	keep(en, p, n, got);
	return true;
}

/* Fill p to `pct` percent of the volume with requests of `want` blocks
 * (0: uniform in 1..1024) at `unit`. */
static void fill(struct engine *en, struct pool *p, unsigned pct, uint64_t want, uint64_t unit)
{
	uint64_t target = NBLOCKS / 100 * pct;
	unsigned misses = 0;
	while (en->used < target && misses < 64) {
		uint64_t w = want ? want : 1 + rng_below(&en->rng, 1024);
		w = w > target - en->used ? (target - en->used + unit - 1) / unit * unit : w;
		if (request(en, p, w, unit)) {
			misses = 0;
		} else {
			en->fill_failures++;
			misses++;
		}
	}
}

/* The steps: free a random churned object, make one of `want` blocks. */
__attribute__((noinline)) void engine_steps(struct engine *en, uint64_t steps, uint64_t want)
{
	for (uint64_t i = 0; i < steps; i++) {
		pool_free(en, &en->churned, rng_below(&en->rng, en->churned.n));
		if (!request(en, &en->churned, want, UNIT))
			en->failures++;
	}
}

static void engine_setup(struct engine *en, bool fragmented, uint64_t want, uint64_t seed, enum engine_call call)
{
	memset(en, 0, sizeof(*en));
	en->call = call;
	rng_seed(&en->rng, seed, fragmented);
	struct bga_config cfg;
	bga_config_init(&cfg, NBLOCKS);
	if (bga_create(&cfg, &en->vol) != 0)
		exit(1);
	if (!fragmented) {
		fill(en, &en->churned, 50, want, UNIT);
	} else {
		fill(en, &en->static_objs, 90, 0, 1);
		for (size_t half = en->static_objs.n / 2; en->static_objs.n > half;)
			pool_free(en, &en->static_objs, rng_below(&en->rng, en->static_objs.n));
		fill(en, &en->churned, 90, UNIT, UNIT);
	}
	en->requests = en->extents = en->failures = 0;
}

static void pool_drop(struct pool *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->o[i].more);
	free(p->o);
}

static void engine_teardown(struct engine *en)
{
	pool_drop(&en->static_objs);
	pool_drop(&en->churned);
	bga_destroy(en->vol);
}

/* Free extents as one free list holds them: bga_foreach_free's, merged
 * where they touch across a group boundary. */
struct frag {
	uint64_t extents, blocks, last_end;
	uint64_t pend; /* the extent being merged: its length */
	double ceph_sum;
	double scales[64];
	int nscales;
};

/*
 * Ceph's fragmentation score (Allocator::get_fragmentation_score, as in
 * its 2023 sources; written here from its description): a free extent of
 * v bytes is worth v times a per-byte value that grows by a factor for
 * each doubling of v (1.2 up to 1 MiB, falling linearly to 1 at 128 MiB
 * and staying 1 above), interpolated linearly inside each power of two;
 * score = (ideal - actual) / (ideal - terrible), ideal the worth of all
 * free bytes in one extent, terrible that of every byte alone.  Ceph
 * counts bytes: 4096 a block here.
 */
static double ceph_worth(struct frag *f, uint64_t v)
{
	int sc = 63 - __builtin_clzll(v);
	while (f->nscales <= sc + 1) {
		int ss = f->nscales;
		double scale = ss >= 27 ? 1.0 : ss > 20 ? (1.0 * (ss - 20) + 1.2 * (27 - ss)) / 7 : 1.2;
		f->scales[ss] = f->scales[ss - 1] * scale;
		f->nscales++;
	}
	double base = (double)(UINT64_C(1) << sc), x = ((double)v - base) / base;
	return base * f->scales[sc] * (1 - x) + 2 * base * f->scales[sc + 1] * x;
}

static void frag_flush(struct frag *f)
{
	if (f->pend) {
		f->extents++;
		f->ceph_sum += ceph_worth(f, f->pend * 4096);
	}
	f->pend = 0;
}

static int frag_cb(void *ctx, uint64_t start, uint64_t len)
{
	struct frag *f = ctx;
	if (f->pend && f->last_end != start)
		frag_flush(f);
	f->pend += len;
	f->blocks += len;
	f->last_end = start + len;
	return 0;
}

static void frag_measure(struct bga_volume *vol, uint64_t *extents, double *ceph, double *bga)
{
	struct frag f = {.scales = {1}, .nscales = 1};
	if (bga_foreach_free(vol, 0, NBLOCKS, 1, frag_cb, &f) != 0)
		exit(1);
	frag_flush(&f);
	double ideal = ceph_worth(&f, f.blocks * 4096), terrible = (double)f.blocks * 4096 * ceph_worth(&f, 1);
	*extents = f.extents;
	*ceph = (ideal - f.ceph_sum) / (ideal - terrible);
	struct bga_stats st;
	if (bga_stats(vol, &st) != 0)
		exit(1);
	*bga = st.frag_score;
}

static void engine_run(bool fragmented, uint64_t want, uint64_t steps, int reps, enum engine_call call)
{
	double *pps = malloc((size_t)reps * sizeof(double));
	struct engine en;
	uint64_t ext = 0, req = 0, fails = 0, fill_fails = 0, fext = 0;
	double ceph = 0, bga = 0;
	for (int r = 0; r < reps; r++) {
		engine_setup(&en, fragmented, want, 1 + (uint64_t)r, call);
		fill_fails += en.fill_failures;
		double t0 = now_s();
		engine_steps(&en, steps, want);
		pps[r] = (double)steps / (now_s() - t0);
		ext += en.extents;
		req += en.requests;
		fails += en.failures;
		if (r == 0)
			frag_measure(en.vol, &fext, &ceph, &bga);
		engine_teardown(&en);
	}
	printf("engine %s%s %4llu KiB: %.3f extents/request, %llu failures (fills: %llu), %llu free extents, "
	       "bgalloc score %.3f, Ceph score %.3f, %.2fM pairs/s (median of %d, %llu steps)\n",
	       call == CALL_VEC ? "" : call == CALL_ALLOC ? "(alloc) " : "(whole) ", fragmented ? "fragmented" : "empty     ",
	       (unsigned long long)want * 4, (double)ext / (double)req,
	       (unsigned long long)fails, (unsigned long long)fill_fails, (unsigned long long)fext, bga, ceph,
	       bench_median(pps, reps) / 1e6, reps, (unsigned long long)steps);
	free(pps);
}

/* writers: W handles, each writing objects of `want` blocks in turn, one
 * bga_alloc_vec per object through its handle, goal-less (a writer's
 * objects follow each other), the volume held at 50% by freeing the
 * oldest objects. */
static void writers(uint64_t want, unsigned nw, uint64_t objects)
{
	struct engine en;
	memset(&en, 0, sizeof(en));
	rng_seed(&en.rng, 7, nw);
	struct bga_config cfg;
	bga_config_init(&cfg, NBLOCKS);
	if (bga_create(&cfg, &en.vol) != 0)
		exit(1);
	struct bga_rsv *h[64];
	for (unsigned w = 0; w < nw; w++)
		if (bga_rsv_open(en.vol, &h[w]) != 0)
			exit(1);
	uint64_t fails = 0, extents = 0, contig = 0, last_end[64] = {0};
	for (uint64_t i = 0; i < objects; i++) {
		unsigned w = (unsigned)(i % nw);
		struct bga_request r = {.goal = BGA_NO_GOAL, .min_len = UNIT, .max_len = want, .align = UNIT, .rsv = h[w]};
		size_t n = 0;
		if (bga_alloc_vec(en.vol, &r, want, en.out, MAX_OUT, &n) != 0 || n == 0) {
			fails++;
			continue;
		}
		extents += n;
		contig += en.out[0].start == last_end[w];
		last_end[w] = en.out[n - 1].start + en.out[n - 1].len;
		for (size_t k = 0; k < n; k++)
			en.used += en.out[k].len;
		pool_push(&en.churned, en.out, n);
		while (en.used > NBLOCKS / 2)
			pool_free(&en, &en.churned, 0);
	}
	for (unsigned w = 0; w < nw; w++)
		bga_rsv_close(h[w]);
	struct bga_stats st;
	if (bga_stats(en.vol, &st) != 0)
		exit(1);
	printf("writers: %u handles, %llu objects of %llu KiB at a 64 KiB unit: %llu of %llu allocations through "
	       "a handle served by its window (%.1f%%), %.3f extents/object, %.1f%% of objects right after "
	       "their writer's last, %llu failures\n",
	       nw, (unsigned long long)objects, (unsigned long long)want * 4, (unsigned long long)st.rsv_hits,
	       (unsigned long long)st.rsv_allocs, st.rsv_allocs ? 100.0 * (double)st.rsv_hits / (double)st.rsv_allocs : 0,
	       (double)extents / (double)objects, 100.0 * (double)contig / (double)objects, (unsigned long long)fails);
	engine_teardown(&en);
}

static enum engine_call call_of(const char *s)
{
	if (s == NULL || !strcmp(s, "vec"))
		return CALL_VEC;
	if (!strcmp(s, "alloc"))
		return CALL_ALLOC;
	if (!strcmp(s, "whole"))
		return CALL_WHOLE;
	fprintf(stderr, "engine: CALL is vec, alloc or whole\n");
	exit(2);
}

int engine_main(const char *what, int argc, char **argv)
{
	if (!strcmp(what, "engine-ins")) {
		/* engine-ins empty|fragmented WANT STEPS [CALL] */
		if (argc < 3 || argc > 4 || (strcmp(argv[0], "fragmented") && strcmp(argv[0], "empty"))) {
			fprintf(stderr, "usage: bga-units engine-ins empty|fragmented WANT STEPS [vec|alloc|whole]\n");
			return 2;
		}
		bool fragmented = !strcmp(argv[0], "fragmented");
		uint64_t want = arg_u64("bga-units", "WANT", argv[1], 1, UINT64_C(1) << 30);
		uint64_t steps = arg_u64("bga-units", "STEPS", argv[2], 1, UINT64_C(1) << 40);
		struct engine en;
		engine_setup(&en, fragmented, want, 1, call_of(argc > 3 ? argv[3] : NULL));
		engine_steps(&en, steps, want);
		printf("engine-ins: %llu requests, %llu extents, %llu failures\n", (unsigned long long)en.requests,
		       (unsigned long long)en.extents, (unsigned long long)en.failures);
		engine_teardown(&en);
		return 0;
	}
	if (!strcmp(what, "writers")) {
		if (argc > 3) {
			fprintf(stderr, "usage: bga-units writers [WRITERS 1..64 [WANT [OBJECTS]]]\n");
			return 2;
		}
		unsigned nw = argc > 0 ? (unsigned)arg_int("bga-units", "WRITERS", argv[0], 1, 64) : 8;
		writers(argc > 1 ? arg_u64("bga-units", "WANT", argv[1], 1, UINT64_C(1) << 30) : 64, nw,
			argc > 2 ? arg_u64("bga-units", "OBJECTS", argv[2], 1, UINT64_C(1) << 40) : 100000);
		return 0;
	}
	/* engine [REPS [STEPS [CALL]]] */
	if (argc > 3) {
		fprintf(stderr, "usage: bga-units engine [REPS [STEPS [vec|alloc|whole]]]\n");
		return 2;
	}
	int reps = argc > 0 ? arg_int("bga-units", "REPS", argv[0], 1, 1000) : 5;
	uint64_t steps = argc > 1 ? arg_u64("bga-units", "STEPS", argv[1], 1, UINT64_C(1) << 40) : UINT64_C(1) << 20;
	enum engine_call call = call_of(argc > 2 ? argv[2] : NULL);
	static const uint64_t sizes[] = {16, 64, 1024};
	for (int i = 0; i < 3; i++)
		engine_run(false, sizes[i], steps, reps ? reps : 5, call);
	engine_run(true, UNIT, steps, reps ? reps : 5, call);
	return 0;
}
