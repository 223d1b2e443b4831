/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "freemap.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bga_trace.h"
#include "trace.h"

void freemap_init(struct freemap *m, uint64_t group, uint64_t unit)
{
	memset(m, 0, sizeof(*m));
	m->group = group ? group : 32768;
	m->unit = unit ? unit : 1;
	m->hash = BGT_HASH_INIT;
}

static double llog2(uint64_t l)
{
	return l ? (double)l * log2((double)l) : 0;
}

/*
 * Ceph's per-extent worth: a grade per power of two of the length, each
 * grade worth 1.2 times the one below up to 1 MiB, the factor falling
 * linearly to 1 at 128 MiB and staying 1 above, interpolated linearly
 * inside a grade.  Written from the description in Ceph's
 * Allocator::get_fragmentation_score and push_next_scale.
 */
static double interpolate(const double *scales, uint64_t v)
{
	if (!v)
		return 0;
	int sc = 63 - __builtin_clzll(v);
	double lo = (double)(UINT64_C(1) << sc);
	double x = ((double)v - lo) / lo;
	return lo * scales[sc] * (1 - x) + 2 * lo * scales[sc + 1] * x;
}

double freemap_ceph_get_score(uint64_t v)
{
	static double scales[66];
	static int n;
	if (!n) {
		scales[0] = 1;
		for (n = 1; n < 66; n++) {
			double f = 1.2;
			if (n >= 27)
				f = 1;
			else if (n > 20)
				f = (1.0 * (n - 20) + 1.2 * (27 - n)) / (27 - 20);
			scales[n] = scales[n - 1] * f;
		}
	}
	return interpolate(scales, v);
}

/* Ceph's score before the fast score came (Reef and earlier): every grade
 * worth 1.1 times the one below. */
static double ceph_legacy_get_score(uint64_t v)
{
	static double scales[66];
	static int n;
	if (!n)
		for (scales[0] = 1, n = 1; n < 66; n++)
			scales[n] = scales[n - 1] * 1.1;
	return interpolate(scales, v);
}

static void count(struct freemap *m, uint64_t start, uint64_t len)
{
	m->free_blocks += len;
	m->free_extents++;
	if (len > m->longest) {
		m->longest = len;
		m->longest_start = start;
	}
	int o = 63 - __builtin_clzll(len);
	m->hist_count[o]++;
	m->hist_blocks[o] += len;
	m->hash = bgt_hash_u64(bgt_hash_u64(m->hash, start), len);
	/* bgalloc's actual: the extent's pieces inside each group */
	for (uint64_t s = start, end = start + len; s < end;) {
		uint64_t gend = (s / m->group + 1) * m->group, e = gend < end ? gend : end;
		m->actual_bga += llog2(e - s);
		s = e;
	}
	m->actual_ceph += freemap_ceph_get_score(len * m->unit);
	m->actual_ceph_legacy += ceph_legacy_get_score(len * m->unit);
}

void freemap_add(struct freemap *m, uint64_t start, uint64_t len)
{
	if (!len)
		return;
	if (m->cur_len && m->cur_start + m->cur_len == start) {
		m->cur_len += len;
		return;
	}
	if (m->cur_len)
		count(m, m->cur_start, m->cur_len);
	m->cur_start = start;
	m->cur_len = len;
}

void freemap_finish(struct freemap *m)
{
	if (m->cur_len)
		count(m, m->cur_start, m->cur_len);
	m->cur_len = 0;
	uint64_t F = m->free_blocks, G = m->group;
	double ideal = (double)(F / G) * llog2(G) + llog2(F % G);
	m->score_bga = ideal > 0 ? (ideal - m->actual_bga) / ideal : 0;
	double cideal = freemap_ceph_get_score(F * m->unit);
	double terrible = (double)F * freemap_ceph_get_score(m->unit);
	/* Ceph divides by zero here (one unit free, or none); call that 0 */
	m->score_ceph = cideal > terrible ? (cideal - m->actual_ceph) / (cideal - terrible) : 0;
	/* the older definition: terrible is every byte alone */
	uint64_t bytes = F * m->unit;
	cideal = ceph_legacy_get_score(bytes);
	terrible = (double)bytes;
	m->score_ceph_legacy = cideal > terrible ? (cideal - m->actual_ceph_legacy) / (cideal - terrible) : 0;
}

static int add_cb(void *ctx, uint64_t start, uint64_t len)
{
	freemap_add(ctx, start, len);
	return 0;
}

int freemap_of_volume(struct bga_volume *vol, uint64_t unit, uint64_t group, struct freemap *m)
{
	struct bga_config cfg;
	int rc = bga_volume_config(vol, &cfg);
	if (rc)
		return rc;
	freemap_init(m, group ? group : cfg.blocks_per_group, unit);
	if (cfg.nblocks > cfg.first_data_block && (rc = bga_foreach_free(vol, 0, cfg.nblocks, 1, add_cb, m)))
		return rc;
	freemap_finish(m);
	return 0;
}

void freemap_print(FILE *f, const struct freemap *m)
{
	fprintf(f, "free blocks: %" PRIu64 "\n", m->free_blocks);
	fprintf(f, "free extents: %" PRIu64 "\n", m->free_extents);
	fprintf(f, "longest run: %" PRIu64 " blocks at %" PRIu64 "\n", m->longest, m->longest_start);
	fprintf(f, "bgalloc score: %.6f\n", m->score_bga);
	fprintf(f, "ceph score: %.6f\n", m->score_ceph);
	fprintf(f, "ceph score (reef and earlier): %.6f\n", m->score_ceph_legacy);
	fprintf(f, "hash %016" PRIx64 "\n", m->hash);
	fprintf(f, "histogram:\n%21s %12s %14s %7s\n", "extent size (blocks)", "free extents", "free blocks", "%");
	for (int o = 0; o < 64; o++) {
		if (!m->hist_count[o])
			continue;
		char range[48];
		snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64, UINT64_C(1) << o,
		         o == 63 ? UINT64_MAX : (UINT64_C(2) << o) - 1);
		fprintf(f, "%21s %12" PRIu64 " %14" PRIu64 " %7.2f\n", range, m->hist_count[o], m->hist_blocks[o],
		        m->free_blocks ? 100.0 * (double)m->hist_blocks[o] / (double)m->free_blocks : 0);
	}
}

#define BLAME_NONE UINT32_MAX

struct blame {
	char label[96];
	const char *path;
	const struct trace *t;
	uint64_t nblocks;
	uint32_t *alloc_rec, *free_rec; /* per block; BLAME_NONE: never */
	uint8_t *held;                  /* per block: handed out (or in use at the start) */
};

struct blame *blame_open(const char *label, const struct trace *t, uint64_t nblocks,
                         const struct bga_extent *fr, size_t n)
{
	const char *path = getenv("BGA_REPLAY_BLAME");
	if (!path || !*path || !t)
		return NULL;
	struct blame *b = calloc(1, sizeof(*b));
	if (!b || !(b->alloc_rec = malloc(nblocks * sizeof(uint32_t))) ||
	    !(b->free_rec = malloc(nblocks * sizeof(uint32_t))) || !(b->held = malloc(nblocks))) {
		blame_close(b, 0);
		return NULL;
	}
	snprintf(b->label, sizeof(b->label), "%s", label);
	b->path = path;
	b->t = t;
	b->nblocks = nblocks;
	memset(b->alloc_rec, 0xff, nblocks * sizeof(uint32_t));
	memset(b->free_rec, 0xff, nblocks * sizeof(uint32_t));
	memset(b->held, 1, nblocks);
	for (size_t i = 0; i < n; i++)
		for (uint64_t k = fr[i].start; k < fr[i].start + fr[i].len && k < nblocks; k++)
			b->held[k] = 0;
	return b;
}

void blame_alloc(struct blame *b, size_t rec, const struct bga_extent *e, size_t n)
{
	for (size_t i = 0; b && i < n; i++)
		for (uint64_t k = e[i].start; k < e[i].start + e[i].len && k < b->nblocks; k++) {
			b->held[k] = 1;
			b->alloc_rec[k] = (uint32_t)rec;
		}
}

void blame_free(struct blame *b, size_t rec, const struct bga_extent *e, size_t n)
{
	/* a block freed twice (a deferred free, then its commit) keeps the first */
	for (size_t i = 0; b && i < n; i++)
		for (uint64_t k = e[i].start; k < e[i].start + e[i].len && k < b->nblocks; k++)
			if (b->held[k]) {
				b->held[k] = 0;
				b->free_rec[k] = (uint32_t)rec;
			}
}

/* A neighbour's request, as "op handle goal min max" ("-": none). */
static void blame_who(const struct blame *b, FILE *f, uint64_t blk)
{
	if (blk >= b->nblocks || !b->held[blk] || b->alloc_rec[blk] == BLAME_NONE) {
		fprintf(f, " %s", blk < b->nblocks && b->held[blk] ? "start" : "-");
		return;
	}
	const struct trace_rec *r = &b->t->rec[b->alloc_rec[blk]];
	fprintf(f, " %s@%" PRIu64 "/h%" PRIu64 "/%s/%" PRIu64 "-%" PRIu64, bgt_op_name(r->op), r->seq,
	        r->args[0], r->args[1] == BGA_NO_GOAL ? "nogoal" : "goal", r->args[2], r->args[3]);
}

void blame_close(struct blame *b, int report)
{
	if (!b)
		return;
	FILE *f = report && b->path ? fopen(b->path, "a") : NULL;
	if (report && !f)
		fprintf(stderr, "bga-replay: BGA_REPLAY_BLAME: cannot open %s\n", b->path);
	static const char *const names[] = {"gap", "hole", "remnant"};
	uint64_t runs[3] = {0}, blocks[3] = {0};
	for (uint64_t s = 0; f && s < b->nblocks;) {
		if (b->held[s]) {
			s++;
			continue;
		}
		/* the run, whether any of it was handed out, and when it was
		 * last given back (BLAME_NONE: never, free from the start) */
		uint64_t e = s;
		uint32_t freed = BLAME_NONE;
		int handed = 0;
		for (; e < b->nblocks && !b->held[e]; e++) {
			handed |= b->alloc_rec[e] != BLAME_NONE;
			if (b->free_rec[e] != BLAME_NONE && (freed == BLAME_NONE || b->free_rec[e] > freed))
				freed = b->free_rec[e];
		}
		if (e - s < BLAME_SMALL) {
			uint32_t la = s && b->held[s - 1] ? b->alloc_rec[s - 1] : BLAME_NONE;
			uint32_t ra = e < b->nblocks && b->held[e] ? b->alloc_rec[e] : BLAME_NONE;
			int c = !handed ? 0
			        : (la != BLAME_NONE && la > freed) || (ra != BLAME_NONE && ra > freed) ? 2
			                                                                          : 1;
			runs[c]++;
			blocks[c] += e - s;
			fprintf(f, "%s %s %" PRIu64 "+%" PRIu64 " freed@", b->label, names[c], s, e - s);
			if (freed == BLAME_NONE)
				fputc('-', f);
			else
				fprintf(f, "%" PRIu64, b->t->rec[freed].seq);
			blame_who(b, f, s - 1);
			blame_who(b, f, e);
			fputc('\n', f);
		}
		s = e;
	}
	/* where old and new data lie: the volume in `slices` equal parts */
	const char *sv = getenv("BGA_REPLAY_BLAME_SLICES");
	uint64_t slices = sv ? strtoull(sv, NULL, 10) : 0, step = slices && slices <= b->nblocks ? b->nblocks / slices : 0;
	for (uint64_t i = 0; f && step && i < slices; i++) {
		uint64_t lo = i * step, hi = i + 1 == slices ? b->nblocks : lo + step, free = 0, got = 0;
		double seq = 0;
		for (uint64_t k = lo; k < hi; k++) {
			if (!b->held[k])
				free++;
			else if (b->alloc_rec[k] != BLAME_NONE) {
				got++;
				seq += (double)b->t->rec[b->alloc_rec[k]].seq;
			}
		}
		fprintf(f, "%s slice %" PRIu64 "+%" PRIu64 " free %.1f%% handed %" PRIu64 " mean seq ", b->label, lo, hi - lo,
		        100.0 * (double)free / (double)(hi - lo), got);
		if (got)
			fprintf(f, "%.0f\n", seq / (double)got);
		else
			fputs("-\n", f);
	}
	for (int c = 0; f && c < 3; c++)
		fprintf(f, "%s total %s runs %" PRIu64 " blocks %" PRIu64 "\n", b->label, names[c], runs[c], blocks[c]);
	if (f)
		fclose(f);
	free(b->alloc_rec);
	free(b->free_rec);
	free(b->held);
	free(b);
}
