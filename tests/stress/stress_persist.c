/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Store under load (a plain program, so it also runs under TSan: make
 * test-tsan).  Four threads allocate and free, each with exact goals in
 * its own quarter of the volume, so each quarter's state is a function of
 * its owner's history alone; a fifth thread stores in a loop and keeps
 * every image.  Afterwards each image must load clean, and each quarter
 * of it must equal its owner's state after some prefix of its operations
 * that lies between the operations done when the store began and one past
 * those done when it ended (Zobrist hashes of every state along the way make that a lookup).
 *
 * The threads start on a lazily loaded volume, so chunk fills race with
 * the allocations and the stores too.  BGA_STRESS_SECONDS
 * (tests/support/stress_time.h) sets how long it runs.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bgalloc.h>

#include "check.h"
#include "memio.h"
#include "stress_time.h"
#include "testutil.h"

#define THREADS 4
#define BPG 1024u
#define GROUPS 64u
#define NBLOCKS ((uint64_t)BPG * GROUPS)
#define REGION (NBLOCKS / THREADS)
#define MAX_OPS 1000000
#define MAX_IMAGES 400

static struct bga_volume *vol;
static uint64_t zob[NBLOCKS]; /* a random key per block */
static volatile int stop;

struct worker {
	pthread_t t;
	int id;
	uint64_t ops; /* atomic: operations completed */
	uint64_t *hash; /* hash[i]: the region's hash after i operations */
	unsigned char used[REGION];
};

static struct worker workers[THREADS];

struct image {
	unsigned char *b;
	size_t size;
	uint64_t from[THREADS], to[THREADS];
};

static struct image images[MAX_IMAGES];
static int nimages;

#define CHECK(cond, ...) do { if (CHECK_FAILED("stress_persist", cond, __VA_ARGS__)) exit(1); } while (0)

static void *work(void *arg)
{
	struct worker *w = arg;
	struct rng r = {0x1234567ULL + (uint64_t)w->id * 7919};
	uint64_t base = (uint64_t)w->id * REGION, h = w->hash[0]; /* main's first block */
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED) && w->ops < MAX_OPS - 1) {
		uint64_t off = below(&r, REGION), len = 1 + below(&r, 16);
		if (off + len > REGION)
			len = REGION - off;
		/* the group boundary: one extent never crosses it */
		uint64_t gend = (off / BPG + 1) * BPG;
		if (off + len > gend)
			len = gend - off;
		bool all_used = true, all_free = true;
		for (uint64_t b = off; b < off + len; b++) {
			all_used &= w->used[b];
			all_free &= !w->used[b];
		}
		int rc;
		if (all_free) {
			struct bga_request req = {.goal = base + off, .min_len = len, .max_len = len,
						  .flags = BGA_EXACT_GOAL};
			struct bga_extent e;
			rc = bga_alloc(vol, &req, &e);
			CHECK(rc == 0 && e.start == base + off && e.len == len, "exact alloc in my own region: %d", rc);
		} else if (all_used) {
			rc = bga_free(vol, base + off, len);
			CHECK(rc == 0, "free of my own extent: %d", rc);
		} else {
			continue;
		}
		for (uint64_t b = off; b < off + len; b++) {
			w->used[b] ^= 1;
			h ^= zob[base + b];
		}
		w->hash[w->ops + 1] = h;
		__atomic_store_n(&w->ops, w->ops + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void *storer(void *arg)
{
	(void)arg;
	struct memio m;
	struct bga_io io;
	memio_init(&m, &io);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED) && nimages < MAX_IMAGES) {
		struct image *im = &images[nimages];
		for (int k = 0; k < THREADS; k++)
			im->from[k] = __atomic_load_n(&workers[k].ops, __ATOMIC_ACQUIRE);
		int rc = bga_store(vol, &io);
		CHECK(rc == 0, "bga_store: %d", rc);
		for (int k = 0; k < THREADS; k++)
			im->to[k] = __atomic_load_n(&workers[k].ops, __ATOMIC_ACQUIRE);
		im->b = malloc(m.size);
		CHECK(im->b != NULL, "out of memory");
		memcpy(im->b, m.buf, m.size);
		im->size = m.size;
		__atomic_store_n(&nimages, nimages + 1, __ATOMIC_RELEASE);
	}
	memio_free(&m);
	return NULL;
}

static int clear_cb(void *ctx, uint64_t start, uint64_t len)
{
	unsigned char *used = ctx;
	memset(used + start, 0, len);
	return 0;
}

static void verify(const struct image *im, int n)
{
	struct constio c = {im->b, im->size};
	struct bga_io io = {&c, constio_read, constio_write, constio_flush};
	struct bga_volume *v;
	int rc = bga_load(&io, NULL, &v);
	CHECK(rc == 0, "image %d does not load: %d", n, rc);
	struct bga_check_report rep;
	CHECK(bga_check(v, &rep) == 0, "image %d: %s", n, rep.message);
	static unsigned char used[NBLOCKS];
	memset(used, 1, sizeof(used));
	CHECK(bga_foreach_free(v, 0, NBLOCKS, 1, clear_cb, used) == 0, "foreach");
	for (int k = 0; k < THREADS; k++) {
		uint64_t h = 0, base = (uint64_t)k * REGION;
		for (uint64_t b = 0; b < REGION; b++)
			if (used[base + b])
				h ^= zob[base + b];
		bool found = false;
		/* to + 1: an operation whose effect the store saw may not have
		 * counted itself yet when the store ended */
		uint64_t last = im->to[k] + 1 <= workers[k].ops ? im->to[k] + 1 : im->to[k];
		for (uint64_t i = im->from[k]; i <= last && !found; i++)
			found = workers[k].hash[i] == h;
		CHECK(found, "image %d: thread %d's region matches none of its states %llu..%llu", n, k,
		      (unsigned long long)im->from[k], (unsigned long long)im->to[k]);
	}
	bga_destroy(v);
}

int main(void)
{
	struct rng r = {42};
	for (uint64_t b = 0; b < NBLOCKS; b++)
		zob[b] = rnd(&r);
	struct bga_config cfg;
	bga_config_init(&cfg, NBLOCKS);
	cfg.blocks_per_group = BPG;
	/* A store holds every group lock at once, and ThreadSanitizer's
	 * deadlock detector tracks at most 64 locks held by one thread. */
	cfg.lock_slots = 16;
	CHECK(bga_create(&cfg, &vol) == 0, "bga_create");
	/* Each region's first block taken, then the volume stored and loaded
	 * again: the threads start on a lazily loaded volume, so the chunk's
	 * bitmaps are read while they and the stores run. */
	for (int k = 0; k < THREADS; k++) {
		workers[k].id = k;
		workers[k].hash = malloc(MAX_OPS * sizeof(uint64_t));
		CHECK(workers[k].hash != NULL, "out of memory");
		struct bga_request req = {.goal = (uint64_t)k * REGION, .min_len = 1, .max_len = 1,
					  .flags = BGA_EXACT_GOAL};
		struct bga_extent e;
		CHECK(bga_alloc(vol, &req, &e) == 0, "first block");
		workers[k].used[0] = 1;
		workers[k].hash[0] = zob[(uint64_t)k * REGION];
	}
	struct memio m0;
	struct bga_io io0;
	memio_init(&m0, &io0);
	CHECK(bga_store(vol, &io0) == 0, "first store");
	bga_destroy(vol);
	CHECK(bga_load(&io0, &cfg, &vol) == 0, "lazy load");
	for (int k = 0; k < THREADS; k++)
		CHECK(pthread_create(&workers[k].t, NULL, work, &workers[k]) == 0, "pthread_create");
	pthread_t st;
	CHECK(pthread_create(&st, NULL, storer, NULL) == 0, "pthread_create");
	uint64_t deadline = stress_deadline(stress_seconds(BGA_STRESS_DEFAULT_SECONDS));
	while (!stress_expired(deadline) && __atomic_load_n(&nimages, __ATOMIC_RELAXED) < MAX_IMAGES)
		usleep(10000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int k = 0; k < THREADS; k++)
		pthread_join(workers[k].t, NULL);
	pthread_join(st, NULL);
	uint64_t ops = 0;
	for (int k = 0; k < THREADS; k++)
		ops += workers[k].ops;
	for (int n = 0; n < nimages; n++)
		verify(&images[n], n);
	CHECK(nimages > 0, "no store completed");
	printf("stress_persist: %d stores under %llu operations by %d threads: every image loads to a state the "
	       "history allows\n",
	       nimages, (unsigned long long)ops, THREADS);
	for (int n = 0; n < nimages; n++)
		free(images[n].b);
	for (int k = 0; k < THREADS; k++)
		free(workers[k].hash);
	bga_destroy(vol);
	memio_free(&m0);
	return 0;
}
