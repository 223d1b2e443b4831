/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The persistence code's error paths (issue 16): damaged or hostile images
 * that a crash cannot make, callbacks that fail or answer out of contract,
 * the file-backed io's system-call errors, and the store's recovery from a
 * superblock that may not have landed.  Each damaged image is crafted
 * consistent except for the one fault (checksums and the superblock digest
 * redone), so that the test shows the check it names is the one that
 * refuses it.  Allocation failure is in test_faults.c.
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

#include "internal.h"
#include "persist.h"
#include "persist_format.h"

/* ---- helpers ---- */

/* The superblock sector in force (the valid one of highest generation). */
static unsigned char *sb_in_force(struct memio *m)
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

static void sb_reseal(unsigned char *sb)
{
	bga_pf_put32(sb + BGA_SB_CRC, bga_pf_crc(sb, BGA_SB_CRC));
}

/* Group g's descriptor slot s. */
static unsigned char *desc_at(struct memio *m, uint32_t bpg, uint64_t g, unsigned s)
{
	return m->buf + bga_pf_desc_off(bpg, g) + (2 * (g % BGA_PF_UNIT_GROUPS) + s) * BGA_PF_DESC_BYTES;
}

/* The slot holding g's record in force (the valid one of highest gen). */
static unsigned desc_slot_in_force(struct memio *m, uint32_t bpg, uint64_t g, uint64_t uuid, struct bga_pgroup *r)
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
static void desc_rewrite(struct memio *m, uint32_t bpg, uint64_t g, const struct bga_pgroup *old,
			 const struct bga_pgroup *r)
{
	unsigned char *sb = sb_in_force(m);
	uint64_t uuid = bga_pf_get64(sb + BGA_SB_UUID);
	bga__pf_desc_encode(desc_at(m, bpg, g, old->slot), uuid, g, r);
	uint64_t digest = bga_pf_get64(sb + BGA_SB_DIGEST) - bga__pgroup_digest(g, old) + bga__pgroup_digest(g, r);
	bga_pf_put64(sb + BGA_SB_DIGEST, digest);
	sb_reseal(sb);
}

static struct bga_volume *stored_volume(uint64_t nblocks, uint32_t bpg, uint64_t fdb, struct memio *m,
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
static void load_fails(const struct bga_io *io, const struct bga_config *cfg, uint32_t flags, int rc, const char *what)
{
	struct bga_volume *sentinel = (struct bga_volume *)&rc, *vol = sentinel;
	int got = bga_load_ex(io, cfg, flags, &vol);
	cr_assert_eq(got, rc, "%s: %d (%s), not %d", what, got, bga_strerror(got), rc);
	cr_assert_eq(vol, sentinel, "%s: a failed load wrote *out", what);
}

/* bga_check of a volume with quarantined groups: it reports exactly
 * those (and nothing else is wrong), the first being `first`. */
static void assert_only_quarantine(struct bga_volume *vol, uint64_t nquarantined, uint64_t first)
{
	struct bga_check_report rep;
	cr_assert_eq(bga_check(vol, &rep), -EUCLEAN);
	cr_assert_eq((uint64_t)rep.violations, nquarantined, "%d violations: %s", rep.violations, rep.message);
	cr_assert_not_null(strstr(rep.message, "quarantined"), "%s", rep.message);
	if (first != UINT64_MAX)
		cr_assert_eq(rep.group, first, "%s", rep.message);
}

/* ---- geometry and the superblock ---- */

Test(persist_errors, metadata_size_refuses_every_bad_geometry)
{
	static const struct {
		uint64_t nblocks;
		uint32_t bpg;
		uint64_t first;
	} bad[] = {
		{0, 64, 0},
		{BGA_MAX_BLOCKS + 1, 1u << 20, 0},
		{4096, 32, 0},                  /* fewer than 64 blocks a group */
		{1u << 22, 2 * BGA_MAX_BPG, 0}, /* more than BGA_MAX_BPG */
		{4096, 100, 0},                 /* not a multiple of 64 */
		{BGA_MAX_BLOCKS, 64, 0},        /* 2^42 groups, past 2^32 */
		{10, 64, 10},                   /* first_data_block at the end */
		{1000, 64, 64},                 /* first_data_block past the first group */
	};
	uint64_t bytes = 12345;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct bga_config cfg;
		bga_config_init(&cfg, bad[i].nblocks);
		cfg.blocks_per_group = bad[i].bpg;
		cfg.first_data_block = bad[i].first;
		cr_assert_eq(bga_metadata_size(&cfg, &bytes), -EINVAL, "row %zu", i);
		cr_assert_eq(bytes, 12345, "row %zu: a refused geometry wrote *bytes", i);
	}
	struct bga_config cfg;
	bga_config_init(&cfg, 4096);
	cfg.blocks_per_group = 64;
	cr_assert_eq(bga_metadata_size(&cfg, NULL), -EINVAL);
	cr_assert_eq(bga_metadata_size(&cfg, &bytes), 0);
	cr_assert_eq(bytes, bga_pf_area_bytes(64, 64));
}

/* Each check of the superblock decoder, by its reason, and the load that
 * meets such a superblock as the only one. */
Test(persist_errors, superblock_refused_for_each_reason)
{
	struct memio m;
	struct bga_io io;
	struct bga_volume *vol = stored_volume(64 * 40, 64, 0, &m, &io, NULL);
	unsigned char good[BGA_PF_SECTOR];
	memcpy(good, sb_in_force(&m), sizeof(good));
	unsigned slot = (unsigned)((sb_in_force(&m) - m.buf) / BGA_PF_SECTOR);
	struct bga_pf_sb sb;
	const char *why = "unset";
	cr_assert_eq(bga__pf_sb_decode(good, &sb, &why), 0);
	cr_assert_null(why);
	static const struct {
		unsigned off, width;
		uint64_t value;
		bool reseal;
		const char *why;
	} rows[] = {
		{BGA_SB_MAGIC, 1, 'X', true, "bad magic"},
		{BGA_SB_NBLOCKS, 1, 7, false, "bad superblock checksum"},
		{BGA_SB_VERSION, 4, 2, true, "unknown format version"},
		{BGA_SB_SIZE, 4, 1024, true, "bad superblock size"},
		{BGA_SB_GEN, 8, 0, true, "generation 0"},
		{BGA_SB_BPG, 4, 96, true, "absurd geometry"},
		{BGA_SB_NGROUPS, 8, 41, true, "group count disagrees with nblocks"},
		{BGA_SB_BMBYTES, 4, 1024, true, "bad bitmap size"},
		{BGA_SB_FREE, 8, 64 * 40 + 1, true, "bad free or group counts"},
		{BGA_SB_INITED, 8, 41, true, "bad free or group counts"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		unsigned char b[BGA_PF_SECTOR];
		memcpy(b, good, sizeof(b));
		if (rows[i].width == 1)
			b[rows[i].off] = (unsigned char)rows[i].value;
		else if (rows[i].width == 4)
			bga_pf_put32(b + rows[i].off, (uint32_t)rows[i].value);
		else
			bga_pf_put64(b + rows[i].off, rows[i].value);
		if (rows[i].reseal)
			sb_reseal(b);
		why = NULL;
		cr_assert_eq(bga__pf_sb_decode(b, &sb, &why), -EUCLEAN, "row %zu", i);
		cr_assert_str_eq(why, rows[i].why, "row %zu", i);
		/* as the only superblock of the area: the load refuses it */
		memset(m.buf, 0, 2 * BGA_PF_SECTOR);
		memcpy(m.buf + slot * BGA_PF_SECTOR, b, sizeof(b));
		load_fails(&io, NULL, 0, -EUCLEAN, rows[i].why);
		/* and bga__pf_sb_read_best finds none, saying why slot 0 failed */
		memset(m.buf, 0, BGA_PF_SECTOR);
		memcpy(m.buf, b, sizeof(b));
		memset(m.buf + BGA_PF_SECTOR, 0, BGA_PF_SECTOR);
		why = NULL;
		int best_slot = -1;
		cr_assert_eq(bga__pf_sb_read_best(&io, &sb, &best_slot, &why), -EUCLEAN);
		cr_assert_str_eq(why, rows[i].why);
		cr_assert_eq(best_slot, -1);
	}
	/* the good one back: it loads, and read_best names its slot */
	memset(m.buf, 0, 2 * BGA_PF_SECTOR);
	memcpy(m.buf + slot * BGA_PF_SECTOR, good, sizeof(good));
	int best_slot = -1;
	cr_assert_eq(bga__pf_sb_read_best(&io, &sb, &best_slot, NULL), 0);
	cr_assert_eq(best_slot, (int)slot);
	struct bga_volume *back;
	cr_assert_eq(bga_load(&io, NULL, &back), 0);
	bga_destroy(back);
	memio_free(&m);
	bga_destroy(vol);
}

/* A valid superblock in the slot of the other parity, or two valid ones
 * of different volumes, is damage no crash makes: the load refuses. */
Test(persist_errors, superblock_in_the_wrong_slot_or_of_another_volume)
{
	struct memio m, m2;
	struct bga_io io, io2;
	struct usedmap want;
	struct bga_volume *vol = stored_volume(64 * 40, 64, 0, &m, &io, &want);
	struct bga_volume *other = stored_volume(64 * 40, 64, 0, &m2, &io2, NULL);
	cr_assert_eq(bga_store(vol, &io), 0); /* both slots now valid */
	unsigned char *cur = sb_in_force(&m);
	unsigned slot = (unsigned)((cur - m.buf) / BGA_PF_SECTOR);
	unsigned char saved[2 * BGA_PF_SECTOR];
	memcpy(saved, m.buf, sizeof(saved));
	/* the newest superblock copied over the older slot */
	memcpy(m.buf + (slot ^ 1) * BGA_PF_SECTOR, cur, BGA_PF_SECTOR);
	load_fails(&io, NULL, 0, -EUCLEAN, "a superblock in the wrong slot");
	/* the older slot holds another volume's superblock of the same parity */
	memcpy(m.buf, saved, sizeof(saved));
	struct bga_pf_sb osb;
	unsigned char *ocur = sb_in_force(&m2);
	cr_assert_eq(bga__pf_sb_decode(ocur, &osb, NULL), 0);
	cr_assert_eq(osb.gen & 1, (uint64_t)((ocur - m2.buf) / BGA_PF_SECTOR));
	if ((osb.gen & 1) == (slot ^ 1)) {
		memcpy(m.buf + (slot ^ 1) * BGA_PF_SECTOR, ocur, BGA_PF_SECTOR);
		load_fails(&io, NULL, 0, -EUCLEAN, "superblocks of two volumes");
	} else {
		/* same parity as the newest: re-stamp the other's generation */
		unsigned char b[BGA_PF_SECTOR];
		memcpy(b, ocur, sizeof(b));
		bga_pf_put64(b + BGA_SB_GEN, osb.gen + 1);
		sb_reseal(b);
		memcpy(m.buf + (slot ^ 1) * BGA_PF_SECTOR, b, BGA_PF_SECTOR);
		load_fails(&io, NULL, 0, -EUCLEAN, "superblocks of two volumes");
	}
	/* restored, it loads */
	memcpy(m.buf, saved, sizeof(saved));
	bga_destroy(load_expect(&io, 0, &want));
	usedmap_free(&want);
	memio_free(&m);
	memio_free(&m2);
	bga_destroy(other);
	bga_destroy(vol);
}

/* Tuning in the superblock that bga_create refuses, or a lock table big
 * enough to be an attack: -EUCLEAN without a config (the image is bad),
 * a normal load with the caller's. */
Test(persist_errors, superblock_tuning_refused_unless_the_caller_configures)
{
	struct memio m;
	struct bga_io io;
	struct usedmap want;
	struct bga_volume *vol = stored_volume(64 * 40, 64, 0, &m, &io, &want);
	unsigned char good[BGA_PF_SECTOR];
	unsigned char *sb = sb_in_force(&m);
	memcpy(good, sb, sizeof(good));
	struct bga_config cfg;
	cr_assert_eq(bga_volume_config(vol, &cfg), 0);
	static const struct {
		unsigned off;
		uint32_t value;
	} rows[] = {
		{BGA_SB_LOCK_SLOTS, 1u << 17}, /* past the load's limit */
		{BGA_SB_LOCK_KIND, 99},        /* create refuses */
		{BGA_SB_RSV_DEFAULT, 5000},    /* above rsv_max: create refuses */
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		memcpy(sb, good, sizeof(good));
		bga_pf_put32(sb + rows[i].off, rows[i].value);
		sb_reseal(sb);
		load_fails(&io, NULL, 0, -EUCLEAN, "hostile tuning");
		struct bga_volume *back;
		cr_assert_eq(bga_load(&io, &cfg, &back), 0, "row %zu: the caller's config decides", i);
		struct usedmap got;
		cr_assert_eq(usedmap_take(back, &got), 0);
		cr_assert(usedmap_equal(&got, &want));
		usedmap_free(&got);
		bga_destroy(back);
	}
	usedmap_free(&want);
	memio_free(&m);
	bga_destroy(vol);
}

/* ---- descriptors ---- */

Test(persist_errors, descriptor_refused_for_each_reason)
{
	const uint64_t uuid = 0x1234567890abcdefULL, g = 9;
	const uint32_t bpg = 128;
	struct bga_pgroup good = {7, 100, 0xabcdef, BGA_DF_BITMAP, 0}, r;
	unsigned char d[BGA_PF_DESC_BYTES];
	bga__pf_desc_encode(d, uuid, g, &good);
	cr_assert_eq(bga__pf_desc_decode(d, uuid, g, bpg, &r), 1);
	cr_assert(r.gen == 7 && r.free == 100 && r.bmcrc == 0xabcdef && r.flags == BGA_DF_BITMAP);
	cr_assert_eq(bga__pf_desc_decode(d, uuid + 1, g, bpg, &r), 0, "another volume's record");
	static const struct {
		unsigned off, width;
		uint32_t value;
		const char *what;
	} rows[] = {
		{BGA_DESC_GEN, 8, 0, "generation 0"},
		{BGA_DESC_GROUP, 4, 10, "another group's record"},
		{BGA_DESC_FREE, 4, 129, "more free than the group has"},
		{BGA_DESC_RSVD, 4, 1, "the reserved word set"},
		{BGA_DESC_FLAGS, 4, BGA_DF_BITMAP | 0x100, "an unknown flag"},
		{BGA_DESC_FLAGS, 4, BGA_DF_BITMAP | BGA_DF_FULL, "two states at once"},
		{BGA_DESC_FLAGS, 4, 0, "no state"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		unsigned char b[BGA_PF_DESC_BYTES];
		memcpy(b, d, sizeof(b));
		if (rows[i].width == 8)
			bga_pf_put64(b + rows[i].off, rows[i].value);
		else
			bga_pf_put32(b + rows[i].off, rows[i].value);
		bga_pf_put32(b + BGA_DESC_CRC, bga_pf_desc_crc(uuid, b));
		cr_assert_eq(bga__pf_desc_decode(b, uuid, g, bpg, &r), 0, "%s accepted", rows[i].what);
	}
}

/* Records that pass every check but disagree with the superblock's digest,
 * with no damaged slot to blame: nothing can be trusted. */
Test(persist_errors, digest_mismatch_with_no_suspect_fails_the_load)
{
	struct memio m;
	struct bga_io io;
	struct bga_volume *vol = stored_volume(64 * 40, 64, 0, &m, &io, NULL);
	unsigned char *sb = sb_in_force(&m);
	bga_pf_put64(sb + BGA_SB_DIGEST, bga_pf_get64(sb + BGA_SB_DIGEST) + 1);
	sb_reseal(sb);
	load_fails(&io, NULL, 0, -EUCLEAN, "digest off by one");
	load_fails(&io, NULL, BGA_LOAD_STRICT, -EUCLEAN, "digest off by one, strict");
	memio_free(&m);
	bga_destroy(vol);
}

/* 70 groups whose unused slot is damaged (more than the loader's first
 * 64-entry suspect list): harmless while the digest agrees; with the
 * digest off, every suspect is quarantined and nothing else. */
Test(persist_errors, many_suspects_quarantined_only_when_the_digest_disagrees)
{
	const uint32_t bpg = 64;
	struct memio m;
	struct bga_io io;
	struct usedmap want;
	struct bga_volume *vol = stored_volume(bpg * 100, bpg, 0, &m, &io, &want);
	unsigned char *sb = sb_in_force(&m);
	uint64_t uuid = bga_pf_get64(sb + BGA_SB_UUID);
	for (uint64_t g = 10; g < 80; g++) {
		struct bga_pgroup r;
		unsigned s = desc_slot_in_force(&m, bpg, g, uuid, &r);
		memset(desc_at(&m, bpg, g, s ^ 1), 0x5a, BGA_PF_DESC_BYTES);
	}
	struct bga_volume *back = load_expect(&io, 0, &want);
	struct bga_stats st;
	cr_assert_eq(bga_stats(back, &st), 0);
	cr_assert_eq(st.groups_quarantined, 0, "damage in unused slots costs nothing");
	bga_destroy(back);
	bga_pf_put64(sb + BGA_SB_DIGEST, bga_pf_get64(sb + BGA_SB_DIGEST) ^ 0x10);
	sb_reseal(sb);
	cr_assert_eq(bga_load(&io, NULL, &back), 0);
	cr_assert_eq(bga_stats(back, &st), 0);
	cr_assert_eq(st.groups_quarantined, 70);
	assert_only_quarantine(back, 70, 10);
	/* the suspects are wholly unavailable; the other groups load as stored */
	struct usedmap got;
	cr_assert_eq(usedmap_take(back, &got), 0);
	for (uint64_t b = 0; b < bpg * 100; b++) {
		bool used = (got.bits[b / 64] >> (b % 64)) & 1, was = (want.bits[b / 64] >> (b % 64)) & 1;
		if (b >= 10 * bpg && b < 80 * bpg)
			cr_assert(used, "block %llu of a quarantined group is free", (unsigned long long)b);
		else
			cr_assert_eq(used, was, "block %llu", (unsigned long long)b);
	}
	usedmap_free(&got);
	bga_destroy(back);
	usedmap_free(&want);
	memio_free(&m);
	bga_destroy(vol);
}

/* A group with no valid record at all is quarantined; the store after the
 * load writes it as quarantined (beside no older record), and the next
 * load quarantines it again without any damage left. */
Test(persist_errors, group_with_no_record_stays_quarantined_across_stores)
{
	const uint32_t bpg = 64;
	struct memio m;
	struct bga_io io;
	struct bga_volume *vol = stored_volume(bpg * 40, bpg, 0, &m, &io, NULL);
	memset(desc_at(&m, bpg, 13, 0), 0x77, BGA_PF_DESC_BYTES);
	memset(desc_at(&m, bpg, 13, 1), 0x77, BGA_PF_DESC_BYTES);
	struct bga_volume *back;
	cr_assert_eq(bga_load(&io, NULL, &back), 0);
	struct bga_stats st;
	cr_assert_eq(bga_stats(back, &st), 0);
	cr_assert_eq(st.groups_quarantined, 1);
	cr_assert_eq(bga_free(back, 13 * bpg, 1), -EUCLEAN, "a quarantined group takes no free");
	struct bga_request req = {.goal = 13 * bpg, .min_len = 1, .max_len = 1, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(back, &req, &e), -ENOSPC, "nor hands out a block");
	uint64_t free_back = bga_free_exact(back);
	cr_assert_eq(bga_store(back, &io), 0);
	bga_destroy(back);
	cr_assert_eq(bga_load(&io, NULL, &back), 0);
	cr_assert_eq(bga_stats(back, &st), 0);
	cr_assert_eq(st.groups_quarantined, 1, "stored as quarantined");
	cr_assert_eq(bga_free_exact(back), free_back);
	assert_only_quarantine(back, 1, 13);
	bga_destroy(back);
	memio_free(&m);
	bga_destroy(vol);
}

/* A bitmap whose checksum is right but whose bits outside the group's span
 * (below first_data_block) are clear: quarantined, whichever way the chunk
 * is read; a strict load refuses it. */
Test(persist_errors, bitmap_with_a_free_bit_outside_the_span_is_quarantined)
{
	const uint32_t bpg = 64;
	struct memio m;
	struct bga_io io;
	struct bga_volume *vol = make_volume(bpg * 8, bpg, 5);
	struct bga_request req = {.goal = 10, .min_len = 3, .max_len = 3, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0); /* group 0 gets a bitmap */
	memio_init(&m, &io);
	cr_assert_eq(bga_store(vol, &io), 0);
	uint64_t uuid = bga_pf_get64(sb_in_force(&m) + BGA_SB_UUID);
	struct bga_pgroup old;
	desc_slot_in_force(&m, bpg, 0, uuid, &old);
	cr_assert_eq(old.flags, BGA_DF_BITMAP);
	unsigned char *bm = m.buf + bga_pf_bitmap_off(bpg, 0, old.slot);
	cr_assert_eq(bm[0] & 0x1f, 0x1f, "blocks below first_data_block are stored set");
	bm[0] &= (unsigned char)~1u;
	struct bga_pgroup r = old;
	r.bmcrc = bga_pf_crc(bm, bga_pf_bitmap_bytes(bpg));
	desc_rewrite(&m, bpg, 0, &old, &r);
	for (int strictness = 0; strictness < 2; strictness++) {
		struct bga_volume *back;
		if (strictness) {
			load_fails(&io, NULL, BGA_LOAD_STRICT, -EUCLEAN, "strict load of a misshapen bitmap");
			break;
		}
		cr_assert_eq(bga_load(&io, NULL, &back), 0);
		struct bga_stats st;
		cr_assert_eq(bga_stats(back, &st), 0);
		cr_assert_eq(st.groups_quarantined, 1);
		cr_assert_eq(bga_free(back, e.start, e.len), -EUCLEAN);
		cr_assert_eq(bga_free_exact(back), bpg * 7, "group 0 counts as wholly used");
		assert_only_quarantine(back, 1, 0);
		bga_destroy(back);
	}
	memio_free(&m);
	bga_destroy(vol);
}

/* A free count that disagrees with its valid bitmap, read at a strict load
 * (every group installed at once): recomputed, and said so. */
Test(persist_errors, free_count_repaired_at_a_strict_load)
{
	const uint32_t bpg = 64;
	struct bga_volume *vol = make_volume(bpg * 8, bpg, 0);
	struct bga_request req = {.goal = 70, .min_len = 5, .max_len = 5, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	struct memio m;
	struct bga_io io;
	memio_init(&m, &io);
	cr_assert_eq(bga_store(vol, &io), 0);
	struct usedmap want;
	cr_assert_eq(usedmap_take(vol, &want), 0);
	uint64_t uuid = bga_pf_get64(sb_in_force(&m) + BGA_SB_UUID);
	struct bga_pgroup old, r;
	desc_slot_in_force(&m, bpg, 1, uuid, &old);
	cr_assert_eq(old.free, 59);
	r = old;
	r.free = 33;
	desc_rewrite(&m, bpg, 1, &old, &r);
	struct bga_volume *back = load_expect(&io, BGA_LOAD_STRICT, &want);
	struct bga_stats st;
	cr_assert_eq(bga_stats(back, &st), 0);
	cr_assert_eq(st.groups_repaired, 1);
	cr_assert_eq(st.groups_quarantined, 0);
	cr_assert_eq(bga_free_exact(back), bpg * 8 - 5);
	bga_destroy(back);
	usedmap_free(&want);
	memio_free(&m);
	bga_destroy(vol);
}

/* ---- callbacks that fail or answer out of contract ---- */

enum { FAIL_NONE, FAIL_SUPER, FAIL_DESC, FAIL_BITMAP };

/* A memio whose reads of one kind of sector fail with `rc` (negative, or
 * positive: out of contract, which must read as -EIO). */
struct badio {
	struct memio m;
	int where, rc;
	uint32_t bpg;
	int write_rc, flush_rc; /* != 0: every write / flush returns it */
};

static int badio_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct badio *b = ctx;
	int kind = off < BGA_PF_HEADER ? FAIL_SUPER
		   : (off - BGA_PF_HEADER) % bga_pf_unit_bytes(b->bpg) == 0 ? FAIL_DESC
									  : FAIL_BITMAP;
	if (b->where == kind)
		return b->rc;
	return memio_read(&b->m, buf, len, off);
}

static int badio_write(void *ctx, const void *buf, size_t len, uint64_t off)
{
	struct badio *b = ctx;
	return b->write_rc ? b->write_rc : memio_write(&b->m, buf, len, off);
}

static int badio_flush(void *ctx)
{
	struct badio *b = ctx;
	return b->flush_rc ? b->flush_rc : memio_flush(&b->m);
}

static void badio_init(struct badio *b, struct bga_io *io, uint32_t bpg)
{
	struct bga_io unused;
	memio_init(&b->m, &unused);
	b->where = FAIL_NONE;
	b->rc = 0;
	b->bpg = bpg;
	b->write_rc = b->flush_rc = 0;
	*io = (struct bga_io){b, badio_read, badio_write, badio_flush};
}

Test(persist_errors, read_errors_at_each_stage_of_a_load)
{
	const uint32_t bpg = 64;
	struct badio b;
	struct bga_io io;
	struct usedmap want;
	badio_init(&b, &io, bpg);
	struct bga_volume *vol = make_volume(bpg * 4096 * 2, bpg, 0);
	struct rng r = {99};
	struct bga_extent ext[128];
	size_t n = 0;
	churn(vol, &r, 200, 40, ext, 128, &n);
	cr_assert_eq(bga_store(vol, &io), 0);
	cr_assert_eq(usedmap_take(vol, &want), 0);
	static const int rcs[] = {-EIO, -ENXIO, 1, 7};
	for (size_t i = 0; i < sizeof(rcs) / sizeof(rcs[0]); i++) {
		int expect = rcs[i] > 0 ? -EIO : rcs[i];
		b.rc = rcs[i];
		b.where = FAIL_SUPER;
		load_fails(&io, NULL, 0, expect, "superblock read");
		b.where = FAIL_DESC;
		load_fails(&io, NULL, 0, expect, "descriptor read");
		b.where = FAIL_BITMAP;
		load_fails(&io, NULL, BGA_LOAD_STRICT, expect, "bitmap read at a strict load");
		/* a lazy load reads no bitmap: it succeeds, and the first read
		 * fails, quarantining (bga_prefetch returns the error) */
		struct bga_volume *back;
		cr_assert_eq(bga_load(&io, NULL, &back), 0);
		cr_assert_eq(bga_prefetch(back), expect);
		struct bga_stats st;
		cr_assert_eq(bga_stats(back, &st), 0);
		cr_assert_gt(st.groups_quarantined, 0);
		assert_only_quarantine(back, st.groups_quarantined, UINT64_MAX);
		bga_destroy(back);
		/* the store reads the superblocks first: their error is its own */
		b.where = FAIL_SUPER;
		cr_assert_eq(bga_store(vol, &io), expect, "a store whose superblock read fails");
	}
	b.where = FAIL_NONE;
	bga_destroy(load_expect(&io, BGA_LOAD_STRICT, &want));
	usedmap_free(&want);
	memio_free(&b.m);
	bga_destroy(vol);
}

Test(persist_errors, positive_write_or_flush_results_are_eio)
{
	const uint32_t bpg = 64;
	struct badio b;
	struct bga_io io;
	badio_init(&b, &io, bpg);
	struct bga_volume *vol = make_volume(bpg * 40, bpg, 0);
	b.write_rc = 1;
	cr_assert_eq(bga_store(vol, &io), -EIO);
	b.write_rc = 0;
	b.flush_rc = 3;
	cr_assert_eq(bga_store(vol, &io), -EIO);
	b.flush_rc = 0;
	struct usedmap want;
	cr_assert_eq(usedmap_take(vol, &want), 0);
	cr_assert_eq(bga_store(vol, &io), 0);
	bga_destroy(load_expect(&io, 0, &want));
	usedmap_free(&want);
	memio_free(&b.m);
	bga_destroy(vol);
}

Test(persist_errors, null_callbacks_refused)
{
	struct memio m;
	struct bga_io io;
	memio_init(&m, &io);
	struct bga_volume *vol = make_volume(64 * 8, 64, 0), *back;
	struct bga_io bad = io;
	bad.read = NULL;
	cr_assert_eq(bga_store(vol, &bad), -EINVAL);
	cr_assert_eq(bga_load(&bad, NULL, &back), -EINVAL);
	bad = io;
	bad.write = NULL;
	cr_assert_eq(bga_store(vol, &bad), -EINVAL);
	cr_assert_eq(bga_load(&bad, NULL, &back), -EINVAL);
	bad = io;
	bad.flush = NULL;
	cr_assert_eq(bga_load(&bad, NULL, &back), -EINVAL);
	cr_assert_eq(m.writes, 0, "nothing written");
	cr_assert_eq(bga_prefetch(NULL), -EINVAL);
	cr_assert_eq(bga_prefetch(vol), 0, "a volume never loaded has nothing to read");
	memio_free(&m);
	bga_destroy(vol);
}

/* ---- the store's recovery ---- */

/* Writes at superblock offsets fail while armed. */
struct sbfail {
	struct memio m;
	bool fail_sb;
};

static int sbfail_write(void *ctx, const void *buf, size_t len, uint64_t off)
{
	struct sbfail *s = ctx;
	if (s->fail_sb && off < BGA_PF_HEADER)
		return -EIO;
	return memio_write(&s->m, buf, len, off);
}

static int sbfail_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	return memio_read(&((struct sbfail *)ctx)->m, buf, len, off);
}

static int sbfail_flush(void *ctx)
{
	return memio_flush(&((struct sbfail *)ctx)->m);
}

/* The superblock write fails: the area still holds the previous store, and
 * the next store writes that superblock again before anything else. */
Test(persist_errors, failed_superblock_write_is_written_again_first)
{
	struct sbfail s;
	struct bga_io unused, io;
	memio_init(&s.m, &unused);
	s.fail_sb = false;
	io = (struct bga_io){&s, sbfail_read, sbfail_write, sbfail_flush};
	struct bga_volume *vol = make_volume(64 * 64, 64, 0);
	struct rng r = {5};
	struct bga_extent ext[64];
	size_t n = 0;
	churn(vol, &r, 60, 30, ext, 64, &n);
	cr_assert_eq(bga_store(vol, &io), 0);
	struct usedmap s0, s1, s2;
	cr_assert_eq(usedmap_take(vol, &s0), 0);
	churn(vol, &r, 60, 30, ext, 64, &n);
	cr_assert_eq(usedmap_take(vol, &s1), 0);
	s.fail_sb = true;
	cr_assert_eq(bga_store(vol, &io), -EIO);
	s.fail_sb = false;
	bga_destroy(load_expect(&io, 0, &s0)); /* the data landed, not the superblock */
	/* the next store: its superblock write first (S1 commits), then its
	 * own writes; make one of those fail, and S1 is what the area holds */
	churn(vol, &r, 60, 30, ext, 64, &n);
	cr_assert_eq(usedmap_take(vol, &s2), 0);
	s.m.writes = 0;
	s.m.fail_write = 1; /* the recommit is write 0 */
	cr_assert_eq(bga_store(vol, &io), -EIO);
	s.m.fail_write = -1;
	bga_destroy(load_expect(&io, 0, &s1));
	cr_assert_eq(bga_store(vol, &io), 0);
	bga_destroy(load_expect(&io, 0, &s2));
	usedmap_free(&s0);
	usedmap_free(&s1);
	usedmap_free(&s2);
	memio_free(&s.m);
	bga_destroy(vol);
}

/* The superblock's flush fails: the store says so; the superblock may or
 * may not be durable, so the next store writes and flushes it again first,
 * and an error there is that store's error. */
Test(persist_errors, failed_superblock_flush_is_redone_first)
{
	struct memio m;
	struct bga_io io;
	struct bga_volume *vol = make_volume(64 * 64, 64, 0);
	struct rng r = {6};
	struct bga_extent ext[64];
	size_t n = 0;
	churn(vol, &r, 60, 30, ext, 64, &n);
	memio_init(&m, &io);
	cr_assert_eq(bga_store(vol, &io), 0);
	churn(vol, &r, 60, 30, ext, 64, &n);
	struct usedmap s1, s2;
	cr_assert_eq(usedmap_take(vol, &s1), 0);
	m.flushes = 0;
	m.fail_flush = 1; /* the data flush passes, the superblock's fails */
	cr_assert_eq(bga_store(vol, &io), -EIO);
	m.fail_flush = -1;
	/* the superblock sector as it would be had its write been lost */
	unsigned char *sb = sb_in_force(&m);
	unsigned char landed[BGA_PF_SECTOR];
	memcpy(landed, sb, sizeof(landed));
	memset(sb, 0, BGA_PF_SECTOR);
	churn(vol, &r, 60, 30, ext, 64, &n);
	cr_assert_eq(usedmap_take(vol, &s2), 0);
	/* the rewrite fails: nothing else written */
	m.writes = 0;
	m.fail_write = 0;
	uint64_t before = m.bytes_written;
	cr_assert_eq(bga_store(vol, &io), -EIO);
	m.fail_write = -1;
	cr_assert_eq(m.bytes_written, before);
	/* its flush fails */
	m.flushes = 0;
	m.fail_flush = 0;
	cr_assert_eq(bga_store(vol, &io), -EIO);
	m.fail_flush = -1;
	cr_assert_eq(memcmp(sb, landed, BGA_PF_SECTOR), 0, "the same superblock written again");
	bga_destroy(load_expect(&io, 0, &s1));
	cr_assert_eq(bga_store(vol, &io), 0);
	bga_destroy(load_expect(&io, 0, &s2));
	usedmap_free(&s1);
	usedmap_free(&s2);
	memio_free(&m);
	bga_destroy(vol);
}

/* A wrapper read: same ctx and write/flush, another read function. */
static int memio_read_other(void *ctx, void *buf, size_t len, uint64_t off)
{
	return memio_read(ctx, buf, len, off);
}

/* Two volumes storing in turn into one area, and one volume through an io
 * that differs in one callback: each store finds an area it did not leave
 * and formats it, above the generation it found. */
Test(persist_errors, another_writer_in_the_area_means_a_format)
{
	struct memio m;
	struct bga_io io;
	struct usedmap wa, wb;
	struct bga_volume *a = stored_volume(64 * 64, 64, 0, &m, &io, &wa);
	struct bga_volume *b = make_volume(64 * 64, 64, 0);
	struct rng r = {8};
	struct bga_extent ext[64];
	size_t n = 0;
	churn(b, &r, 80, 20, ext, 64, &n);
	cr_assert_eq(usedmap_take(b, &wb), 0);
	cr_assert_eq(bga_store(a, &io), 0); /* a's generation 2 */
	uint64_t gen_a = bga_pf_get64(sb_in_force(&m) + BGA_SB_GEN);
	cr_assert_eq(bga_store(b, &io), 0);
	uint64_t gen_b = bga_pf_get64(sb_in_force(&m) + BGA_SB_GEN);
	cr_assert_gt(gen_b, gen_a, "a format above the generation found");
	bga_destroy(load_expect(&io, 0, &wb));
	uint64_t before = m.bytes_written;
	cr_assert_eq(bga_store(a, &io), 0);
	cr_assert_gt(m.bytes_written - before, 64 * 64 / 8, "a wrote every group again");
	bga_destroy(load_expect(&io, 0, &wa));
	/* a unchanged, through the same ctx and another read: a format too */
	struct bga_io io2 = io;
	io2.read = memio_read_other;
	before = m.bytes_written;
	cr_assert_eq(bga_store(a, &io2), 0);
	cr_assert_gt(m.bytes_written - before, 2 * BGA_PF_SECTOR, "another io: every unit written");
	before = m.bytes_written;
	cr_assert_eq(bga_store(a, &io2), 0);
	cr_assert_eq(m.bytes_written - before, BGA_PF_SECTOR, "the same io again: only the superblock, not %llu bytes",
		     (unsigned long long)(m.bytes_written - before));
	bga_destroy(load_expect(&io, 0, &wa));
	usedmap_free(&wa);
	usedmap_free(&wb);
	memio_free(&m);
	bga_destroy(a);
	bga_destroy(b);
}

/* ---- the store of a lazily loaded, grown or partly built volume ---- */

static bool chunk_present(struct bga_volume *vol, uint64_t c)
{
	return __atomic_load_n(&vol->chunks[c], __ATOMIC_ACQUIRE) != NULL;
}

/* An incremental store of a lazily loaded volume counts its unread
 * chunks from their records (a wholly used group among them), and one
 * after a grow writes the new groups; the superblock's counts agree. */
Test(persist_errors, store_counts_unread_chunks_and_grown_groups)
{
	const uint32_t bpg = 64;
	const uint64_t chunk = (uint64_t)bpg * 4096;
	struct bga_volume *vol = make_volume(2 * chunk, bpg, 0);
	struct bga_request req = {.goal = chunk + 5 * bpg, .min_len = bpg, .max_len = bpg, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0); /* a wholly used group in chunk 1 */
	req.goal = chunk + 9 * bpg + 3;
	req.min_len = req.max_len = 7;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	req.goal = 100;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	struct memio m;
	struct bga_io io;
	memio_init(&m, &io);
	cr_assert_eq(bga_store(vol, &io), 0);
	struct bga_volume *back;
	cr_assert_eq(bga_load(&io, NULL, &back), 0);
	cr_assert(!chunk_present(back, 1));
	cr_assert_eq(bga_free(back, 100, 7), 0); /* chunk 0 read, chunk 1 not */
	cr_assert(!chunk_present(back, 1));
	cr_assert_eq(bga_store(back, &io), 0);
	struct bga_pf_sb sb;
	cr_assert_eq(bga__pf_sb_decode(sb_in_force(&m), &sb, NULL), 0);
	cr_assert_eq(sb.free_blocks, bga_free_exact(back));
	cr_assert_eq(sb.groups_inited, 3, "groups 1, 4101 and 4105");
	cr_assert(!chunk_present(back, 1), "an incremental store reads nothing");
	/* grown by a chunk never touched, stored again incrementally */
	cr_assert_eq(bga_grow(back, 3 * chunk), 0);
	cr_assert_eq(bga_store(back, &io), 0);
	struct usedmap want;
	cr_assert_eq(usedmap_take(back, &want), 0);
	cr_assert_eq(bga__pf_sb_decode(sb_in_force(&m), &sb, NULL), 0);
	cr_assert_eq(sb.nblocks, 3 * chunk);
	cr_assert_eq(sb.free_blocks, bga_free_exact(back));
	struct bga_volume *again = load_expect(&io, 0, &want);
	cr_assert_eq(bga_free_exact(again), 3 * chunk - bpg - 7);
	bga_destroy(again);
	usedmap_free(&want);
	bga_destroy(back);
	memio_free(&m);
	bga_destroy(vol);
}

/* A chunk built in memory whose groups were never initialised, stored by a
 * format above generation 1: its records are all "never initialised" but
 * not the canonical ones, and the load leaves the chunk unbuilt and free. */
Test(persist_errors, built_chunk_of_untouched_groups_loads_free)
{
	const uint32_t bpg = 64;
	const uint64_t chunk = (uint64_t)bpg * 4096;
	struct bga_volume *vol = make_volume(2 * chunk, bpg, 0);
	struct bga_request req = {.goal = 3, .min_len = 2, .max_len = 2, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(bga_free(vol, chunk + 10, 1), -EINVAL, "a double free in an untouched chunk");
	if (!chunk_present(vol, 1))
		cr_assert_eq(bga__chunk_ensure(vol, 1) != NULL, true);
	struct memio m1, m2;
	struct bga_io io1, io2;
	memio_init(&m1, &io1);
	memio_init(&m2, &io2);
	cr_assert_eq(bga_store(vol, &io1), 0);
	cr_assert_eq(bga_store(vol, &io2), 0); /* a format at generation 2 */
	struct usedmap want;
	cr_assert_eq(usedmap_take(vol, &want), 0);
	struct bga_volume *back;
	cr_assert_eq(bga_load_ex(&io2, NULL, BGA_LOAD_PREFETCH, &back), 0);
	cr_assert(!chunk_present(back, 1), "nothing of chunk 1 to read");
	cr_assert_eq(bga_free_exact(back), 2 * chunk - 2);
	bga_destroy(back);
	bga_destroy(load_expect(&io2, BGA_LOAD_STRICT, &want));
	usedmap_free(&want);
	memio_free(&m1);
	memio_free(&m2);
	bga_destroy(vol);
}

/* ---- the file-backed io ---- */

Test(persist_errors, file_io_system_call_errors)
{
	struct bga_io io;
	cr_assert_eq(bga_io_file_open("/tmp/x", (uint64_t)INT64_MAX + 1, 1, &io), -EINVAL);
	cr_assert_eq(bga_io_file_open("/tmp/x", 0, 1, NULL), -EINVAL);
	bga_io_file_close(NULL);
	memset(&io, 0, sizeof(io));
	bga_io_file_close(&io);
	struct bga_volume *vol = make_volume(64 * 64, 64, 0), *back;
	/* a full device: the write fails, and the store says how */
	if (bga_io_file_open("/dev/full", 0, 0, &io) == 0) {
		cr_assert_eq(bga_store(vol, &io), -ENOSPC);
		bga_io_file_close(&io);
	} else {
		cr_log_warn("no /dev/full: the write error is not tried");
	}
	/* a device that cannot sync: the flush fails */
	if (bga_io_file_open("/dev/null", 0, 0, &io) == 0) {
		cr_assert_eq(bga_store(vol, &io), -EINVAL, "fdatasync on /dev/null");
		/* it reads as an empty area */
		cr_assert_eq(bga_load(&io, NULL, &back), -EUCLEAN);
		bga_io_file_close(&io);
	} else {
		cr_log_warn("no /dev/null: the flush error is not tried");
	}
	/* a read the kernel refuses: an offset plus length past off_t */
	char path[] = "/tmp/bga-perr-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(bga_io_file_open(path, (uint64_t)INT64_MAX - 100, 0, &io), 0);
	int rc = bga_load(&io, NULL, &back);
	cr_assert(rc < 0 && rc != -EUCLEAN, "the read error itself: %d", rc);
	cr_assert(bga_store(vol, &io) < 0);
	bga_io_file_close(&io);
	unlink(path);
	bga_destroy(vol);
}
