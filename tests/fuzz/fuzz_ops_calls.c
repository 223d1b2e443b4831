/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz_ops: each call of the second format's alphabet (fuzz_ops.c), made
 * on the volume and mirrored in the model, its answer checked against the
 * model's; a call the model says may fail takes what the API shows first
 * (before_call), for the compare after it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc.h>

#include "fuzz_ops_args.h"
#include "fuzz_ops_calls.h"
#include "fuzz_ops_embed.h"
#include "fuzz_ops_state.h"

/* Freeing into a group makes it eligible for trimming again. */
static void touched_free(struct fz *f, uint64_t start, uint64_t len)
{
	uint64_t g;

	for (g = start / f->cfg.blocks_per_group; g <= (start + len - 1) / f->cfg.blocks_per_group; g++)
		f->maybe_trimmed[g] = 0;
	touch(f, start, len);
}

void op_alloc(struct fz *f)
{
	struct bga_request req;
	struct bga_extent ext = { 0xdead, 0xbeef };
	uint8_t g = fz_u8(&f->in);
	int rc;
	unsigned i;
	bool windows = false;

	memset(&req, 0, sizeof(req));
	decode_request(f, &req, g, BGA_EXACT_GOAL | BGA_USE_RESERVED | BGA_WHOLE);
	for (i = 0; i < MAX_RSV; i++)
		windows |= f->rsv[i] != NULL;
	/* an aligned or BGA_WHOLE request or a stripe may pass a free goal over */
	windows |= req.align > 1 || f->cfg.stripe > 1 || (req.flags & BGA_WHOLE);

	before_call(f, refmodel_alloc_expect(&f->m, &req) != 0, false);
	rc = bga_alloc(f->vol, &req, &ext);
	/* One extent of max_len where one run holds it (BGA_WHOLE, aligned),
	 * judged where the walk served it and no window holds blocks (such a
	 * request books none; every chunk read). */
	if (rc == 0 && ((req.flags & BGA_WHOLE) || req.align > 1) && req.rsv == NULL && f->cfg.stripe <= 1 &&
	    !f->lazy) {
		struct bga_stats st;
		if (bga_stats(f->vol, &st) == 0 && st.rsv_window_blocks == 0 &&
		    refmodel_alloc_whole_check(&f->m, &req, &ext))
			fail("op %u: %s", f->op, f->m.err);
	}
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

/* The windows of every open handle but `own` (len 0 for none). */
static void windows_before(struct fz *f, const struct bga_rsv *own, struct bga_extent *held)
{
	for (size_t k = 0; k < MAX_RSV; k++) {
		held[k] = (struct bga_extent){0, 0};
		if (f->rsv[k] != NULL && f->rsv[k] != own && bga_rsv_window(f->rsv[k], &held[k]) != 0)
			held[k] = (struct bga_extent){0, 0};
	}
}

void op_alloc_vec(struct fz *f)
{
	struct bga_request req;
	struct bga_extent out[MAX_VEC + 1];
	uint8_t g = fz_u8(&f->in), c;
	uint64_t want, u;
	size_t max_out, n = 0xdead, i;
	int rc;

	memset(&req, 0, sizeof(req));
	decode_request(f, &req, g, BGA_EXACT_GOAL | BGA_USE_RESERVED | BGA_ALL_OR_NOTHING | BGA_WHOLE);
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
	/* alloc.h, where a request looks: other handles' windows as they
	 * stand before the call (windows_before) */
	struct bga_extent held[MAX_RSV];
	windows_before(f, req.rsv, held);
	rc = bga_alloc_vec(f->vol, &req, want, out, max_out, &n);
	if (out[max_out < MAX_VEC ? max_out : MAX_VEC].start != 0xdead)
		fail("op %u: alloc_vec wrote past max_out %zu", f->op, max_out);
	if (rc && n)
		fail("op %u: alloc_vec returned %d with %zu extents", f->op, rc, n);
	if (refmodel_alloc_vec_check(&f->m, &req, want, max_out, rc, out, rc ? 0 : n))
		fail("op %u: %s", f->op, f->m.err);
	/* Step 3 of the order: another handle's window is taken back only
	 * before the call would fail.  Without all or nothing that is only
	 * for its first extent, which then holds some of those blocks (no
	 * run of min_len lay outside windows); when it holds none, the
	 * windows stood, and no later extent holds a block of one. */
	bool first_took = false;
	for (size_t k = 0; !rc && n && k < MAX_RSV; k++)
		first_took |= held[k].len && out[0].start < held[k].start + held[k].len &&
			      held[k].start < out[0].start + out[0].len;
	for (i = 1; !rc && !first_took && !(req.flags & BGA_ALL_OR_NOTHING) && i < n; i++)
		for (size_t k = 0; k < MAX_RSV; k++)
			if (held[k].len && out[i].start < held[k].start + held[k].len &&
			    held[k].start < out[i].start + out[i].len)
				fail("op %u: alloc_vec's extent %zu [%" PRIu64 ", +%" PRIu64 ") took handle %zu's window "
				     "[%" PRIu64 ", +%" PRIu64 ") after a first extent (alloc.h: other windows only before "
				     "-ENOSPC)", f->op, i, out[i].start, out[i].len, k, held[k].start, held[k].len);
	if (rc)
		fz_failed(f, rc, rc == -ENOSPC || rc == -EAGAIN ? SHOWN_RECLAIM : SHOWN_NOTHING);
	for (i = 0; !rc && i < n; i++) {
		touch(f, out[i].start, out[i].len);
		f->recent[f->nrecent++ % RECENT] = out[i];
	}
}

/* bga_claim: often aimed at a window's blocks (pick_block), the thief
 * that takes them back, or at what was handed out lately. */
void op_claim(struct fz *f)
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

void op_free_vec(struct fz *f)
{
	struct bga_extent ext[8] = {{0, 0}}; /* set by pick_range, n of them */
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
void op_store(struct fz *f)
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

/* A range a free walks group by group (bga_free's range path): where a
 * failure found late could have left a prepared group behind. */
static bool spans_groups(const struct fz *f, uint64_t start, uint64_t len)
{
	uint64_t bpg = f->cfg.blocks_per_group;
	return len != 0 && start < f->cfg.nblocks && len - 1 >= bpg - start % bpg;
}

void op_free(struct fz *f, bool deferred)
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

void op_commit(struct fz *f)
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

void op_reserve(struct fz *f, bool un)
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

void op_window(struct fz *f)
{
	uint8_t c = fz_u8(&f->in);
	unsigned i = c % MAX_RSV;
	uint32_t size;
	/* the largest size taken: a group, or rsv_max where that is more */
	uint32_t most = f->cfg.rsv_max > f->cfg.blocks_per_group ? f->cfg.rsv_max : f->cfg.blocks_per_group;
	uint8_t b;
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
		case 2: /* past rsv_max (taken up to a group), or past both */
			b = fz_u8(&f->in);
			size = ((b & 4) ? most : f->cfg.rsv_max) + 1 + (b & 3);
			break;
		default: size = fz_u16(&f->in) % (f->cfg.rsv_max + 1); break;
		}
		before_call(f, size > most, false);
		rc = bga_rsv_set_size(f->rsv[i], size);
		expect_rc(f, "rsv_set_size", rc, size > most ? -EINVAL : 0);
		if (rc)
			fz_failed(f, rc, SHOWN_NOTHING);
		else if (size > f->size_max)
			f->size_max = size;
		break;
	}
}

/* bga_grow: usually a little larger, sometimes a shrink or past the limit. */
void op_grow(struct fz *f)
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
