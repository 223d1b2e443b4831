// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Per-CPU approximate counter.  Contract in <bgalloc/counter.h>.
 */
#define _GNU_SOURCE
#include <bgalloc/counter.h>

#include <ck_pr.h>
#include <ck_spinlock.h>
#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compiler.h"
#include "counter_impl.h"
#include "cpu.h"

/*
 * The lock is held for a few dozen nanoseconds, but the benchmarks run up
 * to 64 threads on 2 vCPUs, where a holder can be descheduled: spin a
 * little (the common, short case), then yield the CPU instead of burning
 * the holder's time slice.
 */
static void counter_lock(struct bga_counter *c)
{
	unsigned spins = 0;

	while (!ck_spinlock_fas_trylock(&c->lock)) {
		do {
			if (++spins < 256) {
				ck_pr_stall();
			} else {
				sched_yield();
				spins = 0;
			}
		} while (ck_spinlock_fas_locked(&c->lock));
	}
}

static void counter_unlock(struct bga_counter *c)
{
	ck_spinlock_fas_unlock(&c->lock);
}

#ifdef BGA_DEBUG
void (*bga__counter_fold_hook)(struct bga_counter *c);
void (*bga__counter_total_hook)(struct bga_counter *c, int64_t total);
void (*bga__counter_ceiling_hook)(struct bga_counter *c, int64_t ceiling);
#endif

static inline void ceiling_store_under_fold_lock(struct bga_counter *c, int64_t u)
{
	BGA_ASSERT(ck_spinlock_fas_locked(&c->lock));
	BGA_ASSERT(u >= __atomic_load_n(&c->total, __ATOMIC_RELAXED));
	BGA_COUNTER_CEILING_HOOK(c, u);
	__atomic_store_n(&c->ceiling, u, __ATOMIC_SEQ_CST);
}

/* The store of the total itself, once the ceiling bounds v. */
static inline void total_set_under_fold_lock(struct bga_counter *c, int64_t v)
{
	BGA_ASSERT(ck_spinlock_fas_locked(&c->lock));
	BGA_ASSERT(!__atomic_load_n(&c->limited, __ATOMIC_RELAXED) || v <= __atomic_load_n(&c->ceiling, __ATOMIC_RELAXED));
	BGA_COUNTER_TOTAL_HOOK(c, v);
	__atomic_store_n(&c->total, v, __ATOMIC_SEQ_CST);
}

/*
 * A store of the total by a path that does not know the limit (plain
 * folds and flushes).  Once `limited` is set the ceiling rises to v first
 * when v is above it, so that T <= U at every instant (counter_impl.h):
 * exactly to v, as nothing says how far the fast path may go.
 */
static inline void total_store_under_fold_lock(struct bga_counter *c, int64_t v)
{
	if (__atomic_load_n(&c->limited, __ATOMIC_RELAXED) && v > __atomic_load_n(&c->ceiling, __ATOMIC_RELAXED))
		ceiling_store_under_fold_lock(c, v);
	total_set_under_fold_lock(c, v);
}

/*
 * A ceiling for the total t: halfway from t to where the fast path must
 * stop for this limit (limit - bound: past it no add fits),
 * t + (limit - bound - t) / 2, without overflow.  With t at or past the
 * stop the fast path refuses whatever the ceiling is, and every limited
 * add then takes the lock: max(t, limit), so that those adds do not
 * write the ceiling again until the total passes the limit.
 */
static int64_t counter_ceiling_halfway(const struct bga_counter *c, int64_t t, int64_t limit)
{
	int64_t stop;

	if (__builtin_sub_overflow(limit, c->bound, &stop) || stop <= t)
		return BGA_MAX(t, limit);
	return t + (int64_t)(((uint64_t)stop - (uint64_t)t) / 2);
}

/*
 * The ceiling, now u, for a total about to become v, from a limited add
 * under `limit` (a checked fold or a checked flush), under the lock and
 * before the total's store; called when v is above u or u stops this
 * add's fast path (U + bound + delta > limit).  Written when it must be
 * (v above it) or when a lower one would let that add through: so a fill
 * writes it about log2(limit / batch) times, each time halfway to the
 * stop, and a free never does (U stays above a shrinking total; the next
 * limited add that U stops lowers it).  Not below the current total
 * either, which stands until the store.
 */
static __attribute__((noinline)) void counter_ceiling_move_under_fold_lock(struct bga_counter *c, int64_t v,
									    int64_t limit, int64_t u)
{
	int64_t want = BGA_MAX(counter_ceiling_halfway(c, v, limit), __atomic_load_n(&c->total, __ATOMIC_RELAXED));

	BGA_ASSERT(__atomic_load_n(&c->limited, __ATOMIC_RELAXED));
	if (v > u || want < u)
		ceiling_store_under_fold_lock(c, want);
}

/*
 * A store of the total v by a limited add of delta under `limit` (a
 * checked fold or a checked flush), headroom = limit - bound - delta
 * (INT64_MIN where that is below INT64_MIN): the ceiling first, as
 * counter_ceiling_move_under_fold_lock says, when v is above it or it
 * stops this add's fast path (above headroom); inline, the common case of
 * a ceiling that stands.
 */
static inline __attribute__((always_inline)) void
total_store_checked_under_fold_lock(struct bga_counter *c, int64_t v, int64_t limit, int64_t headroom)
{
	int64_t u = __atomic_load_n(&c->ceiling, __ATOMIC_RELAXED);

	if (bga_unlikely(v > u || u > headroom))
		counter_ceiling_move_under_fold_lock(c, v, limit, u);
	total_set_under_fold_lock(c, v);
}

/*
 * The total a flush's single store leaves: v, the ceiling moved first as
 * the store needs (a checked flush, by its limited add's headroom; a plain
 * one, to v alone).
 */
static void flush_total_store_under_fold_lock(struct bga_counter *c, int64_t v, bool check, int64_t delta,
					      int64_t limit)
{
	int64_t h;

	if (!check) {
		total_store_under_fold_lock(c, v);
		return;
	}
	if (__builtin_sub_overflow(limit, c->bound, &h) || __builtin_sub_overflow(h, delta, &h))
		h = INT64_MIN; /* below any ceiling: the move decides */
	total_store_checked_under_fold_lock(c, v, limit, h);
}

/*
 * The fold's hysteresis: what a fold of slot s that overflowed towards
 * dir (+1 upwards, -1 downwards) leaves in the slot, the rest going to
 * the total.  batch/2 towards dir when the slot's last fold went the
 * other way, else 0.  So a CPU whose count goes up and down by less than
 * 1.5 batch at a time (a writer that fills a file, then deletes one as
 * large) folds twice and then no more: with the slot left at -batch/2 it
 * has 1.5 batch of room upwards and batch/2 back, every fold of a
 * sawtooth moving the lock's and the total's lines
 * (BENCHMARKS.md#the-model-of-n-cores).  A stream that only grows (a
 * fill, a count of events) folds every batch as before: its last fold
 * went its own way.  The keep is a slot value like any other, at most
 * batch/2 <= batch - 1 in magnitude, so the error bound stands.
 */
static inline int64_t counter_fold_keep_under_fold_lock(struct bga_counter *c, const struct counter_slot *s,
							  int dir)
{
	BGA_ASSERT(ck_spinlock_fas_locked(&c->lock));
	return __atomic_load_n(&s->fold_dir, __ATOMIC_RELAXED) == -dir ? dir * (int64_t)(c->batch / 2) : 0;
}

/* The fold of s towards dir happened (its keep is in the slot). */
static inline void counter_fold_done_under_fold_lock(struct counter_slot *s, int dir)
{
	__atomic_store_n(&s->fold_dir, dir, __ATOMIC_RELAXED);
}

int bga_counter_create(struct bga_counter **out, int64_t initial, int32_t batch,
		       enum bga_counter_mode mode)
{
	if (mode == BGA_COUNTER_PERCPU_CAS)
		return bga__counter_create_on(out, initial, batch, BGA_COUNTER_PERCPU, false);
	return bga__counter_create_on(out, initial, batch, mode, true);
}

int bga__counter_create_on(struct bga_counter **out, int64_t initial, int32_t batch,
			   enum bga_counter_mode mode, bool rseq)
{
	struct bga_counter *c;
	unsigned ncpus, nslots;
	size_t size;

	if (!out || batch < 0 || (mode != BGA_COUNTER_PERCPU && mode != BGA_COUNTER_ATOMIC))
		return -EINVAL;
	ncpus = bga__cpu_count();
	if (batch == 0)
		batch = (int32_t)BGA_MAX(32u, BGA_MIN(2u * ncpus, (unsigned)INT32_MAX));
	nslots = mode == BGA_COUNTER_PERCPU ? ncpus : 0;
	size = sizeof(*c) + (size_t)nslots * sizeof(struct counter_slot);
	c = aligned_alloc(BGA_CACHELINE, (size + BGA_CACHELINE - 1) & ~(size_t)(BGA_CACHELINE - 1));
	if (!c)
		return -ENOMEM;
	memset(c, 0, size);
	c->mode = mode;
	c->batch = batch;
	c->nslots = nslots;
	/*
	 * Every slot holds at most batch-1 in magnitude, and one more batch-1
	 * can be "in flight": taken out of a slot by a fold that has not yet
	 * reached total.  See bga_counter_error_bound() in the header.
	 */
	c->bound = mode == BGA_COUNTER_PERCPU ? ((int64_t)nslots + 1) * (batch - 1) : 0;
	c->slot_max = batch - 1;
	c->slot_span = 2 * (uint64_t)(batch - 1);
	c->total = initial;
	c->path = mode == BGA_COUNTER_ATOMIC ? CTR_PATH_ATOMIC
		  : rseq && bga__counter_rseq_usable() ? CTR_PATH_RSEQ
						   : CTR_PATH_CAS;
	c->rseq_off = c->path == CTR_PATH_RSEQ ? __rseq_offset : 0;
	ck_spinlock_fas_init(&c->lock);
	*out = c;
	return 0;
}

void bga_counter_destroy(struct bga_counter *c)
{
	free(c);
}

/*
 * Seal every slot, move all of them and `delta` into total, unseal.  While
 * a slot is sealed every CAS on it fails, so adders targeting it wait for
 * the lock, and the exact value total + sum(sealed values) cannot move
 * under us except by plain lock-free adds on not-yet-sealed slots, which
 * the seal then picks up.  Returns the exact value before `delta`.
 *
 * `limit` is checked on the exact value: with check, delta is added only
 * if value + delta <= limit, and *added tells which.  The slots are emptied
 * either way, which is harmless and keeps the code to one path.
 *
 * Cost: two atomics per slot, on lines that other CPUs own.  It runs only
 * when total has to grow in a counter used with add_limited, i.e. about
 * once per `batch` of positive adds per CPU, or near the limit.
 */
static int64_t counter_rseq_flush_under_fold_lock(struct bga_counter *c, int64_t delta, bool check,
					 int64_t limit, bool *added);

static int64_t counter_flush_under_fold_lock(struct bga_counter *c, int64_t delta, bool check,
				    int64_t limit, bool *added)
{
	int64_t value = __atomic_load_n(&c->total, __ATOMIC_RELAXED);
	int64_t next;
	unsigned i;

	if (c->path == CTR_PATH_RSEQ)
		return counter_rseq_flush_under_fold_lock(c, delta, check, limit, added);
	for (i = 0; i < c->nslots; i++) {
		uint64_t old = __atomic_fetch_or(&c->slots[i].word, SLOT_SEALED, __ATOMIC_SEQ_CST);

		BGA_ASSERT(!(old & SLOT_SEALED));
		value += counter_slot_value(old);
	}
	*added = !check || (!__builtin_add_overflow(value, delta, &next) && next <= limit);
	/* One store of the whole result: between the seals and this store the
	 * slots' contents are in neither place, which read()'s bound covers
	 * (a sealed slot takes no adds, so at most nslots*(batch-1) is missing;
	 * the sealed words keep their old values, which nothing reads). */
	flush_total_store_under_fold_lock(c, *added ? value + delta : value, check, delta, limit);
	for (i = 0; i < c->nslots; i++) {
		uint64_t w = __atomic_load_n(&c->slots[i].word, __ATOMIC_RELAXED);

		BGA_ASSERT(w & SLOT_SEALED);
		w = ((w & SLOT_GEN_MASK) + SLOT_GEN_ONE) & SLOT_GEN_MASK;
		__atomic_store_n(&c->slots[i].word, w, __ATOMIC_SEQ_CST);
	}
	return value;
}

/*
 * The add that did not fit its slot: fold the slot into total (or, for a
 * large delta, send the delta to total directly).  Retried under the lock
 * because fast adders keep CASing the slot without it.
 */
static void counter_rseq_add_under_fold_lock(struct bga_counter *c, int64_t delta);

static __attribute__((noinline, cold)) void counter_add_slow(struct bga_counter *c, int64_t delta)
{
	struct counter_slot *s;
	bool added;

	counter_lock(c);
	if (c->path == CTR_PATH_RSEQ) {
		counter_rseq_add_under_fold_lock(c, delta);
		counter_unlock(c);
		return;
	}
	s = counter_my_slot(c);
	for (;;) {
		uint64_t w = __atomic_load_n(&s->word, __ATOMIC_RELAXED);
		int64_t v = counter_slot_value(w), nv = v + delta;

		BGA_ASSERT(!(w & SLOT_SEALED));
		if (nv > -c->batch && nv < c->batch) {
			/* A fold in the meantime made headroom. */
			if (__atomic_compare_exchange_n(&s->word, &w, counter_slot_with(w, nv), false,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED))
				break;
			continue;
		}
		if (nv > 0 && __atomic_load_n(&c->limited, __ATOMIC_RELAXED)) {
			/* total must not grow outside a flush once add_limited
			 * is in use (see the proof at add_limited). */
			counter_flush_under_fold_lock(c, delta, false, 0, &added);
			break;
		}
		/* Fold, the slot left at its keep.  With add_limited in use
		 * nv <= -batch here and the keep >= -batch/2, so total only
		 * shrinks outside a flush. */
		int dir = nv > 0 ? 1 : -1;
		int64_t keep = counter_fold_keep_under_fold_lock(c, s, dir);
		BGA_COUNTER_FOLD_HOOK(c);
		if (__atomic_compare_exchange_n(&s->word, &w, counter_slot_with(w, keep), false,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			counter_fold_done_under_fold_lock(s, dir);
			total_store_under_fold_lock(c, __atomic_load_n(&c->total, __ATOMIC_RELAXED) + nv - keep);
			break;
		}
	}
	counter_unlock(c);
}

void bga_counter_add(struct bga_counter *c, int64_t delta)
{
	if (c->mode == BGA_COUNTER_ATOMIC) {
		__atomic_fetch_add(&c->total, delta, __ATOMIC_RELAXED);
		return;
	}
	if (!bga__counter_add_fast(c, delta))
		counter_add_slow(c, delta);
}

int64_t bga_counter_read(const struct bga_counter *c)
{
	return __atomic_load_n(&c->total, __ATOMIC_RELAXED);
}

int64_t bga_counter_sum(struct bga_counter *c)
{
	int64_t v;
	unsigned i;

	if (c->mode == BGA_COUNTER_ATOMIC)
		return counter_total_load(c);
	counter_lock(c);
	v = __atomic_load_n(&c->total, __ATOMIC_RELAXED);
	for (i = 0; i < c->nslots; i++) {
		uint64_t w = __atomic_load_n(&c->slots[i].word, __ATOMIC_SEQ_CST);

		BGA_ASSERT(!(w & SLOT_SEALED) && !c->slots[i].rseq_sealed);
		BGA_ASSERT(counter_slot_value(w) > -c->batch && counter_slot_value(w) < c->batch);
		v += counter_slot_value(w);
	}
	counter_unlock(c);
	return v;
}

int bga_counter_compare(struct bga_counter *c, int64_t rhs)
{
	int64_t r = bga_counter_read(c), lo, hi, v;

	/* Saturating: near INT64 limits fall back to the exact sum. */
	if (!__builtin_sub_overflow(r, c->bound, &lo) && lo > rhs)
		return 1;
	if (!__builtin_add_overflow(r, c->bound, &hi) && hi < rhs)
		return -1;
	v = bga_counter_sum(c);
	return (v > rhs) - (v < rhs);
}

/*
 * A limited add that did not fit its slot, far from the limit: fold this
 * CPU's slot and delta into the total, under the lock, without sealing the
 * other slots.  Allowed only when T + B + delta <= limit with T read under
 * the lock (only lock holders change T), which is what keeps the fast
 * path sound (proof below).  A flush seals every slot, which moves every
 * other CPU's slot line here; doing that on every batch-th positive add
 * cost 2-thread limited adds most of their speed.  Returns false, with
 * nothing changed, when the check fails: then the caller flushes.
 */
static __attribute__((noinline)) bool counter_fold_checked_under_fold_lock(struct bga_counter *c, int64_t delta,
									       int64_t limit)
{
	int64_t t = __atomic_load_n(&c->total, __ATOMIC_RELAXED), headroom;
	if (__builtin_sub_overflow(limit, c->bound, &headroom) || __builtin_sub_overflow(headroom, delta, &headroom) ||
	    t > headroom)
		return false;
	struct counter_slot *s = counter_my_slot(c);
	uint64_t w = __atomic_load_n(&s->word, __ATOMIC_RELAXED);
	/* An overflow (rather than a ceiling that stopped the fast path)
	 * leaves the slot its keep; on the rseq path the slot read here is a
	 * guess (a thread of this CPU may add before the take, which may run
	 * on another CPU), which only chooses the keep: the take hands back
	 * what it replaced. */
	bool over = counter_slot_value(w) + delta >= c->batch;
	int64_t keep = over ? counter_fold_keep_under_fold_lock(c, s, 1) : 0;
	if (c->path == CTR_PATH_RSEQ) {
		int64_t v;

		/* This CPU's slot (0, and nothing kept, without rseq in this
		 * thread). */
		if (ctr_rseq_take(c, (int32_t)keep, &v) != CTR_RSEQ_OK)
			keep = 0;
		else if (over)
			counter_fold_done_under_fold_lock(s, 1);
		total_store_checked_under_fold_lock(c, t + v + delta - keep, limit, headroom);
		return true;
	}
	/* Seals happen only under the lock, which we hold. */
	BGA_ASSERT(!(w & SLOT_SEALED));
	BGA_COUNTER_FOLD_HOOK(c);
	while (!__atomic_compare_exchange_n(&s->word, &w, counter_slot_with(w, keep), false, __ATOMIC_SEQ_CST,
					    __ATOMIC_RELAXED)) {
		over = counter_slot_value(w) + delta >= c->batch;
		keep = over ? counter_fold_keep_under_fold_lock(c, s, 1) : 0;
	}
	if (over)
		counter_fold_done_under_fold_lock(s, 1);
	/* headroom again (no overflow: checked above) rather than kept live
	 * across the exchange: one register fewer to save in
	 * counter_add_limited_slow, which the CAS path enters on every
	 * limited add */
	total_store_checked_under_fold_lock(c, t + counter_slot_value(w) + delta - keep, limit,
					    limit - c->bound - delta);
	return true;
}

/*
 * Why no limited add overshoots, with any number of concurrent fast-path
 * adders (and plain adds) on any slots.  Let b = batch, B = bound =
 * (nslots+1)*(b-1), V the exact value, T the shared total, U the ceiling,
 * and V = T + (sum of slot values) + (the one fold in flight, if any).
 *
 *  (0) Once `limited` is set, T <= U at every instant: both are stored
 *      only under the lock, U was set >= T before `limited` (under the
 *      lock), and every T store is preceded by a U store when the new T
 *      is above U (total_store_under_fold_lock,
 *      total_store_checked_under_fold_lock), which never sets U below the
 *      T that stands until then or the T about to be stored
 *      (counter_ceiling_move_under_fold_lock; a lowering too).
 *  (1) At every instant V <= T + B: each slot value is within b-1 of 0
 *      (every change to it is a CAS that checks so, a seal that sets 0, or
 *      a fold's exchange that leaves its keep k, |k| <= b/2), and at most
 *      one fold is in flight (folds run under the lock), which took its
 *      slot's old value v out and left k: that slot and the part in flight
 *      together hold v, within b-1 of 0 (the "+ 1" of B is to spare); a
 *      flush moves every slot at once but zeroes them first, so its
 *      in-flight part plus the slots is still at most nslots*(b-1).
 *  (2) Once `limited` is set, T grows only under the lock: in a flush
 *      (which seals every slot before it stores T and unseals after, and
 *      decides on the exact value), or in a checked fold G, which leaves
 *      its own slot (value s_G) at a keep k_G >= 0 (0, or b/2 when the add
 *      overflowed the slot and reversed its last fold) and stores
 *      T = T_G + s_G + d_G - k_G only if T_G + B + d_G <= limit.  After G,
 *      T <= limit - B + s_G - k_G <= limit - nslots*(b-1).  Plain folds
 *      that would grow T flush instead (counter_add_slow); folds of
 *      negative overflow only shrink T (nv <= -b and the keep >= -b/2).
 *  (3) A fast adder F loads its slot word w (unsealed, generation g), then
 *      loads U = u, checks u + B + d <= limit, and CASes w -> w+d.  If the
 *      CAS succeeds, no flush sealed this slot between the load of w and
 *      the CAS (the seal sets SEALED and the unseal bumps g, so the word
 *      differs from w until 2^31 flushes wrap g), and a flush stores T only
 *      while this slot is sealed, so no flush stored T in between.  Right
 *      after F's CAS:
 *       - if no checked fold stored T since F loaded u, T has not grown
 *         since (only shrinking folds stored it), and T <= u at that load
 *         by (0), so by (1) V <= T + B <= u + B <= limit - d;
 *       - if one did, let G be the last: T has not grown since, so
 *         T <= limit - nslots*(b-1) by (2).  With no fold in flight,
 *         V <= T + nslots*(b-1) <= limit; with a checked fold H in flight
 *         (slot at its keep, T not stored yet), T is the T_H that H checked, so
 *         V <= T + B <= limit - d_H.  This case never uses u.
 *      Either way V <= limit at the instant F's delta becomes part of it.
 *      A checked fold itself leaves V <= T + nslots*(b-1) <= limit, and a
 *      flush that sealed F's slot after the CAS counted F's delta in its
 *      exact sum.  Only (0) is new with the ceiling: the fast path reads
 *      U, a line written about log2(limit / batch) times over a fill,
 *      where it read T, which every fold writes; it refuses earlier than
 *      an exact check by U - T, which the halving keeps within half the
 *      room left (after frees more, until a limited add it stops lowers
 *      U), and the checked fold, exact, decides then.
 *
 * The orderings: F's loads are acquire/seq_cst and the CAS is seq_cst, and
 * the flush's seal, U and T stores and unseal and the checked fold's CAS
 * and U and T stores are seq_cst, so "between" above is the single total
 * order of those operations.  The kernel's __percpu_counter_limited_add checks
 * against an unlocked sum and has a window for fast adders; this has none.
 */
static __attribute__((noinline, cold)) int counter_add_limited_slow(struct bga_counter *c, int64_t delta,
								    int64_t limit)
{
	bool added;

	if (delta <= 0) {
		bga_counter_add(c, delta);
		return 0;
	}
	if (c->mode == BGA_COUNTER_ATOMIC)
		return counter_atomic_add_limited(c, delta, limit);
	/* The CAS path's lock-free attempt (the rseq one failed already). */
	if (c->path == CTR_PATH_CAS && bga__counter_add_limited_fast(c, delta, limit))
		return 0;
	if (bga_unlikely(!__atomic_load_n(&c->limited, __ATOMIC_ACQUIRE))) {
		/* First use: set the flag under the lock, so every fold that
		 * grew T without a flush finished before any fast path reads
		 * U, and U bounds T from then on, (0). */
		counter_lock(c);
		if (!__atomic_load_n(&c->limited, __ATOMIC_RELAXED)) {
			int64_t t = __atomic_load_n(&c->total, __ATOMIC_RELAXED);

			/* T <= U from the instant `limited` is set. */
			ceiling_store_under_fold_lock(c, counter_ceiling_halfway(c, t, limit));
			__atomic_store_n(&c->limited, true, __ATOMIC_RELEASE);
		}
		counter_unlock(c);
		if (bga__counter_add_limited_fast(c, delta, limit))
			return 0;
	}
	counter_lock(c);
	added = counter_fold_checked_under_fold_lock(c, delta, limit);
	if (!added)
		counter_flush_under_fold_lock(c, delta, true, limit, &added);
	counter_unlock(c);
	return added ? 0 : -ENOSPC;
}

/*
 * The rseq section first, everything else behind one tail call: inlined
 * together, the other paths made the section's path save and restore
 * three to six registers.  The atomic mode keeps its inline CAS loop, so
 * that the baseline pays no extra call.
 */
int bga_counter_add_limited(struct bga_counter *c, int64_t delta, int64_t limit)
{
	if (bga_likely(c->path == CTR_PATH_RSEQ)) {
		if (bga_likely(bga__counter_add_limited_fast(c, delta, limit)))
			return 0;
	} else if (c->mode == BGA_COUNTER_ATOMIC && delta > 0) {
		return counter_atomic_add_limited(c, delta, limit);
	}
	return counter_add_limited_slow(c, delta, limit);
}

int64_t bga_counter_error_bound(const struct bga_counter *c)
{
	return c->bound;
}

int32_t bga_counter_batch(const struct bga_counter *c)
{
	return c->batch;
}

enum bga_counter_mode bga_counter_mode_of(const struct bga_counter *c)
{
	return c->mode;
}

int bga_counter_uses_rseq(const struct bga_counter *c)
{
	return c->path == CTR_PATH_RSEQ;
}

const char *bga_counter_mode_name(const struct bga_counter *c)
{
	static const char *const names[] = {
		[CTR_PATH_RSEQ] = "percpu-rseq",
		[CTR_PATH_CAS] = "percpu-cas",
		[CTR_PATH_ATOMIC] = "atomic",
	};

	return names[c->path];
}


/* -- the rseq path -------------------------------------------------------- */

/*
 * Why the rseq path keeps every promise of counter.h.  Notation as in the
 * proof at bga_counter_add_limited (b, B, V, T; "fold in flight").  The
 * sections are in counter_rseq.h; what the kernel gives them:
 *
 *  (R) A section that commits ran from its descriptor store to its one
 *      store with no other thread of its CPU running in between and on
 *      one CPU throughout (preemption, migration and signals abort it), so
 *      the cpu_id it read names the CPU it ran on, and two sections on the
 *      same slot never interleave: each is one load-check-store, atomic
 *      with respect to the others, with no locked instruction.
 *  (M) bga__counter_stop_adders() (membarrier PRIVATE_EXPEDITED_RSEQ) aborts
 *      every section running in the process when it is called and is a
 *      barrier on every CPU running one of its threads.  So a section S and
 *      a call M relate one of three ways: S committed before M reached its
 *      CPU, and M's caller sees S's store after M returns; or S was in
 *      progress when M reached its CPU (running, or preempted, which
 *      aborts it anyway), and S does not commit; or S started after M
 *      returned, and S sees everything M's caller stored before M.
 *
 * Who writes a slot on this path: committed sections on the slot's CPU
 * (add, limited add; take only from the lock holder), and a flush (lock
 * holder) between its membarrier and its unseal.  Never a CAS: the path is
 * fixed per counter at create, and a thread whose section reports
 * CTR_RSEQ_NONE (no rseq area, or no slot for its CPU) takes the lock and
 * works on the total (counter_rseq_add_under_fold_lock).
 *
 *  (a) The bound: a section stores only values it checked to be within
 *      b-1 of 0; a take stores its keep (|keep| <= b/2), a flush 0.  By
 *      (R) no other store to the slot falls between a section's load and
 *      its store, so what it checked is what it replaced: |slot| <= b-1
 *      always, and no add is lost.
 *  (b) The flush: it seals every slot (rseq_sealed, a word no section
 *      writes, so no commit can undo it), then calls M.  By (M) each
 *      section on a slot has committed, visibly, or will start after M and
 *      find the slot sealed, storing nothing, until the flush unseals.  So
 *      between M and the unseal the flush is the only writer of the slots:
 *      the sum it reads, with T (only lock holders write T), is the exact
 *      V, and zeroing after reading loses nothing.  The seal in the word
 *      (the CAS path's) would not do: a section that loaded the word before
 *      the seal would commit it back unsealed.  Without M, a section that
 *      loaded v before the seal and stores v+d after the flush read and
 *      zeroed the slot counts v twice: stress_counter's limited runs catch
 *      that (BGA_COUNTER_TEST_SKIP_MEMBARRIER).
 *  (c) The exact sum moves nothing, so it needs no seal or membarrier:
 *      under the lock nothing moves between slots and T, every add that
 *      completed before the call is in a slot or in T, and each slot is
 *      read with one 32-bit load.  Same as the CAS path.
 *  (d) T grows only under the lock, in a flush or a checked fold, once
 *      `limited` is set: counter_rseq_add_under_fold_lock flushes a positive
 *      overflow, flushes when a take leaves a positive amount to fold, and
 *      sends positive deltas of threads without rseq through a flush.
 *      Statement (2) of the CAS proof holds as it stands (a checked fold
 *      leaves its slot its keep with a take section instead of a CAS: the
 *      take hands back the v it replaced, whichever slot it ran on, and
 *      the keep went nowhere when it reports CTR_RSEQ_NONE, when T takes
 *      v + d with no keep subtracted).
 *  (e) The limited fast path: F's section loads its slot's seal (clear),
 *      value v and U = u, checks v+d <= b-1 and u <= limit - B - d, and
 *      commits v+d.  Claim: no flush stores T between F's load of u and
 *      F's commit.  A flush stores T after its seals and its M.  If M
 *      reached F's CPU while F's section ran, F did not commit.  If F's
 *      section started after M, F's seal load came after the seal and
 *      before the flush's T store (it precedes F's load of u), hence before
 *      the unseal, so F saw the seal and did not commit.  Otherwise F
 *      committed before M, so before the T store.  With the claim, with
 *      (0) of the CAS proof (T <= u at F's load of u: the U and T stores
 *      are the same code on both paths), and with (R) for F against a
 *      checked fold's take on the same slot, step (3) of the CAS proof
 *      applies word for word: V <= limit at the instant F's delta becomes
 *      part of it.  The loads in F are in program order (x86 keeps loads
 *      ordered, and the asm is one block), the U and T stores are seq_cst,
 *      and the flush's seal stores are ordered before M by M itself.
 *  (f) The error bound: values leave a slot only under the lock, by a take
 *      (v out, its keep in: v - keep in flight until T is stored, the slot
 *      and that part together v, at most b-1) or by a flush (all slots
 *      at once, in flight until its single T store, at most nslots*(b-1)
 *      plus what a take handed it, at most b-1).  So read() is off by at
 *      most B = (nslots + 1) * (b - 1), as on the CAS path.
 */

/* The total takes `amount` under the lock, keeping (d): a positive amount
 * in a counter in limited use goes through a flush. */
static void counter_rseq_to_total_under_fold_lock(struct bga_counter *c, int64_t amount)
{
	bool added;

	if (amount > 0 && __atomic_load_n(&c->limited, __ATOMIC_RELAXED))
		counter_flush_under_fold_lock(c, amount, false, 0, &added);
	else
		total_store_under_fold_lock(c, __atomic_load_n(&c->total, __ATOMIC_RELAXED) + amount);
}

/* bga_counter_add after its section found the slot full (or this thread
 * has no rseq): try again (other threads of this CPU may have made headroom),
 * else fold this CPU's slot with delta into the total. */
static void counter_rseq_add_under_fold_lock(struct bga_counter *c, int64_t delta)
{
	int64_t v;
	int r = ctr_rseq_add(c, delta);

	if (r == CTR_RSEQ_OK)
		return;
	/* Full and growing: flush delta straight in, (d). */
	if (r == CTR_RSEQ_FULL && delta > 0 && __atomic_load_n(&c->limited, __ATOMIC_RELAXED)) {
		counter_rseq_to_total_under_fold_lock(c, delta);
		return;
	}
	/* The take may run on another CPU than the add did (migration): it
	 * folds whatever that slot holds, which is as good; the slot whose
	 * last fold chooses the keep is then a guess, which only chooses it.
	 * A full slot is left its keep (counter_fold_keep_under_fold_lock);
	 * a thread without rseq takes nothing and keeps nothing. */
	int dir = delta > 0 ? 1 : -1;
	struct counter_slot *s = counter_my_slot(c);
	int64_t keep = r == CTR_RSEQ_FULL ? counter_fold_keep_under_fold_lock(c, s, dir) : 0;
	if (ctr_rseq_take(c, (int32_t)keep, &v) != CTR_RSEQ_OK)
		keep = 0;
	else if (r == CTR_RSEQ_FULL)
		counter_fold_done_under_fold_lock(s, dir);
	counter_rseq_to_total_under_fold_lock(c, v + delta - keep);
}

static int64_t counter_rseq_flush_under_fold_lock(struct bga_counter *c, int64_t delta, bool check,
					 int64_t limit, bool *added)
{
	int64_t value = __atomic_load_n(&c->total, __ATOMIC_RELAXED), next;
	unsigned i;

	for (i = 0; i < c->nslots; i++) {
		BGA_ASSERT(!c->slots[i].rseq_sealed);
		__atomic_store_n(&c->slots[i].rseq_sealed, 1, __ATOMIC_RELAXED);
	}
	bga__counter_stop_adders(); /* (b) */
	for (i = 0; i < c->nslots; i++) {
		uint64_t w = __atomic_load_n(&c->slots[i].word, __ATOMIC_RELAXED);

		BGA_ASSERT(!(w >> 32));
		value += counter_slot_value(w);
		__atomic_store_n(&c->slots[i].word, 0, __ATOMIC_RELAXED);
	}
	*added = !check || (!__builtin_add_overflow(value, delta, &next) && next <= limit);
	flush_total_store_under_fold_lock(c, *added ? value + delta : value, check, delta, limit);
	/* Release: a section that sees the seal clear sees the zeroed slot
	 * and the new total. */
	for (i = 0; i < c->nslots; i++)
		__atomic_store_n(&c->slots[i].rseq_sealed, 0, __ATOMIC_RELEASE);
	return value;
}
