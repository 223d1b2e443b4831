/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fuzz_ops harness's state (struct fz) and the checks every call
 * makes against the model (fuzz_ops_state.c): what every part of the
 * harness includes, and the only thing they all include.  The parts stand
 * in one order, each calling only those before it, so that no two call
 * each other:
 *   fuzz_ops_state  the state, fail(), expect_rc(), touch(), compare()
 *   fuzz_ops_args   the calls' arguments from the input
 *   fuzz_ops_walk   what a walk and a trim must report
 *   fuzz_ops_embed  the calls of 0.3.0, and the store's tag
 *   fuzz_ops_calls  the second format's calls
 *   fuzz_ops        the config, the loop over calls and the compares after
 *                   each (LLVMFuzzerTestOneInput)
 */
#ifndef BGA_FUZZ_OPS_STATE_H
#define BGA_FUZZ_OPS_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include <bgalloc.h>

#include "fuzz_input.h"
#include "memio.h"
#include "refmodel.h"
#include "shown.h"

#define MAX_OPS 256
#define MAX_RSV 4
#define RECENT 32
#define MAX_VEC 16
#define LEGACY_TAG 0xb1
#define V3_TAG 0xb3  /* the second format with the calls of 0.3.0 (fuzz_ops.c) */
#define V3_CALLS 37
#ifndef FULL_EVERY
#define FULL_EVERY 32
#endif

struct fz {
	struct fz_in in;
	struct bga_config cfg;
	struct bga_volume *vol;
	struct refmodel m;
	struct bga_rsv *rsv[MAX_RSV];
	uint32_t size_max;       /* the largest window size a handle took (bga_rsv_set_size) */
	struct bga_extent recent[RECENT]; /* extents handed out lately, maybe since freed */
	unsigned nrecent;
	uint8_t *maybe_trimmed; /* per group: a trim may skip it */
	uint64_t ngroups;
	unsigned op;
	bool v2;                 /* not the legacy format: the whole alphabet */
	bool v3;                 /* V3_TAG: the calls of 0.3.0 too */
	uint64_t tag;            /* the tag the last completed store wrote, or the load's */
	uint64_t touch_lo, touch_hi; /* blocks the current call changed: [lo, hi) */
	struct memio img;        /* the store's metadata area, kept across stores */
	struct bga_io io;
	bool img_live;           /* img holds a completed store */
	bool lazy;               /* a lazy load runs on unsettled: no call that reads every chunk */
	/* The current call's answer when it failed (0: it did not fail, or
	 * made more than one call), and what the header lets such a failure
	 * change (enum shown_allow): checked against what the API showed
	 * before it (fuzz_ops.c, shown_same). */
	int failed;
	int allow;
	/* What the API showed before the current call, taken when the model
	 * said it would fail (before_call): a snapshot before every call
	 * would cost more than the rest of the harness. */
	bool have_before;
	struct shown before;
};

/* Before a call that the model says may fail: what the API shows now,
 * for the compare after it (fuzz_ops.c, shown_same); `deep`, the
 * statistics too (groups_initialised, the free map's figures), for a call
 * whose failure could be found after it prepared a group. */
void before_call(struct fz *f, bool may_fail, bool deep);

/* The current call failed with rc; what it may have changed. */
static inline void fz_failed(struct fz *f, int rc, enum shown_allow allow)
{
	f->failed = rc;
	f->allow = allow;
}

/* Everything against the model (refmodel_compare), or fail(). */
void compare(struct fz *f);

/* Print "fuzz_ops: " and the message, and abort: what the fuzzer catches. */
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* fail() unless a call returned what the model expects. */
void expect_rc(struct fz *f, const char *what, int rc, int want);
/* Note blocks the current call changed, for the compare after it. */
void touch(struct fz *f, uint64_t start, uint64_t len);

#endif
