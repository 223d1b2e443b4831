/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A harness of your own, against the public API only (docs/FUZZING.md, "Writing
 * your own harness"): the input is a volume size and a stream of
 * allocations and frees; a bitmap of what the harness holds is its model.
 * It checks that no block is handed out twice, that every free of a held
 * extent succeeds and that the free count and bga_check() agree.
 * The alphabet: bga_alloc (a goal or BGA_NO_GOAL, 1 .. 16 blocks), bga_free
 * of the last extent held.  Built and replayed by `make test`
 * (fuzz_replay_example), so it keeps compiling.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <bgalloc.h>

#define HELD_MAX 64

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_example: %s\n", what);
		abort(); /* what the fuzzer catches */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	struct bga_extent held[HELD_MAX];
	uint64_t nblocks = 64 + (size ? data[0] : 0) * 16, nfree, i, b;
	uint8_t *used = calloc(nblocks, 1); /* the model: what this harness holds */
	size_t n = 0, pos = 1;

	bga_config_init(&cfg, nblocks);
	cfg.blocks_per_group = 256;
	check(used && bga_create(&cfg, &vol) == 0, "create");
	nfree = nblocks;
	while (pos + 2 <= size) {
		uint8_t op = data[pos++], arg = data[pos++];
		if ((op & 1) && n < HELD_MAX) {
			struct bga_request req = {
				.goal = (op & 2) ? arg * nblocks / 256 : BGA_NO_GOAL,
				.min_len = 1,
				.max_len = 1 + (op >> 4),
			};
			struct bga_extent e;
			int rc = bga_alloc(vol, &req, &e);
			check(rc == 0 || rc == -ENOSPC, "alloc failed other than -ENOSPC");
			if (rc == 0) {
				check(e.len >= 1 && e.len <= req.max_len && e.start + e.len <= nblocks, "bad extent");
				for (b = e.start; b < e.start + e.len; b++) {
					check(!used[b], "block handed out twice");
					used[b] = 1;
				}
				held[n++] = e;
				nfree -= e.len;
			} else {
				check(n > 0, "-ENOSPC with every block free");
			}
		} else if (n > 0) {
			struct bga_extent e = held[--n];
			check(bga_free(vol, e.start, e.len) == 0, "free of a held extent failed");
			for (b = e.start; b < e.start + e.len; b++)
				used[b] = 0;
			nfree += e.len;
		}
		check(bga_free_exact(vol) == nfree, "free count disagrees with the model");
	}
	check(bga_check(vol, NULL) == 0, "bga_check");
	for (i = 0; i < n; i++)
		check(bga_free(vol, held[i].start, held[i].len) == 0, "final free");
	check(bga_free_exact(vol) == nblocks, "blocks lost");
	bga_destroy(vol);
	free(used);
	return 0;
}
