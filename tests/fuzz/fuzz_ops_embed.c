/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz_ops: the calls of 0.3.0 against the model (inputs with V3_TAG
 * first, fuzz_ops.c): bga_free_deferred_vec, bga_foreach_used,
 * bga_group_stats with the longest free run, the clearer names, and the
 * store's tag (check_tag, called by op_store for every format).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <bgalloc.h>

#include "fuzz_ops_args.h"
#include "fuzz_ops_embed.h"
#include "fuzz_ops_state.h"
#include "fuzz_ops_walk.h"

/* 0 .. 8 extents as op_free_vec picks them (the same extent twice now and
 * then), a txn as op_free picks one: all pending, or nothing changed. */
void op_free_deferred_vec(struct fz *f)
{
	struct bga_extent ext[8];
	uint8_t c = fz_u8(&f->in);
	size_t n = (c & 0x80) ? 0 : 1 + (c & 7), i;

	for (i = 0; i < n; i++)
		pick_range(f, &ext[i].start, &ext[i].len);
	if ((c & 0x40) && n > 1)
		ext[n - 1] = ext[0];
	uint64_t txn = pick_txn(f);
	int want = n ? refmodel_free_deferred_vec(&f->m, ext, n, txn) : -EINVAL;
	int rc = bga_free_deferred_vec(f->vol, n ? ext : NULL, n, txn);
	expect_rc(f, "free_deferred_vec", rc, want);
	for (i = 0; !rc && i < n; i++)
		touch(f, ext[i].start, ext[i].len);
}

struct used_walk {
	struct fz *f;
	uint64_t from, to, next;
	unsigned calls, stop_after;
	int stop_value;
	bool stopped;
};

static int used_cb(void *ctx, uint64_t start, uint64_t len, uint32_t flags)
{
	struct used_walk *w = ctx;
	uint64_t ms, ml;
	uint32_t mf;

	if (w->stopped)
		fail("op %u: foreach_used called back after returning %d", w->f->op, w->stop_value);
	if (!refmodel_used_next(&w->f->m, w->next, w->to, &ms, &ml, &mf))
		fail("op %u: foreach_used [%" PRIu64 ", %" PRIu64 ") reports [%" PRIu64 ", +%" PRIu64
		     ") past the model's last allocated run",
		     w->f->op, w->from, w->to, start, len);
	if (ms != start || ml != len || mf != flags)
		fail("op %u: foreach_used [%" PRIu64 ", %" PRIu64 ") reports [%" PRIu64 ", +%" PRIu64 ") flags %u, "
		     "the model [%" PRIu64 ", +%" PRIu64 ") flags %u",
		     w->f->op, w->from, w->to, start, len, flags, ms, ml, mf);
	w->next = start + len;
	if (++w->calls == w->stop_after) {
		w->stopped = true;
		return w->stop_value;
	}
	return 0;
}

/* bga_foreach_used on a range the input picks (bad ones too), each
 * extent the model's next allocated run, none missed. */
void op_used(struct fz *f)
{
	struct used_walk w = {.f = f};
	uint8_t c = fz_u8(&f->in);
	uint64_t ms, ml;
	uint32_t mf;

	pick_walk_range(f, c, &w.from, &w.to);
	w.stop_after = (c & 8) ? 1 + (fz_u8(&f->in) & 3) : 0;
	w.stop_value = 100 + (c >> 4);
	w.next = w.from;
	int want = w.from >= w.to || w.to > f->cfg.nblocks ? -EINVAL : 0;
	int rc = bga_foreach_used(f->vol, w.from, w.to, used_cb, &w);
	if (want) {
		expect_rc(f, "foreach_used", rc, want);
		if (w.calls)
			fail("op %u: a refused foreach_used called back %u times", f->op, w.calls);
		return;
	}
	expect_rc(f, "foreach_used", rc, w.stopped ? w.stop_value : 0);
	if (!w.stopped && refmodel_used_next(&f->m, w.next, w.to, &ms, &ml, &mf))
		fail("op %u: foreach_used [%" PRIu64 ", %" PRIu64 ") missed [%" PRIu64 ", +%" PRIu64 ")", f->op,
		     w.from, w.to, ms, ml);
}

/* bga_group_stats of a group the input picks (past the end, or with a
 * size short of the first layout: -EINVAL and *st untouched), then the
 * longest free run. */
void op_group(struct fz *f)
{
	uint8_t c = fz_u8(&f->in);
	uint64_t g;

	switch (c & 3) {
	case 0: g = f->ngroups; break;
	case 1: g = f->ngroups - 1; break;
	case 2: g = fz_u8(&f->in) & 1 ? UINT64_MAX : f->ngroups + fz_u8(&f->in); break;
	default: g = fz_below(&f->in, f->ngroups); break;
	}
	if (g < f->ngroups && !(c & 4)) {
		if (refmodel_compare_group(&f->m, f->vol, g))
			fail("op %u: %s", f->op, f->m.err);
	} else {
		struct bga_group_stats st;
		memset(&st, 0x6b, sizeof(st));
		st.size = (c & 4) ? (uint32_t)fz_below(&f->in, sizeof(st)) : sizeof(st);
		expect_rc(f, "group_stats", bga_group_stats(f->vol, g, &st), -EINVAL);
		if (st.group != 0x6b6b6b6b6b6b6b6bull)
			fail("op %u: a refused group_stats wrote *st", f->op);
	}
	if (refmodel_compare_longest(&f->m, f->vol))
		fail("op %u: %s", f->op, f->m.err);
}

/* The clearer names answer as the calls they name. */
void op_names(struct fz *f)
{
	uint8_t c = fz_u8(&f->in);
	unsigned i = c % MAX_RSV;

	if (bga_free_blocks_sum(f->vol) != f->m.nfree)
		fail("op %u: free_blocks_sum %" PRIu64 ", model %" PRIu64, f->op, bga_free_blocks_sum(f->vol),
		     f->m.nfree);
	if (bga_free_blocks_read(f->vol) != bga_free_estimate(f->vol))
		fail("op %u: free_blocks_read %" PRIu64 ", free_estimate %" PRIu64, f->op,
		     bga_free_blocks_read(f->vol), bga_free_estimate(f->vol));
	if (!f->rsv[i]) {
		expect_rc(f, "window_open", bga_window_open(f->vol, &f->rsv[i]), 0);
		return;
	}
	struct bga_extent a, b;
	expect_rc(f, "window_get", bga_window_get(f->rsv[i], &a), 0);
	expect_rc(f, "rsv_window", bga_rsv_window(f->rsv[i], &b), 0);
	if (a.start != b.start || a.len != b.len)
		fail("op %u: window_get [%" PRIu64 ", +%" PRIu64 "), rsv_window [%" PRIu64 ", +%" PRIu64 ")", f->op,
		     a.start, a.len, b.start, b.len);
	if (c & 0x10) {
		uint32_t size = (c & 0x20) ? f->cfg.rsv_max + 1 : fz_u16(&f->in) % (f->cfg.rsv_max + 1);
		bool bad = size > f->cfg.rsv_max && size > f->cfg.blocks_per_group;
		expect_rc(f, "window_set_size", bga_window_set_size(f->rsv[i], size), bad ? -EINVAL : 0);
		if (!bad && size > f->size_max)
			f->size_max = size;
	} else if (c & 0x40) {
		bga_window_close(f->rsv[i]);
		f->rsv[i] = NULL;
	}
}

void check_tag(struct fz *f, const struct bga_volume *vol, const char *which)
{
	uint64_t tag = ~f->tag;
	expect_rc(f, "volume_tag", bga_volume_tag(vol, &tag), 0);
	if (tag != f->tag)
		fail("op %u: %s has tag %" PRIu64 ", the last store wrote %" PRIu64, f->op, which, tag, f->tag);
}
