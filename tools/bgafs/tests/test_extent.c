/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bgafs's extent map against a block-per-entry model: random maps (holes
 * filled, unwritten ranges written, overlaps replaced) and truncates, then
 * every block's state, the run lengths, the block count, the order and
 * the merging are checked, and each truncate and punch frees exactly what
 * it unmaps.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bgafs.h"

#define N 4096 /* logical blocks modelled */

struct model {
	uint64_t pblk[N]; /* 0: hole */
	uint8_t unwritten[N];
};

static int failures;

#define CHECK(cond, ...)                                              \
	do {                                                          \
		if (!(cond)) {                                        \
			fprintf(stderr, "test_extent: " __VA_ARGS__); \
			fputc('\n', stderr);                          \
			if (++failures > 10)                          \
				exit(1);                              \
		}                                                     \
	} while (0)

static uint64_t freed[N];

static void on_free(void *ctx, uint64_t pblk, uint64_t len)
{
	uint64_t *count = ctx;
	for (uint64_t i = 0; i < len; i++)
		for (uint64_t l = 0; l < N; l++)
			if (freed[l] == pblk + i) {
				freed[l] = 0;
				(*count)++;
				break;
			}
}

static void check(const struct extmap *m, const struct model *md, int step)
{
	uint64_t blocks = 0;
	for (uint64_t l = 0; l < N; l++) {
		uint64_t pblk = 0, run = 0;
		enum map_state st = extmap_lookup(m, l, &pblk, &run);
		if (!md->pblk[l]) {
			CHECK(st == MAP_HOLE, "step %d: block %llu should be a hole", step, (unsigned long long)l);
			continue;
		}
		blocks++;
		CHECK(st == (md->unwritten[l] ? MAP_UNWRITTEN : MAP_WRITTEN) && pblk == md->pblk[l],
		      "step %d: block %llu: state %d pblk %llu, model %llu%s", step, (unsigned long long)l, st,
		      (unsigned long long)pblk, (unsigned long long)md->pblk[l], md->unwritten[l] ? " unwritten" : "");
		/* the run never claims a block the model maps elsewhere */
		for (uint64_t k = 1; k < run && l + k < N; k++)
			CHECK(md->pblk[l + k] == pblk + k && md->unwritten[l + k] == md->unwritten[l],
			      "step %d: run from %llu overstates at +%llu", step, (unsigned long long)l,
			      (unsigned long long)k);
	}
	CHECK(m->blocks == blocks, "step %d: blocks %llu, model %llu", step, (unsigned long long)m->blocks,
	      (unsigned long long)blocks);
	for (uint32_t i = 1; i < m->n; i++) {
		const struct extent *a = &m->v[i - 1], *b = &m->v[i];
		CHECK(a->lblk + a->len <= b->lblk, "step %d: extents %u and %u overlap or are out of order", step,
		      i - 1, i);
		CHECK(!(a->lblk + a->len == b->lblk && a->pblk + a->len == b->pblk && a->flags == b->flags),
		      "step %d: extents %u and %u should have merged", step, i - 1, i);
	}
}

/*
 * Every hole's anchor against the model: the nearest mapped block below
 * it (a positive distance), else the first above it (a negative one).
 */
static void check_near(const struct extmap *m, const struct model *md)
{
	for (uint64_t l = 0; l < N; l++) {
		if (md->pblk[l])
			continue;
		uint64_t want = 0, anchor = 0;
		int64_t want_d = 0, d = 0;
		for (uint64_t k = l; k-- > 0;)
			if (md->pblk[k]) {
				want = md->pblk[k];
				want_d = (int64_t)(l - k);
				break;
			}
		for (uint64_t k = l + 1; !want && k < N; k++)
			if (md->pblk[k]) {
				want = md->pblk[k];
				want_d = -(int64_t)(k - l);
			}
		int rc = extmap_near(m, l, &anchor, &d);
		CHECK(want ? rc == 0 && anchor == want && d == want_d : rc == -ENOENT,
		      "hole %llu: rc %d anchor %llu distance %lld, model %llu %lld", (unsigned long long)l, rc,
		      (unsigned long long)anchor, (long long)d, (unsigned long long)want, (long long)want_d);
	}
}

int main(void)
{
	struct extmap m = {0};
	static struct model md;
	uint64_t next_pblk = 1000;
	srand(12345);
	for (int step = 0; step < 20000; step++) {
		int op = rand() % 10;
		uint64_t l = (uint64_t)(rand() % N), len = 1 + (uint64_t)(rand() % 64);
		if (l + len > N)
			len = N - l;
		if (op < 6) { /* map fresh blocks, sometimes unwritten, over whatever was there */
			uint32_t flags = (rand() % 3 == 0) ? EXT_UNWRITTEN : 0;
			/* contiguous with the previous extent now and then, so merges happen */
			uint64_t p = (rand() % 4 == 0 && l && md.pblk[l - 1]) ? md.pblk[l - 1] + 1 : next_pblk;
			if (p != next_pblk)
				for (uint64_t k = 0; k < N; k++) /* never map one block twice */
					if (md.pblk[k] >= p && md.pblk[k] < p + len && (k < l || k >= l + len))
						p = next_pblk;
			next_pblk = (p + len > next_pblk ? p + len : next_pblk) + (uint64_t)(rand() % 3);
			CHECK(extmap_set(&m, l, p, (uint32_t)len, flags) == 0, "extmap_set failed");
			for (uint64_t k = 0; k < len; k++) {
				md.pblk[l + k] = p + k;
				md.unwritten[l + k] = flags != 0;
			}
		} else if (op < 8) { /* write an unwritten run in place, as file_write does */
			uint64_t pblk, run;
			if (extmap_lookup(&m, l, &pblk, &run) == MAP_UNWRITTEN) {
				if (run > len)
					run = len;
				CHECK(extmap_set(&m, l, pblk, (uint32_t)run, 0) == 0, "extmap_set failed");
				for (uint64_t k = 0; k < run; k++)
					md.unwritten[l + k] = 0;
			}
		} else if (op == 8) { /* punch [l, l+len): frees exactly what it unmaps */
			uint64_t expect = 0, got = 0;
			for (uint64_t k = 0; k < N; k++) {
				freed[k] = k >= l && k < l + len ? md.pblk[k] : 0;
				expect += freed[k] != 0;
			}
			CHECK(extmap_punch(&m, l, l + len, on_free, &got) == 0, "extmap_punch failed");
			CHECK(got == expect, "step %d: punch [%llu,+%llu) freed %llu blocks, model %llu", step,
			      (unsigned long long)l, (unsigned long long)len, (unsigned long long)got,
			      (unsigned long long)expect);
			for (uint64_t k = l; k < l + len; k++)
				md.pblk[k] = 0;
		} else if (rand() % 4 == 0) { /* truncate: frees exactly what lies past l */
			uint64_t expect = 0, got = 0;
			for (uint64_t k = 0; k < N; k++) {
				freed[k] = k >= l ? md.pblk[k] : 0;
				expect += freed[k] != 0;
			}
			extmap_truncate(&m, l, on_free, &got);
			CHECK(got == expect, "step %d: truncate at %llu freed %llu blocks, model %llu", step,
			      (unsigned long long)l, (unsigned long long)got, (unsigned long long)expect);
			for (uint64_t k = l; k < N; k++)
				md.pblk[k] = 0;
		}
		if (step % 97 == 0 || op >= 8)
			check(&m, &md, step);
	}
	check(&m, &md, -1);
	check_near(&m, &md);
	/* by hand: the extent before a hole, else the one after it */
	extmap_truncate(&m, 0, on_free, &(uint64_t){0});
	uint64_t anchor = 0;
	int64_t d = 0;
	CHECK(extmap_near(&m, 10, &anchor, &d) == -ENOENT, "empty map: no anchor");
	extmap_set(&m, 30, 900, 4, 0);
	CHECK(!extmap_near(&m, 25, &anchor, &d) && anchor == 900 && d == -5, "25 before [30,34)->900: %llu %lld",
	      (unsigned long long)anchor, (long long)d);
	extmap_set(&m, 0, 500, 8, 0);
	CHECK(!extmap_near(&m, 8, &anchor, &d) && anchor == 507 && d == 1, "8 after [0,8)->500: %llu %lld",
	      (unsigned long long)anchor, (long long)d);
	CHECK(!extmap_near(&m, 25, &anchor, &d) && anchor == 507 && d == 18, "25 after [0,8)->500: %llu %lld",
	      (unsigned long long)anchor, (long long)d);
	CHECK(!extmap_near(&m, 3, &anchor, &d) && anchor == 503 && d == 0, "mapped 3: %llu %lld",
	      (unsigned long long)anchor, (long long)d);
	extmap_destroy(&m);
	if (failures)
		return 1;
	printf("test_extent: 20000 random steps agree with the model\n");
	return 0;
}
