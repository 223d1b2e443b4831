/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rec_threads TRACE [THREADS [OPS [NBLOCKS]]]: threads allocate and free on one
 * recorded volume at once (tools/replay/bga_rec.h), so that blocks one
 * thread frees are handed to another while both are recording.  The trace
 * must still apply as recorded (bga-replay run --verify) to the free map
 * it ended with: the recorder's seq order puts every free before the
 * allocation that reuses its blocks.  For tests/system/replay_test.sh.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bga_rec.h"

#include "rng.h"

#define KEEP 64

static struct bga_volume *vol;
static struct bga_rec *rec;
static unsigned ops;
static _Atomic uint64_t txn = 1;
/* A deferred free never overlaps the commit of its txn, as in a journal
 * (a transaction closes before it commits): bgalloc may release a free
 * racing its own txn's commit in that commit or the next, and no order
 * of records can say which. */
static pthread_rwlock_t txn_lock = PTHREAD_RWLOCK_INITIALIZER;

static void *worker(void *arg)
{
	uint64_t rng = (uintptr_t)arg * 0x9e3779b97f4a7c15u + 1;
	struct bga_extent held[KEEP] = {{0}};
	struct bga_rsv *rsv = NULL;
	for (unsigned i = 0; i < ops; i++) {
		rng_next(&rng);
		unsigned k = rng % KEEP;
		if (held[k].len) {
			/* give it back: at once, or when a later txn commits */
			if (rng & 768)
				bga_rec_free(rec, vol, held[k].start, held[k].len);
			else {
				pthread_rwlock_rdlock(&txn_lock);
				if (rng & 1024)
					bga_rec_free_deferred(rec, vol, held[k].start, held[k].len, txn + 1);
				else
					bga_rec_free_deferred_vec(rec, vol, &held[k], 1, txn + 1);
				pthread_rwlock_unlock(&txn_lock);
			}
			held[k].len = 0;
			continue;
		}
		if (rng % 97 == 0) {
			pthread_rwlock_wrlock(&txn_lock);
			bga_rec_commit(rec, vol, txn++);
			pthread_rwlock_unlock(&txn_lock);
		}
		if (!rsv && rng % 5 == 0)
			bga_rec_rsv_open(rec, vol, &rsv);
		struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = 1, .max_len = 1 + (rng >> 20) % 4,
		                          .rsv = (rng & 512) ? rsv : NULL};
		if (bga_rec_alloc(rec, vol, &req, &held[k]))
			held[k].len = 0;
		if (rsv && rng % 41 == 0) {
			bga_rec_rsv_close(rec, rsv);
			rsv = NULL;
		}
	}
	for (unsigned k = 0; k < KEEP; k++)
		if (held[k].len)
			bga_rec_free(rec, vol, held[k].start, held[k].len);
	bga_rec_rsv_close(rec, rsv);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	int n = argc > 2 ? atoi(argv[2]) : 8;
	ops = argc > 3 ? (unsigned)atoi(argv[3]) : 20000;
	/* small, so that a freed block is soon someone else's */
	uint64_t nblocks = argc > 4 ? strtoull(argv[4], NULL, 0) : 2048;
	struct bga_config cfg;
	bga_config_init(&cfg, nblocks);
	cfg.blocks_per_group = 1024;
	if (n < 1 || n > 64 || bga_create(&cfg, &vol) || bga_rec_open(vol, argv[1], "rec_threads", 4096, &rec))
		return 2;
	pthread_t t[64];
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	int rc = bga_rec_commit(rec, vol, txn);
	if (!rc)
		rc = bga_rec_close(rec);
	bga_destroy(vol);
	if (rc)
		fprintf(stderr, "rec_threads: %s\n", bga_strerror(rc));
	return rc ? 1 : 0;
}
