/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Charging: the one place where blocks taken for an allocation are paid
 * for (the used counter against the capacity, or a bga_reserve promise),
 * and bga__take_locked, the one function that takes a found run from a
 * group for the search, exact goals, windows and trim.  bga_alloc's fast
 * path runs the inline first step of the same charge
 * (bga__charge_fast_locked, charge.h).
 */
#include <errno.h>

#include "group.h"
#include "charge.h"

/*
 * Blocks are charged where they are taken, under the group lock, and for
 * what was found, never for max_len before the search: an up-front charge
 * made every other request see no space while it was in flight, and so
 * returned -ENOSPC (and -EAGAIN) while unpromised free runs existed
 * (issue 10).  A charge can then fail only when the blocks that nobody
 * owns or was promised number fewer than min_len, which is exactly when
 * -ENOSPC is due.
 */
int bga__charge_locked(struct bga_volume *vol, struct bga_take *ac, uint32_t *len)
{
	if (ac->reserved) {
		uint64_t r = __atomic_load_n(&vol->reserved, __ATOMIC_RELAXED), want;
		do {
			if (r < ac->min) {
				ac->stop = -EINVAL; /* fewer than min_len reserved now */
				return ac->stop;
			}
			want = BGA_MIN((uint64_t)*len, r);
			want -= want % ac->align; /* still >= min, a multiple of it */
		} while (!__atomic_compare_exchange_n(&vol->reserved, &r, r - want, false, __ATOMIC_ACQ_REL,
						      __ATOMIC_RELAXED));
		*len = (uint32_t)want;
		return 0;
	}
	int64_t cap = (int64_t)ac->geo->capacity;
	if (bga_likely(bga__counter_add_limited(vol->used, *len, cap) == 0))
		return 0;
	for (;;) {
		int64_t left = bga__unpromised(vol, ac->geo);
		if (left < (int64_t)ac->min) {
			ac->stop = -ENOSPC; /* the count decides for every group */
			return ac->stop;
		}
		uint32_t want = (uint32_t)BGA_MIN((int64_t)*len, left);
		want -= want % ac->align;
		if (bga_counter_add_limited(vol->used, want, cap) == 0) {
			*len = want;
			return 0;
		}
	}
}

void bga__uncharge(struct bga_volume *vol, const struct bga_take *ac, uint32_t len)
{
	if (ac->reserved)
		__atomic_fetch_add(&vol->reserved, len, __ATOMIC_RELAXED);
	else
		bga_counter_add(vol->used, -(int64_t)len);
}

int bga__take_locked(struct bga_volume *vol, struct bga_take *ac, struct bga_group *grp, uint64_t g, uint32_t off,
		     uint32_t *len)
{
	bga__group_assert_locked(vol, g);
	int rc = bga__charge_locked(vol, ac, len);
	if (rc)
		return rc;
	rc = bga__group_take_locked(vol, grp, g, off, *len);
	if (rc)
		bga__uncharge(vol, ac, *len);
	return rc;
}

