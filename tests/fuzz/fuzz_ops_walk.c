/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz_ops: bga_foreach_free and bga_trim against the model.  Each
 * callback must report the model's next free extent, and nothing may be
 * left unreported but what a trim is allowed to skip.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <bgalloc.h>

#include "fuzz_ops_args.h"
#include "fuzz_ops_state.h"
#include "fuzz_ops_walk.h"

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
		if (run) {
			b += run;
			continue;
		}
		/* not free (or past the model): on to the next free block in
		 * one scan */
		uint64_t end = w->to < m->cfg.nblocks ? w->to : m->cfg.nblocks;
		const uint8_t *z = b < end ? memchr(m->state + b, REFM_FREE, end - b) : NULL;
		b = z ? (uint64_t)(z - m->state) : w->to;
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

void pick_walk_range(struct fz *f, uint8_t c, uint64_t *from, uint64_t *to)
{
	if (c & 1) {
		*from = 0;
		*to = f->cfg.nblocks;
	} else {
		*from = pick_block(f);
		*to = (c & 2) ? pick_block(f) : *from + pick_len(f);
	}
}

void op_walk(struct fz *f, bool trim)
{
	struct walk w = { .f = f, .trim = trim, .group = UINT64_MAX };
	uint64_t trimmed = UINT64_MAX, g, ms, ml;
	uint8_t c = fz_u8(&f->in);
	bool may_skip;
	int rc, want = 0;

	pick_walk_range(f, c, &w.from, &w.to);
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
		touch(f, w.from, w.to - w.from);
	}
}
