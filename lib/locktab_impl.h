/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_LOCKTAB_IMPL_H
#define BGA_LOCKTAB_IMPL_H

/*
 * The lock table's layout and its uncontended fas paths, inline, for the
 * allocator's hot path (include/bgalloc/locktab.h has the contract).  A
 * churn operation takes a lock twice; through calls, the kind switch and
 * the statistics cost it about 100 instructions of 700 (callgrind), inline
 * about 20.  Every other kind, and every contended acquisition, goes to
 * the out-of-line code in locktab.c.
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
 *   at a node of the holder's pool or at a heap node;
 * - the bias (fas tables only, and only when the table biases,
 *   bga__locktab_set_biasing; the proof is at bga__locktab_revoke):
 *   - `bias1` is a CPU id + 1, or 0 (unbiased), and changes only under the
 *     fas lock: to a CPU when that CPU's thread takes the fas lock for the
 *     need-th time in a row (streak_cpu, streak, need: written under the
 *     fas lock only), to 0 when any thread takes the fas
 *     lock while it is set (a revocation; need doubles);
 *   - `held` is 1 exactly while a thread holds the lock by the fast side:
 *     a restartable sequence on CPU `bias1` - 1 that found the fas lock free
 *     and `held` 0 (locktab_rseq.h); the holder clears it to release;
 *   - so at most one thread is inside: a fas holder goes in only once it
 *     has seen `bias1` unset (revoking it if need be) and `held` clear
 *     (waiting if need be; the fas word and `held` are both set only
 *     while it waits, or briefly while a try that found `held` set backs
 *     out), and no sequence takes the slot while the fas word is set or
 *     `bias1` is unset;
 *   - need adapts: a bias that served LOCKTAB_BIAS_PAID acquisitions or
 *     more before its revocation paid for the revocation's membarrier, and
 *     need halves (not below LOCKTAB_BIAS_NEED); otherwise it doubles (not
 *     above LOCKTAB_BIAS_NEED_MAX).  acq_at_bias is `acquisitions` when
 *     the bias was set.
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
	union {
		struct {
			uint32_t bias1; /* the biased CPU + 1; 0: none */
			uint32_t held;
		};
		uint64_t bias_state; /* both at once: 0 iff unbiased and not held */
	};
	int32_t streak_cpu;
	uint32_t streak;
	uint32_t need;
	uint64_t revoked; /* revocations of the bias (statistics, holder-written) */
	uint64_t acq_at_bias;
} __attribute__((aligned(BGA_CACHELINE)));

/* What bga__locktab_bias_of says of a slot no CPU may take by the fast
 * side (bias1 == 0). */
#define LOCKTAB_NO_BIAS (-1)
/*
 * Fas acquisitions in a row from one CPU that bias a slot to it, at first
 * and at most.  A revocation costs a membarrier (1.3-2.7 us here), about
 * 500 of the 4 ns exchanges a bias saves; with need at most 2^14, a
 * pattern that revokes every bias it lets form (2^14 acquisitions from one
 * CPU, then one from another, over and over) pays at most about 3%, and a
 * slot whose traffic settles on one CPU is biased again within 2^14 of
 * its acquisitions.
 */
#define LOCKTAB_BIAS_NEED 64u
#define LOCKTAB_BIAS_NEED_MAX (1u << 14)
/* Acquisitions under one bias that pay for its revocation: a membarrier
 * costs 1.3-2.7 us, a saved exchange about 4 ns (bga-floor: `counter`
 * against `biased`). */
#define LOCKTAB_BIAS_PAID 1024u

_Static_assert(sizeof(struct locktab_slot) == BGA_CACHELINE, "a slot fills exactly one padded line");

struct bga_locktab {
	struct locktab_slot *slots;
	uint32_t mask; /* nslots - 1; nslots a power of two */
	enum bga_lock_kind kind;
	bool biasing; /* fas slots may be biased (bga__locktab_set_biasing) */
};

#include "locktab_rseq.h" /* reads struct locktab_slot's fields by offset */

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

/*
 * Revoke slot s's bias if it has one, with its fas lock held: out of line
 * (locktab.c).  bga__locktab_revoke returns once no thread holds s by the
 * fast side (it waits); bga__locktab_revoke_try does not wait, and returns
 * false when one does (the bias is revoked all the same, and the next fas
 * acquirer waits for that holder: bga__locktab_fas_blocked).
 */
void bga__locktab_revoke(struct locktab_slot *s);
bool bga__locktab_revoke_try(struct locktab_slot *s);

/* A fas acquisition by exchange on a biasing table counts toward biasing
 * the slot to this thread's CPU (by rseq's cpu_id, which the fast side
 * compares: nothing when this thread has no rseq). */
static inline void bga__locktab_count_bias(struct locktab_slot *s)
{
	int32_t cpu = locktab_rseq_cpu();
	if (cpu < 0)
		return;
	if (cpu != s->streak_cpu) {
		s->streak_cpu = cpu;
		s->streak = 1;
	} else if (++s->streak >= s->need) {
		s->streak = 0;
		s->acq_at_bias = s->acquisitions;
		/* Published by the fas unlock's release: no sequence can take
		 * the slot before then (it tests the fas word). */
		__atomic_store_n(&s->bias1, (uint32_t)cpu + 1, __ATOMIC_RELAXED);
	}
}

/*
 * Whether a fas acquirer must revoke or wait before it goes in: a bias is
 * set, or a fast-side holder whose bias was revoked (by a try that did
 * not wait) is still inside.
 */
static inline bool bga__locktab_fas_blocked(const struct locktab_slot *s)
{
	return __atomic_load_n(&s->bias_state, __ATOMIC_ACQUIRE) != 0;
}

/*
 * After a fas acquisition by exchange, with the lock held: a bias still
 * set is revoked and any fast-side holder waited for, else the acquisition
 * counts toward a bias.  The blocking form, for lock.
 */
static inline void bga__locktab_fas_taken(struct bga_locktab *t, struct locktab_slot *s)
{
	if (bga_unlikely(bga__locktab_fas_blocked(s)))
		bga__locktab_revoke(s);
	else if (t->biasing)
		bga__locktab_count_bias(s);
}

/* The fast side, when the slot is biased at all (one load otherwise). */
static inline bool bga__locktab_bias_take(struct locktab_slot *s)
{
	return __atomic_load_n(&s->bias1, __ATOMIC_RELAXED) != 0 && locktab_rseq_take(s);
}

/*
 * Let the table's fas slots be biased (volume.c, for group locks): true
 * when it can (a fas table, x86-64 rseq sections, the rseq fence usable,
 * BGA_LOCK_BIAS not 0 in the environment); false, with nothing changed,
 * otherwise.  Before any other thread uses the table.
 */
bool bga__locktab_set_biasing(struct bga_locktab *t);

/* For tests: the slot's bias (a CPU id or LOCKTAB_NO_BIAS) and, if
 * `revoked` is not NULL, how many times it was revoked. */
int32_t bga__locktab_bias_of(const struct bga_locktab *t, uint32_t slot, uint64_t *revoked);

/* Out of line (locktab.c): every kind but an uncontended fas. */
bool bga__locktab_trylock_slow(struct bga_locktab *t, struct locktab_slot *s);
void bga__locktab_lock_slow(struct bga_locktab *t, struct locktab_slot *s);
void bga__locktab_unlock_slow(struct bga_locktab *t, struct locktab_slot *s);

/*
 * The _slot forms take the slot that bga__locktab_slot_of gave: a hot path
 * that takes and releases one lock finds its slot once (the table's
 * pointer and mask are reloaded after every locked instruction otherwise).
 */
static inline bool bga__locktab_trylock_slot(struct bga_locktab *t, struct locktab_slot *s)
{
	if (bga_likely(t->kind == BGA_LOCK_FAS)) {
		if (bga__locktab_bias_take(s)) {
			bga__locktab_stat_add(&s->acquisitions, 1);
			return true;
		}
		if (bga_likely(ck_spinlock_fas_trylock(&s->u.fas))) {
			if (bga_unlikely(bga__locktab_fas_blocked(s)) && !bga__locktab_revoke_try(s)) {
				ck_spinlock_fas_unlock(&s->u.fas);
				ck_pr_inc_64(&s->try_failed);
				return false;
			}
			if (t->biasing)
				bga__locktab_count_bias(s);
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
	if (bga_likely(t->kind == BGA_LOCK_FAS)) {
		if (bga__locktab_bias_take(s)) {
			bga__locktab_stat_add(&s->acquisitions, 1);
			return;
		}
		if (bga_likely(ck_spinlock_fas_trylock(&s->u.fas))) {
			bga__locktab_fas_taken(t, s);
			bga__locktab_stat_add(&s->acquisitions, 1);
			return;
		}
	}
	bga__locktab_lock_slow(t, s);
}

/* A fas slot's release: the fast side's flag, or the fas word. */
static inline void bga__locktab_unlock_fas(struct locktab_slot *s)
{
	if (__atomic_load_n(&s->held, __ATOMIC_RELAXED)) {
		/* (the fas word may be set: by a revoker waiting for this) */
		__atomic_store_n(&s->held, 0, __ATOMIC_RELEASE);
		return;
	}
	BGA_ASSERT(ck_spinlock_fas_locked(&s->u.fas));
	ck_spinlock_fas_unlock(&s->u.fas);
}

static inline void bga__locktab_unlock_slot(struct bga_locktab *t, struct locktab_slot *s)
{
	if (bga_likely(t->kind == BGA_LOCK_FAS)) {
		bga__locktab_unlock_fas(s);
		return;
	}
	bga__locktab_unlock_slow(t, s);
}

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
	if (bga_unlikely(t->kind != BGA_LOCK_FAS))
		return false;
	if (bga__locktab_bias_take(s)) {
		bga__locktab_stat_add(&s->acquisitions, 1);
		return true;
	}
	if (bga_likely(ck_spinlock_fas_trylock(&s->u.fas))) {
		/* A bias to revoke is a call: leave it to the caller's usual way. */
		if (bga_unlikely(bga__locktab_fas_blocked(s))) {
			ck_spinlock_fas_unlock(&s->u.fas);
			return false;
		}
		if (t->biasing)
			bga__locktab_count_bias(s);
		bga__locktab_stat_add(&s->acquisitions, 1);
		return true;
	}
	return false;
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
