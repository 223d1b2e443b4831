/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The image of known layout that tests/system/inspect_test.sh checks
 * bga-inspect against, written to FILE: 256 blocks in 4 groups of 64;
 * used: [0, 64), [70, 80), [200, 201).
 *
 *   inspect_image FILE
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <bgalloc.h>

static void die(const char *what, int rc)
{
	fprintf(stderr, "inspect_image: %s: %s\n", what, bga_strerror(rc));
	exit(1);
}

static int image(const char *path)
{
	struct bga_config cfg;
	bga_config_init(&cfg, 256);
	cfg.blocks_per_group = 64;
	struct bga_volume *vol;
	int rc = bga_create(&cfg, &vol);
	if (rc)
		die("bga_create", rc);
	static const uint64_t used[][2] = {{0, 64}, {70, 10}, {200, 1}};
	for (int i = 0; i < 3; i++) {
		struct bga_request req = {.goal = used[i][0], .min_len = used[i][1], .max_len = used[i][1],
					  .flags = BGA_EXACT_GOAL};
		struct bga_extent e;
		if ((rc = bga_alloc(vol, &req, &e)))
			die("bga_alloc", rc);
	}
	unlink(path);
	struct bga_io io;
	if ((rc = bga_io_file_open(path, 0, 1, &io)))
		die(path, rc);
	if ((rc = bga_store(vol, &io)))
		die("bga_store", rc);
	bga_io_file_close(&io);
	bga_destroy(vol);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s FILE\n", argv[0]);
		return 2;
	}
	return image(argv[1]);
}
