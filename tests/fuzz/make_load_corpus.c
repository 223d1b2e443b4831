/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Write the seed corpus of fuzz_load: real stored images of small volumes
 * (deterministic), one file per scenario.
 *
 *   fuzz_load_corpus OUTDIR      (tests/fuzz/corpus/fuzz_load)
 *
 * Scenarios: an empty volume; random churn at a few geometries; a wholly
 * used group beside untouched ones; two stores (both slots of a group in
 * use); a grown volume; a store that failed part-way before a good one
 * (uncommitted slots on disk); one with a damaged bitmap (a quarantine).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc.h>

#include "memio.h"
#include "testutil.h"

static void save(const char *dir, const char *name, const struct memio *m)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (f == NULL || fwrite(m->buf, 1, m->size, f) != m->size || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

static struct bga_volume *make(uint64_t nblocks, uint32_t bpg, uint64_t fdb)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	test_config_init(&cfg, nblocks, bpg, fdb);
	if (bga_create(&cfg, &vol)) {
		fprintf(stderr, "bga_create failed\n");
		exit(1);
	}
	return vol;
}

static void churn(struct bga_volume *vol, struct rng *r, int n, uint64_t nblocks, uint64_t maxlen)
{
	struct bga_extent ext[256];
	size_t k = 0;
	for (int i = 0; i < n; i++) {
		if (k > 0 && below(r, 3) == 0) {
			size_t j = below(r, k);
			bga_free(vol, ext[j].start, ext[j].len);
			ext[j] = ext[--k];
			continue;
		}
		struct bga_request req = {.goal = below(r, nblocks), .min_len = 1, .max_len = 1 + below(r, maxlen)};
		if (k < 256 && bga_alloc(vol, &req, &ext[k]) == 0)
			k++;
	}
}

static void store(struct bga_volume *vol, struct bga_io *io)
{
	if (bga_store(vol, io)) {
		fprintf(stderr, "bga_store failed\n");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
		return 2;
	}
	const char *dir = argv[1];
	struct rng r = {20261130};
	struct memio m;
	struct bga_io io;

	struct bga_volume *vol = make(64 * 3 + 5, 64, 0);
	memio_init(&m, &io);
	store(vol, &io);
	save(dir, "empty", &m);
	memio_free(&m);
	bga_destroy(vol);

	static const uint32_t bpgs[] = {64, 128, 512, 4096};
	for (int i = 0; i < 4; i++) {
		uint64_t nblocks = bpgs[i] * (3 + i) + 7 * (uint64_t)i;
		vol = make(nblocks, bpgs[i], (uint64_t)i);
		churn(vol, &r, 80, nblocks, bpgs[i] / 2);
		memio_init(&m, &io);
		store(vol, &io);
		char name[32];
		snprintf(name, sizeof(name), "churn_%u", bpgs[i]);
		save(dir, name, &m);
		churn(vol, &r, 30, nblocks, bpgs[i] / 2);
		store(vol, &io); /* incremental: both slots in use */
		snprintf(name, sizeof(name), "twice_%u", bpgs[i]);
		save(dir, name, &m);
		memio_free(&m);
		bga_destroy(vol);
	}

	vol = make(64 * 9, 64, 1);
	struct bga_request whole = {.goal = 128, .min_len = 64, .max_len = 64, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	bga_alloc(vol, &whole, &e);
	churn(vol, &r, 20, 64, 10);
	memio_init(&m, &io);
	store(vol, &io);
	save(dir, "full_group", &m);
	bga_grow(vol, 64 * 17 + 3);
	churn(vol, &r, 20, 64 * 17, 20);
	store(vol, &io);
	save(dir, "grown", &m);
	churn(vol, &r, 20, 64 * 17, 20);
	m.fail_write = 2;
	m.writes = 0;
	bga_store(vol, &io); /* fails: leaves uncommitted slots */
	m.fail_write = -1;
	save(dir, "failed_store", &m);
	store(vol, &io);
	save(dir, "after_failed_store", &m);
	/* a damaged bitmap: the first non-zero byte past the first unit's
	 * descriptor sector, flipped */
	for (size_t i = 4096 + 512; i < m.size; i++)
		if (m.buf[i]) {
			m.buf[i] ^= 0x10;
			break;
		}
	save(dir, "quarantine", &m);
	memio_free(&m);
	bga_destroy(vol);
	return 0;
}
