/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The lock kinds, all through <bgalloc/locktab.h>: each operation draws a
 * key in [0, spread), takes its slot's lock, bumps that slot's count,
 * holds the lock for --hold ns (a calibrated loop), releases it, then
 * waits --think ns.  The counts, summed at the end, must equal the
 * operations: a lock that let two holders in would lose increments.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc/locktab.h>

#include "lab.h"

#define CHUNK 64u

struct lockobj {
	struct bga_locktab *t;
	uint32_t nslots;
	uint64_t spread, hold, think;
	struct {
		uint64_t n;
	} __attribute__((aligned(LAB_CACHELINE))) data[];
};

static void *lock_setup(const struct lab_variant *v, unsigned nthreads)
{
	struct bga_locktab *t = NULL;
	(void)nthreads;
	int rc = bga_locktab_create(&t, lab_cur->slots, (enum bga_lock_kind)v->arg);
	if (rc) {
		fprintf(stderr, "bga-lab: bga_locktab_create(%u slots, %s): %s\n", lab_cur->slots, v->name, strerror(-rc));
		return NULL;
	}
	uint32_t n = bga_locktab_nslots(t);
	struct lockobj *o = lab_alloc_lines(sizeof(struct lockobj) + (size_t)n * LAB_CACHELINE);
	if (!o) {
		bga_locktab_destroy(t);
		return NULL;
	}
	o->t = t;
	o->nslots = n;
	o->spread = lab_cur->spread ? lab_cur->spread : 1;
	o->hold = lab_cur->hold_ns;
	o->think = lab_cur->think_ns;
	return o;
}

static uint64_t lock_work(void *obj, unsigned tid, uint64_t ops, const volatile int *stop)
{
	struct lockobj *o = obj;
	uint64_t x = 0x9e3779b97f4a7c15ull * (tid + 1);
	return LAB_WORK(ops, stop, CHUNK, {
		lab_xorshift(&x);
		uint64_t key = o->spread > 1 ? x % o->spread : 0;
		bga_locktab_lock(o->t, key);
		/* A plain increment: only the lock makes it exact. */
		o->data[bga_locktab_slot(o->t, key)].n++;
		lab_spin_ns(o->hold);
		bga_locktab_unlock(o->t, key);
		lab_spin_ns(o->think);
	});
}

static int lock_finish(void *obj, uint64_t total, char *desc, size_t desclen)
{
	struct lockobj *o = obj;
	struct bga_lock_stats st = {0};
	uint64_t sum = 0;
	for (uint32_t i = 0; i < o->nslots; i++)
		sum += o->data[i].n;
	bga_locktab_stats_total(o->t, &st);
	snprintf(desc, desclen, "%s, %u slots, %.0f%% contended", bga_lock_kind_name(bga_locktab_kind(o->t)), o->nslots,
		 st.acquisitions ? 100.0 * (double)st.contended / (double)st.acquisitions : 0.0);
	int rc = 0;
	if (sum != total) {
		fprintf(stderr, "bga-lab: %s: %llu increments under the lock after %llu operations: mutual exclusion failed\n",
			desc, (unsigned long long)sum, (unsigned long long)total);
		rc = -1;
	}
	bga_locktab_destroy(o->t);
	free(o);
	return rc;
}

const char *lab_lock_kinds(void)
{
	return "fas, ticket, mcs, mutex, default";
}

int lab_lock_variant(const char *name, struct lab_variant *v)
{
	static const struct {
		const char *name;
		enum bga_lock_kind kind;
	} kinds[] = {{"fas", BGA_LOCK_FAS},
		     {"ticket", BGA_LOCK_TICKET},
		     {"mcs", BGA_LOCK_MCS},
		     {"mutex", BGA_LOCK_MUTEX},
		     {"default", BGA_LOCK_DEFAULT}};

	memset(v, 0, sizeof(*v));
	for (unsigned i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(name, kinds[i].name)) {
			v->name = name;
			v->where = "public API";
			v->setup = lock_setup;
			v->work = lock_work;
			v->finish = lock_finish;
			v->arg = (int)kinds[i].kind;
			return 0;
		}
	return -EINVAL;
}
