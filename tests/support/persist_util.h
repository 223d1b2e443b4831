/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_PERSIST_UTIL_H
#define BGA_PERSIST_UTIL_H

/*
 * Helpers for the persistence tests: a volume's allocation state as one
 * bit per block (set = used), taken through the public bga_foreach_free,
 * and random churn that leaves a known mix of groups (untouched, partly
 * used, wholly used, freed back to empty).
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc.h>

#include "memio.h"
#include "testutil.h"

/* Sanitizer builds run a volume create at a tenth of the speed (every big
 * calloc is filled): the persistence tests divide their loop counts by
 * this there, so make test-asan stays short. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PERSIST_SLOW 8
#else
#define PERSIST_SLOW 1
#endif

/* The next k of an every-k fault loop (the k-th allocation fails): every
 * k, but in sanitizer builds only the first 16 and then k growing by a
 * quarter each step, so the loops that store or load a whole volume per k
 * stay within CI's time there (the full sweep runs in make test). */
#define PERSIST_NEXT_K(k) ((k) += (PERSIST_SLOW > 1 && (k) > 16) ? (k) / 4 : 1)

struct usedmap {
	uint64_t nblocks;
	uint64_t *bits; /* set = used */
};

static inline int usedmap_clear_cb(void *ctx, uint64_t start, uint64_t len)
{
	struct usedmap *u = ctx;
	for (uint64_t b = start; b < start + len; b++)
		u->bits[b / 64] &= ~(UINT64_C(1) << (b % 64));
	return 0;
}

/* 0, or the error of bga_foreach_free / -ENOMEM. */
static inline int usedmap_take(struct bga_volume *vol, struct usedmap *u)
{
	struct bga_config cfg;
	int rc = bga_volume_config(vol, &cfg);
	if (rc)
		return rc;
	u->nblocks = cfg.nblocks;
	u->bits = malloc((cfg.nblocks + 63) / 64 * sizeof(uint64_t));
	if (u->bits == NULL)
		return -ENOMEM;
	memset(u->bits, 0xff, (cfg.nblocks + 63) / 64 * sizeof(uint64_t));
	return bga_foreach_free(vol, 0, cfg.nblocks, 1, usedmap_clear_cb, u);
}

static inline int usedmap_equal(const struct usedmap *a, const struct usedmap *b)
{
	return a->nblocks == b->nblocks && memcmp(a->bits, b->bits, (a->nblocks + 63) / 64 * sizeof(uint64_t)) == 0;
}

static inline void usedmap_free(struct usedmap *u)
{
	free(u->bits);
	u->bits = NULL;
}

/* n random operations: allocations of 1..maxlen blocks (random goals) and
 * frees of earlier extents, kept in ext[0..*next). */
static inline void churn(struct bga_volume *vol, struct rng *r, int n, uint64_t maxlen, struct bga_extent *ext,
			 size_t cap, size_t *next)
{
	struct bga_config cfg;
	bga_volume_config(vol, &cfg);
	for (int i = 0; i < n; i++) {
		if (*next > 0 && (below(r, 3) == 0 || *next == cap)) {
			size_t k = below(r, *next);
			if (bga_free(vol, ext[k].start, ext[k].len) == 0)
				ext[k] = ext[--*next];
			continue;
		}
		struct bga_request req = {.goal = below(r, 4) ? below(r, cfg.nblocks) : BGA_NO_GOAL,
					  .min_len = 1,
					  .max_len = 1 + below(r, maxlen)};
		struct bga_extent e;
		if (bga_alloc(vol, &req, &e) == 0)
			ext[(*next)++] = e;
	}
}

#ifdef CRITERION_H_
/* Store vol into a fresh memory area (*m, *io: memio_init), asserting it
 * succeeds, and take the used map of what was stored into *u. */
static inline void store_fresh(struct bga_volume *vol, struct memio *m, struct bga_io *io, struct usedmap *u)
{
	memio_init(m, io);
	cr_assert_eq(bga_store(vol, io), 0);
	cr_assert_eq(usedmap_take(vol, u), 0);
}

/* Store vol into a fresh memory area (*m, *io: memio_init) and load it
 * back (no config, no flags), asserting both succeed: the loaded volume.
 * The caller frees it and the area. */
static inline struct bga_volume *store_and_load(struct bga_volume *vol, struct memio *m, struct bga_io *io)
{
	memio_init(m, io);
	cr_assert_eq(bga_store(vol, io), 0);
	struct bga_volume *back = NULL;
	cr_assert_eq(bga_load(io, NULL, &back), 0);
	return back;
}

/* Load io (bga_load_ex flags) and assert the loaded volume is clean and
 * holds exactly `want`. */
static inline struct bga_volume *load_expect(const struct bga_io *io, uint32_t flags, const struct usedmap *want)
{
	struct bga_volume *vol = NULL;
	int rc = bga_load_ex(io, NULL, flags, &vol);
	cr_assert_eq(rc, 0, "bga_load: %s", bga_strerror(rc));
	assert_clean(vol);
	struct usedmap got;
	cr_assert_eq(usedmap_take(vol, &got), 0);
	cr_assert(usedmap_equal(&got, want), "loaded state differs from the stored one");
	usedmap_free(&got);
	return vol;
}
#endif

#endif
