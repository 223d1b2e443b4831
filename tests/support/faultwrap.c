/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The wrapped C allocator, sched_getcpu and getrandom of the fault tests:
 * a failure at the k-th allocator call, leak tracking, a hook inside
 * calloc.  The contracts are in faultwrap.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>

#include "faultwrap.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
int __real_posix_memalign(void **p, size_t a, size_t n);
void __real_free(void *p);
int __real_sched_getcpu(void);
ssize_t __real_getrandom(void *buf, size_t len, unsigned flags);

/* ---- the allocator ---- */

static long fault_at;    /* 0: no failure; k: the k-th call fails */
static long fault_calls; /* calls since armed */
static long live;        /* blocks handed out and not freed, while tracking */
static bool tracking;

static bool fail_now(void)
{
	if (fault_at == 0)
		return false;
	return __atomic_add_fetch(&fault_calls, 1, __ATOMIC_RELAXED) == fault_at;
}

static void *note(void *p)
{
	if (p && tracking)
		__atomic_add_fetch(&live, 1, __ATOMIC_RELAXED);
	return p;
}

void *__wrap_malloc(size_t n)
{
	return fail_now() ? NULL : note(__real_malloc(n));
}

size_t fault_calloc_hook_size;
void (*fault_calloc_hook)(void);

void *__wrap_calloc(size_t n, size_t m)
{
	if (fault_calloc_hook && n * m == fault_calloc_hook_size) {
		void (*h)(void) = fault_calloc_hook;
		fault_calloc_hook = NULL;
		h();
	}
	return fail_now() ? NULL : note(__real_calloc(n, m));
}

void *__wrap_aligned_alloc(size_t a, size_t n)
{
	return fail_now() ? NULL : note(__real_aligned_alloc(a, n));
}

void *__wrap_realloc(void *p, size_t n)
{
	if (fail_now())
		return NULL;
	void *q = __real_realloc(p, n);
	if (p == NULL)
		note(q);
	return q;
}

int __wrap_posix_memalign(void **p, size_t a, size_t n)
{
	if (fail_now())
		return ENOMEM;
	int rc = __real_posix_memalign(p, a, n);
	if (rc == 0)
		note(*p);
	return rc;
}

void __wrap_free(void *p)
{
	if (p && tracking)
		__atomic_sub_fetch(&live, 1, __ATOMIC_RELAXED);
	__real_free(p);
}

void fault_arm(long k)
{
	fault_calls = 0;
	fault_at = k;
}

long fault_disarm(void)
{
	fault_at = 0;
	return fault_calls;
}

void fault_track(void)
{
	live = 0;
	tracking = true;
}

void fault_untrack(const char *what, long k)
{
	tracking = false;
	cr_assert_eq(live, 0, "%s, k=%ld: %ld allocations never freed", what, k, live);
}

/* ---- sched_getcpu and getrandom ---- */

__thread bool fault_getcpu_fails;

int __wrap_sched_getcpu(void)
{
	if (fault_getcpu_fails) {
		errno = ENOSYS;
		return -1;
	}
	return __real_sched_getcpu();
}

int fault_getrandom_mode;

ssize_t __wrap_getrandom(void *buf, size_t len, unsigned flags)
{
	if (fault_getrandom_mode == 1) {
		errno = EAGAIN;
		return -1;
	}
	if (fault_getrandom_mode == 2) {
		memset(buf, 0, len);
		return (ssize_t)len;
	}
	return __real_getrandom(buf, len, flags);
}
