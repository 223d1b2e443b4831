/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz_ops: the calls of 0.3.0 against the model, and the store's tag
 * (fuzz_ops_embed.c). */
#ifndef BGA_FUZZ_OPS_EMBED_H
#define BGA_FUZZ_OPS_EMBED_H

#include <bgalloc.h>

#include "fuzz_ops_state.h"

void op_free_deferred_vec(struct fz *f);
void op_used(struct fz *f);
void op_group(struct fz *f);
void op_names(struct fz *f);
/* fail() unless vol's tag (bga_volume_tag) is f->tag. */
void check_tag(struct fz *f, const struct bga_volume *vol, const char *which);

#endif
