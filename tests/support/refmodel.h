/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_REFMODEL_H
#define BGA_REFMODEL_H

/*
 * A reference model of one volume, for tests and fuzzers: one byte per
 * block, a list of pending deferred frees, the reserved count and the last
 * committed txn.  It is deliberately slow and obvious (linear scans), so
 * keep volumes small (the model refuses more than REFM_MAX_BLOCKS).
 *
 * Every mutating call does two things: it returns the errno that the
 * library must return for the same call on a volume in the same state
 * (0 or a negative errno, following the contracts in <bgalloc.h>), and,
 * when that is 0, it applies the change to the model.  A test calls the
 * library, calls the model, and compares the two return codes.
 *
 * bga_alloc() is the exception because the library chooses the extent:
 * refmodel_alloc_check() takes the library's return code and extent,
 * decides whether that outcome was allowed, and applies it.
 *
 * Windows are not modelled: the blocks a window holds and no allocation
 * took (a handle's, or a CPU's locality window) are free by contract
 * (bga_free_exact, bga_foreach_free, a store), so they stay free in the
 * model, and they never turn a success into -ENOSPC (they are taken back
 * first).
 *
 * The model decides -ENOSPC against -EAGAIN exactly, on the library's one
 * definition of what is free after the commit (lib/core/deferred.c):
 *  - the count: after committing every pending deferred free, free minus
 *    reserved (for BGA_USE_RESERVED: reserved) must cover min_len;
 *    window blocks are free, so they count;
 *  - the run: a run of min_len blocks, each free (window blocks
 *    included) or pending, inside one group (for BGA_EXACT_GOAL:
 *    starting at the goal).
 * -EAGAIN when both hold after the commit and not now, -ENOSPC when they
 * do not hold after it either; a BGA_EXACT_GOAL request is no exception.
 *
 * Failures of a check are reported by a negative return (-EPROTO) and a
 * message in m->err; the model is then unchanged.
 *
 * Not thread-safe: one thread drives a model.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bgalloc.h>

#define REFM_MAX_BLOCKS (UINT64_C(1) << 28)

/* State of one block in refmodel.state[]. */
enum refm_state {
	REFM_FREE = 0,     /* free: may be handed out */
	REFM_ALLOC = 1,    /* allocated */
	REFM_DEFERRED = 2, /* allocated, freed by bga_free_deferred(), waiting for a commit */
	REFM_META = 3,     /* below first_data_block: never handed out, never freed */
};

struct refm_pending {
	uint64_t start, len, txn;
};

struct refmodel {
	struct bga_config cfg; /* as given; only nblocks, blocks_per_group, first_data_block are used */
	uint8_t *state;        /* enum refm_state, one per block */
	uint64_t nfree;        /* blocks in REFM_FREE */
	uint64_t ndeferred;    /* blocks in REFM_DEFERRED */
	uint64_t reserved;     /* bga_reserve() minus bga_unreserve() minus USE_RESERVED allocations */
	uint64_t last_txn;     /* last committed txn, 0 at first */
	struct refm_pending *pend; /* pending deferred frees, in call order */
	size_t npend, cap;
	char err[256];         /* the last check failure, in words */
	/*
	 * Optional (NULL: no window holds a block): the blocks windows hold
	 * in group g now, e.g. refmodel_group_window_blocks.  The model
	 * cannot see where windows lie, and a window's blocks are free to
	 * it; alloc.h's order ("where a request looks") lets a partial
	 * bga_alloc_vec stop short of them, so a group that holds some does
	 * not count against a partial result.
	 */
	uint64_t (*window_blocks)(void *ctx, uint64_t g);
	void *window_ctx;
};

/* The window_blocks hook for a volume: ctx is a struct bga_volume ** (a
 * load may replace the volume); bga_group_stats' window_blocks. */
uint64_t refmodel_group_window_blocks(void *volp, uint64_t g);

/*
 * What bga_create() must return for this config (0 or -EINVAL), from the
 * ranges documented on struct bga_config.  cfg may be NULL (-EINVAL).
 */
int refmodel_config_check(const struct bga_config *cfg);

/*
 * Set up a model of a freshly created volume.  Returns 0; -EINVAL when
 * refmodel_config_check() fails; -EFBIG when nblocks > REFM_MAX_BLOCKS;
 * -ENOMEM.
 */
int refmodel_init(struct refmodel *m, const struct bga_config *cfg);
void refmodel_fini(struct refmodel *m);

/*
 * The outcome bga_alloc(vol, req, &ext) must have in the model's state:
 * 0, -EINVAL, -ENOSPC or -EAGAIN.  req may be NULL (-EINVAL); the vol and
 * out arguments are assumed non-NULL.  Where the contract allows two codes
 * (see refmodel_alloc_check) this returns the first.
 */
int refmodel_alloc_expect(const struct refmodel *m, const struct bga_request *req);

/*
 * Judge the library's answer to bga_alloc(): rc and, when rc == 0, ext.
 * Checks that rc is allowed (same as expected, or the documented
 * alternative: -EINVAL/-ENOSPC when min_len > blocks_per_group and the
 * arguments are otherwise valid, or only short of reservations),
 * and on success that the extent is min_len .. min(max_len,
 * blocks_per_group) blocks inside one group, at or above first_data_block,
 * starts at the goal for BGA_EXACT_GOAL, every block was free in the model
 * (else a double hand-out), and it does not eat into reserved blocks
 * (without BGA_USE_RESERVED: len <= free - reserved; with it: len <=
 * reserved).  Then marks the extent allocated and charges reservations.
 * Returns 0, or -EPROTO with m->err set and the model unchanged.
 */
int refmodel_alloc_check(struct refmodel *m, const struct bga_request *req, int rc,
			 const struct bga_extent *ext);

/*
 * Judge bga_alloc's one extent of max_len where one run holds it
 * (BGA_WHOLE, and every request with align > 1 but BGA_EXACT_GOAL's) on
 * a success, in the
 * state before it (call before refmodel_alloc_check).  Only for a request
 * the walk served: no handle, no window holding blocks at the call (they
 * are free in the model but not looked at: bga_stats' rsv_window_blocks
 * 0), every chunk read, no stripe.  When free minus reserved (with
 * BGA_USE_RESERVED: reserved) covers max_len (capped at a group, rounded
 * down to align) and the model holds a free aligned run of it, the
 * extent must be max_len long; with a goal, it must be the first such
 * run from the goal on in its group, then in the groups after it, round
 * to the goal's group from its start.  Otherwise (no such run, too little
 * space) the rule says nothing.  Other requests pass.  Returns 0, or
 * -EPROTO with m->err set; the model is not changed.
 */
int refmodel_alloc_whole_check(struct refmodel *m, const struct bga_request *req, const struct bga_extent *ext);

/*
 * Judge bga_alloc_vec(vol, req, want, out, max_out, &n): rc and, when rc
 * is 0, out[0 .. n).  Written from the header's words alone:
 *  - -EINVAL for every bad argument (want 0 or not a multiple of align,
 *    max_out 0, BGA_EXACT_GOAL, the checks of bga_alloc; max_len is not
 *    capped here), before any state-dependent code;
 *  - whether the call can succeed, by brute force on the model's map:
 *    want (without BGA_ALL_OR_NOTHING: one extent of min_len) as at most
 *    max_out (1) extents of min_len .. max_len, aligned, in the free runs
 *    that hold an aligned run of min_len inside one group (such runs that
 *    touch across a group boundary count as one), within free minus
 *    reserved (BGA_USE_RESERVED: within what is reserved; all or nothing
 *    past it fails);
 *  - a failure must be -EAGAIN when that holds on a copy of the model
 *    with every pending free committed, -ENOSPC when it does not, and
 *    never when it holds now; a success must be one it allows.
 * On success: n in 1 .. max_out, every extent min_len .. max_len blocks,
 * aligned, in the data area, every block free in the model and in no
 * other extent of out[] (else a double hand-out); two extents of out[]
 * that touch add up to more than max_len (else they would have been
 * merged); the total at most want (with BGA_USE_RESERVED, at most what is
 * reserved) and not past free minus reserved; all of want with
 * BGA_ALL_OR_NOTHING; and a partial result that did not fill out[] and
 * left at least min_len wanted must have run out: the model, with out[]
 * taken, holds no extent of min_len that bga_alloc could give outside
 * the groups that hold window blocks (m->window_blocks).
 * Then marks out[] allocated and charges reservations.  Returns 0, or
 * -EPROTO with m->err set and the model unchanged.
 */
int refmodel_alloc_vec_check(struct refmodel *m, const struct bga_request *req, uint64_t want, size_t max_out,
			     int rc, const struct bga_extent *out, size_t n);

/*
 * Mirror bga_claim(): -EINVAL for len 0 or a range outside the volume or
 * below first_data_block; -EBUSY when any block is not free (allocated or
 * waiting on a deferred free); -ENOSPC when fewer than len blocks are
 * free beyond what is reserved; else 0 and the range is allocated.
 */
int refmodel_claim(struct refmodel *m, uint64_t start, uint64_t len);

/*
 * Mirror bga_free_vec(): -EINVAL for n 0, an extent of length 0, extents
 * that overlap, or any extent bga_free() would refuse; else 0 and every
 * extent is free.  ext may be NULL only with n 0.
 */
int refmodel_free_vec(struct refmodel *m, const struct bga_extent *ext, size_t n);

/* A deep copy of src into dst (dst's old contents are not freed).
 * 0 or -ENOMEM (dst then zeroed). */
int refmodel_copy(struct refmodel *dst, const struct refmodel *src);

/*
 * The model of what bga_store() followed by bga_load() gives: blocks
 * waiting on a deferred free are allocated and no longer pending,
 * nothing is reserved, the last committed txn is kept.  In place.
 */
void refmodel_as_loaded(struct refmodel *m);

/*
 * The cheap part of refmodel_compare(), after a call that changed only
 * blocks of [from, to): bga_free_exact() and bga_reserved(), and the free
 * extents of the groups that [from, to) touches, as bga_foreach_free()
 * reports them.  from >= to compares the counts only.  Returns 0, or
 * -EPROTO with m->err set.
 */
int refmodel_compare_range(struct refmodel *m, struct bga_volume *vol, uint64_t from, uint64_t to);

/*
 * Mirror bga_free / bga_free_deferred / bga_commit / bga_reserve /
 * bga_unreserve: return what the library must return and apply the change
 * when that is 0.  (vol assumed non-NULL.)
 */
int refmodel_free(struct refmodel *m, uint64_t start, uint64_t len);
int refmodel_free_deferred(struct refmodel *m, uint64_t start, uint64_t len, uint64_t txn);
int refmodel_commit(struct refmodel *m, uint64_t txn);
int refmodel_reserve(struct refmodel *m, uint64_t n);
int refmodel_unreserve(struct refmodel *m, uint64_t n);

/*
 * Mirror bga_grow(): -EINVAL for a shrink or a size past BGA_MAX_BLOCKS, 0
 * for the same size; otherwise the new blocks are free.  -EFBIG when the
 * model cannot hold the size (past REFM_MAX_BLOCKS), -ENOMEM.
 */
int refmodel_grow(struct refmodel *m, uint64_t nblocks);

/* Free blocks (what bga_free_exact() must return). */
uint64_t refmodel_free_count(const struct refmodel *m);

/*
 * Whether a free run of at least min_len blocks exists inside one group at
 * or above first_data_block; with_deferred counts pending deferred blocks
 * as free (the state after committing everything).  min_len 0 is false.
 */
bool refmodel_has_run(const struct refmodel *m, uint64_t min_len, bool with_deferred);

/* Length of the free run starting at `start` (0 if that block is not
 * free), stopping at the group end. */
uint64_t refmodel_run_at(const struct refmodel *m, uint64_t start, bool with_deferred);

/*
 * Compare the model with a quiescent volume: bga_free_exact(), bga_reserved(),
 * the free extents from bga_foreach_free() over the whole volume (maximal
 * runs split at group boundaries, in block order), bga_check() clean, and
 * bga_stats() (free, reserved and deferred blocks, last txn, the free-extent
 * histogram and extent count, frag_score in [0, 1]).
 * Returns 0, or -EPROTO with m->err set.
 */
int refmodel_compare(struct refmodel *m, struct bga_volume *vol);

/* ---- the calls of 0.3.0 (refmodel.c, refmodel_walks.c, refmodel_oracle.c) ---- */

/* For the model's files: m->err from the format, and -EPROTO. */
int refm_fail(struct refmodel *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* For the model's files: a request's align as the header reads it (0 and 1
 * are no alignment: 1). */
uint64_t refm_align(const struct bga_request *req);
/* For the model's files: bad arguments of an allocating request as the
 * header lists them (-EINVAL); a BGA_USE_RESERVED request that asks for
 * more than is reserved; an errno's name. */
bool refm_alloc_args_bad(const struct refmodel *m, const struct bga_request *req);
bool refm_reserved_short(const struct refmodel *m, const struct bga_request *req);
const char *refm_errname(int rc);

/*
 * Mirror bga_free_deferred_vec(): -EINVAL for n 0, txn 0 or not above the
 * last committed txn, an extent of length 0, extents that overlap, or any
 * extent bga_free_deferred() would refuse; else 0 and every extent waits
 * on txn.  (-ENOMEM is the model's own, should its list not grow.)
 */
int refmodel_free_deferred_vec(struct refmodel *m, const struct bga_extent *ext, size_t n, uint64_t txn);

/*
 * Compare the model with a quiescent volume through the read calls of
 * 0.3.0, from their contracts:
 *  - bga_foreach_used() over the whole volume: the maximal runs of
 *    allocated blocks at or above first_data_block, split at group
 *    boundaries and where pending and not pending meet, in block order,
 *    pending ones flagged BGA_USED_DEFERRED;
 *  - bga_longest_free_sum(): the longest free run inside one group (window
 *    blocks are free in the model, as in the call), and the lowest group
 *    holding one that long; bga_longest_free_read() at most
 *    blocks_per_group;
 *  - bga_group_stats() of every group: its span, free and pending blocks
 *    and longest free run.
 * Returns 0, or -EPROTO with m->err set.
 */
int refmodel_compare_walks(struct refmodel *m, struct bga_volume *vol);
/* Its parts: one group's bga_group_stats, and the longest free run. */
int refmodel_compare_group(struct refmodel *m, struct bga_volume *vol, uint64_t g);
int refmodel_compare_longest(struct refmodel *m, struct bga_volume *vol);
/*
 * The first run that bga_foreach_used(vol, from, to, ...) must report
 * from `from` on: true with *start, *len and *flags, or false when none
 * is left before `to`.
 */
bool refmodel_used_next(const struct refmodel *m, uint64_t from, uint64_t to, uint64_t *start, uint64_t *len,
			uint32_t *flags);

#endif
