/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz_ops: the calls of the second format's alphabet, each against the
 * model (fuzz_ops_calls.c). */
#ifndef BGA_FUZZ_OPS_CALLS_H
#define BGA_FUZZ_OPS_CALLS_H

#include <stdbool.h>

#include "fuzz_ops_state.h"

void op_alloc(struct fz *f);
void op_alloc_vec(struct fz *f);
void op_claim(struct fz *f);
void op_free(struct fz *f, bool deferred);
void op_free_vec(struct fz *f);
void op_commit(struct fz *f);
void op_reserve(struct fz *f, bool un);
void op_window(struct fz *f);
void op_grow(struct fz *f);
/* bga_store and bga_load, the loaded volume running on or not. */
void op_store(struct fz *f);

#endif
