/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * peer_range: the libext2fs peer's peer_ext2_alloc_range (bench/support/
 * peer_ext2.c, bga-replay's ext2 allocator) returns, and returns the run a
 * MIN_LENGTH search of ext2fs_new_range finds: the first free run of len
 * blocks at or after goal, clipped to start at goal; else, from the first
 * data block, the first whole free run of len whose start is at most goal;
 * else -ENOSPC.  ext2fs_new_range (e2fsprogs 1.47.0) itself never returns
 * when the file system's last block is in use and no such run exists.
 *
 * On a small image, rounds of random bitmaps (runs of free and used blocks
 * of random lengths, the last block in use in every other round) and
 * random (goal, len) asks: each answer must be the reference's (found
 * here by testing bits one by one), and every call must come back within
 * SIGALRM's 20 s.  Exit 0, or 1 with the first difference; 77 when mke2fs
 * is missing.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "peer_ext2.h"
#include "rng.h"

static void hung(int sig)
{
	static const char msg[] = "peer_range: peer_ext2_alloc_range did not return in 20 s\n";
	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

/* The reference: the run the search should find, by bits. */
static int ref_find(ext2_filsys fs, uint64_t goal, uint64_t len, uint64_t *out)
{
	uint64_t n = ext2fs_blocks_count(fs->super), first = fs->super->s_first_data_block;
	if (!goal || goal >= n)
		goal = first;
	for (int pass = 0; pass < 2; pass++) {
		uint64_t b = pass ? first : goal;
		while (b < n && (!pass || b <= goal)) {
			if (ext2fs_test_block_bitmap2(fs->block_map, b)) {
				b++;
				continue;
			}
			uint64_t e = b;
			while (e < n && e - b < len && !ext2fs_test_block_bitmap2(fs->block_map, e))
				e++;
			if (e - b >= len) {
				*out = b;
				return 0;
			}
			while (e < n && !ext2fs_test_block_bitmap2(fs->block_map, e))
				e++;
			b = e;
		}
	}
	return -ENOSPC;
}

int main(void)
{
	struct peer_ext2 *p;
	int rc = peer_ext2_create(NULL, 4096, &p);
	if (rc == -ENOENT) {
		puts("peer_range: SKIP: no mke2fs");
		return 77;
	}
	if (rc) {
		fprintf(stderr, "peer_range: peer_ext2_create: %s\n", strerror(-rc));
		return 1;
	}
	ext2_filsys fs = peer_ext2_fs(p);
	uint64_t n = peer_ext2_nblocks(p), meta = 0;
	/* the image's own metadata stays in use; the rest is ours */
	while (meta < n && ext2fs_test_block_bitmap2(fs->block_map, meta))
		meta++;
	signal(SIGALRM, hung);
	struct rng r = {35};
	unsigned asks = 0, found = 0, hang_cases = 0;
	for (int round = 0; round < 201; round++) {
		int last_used = round % 2 || round == 200;
		for (uint64_t b = meta; b < n;) { /* runs of 1-40 free, 1-40 used */
			uint64_t fl = 1 + rnd(&r) % (round % 3 ? 4 : 40), ul = 1 + rnd(&r) % 40;
			if (round == 200) /* the last round: 10 free at meta + 10, 4 free before the last block */
				fl = b == meta + 10 || b == n - 5 ? (b == n - 5 ? 4 : 10) : 0, ul = b < meta + 10 ? meta + 10 - b : 1;
			for (uint64_t k = 0; k < fl + ul && b < n; k++, b++) {
				int want = b == n - 1 ? last_used : k >= fl;
				if (want != !!ext2fs_test_block_bitmap2(fs->block_map, b))
					ext2fs_block_alloc_stats2(fs, b, want ? +1 : -1);
			}
		}
		for (int k = 0; k < 20; k++, asks++) {
			uint64_t goal = rnd(&r) % n, len = 1 + rnd(&r) % 48, got = 0, want = 0;
			if (round == 200) /* past the run of 10: the 4 before the last block, a 5 from the start */
				goal = n - 100, len = 3 + k % 3;
			int wrc = ref_find(fs, goal, len, &want);
			hang_cases += wrc && last_used;
			alarm(20);
			rc = peer_ext2_alloc_range(p, goal, len, &got);
			alarm(0);
			if (rc != wrc || (!rc && got != want)) {
				fprintf(stderr,
				        "peer_range: round %d (last block %s): goal %" PRIu64 " len %" PRIu64 ": got %d at %" PRIu64
				        ", the search finds %d at %" PRIu64 "\n",
				        round, last_used ? "in use" : "free", goal, len, rc, got, wrc, want);
				return 1;
			}
			if (!rc) {
				found++;
				if (peer_ext2_free(p, got, len)) {
					fprintf(stderr, "peer_range: the run it gave did not free back\n");
					return 1;
				}
			}
		}
		if (!!ext2fs_test_block_bitmap2(fs->block_map, n - 1) != last_used) {
			fprintf(stderr, "peer_range: round %d: the last block's bit changed under the calls\n", round);
			return 1;
		}
	}
	peer_ext2_destroy(p);
	printf("peer_range: %u asks as the search answers them (%u found), %u of them with no run and the last "
	       "block in use\n",
	       asks, found, hang_cases);
	return hang_cases ? 0 : 1;
}
