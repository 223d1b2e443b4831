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
 * catches.  The checks of bga_foreach_free and bga_trim are in
 * fuzz_ops_walk.c; what the two files share, in fuzz_ops.h.
 *
 * The alphabet: one byte picks the call (% 32), more bytes its arguments.
 *  - config: nblocks 1 .. 4096, blocks_per_group 64 .. 1024,
 *    first_data_block, rsv_max (past a group too) and rsv_default, the
 *    lock and counter modes, BGA_START_FULL, a stripe; now and then a bad
 *    config that bga_create must refuse, and bga_volume_config;
 *  - bga_alloc: a goal or BGA_NO_GOAL (goal-less small requests book the
 *    CPU's locality window), BGA_EXACT_GOAL, BGA_USE_RESERVED, through
 *    one of MAX_RSV window handles, align (good and bad units), bad
 *    lengths and unknown flags (BGA_ALL_OR_NOTHING among them);
 *  - bga_alloc_vec: the same requests with want and max_out (0 .. 16),
 *    BGA_ALL_OR_NOTHING, max_len past a group;
 *  - bga_claim and thieves: claims and exact goals aimed at the blocks a
 *    handle's window holds (pick_block), and other handles' and plain
 *    requests' allocations taking them;
 *  - bga_free, bga_free_vec (1 .. 8 extents, overlapping and bad ones
 *    too), bga_free_deferred (txns before, at and after the last commit),
 *    bga_commit, bga_reserve, bga_unreserve;
 *  - window handles: open, close, bga_rsv_set_size (0, rsv_max, past it);
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
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc.h>

#include "fuzz_ops.h"

void fail(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_ops: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

void expect_rc(struct fz *f, const char *what, int rc, int want)
{
	if (rc != want)
		fail("op %u: %s returned %d (%s), model expects %d (%s)", f->op, what, rc, bga_strerror(rc), want,
		     bga_strerror(want));
}

/* Everything (refmodel_compare). */
static void compare(struct fz *f)
{
	if (refmodel_compare(&f->m, f->vol))
		fail("op %u: %s", f->op, f->m.err);
}

/* The blocks a call changed, for the compare after it. */
void touch(struct fz *f, uint64_t start, uint64_t len)
{
	if (len == 0)
		return;
	if (f->touch_lo >= f->touch_hi || start < f->touch_lo)
		f->touch_lo = start;
	if (start + len > f->touch_hi)
		f->touch_hi = start + len;
}

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

void before_call(struct fz *f, bool may_fail, bool deep)
{
	f->have_before = may_fail;
	if (may_fail)
		expect_rc(f, "shown_take", shown_take(f->vol, f->rsv, MAX_RSV, deep && !f->lazy, &f->before), 0);
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

/* Freeing into a group makes it eligible for trimming again. */
static void touched_free(struct fz *f, uint64_t start, uint64_t len)
{
	uint64_t g;

	for (g = start / f->cfg.blocks_per_group; g <= (start + len - 1) / f->cfg.blocks_per_group; g++)
		f->maybe_trimmed[g] = 0;
	touch(f, start, len);
}

/* A block number biased towards interesting places. */
uint64_t pick_block(struct fz *f)
{
	uint64_t n = f->cfg.nblocks, bpg = f->cfg.blocks_per_group;
	uint8_t c = fz_u8(&f->in);

	/* the blocks a handle's window holds: thieves' targets */
	if (f->v2 && (c & 8)) {
		struct bga_rsv *r = f->rsv[(c >> 4) % MAX_RSV];
		struct bga_extent w = { 0, 0 };

		if (r && bga_rsv_window(r, &w) == 0 && w.len)
			return w.start + ((c & 0x80) ? fz_below(&f->in, w.len) : 0);
	}
	switch (c & 7) {
	case 0: return f->cfg.first_data_block;
	case 1: return fz_below(&f->in, n / bpg + 1) * bpg; /* a group start (or nblocks) */
	case 2: return n - 1 - fz_below(&f->in, n < 8 ? n : 8);
	case 3: return n + fz_u8(&f->in); /* past the end */
	case 4: return fz_below(&f->in, f->cfg.first_data_block + 1);
	default: return fz_below(&f->in, n);
	}
}

uint64_t pick_len(struct fz *f)
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
void pick_range(struct fz *f, uint64_t *start, uint64_t *len)
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
	if (b < f->cfg.nblocks) {
		/* one scan, not a compare per block under the coverage
		 * instrumentation: the same first allocated block */
		const uint8_t *a = memchr(f->m.state + b, REFM_ALLOC, f->cfg.nblocks - b);
		b = a ? (uint64_t)(a - f->m.state) : f->cfg.nblocks;
	}
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

/*
 * A request: goal, lengths, handle, flags (`flags_ok` the known ones; now
 * and then an unknown bit), and in the second format first an allocation
 * unit (good ones, and bad ones now and then), with lengths and an exact
 * goal mostly rounded to it.
 */
static void decode_request(struct fz *f, struct bga_request *req, uint8_t g, uint32_t flags_ok)
{
	uint8_t a = f->v2 ? fz_u8(&f->in) : 0;

	if ((g & 3) == 0)
		req->goal = BGA_NO_GOAL;
	else
		req->goal = pick_block(f);
	req->min_len = pick_len(f);
	switch (fz_u8(&f->in) & 3) {
	case 0: req->max_len = req->min_len; break;
	case 1: req->max_len = req->min_len + fz_u8(&f->in); break;
	case 2: req->max_len = req->min_len - 1; break; /* bad unless min_len was 0 */
	default: req->max_len = UINT64_MAX; break;
	}
	req->rsv = pick_rsv(f);
	req->flags = fz_u8(&f->in);
	if (!(req->flags & 0x80))
		req->flags &= flags_ok;
	else
		req->flags &= 0x7f; /* now and then an unknown bit */
	if (!f->v2 || (a & 3) != 0)
		return;
	/* 2 .. 2048 (past a small group: -EINVAL), or now and then 3 or 0 */
	req->align = (a & 4) ? UINT64_C(1) << (1 + (a >> 3) % 11) : (a & 8) ? 3 : (a >> 4) & 1;
	if (req->align > 1 && !(a & 0x40)) {
		uint64_t u = req->align;
		req->min_len = req->min_len < u ? u : req->min_len / u * u;
		if (req->max_len != UINT64_MAX)
			req->max_len = req->max_len < req->min_len ? req->min_len : req->max_len / u * u;
		else
			req->max_len = UINT64_MAX / u * u;
		if (req->goal != BGA_NO_GOAL && !(a & 0x80))
			req->goal = req->goal / u * u;
	}
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
	decode_request(f, &req, g, BGA_EXACT_GOAL | BGA_USE_RESERVED);
	for (i = 0; i < MAX_RSV; i++)
		windows |= f->rsv[i] != NULL;
	/* an aligned request or a stripe may pass a free goal over */
	windows |= req.align > 1 || f->cfg.stripe > 1;

	before_call(f, refmodel_alloc_expect(&f->m, &req) != 0, false);
	rc = bga_alloc(f->vol, &req, &ext);
	/* Every answer exactly, -ENOSPC against -EAGAIN included (refmodel.h). */
	if (refmodel_alloc_check(&f->m, &req, rc, &ext))
		fail("op %u: %s", f->op, f->m.err);
	if (rc) {
		fz_failed(f, rc, rc == -ENOSPC || rc == -EAGAIN ? SHOWN_RECLAIM : SHOWN_NOTHING);
		return;
	}
	touch(f, ext.start, ext.len);
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

static void op_alloc_vec(struct fz *f)
{
	struct bga_request req;
	struct bga_extent out[MAX_VEC + 1];
	uint8_t g = fz_u8(&f->in), c;
	uint64_t want, u;
	size_t max_out, n = 0xdead, i;
	int rc;

	memset(&req, 0, sizeof(req));
	decode_request(f, &req, g, BGA_EXACT_GOAL | BGA_USE_RESERVED | BGA_ALL_OR_NOTHING);
	c = fz_u8(&f->in);
	u = req.align > 1 ? req.align : 1;
	switch (c & 3) {
	case 0: want = req.min_len * (1 + fz_below(&f->in, 8)); break;
	case 1: want = fz_u16(&f->in); break;
	case 2: want = f->m.nfree + (fz_u8(&f->in) & 1); break; /* all that is free, or one more */
	default: want = 1 + fz_below(&f->in, 4 * (uint64_t)f->cfg.blocks_per_group); break;
	}
	if (!(c & 4))
		want = (want + u - 1) / u * u; /* a multiple of the unit, mostly */
	max_out = (c & 0x80) ? 0 : 1 + ((c >> 3) % MAX_VEC);
	/* a slot past max_out, to see that nothing is written there */
	out[max_out < MAX_VEC ? max_out : MAX_VEC] = (struct bga_extent){ 0xdead, 0xbeef };
	before_call(f, true, true); /* the model judges it after the call */
	rc = bga_alloc_vec(f->vol, &req, want, out, max_out, &n);
	if (out[max_out < MAX_VEC ? max_out : MAX_VEC].start != 0xdead)
		fail("op %u: alloc_vec wrote past max_out %zu", f->op, max_out);
	if (rc && n)
		fail("op %u: alloc_vec returned %d with %zu extents", f->op, rc, n);
	if (refmodel_alloc_vec_check(&f->m, &req, want, max_out, rc, out, rc ? 0 : n))
		fail("op %u: %s", f->op, f->m.err);
	if (rc)
		fz_failed(f, rc, rc == -ENOSPC || rc == -EAGAIN ? SHOWN_RECLAIM : SHOWN_NOTHING);
	for (i = 0; !rc && i < n; i++) {
		touch(f, out[i].start, out[i].len);
		f->recent[f->nrecent++ % RECENT] = out[i];
	}
}

/* bga_claim: often aimed at a window's blocks (pick_block), the thief
 * that takes them back, or at what was handed out lately. */
static void op_claim(struct fz *f)
{
	uint8_t c = fz_u8(&f->in);
	uint64_t start, len;
	int rc, want;

	if ((c & 3) == 0 && f->nrecent) {
		struct bga_extent e = f->recent[fz_below(&f->in, f->nrecent < RECENT ? f->nrecent : RECENT)];
		start = e.start;
		len = e.len;
	} else {
		start = pick_block(f);
		len = (c & 4) ? pick_len(f) : 1 + (uint64_t)(fz_u8(&f->in) & 7);
	}
	want = refmodel_claim(&f->m, start, len);
	before_call(f, want != 0, true);
	rc = bga_claim(f->vol, start, len);
	expect_rc(f, "claim", rc, want);
	if (rc)
		fz_failed(f, rc, SHOWN_CLAIM_CUT);
	if (!rc) {
		touch(f, start, len);
		f->recent[f->nrecent++ % RECENT] = (struct bga_extent){ start, len };
	}
}

static void op_free_vec(struct fz *f)
{
	struct bga_extent ext[8];
	uint8_t c = fz_u8(&f->in);
	size_t n = (c & 0x80) ? 0 : 1 + (c & 7), i;
	int rc, want;

	for (i = 0; i < n; i++)
		pick_range(f, &ext[i].start, &ext[i].len);
	if ((c & 0x40) && n > 1)
		ext[n - 1] = ext[0]; /* the same extent twice */
	want = refmodel_free_vec(&f->m, ext, n);
	before_call(f, want != 0, true);
	rc = bga_free_vec(f->vol, n ? ext : NULL, n);
	expect_rc(f, "free_vec", rc, want);
	if (rc)
		fz_failed(f, rc, SHOWN_NOTHING);
	for (i = 0; !rc && i < n; i++)
		touched_free(f, ext[i].start, ext[i].len);
}

/*
 * bga_store into f->img (the first store formats it, later ones write the
 * groups changed since), then bga_load of it: the loaded volume is what
 * the model says a load gives (refmodel_as_loaded), compared in full; then
 * it is destroyed, or it takes the original's place.
 */
static void op_store(struct fz *f)
{
	struct bga_volume *back = NULL;
	struct refmodel lm;
	uint8_t c = fz_u8(&f->in);
	unsigned i;
	int rc;

	compare(f); /* the state being stored, in full */
	f->lazy = false;
	if (f->v3 && (c & 4)) { /* a tagged store; a plain one keeps the tag */
		f->tag = fz_u8(&f->in) & 1 ? fz_u64(&f->in) : fz_u8(&f->in);
		rc = bga_store_tagged(f->vol, &f->io, f->tag);
	} else {
		rc = bga_store(f->vol, &f->io);
	}
	expect_rc(f, "store", rc, 0);
	f->img_live = true;
	rc = bga_load(&f->io, (c & 2) ? &f->cfg : NULL, &back);
	expect_rc(f, "load", rc, 0);
	check_tag(f, f->vol, "the stored volume");
	check_tag(f, back, "the loaded volume");
	if (refmodel_copy(&lm, &f->m))
		abort();
	refmodel_as_loaded(&lm);
	if (f->v2 && (c & 9) == 9) {
		/* It runs on as lazily loaded, its chunks unread: its counts
		 * now, the rest at its next full compare (compare_after). */
		if (refmodel_compare_range(&lm, back, 0, 0))
			fail("op %u: the loaded volume: %s", f->op, lm.err);
		f->lazy = true;
	} else if (refmodel_compare(&lm, back)) {
		fail("op %u: the loaded volume: %s", f->op, lm.err);
	}
	if (!(c & 1)) {
		bga_destroy(back);
		refmodel_fini(&lm);
		f->lazy = false;
		return;
	}
	/* The loaded volume runs on; the original goes, with its handles. */
	for (i = 0; i < MAX_RSV; i++) {
		bga_rsv_close(f->rsv[i]);
		f->rsv[i] = NULL;
	}
	bga_destroy(f->vol);
	f->vol = back;
	refmodel_fini(&f->m);
	f->m = lm;
	memset(f->maybe_trimmed, 0, f->ngroups); /* not stored */
}

/* A txn for a deferred free: 0, the last committed, the one before it
 * (all refused), or one to four past the last committed. */
uint64_t pick_txn(struct fz *f)
{
	switch (fz_u8(&f->in) & 7) {
	case 0: return 0;
	case 1: return f->m.last_txn;
	case 2: return f->m.last_txn ? f->m.last_txn - 1 : 0;
	default: return f->m.last_txn + 1 + (fz_u8(&f->in) & 3);
	}
}

/* A range a free walks group by group (bga_free's range path): where a
 * failure found late could have left a prepared group behind. */
static bool spans_groups(const struct fz *f, uint64_t start, uint64_t len)
{
	uint64_t bpg = f->cfg.blocks_per_group;
	return len != 0 && start < f->cfg.nblocks && len - 1 >= bpg - start % bpg;
}

static void op_free(struct fz *f, bool deferred)
{
	uint64_t start, len, txn = 0;
	int rc, want;

	pick_range(f, &start, &len);
	if (deferred) {
		txn = pick_txn(f);
		want = refmodel_free_deferred(&f->m, start, len, txn);
		before_call(f, want != 0, spans_groups(f, start, len));
		rc = bga_free_deferred(f->vol, start, len, txn);
		expect_rc(f, "free_deferred", rc, want);
		if (rc)
			fz_failed(f, rc, SHOWN_NOTHING);
		if (!rc)
			touch(f, start, len);
	} else {
		want = refmodel_free(&f->m, start, len);
		before_call(f, want != 0, spans_groups(f, start, len));
		rc = bga_free(f->vol, start, len);
		expect_rc(f, "free", rc, want);
		if (rc)
			fz_failed(f, rc, SHOWN_NOTHING);
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
	before_call(f, want != 0, false);
	rc = bga_commit(f->vol, txn);
	expect_rc(f, "commit", rc, want);
	if (rc)
		fz_failed(f, rc, SHOWN_NOTHING);
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
		before_call(f, want != 0, false);
		rc = bga_unreserve(f->vol, n);
		expect_rc(f, "unreserve", rc, want);
		if (rc)
			fz_failed(f, rc, SHOWN_NOTHING);
	} else {
		want = refmodel_reserve(&f->m, n);
		before_call(f, want != 0, false);
		rc = bga_reserve(f->vol, n);
		expect_rc(f, "reserve", rc, want);
		if (rc)
			fz_failed(f, rc, SHOWN_NOTHING);
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
		before_call(f, size > f->cfg.rsv_max, false);
		rc = bga_rsv_set_size(f->rsv[i], size);
		expect_rc(f, "rsv_set_size", rc, size > f->cfg.rsv_max ? -EINVAL : 0);
		if (rc)
			fz_failed(f, rc, SHOWN_NOTHING);
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
	before_call(f, want != 0, false);
	int rc = bga_grow(f->vol, n);
	expect_rc(f, "grow", rc, want);
	if (rc)
		fz_failed(f, rc, SHOWN_NOTHING);
	if (want == 0 && n != f->cfg.nblocks) {
		touch(f, f->cfg.nblocks - 1, n - f->cfg.nblocks + 1);
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
			fprintf(stderr, "op %u: call %u, model free %" PRIu64 " reserved %" PRIu64 " deferred %" PRIu64
				"; volume free %" PRIu64 " reserved %" PRIu64 "\n", f.op, call, f.m.nfree, f.m.reserved,
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
