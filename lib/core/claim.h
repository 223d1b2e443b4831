/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_CLAIM_H
#define BGA_CLAIM_H

/*
 * bga_claim's core (claim.c).
 */

#include "types.h"

/*
 * bga_claim of ext[0..n) (sorted, disjoint, inside geo, below which the
 * caller holds RCU), all or nothing, every group lock of them held at
 * once: window remainders in them taken back (bga__window_cut_out_locked),
 * charged to the used counter against the capacity, or with `reserved`
 * drawn from vol->reserved.  0; -EBUSY (a block allocated, pending or
 * held by a trim); -ENOSPC (the charge); -EUCLEAN; -EINVAL (a grow has
 * not opened it); -ENOMEM.  No group lock may be held.
 */
int bga__claim_vec(struct bga_volume *vol, const struct bga_geom *geo, const struct bga_extent *ext, size_t n,
		   bool reserved);

#endif
