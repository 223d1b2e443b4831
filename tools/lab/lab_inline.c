/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-lab-inline only (not installed): the same counter with its fast path
 * inlined from the library's internal header (counter_impl.h), as the
 * library's own allocator calls it, and a shared atomic fetch_add inlined
 * in the loop.  These are the figures an inlining benchmark reports;
 * bga-lab's default modes are what a program linking libbgalloc gets.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counter_impl.h"
#include "lab.h"

#define CHUNK 1024u
#define FAR_LIMIT (INT64_MAX / 4)

int lab_inline_variant(const char *name, struct lab_variant *v);

static void *inl_setup(const struct lab_variant *v, unsigned nthreads)
{
	struct bga_counter *c = NULL;
	(void)nthreads;
	int rc = bga_counter_create(&c, 0, lab_cur->batch, v->arg ? BGA_COUNTER_PERCPU : BGA_COUNTER_ATOMIC);
	if (rc) {
		fprintf(stderr, "bga-lab: bga_counter_create: %s\n", strerror(-rc));
		return NULL;
	}
	return c;
}

static uint64_t percpu_inline_work(void *obj, unsigned tid, uint64_t ops, const volatile int *stop)
{
	struct bga_counter *c = obj;
	bool limited = lab_cur->limited;
	uint64_t n = 0;
	unsigned k;
	(void)tid;
	while ((k = lab_next_chunk(n, ops, stop, CHUNK)) != 0) {
		if (limited) {
			for (unsigned i = 0; i < k; i++)
				if (bga__counter_add_limited(c, 1, FAR_LIMIT) != 0)
					abort();
		} else {
			for (unsigned i = 0; i < k; i++)
				bga__counter_add(c, 1);
		}
		n += k;
	}
	return n;
}

/* The counter's own shared total, fetch_add inlined: what "atomic" costs
 * without the call into the library. */
static uint64_t atomic_inline_work(void *obj, unsigned tid, uint64_t ops, const volatile int *stop)
{
	struct bga_counter *c = obj;
	bool limited = lab_cur->limited;
	uint64_t n = 0;
	unsigned k;
	(void)tid;
	while ((k = lab_next_chunk(n, ops, stop, CHUNK)) != 0) {
		if (limited) {
			for (unsigned i = 0; i < k; i++)
				if (!bga__counter_add_limited_fast(c, 1, FAR_LIMIT))
					abort();
		} else {
			for (unsigned i = 0; i < k; i++)
				__atomic_fetch_add(&c->total, 1, __ATOMIC_RELAXED);
		}
		n += k;
	}
	return n;
}

static int inl_finish(void *obj, uint64_t total, char *desc, size_t desclen)
{
	struct bga_counter *c = obj;
	int64_t sum = bga_counter_sum(c);
	snprintf(desc, desclen, "%s inlined, batch %d", bga_counter_mode_name(c), bga_counter_batch(c));
	int rc = sum == (int64_t)total ? 0 : -1;
	if (rc)
		fprintf(stderr, "bga-lab: %s: sum %lld after %llu adds\n", desc, (long long)sum, (unsigned long long)total);
	bga_counter_destroy(c);
	return rc;
}

int lab_inline_variant(const char *name, struct lab_variant *v)
{
	v->where = "internal header, inlined";
	v->setup = inl_setup;
	v->finish = inl_finish;
	if (!strcmp(name, "percpu-inline")) {
		v->work = percpu_inline_work;
		v->arg = 1;
		return 0;
	}
	if (!strcmp(name, "atomic-inline")) {
		v->work = atomic_inline_work;
		v->arg = 0;
		return 0;
	}
	return -EINVAL;
}
