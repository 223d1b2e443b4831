/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_GROUPLOCK_H
#define BGA_GROUPLOCK_H

/*
 * The group locks (a group's slot of the hashed lock table, with its
 * place in the lock order recorded by lockdep in debug builds), the
 * volume's grow_lock, and the check behind every `_locked` name.  The
 * order itself: lib/base/lockdep.h.
 */

#include "types.h"

/* Group g's lock: its slot of the hashed lock table. */
static inline void bga__group_lock(struct bga_volume *vol, uint64_t g)
{
	bga__lockdep_acquire(BGA_LOCKDEP_GROUP, bga_locktab_slot(vol->locks, g), true);
	bga__locktab_lock(vol->locks, g);
}

static inline bool bga__group_trylock(struct bga_volume *vol, uint64_t g)
{
	bool ok = bga__locktab_trylock(vol->locks, g);
	if (ok)
		bga__lockdep_acquire(BGA_LOCKDEP_GROUP, bga_locktab_slot(vol->locks, g), false);
	return ok;
}

static inline void bga__group_unlock(struct bga_volume *vol, uint64_t g)
{
	bga__lockdep_release(BGA_LOCKDEP_GROUP, bga_locktab_slot(vol->locks, g));
	bga__locktab_unlock(vol->locks, g);
}

/* Group g's lock, waiting if need be: true when another thread held it
 * (the caller's cue to steer, steer.h). */
static inline bool bga__group_lock_busy(struct bga_volume *vol, uint64_t g)
{
	if (bga__group_trylock(vol, g))
		return false;
	bga__group_lock(vol, g);
	return true;
}

/*
 * The same with group g's slot found once (bga__group_slot), for the hot
 * paths that take and release one group lock: the table's pointer and
 * mask are reloaded after every locked instruction otherwise.
 */
static inline struct locktab_slot *bga__group_slot(struct bga_volume *vol, uint64_t g)
{
	return bga__locktab_slot_of(vol->locks, g);
}

static inline void bga__group_lock_at(struct bga_volume *vol, uint64_t g, struct locktab_slot *s)
{
	(void)g;
	bga__lockdep_acquire(BGA_LOCKDEP_GROUP, bga_locktab_slot(vol->locks, g), true);
	bga__locktab_lock_slot(vol->locks, s);
}

static inline bool bga__group_trylock_at(struct bga_volume *vol, uint64_t g, struct locktab_slot *s)
{
	(void)g;
	bool ok = bga__locktab_trylock_slot(vol->locks, s);
	if (ok)
		bga__lockdep_acquire(BGA_LOCKDEP_GROUP, bga_locktab_slot(vol->locks, g), false);
	return ok;
}

static inline void bga__group_unlock_at(struct bga_volume *vol, uint64_t g, struct locktab_slot *s)
{
	(void)g;
	bga__lockdep_release(BGA_LOCKDEP_GROUP, bga_locktab_slot(vol->locks, g));
	bga__locktab_unlock_slot(vol->locks, s);
}

/* The uncontended fas acquire of group g's lock and its release
 * (bga__locktab_trylock_fas): the fast paths of bga_free and bga_alloc,
 * which leave every other case to the _at forms. */
static inline bool bga__group_trylock_fas_at(struct bga_volume *vol, uint64_t g, struct locktab_slot *s)
{
	(void)g;
	bool ok = bga__locktab_trylock_fas(vol->locks, s);
	if (ok) /* a try cannot deadlock: no order check, as bga__group_trylock_at */
		bga__lockdep_acquire(BGA_LOCKDEP_GROUP, bga_locktab_slot(vol->locks, g), false);
	return ok;
}

static inline void bga__group_unlock_fas_at(struct bga_volume *vol, uint64_t g, struct locktab_slot *s)
{
	(void)vol;
	(void)g;
	bga__lockdep_release(BGA_LOCKDEP_GROUP, bga_locktab_slot(vol->locks, g));
	bga__locktab_unlock_fas(s);
}

/*
 * One try of group g's lock for a hot path that takes one group lock,
 * its slot found once into *s (for the release); false when busy.
 * `fas` (a constant) takes the fas table's inline acquire
 * (bga__group_trylock_fas_at: the table must be fas), which calls
 * nothing; the table's own kind otherwise.  Released by
 * bga__group_unlock_slot with the same `fas`.
 */
static inline bool bga__group_trylock_slot(struct bga_volume *vol, uint64_t g, struct locktab_slot **s, bool fas)
{
	*s = bga__group_slot(vol, g);
	return fas ? bga__group_trylock_fas_at(vol, g, *s) : bga__group_trylock_at(vol, g, *s);
}

static inline void bga__group_unlock_slot(struct bga_volume *vol, uint64_t g, struct locktab_slot *s, bool fas)
{
	if (fas)
		bga__group_unlock_fas_at(vol, g, s);
	else
		bga__group_unlock_at(vol, g, s);
}

/* The volume's two mutexes, with their places in the lock order (lockdep.h). */
static inline void bga__grow_lock(struct bga_volume *vol)
{
	bga__lockdep_acquire(BGA_LOCKDEP_GROW, 0, true);
	pthread_mutex_lock(&vol->grow_lock);
}

static inline void bga__grow_unlock(struct bga_volume *vol)
{
	bga__lockdep_release(BGA_LOCKDEP_GROW, 0);
	pthread_mutex_unlock(&vol->grow_lock);
}

/* Debug builds: abort unless the calling thread holds group g's lock (the
 * check behind a `_locked` name, which always means the group lock). */
#define bga__group_assert_locked(vol, g) bga__lockdep_assert_held(BGA_LOCKDEP_GROUP, bga_locktab_slot((vol)->locks, (g)))

#endif
