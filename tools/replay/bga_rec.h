/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_REC_H
#define BGA_REC_H

/*
 * The recorder: writes every allocating and freeing call an embedder makes
 * on a volume to a trace (bga_trace.h, docs/TRACE.md) that bga-replay(1)
 * plays back.  Built on the public API only: one file, bga_rec.c, to link
 * or copy into a program.
 *
 * Two ways to use it:
 *  - call bga_rec_alloc() where the program called bga_alloc(), and so on
 *    (same arguments, same results: each wrapper calls the real function
 *    and records what it was asked and what it answered);
 *  - or, with no change to the calls, define BGA_REC_WRAP and include this
 *    header after <bgalloc.h>: every bga_alloc, bga_free, ... of that
 *    translation unit then names its bga_rec_ wrapper (bgafs does this).
 *
 * Volumes no recorder is attached to pass straight through (one atomic
 * load).  For tests: with BGA_REC_YIELD in the environment at
 * bga_rec_open, each wrapper yields the CPU between its call and its
 * record, so records from many threads reach the trace out of order.  Calls on an attached volume take the recorder's mutex once to
 * append their record to a buffer, written out a megabyte at a time.
 */

#include <stdint.h>

#include <bgalloc.h>

struct bga_rec;

/*
 * Start recording vol's calls to a new trace at path (truncated): writes
 * the header, then the volume's free extents now (the trace's start).
 * source names the recorder in the header (32 bytes kept; NULL: "").
 * block_size is informative (bytes per block; 0 unknown).  No call on
 * vol may be in flight.  At most 16 volumes are recorded at once.
 * Returns 0; -EINVAL (NULL vol, path or out; vol already recorded);
 * -EBUSY (16 recordings open); -ENOMEM; fopen's or a write's errno.
 */
int bga_rec_open(struct bga_volume *vol, const char *path, const char *source, uint32_t block_size,
                 struct bga_rec **out);

/*
 * Stop: write the end record (the free map's hash, bga_rec_hash), flush
 * and close the file, detach from the volume.  No call on the volume may
 * be in flight; call it before bga_destroy.  Returns 0, or the first
 * write error met while recording (then the trace is incomplete; the
 * volume's own calls were never affected).  NULL is ignored (0).
 */
int bga_rec_close(struct bga_rec *rec);

/*
 * The free-map hash of bga_trace.h (FNV-1a over the merged free extents)
 * and the free block count, from bga_foreach_free over the whole volume.
 * 0, or bga_foreach_free's error.
 */
int bga_rec_hash(struct bga_volume *vol, uint64_t *hash, uint64_t *free_blocks);

/* The wrappers: the same contract as the function each is named after. */
int bga_rec_alloc(struct bga_volume *vol, const struct bga_request *req, struct bga_extent *out);
int bga_rec_alloc_vec(struct bga_volume *vol, const struct bga_request *req, uint64_t want,
                      struct bga_extent *out, size_t max_out, size_t *n_out);
int bga_rec_free(struct bga_volume *vol, uint64_t start, uint64_t len);
int bga_rec_free_vec(struct bga_volume *vol, const struct bga_extent *ext, size_t n);
int bga_rec_free_deferred(struct bga_volume *vol, uint64_t start, uint64_t len, uint64_t txn);
int bga_rec_free_deferred_vec(struct bga_volume *vol, const struct bga_extent *ext, size_t n, uint64_t txn);
int bga_rec_commit(struct bga_volume *vol, uint64_t txn);
int bga_rec_claim(struct bga_volume *vol, uint64_t start, uint64_t len);
int bga_rec_reserve(struct bga_volume *vol, uint64_t n);
int bga_rec_unreserve(struct bga_volume *vol, uint64_t n);
int bga_rec_rsv_open(struct bga_volume *vol, struct bga_rsv **out);
void bga_rec_rsv_close(struct bga_rsv *rsv);
int bga_rec_rsv_set_size(struct bga_rsv *rsv, uint32_t blocks);
/* 0.3.0's names for the window calls, recorded as rsv_open, ... */
#define bga_rec_window_open bga_rec_rsv_open
#define bga_rec_window_close bga_rec_rsv_close
#define bga_rec_window_set_size bga_rec_rsv_set_size

#if defined(BGA_REC_WRAP) && !defined(BGA_REC_IMPL)
#define bga_alloc bga_rec_alloc
#define bga_alloc_vec bga_rec_alloc_vec
#define bga_free bga_rec_free
#define bga_free_vec bga_rec_free_vec
#define bga_free_deferred bga_rec_free_deferred
#define bga_free_deferred_vec bga_rec_free_deferred_vec
#define bga_commit bga_rec_commit
#define bga_claim bga_rec_claim
#define bga_reserve bga_rec_reserve
#define bga_unreserve bga_rec_unreserve
#define bga_rsv_open bga_rec_rsv_open
#define bga_rsv_close bga_rec_rsv_close
#define bga_rsv_set_size bga_rec_rsv_set_size
#define bga_window_open bga_rec_rsv_open
#define bga_window_close bga_rec_rsv_close
#define bga_window_set_size bga_rec_rsv_set_size
#endif

#endif
