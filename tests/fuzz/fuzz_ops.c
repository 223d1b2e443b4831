/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Operation-sequence fuzzer: the input decodes into a small volume config
 * and a sequence of calls on one thread.  Each call is mirrored in the
 * reference model (tests/refmodel.h), and after each one the library must
 * agree with the model: the same return code, no block handed out twice,
 * the same free extents, a clean bga_check().  Any disagreement aborts
 * with a message, which is what the fuzzer catches.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc.h>

#include "fuzz_input.h"
#include "refmodel.h"

#define MAX_OPS 256
#define MAX_RSV 4
#define RECENT 32

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void fail(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_ops: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

struct fz {
	struct fz_in in;
	struct bga_config cfg;
	struct bga_volume *vol;
	struct refmodel m;
	struct bga_rsv *rsv[MAX_RSV];
	struct bga_extent recent[RECENT]; /* extents handed out lately, maybe since freed */
	unsigned nrecent;
	uint8_t *maybe_trimmed; /* per group: a trim may skip it */
	uint64_t ngroups;
	unsigned op;
};

static void expect_rc(struct fz *f, const char *what, int rc, int want)
{
	if (rc != want)
		fail("op %u: %s returned %d (%s), model expects %d (%s)", f->op, what, rc, bga_strerror(rc), want,
		     bga_strerror(want));
}

static void compare(struct fz *f)
{
	if (refmodel_compare(&f->m, f->vol))
		fail("op %u: %s", f->op, f->m.err);
}

/* Freeing into a group makes it eligible for trimming again. */
static void touched_free(struct fz *f, uint64_t start, uint64_t len)
{
	uint64_t g;

	for (g = start / f->cfg.blocks_per_group; g <= (start + len - 1) / f->cfg.blocks_per_group; g++)
		f->maybe_trimmed[g] = 0;
}

/* A block number biased towards interesting places. */
static uint64_t pick_block(struct fz *f)
{
	uint64_t n = f->cfg.nblocks, bpg = f->cfg.blocks_per_group;

	switch (fz_u8(&f->in) & 7) {
	case 0: return f->cfg.first_data_block;
	case 1: return fz_below(&f->in, n / bpg + 1) * bpg; /* a group start (or nblocks) */
	case 2: return n - 1 - fz_below(&f->in, n < 8 ? n : 8);
	case 3: return n + fz_u8(&f->in); /* past the end */
	case 4: return fz_below(&f->in, f->cfg.first_data_block + 1);
	default: return fz_below(&f->in, n);
	}
}

static uint64_t pick_len(struct fz *f)
{
	uint64_t bpg = f->cfg.blocks_per_group;

	switch (fz_u8(&f->in) & 7) {
	case 0: return 0;
	case 1: return bpg;
	case 2: return bpg + 1;
	case 3: return UINT64_MAX - fz_u8(&f->in);
	case 4: return fz_below(&f->in, 2 * bpg + 2);
	default: return 1 + (fz_u8(&f->in) & 15);
	}
}

/* A range to free: often one handed out lately, or an allocated run in the model. */
static void pick_range(struct fz *f, uint64_t *start, uint64_t *len)
{
	uint8_t mode = fz_u8(&f->in) & 3;
	uint64_t b;

	if (mode == 0 && f->nrecent) {
		struct bga_extent e = f->recent[fz_below(&f->in, f->nrecent < RECENT ? f->nrecent : RECENT)];
		uint64_t cut = fz_below(&f->in, e.len);

		switch (fz_u8(&f->in) & 3) {
		case 0: *start = e.start; *len = e.len; break;
		case 1: *start = e.start + cut; *len = e.len - cut; break; /* a tail */
		case 2: *start = e.start; *len = cut ? cut : 1; break;     /* a head */
		default: *start = e.start + cut; *len = e.len + 1; break;  /* one too far */
		}
		return;
	}
	if (mode == 1) {
		*start = pick_block(f);
		*len = pick_len(f);
		return;
	}
	/* An allocated run in the model, possibly across groups. */
	b = fz_below(&f->in, f->cfg.nblocks);
	while (b < f->cfg.nblocks && f->m.state[b] != REFM_ALLOC)
		b++;
	*start = b;
	*len = 0;
	while (b < f->cfg.nblocks && f->m.state[b] == REFM_ALLOC && *len < 1 + (uint64_t)fz_u8(&f->in) * 8) {
		b++;
		(*len)++;
	}
	if (*len == 0)
		*len = 1;
}

static struct bga_rsv *pick_rsv(struct fz *f)
{
	uint8_t i = fz_u8(&f->in);

	return (i & 0x80) ? f->rsv[i % MAX_RSV] : NULL;
}

static void op_alloc(struct fz *f)
{
	struct bga_request req;
	struct bga_extent ext = { 0xdead, 0xbeef };
	uint8_t g = fz_u8(&f->in);
	int rc;
	unsigned i;
	bool windows = false;

	memset(&req, 0, sizeof(req));
	if ((g & 3) == 0)
		req.goal = BGA_NO_GOAL;
	else
		req.goal = pick_block(f);
	req.min_len = pick_len(f);
	switch (fz_u8(&f->in) & 3) {
	case 0: req.max_len = req.min_len; break;
	case 1: req.max_len = req.min_len + fz_u8(&f->in); break;
	case 2: req.max_len = req.min_len - 1; break; /* bad unless min_len was 0 */
	default: req.max_len = UINT64_MAX; break;
	}
	req.rsv = pick_rsv(f);
	req.flags = fz_u8(&f->in);
	if (!(req.flags & 0x80))
		req.flags &= BGA_EXACT_GOAL | BGA_USE_RESERVED;
	else
		req.flags &= 0x7f; /* now and then an unknown bit */
	for (i = 0; i < MAX_RSV; i++)
		windows |= f->rsv[i] != NULL;

	rc = bga_alloc(f->vol, &req, &ext);
	/* Every answer exactly, -ENOSPC against -EAGAIN included (refmodel.h). */
	if (refmodel_alloc_check(&f->m, &req, rc, &ext))
		fail("op %u: %s", f->op, f->m.err);
	if (rc)
		return;
	f->recent[f->nrecent++ % RECENT] = ext;
	/* "the goal block, then forward in its group": with no windows to
	 * steer around, a free goal with room for min_len must be taken.
	 * Windows hold blocks that the model counts free (and small
	 * goal-less requests book a CPU's locality window with no handle):
	 * bga_stats says whether any hold blocks. */
	if (!windows && req.goal != BGA_NO_GOAL && ext.start != req.goal) {
		struct bga_stats st;
		/* Look at the state from before this alloc. */
		memset(f->m.state + ext.start, REFM_FREE, ext.len);
		if (refmodel_run_at(&f->m, req.goal, false) >= req.min_len && req.goal >= f->cfg.first_data_block &&
		    bga_stats(f->vol, &st) == 0 && st.rsv_window_blocks == 0)
			fail("op %u: alloc(goal=%" PRIu64 ", min=%" PRIu64 ") returned [%" PRIu64 ", +%" PRIu64
			     ") though the goal was free", f->op, req.goal, req.min_len, ext.start, ext.len);
		memset(f->m.state + ext.start, REFM_ALLOC, ext.len);
	}
}

static void op_free(struct fz *f, bool deferred)
{
	uint64_t start, len, txn = 0;
	int rc, want;

	pick_range(f, &start, &len);
	if (deferred) {
		switch (fz_u8(&f->in) & 7) {
		case 0: txn = 0; break;
		case 1: txn = f->m.last_txn; break;
		case 2: txn = f->m.last_txn ? f->m.last_txn - 1 : 0; break;
		default: txn = f->m.last_txn + 1 + (fz_u8(&f->in) & 3); break;
		}
		want = refmodel_free_deferred(&f->m, start, len, txn);
		rc = bga_free_deferred(f->vol, start, len, txn);
		expect_rc(f, "free_deferred", rc, want);
	} else {
		want = refmodel_free(&f->m, start, len);
		rc = bga_free(f->vol, start, len);
		expect_rc(f, "free", rc, want);
		if (!rc)
			touched_free(f, start, len);
	}
}

static void op_commit(struct fz *f)
{
	uint64_t txn, last = f->m.last_txn;
	size_t i;
	int rc, want;

	switch (fz_u8(&f->in) & 7) {
	case 0: txn = 0; break;
	case 1: txn = last ? last - 1 : 0; break;
	case 2: txn = last; break;
	case 3: txn = UINT64_MAX; break;
	default: txn = last + (fz_u8(&f->in) & 3); break;
	}
	if (txn == UINT64_MAX && (fz_u8(&f->in) & 1))
		txn = last + 1; /* UINT64_MAX would end the run's deferred frees */
	for (i = 0; i < f->m.npend; i++)
		if (f->m.pend[i].txn <= txn && txn >= last && txn)
			touched_free(f, f->m.pend[i].start, f->m.pend[i].len);
	want = refmodel_commit(&f->m, txn);
	rc = bga_commit(f->vol, txn);
	expect_rc(f, "commit", rc, want);
}

static void op_reserve(struct fz *f, bool un)
{
	uint64_t n;
	int rc, want;

	switch (fz_u8(&f->in) & 7) {
	case 0: n = 0; break;
	case 1: n = un ? f->m.reserved : f->m.nfree - f->m.reserved; break; /* exactly all */
	case 2: n = un ? f->m.reserved + 1 : f->m.nfree - f->m.reserved + 1; break;
	case 3: n = fz_u8(&f->in) & 1 ? f->cfg.nblocks + 1 : UINT64_MAX; break;
	default: n = 1 + (fz_u8(&f->in) & 31); break;
	}
	if (un) {
		want = refmodel_unreserve(&f->m, n);
		rc = bga_unreserve(f->vol, n);
		expect_rc(f, "unreserve", rc, want);
	} else {
		want = refmodel_reserve(&f->m, n);
		rc = bga_reserve(f->vol, n);
		expect_rc(f, "reserve", rc, want);
	}
}

static void op_window(struct fz *f)
{
	uint8_t c = fz_u8(&f->in);
	unsigned i = c % MAX_RSV;
	uint32_t size;
	int rc;

	switch ((c >> 2) & 3) {
	case 0:
		if (f->rsv[i])
			return;
		rc = bga_rsv_open(f->vol, &f->rsv[i]);
		expect_rc(f, "rsv_open", rc, 0);
		break;
	case 1:
		bga_rsv_close(f->rsv[i]); /* NULL is ignored */
		f->rsv[i] = NULL;
		break;
	default:
		if (!f->rsv[i])
			return;
		switch (fz_u8(&f->in) & 3) {
		case 0: size = 0; break;
		case 1: size = f->cfg.rsv_max; break;
		case 2: size = f->cfg.rsv_max + 1 + (fz_u8(&f->in) & 3); break;
		default: size = fz_u16(&f->in) % (f->cfg.rsv_max + 1); break;
		}
		rc = bga_rsv_set_size(f->rsv[i], size);
		expect_rc(f, "rsv_set_size", rc, size > f->cfg.rsv_max ? -EINVAL : 0);
		break;
	}
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
		if (w[i].len > f->cfg.rsv_max || w[i].len > f->cfg.blocks_per_group || w[i].start < f->cfg.first_data_block ||
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

/*
 * The model's free extents in [from, to), split at groups, >= min_len, are
 * what a walk must report.  A trim may leave some out, for two documented
 * reasons: a group trimmed before and not freed into since is skipped
 * (maybe_trimmed), and an extent is only claimed while free minus reserved
 * covers it (trim claims like an allocation, so it never breaks a
 * reservation); a group's claims are all made before its callbacks run, and
 * the first extent that does not fit ends that group's claims.
 */
struct walk {
	struct fz *f;
	uint64_t from, to, min_len;
	uint64_t next;     /* where the next expected extent is searched from */
	unsigned calls, stop_after;
	int stop_value;
	bool trim, stopped;
	uint64_t sum;      /* blocks reported (a stopping callback's extent not counted) */
	uint64_t group;    /* trim: the group being claimed, and how much so far */
	uint64_t taken;
	bool group_full;   /* trim: the claims in `group` ended */
};

static bool model_next(struct walk *w, uint64_t *start, uint64_t *len)
{
	struct refmodel *m = &w->f->m;
	uint64_t b = w->next, run;

	while (b < w->to) {
		run = refmodel_run_at(m, b, false);
		if (b + run > w->to)
			run = w->to - b;
		if (run >= w->min_len && run) {
			*start = b;
			*len = run;
			return true;
		}
		b += run ? run : 1;
	}
	return false;
}

/* Trim: whether the next model extent [ms, +ml) is claimed or may be skipped. */
static bool trim_claims(struct walk *w, uint64_t ms, uint64_t ml, bool *may_skip)
{
	struct fz *f = w->f;
	uint64_t g = ms / f->cfg.blocks_per_group;

	if (g != w->group) {
		w->group = g;
		w->taken = 0;
		w->group_full = false;
	}
	*may_skip = f->maybe_trimmed[g] != 0;
	if (w->group_full || f->m.nfree - f->m.reserved - w->taken < ml) {
		w->group_full = true;
		*may_skip = true;
		return false;
	}
	return true;
}

static int walk_cb(void *ctx, uint64_t start, uint64_t len)
{
	struct walk *w = ctx;
	struct fz *f = w->f;
	uint64_t ms, ml;
	bool may_skip = false;

	if (w->stopped)
		fail("op %u: callback ran again after returning %d", f->op, w->stop_value);
	for (;;) {
		if (!model_next(w, &ms, &ml))
			fail("op %u: %s reports [%" PRIu64 ", +%" PRIu64 ") past the model's last extent", f->op,
			     w->trim ? "trim" : "foreach_free", start, len);
		if (w->trim && !trim_claims(w, ms, ml, &may_skip)) {
			w->next = ms + ml; /* not claimable: must not be reported */
			if (ms == start)
				fail("op %u: trim reports [%" PRIu64 ", +%" PRIu64 ") which free %" PRIu64
				     " minus reserved %" PRIu64 " cannot cover", f->op, start, len, f->m.nfree,
				     f->m.reserved);
			continue;
		}
		if (ms == start && ml == len)
			break;
		if (may_skip && ms < start) {
			w->next = ms + ml;
			continue;
		}
		fail("op %u: %s [%" PRIu64 ", %" PRIu64 ") min %" PRIu64 " reports [%" PRIu64 ", +%" PRIu64
		     "), model expects [%" PRIu64 ", +%" PRIu64 ") (free %" PRIu64 ", reserved %" PRIu64 ")", f->op,
		     w->trim ? "trim" : "foreach_free", w->from, w->to, w->min_len, start, len, ms, ml, f->m.nfree,
		     f->m.reserved);
	}
	w->next = start + len;
	if (w->trim) {
		/* The group's extents are claimed while the discards run. */
		uint64_t free = bga_free_exact(f->vol);

		w->taken += len;
		if (free > f->m.nfree - len)
			fail("op %u: during trim of [%" PRIu64 ", +%" PRIu64 ") free_exact is %" PRIu64
			     ", at most %" PRIu64 " expected", f->op, start, len, free, f->m.nfree - len);
	}
	if (++w->calls == w->stop_after) {
		w->stopped = true;
		return w->stop_value;
	}
	w->sum += len;
	return 0;
}

static void op_walk(struct fz *f, bool trim)
{
	struct walk w = { .f = f, .trim = trim, .group = UINT64_MAX };
	uint64_t trimmed = UINT64_MAX, g, ms, ml;
	uint8_t c = fz_u8(&f->in);
	bool may_skip;
	int rc, want = 0;

	if (c & 1) {
		w.from = 0;
		w.to = f->cfg.nblocks;
	} else {
		w.from = pick_block(f);
		w.to = (c & 2) ? pick_block(f) : w.from + pick_len(f);
	}
	w.min_len = (c & 4) ? pick_len(f) : 1;
	w.stop_after = (c & 8) ? 1 + (fz_u8(&f->in) & 3) : 0;
	w.stop_value = 100 + (c >> 4);
	if (w.from >= w.to || w.to > f->cfg.nblocks || w.min_len == 0)
		want = -EINVAL;
	w.next = w.from;
	if (trim)
		rc = bga_trim(f->vol, w.from, w.to, w.min_len, walk_cb, &w, (c & 16) ? NULL : &trimmed);
	else
		rc = bga_foreach_free(f->vol, w.from, w.to, w.min_len, walk_cb, &w);
	if (want) {
		expect_rc(f, trim ? "trim" : "foreach_free", rc, want);
		if (w.calls)
			fail("op %u: rejected walk called back %u times", f->op, w.calls);
		return;
	}
	if (w.stopped) {
		expect_rc(f, trim ? "trim (stopped)" : "foreach_free (stopped)", rc, w.stop_value);
	} else {
		expect_rc(f, trim ? "trim" : "foreach_free", rc, 0);
		/* Nothing left unreported but what a trim may skip. */
		while (model_next(&w, &ms, &ml)) {
			if (!(trim && (!trim_claims(&w, ms, ml, &may_skip) || may_skip)))
				fail("op %u: %s [%" PRIu64 ", %" PRIu64 ") min %" PRIu64 " missed [%" PRIu64
				     ", +%" PRIu64 ") (free %" PRIu64 ", reserved %" PRIu64 ")", f->op,
				     trim ? "trim" : "foreach_free", w.from, w.to, w.min_len, ms, ml, f->m.nfree,
				     f->m.reserved);
			w.next = ms + ml;
		}
	}
	if (trim) {
		if (!(c & 16) && trimmed != w.sum)
			fail("op %u: trim says %" PRIu64 " blocks trimmed, callbacks saw %" PRIu64, f->op, trimmed,
			     w.sum);
		for (g = w.from / f->cfg.blocks_per_group; g <= (w.to - 1) / f->cfg.blocks_per_group; g++)
			f->maybe_trimmed[g] = 1;
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
}

/* bga_grow: usually a little larger, sometimes a shrink or past the limit. */
static void op_grow(struct fz *f)
{
	uint64_t n = f->cfg.nblocks;
	switch (fz_u8(&f->in) % 4) {
	case 0: n -= n > 1 ? 1 : 0; break; /* a shrink (or, at 1 block, the same size) */
	case 1: n = BGA_MAX_BLOCKS + 1 + fz_u8(&f->in); break;
	default: n += fz_below(&f->in, 2 * (uint64_t)f->cfg.blocks_per_group + 1); break;
	}
	if (n > 1u << 16 && n <= BGA_MAX_BLOCKS)
		return; /* keep the model small */
	int want = refmodel_grow(&f->m, n);
	expect_rc(f, "grow", bga_grow(f->vol, n), want);
	if (want == 0 && n != f->cfg.nblocks) {
		uint64_t ngroups = (n + f->cfg.blocks_per_group - 1) / f->cfg.blocks_per_group;
		uint8_t *t = realloc(f->maybe_trimmed, ngroups);
		if (!t)
			abort();
		memset(t + f->ngroups, 0, ngroups - f->ngroups);
		f->maybe_trimmed = t;
		f->ngroups = ngroups;
		f->cfg.nblocks = n;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f;
	unsigned i;
	int rc;

	memset(&f, 0, sizeof(f));
	f.in = (struct fz_in){ data, size, 0 };
	decode_config(&f);
	if ((fz_u8(&f.in) & 15) == 15)
		try_bad_config(&f);
	rc = bga_create(&f.cfg, &f.vol);
	expect_rc(&f, "create", rc, 0);
	if (refmodel_init(&f.m, &f.cfg))
		fail("refmodel_init failed");
	f.ngroups = (f.cfg.nblocks + f.cfg.blocks_per_group - 1) / f.cfg.blocks_per_group;
	f.maybe_trimmed = calloc(f.ngroups, 1);
	if (!f.maybe_trimmed)
		abort();
	check_config(&f);
	compare(&f);

	for (f.op = 0; f.op < MAX_OPS && fz_more(&f.in); f.op++) {
		switch (fz_u8(&f.in) % 16) {
		case 0: case 1: case 2: case 3: case 4: op_alloc(&f); break;
		case 5: case 6: op_free(&f, false); break;
		case 7: op_free(&f, true); break;
		case 8: op_commit(&f); break;
		case 9: op_reserve(&f, false); break;
		case 10: op_reserve(&f, true); break;
		case 11: case 12: op_window(&f); break;
		case 13: op_walk(&f, false); break;
		case 14: op_walk(&f, true); break;
		case 15: op_grow(&f); break;
		}
		check_windows(&f);
		compare(&f);
	}
	for (i = 0; i < MAX_RSV; i++)
		bga_rsv_close(f.rsv[i]);
	compare(&f); /* closing gives windows back; nothing else moves */
	bga_destroy(f.vol);
	refmodel_fini(&f.m);
	free(f.maybe_trimmed);
	return 0;
}
