/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "freemap.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "bga_trace.h"

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
