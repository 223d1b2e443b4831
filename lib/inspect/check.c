/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The invariant checker: every invariant types.h, groupdesc.h, chunk.h and window.h write down. */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rcu.h"

#include <bgalloc/bitmap.h>

#include "persist.h"
#include "group.h"
#include "hooks.h"
#include "charge.h"
#include "deferred.h"
#include "window.h"

static void report(struct bga_check_report *r, uint64_t g, uint64_t block, const char *fmt, ...)
{
	if (r->violations++ > 0)
		return;
	r->group = g;
	r->block = block;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
}

static bool idx_bit(const struct bga_chunk *ch, unsigned k, uint32_t i)
{
	return (__atomic_load_n(&ch->bits[k][i / 64], __ATOMIC_RELAXED) >> (i % 64)) & 1;
}

/* Chunk c's order-k summary bit, read atomically: groups under other lock
 * slots flip it while we hold only our group's lock. */
static bool summary_bit(const struct bga_volume *vol, unsigned k, uint64_t c)
{
	return (__atomic_load_n(bga__dir_word(vol, k, c), __ATOMIC_SEQ_CST) >> (c % 64)) & 1;
}

/*
 * A summary bit that reads clear while a group of its chunk has the bit is
 * a violation only once no recheck of that chunk is in flight
 * (groupidx.c summary_recheck clears, looks again and sets back).
 */
static bool summary_bit_settled(const struct bga_volume *vol, const struct bga_chunk *ch, unsigned k, uint64_t c)
{
	for (int spins = 0; !summary_bit(vol, k, c); spins++) {
		if (__atomic_load_n(&ch->clearing, __ATOMIC_SEQ_CST) == 0 && !summary_bit(vol, k, c))
			return false;
		if (spins > 1000000)
			return false;
		sched_yield();
	}
	return true;
}

static void check_group_locked(struct bga_volume *vol, const struct bga_geom *geo, const struct bga_chunk *ch,
			       uint64_t g, struct bga_check_report *r)
{
	uint32_t i = (uint32_t)(g & (BGA_CHUNK_GROUPS - 1)), lo, hi, bpg = vol->cfg.blocks_per_group;
	const struct bga_group *grp = &ch->groups[i];
	uint64_t first = bga__group_first(vol, g);
	bga__grp_span(vol, grp, g, &lo, &hi);
	uint32_t geo_lo, geo_hi;
	bga__group_span(vol, geo, g, &geo_lo, &geo_hi);
	if (grp->flags & BGA_GROUP_QUARANTINED)
		report(r, g, UINT64_MAX, "group %llu: quarantined (failed its checksum at load)", (unsigned long long)g);
	/* A grow changes spans under the group lock after it publishes its
	 * geometry and before it stores the floor: compare only when ours is
	 * the last geometry a grow completed and still the published one (a
	 * grow publishing later cannot reach this group before we unlock). */
	if (hi != geo_hi && __atomic_load_n(&vol->nblocks_floor, __ATOMIC_ACQUIRE) == geo->nblocks &&
	    bga_rcu_load(vol->geom) == geo)
		report(r, g, UINT64_MAX, "group %llu: span ends at %u, the geometry says %u", (unsigned long long)g,
		       hi, geo_hi);
	uint32_t longest;
	if (grp->bitmap == NULL) {
		if (grp->free != 0 && grp->free != hi - lo)
			report(r, g, UINT64_MAX, "group %llu: no bitmap but free %u of span %u",
			       (unsigned long long)g, grp->free, hi - lo);
		longest = grp->free;
	} else {
		uint64_t used = bga_bitmap_popcount(grp->bitmap, 0, bpg);
		if (used != bpg - grp->free)
			report(r, g, UINT64_MAX, "group %llu: bitmap has %llu used, free count says %u",
			       (unsigned long long)g, (unsigned long long)used, bpg - grp->free);
		if (!bga_bitmap_range_is_set(grp->bitmap, 0, lo) || !bga_bitmap_range_is_set(grp->bitmap, hi, bpg - hi)) {
			uint64_t b = bga_bitmap_next_zero(grp->bitmap, lo, 0);
			if (b >= lo)
				b = bga_bitmap_next_zero(grp->bitmap, bpg, hi);
			report(r, g, first + b, "group %llu: block %llu outside the usable span is free",
			       (unsigned long long)g, (unsigned long long)(first + b));
		}
		longest = (uint32_t)bga_bitmap_longest_zero_run(grp->bitmap, hi);
	}
	if (grp->max_run < longest || (grp->free == 0 && grp->max_run != 0))
		report(r, g, UINT64_MAX, "group %llu: max_run %u but longest free run %u, free %u",
		       (unsigned long long)g, grp->max_run, longest, grp->free);
	for (unsigned k = 0; k < BGA_ORDERS; k++) {
		bool want = k <= vol->max_order && (UINT64_C(1) << k) <= grp->max_run;
		if (idx_bit(ch, k, i) != want)
			report(r, g, UINT64_MAX, "group %llu: index order %u bit is %d, max_run %u",
			       (unsigned long long)g, k, !want, grp->max_run);
		if (want && !summary_bit_settled(vol, ch, k, g >> BGA_CHUNK_SHIFT))
			report(r, g, UINT64_MAX, "group %llu: chunk summary order %u clear", (unsigned long long)g, k);
	}
	uint32_t bad;
	if (!bga__dfree_check_locked(vol, grp, g, &bad))
		report(r, g, first + bad, "group %llu: block %llu waits on a deferred free but is free, or the pending map disagrees",
		       (unsigned long long)g, (unsigned long long)(first + bad));
	/* Windows: linked to this group, remainders inside the span, marked
	 * used, and pairwise disjoint (a remainder's owner may raise cur
	 * meanwhile: spans only shrink, so what is read stays inside). */
	for (const struct bga_window *w = grp->ext ? grp->ext->windows : NULL; w; w = w->next) {
		uint64_t s = __atomic_load_n(&w->span, __ATOMIC_ACQUIRE);
		uint32_t cur = bga__wspan_cur(s), end = bga__wspan_end(s);
		if (w->group != g || cur > end || cur < lo || end > hi || w->start > cur)
			report(r, g, first + cur, "group %llu: window [%u, %u) leaves the group", (unsigned long long)g,
			       cur, end);
		else if (end > cur && (grp->bitmap == NULL || !bga_bitmap_range_is_set(grp->bitmap, cur, end - cur)))
			report(r, g, first + cur, "group %llu: window [%u, %u) holds free blocks", (unsigned long long)g,
			       cur, end);
		if (w->end != end)
			report(r, g, first + cur, "group %llu: window [%u, %u) has its end copy at %u",
			       (unsigned long long)g, cur, end, w->end);
		for (const struct bga_window *o = w->next; o; o = o->next) {
			uint64_t t = __atomic_load_n(&o->span, __ATOMIC_ACQUIRE);
			uint32_t oc = bga__wspan_cur(t), oe = bga__wspan_end(t);
			if (BGA_MAX(cur, oc) < BGA_MIN(end, oe))
				report(r, g, first + BGA_MAX(cur, oc), "group %llu: windows [%u, %u) and [%u, %u) overlap",
				       (unsigned long long)g, cur, end, oc, oe);
		}
	}
	/* and in the held map (window.h), which frees read instead of them */
	uint32_t unheld = bga__window_unheld_locked(grp);
	if (unheld != UINT32_MAX)
		report(r, g, first + unheld, "group %llu: block %u of a window's remainder is not in the held map",
		       (unsigned long long)g, unheld);
}

int bga_check(struct bga_volume *vol, struct bga_check_report *out)
{
	if (vol == NULL)
		return -EINVAL;
	struct bga_check_report r = {.violations = 0, .group = UINT64_MAX, .block = UINT64_MAX};
	if (bga__chunks_settle(vol) != 0) /* a missing chunk must mean wholly free */
		return -ENOMEM;
	urcu_bp_read_lock();
	const struct bga_geom *geo = bga_rcu_load(vol->geom);
	uint64_t total_free = 0;
	for (uint64_t c = 0; c < geo->nchunks; c++) {
		const struct bga_chunk *ch = bga__chunk_get(vol, c);
		uint64_t g0 = c << BGA_CHUNK_SHIFT, g1 = BGA_MIN(g0 + BGA_CHUNK_GROUPS, geo->ngroups);
		if (ch == NULL) {
			/* Untouched: wholly free full-size groups. */
			total_free += (g1 - g0) * vol->cfg.blocks_per_group;
			/* A chunk installed since we looked may clear bits of
			 * orders none of its groups has: only a chunk still
			 * untouched after the read is judged. */
			for (unsigned k = 0; k <= vol->max_order; k++)
				if (!summary_bit(vol, k, c) && bga__chunk_get(vol, c) == NULL)
					report(&r, g0, UINT64_MAX, "untouched chunk %llu: summary order %u clear",
					       (unsigned long long)c, k);
			continue;
		}
		for (uint64_t g = g0; g < g1; g++) {
			bga__group_lock(vol, g);
			check_group_locked(vol, geo, ch, g, &r);
			total_free += ch->groups[g - g0].free + bga__window_held_locked(&ch->groups[g - g0]);
			bga__group_unlock(vol, g);
		}
	}
	int64_t used = bga_counter_sum(vol->used);
	uint64_t reserved = __atomic_load_n(&vol->reserved, __ATOMIC_RELAXED);
	if ((int64_t)geo->capacity - used + (int64_t)reserved != (int64_t)total_free)
		report(&r, UINT64_MAX, UINT64_MAX, "groups hold %llu free blocks, the counter says %lld",
		       (unsigned long long)total_free, (long long)((int64_t)geo->capacity - used + (int64_t)reserved));
	if (reserved > total_free)
		report(&r, UINT64_MAX, UINT64_MAX, "%llu blocks reserved but only %llu free",
		       (unsigned long long)reserved, (unsigned long long)total_free);
	urcu_bp_read_unlock();
	if (out)
		*out = r;
	return r.violations ? -EUCLEAN : 0;
}
