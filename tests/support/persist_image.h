/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_PERSIST_IMAGE_H
#define BGA_PERSIST_IMAGE_H

/*
 * Helpers for the tests that craft or damage a stored image
 * (test_persist_errors.c, test_persist_io.c): the superblock in force,
 * descriptors by slot, a stored volume, a load that must fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "memio.h"
#include "persist_util.h"
#include "testutil.h"

#include "group.h"
#include "persist.h"
#include "persist_format.h"


/* The superblock sector in force (the valid one of highest generation). */
static inline unsigned char *sb_in_force(struct memio *m)
{
	unsigned char *best = NULL;
	uint64_t gen = 0;
	for (int s = 0; s < 2; s++) {
		struct bga_pf_sb sb;
		if (bga__pf_sb_decode(m->buf + s * BGA_PF_SECTOR, &sb, NULL) == 0 && sb.gen > gen) {
			gen = sb.gen;
			best = m->buf + s * BGA_PF_SECTOR;
		}
	}
	cr_assert_not_null(best, "no valid superblock in the area");
	return best;
}

static inline void sb_reseal(unsigned char *sb)
{
	bga_pf_put32(sb + BGA_SB_CRC, bga_pf_crc(sb, BGA_SB_CRC));
}

/* Group g's descriptor slot s. */
static inline unsigned char *desc_at(struct memio *m, uint32_t bpg, uint64_t g, unsigned s)
{
	return m->buf + bga_pf_desc_off(bpg, g) + (2 * (g % BGA_PF_UNIT_GROUPS) + s) * BGA_PF_DESC_BYTES;
}

/* The slot holding g's record in force (the valid one of highest gen). */
static inline unsigned desc_slot_in_force(struct memio *m, uint32_t bpg, uint64_t g, uint64_t uuid, struct bga_pgroup *r)
{
	int best = -1;
	struct bga_pgroup x;
	for (unsigned s = 0; s < 2; s++)
		if (bga__pf_desc_decode(desc_at(m, bpg, g, s), uuid, g, bpg, &x) && (best < 0 || x.gen > r->gen)) {
			*r = x;
			r->slot = (uint8_t)s;
			best = (int)s;
		}
	cr_assert_geq(best, 0, "group %llu has no valid record", (unsigned long long)g);
	return (unsigned)best;
}

/* Rewrite g's record in force as *r (same slot), resealed, with the
 * superblock digest moved to match. */
static inline void desc_rewrite(struct memio *m, uint32_t bpg, uint64_t g, const struct bga_pgroup *old,
			 const struct bga_pgroup *r)
{
	unsigned char *sb = sb_in_force(m);
	uint64_t uuid = bga_pf_get64(sb + BGA_SB_UUID);
	bga__pf_desc_encode(desc_at(m, bpg, g, old->slot), uuid, g, r);
	uint64_t digest = bga_pf_get64(sb + BGA_SB_DIGEST) - bga__pgroup_digest(g, old) + bga__pgroup_digest(g, r);
	bga_pf_put64(sb + BGA_SB_DIGEST, digest);
	sb_reseal(sb);
}

static inline struct bga_volume *stored_volume(uint64_t nblocks, uint32_t bpg, uint64_t fdb, struct memio *m,
					 struct bga_io *io, struct usedmap *want)
{
	struct bga_volume *vol = make_volume(nblocks, bpg, fdb);
	struct rng r = {nblocks * 31 + bpg};
	struct bga_extent ext[128];
	size_t n = 0;
	churn(vol, &r, 150, bpg / 2, ext, 128, &n);
	memio_init(m, io);
	cr_assert_eq(bga_store(vol, io), 0);
	if (want)
		cr_assert_eq(usedmap_take(vol, want), 0);
	return vol;
}

/* A load that must fail with rc, leaving *out alone. */
static inline void load_fails(const struct bga_io *io, const struct bga_config *cfg, uint32_t flags, int rc, const char *what)
{
	struct bga_volume *sentinel = (struct bga_volume *)&rc, *vol = sentinel;
	int got = bga_load_ex(io, cfg, flags, &vol);
	cr_assert_eq(got, rc, "%s: %d (%s), not %d", what, got, bga_strerror(got), rc);
	cr_assert_eq(vol, sentinel, "%s: a failed load wrote *out", what);
}

/* bga_check of a volume with quarantined groups: it reports exactly
 * those (and nothing else is wrong), the first being `first`. */
static inline void assert_only_quarantine(struct bga_volume *vol, uint64_t nquarantined, uint64_t first)
{
	struct bga_check_report rep;
	cr_assert_eq(bga_check(vol, &rep), -EUCLEAN);
	cr_assert_eq((uint64_t)rep.violations, nquarantined, "%d violations: %s", rep.violations, rep.message);
	cr_assert_not_null(strstr(rep.message, "quarantined"), "%s", rep.message);
	if (first != UINT64_MAX)
		cr_assert_eq(rep.group, first, "%s", rep.message);
}


#endif
