/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What persistence costs (BENCHMARKS.md#persistence), as one program; it
 * measures, and asserts nothing but success (built with BGA_BENCH):
 *
 *   persist_figures incremental
 *       a 2^24-block volume with every group initialised: bytes of a full
 *       store, then of a store after 1% of the groups changed
 *   persist_figures load2e32 FILE
 *       a 2^32-block volume with 1% of its groups initialised, stored to
 *       FILE (sparse, about 1 GiB apparent), then loaded: wall time and
 *       the growth of the process's resident memory across the load
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bgalloc.h>

#include "memio.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, res = 0;
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "%s: %s\n", what, bga_strerror(rc));
	exit(1);
}

/* Take one block in group g (and so give it a bitmap). */
static void touch(struct bga_volume *vol, uint64_t g, uint32_t bpg, uint64_t off)
{
	struct bga_request req = {.goal = g * bpg + off, .min_len = 1, .max_len = 1, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	int rc = bga_alloc(vol, &req, &e);
	if (rc)
		die("bga_alloc", rc);
}

static int incremental(void)
{
	struct bga_config cfg;
	bga_config_init(&cfg, UINT64_C(1) << 24);
	struct bga_volume *vol;
	int rc = bga_create(&cfg, &vol);
	if (rc)
		die("bga_create", rc);
	uint64_t groups = (UINT64_C(1) << 24) / cfg.blocks_per_group;
	for (uint64_t g = 0; g < groups; g++)
		touch(vol, g, cfg.blocks_per_group, 100);
	struct memio m;
	struct bga_io io;
	memio_init(&m, &io);
	if ((rc = bga_store(vol, &io)))
		die("bga_store", rc);
	uint64_t full = m.bytes_written;
	long fw = m.writes;
	uint64_t changed = (groups + 99) / 100;
	for (uint64_t k = 0; k < changed; k++)
		touch(vol, k * (groups / changed), cfg.blocks_per_group, 200);
	m.bytes_written = 0;
	m.writes = 0;
	if ((rc = bga_store(vol, &io)))
		die("bga_store", rc);
	printf("2^24 blocks, %llu groups of %u, every group initialised\n", (unsigned long long)groups,
	       cfg.blocks_per_group);
	printf("full store:        %10llu bytes in %ld writes\n", (unsigned long long)full, fw);
	printf("after %llu groups (1%%) changed: %llu bytes in %ld writes = %.2f%% of the full store\n",
	       (unsigned long long)changed, (unsigned long long)m.bytes_written, m.writes,
	       100.0 * (double)m.bytes_written / (double)full);
	memio_free(&m);
	bga_destroy(vol);
	return 0;
}

static int load2e32(const char *path)
{
	struct bga_config cfg;
	bga_config_init(&cfg, UINT64_C(1) << 32);
	struct bga_volume *vol;
	int rc = bga_create(&cfg, &vol);
	if (rc)
		die("bga_create", rc);
	uint64_t groups = (UINT64_C(1) << 32) / cfg.blocks_per_group, inited = 0;
	for (uint64_t g = 0; g < groups; g += 100, inited++)
		touch(vol, g, cfg.blocks_per_group, g % cfg.blocks_per_group);
	uint64_t bytes;
	bga_metadata_size(&cfg, &bytes);
	unlink(path);
	struct bga_io io;
	if ((rc = bga_io_file_open(path, 0, 1, &io)))
		die(path, rc);
	double t0 = now();
	if ((rc = bga_store(vol, &io)))
		die("bga_store", rc);
	double t1 = now();
	bga_io_file_close(&io);
	uint64_t free_before = bga_free_exact(vol);
	bga_destroy(vol);
	printf("2^32 blocks, %llu groups, %llu initialised (1%%); metadata area %llu bytes (sparse)\n",
	       (unsigned long long)groups, (unsigned long long)inited, (unsigned long long)bytes);
	printf("store (format): %.3f s\n", t1 - t0);

	if ((rc = bga_io_file_open(path, 0, 0, &io)))
		die(path, rc);
	long r0 = rss_kib();
	t0 = now();
	if ((rc = bga_load(&io, NULL, &vol)))
		die("bga_load", rc);
	t1 = now();
	long r1 = rss_kib();
	printf("load: %.3f s, resident memory +%.1f MiB\n", t1 - t0, (double)(r1 - r0) / 1024.0);
	if (bga_free_exact(vol) != free_before)
		die("free count after the load", -EUCLEAN);
	t0 = now();
	rc = bga_prefetch(vol);
	t1 = now();
	printf("prefetch of the rest: %.3f s (%s), resident +%.1f MiB in all\n", t1 - t0, bga_strerror(rc),
	       (double)(rss_kib() - r0) / 1024.0);
	struct bga_check_report rep;
	if ((rc = bga_check(vol, &rep)))
		fprintf(stderr, "bga_check: %s\n", rep.message);
	bga_destroy(vol);
	bga_io_file_close(&io);
	unlink(path);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "incremental") == 0)
		return incremental();
	if (argc >= 3 && strcmp(argv[1], "load2e32") == 0)
		return load2e32(argv[2]);
	fprintf(stderr, "usage: %s incremental | load2e32 FILE\n", argv[0]);
	return 2;
}
