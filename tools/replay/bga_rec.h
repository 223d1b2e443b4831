/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_REC_H
#define BGA_REC_H

/*
 * The recorder: a small library that writes the allocating and freeing
 * calls made through it on a volume to a trace (bga_trace.h,
 * docs/TRACE.md) that bga-replay(1) plays back.  Built on the public API
 * only: one file, bga_rec.c (the build's bga_rec static library).
 *
 * Recording is explicit: a program calls bga_rec_alloc(rec, vol, ...)
 * where it wants bga_alloc(vol, ...) recorded, and so on; a plain
 * bga_alloc() is never recorded.  Each recorded call takes the arguments
 * of the call it is named after, preceded by the recorder, and returns
 * what that call returned:
 *  - rec NULL: the plain call, nothing recorded (a program whose
 *    recording is optional passes its recorder, NULL when off);
 *  - else vol must be the volume rec was opened on: -EINVAL otherwise,
 *    with nothing called and nothing recorded.
 * The handle calls (bga_rec_rsv_close, bga_rec_rsv_set_size) record only
 * a handle opened through bga_rec_rsv_open on the same recorder; any
 * other handle is passed to the plain call unrecorded.
 *
 * A recorded call costs a clock_gettime, an atomic add and one hold of
 * the recorder's mutex to append its record to a buffer, written out a
 * megabyte at a time.  Calls on one recorder may come from many threads.
 * For tests: with BGA_REC_YIELD in the environment at bga_rec_open, each
 * recorded call yields the CPU between its call and its record, so that
 * records from many threads reach the trace out of order.
 */

#include <stdint.h>

#include <bgalloc.h>

struct bga_rec;

/*
 * Start recording on vol to a new trace at path (truncated): writes the
 * header, then the volume's free extents now (the trace's start).
 * source names the recorder in the header (32 bytes kept; NULL: "").
 * block_size is informative (bytes per block; 0 unknown).  No call on
 * vol may be in flight.
 * Returns 0; -EINVAL (NULL vol, path or out); -ENOMEM; fopen's or a
 * write's errno.
 */
int bga_rec_open(struct bga_volume *vol, const char *path, const char *source, uint32_t block_size,
                 struct bga_rec **out);

/*
 * Stop: write the end record (the free map's hash, bga_rec_hash), flush
 * and close the file, free rec.  No recorded call may be in flight; call
 * it before bga_destroy.  Returns 0, or the first write error met while
 * recording (then the trace is incomplete; the volume's own calls were
 * never affected).  NULL is ignored (0).
 */
int bga_rec_close(struct bga_rec *rec);

/*
 * The free-map hash of bga_trace.h (FNV-1a over the merged free extents)
 * and the free block count, from bga_foreach_free over the whole volume.
 * 0, or bga_foreach_free's error.
 */
int bga_rec_hash(struct bga_volume *vol, uint64_t *hash, uint64_t *free_blocks);

/* The recorded calls: the contract of the call each is named after, and
 * the rules above for rec and vol. */
int bga_rec_alloc(struct bga_rec *rec, struct bga_volume *vol, const struct bga_request *req,
                  struct bga_extent *out);
int bga_rec_alloc_vec(struct bga_rec *rec, struct bga_volume *vol, const struct bga_request *req, uint64_t want,
                      struct bga_extent *out, size_t max_out, size_t *n_out);
/*
 * bga_rec_alloc and bga_rec_alloc_vec for a request that fills a hole of
 * a file: `anchor` is the block of the file nearest the hole, and
 * `distance` the hole's logical distance from it (negative when the
 * anchor lies after it).  The trace gets a goal_from record beside the
 * allocation's (bga_trace.h), whatever goal req asks (none included), so
 * that a replay aims relative to its own block for the anchor: as far
 * from it as the goal asked, or at the file's logical distance
 * (bga-replay run --goals).  anchor BGA_NO_GOAL: the plain recorded
 * call.  Otherwise the rules and results of the call each is named after.
 */
int bga_rec_alloc_from(struct bga_rec *rec, struct bga_volume *vol, const struct bga_request *req, uint64_t anchor,
                       int64_t distance, struct bga_extent *out);
int bga_rec_alloc_vec_from(struct bga_rec *rec, struct bga_volume *vol, const struct bga_request *req,
                           uint64_t anchor, int64_t distance, uint64_t want, struct bga_extent *out, size_t max_out,
                           size_t *n_out);
int bga_rec_free(struct bga_rec *rec, struct bga_volume *vol, uint64_t start, uint64_t len);
int bga_rec_free_vec(struct bga_rec *rec, struct bga_volume *vol, const struct bga_extent *ext, size_t n);
int bga_rec_free_deferred(struct bga_rec *rec, struct bga_volume *vol, uint64_t start, uint64_t len,
                          uint64_t txn);
int bga_rec_free_deferred_vec(struct bga_rec *rec, struct bga_volume *vol, const struct bga_extent *ext,
                              size_t n, uint64_t txn);
int bga_rec_commit(struct bga_rec *rec, struct bga_volume *vol, uint64_t txn);
int bga_rec_claim(struct bga_rec *rec, struct bga_volume *vol, uint64_t start, uint64_t len);
int bga_rec_reserve(struct bga_rec *rec, struct bga_volume *vol, uint64_t n);
int bga_rec_unreserve(struct bga_rec *rec, struct bga_volume *vol, uint64_t n);
int bga_rec_rsv_open(struct bga_rec *rec, struct bga_volume *vol, struct bga_rsv **out);
void bga_rec_rsv_close(struct bga_rec *rec, struct bga_rsv *rsv);
int bga_rec_rsv_set_size(struct bga_rec *rec, struct bga_rsv *rsv, uint32_t blocks);

#endif
