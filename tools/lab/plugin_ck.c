/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An example bga-lab plug-in (bga_lab_plugin.h): three of Concurrency
 * Kit's locks, and a counter of its own, to measure beside the library's.
 *
 *   cc -shared -fPIC -O2 -o bga-lab-ck.so plugin_ck.c -lck
 *   bga-lab lock --plugin ./bga-lab-ck.so --kinds fas,ck-clh,ck-anderson,ck-rwlock
 *   bga-lab counter --plugin ./bga-lab-ck.so --modes atomic,percpu,own-slots
 *
 * Locks:
 *   ck-clh       ck_spinlock_clh: a queue lock, each waiter spinning on its
 *                predecessor's node (nodes move between threads);
 *   ck-anderson  ck_spinlock_anderson: an array lock, one flag per waiter,
 *                as many flags as threads;
 *   ck-rwlock    ck_rwlock's write side (exclusive).
 * Counter:
 *   own-slots    a line per thread, each written by its thread alone with a
 *                plain store, summed over the lines: no atomic operation
 *                on the add path, and an exact sum only once the adders
 *                stopped (what bga-lab's check reads).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ck_rwlock.h>
#include <ck_spinlock.h>

#include "bga_lab_plugin.h"

#define LINE 128

/* ck-clh: a queue tail per slot, a node per thread (and one per slot, the
 * tail's first); all nodes in one array, since they change hands. */
struct clh {
	unsigned nthreads;
	uint32_t nslots;
	ck_spinlock_clh_t **tail; /* [nslots], each on its own line */
	ck_spinlock_clh_t **mine; /* [nthreads], each on its own line */
	ck_spinlock_clh_t *nodes; /* nthreads + nslots, a line each */
};

#define AT(base, i, type) ((type *)((char *)(base) + (size_t)(i) * LINE))

static void *clh_create(unsigned nthreads, uint32_t nslots)
{
	struct clh *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->nthreads = nthreads;
	c->nslots = nslots;
	c->tail = aligned_alloc(LINE, (size_t)nslots * LINE);
	c->mine = aligned_alloc(LINE, (size_t)nthreads * LINE);
	c->nodes = aligned_alloc(LINE, (size_t)(nthreads + nslots) * LINE);
	if (!c->tail || !c->mine || !c->nodes) {
		free(c->tail), free(c->mine), free(c->nodes), free(c);
		return NULL;
	}
	for (uint32_t s = 0; s < nslots; s++)
		ck_spinlock_clh_init(AT(c->tail, s, ck_spinlock_clh_t *), AT(c->nodes, nthreads + s, ck_spinlock_clh_t));
	for (unsigned t = 0; t < nthreads; t++)
		*AT(c->mine, t, ck_spinlock_clh_t *) = AT(c->nodes, t, ck_spinlock_clh_t);
	return c;
}

static void clh_lock(void *l, unsigned tid, uint32_t slot)
{
	struct clh *c = l;
	ck_spinlock_clh_lock(AT(c->tail, slot, ck_spinlock_clh_t *), *AT(c->mine, tid, ck_spinlock_clh_t *));
}

static void clh_unlock(void *l, unsigned tid, uint32_t slot)
{
	struct clh *c = l;
	(void)slot;
	ck_spinlock_clh_unlock(AT(c->mine, tid, ck_spinlock_clh_t *)); /* takes the predecessor's node */
}

static void clh_destroy(void *l)
{
	struct clh *c = l;
	free(c->tail), free(c->mine), free(c->nodes), free(c);
}

/* ck-anderson: a lock per slot, as many flags as threads, and the flag
 * each thread holds between lock and unlock. */
struct anderson {
	unsigned nthreads;
	uint32_t nslots;
	ck_spinlock_anderson_t *locks;          /* [nslots] (padded by ck) */
	ck_spinlock_anderson_thread_t *flags;   /* [nslots][flags] */
	ck_spinlock_anderson_thread_t **held;   /* [nthreads], a line each */
	unsigned nflags;
};

static void *and_create(unsigned nthreads, uint32_t nslots)
{
	struct anderson *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->nthreads = nthreads;
	a->nslots = nslots;
	a->nflags = 1;
	while (a->nflags < nthreads) /* a power of two: no wrap-around CAS */
		a->nflags <<= 1;
	a->locks = aligned_alloc(LINE, (size_t)nslots * sizeof(*a->locks) + LINE);
	a->flags = calloc((size_t)nslots * a->nflags, sizeof(*a->flags));
	a->held = aligned_alloc(LINE, (size_t)nthreads * LINE);
	if (!a->locks || !a->flags || !a->held) {
		free(a->locks), free(a->flags), free(a->held), free(a);
		return NULL;
	}
	for (uint32_t s = 0; s < nslots; s++)
		ck_spinlock_anderson_init(&a->locks[s], a->flags + (size_t)s * a->nflags, a->nflags);
	return a;
}

static void and_lock(void *l, unsigned tid, uint32_t slot)
{
	struct anderson *a = l;
	ck_spinlock_anderson_lock(&a->locks[slot], AT(a->held, tid, ck_spinlock_anderson_thread_t *));
}

static void and_unlock(void *l, unsigned tid, uint32_t slot)
{
	struct anderson *a = l;
	ck_spinlock_anderson_unlock(&a->locks[slot], *AT(a->held, tid, ck_spinlock_anderson_thread_t *));
}

static void and_destroy(void *l)
{
	struct anderson *a = l;
	free(a->locks), free(a->flags), free(a->held), free(a);
}

/* ck-rwlock: the write side, a lock per line. */
static void *rw_create(unsigned nthreads, uint32_t nslots)
{
	(void)nthreads;
	void *r = aligned_alloc(LINE, (size_t)nslots * LINE);
	if (r)
		for (uint32_t s = 0; s < nslots; s++)
			ck_rwlock_init(AT(r, s, ck_rwlock_t));
	return r;
}

static void rw_lock(void *l, unsigned tid, uint32_t slot)
{
	(void)tid;
	ck_rwlock_write_lock(AT(l, slot, ck_rwlock_t));
}

static void rw_unlock(void *l, unsigned tid, uint32_t slot)
{
	(void)tid;
	ck_rwlock_write_unlock(AT(l, slot, ck_rwlock_t));
}

/* own-slots: a line per thread. */
struct slots {
	unsigned n;
	int64_t *v; /* a line each */
};

static void *slots_create(unsigned nthreads)
{
	struct slots *s = malloc(sizeof(*s));
	if (!s)
		return NULL;
	s->n = nthreads;
	s->v = aligned_alloc(LINE, (size_t)nthreads * LINE);
	if (!s->v) {
		free(s);
		return NULL;
	}
	memset(s->v, 0, (size_t)nthreads * LINE);
	return s;
}

static void slots_add(void *c, unsigned tid, int64_t d)
{
	int64_t *v = AT(((struct slots *)c)->v, tid, int64_t);
	/* one writer per line: a load and a store, no read-modify-write */
	__atomic_store_n(v, __atomic_load_n(v, __ATOMIC_RELAXED) + d, __ATOMIC_RELAXED);
}

static int64_t slots_sum(void *c)
{
	struct slots *s = c;
	int64_t sum = 0;
	for (unsigned t = 0; t < s->n; t++)
		sum += __atomic_load_n(AT(s->v, t, int64_t), __ATOMIC_RELAXED);
	return sum;
}

static void slots_destroy(void *c)
{
	free(((struct slots *)c)->v);
	free(c);
}

int bga_lab_plugin_init(const struct bga_lab_host *host)
{
	static const struct bga_lab_lock_ops lk[] = {
		{"ck-clh", clh_create, clh_lock, clh_unlock, clh_destroy},
		{"ck-anderson", and_create, and_lock, and_unlock, and_destroy},
		{"ck-rwlock", rw_create, rw_lock, rw_unlock, free},
	};
	static const struct bga_lab_counter_ops own = {"own-slots", slots_create, slots_add, slots_sum, slots_destroy};
	if (host->version != BGA_LAB_PLUGIN_VERSION)
		return -ENOTSUP;
	for (unsigned i = 0; i < sizeof(lk) / sizeof(lk[0]); i++) {
		int rc = host->add_lock(&lk[i]);
		if (rc)
			return rc;
	}
	return host->add_counter(&own);
}
