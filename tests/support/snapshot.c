/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A byte image of the allocation state; see snapshot.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rcu.h"

#include <bgalloc/bitmap.h>

#include "snapshot.h"
#include "group.h"
#include "window.h"
#include "percpu.h"
#include "deferred.h"

struct buf {
	uint64_t *w;
	size_t n, cap;
	bool oom;
};

static void put(struct buf *b, uint64_t v)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 1024;
		uint64_t *w = realloc(b->w, cap * sizeof(*w));
		if (w == NULL) {
			b->oom = true;
			return;
		}
		b->w = w;
		b->cap = cap;
	}
	b->w[b->n++] = v;
}

/*
 * Groups are written by what they mean, not how they are stored, so that a
 * rejected call that merely touched a chunk or materialised a bitmap still
 * compares equal: an untouched group is written as a fresh one would be.
 */
static void put_group_locked(struct buf *b, struct bga_volume *vol, const struct bga_chunk *ch, uint64_t g,
			     uint64_t *map)
{
	uint32_t bpg = vol->cfg.blocks_per_group, lo, hi, i = (uint32_t)(g & (BGA_CHUNK_GROUPS - 1));
	const struct bga_group *grp = ch ? &ch->groups[i] : NULL;
	bga__grp_span(vol, grp, g, &lo, &hi);
	uint32_t nfree = grp ? grp->free : hi - lo, run = grp ? grp->max_run : hi - lo;
	put(b, ((uint64_t)nfree << 32) | run);
	put(b, grp ? grp->flags & ~(uint32_t)BGA_GROUP_NO_ROOM : 0); /* a search's hint, not state */
	bga__group_copy_locked(vol, grp, g, map, false);
	for (size_t w = 0; w < BGA_BITMAP_WORDS(bpg); w++)
		put(b, map[w]);
	for (const struct bga_window *w = grp && grp->ext ? grp->ext->windows : NULL; w; w = w->next)
		put(b, ((uint64_t)w->start << 32) | (__atomic_load_n(&w->span, __ATOMIC_ACQUIRE) & ~BGA_WSPAN_FROZEN));
	put(b, UINT64_MAX);
	if (grp) {
		size_t n = bga__dfree_dump_locked(grp, NULL, 0);
		uint64_t *d = malloc((n + 1) * sizeof(*d));
		if (d == NULL) {
			b->oom = true;
			return;
		}
		bga__dfree_dump_locked(grp, d, n);
		for (size_t k = 0; k < n; k++)
			put(b, d[k]);
		free(d);
	}
	put(b, UINT64_MAX);
}

int bga__snapshot(struct bga_volume *vol, void **out, size_t *len)
{
	if (vol == NULL || out == NULL || len == NULL)
		return -EINVAL;
	uint64_t *map = malloc(BGA_BITMAP_WORDS(vol->cfg.blocks_per_group) * sizeof(uint64_t));
	if (map == NULL)
		return -ENOMEM;
	struct buf b = {NULL, 0, 0, false};
	urcu_bp_read_lock();
	const struct bga_geom *geo = bga_rcu_load(vol->geom);
	put(&b, geo->nblocks);
	put(&b, (uint64_t)bga_counter_sum(vol->used));
	put(&b, __atomic_load_n(&vol->reserved, __ATOMIC_RELAXED));
	put(&b, __atomic_load_n(&vol->last_committed, __ATOMIC_RELAXED));
	put(&b, bga__dfree_pending(vol, NULL));
	uint64_t open = 0; /* handles open: opened minus closed, over the CPUs */
	for (unsigned i = 0; i < vol->ncpu; i++)
		open += __atomic_load_n(&vol->cpu[i].rsv.opened, __ATOMIC_RELAXED) -
			__atomic_load_n(&vol->cpu[i].rsv.closed, __ATOMIC_RELAXED);
	put(&b, open);
	for (uint64_t g = 0; g < geo->ngroups; g++) {
		const struct bga_chunk *ch = bga__chunk_get(vol, g >> BGA_CHUNK_SHIFT);
		if (ch)
			bga__group_lock(vol, g);
		put_group_locked(&b, vol, ch, g, map);
		if (ch)
			bga__group_unlock(vol, g);
	}
	urcu_bp_read_unlock();
	free(map);
	if (b.oom) {
		free(b.w);
		return -ENOMEM;
	}
	*out = b.w;
	*len = b.n * sizeof(uint64_t);
	return 0;
}
