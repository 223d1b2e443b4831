/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-inspect: look at a file that holds a bgalloc metadata area
 * (docs/FORMAT.md), as an embedder's administrator would.
 *
 *   bga-inspect check IMG [--offset BYTES]
 *   bga-inspect freefrag IMG [--offset BYTES]
 *   bga-inspect dump IMG [--group N] [--offset BYTES]
 *   bga-inspect stats IMG --json [--offset BYTES]
 *
 * Exit status: 0 clean (or the report printed), 1 the image is damaged or
 * fails bga_check, 2 a usage or I/O error.  Errors name the file and the
 * byte offset that was wrong.  The format itself is read through
 * lib/persist/persist_format.h, so this program links the static library.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc.h>

#include "persist.h"
#include "persist_format.h"

struct opts {
	const char *cmd, *path;
	uint64_t base, group;
	bool have_group, json;
};

static int usage(void)
{
	fprintf(stderr, "usage: bga-inspect check|freefrag IMG [--offset BYTES]\n"
			"       bga-inspect dump IMG [--group N] [--offset BYTES]\n"
			"       bga-inspect stats IMG --json [--offset BYTES]\n");
	return 2;
}

static const char *kind_name(uint32_t flags)
{
	switch (flags) {
	case BGA_DF_UNINIT: return "uninit";
	case BGA_DF_FULL: return "full";
	case BGA_DF_BITMAP: return "bitmap";
	case BGA_DF_QUARANTINED: return "quarantined";
	default: return "?";
	}
}

/*
 * Walk the image's own bytes: the superblocks, then every descriptor
 * sector, naming each problem with its offset (level 1), and each group
 * too (level 2); level 0 prints nothing.  Returns the problems
 * found (0 clean), or -1 with *sb unset when no superblock is valid; 2 is
 * returned through *ioerr on a read error.
 */
static long scan(const struct opts *o, const struct bga_io *io, struct bga_pf_sb *sb, int level, int *ioerr)
{
	unsigned char buf[1024];
	long problems = 0;
	FILE *out = level ? stdout : fopen("/dev/null", "w");
	if (out == NULL)
		out = stdout;
	int rc = io->read(io->ctx, buf, sizeof(buf), 0);
	if (rc) {
		fprintf(stderr, "%s: byte %" PRIu64 ": read: %s\n", o->path, o->base, strerror(-rc));
		*ioerr = 1;
		if (out != stdout)
			fclose(out);
		return -1;
	}
	int found = 0;
	for (int s = 0; s < 2; s++) {
		struct bga_pf_sb cur;
		const char *why = NULL;
		bool zero = true;
		for (int i = 0; i < 512; i++)
			zero &= buf[512 * s + i] == 0;
		if (zero)
			continue;
		if (bga__pf_sb_decode(buf + 512 * s, &cur, &why)) {
			fprintf(out, "%s: byte %" PRIu64 ": superblock slot %d: %s\n", o->path, o->base + 512 * (uint64_t)s, s,
			       why);
			problems++;
			continue;
		}
		if (!found || cur.gen > sb->gen)
			*sb = cur;
		found = 1;
	}
	if (!found) {
		fprintf(out, "%s: byte %" PRIu64 ": no valid superblock\n", o->path, o->base);
		if (out != stdout)
			fclose(out);
		return -1;
	}
	uint32_t bpg = sb->blocks_per_group;
	unsigned char sec[BGA_PF_SECTOR];
	for (uint64_t g0 = 0; g0 < sb->ngroups; g0 += BGA_PF_UNIT_GROUPS) {
		uint64_t off = bga_pf_desc_off(bpg, g0);
		if ((rc = io->read(io->ctx, sec, sizeof(sec), off))) {
			fprintf(stderr, "%s: byte %" PRIu64 ": read: %s\n", o->path, o->base + off, strerror(-rc));
			*ioerr = 1;
			break;
		}
		for (uint64_t g = g0; g < g0 + BGA_PF_UNIT_GROUPS && g < sb->ngroups; g++) {
			struct bga_pgroup r[2];
			int ok[2], best = -1;
			for (unsigned s = 0; s < 2; s++) {
				ok[s] = bga__pf_desc_decode(sec + (g - g0) * 64 + 32 * s, sb->uuid, g, bpg, &r[s]) &&
					r[s].gen <= sb->gen;
				if (ok[s] && (best < 0 || r[s].gen > r[best].gen))
					best = (int)s;
			}
			uint64_t doff = o->base + off + (g - g0) * 64;
			if (best < 0) {
				fprintf(out, "%s: byte %" PRIu64 ": group %" PRIu64 ": no valid descriptor (quarantined)\n",
				       o->path, doff, g);
				problems++;
				continue;
			}
			if (level >= 2)
				fprintf(out, "group %8" PRIu64 "  %-11s gen %-6" PRIu64 " slot %d  free %u\n", g,
				       kind_name(r[best].flags), r[best].gen, best, r[best].free);
			if (r[best].flags == BGA_DF_QUARANTINED) {
				fprintf(out, "%s: byte %" PRIu64 ": group %" PRIu64 ": stored as quarantined\n", o->path,
				       doff + 32 * (uint64_t)best, g);
				problems++;
			} else if (r[best].flags == BGA_DF_BITMAP) {
				uint32_t bb = bga_pf_bitmap_bytes(bpg);
				unsigned char *bm = malloc(bb);
				uint64_t boff = bga_pf_bitmap_off(bpg, g, (unsigned)best);
				if (bm == NULL || io->read(io->ctx, bm, bb, boff)) {
					fprintf(stderr, "%s: byte %" PRIu64 ": cannot read group %" PRIu64 "'s bitmap\n",
						o->path, o->base + boff, g);
					free(bm);
					*ioerr = 1;
					break;
				}
				if (bga_pf_crc(bm, bb) != r[best].bmcrc) {
					fprintf(out, "%s: byte %" PRIu64 ": group %" PRIu64 ": bitmap fails its checksum (quarantined)\n",
					       o->path, o->base + boff, g);
					problems++;
				}
				free(bm);
			}
		}
	}
	if (out != stdout)
		fclose(out);
	return problems;
}

static int open_load(const struct opts *o, struct bga_io *io, struct bga_volume **vol)
{
	int rc = bga_io_file_open(o->path, o->base, 0, io);
	if (rc) {
		fprintf(stderr, "%s: %s\n", o->path, strerror(-rc));
		return 2;
	}
	rc = bga_load(io, NULL, vol);
	if (rc) {
		int ioerr = 0;
		struct bga_pf_sb sb;
		long n = scan(o, io, &sb, 1, &ioerr);
		printf("%s: does not load: %s%s\n", o->path, bga_strerror(rc),
		       n == 0 ? " (damage past the descriptors, or a truncated area)" : "");
		return ioerr || (rc != -EUCLEAN && rc != -EINVAL) ? 2 : 1;
	}
	return 0;
}

static int cmd_check(const struct opts *o)
{
	struct bga_io io;
	struct bga_volume *vol;
	int rc = open_load(o, &io, &vol);
	if (rc)
		goto out;
	int ioerr = 0;
	struct bga_pf_sb sb;
	long problems = scan(o, &io, &sb, 1, &ioerr);
	struct bga_check_report r;
	int crc = bga_check(vol, &r);
	if (crc)
		printf("%s: bga_check: %d violation(s), the first: %s\n", o->path, r.violations, r.message);
	struct bga_stats st;
	bga_stats(vol, &st);
	printf("%s: generation %" PRIu64 ", %" PRIu64 " blocks, %" PRIu64 " free, %" PRIu64
	       " groups (%" PRIu64 " quarantined, %" PRIu64 " counts repaired): %s\n",
	       o->path, sb.gen, st.nblocks, st.free_blocks, st.groups, st.groups_quarantined, st.groups_repaired,
	       crc || problems ? "NOT CLEAN" : "clean");
	rc = ioerr ? 2 : crc || problems ? 1 : 0;
	bga_destroy(vol);
out:
	bga_io_file_close(&io);
	return rc;
}

static int cmd_freefrag(const struct opts *o)
{
	struct bga_io io;
	struct bga_volume *vol;
	int rc = open_load(o, &io, &vol);
	if (rc)
		goto out;
	struct bga_stats st;
	bga_stats(vol, &st);
	uint64_t minx = 0, maxx = 0;
	for (int k = 0; k < BGA_HIST_ORDERS; k++)
		if (st.hist_count[k]) {
			if (!minx)
				minx = UINT64_C(1) << k;
			maxx = UINT64_C(1) << k;
		}
	printf("Device: %s\nTotal blocks: %" PRIu64 "\nFree blocks: %" PRIu64 " (%.1f%%)\n\n", o->path, st.nblocks,
	       st.free_blocks, st.nblocks ? 100.0 * (double)st.free_blocks / (double)st.nblocks : 0.0);
	printf("Min. free extent order: %" PRIu64 " blocks\nMax. free extent order: %" PRIu64 " blocks\n", minx, maxx);
	printf("Avg. free extent: %.1f blocks\nNum. free extent: %" PRIu64 "\nFragmentation score: %.4f\n\n",
	       st.free_extents ? (double)st.free_blocks / (double)st.free_extents : 0.0, st.free_extents,
	       st.frag_score);
	printf("HISTOGRAM OF FREE EXTENT SIZES:\n%s\n", "Extent Size Range :  Free extents   Free Blocks  Percent");
	for (int k = 0; k < BGA_HIST_ORDERS; k++) {
		if (!st.hist_count[k])
			continue;
		printf("%9" PRIu64 "-%9" PRIu64 " :  %12" PRIu64 "  %12" PRIu64 "  %6.2f%%\n", UINT64_C(1) << k,
		       (UINT64_C(2) << k) - 1, st.hist_count[k], st.hist_blocks[k],
		       st.free_blocks ? 100.0 * (double)st.hist_blocks[k] / (double)st.free_blocks : 0.0);
	}
	bga_destroy(vol);
out:
	bga_io_file_close(&io);
	return rc;
}

static int print_extent(void *ctx, uint64_t start, uint64_t len)
{
	(void)ctx;
	printf("  free %" PRIu64 "-%" PRIu64 " (%" PRIu64 " blocks)\n", start, start + len - 1, len);
	return 0;
}

static int cmd_dump(const struct opts *o)
{
	struct bga_io io;
	int rc = bga_io_file_open(o->path, o->base, 0, &io);
	if (rc) {
		fprintf(stderr, "%s: %s\n", o->path, strerror(-rc));
		return 2;
	}
	struct bga_pf_sb sb;
	int ioerr = 0;
	bool groups = !o->have_group;
	long problems = scan(o, &io, &sb, 0, &ioerr);
	if (problems < 0) {
		bga_io_file_close(&io);
		return ioerr ? 2 : 1;
	}
	printf("superblock: generation %" PRIu64 ", uuid %016" PRIx64 ", version %u\n", sb.gen, sb.uuid,
	       BGA_PF_VERSION);
	printf("  nblocks %" PRIu64 ", groups %" PRIu64 ", blocks_per_group %u, first_data_block %" PRIu64 "\n",
	       sb.nblocks, sb.ngroups, sb.blocks_per_group, sb.first_data_block);
	printf("  free %" PRIu64 ", groups initialised %" PRIu64 ", last txn %" PRIu64 ", digest %016" PRIx64 "\n",
	       sb.free_blocks, sb.groups_inited, sb.last_txn, sb.digest);
	printf("  lock_slots %u, counter_batch %d, rsv_default %u, rsv_max %u, flags %#x, lock_kind %u\n",
	       sb.lock_slots, sb.counter_batch, sb.rsv_default, sb.rsv_max, sb.flags, sb.lock_kind);
	if (groups)
		scan(o, &io, &sb, 2, &ioerr);
	if (o->have_group) {
		struct bga_volume *vol;
		if (o->group >= sb.ngroups) {
			fprintf(stderr, "%s: no group %" PRIu64 " (%" PRIu64 " groups)\n", o->path, o->group, sb.ngroups);
			bga_io_file_close(&io);
			return 2;
		}
		rc = bga_load(&io, NULL, &vol);
		if (rc) {
			printf("%s: does not load: %s\n", o->path, bga_strerror(rc));
			bga_io_file_close(&io);
			return 1;
		}
		uint64_t first = o->group * sb.blocks_per_group;
		uint64_t end = first + sb.blocks_per_group < sb.nblocks ? first + sb.blocks_per_group : sb.nblocks;
		printf("group %" PRIu64 ": blocks %" PRIu64 "-%" PRIu64 "\n", o->group, first, end - 1);
		bga_foreach_free(vol, first, end, 1, print_extent, NULL);
		bga_destroy(vol);
	}
	bga_io_file_close(&io);
	return ioerr ? 2 : problems ? 1 : 0;
}

static int cmd_stats(const struct opts *o)
{
	struct bga_io io;
	struct bga_volume *vol;
	int rc = open_load(o, &io, &vol);
	if (rc)
		goto out;
	struct bga_stats st;
	bga_stats(vol, &st);
	struct bga_config cfg;
	bga_volume_config(vol, &cfg);
	printf("{\n  \"file\": \"%s\",\n  \"nblocks\": %" PRIu64 ",\n  \"blocks_per_group\": %u,\n", o->path,
	       st.nblocks, cfg.blocks_per_group);
	printf("  \"first_data_block\": %" PRIu64 ",\n  \"free_blocks\": %" PRIu64 ",\n", cfg.first_data_block,
	       st.free_blocks);
	printf("  \"groups\": %" PRIu64 ",\n  \"groups_initialised\": %" PRIu64 ",\n", st.groups,
	       st.groups_initialised);
	printf("  \"groups_quarantined\": %" PRIu64 ",\n  \"groups_repaired\": %" PRIu64 ",\n", st.groups_quarantined,
	       st.groups_repaired);
	printf("  \"free_extents\": %" PRIu64 ",\n  \"frag_score\": %.6f,\n", st.free_extents, st.frag_score);
	printf("  \"last_committed_txn\": %" PRIu64 ",\n  \"histogram\": [", st.last_committed_txn);
	bool first = true;
	for (int k = 0; k < BGA_HIST_ORDERS; k++) {
		if (!st.hist_count[k])
			continue;
		printf("%s\n    {\"order\": %d, \"extents\": %" PRIu64 ", \"blocks\": %" PRIu64 "}", first ? "" : ",", k,
		       st.hist_count[k], st.hist_blocks[k]);
		first = false;
	}
	printf("\n  ]\n}\n");
	bga_destroy(vol);
out:
	bga_io_file_close(&io);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	if (argc < 3)
		return usage();
	o.cmd = argv[1];
	o.path = argv[2];
	for (int i = 3; i < argc; i++) {
		char *end;
		if (strcmp(argv[i], "--json") == 0) {
			o.json = true;
		} else if (strcmp(argv[i], "--group") == 0 && i + 1 < argc) {
			o.group = strtoull(argv[++i], &end, 0);
			o.have_group = true;
			if (*end)
				return usage();
		} else if (strcmp(argv[i], "--offset") == 0 && i + 1 < argc) {
			o.base = strtoull(argv[++i], &end, 0);
			if (*end)
				return usage();
		} else {
			return usage();
		}
	}
	if (strcmp(o.cmd, "check") == 0 && !o.have_group && !o.json)
		return cmd_check(&o);
	if (strcmp(o.cmd, "freefrag") == 0 && !o.have_group && !o.json)
		return cmd_freefrag(&o);
	if (strcmp(o.cmd, "dump") == 0 && !o.json)
		return cmd_dump(&o);
	if (strcmp(o.cmd, "stats") == 0 && o.json && !o.have_group)
		return cmd_stats(&o);
	return usage();
}
