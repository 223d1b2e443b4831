/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_COUNTER_IMPL_H
#define BGA_COUNTER_IMPL_H

/*
 * The per-CPU counter's layout and its lock-free fast paths, inline, for
 * the allocator's hot path (include/bgalloc/counter.h has the contract;
 * counter.c the folds, the flush and the proof that the limited add cannot
 * overshoot).  Every allocation charges the counter and every free gives
 * back, so both are inline
 * (docs/HISTORY.md#what-the-hot-path-inlines-and-skips).
 */

#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include <ck_spinlock.h>

#include <bgalloc/counter.h>

#include "compiler.h"
#include "cpu.h"

/*
 * A slot word packs three things so that one CAS validates all of them:
 *
 *   bits  0..31  the slot's value, an int32 in [-(batch-1), batch-1]
 *   bits 32..62  a generation, bumped each time the slot is unsealed
 *   bit  63      SEALED: a flush (see counter_flush_under_fold_lock) owns the slot
 *
 * The generation exists only for add_limited's fast path: a fast adder that
 * loaded an unsealed word and later CASes it successfully knows that no
 * flush sealed the slot in between (a seal followed by an unseal would
 * otherwise restore the same word: ABA).  31 bits wrap after 2^31 flushes,
 * far more than can happen while one thread sits between its load and its
 * CAS.
 */
#define SLOT_SEALED (1ull << 63)
#define SLOT_GEN_ONE (1ull << 32)
#define SLOT_GEN_MASK (~SLOT_SEALED & ~0xffffffffull)

/*
 * On the rseq path (CTR_PATH_RSEQ) the word holds only the value (bits
 * 32..63 stay 0: the sections store 32 bits) and a flush seals the slot
 * with `rseq_sealed` instead: a section never writes that flag, so its
 * commit cannot undo a seal (with the seal in the word, a section that
 * loaded the word before the seal would store it back unsealed).
 */
struct counter_slot {
	uint64_t word;
	uint32_t rseq_sealed;
	/* The direction of the slot's last fold: +1 (it overflowed upwards),
	 * -1, or 0 before any.  Read and written only by the fold lock's
	 * holder (counter.c, counter_fold_keep_under_fold_lock); atomic
	 * (relaxed) because TSan does not see ck's spinlock as a lock. */
	int32_t fold_dir;
} __attribute__((aligned(BGA_CACHELINE)));

/*
 * Invariants (checked with BGA_ASSERT in BGA_DEBUG builds):
 *   - every slot's value v satisfies |v| <= batch - 1 at every instant,
 *     because values only change by a CAS that checks the bound, or by a
 *     fold or flush that leaves 0 or +-batch/2 (its keep);
 *   - in per-CPU mode total changes only with `lock` held (slots are folded
 *     into it under the lock), so at most one fold is in flight;
 *   - a slot is SEALED (rseq_sealed on CTR_PATH_RSEQ) only while `lock` is
 *     held by a flush;
 *   - on CTR_PATH_RSEQ a slot's word changes only by a committed section
 *     of its CPU or by a flush between its membarrier and its unseal (the
 *     proof is in counter.c's rseq section), and bits 32..63 stay 0;
 *   - once `limited` is set (first add_limited call), total grows only
 *     inside a flush (every slot SEALED) or a checked fold, and
 *     total <= ceiling at every instant: both change only with `lock`
 *     held, the ceiling first when the total is to pass it.  The ceiling
 *     is what add_limited's fast path reads instead of the total (proof
 *     at bga_counter_add_limited); it is written only when the total
 *     passes it or it stops a limited add, halfway to where the fast
 *     path must stop, never by a fold that shrinks the total.
 *
 * `lock` is a leaf of the lock order (lib/base/lockdep.h): nothing else is
 * taken while holding it.
 *
 * Layout: the read-mostly fields share the first line, total and lock the
 * second (they are written together, on folds), the ceiling and `limited`
 * the third (read by every limited add, written rarely), and each slot has
 * its own line, so a per-CPU add touches only its own line.
 */
/*
 * How a per-CPU counter's slots are updated, fixed at create (every thread
 * of the counter must use the same one: a section's plain store would lose
 * a concurrent CAS on the same slot):
 *   CTR_PATH_RSEQ    restartable sequences (counter_rseq.h); a thread
 *                    without an rseq area, or on a CPU without a slot, adds
 *                    under the lock instead (counter.c);
 *   CTR_PATH_CAS     a CAS on the slot word (valgrind, glibc.pthread.rseq=0,
 *                    no membarrier, TSan builds, other architectures);
 *   CTR_PATH_ATOMIC  BGA_COUNTER_ATOMIC: no slots.
 */
enum counter_path { CTR_PATH_RSEQ = 0, CTR_PATH_CAS = 1, CTR_PATH_ATOMIC = 2 };

struct bga_counter {
	enum bga_counter_mode mode;
	int32_t batch;
	unsigned nslots;
	enum counter_path path;
	int64_t bound;
	ptrdiff_t rseq_off; /* __rseq_offset, copied at create (CTR_PATH_RSEQ) */
	int64_t slot_max;   /* batch - 1: the most a slot may hold, either sign */
	uint64_t slot_span; /* 2 * slot_max, for the sections' one-compare bound */

	struct {
		int64_t total;
		ck_spinlock_fas_t lock;
	} __attribute__((aligned(BGA_CACHELINE)));

	/* Read by every limited add, written about log2(limit / batch)
	 * times over a fill (counter.c, counter_ceiling_move_under_fold_lock). */
	struct {
		int64_t ceiling;
		bool limited;
	} __attribute__((aligned(BGA_CACHELINE)));

	struct counter_slot slots[];
};

#include "counter_rseq.h" /* reads struct bga_counter's fields by offset */

static inline int32_t counter_slot_value(uint64_t w)
{
	return (int32_t)(uint32_t)w;
}

static inline uint64_t counter_slot_with(uint64_t w, int64_t v)
{
	return (w & ~0xffffffffull) | (uint32_t)(int32_t)v;
}

static inline int64_t counter_total_load(const struct bga_counter *c)
{
	return __atomic_load_n(&c->total, __ATOMIC_SEQ_CST);
}

static inline int64_t counter_ceiling_load(const struct bga_counter *c)
{
	return __atomic_load_n(&c->ceiling, __ATOMIC_SEQ_CST);
}

/* The slot of CPU `cpu` (a bga__cpu_hint() the caller looked up). */
static inline struct counter_slot *counter_slot_on(struct bga_counter *c, unsigned cpu)
{
	/* nslots == bga__cpu_count() (_SC_NPROCESSORS_CONF), and every id
	 * below that is a real slot; the compare is only for a kernel cpu_id
	 * past it (CPUs hot-added beyond the configured set). */
	if (bga_unlikely(cpu >= c->nslots))
		cpu %= c->nslots;
	return &c->slots[cpu];
}

static inline struct counter_slot *counter_my_slot(struct bga_counter *c)
{
	return counter_slot_on(c, bga__cpu_hint());
}

/*
 * bga_counter_add's per-CPU fast path: true when delta went into this
 * CPU's slot.  False (nothing changed) in atomic mode, and when the slot
 * is sealed or would reach +-batch: then the caller folds.
 *
 * A CAS rather than a fetch_add: fetch_add cannot refuse, so k threads
 * sharing a slot (after migration, or under the hash source) could each
 * push it up to batch past the fold point before anyone folds, and no
 * bound independent of the thread count would hold.  On the slot's own
 * line a CAS costs the same lock-prefixed instruction as fetch_add.
 * On CTR_PATH_RSEQ the same check and store run as one restartable
 * sequence instead, with no lock prefix (counter_rseq.h); false there also
 * when this thread has no rseq, and the slow path takes the lock.
 */
static inline bool bga__counter_add_fast(struct bga_counter *c, int64_t delta)
{
	if (bga_likely(c->path == CTR_PATH_RSEQ))
		return ctr_rseq_add(c, delta) == CTR_RSEQ_OK;
	if (bga_unlikely(c->path != CTR_PATH_CAS))
		return false;
	struct counter_slot *s = counter_my_slot(c);
	uint64_t w = __atomic_load_n(&s->word, __ATOMIC_RELAXED);
	int64_t nv;
	do {
		nv = counter_slot_value(w) + delta;
		/* |nv| <= slot_max as one unsigned compare, as the rseq
		 * section does (wrapping is defined on uint64_t, and any nv
		 * outside the range lands above slot_span). */
		if (bga_unlikely((w & SLOT_SEALED) || (uint64_t)nv + (uint64_t)c->slot_max > c->slot_span))
			return false;
	} while (!__atomic_compare_exchange_n(&s->word, &w, counter_slot_with(w, nv), true,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return true;
}

/* The atomic mode's limited add: one CAS loop on the total, exact. */
static inline int counter_atomic_add_limited(struct bga_counter *c, int64_t delta, int64_t limit)
{
	int64_t cur = __atomic_load_n(&c->total, __ATOMIC_RELAXED), next;
	do {
		if (__builtin_add_overflow(cur, delta, &next) || next > limit)
			return -ENOSPC;
	} while (!__atomic_compare_exchange_n(&c->total, &cur, next, true, __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED));
	return 0;
}

/* The CAS path's limited add on slot s (the proof's step (3): the
 * ceiling, not the total, so that folds' writes of the total do not move
 * its line to every limited adder). */
static inline bool counter_cas_add_limited(struct bga_counter *c, struct counter_slot *s, int64_t delta, int64_t headroom)
{
	uint64_t w = __atomic_load_n(&s->word, __ATOMIC_SEQ_CST);
	while (!(w & SLOT_SEALED) && counter_slot_value(w) + delta < c->batch &&
	       counter_ceiling_load(c) <= headroom) {
		if (__atomic_compare_exchange_n(&s->word, &w,
						counter_slot_with(w, counter_slot_value(w) + delta), false,
						__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			return true;
	}
	return false;
}

/*
 * The per-CPU limited add's conditions before any slot is read: 0 < delta
 * < batch, the counter in limited use, and *headroom = limit - bound - delta
 * (what the ceiling may be for the add to be safe) representable.
 */
static inline bool counter_limited_headroom(struct bga_counter *c, int64_t delta, int64_t limit, int64_t *headroom)
{
	return bga_likely(delta > 0 && delta < c->batch && __atomic_load_n(&c->limited, __ATOMIC_ACQUIRE) &&
			  !__builtin_sub_overflow(limit, c->bound + delta, headroom));
}

/*
 * bga_counter_add_limited's per-CPU fast path, for 0 < delta < batch once
 * the counter is in limited use: true when delta went into this CPU's
 * slot, which is safe while ceiling + bound + delta <= limit (the proof is
 * at bga_counter_add_limited; for the rseq section, (e) of counter.c's
 * rseq part).  False (nothing changed) otherwise: then
 * the caller decides exactly.  In atomic mode it is the whole limited
 * add (exact), for 0 < delta.  The path alone tells the mode
 * (CTR_PATH_ATOMIC iff BGA_COUNTER_ATOMIC).
 */
static inline bool bga__counter_add_limited_fast(struct bga_counter *c, int64_t delta, int64_t limit)
{
	int64_t headroom;
	if (bga_unlikely(c->path == CTR_PATH_ATOMIC))
		return delta > 0 && counter_atomic_add_limited(c, delta, limit) == 0;
	if (!counter_limited_headroom(c, delta, limit, &headroom))
		return false;
	if (bga_likely(c->path == CTR_PATH_RSEQ))
		return ctr_rseq_add_limited(c, delta, headroom) == CTR_RSEQ_OK;
	return counter_cas_add_limited(c, counter_my_slot(c), delta, headroom);
}

/*
 * The same with the caller's bga__cpu_hint() as `cpu`, used on the CAS
 * path only (the rseq section reads the id itself): a caller that needs
 * the id anyway looks it up once.
 */
static inline bool bga__counter_add_limited_fast_on(struct bga_counter *c, unsigned cpu, int64_t delta,
						    int64_t limit)
{
	int64_t headroom;
	if (bga_unlikely(c->path == CTR_PATH_ATOMIC))
		return delta > 0 && counter_atomic_add_limited(c, delta, limit) == 0;
	if (!counter_limited_headroom(c, delta, limit, &headroom))
		return false;
	if (bga_likely(c->path == CTR_PATH_RSEQ))
		return ctr_rseq_add_limited(c, delta, headroom) == CTR_RSEQ_OK;
	return counter_cas_add_limited(c, counter_slot_on(c, cpu), delta, headroom);
}

/* bga_counter_create, with `rseq` false forcing the CAS path (tests and
 * benchmarks compare the two in one process). */
int bga__counter_create_on(struct bga_counter **out, int64_t initial, int32_t batch,
			   enum bga_counter_mode mode, bool rseq);

/* The whole of bga_counter_add and bga_counter_add_limited, with the
 * fast path inline. */
static inline void bga__counter_add(struct bga_counter *c, int64_t delta)
{
	if (!bga__counter_add_fast(c, delta))
		bga_counter_add(c, delta);
}

static inline int bga__counter_add_limited(struct bga_counter *c, int64_t delta, int64_t limit)
{
	if (bga_likely(bga__counter_add_limited_fast(c, delta, limit)))
		return 0;
	return bga_counter_add_limited(c, delta, limit);
}

#ifdef BGA_DEBUG
/*
 * Tests only (BGA_DEBUG builds): when set, called by a CAS-path fold
 * between its read of the calling CPU's slot and its exchange of that
 * slot for its keep (0, or batch/2: counter.c's hysteresis), with the
 * fold lock held, so that a test can make a lock-free add land on the
 * slot exactly there (test_counter.c, fold_races_an_add).  The fold must then keep the add: an exchange
 * that failed is retried.  The hook must not take the fold lock.
 */
extern void (*bga__counter_fold_hook)(struct bga_counter *c);
#define BGA_COUNTER_FOLD_HOOK(c)                                                                                       \
	do {                                                                                                           \
		if (bga__counter_fold_hook)                                                                            \
			bga__counter_fold_hook(c);                                                                     \
	} while (0)
/*
 * Tests only: called, with the fold lock held, right before every store
 * of the total (with the value about to be stored; the ceiling is already
 * what it will be) and right before every store of the ceiling (with its
 * new value), so that a test can check T <= U at those instants and count
 * the ceiling's writes.  Neither may take the fold lock.
 */
extern void (*bga__counter_total_hook)(struct bga_counter *c, int64_t total);
extern void (*bga__counter_ceiling_hook)(struct bga_counter *c, int64_t ceiling);
#define BGA_COUNTER_TOTAL_HOOK(c, v)                                                                                   \
	do {                                                                                                           \
		if (bga__counter_total_hook)                                                                           \
			bga__counter_total_hook(c, v);                                                                 \
	} while (0)
#define BGA_COUNTER_CEILING_HOOK(c, u)                                                                                 \
	do {                                                                                                           \
		if (bga__counter_ceiling_hook)                                                                         \
			bga__counter_ceiling_hook(c, u);                                                               \
	} while (0)
#else
#define BGA_COUNTER_FOLD_HOOK(c) ((void)0)
#define BGA_COUNTER_TOTAL_HOOK(c, v) ((void)0)
#define BGA_COUNTER_CEILING_HOOK(c, u) ((void)0)
#endif

/* counter_rseq.c: whether a counter created now can take the rseq path
 * (this process can run the sections, and so can the creating thread),
 * and the fence that stops every section of the process (the proof at
 * "the rseq path" in counter.c, (M)); it aborts if the kernel refuses. */
bool bga__counter_rseq_usable(void);
void bga__counter_stop_adders(void);

#endif
