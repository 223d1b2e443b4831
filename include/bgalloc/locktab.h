/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGALLOC_LOCKTAB_H
#define BGALLOC_LOCKTAB_H

/*
 * A hashed table of locks.  A power-of-two number of slots, each padded to
 * its own cache line.  Key k maps to slot k & (nslots - 1), so callers that
 * lock by group number spread across the slots the way ext2's
 * sb_bgl_lock() does.
 *
 * The lock kind is chosen at create time.  Every kind offers lock, trylock
 * and unlock with the same semantics (not recursive; unlock by the holder).
 *
 * Statistics are kept per slot and are cheap: the holder bumps plain
 * counters while it holds the lock, and the wait time is only measured on
 * the contended path.  They are approximate while other threads run and
 * exact once they stop.
 *
 * Threads: any thread may call any function but destroy at any time; a
 * lock is released by the thread that holds it.
 */

#include <stdbool.h>
#include <stdint.h>

#include <bgalloc/export.h>

#ifdef __cplusplus
extern "C" {
#endif

struct bga_locktab;

enum bga_lock_kind {
	BGA_LOCK_DEFAULT = 0, /* resolved at create; see lib/prim/locktab.c for the measurement */
	BGA_LOCK_FAS = 1,     /* ck_spinlock_fas: bounded spin with ck_backoff, then
			       * sched_yield, then short sleeps if the holder stays away */
	BGA_LOCK_TICKET = 2,  /* ck_spinlock_ticket: fair FIFO, spins */
	BGA_LOCK_MCS = 3,     /* ck_spinlock_mcs: queue lock, spins */
	BGA_LOCK_MUTEX = 4,   /* pthread mutex (adaptive where glibc has it) */
};

struct bga_lock_stats {
	uint64_t acquisitions; /* successful lock + trylock */
	uint64_t contended;    /* lock() calls that found the lock held */
	uint64_t wait_ns;      /* total time spent waiting in contended lock() calls */
	uint64_t try_failed;   /* trylock() calls that returned false */
};

/*
 * Create a lock table.  nslots 0 means auto: 4 << ilog2(min(ncpus, 32)).
 * Otherwise nslots must be a power of two no larger than 1 << 20.
 *
 * Returns: 0, with *out set to the table.
 * Errors:
 *  -EINVAL  out is NULL, a bad nslots, or an unknown kind.
 *  -ENOMEM  the table could not be allocated.
 */
BGA_EXTERN int bga_locktab_create(struct bga_locktab **out, uint32_t nslots, enum bga_lock_kind kind);

/*
 * Destroy a lock table and free its memory.  NULL is ignored.
 *
 * Returns: nothing.
 * Errors: none.
 * Threads: no lock of the table may be held, and no other call on it be
 *   in flight.
 */
BGA_EXTERN void bga_locktab_destroy(struct bga_locktab *t);

/*
 * Report the table's number of slots.
 *
 * Returns: the number of slots, a power of two.
 * Errors: none.
 */
BGA_EXTERN uint32_t bga_locktab_nslots(const struct bga_locktab *t);

/*
 * Report the table's lock kind, as resolved at create.
 *
 * Returns: the kind, never BGA_LOCK_DEFAULT.
 * Errors: none.
 */
BGA_EXTERN enum bga_lock_kind bga_locktab_kind(const struct bga_locktab *t);

/*
 * Name a lock kind: "fas", "ticket", "mcs" or "mutex".
 *
 * Returns: a static string, never NULL.
 * Errors: none.
 */
BGA_EXTERN const char *bga_lock_kind_name(enum bga_lock_kind kind);

/* Slot index of `key`: key & (nslots - 1). */
static inline uint32_t bga_locktab_slot(const struct bga_locktab *t, uint64_t key)
{
	return (uint32_t)(key & (uint64_t)(bga_locktab_nslots(t) - 1));
}

/*
 * Take the lock of key's slot, waiting as long as needed.  A thread may
 * hold several slots at once; taking a slot it already holds deadlocks.
 * MCS: a thread holding more than 64 MCS slots at once takes a queue node
 * from the heap for each extra one, and aborts if that allocation fails.
 *
 * Returns: nothing, once the lock is held.
 * Errors: none.
 * Threads: any thread; waits for the slot's holder.
 */
BGA_EXTERN void bga_locktab_lock(struct bga_locktab *t, uint64_t key);

/*
 * Take the lock of key's slot only if it is free right now.
 *
 * Returns: true when taken.
 * Errors: none.
 * Threads: any thread; never waits.
 */
BGA_EXTERN bool bga_locktab_trylock(struct bga_locktab *t, uint64_t key);

/*
 * Release the lock of key's slot.  The caller must hold it.
 *
 * Returns: nothing.
 * Errors: none.
 * Threads: the holder.
 */
BGA_EXTERN void bga_locktab_unlock(struct bga_locktab *t, uint64_t key);

/*
 * Copy one slot's statistics to *out.  Approximate if locks are in use.
 *
 * Returns: 0.
 * Errors:
 *  -EINVAL  t or out is NULL, or slot >= nslots.
 */
BGA_EXTERN int bga_locktab_stats(const struct bga_locktab *t, uint32_t slot, struct bga_lock_stats *out);

/*
 * Sum every slot's statistics into *out.  Approximate if locks are in use.
 *
 * Returns: 0.
 * Errors:
 *  -EINVAL  t or out is NULL.
 */
BGA_EXTERN int bga_locktab_stats_total(const struct bga_locktab *t, struct bga_lock_stats *out);

/*
 * Zero every slot's statistics.  Approximate if locks are in use.
 *
 * Returns: nothing.
 * Errors: none.
 */
BGA_EXTERN void bga_locktab_stats_reset(struct bga_locktab *t);

#ifdef __cplusplus
}
#endif

#endif
