/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_LOCKTAB_RSEQ_H
#define BGA_LOCKTAB_RSEQ_H

/*
 * The fast side of a biased lock-table slot (locktab_impl.h): one
 * restartable sequence (the Linux rseq ABI on glibc's area, as the
 * counter's, counter_rseq.h) that takes the slot without a locked
 * instruction when the slot is biased to the CPU the thread runs on.
 *
 * In one section: load rseq->cpu_id; fail if it is negative (no rseq in
 * this thread) or unless slot->bias1 equals it + 1;
 * fail if slot->held is set; fail if the fas word is set; store 1 into
 * slot->held (the commit).  The loads are in that order (x86 keeps loads
 * in order), which bga__locktab_revoke's proof needs.  If the thread is
 * preempted, migrated, signalled or hit by a
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) before the commit, the
 * kernel restarts it at the abort handler, which begins again; so a commit
 * happened on CPU `bias` with no other thread of that CPU running in
 * between and no such membarrier completing in between.
 *
 * A thread without a registered area (valgrind, glibc.pthread.rseq=0) reads
 * a negative cpu_id and fails at once, whatever the kernel does with the
 * section.  Only x86-64, and not in TSan builds (TSan
 * cannot see the asm's stores): elsewhere the sequence always fails, and
 * bga__locktab_set_biasing refuses, so no slot is ever biased.
 *
 * The thread pointer offset of cpu_id is bga__rseq_cpu_off (cpu.h); the
 * descriptor pointer rseq_cs is 4 bytes after it.  Both are used only on a
 * table that biases, which requires them.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/rseq.h>

#include "cpu.h"

#if defined(__x86_64__) && !defined(BGA_TSAN_BUILD) && !defined(BGA_COUNTER_NO_RSEQ)
#define BGA_LOCKTAB_HAVE_RSEQ 1

_Static_assert(offsetof(struct rseq, rseq_cs) - offsetof(struct rseq, cpu_id) == 4, "struct rseq ABI");
_Static_assert(offsetof(struct locktab_slot, u) == 0, "the sequence tests the fas word at 0");

#define LOCKTAB_STR_(x) #x
#define LOCKTAB_STR(x) LOCKTAB_STR_(x)

/* rseq's cpu_id for this thread, or negative when it has none. */
static inline int32_t locktab_rseq_cpu(void)
{
	ptrdiff_t off = __atomic_load_n(&bga__rseq_cpu_off, __ATOMIC_RELAXED);
	if (off < 0)
		return -1;
	return *(volatile int32_t *)((char *)__builtin_thread_pointer() + off);
}

/* The section.  True with the slot held (held == 1), false with nothing
 * stored.  Labels as counter_rseq.h's: 3 the descriptor, 4 the abort
 * handler (after the signature), 6 the (re)start, 1-2 the section. */
static inline bool locktab_rseq_take(struct locktab_slot *s)
{
	int res;

	__asm__ __volatile__(".pushsection __rseq_cs, \"aw\"\n\t"
			     ".balign 32\n"
			     "3:\n\t"
			     ".long 0, 0\n\t"
			     ".quad 1f, 2f - 1f, 4f\n\t"
			     ".popsection\n\t"
			     ".pushsection __rseq_failure, \"ax\"\n\t"
			     ".byte 0x0f, 0xb9, 0x3d\n\t"
			     ".long " LOCKTAB_STR(RSEQ_SIG) "\n"
			     "4:\n\t"
			     "jmp 6f\n\t"
			     ".popsection\n"
			     "6:\n\t"
			     "leaq 3b(%%rip), %%rax\n\t"
			     "movq %%rax, %%fs:4(%[off])\n"
			     "1:\n\t"
			     "movl %%fs:(%[off]), %%eax\n\t"
			     "testl %%eax, %%eax\n\t" /* no rseq: cpu_id < 0 */
			     "js 8f\n\t"
			     "incl %%eax\n\t"
			     "cmpl %%eax, %c[bias](%[s])\n\t"
			     "jne 8f\n\t"
			     "cmpl $0, %c[held](%[s])\n\t"
			     "jne 8f\n\t"
			     "cmpl $0, (%[s])\n\t"
			     "jne 8f\n\t"
			     "movl $1, %c[held](%[s])\n" /* commit */
			     "2:\n\t"
			     "xorl %k[res], %k[res]\n\t"
			     "jmp 9f\n"
			     "8:\n\t"
			     "movl $1, %k[res]\n"
			     "9:\n\t"
			     : [res] "=r"(res)
			     : [off] "r"(bga__rseq_cpu_off), [s] "r"(s), [bias] "i"(offsetof(struct locktab_slot, bias1)),
			       [held] "i"(offsetof(struct locktab_slot, held))
			     : "rax", "memory", "cc");
	return res == 0;
}

#else
#define BGA_LOCKTAB_HAVE_RSEQ 0

static inline int32_t locktab_rseq_cpu(void)
{
	return -1;
}

static inline bool locktab_rseq_take(struct locktab_slot *s)
{
	(void)s;
	return false;
}
#endif

#endif
