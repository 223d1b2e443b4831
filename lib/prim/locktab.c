/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Hashed lock table.  See include/bgalloc/locktab.h for the contract.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ck_backoff.h>
#include <ck_pr.h>
#include <ck_spinlock.h>

#include <bgalloc/locktab.h>

#include "compiler.h"
#include "locktab_impl.h"

/*
 * The default kind, chosen on a measurement of every kind contended
 * (bga-lab, tools/lab/lab_lock.c; BENCHMARKS.md#locks).  fas is the only
 * kind that stays in the tens of millions at 64 threads on 2 vCPUs (a
 * preempted holder costs the others one bounded spin and a yield, not a
 * time slice, and unlock stays a plain store), so it is the default.
 * Ticket and MCS hand the lock to one particular waiter, which is usually
 * descheduled here.
 */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BGA_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(BGA_TSAN)
/* ThreadSanitizer cannot see Concurrency Kit's inline-asm spinlocks, so it
 * would report every access they protect; it understands pthread mutexes. */
#define BGA_LOCK_KIND_DEFAULT BGA_LOCK_MUTEX
#else
#define BGA_LOCK_KIND_DEFAULT BGA_LOCK_FAS
#endif

#define LOCKTAB_MAX_SLOTS (1u << 20)

/*
 * The fas slow path.  Exponential backoff (ck_backoff_eb) from FAS_BACKOFF_MIN
 * pause-free iterations; once the ceiling is passed (about 16k iterations in
 * all, a few microseconds, far longer than any critical section the
 * allocator has) the holder is presumed descheduled and we yield so it can
 * run.  After FAS_YIELDS fruitless yields the holder is presumed blocked,
 * and short sleeps stop us from burning a vCPU it may need.
 */
#define FAS_BACKOFF_MIN 32u
#define FAS_BACKOFF_MAX 8192u
#define FAS_YIELDS 64u
#define FAS_SLEEP_NS 50000L

/*
 * MCS needs a queue node per acquisition that lives until the unlock.
 * Unlock is by key and a thread may hold several slots at once, so each
 * thread owns a small pool; the node in use is remembered in the slot
 * (slot->mcs_holder), which only the holder reads or writes.
 */
#define MCS_POOL_NODES 64

struct mcs_pool {
	uint64_t used; /* bit i: node[i] is in use */
	struct ck_spinlock_mcs node[MCS_POOL_NODES];
};

static __thread struct mcs_pool mcs_pool;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint32_t auto_nslots(void)
{
	/*
	 * Not bga__cpu_count(): this primitive stands alone.  Configured
	 * rather than online CPUs, so the size does not depend on hotplug.
	 */
	long n = sysconf(_SC_NPROCESSORS_CONF);
	unsigned c = n < 1 ? 1u : n > 32 ? 32u : (unsigned)n;

	return 4u << (31 - __builtin_clz(c));
}

int bga_locktab_create(struct bga_locktab **out, uint32_t nslots, enum bga_lock_kind kind)
{
	struct bga_locktab *t;
	pthread_mutexattr_t attr;
	void *mem;
	uint32_t i;

	if (!out)
		return -EINVAL;
	if (nslots == 0)
		nslots = auto_nslots();
	if (nslots > LOCKTAB_MAX_SLOTS || (nslots & (nslots - 1)) != 0)
		return -EINVAL;
	if (kind == BGA_LOCK_DEFAULT)
		kind = BGA_LOCK_KIND_DEFAULT;
	if (kind != BGA_LOCK_FAS && kind != BGA_LOCK_TICKET && kind != BGA_LOCK_MCS &&
	    kind != BGA_LOCK_MUTEX)
		return -EINVAL;

	t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	if (posix_memalign(&mem, BGA_CACHELINE, (size_t)nslots * sizeof(struct locktab_slot))) {
		free(t);
		return -ENOMEM;
	}
	memset(mem, 0, (size_t)nslots * sizeof(struct locktab_slot));
	t->slots = mem;
	t->mask = nslots - 1;
	t->kind = kind;

	if (kind == BGA_LOCK_MUTEX) {
		pthread_mutexattr_init(&attr);
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
		/* glibc spins a little (tunable glibc.mutex.spin_count) before the futex. */
		pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
	}
	for (i = 0; i < nslots; i++) {
		struct locktab_slot *s = &t->slots[i];

		switch (kind) {
		case BGA_LOCK_FAS:
			ck_spinlock_fas_init(&s->u.fas);
			break;
		case BGA_LOCK_TICKET:
			ck_spinlock_ticket_init(&s->u.ticket);
			break;
		case BGA_LOCK_MCS:
			ck_spinlock_mcs_init(&s->u.mcs);
			break;
		default:
			pthread_mutex_init(&s->u.mutex, &attr);
			break;
		}
	}
	if (kind == BGA_LOCK_MUTEX)
		pthread_mutexattr_destroy(&attr);
	*out = t;
	return 0;
}

void bga_locktab_destroy(struct bga_locktab *t)
{
	uint32_t i;

	if (!t)
		return;
	for (i = 0; i <= t->mask; i++) {
		BGA_ASSERT(t->slots[i].mcs_holder == NULL);
		if (t->kind == BGA_LOCK_MUTEX)
			pthread_mutex_destroy(&t->slots[i].u.mutex);
	}
	free(t->slots);
	free(t);
}

uint32_t bga_locktab_nslots(const struct bga_locktab *t)
{
	return t->mask + 1;
}

enum bga_lock_kind bga_locktab_kind(const struct bga_locktab *t)
{
	return t->kind;
}

const char *bga_lock_kind_name(enum bga_lock_kind kind)
{
	switch (kind) {
	case BGA_LOCK_DEFAULT:
		return "default";
	case BGA_LOCK_FAS:
		return "fas";
	case BGA_LOCK_TICKET:
		return "ticket";
	case BGA_LOCK_MCS:
		return "mcs";
	case BGA_LOCK_MUTEX:
		return "mutex";
	}
	return "unknown";
}

static struct ck_spinlock_mcs *mcs_node_get(void)
{
	struct ck_spinlock_mcs *node;
	uint64_t avail = ~mcs_pool.used;

	if (bga_likely(avail != 0)) {
		unsigned i = (unsigned)__builtin_ctzll(avail);

		mcs_pool.used |= 1ull << i;
		return &mcs_pool.node[i];
	}
	/* More than MCS_POOL_NODES slots held by one thread: rare, so the heap. */
	node = malloc(sizeof(*node));
	if (!node) {
		fprintf(stderr, "bgalloc: locktab: out of memory for an MCS queue node\n");
		abort();
	}
	return node;
}

static void mcs_node_put(struct ck_spinlock_mcs *node)
{
	uintptr_t base = (uintptr_t)&mcs_pool.node[0];
	uintptr_t p = (uintptr_t)node;

	if (p >= base && p < base + sizeof(mcs_pool.node)) {
		unsigned i = (unsigned)((p - base) / sizeof(*node));

		BGA_ASSERT(mcs_pool.used & (1ull << i));
		mcs_pool.used &= ~(1ull << i);
	} else {
		free(node);
	}
}

#ifdef BGA_DEBUG
bool bga__locktab_thread_idle(char *why, size_t n)
{
	if (mcs_pool.used == 0)
		return true;
	snprintf(why, n, "locktab: %d MCS queue nodes of this thread's pool in use (mask %#llx)",
		 __builtin_popcountll(mcs_pool.used), (unsigned long long)mcs_pool.used);
	return false;
}
#endif

static bool slot_trylock(struct locktab_slot *s, enum bga_lock_kind kind)
{
	struct ck_spinlock_mcs *node;

	switch (kind) {
	case BGA_LOCK_FAS:
		return ck_spinlock_fas_trylock(&s->u.fas);
	case BGA_LOCK_TICKET:
		return ck_spinlock_ticket_trylock(&s->u.ticket);
	case BGA_LOCK_MCS:
		node = mcs_node_get();
		if (!ck_spinlock_mcs_trylock(&s->u.mcs, node)) {
			mcs_node_put(node);
			return false;
		}
		s->mcs_holder = node;
		return true;
	default:
		return pthread_mutex_trylock(&s->u.mutex) == 0;
	}
}

static void fas_lock_slow(ck_spinlock_fas_t *l)
{
	ck_backoff_t backoff = FAS_BACKOFF_MIN;
	unsigned yields = 0;
	struct timespec nap = {0, FAS_SLEEP_NS};

	for (;;) {
		/* Test before test-and-set: spin on a shared line, not a bouncing one. */
		if (!ck_spinlock_fas_locked(l) && ck_spinlock_fas_trylock(l))
			return;
		if (backoff <= FAS_BACKOFF_MAX) {
			ck_pr_stall();
			ck_backoff_eb(&backoff);
		} else if (yields < FAS_YIELDS) {
			yields++;
			sched_yield();
		} else {
			nanosleep(&nap, NULL);
		}
	}
}

static void slot_lock_contended(struct locktab_slot *s, enum bga_lock_kind kind)
{
	struct ck_spinlock_mcs *node;

	switch (kind) {
	case BGA_LOCK_FAS:
		fas_lock_slow(&s->u.fas);
		break;
	case BGA_LOCK_TICKET:
		ck_spinlock_ticket_lock(&s->u.ticket);
		break;
	case BGA_LOCK_MCS:
		node = mcs_node_get();
		ck_spinlock_mcs_lock(&s->u.mcs, node);
		s->mcs_holder = node;
		break;
	default:
		pthread_mutex_lock(&s->u.mutex);
		break;
	}
}


/*
 * The slow paths of locktab_impl.h's inline lock, trylock and unlock: any
 * kind but fas, and a fas lock that the inline path found held (it is not
 * tried again here: that would be one more exchange on a line another CPU
 * owns).
 */
void bga__locktab_lock_slow(struct bga_locktab *t, struct locktab_slot *s)
{
	uint64_t start;

	/* Try first: the clock is read only when the lock is found held. */
	if (t->kind != BGA_LOCK_FAS && bga_likely(slot_trylock(s, t->kind))) {
		bga__locktab_stat_add(&s->acquisitions, 1);
		return;
	}
	start = now_ns();
	slot_lock_contended(s, t->kind);
	bga__locktab_stat_add(&s->acquisitions, 1);
	bga__locktab_stat_add(&s->contended, 1);
	bga__locktab_stat_add(&s->wait_ns, now_ns() - start);
}

bool bga__locktab_trylock_slow(struct bga_locktab *t, struct locktab_slot *s)
{
	if (slot_trylock(s, t->kind)) {
		bga__locktab_stat_add(&s->acquisitions, 1);
		return true;
	}
	ck_pr_inc_64(&s->try_failed);
	return false;
}

void bga__locktab_unlock_slow(struct bga_locktab *t, struct locktab_slot *s)
{
	struct ck_spinlock_mcs *node;

	BGA_ASSERT(t->kind != BGA_LOCK_FAS); /* unlocked inline */
	switch (t->kind) {
	case BGA_LOCK_TICKET:
		BGA_ASSERT(ck_spinlock_ticket_locked(&s->u.ticket));
		ck_spinlock_ticket_unlock(&s->u.ticket);
		break;
	case BGA_LOCK_MCS:
		node = s->mcs_holder;
		BGA_ASSERT(node != NULL);
		s->mcs_holder = NULL;
		ck_spinlock_mcs_unlock(&s->u.mcs, node);
		/* Safe to reuse now: the successor no longer touches our node. */
		mcs_node_put(node);
		break;
	default:
		pthread_mutex_unlock(&s->u.mutex);
		break;
	}
}

void bga_locktab_lock(struct bga_locktab *t, uint64_t key)
{
	bga__locktab_lock(t, key);
}

bool bga_locktab_trylock(struct bga_locktab *t, uint64_t key)
{
	return bga__locktab_trylock(t, key);
}

void bga_locktab_unlock(struct bga_locktab *t, uint64_t key)
{
	bga__locktab_unlock(t, key);
}

int bga_locktab_stats(const struct bga_locktab *t, uint32_t slot, struct bga_lock_stats *out)
{
	const struct locktab_slot *s;

	if (!t || !out || slot > t->mask)
		return -EINVAL;
	s = &t->slots[slot];
	out->acquisitions = ck_pr_load_64(&s->acquisitions);
	out->contended = ck_pr_load_64(&s->contended);
	out->wait_ns = ck_pr_load_64(&s->wait_ns);
	out->try_failed = ck_pr_load_64(&s->try_failed);
	return 0;
}

int bga_locktab_stats_total(const struct bga_locktab *t, struct bga_lock_stats *out)
{
	struct bga_lock_stats one;
	uint32_t i;

	if (!t || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	for (i = 0; i <= t->mask; i++) {
		bga_locktab_stats(t, i, &one);
		out->acquisitions += one.acquisitions;
		out->contended += one.contended;
		out->wait_ns += one.wait_ns;
		out->try_failed += one.try_failed;
	}
	return 0;
}

void bga_locktab_stats_reset(struct bga_locktab *t)
{
	uint32_t i;

	for (i = 0; i <= t->mask; i++) {
		struct locktab_slot *s = &t->slots[i];

		ck_pr_store_64(&s->acquisitions, 0);
		ck_pr_store_64(&s->contended, 0);
		ck_pr_store_64(&s->wait_ns, 0);
		ck_pr_store_64(&s->try_failed, 0);
	}
}
