// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The model's heap blocks by allocation site: what rt_alloc.h says.
 * Linked into bga-model only.
 */
#include "rt_alloc.h"

#include <stdlib.h>

/* glibc's own allocator, under the wrappers below. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

struct alloc {
	uintptr_t p; /* 0 = empty */
	size_t size;
	uintptr_t site;
};
#define ALLOC_BITS 20
#define ALLOC_SLOTS (1u << ALLOC_BITS)
static struct alloc *allocs;
static int alloc_lock; /* threads outside the baton allocate too (thread start and exit) */

static inline uint64_t hash_of(uint64_t x)
{
	x *= 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 29);
}

int rt_heap_block(uintptr_t a, uintptr_t *base, size_t *size, uintptr_t *site)
{
	for (uint32_t i = 0; allocs && i < ALLOC_SLOTS; i++) {
		struct alloc *b = &allocs[i];
		if (b->p && a >= b->p && a < b->p + b->size) {
			*base = b->p;
			*size = b->size;
			*site = b->site;
			return 1;
		}
	}
	return 0;
}

static void alloc_lock_take(void)
{
	while (__atomic_exchange_n(&alloc_lock, 1, __ATOMIC_ACQUIRE))
		;
}

static void alloc_note(void *p, size_t size, uintptr_t site)
{
	if (!p)
		return;
	alloc_lock_take();
	if (!allocs)
		allocs = __libc_calloc(ALLOC_SLOTS, sizeof(*allocs));
	if (allocs) {
		uint32_t i = (uint32_t)hash_of((uintptr_t)p) & (ALLOC_SLOTS - 1);
		while (allocs[i].p && allocs[i].p != (uintptr_t)p)
			i = (i + 1) & (ALLOC_SLOTS - 1);
		allocs[i] = (struct alloc){(uintptr_t)p, size, site};
	}
	__atomic_store_n(&alloc_lock, 0, __ATOMIC_RELEASE);
}

/* Linear probing with backward-shift deletion: no tombstones pile up. */
static void alloc_forget(void *p)
{
	if (!p)
		return;
	alloc_lock_take();
	if (allocs) {
		uint32_t i = (uint32_t)hash_of((uintptr_t)p) & (ALLOC_SLOTS - 1);
		while (allocs[i].p && allocs[i].p != (uintptr_t)p)
			i = (i + 1) & (ALLOC_SLOTS - 1);
		if (allocs[i].p) {
			uint32_t j = i;
			for (;;) {
				j = (j + 1) & (ALLOC_SLOTS - 1);
				if (!allocs[j].p)
					break;
				uint32_t h = (uint32_t)hash_of(allocs[j].p) & (ALLOC_SLOTS - 1);
				/* move j back to i unless its home lies in (i, j] */
				if ((j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j))) {
					allocs[i] = allocs[j];
					i = j;
				}
			}
			allocs[i].p = 0;
		}
	}
	__atomic_store_n(&alloc_lock, 0, __ATOMIC_RELEASE);
}

#define SITE ((uintptr_t)__builtin_return_address(0))

void *malloc(size_t n)
{
	void *p = __libc_malloc(n);
	alloc_note(p, n, SITE);
	return p;
}

void *calloc(size_t k, size_t n)
{
	void *p = __libc_calloc(k, n);
	alloc_note(p, k * n, SITE);
	return p;
}

void *realloc(void *q, size_t n)
{
	void *p;
	alloc_forget(q);
	p = __libc_realloc(q, n);
	alloc_note(p, n, SITE);
	return p;
}

void free(void *p)
{
	alloc_forget(p);
	__libc_free(p);
}

void *aligned_alloc(size_t al, size_t n)
{
	void *p = __libc_memalign(al, n);
	alloc_note(p, n, SITE);
	return p;
}

void *memalign(size_t al, size_t n)
{
	void *p = __libc_memalign(al, n);
	alloc_note(p, n, SITE);
	return p;
}

int posix_memalign(void **out, size_t al, size_t n)
{
	void *p = __libc_memalign(al, n);
	if (!p)
		return 12; /* ENOMEM */
	alloc_note(p, n, SITE);
	*out = p;
	return 0;
}
