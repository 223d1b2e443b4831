/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz harness for bga_load: the input is a metadata area, byte for byte
 * (reads past its end read zeros, as the file-backed io does).  Whatever
 * the bytes, the load must return an error or a volume that is clean
 * apart from quarantined groups; a loaded volume must then allocate,
 * free, report and store, and its stored image must load to the same
 * state.  A finding aborts (ASan, UBSan, or the checks below).
 *
 * The alphabet: the input is the image itself (superblocks, descriptors,
 * bitmaps, checksums: any byte may be damaged), loaded with
 * bga_load_ex(cfg NULL, no flags); then bga_stats, bga_check,
 * bga_prefetch, bga_volume_config, four bga_alloc calls (goal and
 * max_len from the input's last 16 bytes) and their bga_free, bga_store
 * into memory, bga_load of that image, bga_foreach_free on both.  First,
 * bga_scan of the same bytes, which must agree with the load: no valid
 * superblock for one is none for the other, and every group the scan
 * calls bad the load quarantines.
 *
 * Seeds: corpus/fuzz_load/, real stored images written by
 * fuzz_load_corpus (tests/fuzz/make_load_corpus.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc.h>

#include "fuzz_input.h"
#include "memio.h"

#define FAIL(...)                                                                                                  \
	do {                                                                                                       \
		fprintf(stderr, "fuzz_load: " __VA_ARGS__);                                                        \
		fputc('\n', stderr);                                                                               \
		abort();                                                                                           \
	} while (0)

struct used {
	uint64_t *bits;
	uint64_t nblocks;
};

static int clear_cb(void *ctx, uint64_t start, uint64_t len)
{
	struct used *u = ctx;
	for (uint64_t b = start; b < start + len; b++)
		u->bits[b / 64] &= ~(UINT64_C(1) << (b % 64));
	return 0;
}

/* The used-block map of a small volume; NULL (skip the comparison) for a
 * large one. */
static uint64_t *used_map(struct bga_volume *vol, uint64_t nblocks)
{
	if (nblocks > (UINT64_C(1) << 22))
		return NULL;
	struct used u = {calloc((nblocks + 63) / 64, sizeof(uint64_t)), nblocks};
	if (u.bits == NULL)
		return NULL;
	memset(u.bits, 0xff, (nblocks + 63) / 64 * sizeof(uint64_t));
	if (bga_foreach_free(vol, 0, nblocks, 1, clear_cb, &u) != 0)
		FAIL("bga_foreach_free failed on a loaded volume");
	return u.bits;
}

/* The groups a scan calls bad: what a load must quarantine. */
static int count_bad(void *ctx, const struct bga_scan_item *it)
{
	uint64_t *bad = ctx;
	if (it->kind == BGA_SCAN_GROUP_BAD || it->kind == BGA_SCAN_BITMAP_BAD ||
	    (it->kind == BGA_SCAN_GROUP && it->state == BGA_SCAN_QUARANTINED))
		++*bad;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct constio c = {data, size};
	struct bga_io io = {&c, constio_read, constio_write, constio_flush};
	struct bga_volume *vol;
	struct bga_scan_sb ssb = {0};
	uint64_t bad = 0;
	int src = bga_scan(&io, 0, &ssb, count_bad, &bad);
	if (src < 0 && src != -ENODATA && src != -ENOMEM)
		FAIL("bga_scan returned %d (%s)", src, bga_strerror(src));
	int rc = bga_load_ex(&io, NULL, 0, &vol);
	if (rc) {
		if (rc != -EUCLEAN && rc != -ENODATA && rc != -EINVAL && rc != -ENOMEM)
			FAIL("bga_load returned %d (%s)", rc, bga_strerror(rc));
		return 0;
	}
	if (src == -ENODATA)
		FAIL("bga_load found a superblock where bga_scan found none");
	struct bga_stats st;
	if (bga_stats(vol, &st))
		FAIL("bga_stats failed");
	if (src >= 0 && (st.nblocks != ssb.nblocks || st.groups_quarantined < bad))
		FAIL("bga_scan disagrees with the load: %llu blocks, %llu bad groups; the load %llu blocks, %llu quarantined",
		     (unsigned long long)ssb.nblocks, (unsigned long long)bad, (unsigned long long)st.nblocks,
		     (unsigned long long)st.groups_quarantined);
	struct bga_check_report r;
	rc = bga_check(vol, &r);
	if (rc && st.groups_quarantined == 0)
		FAIL("loaded volume is not clean and nothing is quarantined: %s", r.message);
	if (bga_prefetch(vol))
		FAIL("bga_prefetch failed on an in-memory image");
	struct bga_config cfg;
	bga_volume_config(vol, &cfg);

	/* it works: a few allocations and frees, from the input's last bytes */
	struct fz_in in = {data, size, size > 16 ? size - 16 : 0};
	struct bga_extent e[4];
	int n = 0;
	for (int i = 0; i < 4; i++) {
		struct bga_request req = {.goal = fz_u32(&in) % cfg.nblocks, .min_len = 1, .max_len = 1 + fz_u8(&in)};
		if (bga_alloc(vol, &req, &e[n]) == 0)
			n++;
	}
	for (int i = 0; i < n; i++)
		if (bga_free(vol, e[i].start, e[i].len))
			FAIL("freeing an extent just allocated failed");

	/* and it stores, to an image that loads to the same state */
	uint64_t *before = used_map(vol, cfg.nblocks);
	struct memio m;
	struct bga_io mio;
	memio_init(&m, &mio);
	rc = bga_store(vol, &mio);
	if (rc && rc != -ENOMEM)
		FAIL("bga_store to memory failed: %d", rc);
	if (rc == 0) {
		struct bga_volume *back;
		rc = bga_load(&mio, NULL, &back);
		if (rc)
			FAIL("the image a loaded volume stored does not load: %d", rc);
		struct bga_stats st2;
		bga_stats(back, &st2);
		if (st2.groups_quarantined != st.groups_quarantined)
			FAIL("quarantine not kept across a store: %llu then %llu",
			     (unsigned long long)st.groups_quarantined, (unsigned long long)st2.groups_quarantined);
		uint64_t *after = used_map(back, cfg.nblocks);
		if (before && after && memcmp(before, after, (cfg.nblocks + 63) / 64 * sizeof(uint64_t)))
			FAIL("stored and loaded again, the state changed");
		free(after);
		bga_destroy(back);
	}
	free(before);
	memio_free(&m);
	bga_destroy(vol);
	return 0;
}
