/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_LOCKTAB_IMPL_H
#define BGA_LOCKTAB_IMPL_H

/*
 * The lock table's layout and its uncontended fas paths, inline, for the
 * allocator's hot path (include/bgalloc/locktab.h has the contract).  A
 * churn operation takes a lock twice, so the kind switch and the
 * statistics are inline (docs/HISTORY.md#what-the-hot-path-inlines-and-skips).
 * Every other kind, and every contended acquisition, goes to the
 * out-of-line code in locktab.c.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <ck_pr.h>
#include <ck_spinlock.h>

#include <bgalloc/locktab.h>

#include "compiler.h"

/*
 * One slot, alone on its cache line(s).  The statistics sit next to the
 * lock word: the holder owns the line anyway, so bumping them costs no
 * extra miss.
 *
 * Invariants:
 * - acquisitions, contended and wait_ns are written only by the holder;
 * - try_failed is written atomically by anyone (a failing trylock holds
 *   nothing);
 * - mcs_holder is non-NULL exactly while an MCS slot is held, and points
 *   at a node of the holder's pool or at a heap node.
 */
struct locktab_slot {
	union {
		ck_spinlock_fas_t fas;
		ck_spinlock_ticket_t ticket;
		ck_spinlock_mcs_t mcs;
		pthread_mutex_t mutex;
	} u;
	struct ck_spinlock_mcs *mcs_holder;
	uint64_t acquisitions;
	uint64_t contended;
	uint64_t wait_ns;
	uint64_t try_failed;
} __attribute__((aligned(BGA_CACHELINE)));

_Static_assert(sizeof(struct locktab_slot) == BGA_CACHELINE, "a slot fills exactly one padded line");

struct bga_locktab {
	struct locktab_slot *slots;
	uint32_t mask; /* nslots - 1; nslots a power of two */
	enum bga_lock_kind kind;
};

static inline struct locktab_slot *bga__locktab_slot_of(struct bga_locktab *t, uint64_t key)
{
	return &t->slots[key & t->mask];
}

/*
 * The statistics are written by the holder with plain (volatile) loads and
 * stores: no other writer exists while the lock is held, and readers only
 * need a torn-free 64-bit value.
 */
static inline void bga__locktab_stat_add(uint64_t *p, uint64_t v)
{
	ck_pr_store_64(p, ck_pr_load_64(p) + v);
}

/* Out of line (locktab.c): every kind but an uncontended fas. */
bool bga__locktab_trylock_slow(struct bga_locktab *t, struct locktab_slot *s);
void bga__locktab_lock_slow(struct bga_locktab *t, struct locktab_slot *s);
void bga__locktab_unlock_slow(struct bga_locktab *t, struct locktab_slot *s);

#ifdef BGA_DEBUG
/*
 * Whether the calling thread's MCS node pool (locktab.c; the lock table's
 * only per-thread state) is as a fresh thread's: every node free.  A node
 * is in use exactly while the thread holds an MCS slot through it, so a
 * thread between calls, holding no slot, has none; a node's contents are
 * rewritten at every acquisition, so a free node's stale ones do not
 * count.  A heap node (a thread holding more than the pool's nodes) lives
 * from its acquisition to its unlock only, and is not the pool's.  If not,
 * why[0 .. n) says how many nodes are in use.  For a harness that reuses
 * threads (tests/fuzz/fuzz_mt.c), with bga__thread_idle (thread.h).
 */
bool bga__locktab_thread_idle(char *why, size_t n);
#endif

/* Whether the table's locks are fas ones (what the _fas forms take). */
static inline bool bga__locktab_is_fas(const struct bga_locktab *t)
{
	return t->kind == BGA_LOCK_FAS;
}

/*
 * The uncontended fas acquire alone, for hot paths that keep every other
 * case out of line: true with the lock held (and counted, as lock_slot
 * counts it) when the table's kind is fas and the lock was free; false
 * with nothing done or counted otherwise, and the caller then takes the
 * lock its usual way.  Release it with bga__locktab_unlock_fas.
 */
static inline bool bga__locktab_trylock_fas(struct bga_locktab *t, struct locktab_slot *s)
{
	if (bga_likely(bga__locktab_is_fas(t) && ck_spinlock_fas_trylock(&s->u.fas))) {
		bga__locktab_stat_add(&s->acquisitions, 1);
		return true;
	}
	return false;
}

static inline void bga__locktab_unlock_fas(struct locktab_slot *s)
{
	BGA_ASSERT(ck_spinlock_fas_locked(&s->u.fas));
	ck_spinlock_fas_unlock(&s->u.fas);
}

/*
 * The _slot forms take the slot that bga__locktab_slot_of gave: a hot path
 * that takes and releases one lock finds its slot once (the table's
 * pointer and mask are reloaded after every locked instruction otherwise).
 */
static inline bool bga__locktab_trylock_slot(struct bga_locktab *t, struct locktab_slot *s)
{
	if (bga_likely(t->kind == BGA_LOCK_FAS)) {
		if (bga_likely(ck_spinlock_fas_trylock(&s->u.fas))) {
			bga__locktab_stat_add(&s->acquisitions, 1);
			return true;
		}
		ck_pr_inc_64(&s->try_failed);
		return false;
	}
	return bga__locktab_trylock_slow(t, s);
}

static inline void bga__locktab_lock_slot(struct bga_locktab *t, struct locktab_slot *s)
{
	if (bga_likely(bga__locktab_trylock_fas(t, s)))
		return;
	bga__locktab_lock_slow(t, s);
}

static inline void bga__locktab_unlock_slot(struct bga_locktab *t, struct locktab_slot *s)
{
	if (bga_likely(t->kind == BGA_LOCK_FAS)) {
		bga__locktab_unlock_fas(s);
		return;
	}
	bga__locktab_unlock_slow(t, s);
}

static inline bool bga__locktab_trylock(struct bga_locktab *t, uint64_t key)
{
	return bga__locktab_trylock_slot(t, bga__locktab_slot_of(t, key));
}

static inline void bga__locktab_lock(struct bga_locktab *t, uint64_t key)
{
	bga__locktab_lock_slot(t, bga__locktab_slot_of(t, key));
}

static inline void bga__locktab_unlock(struct bga_locktab *t, uint64_t key)
{
	bga__locktab_unlock_slot(t, bga__locktab_slot_of(t, key));
}

#endif
