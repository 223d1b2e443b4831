/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_HOOKS_H
#define BGA_HOOKS_H

/*
 * The hook table to persistence, a layer above the core, and the core's
 * two questions through it: settle a lazy load, and is a missing chunk
 * pending.
 */

#include "types.h"

struct bga_chunk;

/*
 * What the core asks of persistence, which sits a layer above it: the
 * persistence code sets vol->store_hooks once the volume has persistence
 * state (its first store or load).  Before that every answer is the
 * trivial one (nothing pending, nothing to fill or free), which is what
 * the accessors below return for a NULL table.  A table, not
 * calls, so that no core file calls up a layer (scripts/callcycles.py).
 */
struct bga_store_hooks {
	/* A fresh chunk c, before it is published (grow_lock held, no group
	 * lock): fill its groups from the image when a lazy load left it
	 * pending.  0 or -ENOMEM (the chunk then stays unread). */
	int (*chunk_fill)(struct bga_volume *vol, struct bga_chunk *ch, uint64_t c);
	/* Read every chunk a lazy load left pending (no lock held): 0, or
	 * -ENOMEM when one could not be built and is still pending. */
	int (*settle)(struct bga_volume *vol);
	/* Is the missing chunk c pending (not wholly free)? */
	bool (*pending)(const struct bga_volume *vol, uint64_t c);
	/* bga_destroy: stop a prefetch thread first, free the state last. */
	void (*quiesce)(struct bga_volume *vol);
	void (*destroy)(struct bga_volume *vol);
};


static inline const struct bga_store_hooks *bga__store_hooks(const struct bga_volume *vol)
{
	return __atomic_load_n(&vol->store_hooks, __ATOMIC_ACQUIRE);
}
/*
 * Make "a missing chunk is wholly free" true: read every chunk a lazy
 * load left pending.  For the walks that read a missing chunk as free
 * (check, stats, foreach, trim, grow).  0, or -ENOMEM when a chunk could
 * not be built: then one is still pending, and the caller must not read
 * a missing chunk as free.  No lock may be held (chunk installs take
 * grow_lock).
 */
static inline int bga__chunks_settle(struct bga_volume *vol)
{
	const struct bga_store_hooks *h = bga__store_hooks(vol);
	return h ? h->settle(vol) : 0;
}
/* Is the missing chunk c pending a lazy read (so not wholly free)? */
static inline bool bga__chunk_pending(const struct bga_volume *vol, uint64_t c)
{
	const struct bga_store_hooks *h = bga__store_hooks(vol);
	return h && h->pending(vol, c);
}

#endif
