/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The crash simulation, and single-bit damage.
 *
 * Crash: a store is recorded write by write (tests/support/memio.h).  For every
 * cut point k, the area holds the previous image plus the first k writes;
 * and for random cut points, the writes since the last flush before the
 * cut land as a random subset of their 512-byte sectors in a random order
 * (torn writes, lost writes, reordering: the model of struct bga_io).
 * Every such area must load to exactly the state of the previous
 * completed store or exactly the state of this one.  Over many random
 * volumes, with incremental, full and post-grow stores, and stores that
 * follow a failed store (whose uncommitted slots are on disk).
 *
 * Bits: every single-bit flip of a small stored image either fails the
 * load with -EUCLEAN, or quarantines a group, or loads the stored state.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "memio.h"
#include "persist_util.h"
#include "testutil.h"

#define SECTOR 512

/* ctest runs a sample; BGA_PERSIST_FULL=1 runs the figures of issue 11
 * (every bit, and 10,000+ torn crashes): see docs/TESTING.md#persistence-crashes-and-bit-flips. */
static bool full_run(void)
{
	const char *e = getenv("BGA_PERSIST_FULL");
	return e && *e && *e != '0';
}

/* The bytes a load reads, marked in `seen`. */
struct trackio {
	struct constio c;
	unsigned char *seen;
};

static int trackio_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct trackio *t = ctx;
	for (size_t i = 0; i < len && off + i < t->c.size; i++)
		t->seen[off + i] = 1;
	return constio_read(&t->c, buf, len, off);
}

/* Load the bytes img[0, size); 0 with *u set, or the load's error. */
static int load_bytes(const unsigned char *img, size_t size, struct usedmap *u, uint64_t *quarantined)
{
	struct constio c = {img, size};
	struct bga_io io = {&c, constio_read, constio_write, constio_flush};
	struct bga_volume *vol;
	int rc = bga_load(&io, NULL, &vol);
	if (rc)
		return rc;
	struct bga_check_report r;
	struct bga_stats st;
	cr_assert_eq(bga_stats(vol, &st), 0);
	*quarantined = st.groups_quarantined;
	int crc = bga_check(vol, &r);
	cr_assert(crc == 0 || st.groups_quarantined > 0, "loaded volume not clean: %s", r.message);
	if (u)
		cr_assert_eq(usedmap_take(vol, u), 0);
	bga_destroy(vol);
	return 0;
}

struct image {
	unsigned char *b;
	size_t size;
};

static void image_copy(struct image *dst, const unsigned char *b, size_t size, size_t cap)
{
	dst->size = cap > size ? cap : size;
	dst->b = calloc(1, dst->size);
	cr_assert_not_null(dst->b);
	memcpy(dst->b, b, size);
}

static void apply(struct image *img, uint64_t off, const unsigned char *data, size_t len)
{
	cr_assert_leq(off + len, img->size);
	memcpy(img->b + off, data, len);
}

/* The area after a crash: pre + events [0, cut) landed whole up to the
 * last flush before cut, then, with torn, each sector of the writes since
 * that flush landing or not, in a random order. */
static void crash_image(const struct image *pre, const struct memio *m, size_t cut, bool torn, struct rng *r,
			struct image *out)
{
	image_copy(out, pre->b, pre->size, m->size);
	size_t last_flush = 0; /* events before it are durable */
	for (size_t i = 0; i < cut; i++)
		if (m->log[i].data == NULL)
			last_flush = i + 1;
	for (size_t i = 0; i < (torn ? last_flush : cut); i++)
		if (m->log[i].data)
			apply(out, m->log[i].off, m->log[i].data, m->log[i].len);
	if (!torn)
		return;
	/* the sectors of the open epoch, shuffled, each kept with p = 1/2 */
	size_t n = 0;
	for (size_t i = last_flush; i < cut; i++)
		n += (m->log[i].len + SECTOR - 1) / SECTOR;
	struct {
		size_t ev;
		size_t at;
	} *sec = malloc((n ? n : 1) * sizeof(*sec));
	cr_assert_not_null(sec);
	n = 0;
	for (size_t i = last_flush; i < cut; i++)
		for (size_t at = 0; at < m->log[i].len; at += SECTOR) {
			sec[n].ev = i;
			sec[n].at = at;
			n++;
		}
	for (size_t i = n; i > 1; i--) {
		size_t j = below(r, i);
		__typeof__(*sec) t = sec[i - 1];
		sec[i - 1] = sec[j];
		sec[j] = t;
	}
	uint64_t keep = rnd(r);
	int mode = (int)below(r, 3); /* 0: each with p 1/2, 1: all but one, 2: a prefix of the shuffle */
	size_t drop = n ? below(r, n) : 0, prefix = n ? below(r, n + 1) : 0;
	for (size_t k = 0; k < n; k++) {
		bool land = mode == 0 ? (k < 64 ? (keep >> k) & 1 : below(r, 2)) : mode == 1 ? k != drop : k < prefix;
		if (!land)
			continue;
		const struct memio_ev *e = &m->log[sec[k].ev];
		size_t len = e->len - sec[k].at < SECTOR ? e->len - sec[k].at : SECTOR;
		apply(out, e->off + sec[k].at, e->data + sec[k].at, len);
	}
	free(sec);
}

static void expect_old_or_new(const struct image *img, const struct usedmap *old, const struct usedmap *new,
			      const char *what, size_t cut)
{
	struct usedmap got;
	uint64_t q = 0;
	int rc = load_bytes(img->b, img->size, &got, &q);
	cr_assert_eq(rc, 0, "%s cut %zu: load failed: %s", what, cut, bga_strerror(rc));
	cr_assert_eq(q, 0, "%s cut %zu: a crash quarantined %llu groups", what, cut, (unsigned long long)q);
	cr_assert(usedmap_equal(&got, old) || usedmap_equal(&got, new),
		  "%s cut %zu: the load gave neither the old nor the new state", what, cut);
	usedmap_free(&got);
}

static struct bga_volume *make(struct rng *r, uint32_t *bpg_out)
{
	static const uint32_t bpgs[] = {64, 512, 4096, 8192, 16384};
	uint32_t bpg = bpgs[below(r, 5)];
	uint64_t nblocks = bpg * (2 + below(r, 30)) + below(r, bpg);
	struct bga_config cfg;
	bga_config_init(&cfg, nblocks);
	cfg.blocks_per_group = bpg;
	cfg.first_data_block = below(r, 2) ? below(r, bpg < 100 ? bpg : 100) : 0;
	struct bga_volume *vol;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	*bpg_out = bpg;
	return vol;
}

Test(persist_crash, every_cut_and_random_tears, .timeout = 300)
{
	struct rng r = {0xc0ffee123ULL};
	long cuts = 0, torn = 0;
	int iters = full_run() ? 24 : 6 / PERSIST_SLOW + 1, tears = full_run() ? 450 : 150 / PERSIST_SLOW;
	for (int iter = 0; iter < iters; iter++) {
		uint32_t bpg;
		struct bga_volume *vol = make(&r, &bpg);
		struct bga_extent ext[400];
		size_t n = 0;
		churn(vol, &r, 150, 1 + below(&r, bpg), ext, 400, &n);
		struct memio m;
		struct bga_io io;
		struct usedmap old;
		store_fresh(vol, &m, &io, &old);
		/* the changes the recorded store writes: churn, a deferred
		 * free (stored allocated), sometimes a grow */
		churn(vol, &r, 1 + below(&r, 100), 1 + below(&r, bpg), ext, 400, &n);
		if (n > 0 && below(&r, 2)) {
			size_t k = below(&r, n);
			cr_assert_eq(bga_free_deferred(vol, ext[k].start, ext[k].len, 1 + below(&r, 5)), 0);
			ext[k] = ext[--n];
		}
		if (below(&r, 4) == 0) {
			struct bga_config c;
			bga_volume_config(vol, &c);
			cr_assert_eq(bga_grow(vol, c.nblocks + 1 + below(&r, 3 * (uint64_t)bpg)), 0);
			churn(vol, &r, 30, bpg, ext, 400, &n);
		}
		if (below(&r, 3) == 0) {
			/* a store that fails part-way leaves uncommitted slots */
			m.writes = 0;
			m.fail_write = (long)below(&r, 6);
			int rc = bga_store(vol, &io);
			m.fail_write = -1;
			if (rc == 0) { /* it did not reach the failing write: that is now the old state */
				usedmap_free(&old);
				cr_assert_eq(usedmap_take(vol, &old), 0);
				churn(vol, &r, 20, bpg, ext, 400, &n);
			}
		}
		struct usedmap new;
		cr_assert_eq(usedmap_take(vol, &new), 0);
		struct image pre;
		image_copy(&pre, m.buf, m.size, m.size);
		m.record = true;
		cr_assert_eq(bga_store(vol, &io), 0);
		m.record = false;
		for (size_t cut = 0; cut <= m.nlog; cut++) {
			struct image img;
			crash_image(&pre, &m, cut, false, &r, &img);
			expect_old_or_new(&img, &old, &new, "prefix", cut);
			if (cut == m.nlog) {
				struct usedmap got;
				uint64_t q;
				cr_assert_eq(load_bytes(img.b, img.size, &got, &q), 0);
				cr_assert(usedmap_equal(&got, &new), "a completed store must load to its own state");
				usedmap_free(&got);
			}
			free(img.b);
			cuts++;
		}
		for (int t = 0; t < tears; t++) {
			struct image img;
			size_t cut = below(&r, m.nlog + 1);
			crash_image(&pre, &m, cut, true, &r, &img);
			expect_old_or_new(&img, &old, &new, "torn", cut);
			free(img.b);
			torn++;
		}
		free(pre.b);
		usedmap_free(&old);
		usedmap_free(&new);
		memio_free(&m);
		bga_destroy(vol);
	}
	if (full_run())
		cr_assert_geq(torn, 10000);
	cr_log_info("%ld cut points, %ld torn/reordered crashes: all loaded the old or the new state", cuts, torn);
}

Test(persist_crash, every_single_bit_flip, .timeout = 300)
{
	struct rng r = {99};
	struct bga_config cfg;
	bga_config_init(&cfg, 64 * 7 + 17);
	cfg.blocks_per_group = 64;
	cfg.first_data_block = 3;
	struct bga_volume *vol;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	struct bga_extent ext[64];
	size_t n = 0;
	churn(vol, &r, 60, 40, ext, 64, &n);
	struct bga_request whole = {.goal = 64 * 5, .min_len = 64, .max_len = 64, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	bga_alloc(vol, &whole, &e); /* a wholly used group, if it is still free */
	struct memio m;
	struct bga_io io;
	memio_init(&m, &io);
	cr_assert_eq(bga_store(vol, &io), 0);
	churn(vol, &r, 20, 40, ext, 64, &n); /* two stores: both slots of some groups in use */
	cr_assert_eq(bga_store(vol, &io), 0);
	struct usedmap want;
	cr_assert_eq(usedmap_take(vol, &want), 0);
	/* Only bytes the load reads can change what it does: find them on
	 * the pristine image, then flip each of their bits (a sample of the
	 * bitmap padding in ctest). */
	unsigned char *seen = calloc(1, m.size);
	cr_assert_not_null(seen);
	struct trackio t = {{m.buf, m.size}, seen};
	struct bga_io tio = {&t, trackio_read, constio_write, constio_flush};
	struct bga_volume *probe;
	cr_assert_eq(bga_load(&tio, NULL, &probe), 0);
	bga_destroy(probe);
	long detected = 0, quarantined = 0, harmless = 0, tried = 0;
	for (size_t byte = 0; byte < m.size; byte++) {
		if (!seen[byte])
			continue;
		if (!full_run() && ((byte % 512 >= 64 && byte % 29 != 0) || (PERSIST_SLOW > 1 && byte % 5 != 0)))
			continue;
		for (int bit = 0; bit < 8; bit++) {
			m.buf[byte] ^= (unsigned char)(1u << bit);
			struct usedmap got = {0, NULL};
			uint64_t q = 0;
			int rc = load_bytes(m.buf, m.size, &got, &q);
			if (rc) {
				cr_assert_eq(rc, -EUCLEAN, "flip %zu.%d: %s", byte, bit, bga_strerror(rc));
				detected++;
			} else if (q) {
				quarantined++;
			} else {
				cr_assert(usedmap_equal(&got, &want), "flip of byte %zu bit %d loaded another state",
					  byte, bit);
				harmless++;
			}
			usedmap_free(&got);
			m.buf[byte] ^= (unsigned char)(1u << bit);
			tried++;
		}
	}
	free(seen);
	cr_log_info("%ld bit flips: %ld failed the load, %ld quarantined a group, %ld loaded the same state", tried,
		    detected, quarantined, harmless);
	cr_assert_gt(detected, 0);
	cr_assert_gt(quarantined, 0);
	usedmap_free(&want);
	memio_free(&m);
	bga_destroy(vol);
}
