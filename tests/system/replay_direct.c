/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * replay_direct IMAGE COUNT WANT UNIT: what `bga-replay try` should
 * report, from bga_alloc_vec called here directly (the header's request:
 * goal 0, min_len and align UNIT, max_len and want WANT, in blocks),
 * printed as try -v prints each request, without its time.  For
 * tests/system/replay_test.sh.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <bgalloc.h>

int main(int argc, char **argv)
{
	if (argc != 5)
		return 2;
	uint64_t count = strtoull(argv[2], NULL, 0), want = strtoull(argv[3], NULL, 0), unit = strtoull(argv[4], NULL, 0);
	struct bga_io io;
	struct bga_volume *vol;
	if (bga_io_file_open(argv[1], 0, 0, &io) || bga_load(&io, NULL, &vol))
		return 2;
	static struct bga_extent out[65536];
	struct bga_request req = {.goal = 0, .min_len = unit, .max_len = want, .align = unit > 1 ? unit : 0};
	for (uint64_t i = 0; i < count; i++) {
		size_t n = 0;
		int rc = bga_alloc_vec(vol, &req, want, out, 65536, &n);
		uint64_t got = 0;
		for (size_t k = 0; k < n; k++)
			got += out[k].len;
		printf("request %" PRIu64 ": %s, %zu extents, %" PRIu64 " blocks:", i, rc ? bga_strerror(rc) : "ok", n, got);
		for (size_t k = 0; k < n; k++)
			printf(" %" PRIu64 "+%" PRIu64, out[k].start, out[k].len);
		putchar('\n');
	}
	bga_destroy(vol);
	bga_io_file_close(&io);
	return 0;
}
