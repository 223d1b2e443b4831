/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga_check and bga_stats while other threads run (issue 17).  bga.h says
 * what a concurrent bga_check may report: only the two cross-group
 * comparisons (counter against the groups' free counts, reserved against
 * free) may differ for a moment; any per-group or index violation is real.
 *
 *  churn     threads allocate and free across the 512 groups of one chunk,
 *            through windows and without, while another thread runs
 *            bga_check and bga_stats back to back, and the read calls of
 *            0.3.0 ("any thread, concurrently"): bga_foreach_used (extents
 *            in order, inside the volume), bga_group_stats of a group (its
 *            figures consistent: one instant of the group), the longest
 *            free run (no longer than a group, in a group that exists).
 *  recheck   whole 64-block groups of one chunk are taken and given back,
 *            so the chunk's top-order summary bit is cleared and set again
 *            all the time (groupidx.c summary_recheck), with a concurrent
 *            bga_check that must never call the summary clear.
 *
 * Duration: BGA_STRESS_SECONDS (stress_time.h), split between the two.
 * A plain program, so it runs under ThreadSanitizer.  Exits 1 on failure.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <bgalloc.h>

#include "stress_time.h"
#include "testutil.h"
#include "threads.h"

#define BPG 64u
#define GROUPS 512u
#define WORKERS 3

struct run {
	struct bga_volume *vol;
	uint64_t deadline;
	int stop; /* atomic */
	bool whole_groups; /* the recheck scenario */
	uint64_t checks;
	int failures;
};

static void fail(struct run *r, const char *what, const char *msg)
{
	if (__atomic_fetch_add(&r->failures, 1, __ATOMIC_RELAXED) < 10)
		fprintf(stderr, "stress_check: %s: %s\n", what, msg);
}

struct used_order {
	struct run *r;
	uint64_t next;
};

static int used_cb(void *ctx, uint64_t start, uint64_t len, uint32_t flags)
{
	struct used_order *u = ctx;
	if (len == 0 || start < u->next || start + len > (uint64_t)GROUPS * BPG || flags != 0 ||
	    start / BPG != (start + len - 1) / BPG)
		fail(u->r, "bga_foreach_used while others run", "an extent out of order, out of the volume, "
							      "across a group or flagged pending (none are)");
	u->next = start + len;
	return 0;
}

/* The read calls of 0.3.0, each judged by what its contract says holds
 * at one instant of a group, whatever the other threads do. */
static void read_calls(struct run *r, uint64_t i)
{
	struct used_order u = {r, 0};
	if (bga_foreach_used(r->vol, 0, (uint64_t)GROUPS * BPG, used_cb, &u) != 0)
		fail(r, "bga_foreach_used", "failed");
	struct bga_group_stats gs = {.size = sizeof(gs)};
	if (bga_group_stats(r->vol, i % GROUPS, &gs) != 0)
		fail(r, "bga_group_stats", "failed");
	else if (gs.longest_run > gs.free_blocks || gs.free_blocks > gs.span_blocks || gs.span_blocks != BPG ||
		 gs.window_blocks > gs.free_blocks || (gs.window_blocks && !gs.windows) || gs.deferred_blocks)
		fail(r, "bga_group_stats while others run", "figures of no one instant");
	uint64_t len, group;
	if (bga_longest_free_sum(r->vol, &len, &group) != 0)
		fail(r, "bga_longest_free_sum", "failed");
	else if (len > BPG || (len ? group >= GROUPS : group != UINT64_MAX))
		fail(r, "bga_longest_free_sum while others run", "a run no group holds");
	if (bga_longest_free_read(r->vol) > BPG)
		fail(r, "bga_longest_free_read", "longer than a group");
}

static void *checker(void *arg)
{
	struct run *r = arg;
	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		if (!r->whole_groups)
			read_calls(r, r->checks);
		struct bga_check_report rep;
		int rc = bga_check(r->vol, &rep);
		/* Per-group and index findings come first in the walk, so a
		 * first violation with no group is a cross-group one. */
		if (rc == -EUCLEAN && rep.group != UINT64_MAX)
			fail(r, "bga_check while others run", rep.message);
		else if (rc != 0 && rc != -EUCLEAN)
			fail(r, "bga_check", "unexpected error");
		struct bga_stats st;
		if (!r->whole_groups && bga_stats(r->vol, &st) != 0)
			fail(r, "bga_stats", "failed");
		r->checks++;
	}
	return NULL;
}

static void work(void *ctx, int id)
{
	struct run *r = ctx;
	struct rng rng = {(uint64_t)id * 0x9e3779b97f4a7c15ull + 1};
	struct bga_rsv *rsv = NULL;
	if (!r->whole_groups && id % 2 == 0 && bga_rsv_open(r->vol, &rsv) != 0)
		fail(r, "rsv_open", "failed");
	struct bga_extent held[32];
	int n = 0;
	for (uint64_t i = 0; stress_go_on(i, 1000, r->deadline); i++) {
		if (n == 32 || (n > 0 && below(&rng, 2))) {
			uint64_t k = below(&rng, (uint64_t)n);
			if (bga_free(r->vol, held[k].start, held[k].len) != 0)
				fail(r, "free", "an owned extent was refused");
			held[k] = held[--n];
			continue;
		}
		struct bga_request req = {.goal = below(&rng, (uint64_t)GROUPS * BPG), .min_len = 1, .max_len = 1 + below(&rng, 16)};
		if (r->whole_groups)
			req.min_len = req.max_len = BPG;
		else if (rsv && below(&rng, 2))
			req.rsv = rsv;
		int rc = bga_alloc(r->vol, &req, &held[n]);
		if (rc == 0)
			n++;
		else if (rc != -ENOSPC)
			fail(r, "alloc", bga_strerror(rc));
	}
	while (n > 0) {
		n--;
		if (bga_free(r->vol, held[n].start, held[n].len) != 0)
			fail(r, "free", "an owned extent was refused");
	}
	bga_rsv_close(rsv);
}

static int run_one(bool whole_groups, double seconds)
{
	struct bga_config cfg;
	bga_config_init(&cfg, (uint64_t)GROUPS * BPG);
	cfg.blocks_per_group = BPG;
	struct run r = {.whole_groups = whole_groups, .deadline = stress_deadline(seconds)};
	if (bga_create(&cfg, &r.vol) != 0)
		return 1;
	if (whole_groups) {
		/* All groups used but WORKERS + 1 of them: the chunk's order-6
		 * summary bit flips whenever the last free group is taken. */
		struct bga_extent e;
		struct bga_request req = {.goal = 0, .min_len = BPG, .max_len = BPG};
		for (uint32_t g = 0; g < GROUPS - WORKERS - 1; g++)
			if (bga_alloc(r.vol, &req, &e) != 0)
				return 1;
	}
	pthread_t c;
	pthread_create(&c, NULL, checker, &r);
	if (test_threads_run(WORKERS, work, &r) != 0)
		return 1;
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	pthread_join(c, NULL);
	struct bga_check_report rep;
	if (bga_check(r.vol, &rep) != 0)
		fail(&r, "bga_check at rest", rep.message);
	printf("stress_check %s: %llu concurrent checks, %d failures\n", whole_groups ? "recheck" : "churn",
	       (unsigned long long)r.checks, r.failures);
	bga_destroy(r.vol);
	return r.failures != 0;
}

int main(void)
{
	double s = stress_seconds(2.0);
	int rc = run_one(false, s / 2);
	rc |= run_one(true, s / 2);
	return rc;
}
