/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Aging: fill a 2^20-block volume to 90% with files of random size, then
 * for ten rounds delete a tenth of the files and write new ones at random
 * goals.  The same operation sequence runs on bgalloc and on the libext2fs
 * peer (an mke2fs image, as fuse2fs uses it).  A file of L blocks is
 * written the way a file system does it: ask for the rest of the file at
 * the goal, take whatever extent comes back, aim the next request right
 * after it.
 *
 * Prints the free-extent histogram (e2freefrag's buckets) and the
 * fragmentation score of <bgalloc.h> for both, computed here by one
 * function from each side's free extents, so the two are comparable; the
 * score bga_stats() reports is printed beside ours as a cross-check.
 *
 *   bga-aging [--seed N] [--rounds N] [--json FILE] [--whole]
 * --whole: bgalloc's requests carry BGA_WHOLE (a run that holds the rest
 * of the file first), to measure what that rule does to files.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bgalloc.h>

#include "args.h"
#include "peer_ext2.h"

#define NBLOCKS (UINT64_C(1) << 20)
#define GROUP 32768 /* ext4's blocks per group at 4 KiB, and ours */
#define MAX_FILE 512
#define MAX_EXTENTS_PER_FILE 64
#define HIST 21
#define MIN(a, b) ((a) < (b) ? (a) : (b))

struct file {
	uint32_t n;
	struct bga_extent ext[MAX_EXTENTS_PER_FILE];
};

struct side {
	const char *name;
	struct bga_volume *vol;
	struct peer_ext2 *peer;
	struct file *files;
	size_t nfiles, cap;
	uint64_t used;
	uint64_t hist_count[HIST], hist_blocks[HIST], free_blocks, extents;
	double score;
};

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* --whole: bga_request.flags of bgalloc's requests. */
static uint32_t req_flags;

/* One extent of up to `want` blocks at or after `goal`.  0 or -ENOSPC. */
static int side_alloc(struct side *sd, uint64_t goal, uint64_t want, struct bga_extent *out)
{
	if (sd->vol) {
		struct bga_request req = {.goal = goal, .min_len = 1, .max_len = want, .flags = req_flags};
		return bga_alloc(sd->vol, &req, out);
	}
	ext2_filsys fs = peer_ext2_fs(sd->peer);
	blk64_t start, len;
	errcode_t e = ext2fs_new_range(fs, 0, goal, want, NULL, &start, &len);
	if (e == EXT2_ET_BLOCK_ALLOC_FAIL) /* nothing at or after goal: wrap, as ext2 does */
		e = ext2fs_new_range(fs, 0, fs->super->s_first_data_block, want, NULL, &start, &len);
	if (e)
		return -ENOSPC;
	ext2fs_block_alloc_stats_range(fs, start, len, +1);
	out->start = start;
	out->len = len;
	return 0;
}

static void side_free(struct side *sd, const struct bga_extent *e)
{
	int rc = sd->vol ? bga_free(sd->vol, e->start, e->len) : peer_ext2_free(sd->peer, e->start, e->len);
	if (rc) {
		fprintf(stderr, "aging: %s: free %llu+%llu failed: %d\n", sd->name, (unsigned long long)e->start,
			(unsigned long long)e->len, rc);
		exit(1);
	}
}

/* Write a file of `len` blocks starting at `goal`; false when full. */
static bool write_file(struct side *sd, uint64_t goal, uint64_t len)
{
	struct file f = {0};
	while (len > 0 && f.n < MAX_EXTENTS_PER_FILE) {
		struct bga_extent e;
		if (side_alloc(sd, goal, len, &e) != 0)
			break;
		f.ext[f.n++] = e;
		len -= e.len;
		sd->used += e.len;
		goal = e.start + e.len < NBLOCKS ? e.start + e.len : 0;
	}
	if (f.n == 0)
		return false;
	if (sd->nfiles == sd->cap) {
		sd->cap = sd->cap ? 2 * sd->cap : 1024;
		sd->files = realloc(sd->files, sd->cap * sizeof(*sd->files));
		if (!sd->files)
			exit(1);
	}
	sd->files[sd->nfiles++] = f;
	return len == 0;
}

static void delete_file(struct side *sd, size_t k)
{
	struct file *f = &sd->files[k];
	for (uint32_t i = 0; i < f->n; i++) {
		side_free(sd, &f->ext[i]);
		sd->used -= f->ext[i].len;
	}
	sd->files[k] = sd->files[--sd->nfiles];
}

/* The files' extents over their number: how many pieces a file's
 * writes came back in. */
static double extents_per_file(const struct side *sd)
{
	uint64_t n = 0;
	for (size_t k = 0; k < sd->nfiles; k++)
		n += sd->files[k].n;
	return sd->nfiles ? (double)n / (double)sd->nfiles : 0;
}

/* The same random sequence drives both sides: each side gets its own copy
 * of the generator, so only the allocators' answers differ. */
static void age(struct side *sd, uint64_t seed, int rounds, uint64_t capacity)
{
	uint64_t s = seed;
	uint64_t target = capacity * 9 / 10;
	while (sd->used < target) {
		uint64_t goal = rng_next(&s) % NBLOCKS, len = 1 + rng_next(&s) % MAX_FILE;
		if (!write_file(sd, goal, MIN(len, target - sd->used)))
			break;
	}
	for (int r = 0; r < rounds; r++) {
		size_t kill = sd->nfiles / 10;
		for (size_t i = 0; i < kill && sd->nfiles; i++)
			delete_file(sd, rng_next(&s) % sd->nfiles);
		while (sd->used < target) {
			uint64_t goal = rng_next(&s) % NBLOCKS, len = 1 + rng_next(&s) % MAX_FILE;
			if (!write_file(sd, goal, MIN(len, target - sd->used)))
				break;
		}
	}
}

struct scorer {
	struct side *sd;
	double actual; /* sum over free extents of len * log2(len) */
};

static int score_cb(void *ctx, uint64_t start, uint64_t len)
{
	struct scorer *sc = ctx;
	struct side *sd = sc->sd;
	unsigned k = 63u - (unsigned)__builtin_clzll(len);
	(void)start;
	sd->hist_count[k]++;
	sd->hist_blocks[k] += len;
	sd->free_blocks += len;
	sd->extents++;
	sc->actual += (double)len * log2((double)len);
	return 0;
}

/* The peer's free runs, split at group boundaries like bga_foreach_free's. */
static void ext2_foreach_free(struct side *sd, bga_extent_cb cb, void *ctx)
{
	ext2_filsys fs = peer_ext2_fs(sd->peer);
	uint64_t run = 0, end = ext2fs_blocks_count(fs->super);
	for (uint64_t b = fs->super->s_first_data_block; b < end; b++) {
		bool used = ext2fs_test_block_bitmap2(fs->block_map, b);
		if (!used)
			run++;
		if ((used || (b + 1) % GROUP == 0 || b + 1 == end) && run) {
			cb(ctx, b + !used - run, run);
			run = 0;
		}
	}
}

/* The score defined in <bgalloc.h> (struct bga_stats.frag_score). */
static double frag_score(const struct scorer *sc)
{
	double F = (double)sc->sd->free_blocks, G = GROUP;
	double full = floor(F / G), rest = F - full * G;
	double ideal = full * G * log2(G) + (rest > 1 ? rest * log2(rest) : 0);
	double s = ideal > 0 ? (ideal - sc->actual) / ideal : 0;
	return s < 0 ? 0 : s;
}

struct result {
	double ours, peer;
};

/* One aging run; prints the histogram when `verbose`. */
static int run_once(uint64_t seed, int rounds, bool verbose, struct result *res)
{
	struct side ours = {.name = "bgalloc"}, peer = {.name = "libext2fs"};
	struct bga_config cfg;
	bga_config_init(&cfg, NBLOCKS);
	if (bga_create(&cfg, &ours.vol) != 0)
		return -1;
	char path[] = "/tmp/bga-aging-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || close(fd) != 0 || peer_ext2_create(path, NBLOCKS, &peer.peer) != 0) {
		fprintf(stderr, "aging: cannot make the ext2 image\n");
		bga_destroy(ours.vol);
		return -1;
	}
	/* Both sides age the same amount of data: 90% of the smaller free
	 * space (the image's metadata takes some of the peer's blocks). */
	uint64_t capacity = MIN(bga_free_exact(ours.vol), peer_ext2_free_blocks(peer.peer));
	age(&ours, seed, rounds, capacity);
	age(&peer, seed, rounds, capacity);

	struct scorer so = {&ours, 0}, sp = {&peer, 0};
	bga_foreach_free(ours.vol, 0, NBLOCKS, 1, score_cb, &so);
	ext2_foreach_free(&peer, score_cb, &sp);
	res->ours = ours.score = frag_score(&so);
	res->peer = peer.score = frag_score(&sp);
	struct bga_stats st;
	bga_stats(ours.vol, &st);
	printf("seed %#-20llx files %6zu  free extents %6llu / %6llu  score %.4f / %.4f  (bga_stats %.4f)  "
	       "extents per file %.2f / %.2f\n",
	       (unsigned long long)seed, ours.nfiles, (unsigned long long)ours.extents,
	       (unsigned long long)peer.extents, ours.score, peer.score, st.frag_score, extents_per_file(&ours),
	       extents_per_file(&peer));
	if (verbose) {
		printf("\n  free extents by size (e2freefrag buckets)   bgalloc count/blocks   libext2fs count/blocks\n");
		for (unsigned k = 0; k < HIST; k++) {
			if (!ours.hist_count[k] && !peer.hist_count[k])
				continue;
			char label[32];
			snprintf(label, sizeof(label), "%lluK-%lluK", (1ull << k) * 4, (2ull << k) * 4);
			printf("  %-18s %23llu %9llu %13llu %9llu\n", label,
			       (unsigned long long)ours.hist_count[k], (unsigned long long)ours.hist_blocks[k],
			       (unsigned long long)peer.hist_count[k], (unsigned long long)peer.hist_blocks[k]);
		}
		printf("\n");
	}
	free(ours.files);
	free(peer.files);
	bga_destroy(ours.vol);
	peer_ext2_destroy(peer.peer);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	uint64_t seed = 1;
	int rounds = 10, reps = 5;
	const char *json = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = arg_u64("bga-aging", "--seed", argv[++i], 0, UINT64_MAX / 2);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = arg_int("bga-aging", "--rounds", argv[++i], 0, 100000);
		else if (!strcmp(argv[i], "--repetitions") && i + 1 < argc)
			reps = arg_int("bga-aging", "--repetitions", argv[++i], 1, 100);
		else if (!strcmp(argv[i], "--json") && i + 1 < argc)
			json = argv[++i];
		else if (!strcmp(argv[i], "--whole"))
			req_flags = BGA_WHOLE;
		else {
			fprintf(stderr, "usage: %s [--seed N] [--rounds N] [--repetitions N] [--json FILE] [--whole]\n",
				argv[0]);
			return 2;
		}
	}
	/* The JSON file is opened before the measurement, so that a path
	 * that cannot be written fails now, not after minutes of work. */
	FILE *jf = NULL;
	if (json && (jf = fopen(json, "w")) == NULL) {
		fprintf(stderr, "bga-aging: --json %s: %s\n", json, strerror(errno));
		return 1;
	}
	printf("Aging: 2^20 blocks filled to 90%% with files of 1..%d blocks, then %d rounds of deleting 10%% of\n"
	       "the files and rewriting; the same sequence on bgalloc / libext2fs; seeds %llu..%llu\n\n",
	       MAX_FILE, rounds, (unsigned long long)seed, (unsigned long long)(seed + (uint64_t)reps - 1));
	double ours[100], peer[100];
	for (int r = 0; r < reps; r++) {
		struct result res;
		if (run_once(seed + (uint64_t)r, rounds, r == 0, &res) != 0)
			return 1;
		ours[r] = res.ours;
		peer[r] = res.peer;
	}
	qsort(ours, (size_t)reps, sizeof(double), cmp_double);
	qsort(peer, (size_t)reps, sizeof(double), cmp_double);
	double mo = ours[reps / 2], mp = peer[reps / 2];
	printf("\nmedian fragmentation score over %d runs: bgalloc %.4f, libext2fs %.4f (0 = all free space in\n"
	       "whole groups, 1 = all single blocks): %s\n",
	       reps, mo, mp, mo <= mp ? "bgalloc is no worse" : "bgalloc is WORSE");
	if (jf) {
		FILE *f = jf;
		fprintf(f, "{\"rounds\": %d, \"repetitions\": %d, \"median_score\": {\"bgalloc\": %.6f, "
			   "\"libext2fs\": %.6f}}\n",
			rounds, reps, mo, mp);
		if (fclose(f)) {
			fprintf(stderr, "bga-aging: --json %s: %s\n", json, strerror(errno));
			return 1;
		}
	}
	return 0;
}
