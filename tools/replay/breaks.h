/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_REPLAY_BREAKS_H
#define BGA_REPLAY_BREAKS_H

/*
 * Why files split (BGA_REPLAY_BREAKS, bga-replay(1) ENVIRONMENT): the
 * replay of a trace against bgalloc tells this every call it makes and
 * what the call got; each time an allocation through a handle does not
 * start where one of its file's blocks ends, the reason is read at the
 * block after the file's last extent, counted, and printed to stderr at
 * breaks_close (=2: each break too; =3: every allocation through a
 * handle).  Every function takes NULL (the variable unset) and then does
 * nothing.
 */

#include <stddef.h>
#include <stdint.h>

#include <bgalloc.h>

#include "trace.h"

struct breaks;

/* NULL in *out unless BGA_REPLAY_BREAKS is set (and t is given): then the
 * counts for the replay of t on a volume of nblocks (groups of `group`)
 * whose free blocks are fr[0..n).  0, or -1 when out of memory. */
int breaks_open(const char *label, const struct trace *t, uint64_t nblocks, uint32_t group,
                const struct bga_extent *fr, size_t n, struct breaks **out);
/* Print the counts and free them. */
void breaks_close(struct breaks *d);
/* The replay plays record i next. */
void breaks_at(struct breaks *d, size_t i);
/* An allocation through rsv (NULL: none) got out[0..n); `window`: the
 * blocks rsv's window held before the call. */
void breaks_alloc(struct breaks *d, struct bga_rsv *rsv, const struct bga_request *req, uint64_t window,
                  const struct bga_extent *out, size_t n);
void breaks_free(struct breaks *d, const struct bga_extent *e, size_t n);
void breaks_defer(struct breaks *d, const struct bga_extent *e, size_t n, uint64_t txn);
void breaks_commit(struct breaks *d, uint64_t txn);
void breaks_claim(struct breaks *d, uint64_t start, uint64_t len);
/* The handle of the record being played (an open) was opened as rsv, or
 * rsv is closed. */
void breaks_rsv_open(struct breaks *d, struct bga_rsv *rsv);
void breaks_rsv_close(struct breaks *d, struct bga_rsv *rsv);

#endif
