/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_SHOWN_H
#define BGA_SHOWN_H

/*
 * What the API shows of a volume, taken before and after a call that
 * failed, for the header's promise (bgalloc.h, Conventions): on any error
 * the volume is left exactly as it was, but for windows' remainders,
 * which a request about to answer -ENOSPC or -EAGAIN takes back from
 * every window, and a failed bga_claim from those in its range.  Counts
 * of calls (lock statistics, rsv_hits and rsv_allocs) are left out:
 * failed calls count too.  Written from the header, over the public API.
 *
 * The statistics are optional: bga_stats reads every chunk a lazy load
 * left unread, which a caller testing laziness must not do.
 */

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <bgalloc.h>

#define SHOWN_MAX_WIN 8

/* What a failure may change besides nothing. */
enum shown_allow {
	SHOWN_NOTHING,
	SHOWN_RECLAIM,   /* -ENOSPC or -EAGAIN of a request: every window emptied */
	SHOWN_CLAIM_CUT, /* a failed bga_claim: windows cut to a part of what they held */
};

struct shown {
	uint64_t free_exact, reserved;
	size_t nwin;
	struct bga_extent win[SHOWN_MAX_WIN];
	bool have_stats;
	struct bga_stats st;
};

/* Take what vol shows, with the windows of handles rsv[0..nrsv) (NULL
 * entries allowed).  0, or the first error of a call that must not fail. */
static inline int shown_take(struct bga_volume *vol, struct bga_rsv *const *rsv, size_t nrsv, bool stats,
			     struct shown *s)
{
	int rc = 0;
	s->free_exact = bga_free_exact(vol);
	s->reserved = bga_reserved(vol);
	s->nwin = nrsv < SHOWN_MAX_WIN ? nrsv : SHOWN_MAX_WIN;
	for (size_t i = 0; i < s->nwin; i++) {
		s->win[i] = (struct bga_extent){0, 0};
		if (rsv[i] && !rc)
			rc = bga_rsv_window(rsv[i], &s->win[i]);
	}
	s->have_stats = stats;
	if (stats && !rc)
		rc = bga_stats(vol, &s->st);
	return rc;
}

/*
 * Compare a (before) with b (after) under `allow`: 0 when the header
 * allows the difference, else -1 with the first difference named in
 * msg.
 */
static inline int shown_diff(const struct shown *a, const struct shown *b, enum shown_allow allow, char *msg,
			     size_t cap)
{
#define SHOWN_SAME(field, what)                                                                               \
	do {                                                                                                  \
		if (a->field != b->field) {                                                                   \
			snprintf(msg, cap, "%s changed: %" PRIu64 " -> %" PRIu64, what, (uint64_t)a->field,     \
				 (uint64_t)b->field);                                                         \
			return -1;                                                                            \
		}                                                                                             \
	} while (0)
	SHOWN_SAME(free_exact, "bga_free_exact");
	SHOWN_SAME(reserved, "bga_reserved");
	for (size_t i = 0; i < a->nwin && i < b->nwin; i++) {
		const struct bga_extent *x = &a->win[i], *y = &b->win[i];
		bool same = x->start == y->start && x->len == y->len;
		bool part = y->len == 0 || (y->start >= x->start && y->start + y->len <= x->start + x->len);
		if (!same && !((allow == SHOWN_RECLAIM && y->len == 0) || (allow == SHOWN_CLAIM_CUT && part))) {
			snprintf(msg, cap, "window %zu moved: [%" PRIu64 ", +%" PRIu64 ") -> [%" PRIu64 ", +%" PRIu64 ")",
				 i, x->start, x->len, y->start, y->len);
			return -1;
		}
	}
	if (!a->have_stats || !b->have_stats)
		return 0;
	SHOWN_SAME(st.nblocks, "nblocks");
	SHOWN_SAME(st.free_blocks, "free_blocks");
	SHOWN_SAME(st.reserved_blocks, "reserved_blocks");
	SHOWN_SAME(st.groups, "groups");
	SHOWN_SAME(st.groups_initialised, "groups_initialised");
	SHOWN_SAME(st.groups_quarantined, "groups_quarantined");
	SHOWN_SAME(st.groups_repaired, "groups_repaired");
	SHOWN_SAME(st.free_extents, "free_extents");
	for (int k = 0; k < BGA_HIST_ORDERS; k++) {
		SHOWN_SAME(st.hist_count[k], "the histogram");
		SHOWN_SAME(st.hist_blocks[k], "the histogram");
	}
	SHOWN_SAME(st.rsv_windows_open, "rsv_windows_open");
	SHOWN_SAME(st.deferred_blocks, "deferred_blocks");
	SHOWN_SAME(st.deferred_extents, "deferred_extents");
	SHOWN_SAME(st.last_committed_txn, "last_committed_txn");
	if (allow == SHOWN_NOTHING)
		SHOWN_SAME(st.rsv_window_blocks, "rsv_window_blocks");
	else if (b->st.rsv_window_blocks > a->st.rsv_window_blocks)
		SHOWN_SAME(st.rsv_window_blocks, "rsv_window_blocks (grown)");
#undef SHOWN_SAME
	return 0;
}

#endif
