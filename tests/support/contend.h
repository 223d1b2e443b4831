/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_TEST_CONTEND_H
#define BGA_TEST_CONTEND_H

/*
 * Contention on demand, for tests of what a CPU does when it finds a
 * group's lock held (steering, homes, locality windows): another thread
 * holds group g's lock until the test thread's trylock has found it held
 * (the slot's try_failed count moves; at most 10 s), so the test sees it
 * busy however the two threads are scheduled.  Uses the library's
 * internals (group.h): include after <criterion/criterion.h>.
 */

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <bgalloc.h>

#include "group.h"

struct contend_holder {
	struct bga_volume *vol;
	uint64_t g;
	int held; /* atomic: 1 while the lock is held */
};

static inline void *contend_hold_group(void *arg)
{
	struct contend_holder *h = arg;
	const struct locktab_slot *s = bga__group_slot(h->vol, h->g);
	uint64_t before = __atomic_load_n(&s->try_failed, __ATOMIC_RELAXED);
	bga__group_lock(h->vol, h->g);
	__atomic_store_n(&h->held, 1, __ATOMIC_RELEASE);
	for (int ms = 0; ms < 10000 && __atomic_load_n(&s->try_failed, __ATOMIC_RELAXED) == before; ms++)
		usleep(1000);
	bga__group_unlock(h->vol, h->g);
	return NULL;
}

/* bga_alloc(vol, req, e) while another thread holds group g's lock; its
 * return.  Fails the test if the holder cannot start. */
static inline int contend_alloc(struct bga_volume *vol, uint64_t g, const struct bga_request *req,
				struct bga_extent *e)
{
	struct contend_holder h = {vol, g, 0};
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, contend_hold_group, &h), 0);
	while (!__atomic_load_n(&h.held, __ATOMIC_ACQUIRE))
		sched_yield();
	int rc = bga_alloc(vol, req, e);
	pthread_join(t, NULL);
	return rc;
}

#endif
