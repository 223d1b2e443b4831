/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-replay try: what COUNT allocations of WANT bytes at allocation unit
 * UNIT would get from a stored volume (Ceph's ceph_test_alloc_replay
 * try_alloc), each one bga_alloc_vec call as an embedder would make it:
 * goal 0 (Ceph's hint 0), min_len and align the unit, max_len and want the
 * request, no window.  What each request got stays allocated for the next
 * (the image itself is not written).
 */
#define _GNU_SOURCE
#include "replay.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "freemap.h"

#define TRY_MAX_OUT 65536

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int try_run(const struct try_opts *o)
{
	uint64_t bs = o->block_size ? o->block_size : 4096;
	if (!o->count || !o->want || !o->unit || o->want % bs || o->unit % bs || o->want % o->unit) {
		fprintf(stderr,
		        "bga-replay try: COUNT, WANT and UNIT must be positive, WANT and UNIT multiples of the block size "
		        "(%" PRIu64 " bytes), and WANT a multiple of UNIT\n",
		        bs);
		return 2;
	}
	uint64_t unit = o->unit / bs, want = o->want / bs;
	if (unit & (unit - 1)) {
		fprintf(stderr, "bga-replay try: UNIT is %" PRIu64 " blocks, not a power of two\n", unit);
		return 2;
	}
	struct bga_io io;
	struct bga_volume *vol;
	int rc = 0;
	if (image_open(o->image, o->base, &io, &vol))
		return 2;
	struct bga_extent *out = malloc(TRY_MAX_OUT * sizeof(*out));
	uint64_t *ns = malloc(o->count * sizeof(*ns));
	struct freemap before, after;
	if (!out || !ns || freemap_of_volume(vol, bs, 0, &before)) {
		fprintf(stderr, "bga-replay try: out of memory\n");
		rc = 2;
		goto out;
	}
	struct bga_request req = {.goal = 0, .min_len = unit, .max_len = want, .align = unit > 1 ? unit : 0};
	uint64_t ok = 0, partial = 0, failed = 0, extents = 0, max_ext = 0, blocks = 0;
	struct {
		int err;
		uint64_t n;
	} errs[8] = {{0}};
	for (uint64_t i = 0; i < o->count; i++) {
		size_t n = 0;
		uint64_t t0 = now_ns();
		int r = bga_alloc_vec(vol, &req, want, out, TRY_MAX_OUT, &n);
		ns[i] = now_ns() - t0;
		uint64_t got = 0;
		for (size_t k = 0; k < n; k++)
			got += out[k].len;
		if (r) {
			failed++;
			for (int k = 0; k < 8; k++)
				if (errs[k].err == r || !errs[k].n) {
					errs[k].err = r;
					errs[k].n++;
					break;
				}
		} else {
			ok++;
			partial += got < want;
			extents += n;
			max_ext = n > max_ext ? n : max_ext;
			blocks += got;
		}
		printf("request %" PRIu64 ": %s, %zu extents, %" PRIu64 " blocks, %" PRIu64 " ns", i,
		       r ? bga_strerror(r) : "ok", n, got, ns[i]);
		if (o->verbose) {
			putchar(':');
			for (size_t k = 0; k < n; k++)
				printf(" %" PRIu64 "+%" PRIu64, out[k].start, out[k].len);
		}
		putchar('\n');
	}
	if (freemap_of_volume(vol, bs, 0, &after)) {
		rc = 2;
		goto out;
	}
	qsort(ns, o->count, sizeof(*ns), cmp_u64);
	printf("requests: %" PRIu64 " of %" PRIu64 " blocks at unit %" PRIu64 " blocks (%" PRIu64 " bytes a block)\n",
	       o->count, want, unit, bs);
	printf("succeeded: %" PRIu64 " (%" PRIu64 " partial), failed: %" PRIu64, ok, partial, failed);
	for (int k = 0; k < 8 && errs[k].n; k++)
		printf(", %s x%" PRIu64, bga_strerror(errs[k].err), errs[k].n);
	printf("\nextents per request: %.3f (most %" PRIu64 "), blocks allocated: %" PRIu64 "\n",
	       ok ? (double)extents / (double)ok : 0, max_ext, blocks);
	printf("time per request: median %" PRIu64 " ns, max %" PRIu64 " ns\n", ns[o->count / 2], ns[o->count - 1]);
	printf("bgalloc score: %.6f before, %.6f after\n", before.score_bga, after.score_bga);
	printf("ceph score: %.6f before, %.6f after\n", before.score_ceph, after.score_ceph);
	printf("free blocks: %" PRIu64 " before, %" PRIu64 " after\n", before.free_blocks, after.free_blocks);
	printf("hash %016" PRIx64 "\n", after.hash);
	rc = 0;
out:
	free(out);
	free(ns);
	bga_destroy(vol);
	bga_io_file_close(&io);
	return rc;
}
