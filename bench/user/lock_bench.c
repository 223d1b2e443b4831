/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A user's benchmark of the lock kinds of the hashed lock table, written
 * against the installed library only:
 *   cc lock_bench.c $(pkg-config --cflags --libs bgalloc) -pthread
 *   ./lock_bench [THREADS [MILLISECONDS [KEYS]]]
 * Every thread locks a key in [0, KEYS), bumps a count the lock protects
 * and unlocks; each kind in turn.  It prints lock/unlock pairs per second,
 * the share of acquisitions that found the lock held, and checks that no
 * increment was lost.  For verdicts with p-values, use bga-lab(1).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <bgalloc/locktab.h>

#include "num_arg.h"

struct shared {
	struct bga_locktab *t;
	unsigned long long count[64][16]; /* one line per slot; only [i][0] used */
	unsigned keys;
	volatile int stop;
};

struct arg {
	struct shared *s;
	unsigned seed;
	unsigned long long ops;
};

static void *locker(void *p)
{
	struct arg *a = p;
	struct shared *s = a->s;
	unsigned x = a->seed;
	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < 256; i++) {
			x = x * 1103515245u + 12345u;
			uint64_t key = (x >> 8) % s->keys;
			bga_locktab_lock(s->t, key);
			s->count[bga_locktab_slot(s->t, key)][0]++;
			bga_locktab_unlock(s->t, key);
		}
		a->ops += 256;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = (int)num_arg(argc, argv, 1, 2, 1, 256), ms = (int)num_arg(argc, argv, 2, 100, 1, 3600000);
	long keys = num_arg(argc, argv, 3, 1, 1, 1L << 30);
	const enum bga_lock_kind kinds[] = {BGA_LOCK_FAS, BGA_LOCK_TICKET, BGA_LOCK_MCS, BGA_LOCK_MUTEX};

	if (threads < 0 || ms < 0 || keys < 0 || argc > 4) {
		fprintf(stderr, "usage: lock_bench [THREADS(1-256) [MILLISECONDS(1-3600000) [KEYS(1-2^30)]]]\n");
		return 2;
	}
	for (unsigned k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		static struct shared s;
		pthread_t th[256];
		struct arg a[256];
		struct bga_lock_stats st;
		unsigned long long total = 0, counted = 0;

		s = (struct shared){.keys = (unsigned)keys};
		if (bga_locktab_create(&s.t, 64, kinds[k]) != 0) {
			fprintf(stderr, "lock_bench: bga_locktab_create failed\n");
			return 1;
		}
		struct timespec t0, t1, d = {ms / 1000, (ms % 1000) * 1000000L};
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int i = 0; i < threads; i++) {
			a[i] = (struct arg){.s = &s, .seed = 12345u + (unsigned)i * 7919u};
			pthread_create(&th[i], NULL, locker, &a[i]);
		}
		nanosleep(&d, NULL);
		s.stop = 1;
		for (int i = 0; i < threads; i++) {
			pthread_join(th[i], NULL);
			total += a[i].ops;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		for (int i = 0; i < 64; i++)
			counted += s.count[i][0];
		if (counted != total) {
			fprintf(stderr, "lock_bench: %s lost increments (%llu of %llu)\n",
				bga_lock_kind_name(kinds[k]), counted, total);
			return 1;
		}
		bga_locktab_stats_total(s.t, &st);
		double wall = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		printf("%-7s %d threads, %ld keys: %.2fM lock/unlock pairs/s, %.1f%% found the lock held\n",
		       bga_lock_kind_name(kinds[k]), threads, keys, total / wall / 1e6,
		       st.acquisitions ? 100.0 * st.contended / st.acquisitions : 0.0);
		bga_locktab_destroy(s.t);
	}
	return 0;
}
