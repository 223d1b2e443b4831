/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The storage-engine calls under concurrency: on a volume started full
 * (BGA_START_FULL) and seeded with bga_free_vec, threads at once
 *   - allocate with bga_alloc_vec (plain, aligned, all or nothing) and give
 *     the extents back with bga_free_vec in another order;
 *   - claim random exact ranges with bga_claim (-EBUSY is fine) and free
 *     what they got;
 *   - allocate aligned extents with bga_alloc and free them.
 * Every block handed out is marked in an ownership map with an atomic
 * exchange, so a block handed out twice is caught at once; alignment and
 * lengths are checked on every extent.  At the end everything is back:
 * the exact free count is what the seeding gave, and bga_check is clean.
 * A plain program, so it runs under TSan.  Usage: stress_units [seconds].
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc.h>

#include "stress_time.h"
#include "testutil.h"

#define NBLOCKS (64u * 1024)
#define BPG 1024u

static struct bga_volume *vol;
static uint8_t owner[NBLOCKS]; /* atomic: 0 free, else the thread's id */
static int failures;
static uint64_t deadline;

static void fail(const char *what, long long a, long long b)
{
	if (__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED) < 10)
		fprintf(stderr, "stress_units: %s (%lld, %lld)\n", what, a, b);
}

static void own(const struct bga_extent *e, uint8_t id)
{
	for (uint64_t b = e->start; b < e->start + e->len; b++) {
		uint8_t was = __atomic_exchange_n(&owner[b], id, __ATOMIC_RELAXED);
		if (was != 0)
			fail("block handed out twice", (long long)b, was);
	}
}

static void disown(const struct bga_extent *e, uint8_t id)
{
	for (uint64_t b = e->start; b < e->start + e->len; b++) {
		uint8_t was = __atomic_exchange_n(&owner[b], 0, __ATOMIC_RELAXED);
		if (was != id)
			fail("freeing a block another thread holds", (long long)b, was);
	}
}

static void *vec_thread(void *arg)
{
	uint8_t id = (uint8_t)(uintptr_t)arg;
	struct rng r = {0x1234567ull * id + 1};
	struct bga_extent out[16], rev[16];
	for (uint64_t i = 0; stress_go_on(i, 2000, deadline); i++) {
		uint64_t align = below(&r, 3) == 0 ? 8 : 1;
		uint64_t min = align * (1 + below(&r, 2)), max = min * (1 + below(&r, 40));
		struct bga_request req = {.goal = below(&r, 4) ? below(&r, NBLOCKS) : BGA_NO_GOAL,
					  .min_len = min, .max_len = max, .align = align,
					  .flags = below(&r, 4) == 0 ? BGA_ALL_OR_NOTHING : 0};
		uint64_t want = align * (1 + below(&r, 64));
		size_t n = 0;
		int rc = bga_alloc_vec(vol, &req, want, out, 1 + below(&r, 16), &n);
		if (rc != 0) {
			if (rc != -ENOSPC && rc != -EAGAIN)
				fail("bga_alloc_vec", rc, 0);
			continue;
		}
		uint64_t got = 0;
		for (size_t k = 0; k < n; k++) {
			if (out[k].start % align || out[k].len % align || out[k].len < min || out[k].len > max)
				fail("extent out of shape", (long long)out[k].start, (long long)out[k].len);
			own(&out[k], id);
			got += out[k].len;
		}
		if (got > want || ((req.flags & BGA_ALL_OR_NOTHING) && got != want))
			fail("handed out the wrong total", (long long)got, (long long)want);
		for (size_t k = 0; k < n; k++) {
			disown(&out[k], id);
			rev[k] = out[n - 1 - k];
		}
		rc = bga_free_vec(vol, rev, n);
		if (rc != 0)
			fail("bga_free_vec", rc, (long long)n);
	}
	return NULL;
}

static void *claim_thread(void *arg)
{
	uint8_t id = (uint8_t)(uintptr_t)arg;
	struct rng r = {0x7654321ull * id + 3};
	for (uint64_t i = 0; stress_go_on(i, 2000, deadline); i++) {
		uint64_t len = 1 + below(&r, 80), start = below(&r, NBLOCKS - len);
		int rc = bga_claim(vol, start, len);
		if (rc == -EBUSY || rc == -ENOSPC)
			continue;
		if (rc != 0) {
			fail("bga_claim", rc, (long long)start);
			continue;
		}
		struct bga_extent e = {start, len};
		own(&e, id);
		disown(&e, id);
		if ((rc = bga_free(vol, start, len)) != 0)
			fail("bga_free of a claim", rc, (long long)start);
	}
	return NULL;
}

static void *aligned_thread(void *arg)
{
	uint8_t id = (uint8_t)(uintptr_t)arg;
	struct rng r = {0xabcdefull * id + 5};
	for (uint64_t i = 0; stress_go_on(i, 2000, deadline); i++) {
		struct bga_request req = {.goal = below(&r, NBLOCKS), .min_len = 16, .max_len = 64, .align = 16};
		struct bga_extent e;
		int rc = bga_alloc(vol, &req, &e);
		if (rc != 0) {
			if (rc != -ENOSPC && rc != -EAGAIN)
				fail("aligned bga_alloc", rc, 0);
			continue;
		}
		if (e.start % 16 || e.len % 16 || e.len < 16 || e.len > 64)
			fail("aligned extent out of shape", (long long)e.start, (long long)e.len);
		own(&e, id);
		disown(&e, id);
		if ((rc = bga_free(vol, e.start, e.len)) != 0)
			fail("bga_free", rc, (long long)e.start);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : stress_seconds(1.5);
	struct bga_config cfg;
	bga_config_init(&cfg, NBLOCKS);
	cfg.blocks_per_group = BPG;
	cfg.flags = BGA_START_FULL;
	if (bga_create(&cfg, &vol) != 0)
		return 1;
	/* the embedder's free list: every other run of 32, in reverse order */
	size_t n = NBLOCKS / 64;
	struct bga_extent *v = malloc(n * sizeof(*v));
	for (size_t i = 0; i < n; i++)
		v[i] = (struct bga_extent){(n - 1 - i) * 64 + 16, 32};
	if (bga_free_vec(vol, v, n) != 0)
		return 1;
	free(v);
	uint64_t seeded = bga_free_exact(vol);
	deadline = stress_deadline(secs);
	void *(*fns[])(void *) = {vec_thread, vec_thread, claim_thread, aligned_thread};
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, fns[i], (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	if (bga_free_exact(vol) != seeded)
		fail("free count after everything came back", (long long)bga_free_exact(vol), (long long)seeded);
	struct bga_check_report rep;
	if (bga_check(vol, &rep) != 0)
		fail(rep.message, (long long)rep.group, (long long)rep.block);
	for (uint32_t b = 0; b < NBLOCKS; b++)
		if (owner[b])
			fail("a block still owned", b, owner[b]);
	bga_destroy(vol);
	if (failures) {
		fprintf(stderr, "stress_units: %d failures\n", failures);
		return 1;
	}
	printf("stress_units: ok, %llu blocks free as seeded\n", (unsigned long long)seeded);
	return 0;
}
