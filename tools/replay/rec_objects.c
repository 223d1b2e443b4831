/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-rec-objects: a Ceph-like object workload, recorded (an example of an
 * embedder using the recorder, bga_rec.h, by calling its wrappers).
 *
 *   bga-rec-objects TRACE [SEED [UNITS]]
 *
 * A volume of UNITS (default 16384) blocks of 64 KiB (BlueStore's
 * alloc_unit on a hard disk), started full and handed its free space the
 * way BlueStore hands its allocator the free list (bga_free_vec).  Objects
 * of 4 KiB to 4 MiB (log-uniform, rounded up to the unit) are written with
 * one bga_alloc_vec each; one step in four deletes a random object instead,
 * freed in a transaction (bga_free_deferred) that commits every 8 steps,
 * until the volume is 90% full.  The random numbers are the seed's alone
 * (xorshift), and the program runs on one CPU, so a seed gives one trace.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bga_rec.h"

#define UNIT_BYTES 65536
#define MAX_PIECES 64

struct object {
	struct bga_extent ext[MAX_PIECES];
	size_t n;
};

static uint64_t rng;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double uniform(void)
{
	return (double)(next_rand() >> 11) / 9007199254740992.0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: bga-rec-objects TRACE [SEED [UNITS]]\n");
		return 2;
	}
	rng = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	uint64_t units = argc > 3 ? strtoull(argv[3], NULL, 0) : 16384;
	if (!rng)
		rng = 1;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set); /* best effort: the home group is CPU 0's */

	struct bga_config cfg;
	bga_config_init(&cfg, units);
	cfg.flags |= BGA_START_FULL;
	struct bga_volume *vol;
	struct bga_rec *rec;
	int rc = bga_create(&cfg, &vol);
	if (rc) {
		fprintf(stderr, "bga-rec-objects: bga_create: %s\n", bga_strerror(rc));
		return 1;
	}
	if ((rc = bga_rec_open(vol, argv[1], "bga-rec-objects", UNIT_BYTES, &rec))) {
		fprintf(stderr, "bga-rec-objects: %s: %s\n", argv[1], bga_strerror(rc));
		return 1;
	}
	/* BlueStore's init_add_free: the whole device, less a superblock unit */
	struct bga_extent all = {1, units - 1};
	if ((rc = bga_rec_free_vec(rec, vol, &all, 1)))
		goto fail;

	size_t cap = 1024, n = 0;
	struct object *obj = malloc(cap * sizeof(*obj));
	uint64_t txn = 1, step = 0, used = 1, writes = 0, deletes = 0, enospc = 0;
	if (!obj)
		goto fail;
	while (used * 10 < units * 9) {
		if (n && next_rand() % 4 == 0) {
			size_t i = next_rand() % n;
			for (size_t k = 0; k < obj[i].n; k++) {
				if ((rc = bga_rec_free_deferred(rec, vol, obj[i].ext[k].start, obj[i].ext[k].len, txn)))
					goto fail;
				used -= obj[i].ext[k].len;
			}
			obj[i] = obj[--n];
			deletes++;
		} else {
			double bytes = 4096.0 * pow(1024.0, uniform());
			uint64_t want = ((uint64_t)bytes + UNIT_BYTES - 1) / UNIT_BYTES;
			struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = 1, .max_len = want};
			if (n == cap) {
				struct object *no = realloc(obj, (cap *= 2) * sizeof(*obj));
				if (!no)
					goto fail;
				obj = no;
			}
			rc = bga_rec_alloc_vec(rec, vol, &req, want, obj[n].ext, MAX_PIECES, &obj[n].n);
			if (rc == -EAGAIN || rc == -ENOSPC) {
				enospc++;
				if ((rc = bga_rec_commit(rec, vol, txn++)))
					goto fail;
				continue;
			}
			if (rc)
				goto fail;
			for (size_t k = 0; k < obj[n].n; k++)
				used += obj[n].ext[k].len;
			n++;
			writes++;
		}
		if (++step % 8 == 0 && (rc = bga_rec_commit(rec, vol, txn++)))
			goto fail;
	}
	if ((rc = bga_rec_commit(rec, vol, txn)))
		goto fail;
	printf("bga-rec-objects: %" PRIu64 " writes, %" PRIu64 " deletes, %zu objects, %" PRIu64 " of %" PRIu64
	       " units used, %" PRIu64 " requests refused\n",
	       writes, deletes, n, used, units, enospc);
	free(obj);
	if ((rc = bga_rec_close(rec)))
		goto fail_closed;
	bga_destroy(vol);
	return 0;
fail:
	bga_rec_close(rec);
fail_closed:
	fprintf(stderr, "bga-rec-objects: %s\n", bga_strerror(rc));
	bga_destroy(vol);
	return 1;
}
