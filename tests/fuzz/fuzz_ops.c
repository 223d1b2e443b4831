/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Operation-sequence fuzzer: the input decodes into a small volume config
 * and a sequence of calls on one thread.  Each call is mirrored in the
 * reference model (tests/support/refmodel.h), and the library must agree with it:
 *  - after every call: the same return code (-ENOSPC against -EAGAIN
 *    included), every extent handed out free in the model (no block
 *    handed out twice), the free and reserved counts, the free extents of
 *    the groups the call changed, and the windows' invariants
 *    (check_windows);
 *  - every FULL_EVERY calls, at the end of the input and around every
 *    store and load: everything (refmodel_compare: every free extent of
 *    the volume, a clean bga_check(), the statistics).  The same checks
 *    as comparing everything after every call, made later within the
 *    input: a broken invariant stays broken until a full compare names
 *    it (the op number in the message is where it was seen).
 * Any disagreement aborts with a message, which is what the fuzzer
 * catches.  This file holds the run: the config, the loop over calls and
 * the checks after each (the failed call's before and after among them).
 * The calls and their expectations are in fuzz_ops_calls.c, the decoding
 * of their arguments in fuzz_ops_args.c, the checks of bga_foreach_free
 * and bga_trim in fuzz_ops_walk.c, the calls of 0.3.0 in
 * fuzz_ops_embed.c; the state they share, and the checks every call makes,
 * in fuzz_ops_state.[ch], which orders the parts so that none calls one
 * above it.
 *
 * The alphabet: one byte picks the call (% 32), more bytes its arguments.
 *  - config: nblocks 1 .. 4096, blocks_per_group 64 .. 1024,
 *    first_data_block, rsv_max (past a group too) and rsv_default, the
 *    lock and counter modes, BGA_START_FULL, a stripe; now and then a bad
 *    config that bga_create must refuse, and bga_volume_config;
 *  - bga_alloc: a goal or BGA_NO_GOAL (goal-less small requests book the
 *    CPU's locality window), BGA_EXACT_GOAL, BGA_USE_RESERVED, BGA_WHOLE
 *    (its placement judged where no window holds blocks), through one of
 *    MAX_RSV window handles, align (good and bad units), bad lengths and
 *    unknown flags (BGA_ALL_OR_NOTHING among them);
 *  - bga_alloc_vec: the same requests with want and max_out (0 .. 16),
 *    BGA_ALL_OR_NOTHING, max_len past a group;
 *  - bga_claim and thieves: claims and exact goals aimed at the blocks a
 *    handle's window holds (pick_block), and other handles' and plain
 *    requests' allocations taking them;
 *  - bga_free, bga_free_vec (1 .. 8 extents, overlapping and bad ones
 *    too), bga_free_deferred (txns before, at and after the last commit),
 *    bga_commit, bga_reserve, bga_unreserve;
 *  - window handles: open, close, bga_rsv_set_size (0, rsv_max, past it
 *    up to a group, past both);
 *  - bga_foreach_free and bga_trim (ranges, min_len, a callback that
 *    stops the walk);
 *  - bga_grow (also a shrink and past BGA_MAX_BLOCKS);
 *  - bga_store into memory (incremental after the first) and bga_load:
 *    the loaded volume is compared with the model as a load gives it
 *    (refmodel_as_loaded), and then either destroyed or run on in the
 *    original's place (handles closed), so later calls and stores run
 *    on a lazily loaded volume.
 *
 *  - with V3_TAG first (fuzz_ops_embed.c): bga_free_deferred_vec (sets
 *    with bad, overlapping and pending extents), bga_foreach_used (ranges,
 *    a callback that stops the walk), bga_group_stats (good and bad
 *    groups and sizes) with bga_longest_free_sum and _read, the clearer
 *    names, and bga_store_tagged (the tag checked on the stored and the
 *    loaded volume, and kept by a plain store).
 *
 * Input format: an input whose first byte is LEGACY_TAG decodes as the
 * first format did (16 calls: no align, alloc_vec, claim, free_vec,
 * store, START_FULL or stripe), so the saved regression inputs of that
 * format (regress/fuzz_ops/, prefixed with the tag) keep their meaning.
 * One whose first byte is V3_TAG decodes the rest as the second format
 * does, with V3_CALLS calls: the second format's 32 and the calls of
 * 0.3.0 after them.
 * A call added later takes a call byte of its own in this format's
 * switch, or this format gets a tag the same way before the decoding
 * changes: a saved input must mean what it meant when it was found.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc.h>

#include "fuzz_ops_calls.h"
#include "fuzz_ops_embed.h"
#include "fuzz_ops_state.h"
#include "fuzz_ops_walk.h"

/* After a call: the counts and the touched groups; everything every
 * FULL_EVERY calls. */
static void compare_after(struct fz *f)
{
	bool full = f->op % FULL_EVERY == FULL_EVERY - 1;
	/* A lazy load running unsettled: the counts alone (a walk of the
	 * touched groups would read every chunk) until the full compare,
	 * which reads them and compares everything. */
	uint64_t lo = f->lazy ? 0 : f->touch_lo, hi = f->lazy ? 0 : f->touch_hi;
	int rc = full ? refmodel_compare(&f->m, f->vol) : refmodel_compare_range(&f->m, f->vol, lo, hi);
	if (rc)
		fail("op %u: %s", f->op, f->m.err);
	if (full)
		f->lazy = false;
	if (!f->lazy)
		f->touch_lo = f->touch_hi = 0;
}

/* After a failed call: what the API shows, against before it. */
static void shown_same(struct fz *f, const struct shown *before)
{
	struct shown after;
	char msg[160];

	expect_rc(f, "shown_take", shown_take(f->vol, f->rsv, MAX_RSV, before->have_stats, &after), 0);
	if (shown_diff(before, &after, (enum shown_allow)f->allow, msg, sizeof(msg)))
		fail("op %u: a call that failed (%d %s): %s", f->op, f->failed, bga_strerror(f->failed), msg);
}

/* Windows never overlap and each lies inside one group of the data area. */
static void check_windows(struct fz *f)
{
	struct bga_extent w[MAX_RSV];
	unsigned i, j;

	for (i = 0; i < MAX_RSV; i++) {
		w[i].len = 0;
		if (!f->rsv[i])
			continue;
		expect_rc(f, "rsv_window", bga_rsv_window(f->rsv[i], &w[i]), 0);
		if (!w[i].len)
			continue;
		if ((w[i].len > f->cfg.rsv_max && w[i].len > f->size_max) || w[i].len > f->cfg.blocks_per_group ||
		    w[i].start < f->cfg.first_data_block ||
		    w[i].start >= f->cfg.nblocks || w[i].len > f->cfg.nblocks - w[i].start ||
		    w[i].start / f->cfg.blocks_per_group != (w[i].start + w[i].len - 1) / f->cfg.blocks_per_group)
			fail("op %u: window %u [%" PRIu64 ", +%" PRIu64 ") out of place (rsv_max %u)", f->op, i,
			     w[i].start, w[i].len, f->cfg.rsv_max);
		for (j = 0; j < i; j++)
			if (w[j].len && w[i].start < w[j].start + w[j].len && w[j].start < w[i].start + w[i].len)
				fail("op %u: windows %u [%" PRIu64 ", +%" PRIu64 ") and %u [%" PRIu64 ", +%" PRIu64
				     ") overlap", f->op, j, w[j].start, w[j].len, i, w[i].start, w[i].len);
	}
}

/* A config that bga_create() must refuse, one field broken. */
static void try_bad_config(struct fz *f)
{
	struct bga_config bad = f->cfg;
	struct bga_volume *vol = (struct bga_volume *)&bad;

	switch (fz_u8(&f->in) % 10) {
	case 0: bad.nblocks = 0; break;
	case 1: bad.nblocks = BGA_MAX_BLOCKS + 1; break;
	case 2: bad.blocks_per_group = 64 * (fz_u8(&f->in) % 20) + 1 + (fz_u8(&f->in) % 63); break;
	case 3: bad.blocks_per_group = (1u << 20) + 64; break;
	case 4: bad.first_data_block = bad.nblocks + (fz_u8(&f->in) & 3); break;
	case 5: bad.lock_slots = 3 << (fz_u8(&f->in) % 8); break;
	case 6: bad.counter_batch = (fz_u8(&f->in) & 1) ? -1 : (1 << 24) + 1; break;
	case 7: bad.rsv_default = bad.rsv_max + 1; break;
	case 8: bad.rsv_max = (1u << 20) + 1 + fz_u8(&f->in); break;
	default: /* an unknown flag (bit 2 is BGA_START_FULL), or a stripe past a group */
		if (fz_u8(&f->in) & 1)
			bad.flags = 1u << (3 + fz_u8(&f->in) % 29);
		else
			bad.stripe = bad.blocks_per_group + 1 + fz_u8(&f->in);
		break;
	}
	expect_rc(f, "create(bad config)", bga_create(&bad, &vol), refmodel_config_check(&bad));
	if (vol != (struct bga_volume *)&bad)
		fail("create(bad config) wrote *out");
}

static void check_config(struct fz *f)
{
	struct bga_config got;

	expect_rc(f, "volume_config", bga_volume_config(f->vol, &got), 0);
	if (got.nblocks != f->cfg.nblocks || got.blocks_per_group != f->cfg.blocks_per_group ||
	    got.first_data_block != f->cfg.first_data_block || got.rsv_default != f->cfg.rsv_default ||
	    got.rsv_max != f->cfg.rsv_max || got.flags != f->cfg.flags)
		fail("volume_config does not give back the config");
	/* BGA_GLOBAL_LOCK runs with the one slot it is named after. */
	if ((f->cfg.flags & BGA_GLOBAL_LOCK) ? got.lock_slots != 1 :
	    (f->cfg.lock_slots && got.lock_slots != f->cfg.lock_slots) || !got.lock_slots ||
	    (got.lock_slots & (got.lock_slots - 1)))
		fail("volume_config lock_slots %u (asked %u)", got.lock_slots, f->cfg.lock_slots);
	if ((f->cfg.counter_batch && got.counter_batch != f->cfg.counter_batch) || got.counter_batch <= 0)
		fail("volume_config counter_batch %d (asked %d)", got.counter_batch, f->cfg.counter_batch);
}

static void decode_config(struct fz *f)
{
	struct bga_config *c = &f->cfg;
	uint8_t b;

	bga_config_init(c, 1 + fz_u16(&f->in) % 4096);
	c->blocks_per_group = 64 * (1 + fz_u8(&f->in) % 16);
	b = fz_u8(&f->in);
	c->first_data_block = (b & 0x80) ? 0 : b % 8;
	if (c->first_data_block >= c->nblocks)
		c->first_data_block = 0;
	c->rsv_max = fz_u16(&f->in) % (2 * c->blocks_per_group + 1); /* may exceed a group */
	c->rsv_default = c->rsv_max ? fz_u16(&f->in) % (c->rsv_max + 1) : 0;
	b = fz_u8(&f->in);
	c->flags = b & 3;
	c->lock_slots = (b & 4) ? 1u << ((b >> 3) % 4) : 0;
	c->counter_batch = (b & 0x20) ? 1 + (b >> 6) : 0;
	if (!f->v2)
		return;
	/* BGA_START_FULL, and a stripe: none mostly, a power of two or not */
	b = fz_u8(&f->in);
	if (b & 1)
		c->flags |= BGA_START_FULL;
	switch ((b >> 1) & 7) {
	case 1: c->stripe = 4; break;
	case 2: c->stripe = 3; break;
	case 3: c->stripe = 1u << (2 + (b >> 4) % 8); break;
	case 4: c->stripe = c->blocks_per_group; break;
	default: c->stripe = 0; break;
	}
	if (c->stripe > c->blocks_per_group)
		c->stripe = 0;
}

/* The trace's name of each call byte (the switch below): what a reader of
 * FUZZ_OPS_TRACE output needs, not the byte. */
static const char *const call_names[V3_CALLS] = {
	[0 ... 4] = "bga_alloc", [24 ... 25] = "bga_alloc",
	[5 ... 6] = "bga_free", [26] = "bga_free",
	[7] = "bga_free_deferred",
	[8] = "bga_commit",
	[9] = "bga_reserve",
	[10] = "bga_unreserve",
	[11 ... 12] = "bga_rsv_open/set_size/close", [27] = "bga_rsv_open/set_size/close",
	[13] = "bga_foreach_free",
	[14] = "bga_trim",
	[15] = "bga_grow",
	[16 ... 18] = "bga_alloc_vec", [28] = "bga_alloc_vec",
	[19 ... 20] = "bga_claim", [29] = "bga_claim",
	[21 ... 22] = "bga_free_vec", [30 ... 31] = "bga_free_vec",
	[23] = "bga_store/load",
	[32 ... 33] = "bga_free_deferred_vec",
	[34] = "bga_foreach_used",
	[35] = "bga_group_stats",
	[36] = "bga_free_blocks/window calls",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f;
	unsigned i;
	int rc;

	static int trace = -1;
	if (trace < 0)
		trace = getenv("FUZZ_OPS_TRACE") != NULL; /* a line per call, to read a finding */
	memset(&f, 0, sizeof(f));
	f.v2 = !(size && data[0] == LEGACY_TAG);
	f.v3 = size && data[0] == V3_TAG;
	f.in = (struct fz_in){ data, size, f.v2 && !f.v3 ? 0 : 1 };
	memio_init(&f.img, &f.io);
	decode_config(&f);
	if ((fz_u8(&f.in) & 15) == 15)
		try_bad_config(&f);
	rc = bga_create(&f.cfg, &f.vol);
	expect_rc(&f, "create", rc, 0);
	if (refmodel_init(&f.m, &f.cfg))
		fail("refmodel_init failed");
	f.m.window_blocks = refmodel_group_window_blocks;
	f.m.window_ctx = &f.vol;
	f.ngroups = (f.cfg.nblocks + f.cfg.blocks_per_group - 1) / f.cfg.blocks_per_group;
	f.maybe_trimmed = calloc(f.ngroups, 1);
	if (!f.maybe_trimmed)
		abort();
	check_config(&f);
	compare(&f);

	for (f.op = 0; f.op < MAX_OPS && fz_more(&f.in); f.op++) {
		unsigned call = fz_u8(&f.in) % (f.v3 ? V3_CALLS : f.v2 ? 32 : 16);
		f.failed = 0;
		f.have_before = false;
		switch (call) {
		case 0: case 1: case 2: case 3: case 4: case 24: case 25: op_alloc(&f); break;
		case 5: case 6: case 26: op_free(&f, false); break;
		case 7: op_free(&f, true); break;
		case 8: op_commit(&f); break;
		case 9: op_reserve(&f, false); break;
		case 10: op_reserve(&f, true); break;
		case 11: case 12: case 27: op_window(&f); break;
		case 13: op_walk(&f, false); f.lazy = false; break;
		case 14: op_walk(&f, true); f.lazy = false; break;
		case 15: op_grow(&f); break;
		case 16: case 17: case 18: case 28: op_alloc_vec(&f); break;
		case 19: case 20: case 29: op_claim(&f); break;
		case 21: case 22: case 31: case 30: op_free_vec(&f); break;
		case 23: op_store(&f); break; /* not 31: 0xff and 0x7f, common bytes, would store */
		/* V3_TAG inputs: the calls of 0.3.0 (fuzz_ops_embed.c) */
		case 32: case 33: op_free_deferred_vec(&f); break;
		case 34: op_used(&f); break;
		case 35: op_group(&f); break;
		case 36: op_names(&f); break;
		}
		if (trace)
			fprintf(stderr, "op %u: %s (byte %u), model free %" PRIu64 " reserved %" PRIu64 " deferred %" PRIu64
				"; volume free %" PRIu64 " reserved %" PRIu64 "\n", f.op, call_names[call], call, f.m.nfree, f.m.reserved,
				f.m.ndeferred, bga_free_exact(f.vol), bga_reserved(f.vol));
		if (f.failed && f.have_before)
			shown_same(&f, &f.before);
		check_windows(&f);
		compare_after(&f);
	}
	compare(&f); /* everything, at the end */
	for (i = 0; i < MAX_RSV; i++)
		bga_rsv_close(f.rsv[i]);
	compare(&f); /* closing gives windows back; nothing else moves */
	bga_destroy(f.vol);
	refmodel_fini(&f.m);
	free(f.maybe_trimmed);
	memio_free(&f.img);
	return 0;
}
