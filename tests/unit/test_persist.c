/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga_store / bga_load: round trips (the state, counts and bga_check
 * identical), the rules about windows and deferred frees, configuration
 * agreement, callback errors, and the file-backed io.  The crash
 * simulation and bit flips are in test_persist_crash.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "memio.h"
#include "persist_image.h"
#include "persist_util.h"
#include "requests.h"
#include "testutil.h"

Test(persist, round_trip_random_volumes)
{
	struct rng r = {0x9e3779b97f4a7c15ULL};
	for (int iter = 0; iter < 20 / PERSIST_SLOW + 1; iter++) {
		uint32_t bpg = 64u << below(&r, 5);
		uint64_t nblocks = bpg * (1 + below(&r, 40)) + below(&r, bpg);
		uint64_t fdb = below(&r, 2) ? below(&r, bpg < nblocks ? bpg : nblocks) : 0;
		struct bga_volume *vol = make_volume(nblocks, bpg, fdb);
		struct bga_extent ext[512];
		size_t n = 0;
		churn(vol, &r, 300, 1 + below(&r, 2 * bpg), ext, 512, &n);
		struct memio m;
		struct bga_io io;
		memio_init(&m, &io);
		struct usedmap want;
		cr_assert_eq(usedmap_take(vol, &want), 0);
		cr_assert_eq(bga_store(vol, &io), 0);
		uint64_t free_before = bga_free_exact(vol);
		struct bga_volume *back = load_expect(&io, 0, &want);
		cr_assert_eq(bga_free_exact(back), free_before);
		struct bga_config c1, c2;
		bga_volume_config(vol, &c1);
		bga_volume_config(back, &c2);
		cr_assert_eq(c1.nblocks, c2.nblocks);
		cr_assert_eq(c1.blocks_per_group, c2.blocks_per_group);
		cr_assert_eq(c1.first_data_block, c2.first_data_block);
		/* again, after more changes: the second store is incremental */
		churn(vol, &r, 100, bpg, ext, 512, &n);
		usedmap_free(&want);
		cr_assert_eq(usedmap_take(vol, &want), 0);
		cr_assert_eq(bga_store(vol, &io), 0);
		bga_destroy(back);
		back = load_expect(&io, 0, &want);
		/* the loaded volume stores and loads too, into the same area */
		churn(back, &r, 50, bpg, ext, 512, &n);
		usedmap_free(&want);
		cr_assert_eq(usedmap_take(back, &want), 0);
		cr_assert_eq(bga_store(back, &io), 0);
		struct bga_volume *third = load_expect(&io, 0, &want);
		bga_destroy(third);
		bga_destroy(back);
		usedmap_free(&want);
		memio_free(&m);
		bga_destroy(vol);
	}
}

Test(persist, windows_free_deferred_allocated)
{
	struct bga_volume *vol = make_volume(1 << 16, 1024, 0);
	struct bga_rsv *rsv;
	cr_assert_eq(bga_rsv_open(vol, &rsv), 0);
	cr_assert_eq(bga_rsv_set_size(rsv, 64), 0);
	struct bga_request req = {.goal = 5000, .min_len = 1, .max_len = 1, .rsv = rsv};
	struct bga_extent e, d;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0); /* books a window of 64 around it */
	struct bga_request req2 = {.goal = 20000, .min_len = 10, .max_len = 10, .flags = BGA_EXACT_GOAL};
	cr_assert_eq(bga_alloc(vol, &req2, &d), 0);
	cr_assert_eq(bga_free_deferred(vol, d.start, d.len, 7), 0);
	struct memio m;
	struct bga_io io;
	struct bga_volume *back = store_and_load(vol, &m, &io);
	/* the window's unused blocks are free, the one taken is not */
	struct bga_request ex = {.goal = e.start + 1, .min_len = 1, .max_len = 1, .flags = BGA_EXACT_GOAL};
	struct bga_extent x;
	cr_assert_eq(bga_alloc(back, &ex, &x), 0, "a window's unused block must be stored free");
	cr_assert_eq(bga_free(back, e.start, 1), 0, "the window's allocated block must be stored allocated");
	/* the deferred blocks are allocated after the load */
	cr_assert_eq(bga_free(back, d.start, d.len), 0, "blocks waiting on a deferred free must be stored allocated");
	cr_assert_eq(bga_free_exact(back), (1 << 16) - 1);
	bga_destroy(back);
	bga_rsv_close(rsv);
	bga_destroy(vol);
	memio_free(&m);
}

Test(persist, config_must_agree)
{
	struct bga_volume *vol = make_volume(100000, 2048, 5);
	struct memio m;
	struct bga_io io;
	memio_init(&m, &io);
	cr_assert_eq(bga_store(vol, &io), 0);
	struct bga_config cfg;
	bga_config_init(&cfg, 100000);
	cfg.blocks_per_group = 2048;
	cfg.first_data_block = 5;
	cfg.rsv_default = 16;
	cfg.rsv_max = 256;
	struct bga_volume *back;
	cr_assert_eq(bga_load(&io, &cfg, &back), 0);
	struct bga_config got;
	bga_volume_config(back, &got);
	cr_assert_eq(got.rsv_max, 256, "the caller's tuning applies");
	bga_destroy(back);
	cfg.nblocks = 100001;
	cr_assert_eq(bga_load(&io, &cfg, &back), -EINVAL);
	cfg.nblocks = 100000;
	cfg.blocks_per_group = 1024;
	cr_assert_eq(bga_load(&io, &cfg, &back), -EINVAL);
	cfg.blocks_per_group = 2048;
	cfg.first_data_block = 0;
	cr_assert_eq(bga_load(&io, &cfg, &back), -EINVAL);
	bga_destroy(vol);
	memio_free(&m);
}

Test(persist, empty_area_and_bad_arguments)
{
	struct memio m;
	struct bga_io io;
	memio_init(&m, &io);
	struct bga_volume *vol;
	cr_assert_eq(bga_load(&io, NULL, &vol), -ENODATA, "an area no store completed");
	cr_assert_eq(bga_load(NULL, NULL, &vol), -EINVAL);
	cr_assert_eq(bga_load(&io, NULL, NULL), -EINVAL);
	cr_assert_eq(bga_load_ex(&io, NULL, 1u << 7, &vol), -EINVAL);
	cr_assert_eq(bga_store(NULL, &io), -EINVAL);
	struct bga_io bad = io;
	bad.flush = NULL;
	vol = make_volume(4096, 64, 0);
	cr_assert_eq(bga_store(vol, &bad), -EINVAL);
	cr_assert_eq(bga_store(vol, NULL), -EINVAL);
	uint64_t bytes;
	struct bga_config cfg;
	bga_config_init(&cfg, 0);
	cr_assert_eq(bga_metadata_size(&cfg, &bytes), -EINVAL);
	cr_assert_eq(bga_metadata_size(NULL, &bytes), -EINVAL);
	bga_config_init(&cfg, 4096);
	cfg.blocks_per_group = 64;
	cr_assert_eq(bga_metadata_size(&cfg, &bytes), 0);
	cr_assert_eq(bga_store(vol, &io), 0);
	cr_assert_leq(m.size, bytes, "the store wrote past bga_metadata_size");
	bga_destroy(vol);
	memio_free(&m);
}

Test(persist, metadata_size_bounds_every_store)
{
	struct rng r = {12345};
	for (int i = 0; i < 30 / PERSIST_SLOW + 1; i++) {
		uint32_t bpg = 64u << below(&r, 8);
		uint64_t nblocks = 1 + below(&r, 64 * (uint64_t)bpg);
		struct bga_volume *vol = make_volume(nblocks, bpg, 0);
		struct bga_extent ext[64];
		size_t n = 0;
		churn(vol, &r, 60, bpg, ext, 64, &n);
		struct bga_config cfg;
		bga_volume_config(vol, &cfg);
		uint64_t bytes;
		cr_assert_eq(bga_metadata_size(&cfg, &bytes), 0);
		struct memio m;
		struct bga_io io;
		memio_init(&m, &io);
		cr_assert_eq(bga_store(vol, &io), 0);
		cr_assert_leq(m.size, bytes);
		memio_free(&m);
		bga_destroy(vol);
	}
}

/* A failing write or flush: the store returns it, and the area still loads
 * to the previous completed store. */
Test(persist, callback_errors_keep_previous_state)
{
	struct rng r = {777};
	struct bga_volume *vol = make_volume(1 << 15, 512, 0);
	struct bga_extent ext[256];
	size_t n = 0;
	churn(vol, &r, 200, 64, ext, 256, &n);
	struct memio m;
	struct bga_io io;
	struct usedmap old;
	store_fresh(vol, &m, &io, &old);
	for (long k = 0; k < 12; k++) {
		churn(vol, &r, 20, 64, ext, 256, &n);
		m.writes = 0;
		m.fail_write = k;
		int rc = bga_store(vol, &io);
		m.fail_write = -1;
		if (rc == 0)
			break; /* fewer than k writes: nothing failed */
		cr_assert_eq(rc, -EIO);
		struct bga_volume *back = load_expect(&io, 0, &old);
		bga_destroy(back);
	}
	m.flushes = 0;
	m.fail_flush = 0;
	cr_assert_eq(bga_store(vol, &io), -EIO);
	m.fail_flush = -1;
	struct bga_volume *back = load_expect(&io, 0, &old);
	bga_destroy(back);
	/* and a later store succeeds and holds the latest state */
	struct usedmap now;
	cr_assert_eq(usedmap_take(vol, &now), 0);
	cr_assert_eq(bga_store(vol, &io), 0);
	back = load_expect(&io, 0, &now);
	bga_destroy(back);
	usedmap_free(&now);
	usedmap_free(&old);
	memio_free(&m);
	bga_destroy(vol);
}

Test(persist, file_io_round_trip)
{
	char path[] = "/tmp/bga-persist-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	struct bga_volume *vol = make_volume(1 << 18, 4096, 1);
	struct rng r = {4242};
	struct bga_extent ext[128];
	size_t n = 0;
	churn(vol, &r, 100, 500, ext, 128, &n);
	struct bga_io io;
	cr_assert_eq(bga_io_file_open(path, 8192, 0, &io), 0);
	cr_assert_eq(bga_store(vol, &io), 0);
	bga_io_file_close(&io);
	cr_assert_null(io.ctx);
	struct usedmap want;
	cr_assert_eq(usedmap_take(vol, &want), 0);
	cr_assert_eq(bga_io_file_open(path, 8192, 0, &io), 0);
	struct bga_volume *back = load_expect(&io, 0, &want);
	bga_destroy(back);
	bga_io_file_close(&io);
	cr_assert_eq(bga_io_file_open("/nonexistent-dir/x", 0, 1, &io), -ENOENT);
	cr_assert_eq(bga_io_file_open(NULL, 0, 1, &io), -EINVAL);
	unlink(path);
	usedmap_free(&want);
	bga_destroy(vol);
}

/* ---- lazy loading ---- */

#include "persist_format.h"
#include "group.h" /* to see which chunks a lazy load installed */
_Static_assert(TEST_CHUNK_GROUPS == BGA_CHUNK_GROUPS, "testutil.h names the chunk size");

/* The area bytes before group g0's unit. */
static uint64_t bga_pf_area_bytes_for_test(uint32_t bpg, uint64_t g0)
{
	return bga_pf_desc_off(bpg, g0);
}

static bool chunk_present(struct bga_volume *vol, uint64_t c)
{
	return bga__chunk_get(vol, c) != NULL;
}

struct failio {
	struct memio *m;
	uint64_t fail_from; /* reads at or past this offset fail */
};

static int failio_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct failio *f = ctx;
	return off >= f->fail_from ? -EIO : memio_read(f->m, buf, len, off);
}

/* Three chunks (BGA_CHUNK_GROUPS groups each) of 64-block groups, each with a few used blocks:
 * none of them is built by bga_create, so a load leaves all three to
 * their first touch. */
static struct bga_volume *three_chunks(struct memio *m, struct bga_io *io, struct usedmap *want)
{
	struct bga_volume *vol = make_volume(UINT64_C(64) * BGA_CHUNK_GROUPS * 3, 64, 0);
	for (uint64_t c = 0; c < 3; c++)
		for (uint64_t k = 0; k < 5; k++) {
			uint64_t b = c * 64 * BGA_CHUNK_GROUPS + k * 64 * (BGA_CHUNK_GROUPS / 6) + 3;
			struct bga_request req = {.goal = b, .min_len = 2, .max_len = 2, .flags = BGA_EXACT_GOAL};
			struct bga_extent e;
			cr_assert_eq(bga_alloc(vol, &req, &e), 0);
		}
	memio_init(m, io);
	cr_assert_eq(bga_store(vol, io), 0);
	cr_assert_eq(usedmap_take(vol, want), 0);
	return vol;
}

Test(persist_lazy, chunks_read_on_first_touch)
{
	struct memio m;
	struct bga_io io;
	struct usedmap want;
	struct bga_volume *vol = three_chunks(&m, &io, &want), *back;
	uint64_t free_before = bga_free_exact(vol);
	cr_assert_eq(bga_load(&io, NULL, &back), 0);
	for (uint64_t c = 0; c < 3; c++)
		cr_assert(!chunk_present(back, c), "chunk %llu read at load", (unsigned long long)c);
	cr_assert_eq(bga_free_exact(back), free_before, "free count exact before any bitmap is read");
	/* a free into an unread chunk reads it first */
	uint64_t b1 = 64 * BGA_CHUNK_GROUPS + 3;
	cr_assert_eq(bga_free(back, b1, 2), 0);
	cr_assert(chunk_present(back, 1));
	cr_assert(!chunk_present(back, 2));
	cr_assert_eq(bga_free(back, b1, 2), -EINVAL, "now free: a second free is a double free");
	/* an exact allocation in an unread chunk sees its used blocks */
	struct bga_request req = {.goal = 2 * 64 * BGA_CHUNK_GROUPS + 3, .min_len = 1, .max_len = 1, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(back, &req, &e), -ENOSPC);
	cr_assert(chunk_present(back, 2));
	cr_assert(!chunk_present(back, 0));
	cr_assert_eq(bga_alloc(back, &(struct bga_request){.goal = b1, .min_len = 2, .max_len = 2,
							 .flags = BGA_EXACT_GOAL}, &e), 0);
	/* the walks read everything first */
	struct usedmap got;
	cr_assert_eq(usedmap_take(back, &got), 0);
	cr_assert(usedmap_equal(&got, &want));
	cr_assert(chunk_present(back, 0));
	assert_clean(back);
	usedmap_free(&got);
	bga_destroy(back);
	usedmap_free(&want);
	memio_free(&m);
	bga_destroy(vol);
}

Test(persist_lazy, store_after_lazy_load_and_prefetch)
{
	struct memio m;
	struct bga_io io;
	struct usedmap want;
	struct bga_volume *vol = three_chunks(&m, &io, &want), *back, *again;
	cr_assert_eq(bga_load(&io, NULL, &back), 0);
	/* nothing changed: the store writes only its superblock */
	uint64_t before = m.bytes_written;
	cr_assert_eq(bga_store(back, &io), 0);
	cr_assert_eq(m.bytes_written - before, 512, "an unchanged volume stores one sector");
	cr_assert_eq(bga_load(&io, NULL, &again), 0);
	cr_assert_eq(bga_prefetch(again), 0);
	for (uint64_t c = 0; c < 3; c++)
		cr_assert(chunk_present(again, c));
	struct usedmap got;
	cr_assert_eq(usedmap_take(again, &got), 0);
	cr_assert(usedmap_equal(&got, &want));
	usedmap_free(&got);
	bga_destroy(again);
	/* a store to another area formats it from everything, read first */
	struct memio m2;
	struct bga_io io2;
	memio_init(&m2, &io2);
	cr_assert_eq(bga_store(back, &io2), 0);
	bga_destroy(back);
	back = load_expect(&io2, 0, &want);
	bga_destroy(back);
	/* the background prefetch, and a destroy while it may still run */
	cr_assert_eq(bga_load_ex(&io, NULL, BGA_LOAD_PREFETCH, &back), 0);
	bga_destroy(back);
	cr_assert_eq(bga_load_ex(&io, NULL, BGA_LOAD_PREFETCH, &back), 0);
	cr_assert_eq(bga_prefetch(back), 0);
	cr_assert(chunk_present(back, 2));
	bga_destroy(back);
	memio_free(&m2);
	usedmap_free(&want);
	memio_free(&m);
	bga_destroy(vol);
}

Test(persist_lazy, read_error_quarantines)
{
	struct memio m;
	struct bga_io io;
	struct usedmap want;
	struct bga_volume *vol = three_chunks(&m, &io, &want), *back;
	struct failio f = {&m, UINT64_MAX};
	struct bga_io fio = {&f, failio_read, memio_write, memio_flush};
	cr_assert_eq(bga_load(&fio, NULL, &back), 0);
	uint64_t free_before = bga_free_exact(back);
	f.fail_from = bga_pf_area_bytes_for_test(64, BGA_CHUNK_GROUPS); /* chunk 1 and on */
	cr_assert_eq(bga_prefetch(back), -EIO);
	struct bga_stats st;
	cr_assert_eq(bga_stats(back, &st), 0);
	cr_assert_eq(st.groups_quarantined, 10, "the groups of chunks 1 and 2 with bitmaps");
	cr_assert_lt(bga_free_exact(back), free_before);
	cr_assert_eq(bga_free(back, 64 * BGA_CHUNK_GROUPS + 3, 2), -EUCLEAN);
	cr_assert_eq(bga_free(back, 3, 2), 0, "chunk 0 read fine");
	bga_destroy(back);
	cr_assert_eq(bga_load_ex(&io, NULL, BGA_LOAD_STRICT, &back), 0, "strict, no damage");
	bga_destroy(back);
	f.fail_from = bga_pf_area_bytes_for_test(64, BGA_CHUNK_GROUPS);
	cr_assert_eq(bga_load_ex(&fio, NULL, BGA_LOAD_STRICT, &back), -EIO, "strict reads everything at load");
	usedmap_free(&want);
	memio_free(&m);
	bga_destroy(vol);
}

/* A descriptor whose free count disagrees with its valid bitmap (made
 * consistent otherwise: its checksum and the superblock's digest redone):
 * the load recomputes the count from the bitmap and says so. */
Test(persist, free_count_repaired_from_the_bitmap)
{
	struct bga_volume *vol = make_volume(64 * 8, 64, 0);
	struct bga_request req = {.goal = 70, .min_len = 5, .max_len = 5, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0); /* group 1: 59 free */
	struct memio m;
	struct bga_io io;
	struct usedmap want;
	store_fresh(vol, &m, &io, &want);
	/* the superblock in force, and group 1's record in force */
	unsigned char *sb = NULL;
	for (int s = 0; s < 2; s++)
		if (memcmp(m.buf + 512 * s, BGA_PF_MAGIC, 8) == 0)
			sb = m.buf + 512 * s;
	cr_assert_not_null(sb);
	uint64_t uuid = bga_pf_get64(sb + BGA_SB_UUID);
	unsigned char *d = NULL;
	for (int s = 0; s < 2; s++) {
		unsigned char *x = m.buf + bga_pf_desc_off(64, 1) + 64 + 32 * s;
		if (bga_pf_get64(x + BGA_DESC_GEN) != 0 && bga_pf_get32(x + BGA_DESC_FLAGS) == BGA_DF_BITMAP)
			d = x;
	}
	cr_assert_not_null(d);
	unsigned slot = (unsigned)((d - (m.buf + bga_pf_desc_off(64, 1) + 64)) / 32);
	uint64_t gen = bga_pf_get64(d + BGA_DESC_GEN);
	uint32_t bmcrc = bga_pf_get32(d + BGA_DESC_BMCRC);
	cr_assert_eq(bga_pf_get32(d + BGA_DESC_FREE), 59);
	uint64_t digest = bga_pf_get64(sb + BGA_SB_DIGEST);
	digest -= bga_pf_digest(1, gen, 59, BGA_DF_BITMAP, bmcrc, slot);
	digest += bga_pf_digest(1, gen, 40, BGA_DF_BITMAP, bmcrc, slot);
	bga_pf_put32(d + BGA_DESC_FREE, 40);
	bga_pf_put32(d + BGA_DESC_CRC, bga_pf_desc_crc(uuid, d));
	bga_pf_put64(sb + BGA_SB_DIGEST, digest);
	bga_pf_put32(sb + BGA_SB_CRC, bga_pf_crc(sb, BGA_SB_CRC));
	struct bga_volume *back = load_expect(&io, 0, &want);
	struct bga_stats st;
	cr_assert_eq(bga_stats(back, &st), 0);
	cr_assert_eq(st.groups_repaired, 1);
	cr_assert_eq(st.groups_quarantined, 0);
	cr_assert_eq(bga_free_exact(back), 64 * 8 - 5, "the count comes from the bitmap");
	/* the next store writes the group again: the repair is not needed twice */
	cr_assert_eq(bga_store(back, &io), 0);
	bga_destroy(back);
	back = load_expect(&io, 0, &want);
	cr_assert_eq(bga_stats(back, &st), 0);
	cr_assert_eq(st.groups_repaired, 0);
	bga_destroy(back);
	usedmap_free(&want);
	memio_free(&m);
	bga_destroy(vol);
}

/* ---- promises across a lazy read and a trim's discard ---- */

/*
 * Two chunks of 64-block groups, stored, with chunk 1's first group
 * damaged in one of two ways, and loaded lazily: chunk 1 is not read
 * until touched.  Whatever bga_reserve promised before the read
 * must still be there after it.
 */
static void reserve_across_a_damaging_read(bool quarantine)
{
	enum { BPG = 64 };
	const uint64_t g = TEST_CHUNK_GROUPS, b = g * BPG;
	struct bga_volume *vol = make_volume(UINT64_C(2) * TEST_CHUNK_GROUPS * BPG, BPG, 0), *back;
	struct memio m;
	struct bga_io io;
	struct bga_extent e;
	take(vol, 3, 2);
	take(vol, b + 3, 2);
	memio_init(&m, &io);
	cr_assert_eq(bga_store(vol, &io), 0);
	uint64_t uuid = bga_pf_get64(sb_in_force(&m) + BGA_SB_UUID);
	struct bga_pgroup r;
	desc_slot_in_force(&m, BPG, g, uuid, &r);
	cr_assert_eq(r.free, BPG - 2);
	if (quarantine) {
		m.buf[bga_pf_bitmap_off(BPG, g, r.slot) + 4] ^= 0x10; /* its descriptor stays valid */
	} else {
		struct bga_pgroup more = r;
		more.free = BPG; /* the bitmap, which is sound, says 62 */
		desc_rewrite(&m, BPG, g, &r, &more);
	}
	cr_assert_eq(bga_load(&io, NULL, &back), 0);
	uint64_t f = bga_free_exact(back);
	int rc = bga_reserve(back, f);
	cr_assert(rc == 0 || rc == -ENOSPC, "%d", rc);
	struct bga_stats st;
	cr_assert_eq(bga_stats(back, &st), 0); /* reads chunk 1 */
	cr_assert_eq(st.groups_quarantined, quarantine ? 1 : 0);
	cr_assert_eq(st.groups_repaired, quarantine ? 0 : 1);
	cr_assert_leq(bga_reserved(back), bga_free_exact(back), "reserved %llu, free %llu",
		      (unsigned long long)bga_reserved(back), (unsigned long long)bga_free_exact(back));
	if (rc == -ENOSPC)
		cr_assert_eq(bga_reserve(back, bga_free_exact(back)), 0, "all that is free now can be promised");
	/* every promised block can be drawn */
	for (uint64_t left; (left = bga_reserved(back)) != 0;) {
		rc = alloc_at(back, BGA_NO_GOAL, 1, BPG, NULL, BGA_USE_RESERVED, &e);
		cr_assert_eq(rc, 0, "a draw on a promise of %llu: %d", (unsigned long long)left, rc);
	}
	cr_assert_eq(bga_free_exact(back), 0);
	if (quarantine)
		assert_only_quarantine(back, 1, g);
	else
		assert_clean(back);
	bga_destroy(back);
	memio_free(&m);
	bga_destroy(vol);
}

Test(reserve, kept_when_a_lazy_read_quarantines_a_group)
{
	reserve_across_a_damaging_read(true);
}

Test(reserve, kept_when_a_lazy_read_repairs_a_count_downwards)
{
	reserve_across_a_damaging_read(false);
}

/* The other half of the rule: space not read yet is promised once it is,
 * so neither a reservation nor an allocation that needs it fails. */
Test(reserve, unread_space_is_read_when_a_promise_needs_it)
{
	enum { BPG = 64 };
	const uint64_t n = UINT64_C(2) * TEST_CHUNK_GROUPS * BPG, b = TEST_CHUNK_GROUPS * BPG;
	struct bga_volume *vol = make_volume(n, BPG, 0), *back;
	struct memio m;
	struct bga_io io;
	struct bga_extent e;
	take(vol, 3, 2);
	take(vol, b + 3, 2);
	memio_init(&m, &io);
	cr_assert_eq(bga_store(vol, &io), 0);
	cr_assert_eq(bga_load(&io, NULL, &back), 0);
	cr_assert_eq(bga_free_exact(back), n - 4, "unread chunks count as free");
	cr_assert_eq(bga_free(back, 3, 2), 0, "reads chunk 0 only");
	cr_assert_eq(bga_reserve(back, b), 0, "all of chunk 0");
	cr_assert_eq(alloc_at(back, 0, 1, 1, NULL, 0, &e), 0, "chunk 1's space, read for it");
	cr_assert_eq(bga_reserve(back, b - 3), 0, "the rest");
	cr_assert_eq(bga_free_exact(back), b - 3 + b, "reserved blocks are free");
	cr_assert_eq(alloc_at(back, 0, 1, 1, NULL, 0, &e), -ENOSPC, "all promised");
	assert_clean(back);
	bga_destroy(back);
	memio_free(&m);
	bga_destroy(vol);
}

/*
 * Four groups of 64: a few extents in groups 0 and 1, groups 2 and 3
 * untouched (a trim claims them whole, with no bitmap).  A store runs
 * while the trim's first discard is under way, from the discard itself
 * or from another thread the discard waits for; the image must hold
 * exactly the blocks callers hold: the trim's claims are stored free.
 */
struct store_in_discard {
	struct bga_volume *vol;
	struct bga_io io;
	bool other_thread;
	int calls, store_rc;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int phase; /* 1: store asked, 2: store done */
};

static void *store_thread(void *arg)
{
	struct store_in_discard *t = arg;
	pthread_mutex_lock(&t->mu);
	while (t->phase != 1)
		pthread_cond_wait(&t->cv, &t->mu);
	pthread_mutex_unlock(&t->mu);
	int rc = bga_store(t->vol, &t->io);
	pthread_mutex_lock(&t->mu);
	t->store_rc = rc;
	t->phase = 2;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

static int discard_and_store(void *ctx, uint64_t start, uint64_t len)
{
	(void)start;
	(void)len;
	struct store_in_discard *t = ctx;
	if (t->calls++ != 0)
		return 0;
	if (!t->other_thread) {
		t->store_rc = bga_store(t->vol, &t->io);
		return 0;
	}
	pthread_mutex_lock(&t->mu);
	t->phase = 1;
	pthread_cond_broadcast(&t->cv);
	while (t->phase != 2)
		pthread_cond_wait(&t->cv, &t->mu);
	pthread_mutex_unlock(&t->mu);
	return 0;
}

static void store_during_a_discard(bool other_thread)
{
	enum { BPG = 64 };
	struct bga_volume *vol = make_volume(4 * BPG, BPG, 0), *back;
	struct memio m;
	struct store_in_discard t = {.vol = vol, .other_thread = other_thread};
	pthread_mutex_init(&t.mu, NULL);
	pthread_cond_init(&t.cv, NULL);
	take(vol, 0, 10);
	take(vol, 20, 5);
	take(vol, 40, 20);
	take(vol, 64, 10);
	take(vol, 100, 1);
	struct usedmap want, got;
	cr_assert_eq(usedmap_take(vol, &want), 0);
	memio_init(&m, &t.io);
	pthread_t th;
	if (other_thread)
		cr_assert_eq(pthread_create(&th, NULL, store_thread, &t), 0);
	uint64_t trimmed = 0;
	cr_assert_eq(bga_trim(vol, 0, 4 * BPG, 1, discard_and_store, &t, &trimmed), 0);
	if (other_thread)
		pthread_join(th, NULL);
	cr_assert_eq(t.store_rc, 0);
	cr_assert_eq(trimmed, 4 * BPG - 46);
	cr_assert_eq(bga_load(&t.io, NULL, &back), 0);
	assert_clean(back);
	cr_assert_eq(bga_free_exact(back), 4 * BPG - 46, "the image holds %llu free, callers hold 46 blocks",
		     (unsigned long long)bga_free_exact(back));
	cr_assert_eq(usedmap_take(back, &got), 0);
	cr_assert(usedmap_equal(&got, &want), "the image is not what callers held");
	/* the trim gave its claims back: the next store changes nothing */
	cr_assert_eq(bga_store(vol, &t.io), 0);
	bga_destroy(back);
	cr_assert_eq(bga_load(&t.io, NULL, &back), 0);
	usedmap_free(&got);
	cr_assert_eq(usedmap_take(back, &got), 0);
	cr_assert(usedmap_equal(&got, &want));
	assert_clean(back);
	bga_destroy(back);
	usedmap_free(&got);
	usedmap_free(&want);
	memio_free(&m);
	bga_destroy(vol);
	pthread_cond_destroy(&t.cv);
	pthread_mutex_destroy(&t.mu);
}

Test(trim, a_store_from_the_discard_writes_its_claims_free)
{
	store_during_a_discard(false);
}

Test(trim, a_store_from_another_thread_during_the_discard_writes_its_claims_free)
{
	store_during_a_discard(true);
}

/* ---- the store's tag ---- */

static struct bga_volume *load(struct bga_io *io)
{
	struct bga_volume *vol;
	cr_assert_eq(bga_load(io, NULL, &vol), 0);
	return vol;
}

static uint64_t tag_of(const struct bga_volume *vol)
{
	uint64_t t = 12345;
	cr_assert_eq(bga_volume_tag(vol, &t), 0);
	return t;
}

/* The tag of the volume io holds, loaded. */
static uint64_t loaded_tag(struct bga_io *io)
{
	struct bga_volume *v = load(io);
	uint64_t t = tag_of(v);
	bga_destroy(v);
	return t;
}

Test(tag, stored_loaded_and_kept)
{
	struct memio m;
	struct bga_io io;
	memio_init(&m, &io);
	struct bga_volume *vol = make_volume(2048, 256, 0);
	cr_expect_eq(tag_of(vol), 0, "a created volume's tag");
	cr_assert_eq(bga_store(vol, &io), 0);
	cr_expect_eq(loaded_tag(&io), 0, "an image stored without a tag");

	cr_assert_eq(bga_claim(vol, 5, 5), 0);
	cr_assert_eq(bga_store_tagged(vol, &io, UINT64_C(0xfeedface00000042)), 0);
	cr_expect_eq(tag_of(vol), UINT64_C(0xfeedface00000042));
	struct bga_volume *v2 = load(&io);
	cr_expect_eq(tag_of(v2), UINT64_C(0xfeedface00000042));
	cr_expect_eq(bga_claim(v2, 5, 1), -EBUSY, "the tagged store holds the state too");
	/* a plain store keeps the tag, on the volume and on the loaded one */
	cr_assert_eq(bga_claim(v2, 100, 1), 0);
	cr_assert_eq(bga_store(v2, &io), 0);
	bga_destroy(v2);
	v2 = load(&io);
	cr_expect_eq(tag_of(v2), UINT64_C(0xfeedface00000042));
	cr_assert_eq(bga_store_tagged(v2, &io, 43), 0);
	bga_destroy(v2);
	cr_expect_eq(loaded_tag(&io), 43);
	bga_destroy(vol);
	memio_free(&m);
}

/* A store that fails leaves the previous image, and its tag, in force. */
Test(tag, failed_store_keeps_the_previous_tag)
{
	struct memio m;
	struct bga_io io;
	memio_init(&m, &io);
	struct bga_volume *vol = make_volume(2048, 256, 0);
	cr_assert_eq(bga_store_tagged(vol, &io, 7), 0);
	cr_assert_eq(bga_claim(vol, 300, 3), 0);
	long w = m.writes;
	m.fail_write = w + 1; /* the incremental store writes a unit, then the superblock */
	cr_assert_eq(bga_store_tagged(vol, &io, 8), -EIO);
	cr_expect_eq(tag_of(vol), 7);
	m.fail_write = -1;
	struct bga_volume *v2 = load(&io);
	cr_expect_eq(tag_of(v2), 7);
	cr_expect_eq(bga_claim(v2, 300, 3), 0, "the failed store's state was loaded");
	bga_destroy(v2);
	cr_assert_eq(bga_store_tagged(vol, &io, 9), 0);
	cr_expect_eq(loaded_tag(&io), 9);
	bga_destroy(vol);
	memio_free(&m);
}

/* An image from before the tag existed holds zeros where it lives
 * (docs/FORMAT.md, superblock byte 128): it loads, with tag 0.  Made here
 * by zeroing the field of a tagged image and sealing the superblock's
 * checksum again, as a 0.2 library wrote it. */
Test(tag, image_from_before_the_field_loads_with_tag_0)
{
	struct memio m;
	struct bga_io io;
	memio_init(&m, &io);
	struct bga_volume *vol = make_volume(2048, 256, 0);
	cr_assert_eq(bga_claim(vol, 9, 9), 0);
	cr_assert_eq(bga_store_tagged(vol, &io, 0x0102030405060708ull), 0);
	bga_destroy(vol);
	int found = 0;
	for (int slot = 0; slot < 2; slot++) {
		unsigned char *sb = m.buf + 512 * slot;
		if (memcmp(sb, "BGALLOC\x01", 8) != 0)
			continue;
		found++;
		cr_expect_eq(sb[128], 0x08, "the tag's low byte is not at byte 128");
		memset(sb + 128, 0, 8);
		/* crc32c of [0, 508), little-endian at 508 */
		uint32_t c = ~0u;
		for (int i = 0; i < 508; i++) {
			c ^= sb[i];
			for (int k = 0; k < 8; k++)
				c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
		}
		c = ~c;
		for (int i = 0; i < 4; i++)
			sb[508 + i] = (unsigned char)(c >> (8 * i));
	}
	cr_assert_eq(found, 1);
	vol = load(&io);
	cr_expect_eq(tag_of(vol), 0);
	cr_expect_eq(bga_claim(vol, 9, 1), -EBUSY);
	bga_destroy(vol);
	memio_free(&m);
}

