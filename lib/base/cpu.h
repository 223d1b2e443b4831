/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_CPU_H
#define BGA_CPU_H

/*
 * Which CPU the calling thread runs on, for indexing per-CPU slots.
 *
 * Sources, in order (BENCHMARKS.md#the-cpu-id, has what each costs):
 * the glibc rseq area (__rseq_offset/__rseq_size from <sys/rseq.h>; one
 * TLS load), then sched_getcpu() (vDSO; a system call's cost under
 * valgrind), then a stable per-thread hash of the tid.  rseq is unregistered
 * under valgrind and with GLIBC_TUNABLES=glibc.pthread.rseq=0: its cpu_id is
 * then negative (or __rseq_size is 0) and the next source is used.  The
 * source is chosen per call, so a thread whose rseq area becomes usable
 * uses it at once.
 *
 * The answer is a hint: the thread may migrate right after reading it, so
 * callers use it only to pick a slot that they then update atomically.
 * Because of that, the sources after rseq are asked once per
 * BGA_CPU_FALLBACK_REUSE lookups of a thread, and the answer is reused in
 * between (bga__cpu_fallback): the kernel migrates a thread on millisecond
 * scales, and 32 lookups are one or two microseconds of a hot path that
 * looks up once per call, so a migrated thread uses its old CPU's slots
 * for that long, which costs shared lines and never correctness.  Without
 * the reuse, each lookup with rseq off paid a getcpu call
 * (BENCHMARKS.md#two-builds-in-one-process).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/rseq.h>

#include "compiler.h"

/* Number of possible CPUs (>= 1); fixed for the life of the process. */
unsigned bga__cpu_count(void);

/* Current CPU in [0, bga__cpu_count()); never negative. */
unsigned bga__cpu_current(void);

/*
 * The sources after rseq: sched_getcpu(), then the hash; in
 * [0, bga__cpu_count()).  For bga__cpu_hint, which has read the rseq area
 * already (going through bga__cpu_current would read it a second time).
 * One call in BGA_CPU_FALLBACK_REUSE asks the source; the others return
 * the thread's last answer (see above).
 */
#define BGA_CPU_FALLBACK_REUSE 32u
unsigned bga__cpu_fallback(void);

/*
 * The fallback's last answer and how many more lookups may reuse it.  Per
 * thread, in the default TLS model: initial-exec would put the library's
 * whole TLS block (about 1 KiB: the MCS node pool, lockdep's stack) into
 * glibc's static TLS surplus, which a dlopen'ed libbgalloc.so then fails
 * to load from once the surplus is used up (it was, loading two builds in
 * one process: bga-ab).  In executables and the static library the
 * linker relaxes the access to one %fs-relative load anyway; in the
 * shared library it costs a __tls_get_addr call, on paths without rseq
 * only.  Written by bga__cpu_fallback and bga__cpu_hint_inline only.
 */
struct bga_cpu_reuse {
	unsigned cpu;
	unsigned left;
};
extern __thread __attribute__((visibility("hidden"))) struct bga_cpu_reuse bga__cpu_reuse;

/*
 * Offset of struct rseq::cpu_id from the thread pointer: -2 until the
 * lookup (a constructor in cpu.c makes it), -1 when glibc registered no
 * rseq area.  cpu.c's copy of glibc's __rseq_offset, so that the hot path
 * reads one hidden variable instead of two through the GOT.
 */
extern __attribute__((visibility("hidden"))) ptrdiff_t bga__rseq_cpu_off;

/*
 * bga__cpu_hint without a call, for hot paths that must stay leaves: true
 * with *cpu set from the rseq area or the fallback's reused answer; false
 * when only a call can say (rseq unusable and the answer used up), and the
 * caller then takes a path that calls bga__cpu_hint.
 */
static inline bool bga__cpu_hint_inline(unsigned *cpu)
{
#if defined(__has_builtin)
#if __has_builtin(__builtin_thread_pointer)
	ptrdiff_t off = __atomic_load_n(&bga__rseq_cpu_off, __ATOMIC_RELAXED);
	if (bga_likely(off >= 0)) {
		int32_t id = *(volatile int32_t *)((char *)__builtin_thread_pointer() + off);
		if (bga_likely(id >= 0)) {
			*cpu = (unsigned)id;
			return true;
		}
	}
#endif
#endif
	if (bga__cpu_reuse.left != 0) {
		bga__cpu_reuse.left--;
		*cpu = bga__cpu_reuse.cpu;
		return true;
	}
	return false;
}

/*
 * The hot-path form: the rseq cpu_id read inline, bga__cpu_fallback() for
 * everything else: a call into cpu.c is a third of a counter add
 * (BENCHMARKS.md#the-cpu-id).  The id may be >= bga__cpu_count() (CPUs
 * hot-added past
 * the configured set): callers reduce it modulo their slot count.  Even
 * with an area registered, cpu_id can be negative in a thread (valgrind
 * fails the rseq syscall per thread), hence the sign test.  Where rseq is
 * off (valgrind, glibc.pthread.rseq=0) a lookup reads the thread's reused
 * answer inline, and one in BGA_CPU_FALLBACK_REUSE is a getcpu call: a
 * hot path still looks the id up once
 * per call and passes it down (bga__percpu_on, the counter's _on forms).
 */
static inline unsigned bga__cpu_hint(void)
{
	unsigned cpu;
	return bga__cpu_hint_inline(&cpu) ? cpu : bga__cpu_fallback();
}

#ifdef BGA_DEBUG
/*
 * Whether the calling thread's CPU-id caches (bga__cpu_reuse and the tid
 * hash) hold answers a lookup could have given: cpu < bga__cpu_count(),
 * left < BGA_CPU_FALLBACK_REUSE, a hash in range or not made yet.  They
 * are the only per-thread state of this file and are hints (see above),
 * so a thread that made calls before (a pool thread) need not have them
 * as a fresh thread has them (zero): a stale reused answer sends at most
 * BGA_CPU_FALLBACK_REUSE - 1 lookups to an old CPU's slots, which costs
 * shared lines and never correctness, and the hash is a function of the
 * tid, which the thread keeps.  What must hold is the range: out of it,
 * a reused answer would break bga__cpu_current's and bga__cpu_fallback's
 * promise of [0, bga__cpu_count()).  If not, why[0 .. n) names the value
 * (bga__thread_idle, thread.h).
 */
bool bga__cpu_cache_valid(char *why, size_t n);
#endif

/* Which source bga__cpu_current() uses in this thread: "rseq", "getcpu" or
 * "hash".  For tests and reports. */
const char *bga__cpu_source(void);

#endif
