/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_GEOM_H
#define BGA_GEOM_H

/*
 * The geometry (types.h, struct bga_geom): its rules (volume.c), a new
 * one and a retired one (grow.c).
 */

#include "types.h"

/* The geometry rules, once: bga_create's and the superblock's (0 or
 * -EINVAL). */
int bga__geometry_check(uint64_t nblocks, uint32_t bpg, uint64_t first);

/* A geometry for nblocks blocks; NULL on ENOMEM. */
struct bga_geom *bga__geom_new(const struct bga_volume *vol, uint64_t nblocks);
/* Free a replaced geometry once no reader can hold it, with the others
 * of its batch (grow.c); takes grow_lock, which the caller must not hold. */
#define BGA_GEOM_RETIRE_BATCH 32
void bga__geom_retire(struct bga_volume *vol, struct bga_geom *old);

#endif
