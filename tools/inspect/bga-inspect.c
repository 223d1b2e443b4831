/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-inspect: look at a file that holds a bgalloc metadata area
 * (docs/FORMAT.md), as an embedder's administrator would.
 *
 *   bga-inspect check IMG [--offset BYTES]
 *   bga-inspect freefrag IMG [--offset BYTES]
 *   bga-inspect dump IMG [--group N] [--offset BYTES]
 *   bga-inspect stats IMG --json [--offset BYTES]
 *   bga-inspect --help | --version
 *
 * Exit status: 0 clean (or the report printed), 1 the image is damaged,
 * holds no bgalloc superblock, or fails bga_check, 2 a usage or I/O error.
 * Errors name the file and the byte offset that was wrong.  "generation"
 * is the stored superblock's generation, which each completed bga_store
 * raises by one (bgafs fsck calls its own counter "superblock sequence").
 * The area is read through the public API alone: bga_scan
 * (<bgalloc/scan.h>) for the superblock, the descriptors and the
 * checksums, bga_load for the rest.  bga-inspect(1) is the manual.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <bgalloc.h>

struct opts {
	const char *cmd, *path;
	uint64_t base, group;
	bool have_group, json;
};

static const char usage_text[] =
	"usage: bga-inspect check|freefrag IMG [--offset BYTES]\n"
	"       bga-inspect dump IMG [--group N] [--offset BYTES]\n"
	"       bga-inspect stats IMG --json [--offset BYTES]\n"
	"       bga-inspect --help | --version\n"
	"\n"
	"Look at a file that holds a bgalloc metadata area (bga_store's format).\n"
	"  check     load it, check every checksum and invariant; exit 1 if not clean\n"
	"  freefrag  the free-extent histogram, as e2freefrag prints it\n"
	"  dump      the superblock and every group's descriptor (--group N: its free extents)\n"
	"  stats     bga_stats of the loaded volume, as JSON (--json)\n"
	"  -o, --offset BYTES  where the area starts in the file (a bgafs image: 8192)\n"
	"  -g, --group N       the group dump lists\n"
	"  -j, --json          JSON output (stats)\n"
	"  -h, --help          this text;  -V, --version  the version\n"
	"Exit status: 0 clean, 1 damaged, not a bgalloc area or not clean, 2 usage or I/O error.\n"
	"See bga-inspect(1).\n";

static int usage(void)
{
	fputs(usage_text, stderr);
	return 2;
}

static const char *state_name(uint32_t state)
{
	switch (state) {
	case BGA_SCAN_UNINIT: return "uninit";
	case BGA_SCAN_FULL: return "full";
	case BGA_SCAN_BITMAP: return "bitmap";
	case BGA_SCAN_QUARANTINED: return "quarantined";
	default: return "?";
	}
}

/* What scan prints of bga_scan's report: problems (level 1), each group
 * too (level 2); read errors always, on stderr. */
struct scan_out {
	const struct opts *o;
	int level;
	int ioerr;
};

static int scan_item(void *ctx, const struct bga_scan_item *it)
{
	struct scan_out *so = ctx;
	const char *path = so->o->path;
	uint64_t at = so->o->base + it->offset;
	FILE *out = so->level ? stdout : NULL;
	switch (it->kind) {
	case BGA_SCAN_SUPER_BAD:
		if (out)
			fprintf(out, "%s: byte %" PRIu64 ": superblock slot %u: %s\n", path, at, it->slot, it->why);
		break;
	case BGA_SCAN_GROUP_BAD:
		if (out)
			fprintf(out, "%s: byte %" PRIu64 ": group %" PRIu64 ": no valid descriptor (quarantined)\n", path,
				at, it->group);
		break;
	case BGA_SCAN_GROUP:
		if (so->level >= 2)
			fprintf(out, "group %8" PRIu64 "  %-11s gen %-6" PRIu64 " slot %u  free %u\n", it->group,
				state_name(it->state), it->gen, it->slot, it->free);
		if (out && it->state == BGA_SCAN_QUARANTINED)
			fprintf(out, "%s: byte %" PRIu64 ": group %" PRIu64 ": stored as quarantined\n", path, at,
				it->group);
		break;
	case BGA_SCAN_BITMAP_BAD:
		if (out)
			fprintf(out, "%s: byte %" PRIu64 ": group %" PRIu64 ": bitmap fails its checksum (quarantined)\n",
				path, at, it->group);
		break;
	case BGA_SCAN_READ:
		if (it->group != UINT64_MAX)
			fprintf(stderr, "%s: byte %" PRIu64 ": cannot read group %" PRIu64 "'s bitmap\n", path, at,
				it->group);
		else
			fprintf(stderr, "%s: byte %" PRIu64 ": read: %s\n", path, at, strerror(-it->err));
		so->ioerr = 1;
		break;
	}
	return 0;
}

/*
 * Walk the image's own bytes (bga_scan): the superblocks, then every
 * descriptor, naming each problem with its offset (level 1), and each
 * group too (level 2); level 0 prints nothing but read errors.  Returns
 * the problems found (0 clean), or -1 with *sb unset when no superblock
 * is valid; 1 is set in *ioerr on a read error.
 */
static long scan(const struct opts *o, const struct bga_io *io, struct bga_scan_sb *sb, int level, int *ioerr)
{
	struct scan_out so = {o, level, 0};
	int rc = bga_scan(io, 0, sb, scan_item, &so);
	if (so.ioerr)
		*ioerr = 1;
	if (rc == -ENODATA) {
		if (level)
			printf("%s: byte %" PRIu64 ": no valid superblock\n", o->path, o->base);
		return -1;
	}
	if (rc < 0) {
		if (!so.ioerr) /* not a read: memory */
			fprintf(stderr, "%s: %s\n", o->path, bga_strerror(rc));
		*ioerr = 1;
		return -1;
	}
	return rc;
}

/*
 * No superblock where we looked: look where embedders put their area
 * (bgafs: after its two superblock blocks, byte 8192) and say so.  Only a
 * superblock whose checksum holds counts, so the hint is never a guess.
 */
static void hint_offset(const struct opts *o)
{
	static const uint64_t offsets[] = {4096, 8192, 16384, 65536, 1u << 20};
	for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
		struct bga_io io;
		struct bga_scan_sb sb;
		if (offsets[i] == o->base || bga_io_file_open(o->path, offsets[i], 0, &io))
			continue;
		int rc = bga_scan(&io, BGA_SCAN_SUPER_ONLY, &sb, NULL, NULL);
		bga_io_file_close(&io);
		if (rc >= 0) {
			printf("%s: a bgalloc metadata area starts at byte %" PRIu64 "%s: try --offset %" PRIu64 "\n",
			       o->path, offsets[i], offsets[i] == 8192 ? " (a bgafs image keeps it there)" : "",
			       offsets[i]);
			return;
		}
	}
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
		struct bga_scan_sb sb;
		long n = scan(o, io, &sb, 1, &ioerr);
		printf("%s: does not load: %s%s\n", o->path, bga_strerror(rc),
		       n == 0 ? " (damage past the descriptors, or a truncated area)" : "");
		if (rc == -ENODATA)
			hint_offset(o);
		return ioerr || (rc != -EUCLEAN && rc != -ENODATA && rc != -EINVAL) ? 2 : 1;
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
	struct bga_scan_sb sb;
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

/* The shortest and the longest free extent, as e2freefrag prints them
 * (extents split at group boundaries, as bga_foreach_free reports them). */
struct minmax {
	uint64_t min, max;
};

static int minmax_extent(void *ctx, uint64_t start, uint64_t len)
{
	struct minmax *m = ctx;
	(void)start;
	if (m->min == 0 || len < m->min)
		m->min = len;
	if (len > m->max)
		m->max = len;
	return 0;
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
	struct minmax mm = {0, 0};
	if (st.free_blocks && (rc = bga_foreach_free(vol, 0, st.nblocks, 1, minmax_extent, &mm))) {
		fprintf(stderr, "bga-inspect: %s: walking the free extents: %s\n", o->path, bga_strerror(rc));
		rc = 2;
		bga_destroy(vol);
		goto out;
	}
	printf("Device: %s\nTotal blocks: %" PRIu64 "\nFree blocks: %" PRIu64 " (%.1f%%)\n\n", o->path, st.nblocks,
	       st.free_blocks, st.nblocks ? 100.0 * (double)st.free_blocks / (double)st.nblocks : 0.0);
	printf("Min. free extent: %" PRIu64 " blocks\nMax. free extent: %" PRIu64 " blocks\n", mm.min, mm.max);
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
	struct bga_scan_sb sb;
	int ioerr = 0;
	bool groups = !o->have_group;
	long problems = scan(o, &io, &sb, 0, &ioerr);
	if (problems < 0) {
		if (!ioerr) {
			scan(o, &io, &sb, 1, &ioerr);
			hint_offset(o);
		}
		bga_io_file_close(&io);
		return ioerr ? 2 : 1;
	}
	printf("superblock: generation %" PRIu64 ", uuid %016" PRIx64 ", version %u\n", sb.gen, sb.uuid,
	       sb.version);
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

/*
 * A JSON string for bytes that need not be UTF-8 (a file name): each byte
 * that does not start a well-formed UTF-8 sequence becomes U+FFFD, as
 * JSON text must be Unicode.  NULL only on ENOMEM.
 */
static json_t *json_bytes(const char *s)
{
	json_t *j = json_string(s);
	if (j)
		return j;
	size_t n = strlen(s), k = 0;
	char *out = malloc(3 * n + 1);
	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
		bool ok = len > 0 && i + len <= n;
		for (size_t t = 1; ok && t < len; t++)
			ok = ((unsigned char)s[i + t] >> 6) == 2;
		if (ok && len > 1) { /* overlong forms, surrogates and past U+10FFFF are not UTF-8 either */
			json_t *one = json_stringn(s + i, len);
			ok = one != NULL;
			json_decref(one);
		}
		if (ok) {
			memcpy(out + k, s + i, len);
			k += len;
			i += len;
		} else {
			memcpy(out + k, "\xef\xbf\xbd", 3);
			k += 3;
			i++;
		}
	}
	j = json_stringn(out, k);
	free(out);
	return j;
}

static int cmd_stats(const struct opts *o)
{
	struct bga_io io;
	struct bga_volume *vol;
	int rc = open_load(o, &io, &vol);
	if (rc)
		goto out;
	struct bga_stats st;
	struct bga_config cfg;
	json_t *hist = json_array(), *root = json_object();
	if ((rc = bga_stats(vol, &st)) || (rc = bga_volume_config(vol, &cfg)) || !hist || !root) {
		fprintf(stderr, "%s: %s\n", o->path, bga_strerror(rc ? rc : -ENOMEM));
		rc = 2;
		goto out_json;
	}
	for (int k = 0; k < BGA_HIST_ORDERS; k++)
		if (st.hist_count[k])
			json_array_append_new(hist, json_pack("{s:i, s:I, s:I}", "order", k, "extents",
							      (json_int_t)st.hist_count[k], "blocks",
							      (json_int_t)st.hist_blocks[k]));
	/* Insertion order is kept (jansson 2.8 and later). */
	json_object_set_new(root, "file", json_bytes(o->path));
	json_object_set_new(root, "offset", json_integer((json_int_t)o->base));
	json_object_set_new(root, "nblocks", json_integer((json_int_t)st.nblocks));
	json_object_set_new(root, "blocks_per_group", json_integer(cfg.blocks_per_group));
	json_object_set_new(root, "first_data_block", json_integer((json_int_t)cfg.first_data_block));
	json_object_set_new(root, "free_blocks", json_integer((json_int_t)st.free_blocks));
	json_object_set_new(root, "groups", json_integer((json_int_t)st.groups));
	json_object_set_new(root, "groups_initialised", json_integer((json_int_t)st.groups_initialised));
	json_object_set_new(root, "groups_quarantined", json_integer((json_int_t)st.groups_quarantined));
	json_object_set_new(root, "groups_repaired", json_integer((json_int_t)st.groups_repaired));
	json_object_set_new(root, "free_extents", json_integer((json_int_t)st.free_extents));
	json_object_set_new(root, "frag_score", json_real(st.frag_score));
	json_object_set_new(root, "last_committed_txn", json_integer((json_int_t)st.last_committed_txn));
	json_object_set_new(root, "histogram", hist);
	hist = NULL;
	if (json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(6)) || putchar('\n') == EOF) {
		fprintf(stderr, "%s: cannot write the JSON\n", o->path);
		rc = 2;
	}
out_json:
	json_decref(hist);
	json_decref(root);
	bga_destroy(vol);
out:
	bga_io_file_close(&io);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"offset", required_argument, NULL, 'o'}, {"group", required_argument, NULL, 'g'},
		{"json", no_argument, NULL, 'j'},         {"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},      {NULL, 0, NULL, 0},
	};
	struct opts o = {0};
	const char *pos[2];
	int npos = 0, c;
	char *end;
	opterr = 0;
	/* "-" first: positionals come back as 1, in place, so options may
	 * follow the image as they always could. */
	while ((c = getopt_long(argc, argv, "-o:g:jhV", longopts, NULL)) != -1) {
		switch (c) {
		case 1:
			if (npos == 2)
				return usage();
			pos[npos++] = optarg;
			break;
		case 'o':
			errno = 0;
			o.base = strtoull(optarg, &end, 0);
			if (*end || end == optarg || errno || optarg[0] == '-') {
				fprintf(stderr, "bga-inspect: bad offset '%s'\n", optarg);
				return usage();
			}
			break;
		case 'g':
			errno = 0;
			o.group = strtoull(optarg, &end, 0);
			o.have_group = true;
			if (*end || end == optarg || errno || optarg[0] == '-') {
				fprintf(stderr, "bga-inspect: bad group '%s'\n", optarg);
				return usage();
			}
			break;
		case 'j': o.json = true; break;
		case 'h': fputs(usage_text, stdout); return 0;
		case 'V': printf("bga-inspect (bgalloc) %s\n", bga_version()); return 0;
		default:
			fprintf(stderr, "bga-inspect: %s: unknown option or missing value\n", argv[optind - 1]);
			return usage();
		}
	}
	if (npos != 2)
		return usage();
	o.cmd = pos[0];
	o.path = pos[1];
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
