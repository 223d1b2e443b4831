/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Mutual exclusion of a biasing lock table (locktab_impl.h: a slot that
 * one CPU keeps taking is taken by a restartable sequence, and any other
 * taker revokes the bias with a membarrier and waits).
 *
 * Four slots, four threads pinned round-robin to the CPUs.  Each thread
 * takes its own slot (so the slot gets biased to its CPU), and in every
 * other 20 ms phase one time in 64 a random one (so biases get revoked,
 * by threads on the other CPU and by threads on the same one, while their
 * holders run), through every entry point the
 * allocator uses: lock_slot, trylock_slot, trylock_fas (the leaf paths'),
 * and the out-of-line lock.  Inside, it checks that nobody else is inside
 * (an exchange on a flag) and increments the slot's count with a plain
 * load and store spread apart (yielding in between one time in 256),
 * which a second holder would lose.
 *
 * Fails (exit 1) on any overlap, on counts that do not add up to the
 * acquisitions, or, where the table can bias at all, when no slot was
 * ever held by the fast side or no bias was ever revoked (the run would
 * not have tested the protocol), and when no thread gets a lock for 10 s.  A build with BGA_COUNTER_TEST_SKIP_MEMBARRIER
 * (no fence at revocation) must fail here.  Where biasing is unavailable
 * (valgrind, TSan, no rseq) it checks the plain fas table the same way.
 *
 * Usage: stress_bias; BGA_STRESS_SECONDS sets the duration (default 2 s).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <bgalloc/locktab.h>

#include "locktab_impl.h"
#include "stress_time.h"

#define NSLOTS 4
#define NTHREADS 4
#define PHASE_NS (20 * 1000 * 1000)

static struct bga_locktab *tab;
static uint64_t deadline;
static int overlaps;  /* atomic */

static struct {
	int inside;     /* atomic: 1 while someone holds the slot */
	uint64_t count; /* plain: written by holders only */
} __attribute__((aligned(128))) slots[NSLOTS];

struct worker {
	int id;
	uint64_t taken;
	uint64_t fast;
	uint64_t seed;
} __attribute__((aligned(128)));

/* Acquisitions so far, all threads (atomic), and the watchdog that fails
 * the run when they stop for 10 s: a broken exclusion can also leave a
 * slot locked for good (a fas holder that cleared `held` instead of its
 * fas word), which must fail the run, not hang it. */
static uint64_t progress;
static int done; /* atomic: the workers have all returned */

static void *watchdog(void *arg)
{
	(void)arg;
	uint64_t last = 0;
	int idle = 0;
	while (!__atomic_load_n(&done, __ATOMIC_RELAXED)) {
		usleep(100 * 1000);
		uint64_t now = __atomic_load_n(&progress, __ATOMIC_RELAXED);
		idle = now == last ? idle + 1 : 0;
		last = now;
		if (idle >= 100) {
			fprintf(stderr, "stress_bias: FAIL: no acquisition for 10 s (a slot left locked)\n");
			_exit(1);
		}
	}
	return NULL;
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void take(struct locktab_slot *s, unsigned how)
{
	switch (how % 4096) {
	case 0: /* the out-of-line lock, as after a failed inline try: it
		 * revokes even its own CPU's bias, so it is kept rare */
		bga__locktab_lock_slow(tab, s);
		break;
	default:
		if (how % 3 == 0) {
			bga__locktab_lock_slot(tab, s);
		} else if (how % 3 == 1) {
			/* Retries come fast: a try that backed out must not
			 * let the next one in early. */
			for (unsigned n = 1; !bga__locktab_trylock_slot(tab, s); n++)
				if (n % 64 == 0)
					sched_yield();
		} else if (!bga__locktab_trylock_fas(tab, s)) {
			bga__locktab_lock_slot(tab, s);
		}
		break;
	}
}

static void *work(void *arg)
{
	struct worker *w = arg;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(w->id % (ncpu > 0 ? ncpu : 1), &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	uint64_t now;
	while ((now = stress_now_ns()) < deadline) {
		/* Quiet phases let biases form; busy ones revoke them. */
		bool busy = (now / PHASE_NS) % 2;
		for (int i = 0; i < 4096; i++) {
			uint64_t r = next(&w->seed);
			unsigned k = busy && r % 64 == 0 ? (unsigned)(r >> 8) % NSLOTS : (unsigned)w->id % NSLOTS;
			struct locktab_slot *s = bga__locktab_slot_of(tab, k);
			take(s, (unsigned)(r >> 16));
			if (__atomic_exchange_n(&slots[k].inside, 1, __ATOMIC_ACQUIRE) != 0)
				__atomic_fetch_add(&overlaps, 1, __ATOMIC_RELAXED);
			uint64_t c = __atomic_load_n(&slots[k].count, __ATOMIC_RELAXED);
			for (unsigned spin = (r >> 40) % 16 ? (unsigned)(r >> 24) % 32 : 2000; spin > 0; spin--)
				__asm__ __volatile__("" ::: "memory");
			if ((r >> 32) % 256 == 0)
				sched_yield(); /* a holder descheduled inside, now and then */
			__atomic_store_n(&slots[k].count, c + 1, __ATOMIC_RELAXED);
			__atomic_store_n(&slots[k].inside, 0, __ATOMIC_RELEASE);
			if (__atomic_load_n(&s->held, __ATOMIC_RELAXED))
				w->fast++; /* taken by the fast side */
			bga__locktab_unlock_slot(tab, s);
			w->taken++;
		}
		__atomic_fetch_add(&progress, 4096, __ATOMIC_RELAXED);
	}
	return NULL;
}

int main(void)
{
	if (bga_locktab_create(&tab, NSLOTS, BGA_LOCK_FAS) != 0) {
		fprintf(stderr, "stress_bias: bga_locktab_create failed\n");
		return 1;
	}
	bool biasing = bga__locktab_set_biasing(tab);
	double secs = stress_seconds(BGA_STRESS_DEFAULT_SECONDS);
	deadline = stress_deadline(secs);
	pthread_t tid[NTHREADS], dog;
	struct worker w[NTHREADS];
	pthread_create(&dog, NULL, watchdog, NULL);
	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){.id = i, .seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1)};
		pthread_create(&tid[i], NULL, work, &w[i]);
	}
	uint64_t taken = 0, fast = 0, counted = 0, revoked = 0;
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(tid[i], NULL);
		taken += w[i].taken;
		fast += w[i].fast;
	}
	__atomic_store_n(&done, 1, __ATOMIC_RELAXED);
	pthread_join(dog, NULL);
	for (unsigned k = 0; k < NSLOTS; k++) {
		uint64_t r;
		counted += slots[k].count;
		(void)bga__locktab_bias_of(tab, k, &r);
		revoked += r;
	}
	int fails = 0;
	if (overlaps) {
		fprintf(stderr, "stress_bias: %d overlapping holders\n", overlaps);
		fails++;
	}
	if (counted != taken) {
		fprintf(stderr, "stress_bias: %llu acquisitions but %llu counted (lost updates)\n",
			(unsigned long long)taken, (unsigned long long)counted);
		fails++;
	}
	if (biasing && (fast == 0 || revoked == 0)) {
		fprintf(stderr, "stress_bias: the protocol was not exercised (fast-side holds %llu, revocations %llu)\n",
			(unsigned long long)fast, (unsigned long long)revoked);
		fails++;
	}
	printf("stress_bias: %s: %d threads, %llu acquisitions (%llu by the fast side), %llu revocations, %.1f s%s\n",
	       fails ? "FAIL" : "OK", NTHREADS, (unsigned long long)taken, (unsigned long long)fast,
	       (unsigned long long)revoked, secs,
	       biasing ? "" : " (biasing unavailable here: the plain fas table)");
	bga_locktab_destroy(tab);
	return fails ? 1 : 0;
}
