// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The current CPU number, for picking a per-CPU slot.  See cpu.h.
 */
#define _GNU_SOURCE
#include "cpu.h"

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compiler.h"

#if defined(__has_builtin)
#if __has_builtin(__builtin_thread_pointer)
#define BGA_HAVE_THREAD_POINTER 1
#endif
#elif defined(__GNUC__) && __GNUC__ >= 11
#define BGA_HAVE_THREAD_POINTER 1
#endif

/*
 * 0 until first use.  Racing first calls compute the same value, so a
 * relaxed store is enough and no once-control sits on the hot path.
 */
static unsigned cpu_count_cache;

unsigned bga__cpu_count(void)
{
	unsigned n = __atomic_load_n(&cpu_count_cache, __ATOMIC_RELAXED);
	long conf;

	if (bga_likely(n))
		return n;
	/* _SC_NPROCESSORS_CONF, not _ONLN: a CPU brought online later must
	 * still own a slot, or two CPUs would share one for the process life. */
	conf = sysconf(_SC_NPROCESSORS_CONF);
	n = conf >= 1 ? (unsigned)conf : 1;
	__atomic_store_n(&cpu_count_cache, n, __ATOMIC_RELAXED);
	return n;
}

/*
 * Offset of struct rseq::cpu_id from the thread pointer, or -1 when glibc
 * registered no rseq area (__rseq_size == 0: GLIBC_TUNABLES
 * glibc.pthread.rseq=0, or a kernel without rseq).  Copied out of glibc's
 * __rseq_offset once so the hot path (bga__cpu_hint, inline in cpu.h)
 * reads a hidden variable instead of going through the GOT.  Even with an area registered, cpu_id can be
 * negative in a thread (valgrind fails the rseq syscall per thread), so the
 * hot path still checks the sign.
 */
ptrdiff_t bga__rseq_cpu_off = -2; /* -2: not looked up yet; read inline by bga__cpu_hint */

static ptrdiff_t rseq_lookup(void)
{
	ptrdiff_t off = -1;

#ifdef BGA_HAVE_THREAD_POINTER
	if (__rseq_size >= offsetof(struct rseq, cpu_id) + sizeof(uint32_t))
		off = __rseq_offset + (ptrdiff_t)offsetof(struct rseq, cpu_id);
#endif
	__atomic_store_n(&bga__rseq_cpu_off, off, __ATOMIC_RELAXED);
	return off;
}

/*
 * The offset is looked up when the library is loaded, so that
 * bga__cpu_hint need not: a call before that (from another constructor)
 * finds -2 and takes getcpu, which is as right, only slower.
 */
__attribute__((constructor)) static void rseq_lookup_at_load(void)
{
	rseq_lookup();
}

/* The kernel's own cpu_id, or a negative value when rseq cannot say. */
static inline int32_t rseq_cpu(void)
{
#ifdef BGA_HAVE_THREAD_POINTER
	ptrdiff_t off = __atomic_load_n(&bga__rseq_cpu_off, __ATOMIC_RELAXED);

	if (bga_unlikely(off < 0)) {
		if (off == -1 || (off = rseq_lookup()) < 0)
			return -1;
	}
	/* The kernel rewrites cpu_id on every migration of this thread, so
	 * it is read once, with no caching; volatile keeps the load here. */
	return *(volatile int32_t *)((char *)__builtin_thread_pointer() + off);
#else
	return -1;
#endif
}

/*
 * Last resort when neither rseq nor getcpu works (seccomp filters, odd
 * sandboxes): spread threads over slots by a hash of their kernel tid so
 * that threads at least do not all share slot 0.  Cached per thread.
 */
static __thread unsigned hash_cpu_plus1;

static unsigned hash_cpu(void)
{
	unsigned h = hash_cpu_plus1;
	uint64_t x;

	if (bga_likely(h))
		return h - 1;
	x = (uint64_t)syscall(SYS_gettid);
	if ((int64_t)x <= 0)
		x = (uint64_t)(uintptr_t)&hash_cpu_plus1;
	/* splitmix64 finaliser: tids are sequential, slots want spread. */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	h = (unsigned)(x % bga__cpu_count());
	hash_cpu_plus1 = h + 1;
	return h;
}

/* The fallback's reused answer (cpu.h). */
__thread struct bga_cpu_reuse bga__cpu_reuse;

static __attribute__((noinline)) unsigned fallback_lookup(void)
{
	int cpu = sched_getcpu();
	unsigned id;

	if (cpu >= 0) {
		unsigned n = bga__cpu_count();

		id = (unsigned)cpu < n ? (unsigned)cpu : (unsigned)cpu % n;
	} else {
		id = hash_cpu();
	}
	bga__cpu_reuse.cpu = id;
	bga__cpu_reuse.left = BGA_CPU_FALLBACK_REUSE - 1;
	return id;
}

unsigned bga__cpu_fallback(void)
{
	if (bga_likely(bga__cpu_reuse.left != 0)) {
		bga__cpu_reuse.left--;
		return bga__cpu_reuse.cpu;
	}
	return fallback_lookup();
}

/*
 * Order of sources, on measurements (BENCHMARKS.md#the-cpu-id): rseq
 * first, getcpu only when the kernel's cpu_id is unavailable, and the
 * hash only when getcpu fails too.
 */
unsigned bga__cpu_current(void)
{
	int32_t cpu = rseq_cpu();

	if (bga_likely(cpu >= 0)) {
		unsigned n = __atomic_load_n(&cpu_count_cache, __ATOMIC_RELAXED);

		if (bga_likely((unsigned)cpu < n))
			return (unsigned)cpu;
		/* n == 0 (first call) or a CPU id past _SC_NPROCESSORS_CONF
		 * (hotplug beyond the configured set): stay in range. */
		return (unsigned)cpu % bga__cpu_count();
	}
	return bga__cpu_fallback();
}

const char *bga__cpu_source(void)
{
	if (rseq_cpu() >= 0)
		return "rseq";
	if (sched_getcpu() >= 0)
		return "getcpu";
	return "hash";
}

#ifdef BGA_DEBUG
bool bga__cpu_cache_valid(char *why, size_t n)
{
	unsigned count = bga__cpu_count();

	if (bga__cpu_reuse.cpu >= count || bga__cpu_reuse.left >= BGA_CPU_FALLBACK_REUSE) {
		snprintf(why, n, "cpu: reused answer %u (%u more uses) out of range (%u CPUs, %u uses)",
			 bga__cpu_reuse.cpu, bga__cpu_reuse.left, count, BGA_CPU_FALLBACK_REUSE);
		return false;
	}
	if (hash_cpu_plus1 > count) {
		snprintf(why, n, "cpu: tid hash %u out of range (%u CPUs)", hash_cpu_plus1 - 1, count);
		return false;
	}
	return true;
}
#endif
