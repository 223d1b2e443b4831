/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz_ops: bga_foreach_free and bga_trim against the model (fuzz_ops_walk.c). */
#ifndef BGA_FUZZ_OPS_WALK_H
#define BGA_FUZZ_OPS_WALK_H

#include <stdbool.h>
#include <stdint.h>

#include "fuzz_ops_state.h"

/* bga_foreach_free (trim false) or bga_trim on a range the input picks,
 * every callback checked against the model. */
void op_walk(struct fz *f, bool trim);
/* A walk's range from the walk's first byte c: the whole volume (c & 1),
 * or blocks the input picks (bad ranges too). */
void pick_walk_range(struct fz *f, uint8_t c, uint64_t *from, uint64_t *to);

#endif
