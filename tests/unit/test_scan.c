/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga_scan (<bgalloc/scan.h>): a stored area read without a load.  What
 * it reports is checked against the format's own offsets
 * (persist_format.h) and against what bga_load makes of the same area;
 * bad input gets its errno, reads nothing and changes nothing.
 */
#include "persist_image.h"

#define NBLOCKS 1000
#define BPG 64 /* 16 groups: two descriptor units */

/* Everything a scan reported, and the reads it made. */
struct seen {
	struct bga_scan_item it[64];
	int n, stop_at, stop_rc;
};

static int record(void *ctx, const struct bga_scan_item *it)
{
	struct seen *s = ctx;
	cr_assert_lt(s->n, 64);
	s->it[s->n++] = *it;
	return s->n == s->stop_at ? s->stop_rc : 0;
}

/* A memio that counts its reads, fails those that start in [fail_lo,
 * fail_hi) with fail_rc, and has no write or flush at all. */
struct rio {
	struct memio *m;
	long reads;
	uint64_t fail_lo, fail_hi, max_end;
	int fail_rc;
};

static int rio_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct rio *r = ctx;
	r->reads++;
	if (off + len > r->max_end)
		r->max_end = off + len;
	if (off >= r->fail_lo && off < r->fail_hi)
		return r->fail_rc;
	return memio_read(r->m, buf, len, off);
}

static struct bga_io rio_io(struct rio *r, struct memio *m)
{
	*r = (struct rio){.m = m};
	return (struct bga_io){.ctx = r, .read = rio_read};
}

static struct bga_volume *stored(struct memio *m, struct bga_io *io)
{
	return stored_volume(NBLOCKS, BPG, 10, m, io, NULL);
}

static void poison(struct bga_scan_sb *sb)
{
	memset(sb, 0xa5, sizeof(*sb));
}

static bool poisoned(const struct bga_scan_sb *sb)
{
	struct bga_scan_sb p;
	poison(&p);
	return memcmp(sb, &p, sizeof(p)) == 0;
}

/* The problems of the load of io: its quarantined groups. */
static uint64_t load_quarantines(const struct bga_io *io)
{
	struct bga_volume *v;
	cr_assert_eq(bga_load(io, NULL, &v), 0);
	struct bga_stats st;
	cr_assert_eq(bga_stats(v, &st), 0);
	bga_destroy(v);
	return st.groups_quarantined;
}

Test(scan, clean_area_reports_every_group_where_the_format_puts_it)
{
	struct memio m;
	struct bga_io io;
	struct bga_volume *vol = stored(&m, &io);
	struct bga_config cfg;
	struct bga_stats st;
	cr_assert_eq(bga_volume_config(vol, &cfg), 0);
	cr_assert_eq(bga_stats(vol, &st), 0);
	size_t size = m.size;
	unsigned char *before = malloc(size);
	memcpy(before, m.buf, size);

	struct rio r;
	struct bga_io ro = rio_io(&r, &m); /* no write, no flush: a scan needs neither */
	struct bga_scan_sb sb;
	struct seen s = {0};
	cr_assert_eq(bga_scan(&ro, 0, &sb, record, &s), 0, "a clean area has no problem");
	cr_assert_eq(sb.nblocks, cfg.nblocks);
	cr_assert_eq(sb.blocks_per_group, cfg.blocks_per_group);
	cr_assert_eq(sb.first_data_block, cfg.first_data_block);
	cr_assert_eq(sb.ngroups, (NBLOCKS + BPG - 1) / BPG);
	cr_assert_eq(sb.free_blocks, st.free_blocks);
	cr_assert_eq(sb.gen, 1);
	cr_assert_eq(sb.version, BGA_PF_VERSION);
	cr_assert_eq(s.n, (int)sb.ngroups, "one item per group, nothing else");
	uint64_t sum = 0;
	for (int i = 0; i < s.n; i++) {
		const struct bga_scan_item *it = &s.it[i];
		cr_assert_eq(it->kind, BGA_SCAN_GROUP);
		cr_assert_eq(it->group, (uint64_t)i, "groups in order");
		cr_assert_eq(it->offset, (uint64_t)(desc_at(&m, BPG, it->group, it->slot) - m.buf));
		cr_assert_eq(it->gen, 1);
		cr_assert(it->state >= BGA_SCAN_UNINIT && it->state <= BGA_SCAN_BITMAP);
		sum += it->free;
	}
	cr_assert_eq(sum, st.free_blocks, "the groups' stored free counts sum to the volume's");
	cr_assert_eq(memcmp(before, m.buf, size), 0, "a scan writes nothing");
	cr_assert_eq(m.size, size);
	free(before);
	bga_destroy(vol);
	memio_free(&m);
}

Test(scan, bad_input_gets_einval_reads_nothing_and_changes_nothing)
{
	struct memio m;
	struct bga_io io;
	struct bga_volume *vol = stored(&m, &io);
	struct rio r;
	struct bga_io ro = rio_io(&r, &m);
	struct bga_io noread = {.ctx = &r};
	struct bga_scan_sb sb;
	struct seen s = {0};
	poison(&sb);
	cr_assert_eq(bga_scan(NULL, 0, &sb, record, &s), -EINVAL);
	cr_assert_eq(bga_scan(&noread, 0, &sb, record, &s), -EINVAL);
	cr_assert_eq(bga_scan(&ro, 0, NULL, record, &s), -EINVAL);
	cr_assert_eq(bga_scan(&ro, 2, &sb, record, &s), -EINVAL, "an unknown flag");
	cr_assert_eq(bga_scan(&ro, ~0u, &sb, record, &s), -EINVAL);
	cr_assert(poisoned(&sb), "*sb unchanged");
	cr_assert_eq(s.n, 0, "cb never called");
	cr_assert_eq(r.reads, 0, "nothing read");
	bga_destroy(vol);
	memio_free(&m);
}

Test(scan, no_superblock_is_enodata_and_a_zero_slot_no_problem)
{
	struct memio m = {0};
	struct bga_io io;
	memio_init(&m, &io);
	cr_assert_eq(memio_grow(&m, 65536), 0);
	struct bga_scan_sb sb;
	struct seen s = {0};
	poison(&sb);
	cr_assert_eq(bga_scan(&io, 0, &sb, record, &s), -ENODATA);
	cr_assert_eq(s.n, 0, "zeros are no problem to report");
	cr_assert(poisoned(&sb));
	/* slot 1 written with garbage: one bad slot, named at byte 512 */
	memset(m.buf + BGA_PF_SECTOR, 0x3c, BGA_PF_SECTOR);
	cr_assert_eq(bga_scan(&io, 0, &sb, record, &s), -ENODATA);
	cr_assert_eq(s.n, 1);
	cr_assert_eq(s.it[0].kind, BGA_SCAN_SUPER_BAD);
	cr_assert_eq(s.it[0].slot, 1);
	cr_assert_eq(s.it[0].offset, BGA_PF_SECTOR);
	cr_assert_str_eq(s.it[0].why, "bad magic");
	cr_assert(poisoned(&sb));
	memio_free(&m);
}

Test(scan, a_damaged_superblock_slot_is_one_problem_the_other_serves)
{
	struct memio m;
	struct bga_io io;
	struct bga_volume *vol = stored(&m, &io);
	cr_assert_eq(bga_store(vol, &io), 0); /* both slots written: gen 1 and 2 */
	unsigned char *in_force = sb_in_force(&m);
	unsigned other = in_force == m.buf ? 1 : 0;
	in_force[40] ^= 1; /* its checksum fails: the older slot is the superblock */
	struct bga_scan_sb sb;
	struct seen s = {0};
	cr_assert_eq(bga_scan(&io, 0, &sb, record, &s), 1);
	cr_assert_eq(s.it[0].kind, BGA_SCAN_SUPER_BAD);
	cr_assert_eq(s.it[0].slot, 1 - other);
	cr_assert_str_eq(s.it[0].why, "bad superblock checksum");
	cr_assert_eq(sb.slot, other);
	cr_assert_eq(sb.gen, 1);
	bga_destroy(vol);
	memio_free(&m);
}

/* A group whose every record is damaged: GROUP_BAD at its descriptor
 * pair, and a load quarantines exactly that group. */
Test(scan, a_group_without_a_valid_descriptor_is_named_and_the_load_agrees)
{
	struct memio m;
	struct bga_io io;
	struct bga_volume *vol = stored(&m, &io);
	bga_destroy(vol);
	const uint64_t g = 9; /* in the second descriptor unit */
	desc_at(&m, BPG, g, 0)[12] ^= 0xff;
	desc_at(&m, BPG, g, 1)[12] ^= 0xff;
	struct bga_scan_sb sb;
	struct seen s = {0};
	cr_assert_eq(bga_scan(&io, 0, &sb, record, &s), 1);
	int bad = 0;
	for (int i = 0; i < s.n; i++)
		if (s.it[i].kind == BGA_SCAN_GROUP_BAD) {
			bad++;
			cr_assert_eq(s.it[i].group, g);
			cr_assert_eq(s.it[i].offset, (uint64_t)(desc_at(&m, BPG, g, 0) - m.buf));
		} else {
			cr_assert_eq(s.it[i].kind, BGA_SCAN_GROUP);
			cr_assert_neq(s.it[i].group, g);
		}
	cr_assert_eq(bad, 1);
	cr_assert_eq(s.n, (int)sb.ngroups);
	cr_assert_eq(load_quarantines(&io), 1);
	memio_free(&m);
}

Test(scan, a_bitmap_failing_its_checksum_is_named_at_its_offset)
{
	struct memio m;
	struct bga_io io;
	struct bga_volume *vol = stored(&m, &io);
	bga_destroy(vol);
	struct bga_scan_sb sb;
	struct seen s = {0};
	cr_assert_eq(bga_scan(&io, 0, &sb, record, &s), 0);
	int k = -1;
	for (int i = 0; i < s.n && k < 0; i++)
		if (s.it[i].state == BGA_SCAN_BITMAP)
			k = i;
	cr_assert_geq(k, 0, "the churn left a group stored with its bitmap");
	uint64_t g = s.it[k].group, off = bga_pf_bitmap_off(BPG, g, s.it[k].slot);
	m.buf[off + 3] ^= 0x5a;
	s.n = 0;
	cr_assert_eq(bga_scan(&io, 0, &sb, record, &s), 1);
	int n = 0;
	for (int i = 0; i < s.n; i++)
		if (s.it[i].kind == BGA_SCAN_BITMAP_BAD) {
			n++;
			cr_assert_eq(s.it[i].group, g);
			cr_assert_eq(s.it[i].offset, off);
			cr_assert_eq(i, k + 1, "right after its group's descriptor");
		}
	cr_assert_eq(n, 1);
	cr_assert_eq(load_quarantines(&io), 1);
	memio_free(&m);
}

Test(scan, read_errors_superblock_fatal_descriptors_reported_and_passed)
{
	struct memio m;
	struct bga_io io;
	struct bga_volume *vol = stored(&m, &io);
	bga_destroy(vol);
	struct rio r;
	struct bga_io ro = rio_io(&r, &m);
	struct bga_scan_sb sb;
	struct seen s = {0};
	/* the superblocks: the read's errno, *sb unchanged */
	r.fail_hi = 1;
	r.fail_rc = -EIO - 1000; /* any negative errno comes back as it is */
	poison(&sb);
	cr_assert_eq(bga_scan(&ro, 0, &sb, record, &s), -EIO - 1000);
	cr_assert_eq(s.n, 1);
	cr_assert_eq(s.it[0].kind, BGA_SCAN_READ);
	cr_assert_eq(s.it[0].offset, 0);
	cr_assert_eq(s.it[0].err, -EIO - 1000);
	cr_assert(poisoned(&sb));
	r.fail_rc = 7; /* out of contract: -EIO */
	cr_assert_eq(bga_scan(&ro, 0, &sb, NULL, NULL), -EIO);
	cr_assert(poisoned(&sb));
	/* the second unit's descriptor sector: one problem, its 8 groups
	 * unreported, the other 8 reported */
	uint64_t off = bga_pf_desc_off(BPG, 8);
	r.fail_lo = off;
	r.fail_hi = off + 1;
	r.fail_rc = -ENXIO;
	s.n = 0;
	cr_assert_eq(bga_scan(&ro, 0, &sb, record, &s), 1);
	cr_assert_eq(sb.gen, 1);
	int groups = 0, reads = 0;
	for (int i = 0; i < s.n; i++) {
		if (s.it[i].kind == BGA_SCAN_GROUP) {
			groups++;
			cr_assert_lt(s.it[i].group, 8);
		} else {
			reads++;
			cr_assert_eq(s.it[i].kind, BGA_SCAN_READ);
			cr_assert_eq(s.it[i].offset, off);
			cr_assert_eq(s.it[i].err, -ENXIO);
			cr_assert_eq(s.it[i].group, UINT64_MAX);
		}
	}
	cr_assert_eq(groups, 8);
	cr_assert_eq(reads, 1);
	memio_free(&m);
}

Test(scan, the_callback_stops_it)
{
	struct memio m;
	struct bga_io io;
	struct bga_volume *vol = stored(&m, &io);
	bga_destroy(vol);
	struct bga_scan_sb sb;
	struct seen s = {.stop_at = 3, .stop_rc = -42};
	cr_assert_eq(bga_scan(&io, 0, &sb, record, &s), -42);
	cr_assert_eq(s.n, 3, "nothing reported after the stop");
	s = (struct seen){.stop_at = 1, .stop_rc = 5};
	cr_assert_eq(bga_scan(&io, 0, &sb, record, &s), -ECANCELED, "a positive stop is no count of problems");
	cr_assert_eq(s.n, 1);
	memio_free(&m);
}

Test(scan, super_only_reads_the_superblocks_alone)
{
	struct memio m;
	struct bga_io io;
	struct bga_volume *vol = stored(&m, &io);
	bga_destroy(vol);
	desc_at(&m, BPG, 3, 0)[12] ^= 0xff; /* a problem it must not see */
	desc_at(&m, BPG, 3, 1)[12] ^= 0xff;
	struct rio r;
	struct bga_io ro = rio_io(&r, &m);
	struct bga_scan_sb sb;
	struct seen s = {0};
	cr_assert_eq(bga_scan(&ro, BGA_SCAN_SUPER_ONLY, &sb, record, &s), 0);
	cr_assert_eq(s.n, 0);
	cr_assert_eq(r.reads, 1);
	cr_assert_leq(r.max_end, 2 * BGA_PF_SECTOR);
	cr_assert_eq(sb.nblocks, NBLOCKS);
	cr_assert_eq(bga_scan(&ro, 0, &sb, NULL, NULL), 1, "the full scan does see it");
	memio_free(&m);
}
