/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz_ops: the calls' arguments, decoded from the input (fuzz_ops_args.c). */
#ifndef BGA_FUZZ_OPS_ARGS_H
#define BGA_FUZZ_OPS_ARGS_H

#include <stdint.h>

#include <bgalloc.h>

#include "fuzz_ops_state.h"

/* A block number, and a length, biased towards interesting places. */
uint64_t pick_block(struct fz *f);
uint64_t pick_len(struct fz *f);

/* A range to free (as bga_free takes one), and a txn for a deferred one. */
void pick_range(struct fz *f, uint64_t *start, uint64_t *len);
uint64_t pick_txn(struct fz *f);

/* A request: goal, lengths, handle, flags (flags_ok the known ones; now
 * and then an unknown bit) and, in the second format, an allocation
 * unit; g is the call's first byte. */
void decode_request(struct fz *f, struct bga_request *req, uint8_t g, uint32_t flags_ok);

#endif
