/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_REPLAY_BACKEND_H
#define BGA_REPLAY_BACKEND_H

/*
 * An allocator a trace is played against: bgalloc with a configuration,
 * the libext2fs peer (support/peer_ext2.c), or a reference
 * allocator (refalloc.h: firstfit, bestfit, mballoc), or the clairvoyant
 * one (oracle.h: oracle, oracle,death).  Every call has
 * bgalloc's contract; the peer emulates the calls it lacks (see
 * backend.c).
 */

#include <stddef.h>
#include <stdint.h>

#include <bgalloc.h>

#include "freemap.h"
#include "trace.h"

struct backend;

/*
 * Parse spec ("bgalloc[,group=N][,windows=off][,counters=atomic|percpu]
 * [,lock=global]", "ext2", "firstfit", "bestfit", "mballoc", "oracle" or
 * "oracle,death") and make the allocator for a volume of
 * nblocks (group: the trace's blocks_per_group) whose free blocks are
 * free[0..n), to play t (read before by the oracle, which needs it; the
 * others take NULL).  0, or -1 with the reason printed.
 */
int backend_open(const char *spec, const struct trace *t, uint64_t nblocks, uint32_t group,
                 uint64_t first_data_block, const struct bga_extent *fr, size_t n, struct backend **out);
/* The replay plays t's record i next (the oracle's future; the others
 * ignore it). */
void backend_at(struct backend *b, size_t i);
void backend_close(struct backend *b);
/* Whether backend_open(spec, nblocks, group, fdb, ...) would take spec
 * (the peer's image is not made): 0, or -1 with the reason printed. */
int backend_check(const char *spec, uint64_t nblocks, uint32_t group, uint64_t fdb);
const char *backend_label(const struct backend *b);
struct bga_volume *backend_volume(const struct backend *b); /* NULL for the peer */

/* rsv NULL: no handle.  want 0: one bga_alloc (out[0]), else bga_alloc_vec. */
int backend_alloc(struct backend *b, struct bga_rsv *rsv, const struct bga_request *req, uint64_t want,
                  struct bga_extent *out, size_t max_out, size_t *n);
int backend_free(struct backend *b, const struct bga_extent *e, size_t n); /* free_vec, or free when n == 1 */
int backend_free_deferred(struct backend *b, const struct bga_extent *e, size_t n, uint64_t txn); /* _vec when n > 1 */
int backend_commit(struct backend *b, uint64_t txn);
int backend_claim(struct backend *b, uint64_t start, uint64_t len);
int backend_reserve(struct backend *b, uint64_t n, int give_back);
int backend_rsv_open(struct backend *b, struct bga_rsv **out); /* *out NULL where there are no windows */
void backend_rsv_close(struct backend *b, struct bga_rsv *rsv);
int backend_rsv_set_size(struct backend *b, struct bga_rsv *rsv, uint32_t blocks);
/* The free map (unit: bytes a block, for Ceph's score). */
int backend_freemap(struct backend *b, uint64_t unit, struct freemap *m);

#endif
