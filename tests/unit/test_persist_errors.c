/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The persistence code's error paths (issue 16), part one: damaged or
 * hostile images that a crash cannot make (geometry, superblocks,
 * descriptors, bitmaps).  Each damaged image is crafted consistent except
 * for the one fault (checksums and the superblock digest redone), so that
 * the test shows the check it names is the one that refuses it.  Callbacks
 * and the store's recovery are in test_persist_io.c; allocation failure
 * in test_faults_persist.c.
 */
#include "persist_image.h"

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
		{1000, 64, 1001},               /* first_data_block past the end */
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
/* Group g's stored bitmap (bpg 64) with `bit` cleared, outside the
 * group's usable span, its checksum redone: a load quarantines the group
 * (it counts as wholly used), a strict load refuses the image. */
static void misshapen_bitmap_quarantined(uint64_t nblocks, uint64_t fdb, uint64_t g, unsigned bit)
{
	const uint32_t bpg = 64;
	struct memio m;
	struct bga_io io;
	struct bga_volume *vol = make_volume(nblocks, bpg, fdb);
	struct bga_request req = {.goal = g * bpg + 10, .min_len = 3, .max_len = 3, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0); /* group g gets a bitmap */
	memio_init(&m, &io);
	cr_assert_eq(bga_store(vol, &io), 0);
	uint64_t uuid = bga_pf_get64(sb_in_force(&m) + BGA_SB_UUID);
	struct bga_pgroup old;
	desc_slot_in_force(&m, bpg, g, uuid, &old);
	cr_assert_eq(old.flags, BGA_DF_BITMAP);
	unsigned char *bm = m.buf + bga_pf_bitmap_off(bpg, g, old.slot);
	cr_assert(bm[bit / 8] & (1u << (bit % 8)), "blocks outside the span are stored set");
	bm[bit / 8] &= (unsigned char)~(1u << (bit % 8));
	struct bga_pgroup r = old;
	r.bmcrc = bga_pf_crc(bm, bga_pf_bitmap_bytes(bpg));
	desc_rewrite(&m, bpg, g, &old, &r);
	load_fails(&io, NULL, BGA_LOAD_STRICT, -EUCLEAN, "strict load of a misshapen bitmap");
	struct bga_volume *back;
	cr_assert_eq(bga_load(&io, NULL, &back), 0);
	struct bga_stats st;
	cr_assert_eq(bga_stats(back, &st), 0);
	cr_assert_eq(st.groups_quarantined, 1);
	struct bga_group_stats gs = {.size = sizeof(gs)};
	cr_assert_eq(bga_group_stats(back, g, &gs), 0);
	cr_assert(gs.flags & BGA_GSTAT_QUARANTINED, "group stats do not flag the quarantined group");
	cr_assert_eq(bga_free(back, e.start, e.len), -EUCLEAN);
	uint64_t span = BGA_MIN(nblocks, (g + 1) * bpg) - BGA_MAX(fdb, g * bpg);
	cr_assert_eq(bga_free_exact(back), nblocks - fdb - span, "group %llu counts as wholly used",
		     (unsigned long long)g);
	assert_only_quarantine(back, 1, g);
	bga_destroy(back);
	memio_free(&m);
	bga_destroy(vol);
}

Test(persist_errors, bitmap_with_a_free_bit_outside_the_span_is_quarantined)
{
	misshapen_bitmap_quarantined(64 * 8, 5, 0, 0);  /* below first_data_block */
	misshapen_bitmap_quarantined(64 * 7 + 40, 0, 7, 50); /* past a short last group's end */
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
	struct usedmap want;
	store_fresh(vol, &m, &io, &want);
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


/* Neither slot holds bgalloc's magic, and the format version stands
 * alone (the size beside it is not the superblock's): no superblock at
 * all, -ENODATA, not damage (bga_load: "neither slot holds bgalloc's
 * magic ... -ENODATA"). */
Test(persist_errors, no_magic_in_either_slot_is_no_superblock)
{
	struct memio m;
	struct bga_io io;
	struct bga_volume *vol = stored_volume(64 * 40, 64, 0, &m, &io, NULL);
	cr_assert_eq(bga_store(vol, &io), 0); /* both slots valid */
	for (unsigned s = 0; s < 2; s++) {
		unsigned char *b = m.buf + s * BGA_PF_SECTOR;
		b[BGA_SB_MAGIC] = 'X';
		bga_pf_put32(b + BGA_SB_SIZE, 1024);
		sb_reseal(b);
	}
	load_fails(&io, NULL, 0, -ENODATA, "no magic in either slot");
	memio_free(&m);
	bga_destroy(vol);
}
