/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_COUNTER_RSEQ_H
#define BGA_COUNTER_RSEQ_H

/*
 * The per-CPU counter's restartable sequences (Linux rseq ABI, on the area
 * glibc 2.35+ registers for every thread: thread pointer + __rseq_offset).
 * Each is one critical section on the slot of the CPU the thread runs on:
 * it stores the descriptor's address into rseq->rseq_cs, reads rseq->cpu_id
 * inside the section, loads, checks and ends in exactly one plain store (the
 * commit).  If the thread is preempted, migrated, signalled or hit by a
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) IPI between the first
 * instruction and the commit, the kernel resumes it at the abort handler,
 * which starts the section again from the descriptor store; so a section
 * whose store happened ran, from its cpu_id load to its store, without any
 * other thread of this CPU running and without any membarrier completing in
 * between (the argument that uses this is at counter.c's rseq section).
 *
 * Contract of every function here:
 *   - `off` is __rseq_offset, `slots` the counter's slot array with
 *     `nslots` entries of BGA_CACHELINE bytes: value (int32, low half of the
 *     word) at offset 0, the rseq seal flag (uint32) at offset 8;
 *   - returns CTR_RSEQ_OK when the store committed, CTR_RSEQ_FULL when the
 *     slot is sealed or the result would leave [-lim, lim] (or the limited
 *     add's total check fails), with nothing stored, and CTR_RSEQ_NONE when
 *     this thread has no usable rseq area (cpu_id negative: registration
 *     failed in this thread) or its CPU has no slot (id >= nslots, a CPU
 *     hot-added past _SC_NPROCESSORS_CONF): then nothing was touched and the
 *     caller goes to the locked path.
 *
 * Only x86-64 for now (BGA_COUNTER_HAVE_RSEQ); elsewhere, and in TSan builds
 * (TSan cannot see the plain stores inside the asm), the counter runs the
 * CAS path of counter_impl.h.  The abort handler is preceded by glibc's
 * RSEQ_SIG, as the kernel checks, encoded as the operand of an undefined
 * instruction (ud1) as the kernel's selftests and librseq do, so that a
 * stray jump there traps.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/rseq.h>

enum { CTR_RSEQ_OK = 0, CTR_RSEQ_FULL = 1, CTR_RSEQ_NONE = 2 };

#if defined(__x86_64__) && !defined(BGA_TSAN_BUILD) && !defined(BGA_COUNTER_NO_RSEQ)
#define BGA_COUNTER_HAVE_RSEQ 1

/* Offsets in struct rseq (uapi, fixed by the ABI) and in counter_slot. */
#define CTR_RSEQ_CPU_ID 4
#define CTR_RSEQ_CS 8
#define CTR_SLOT_SEAL 8
#define CTR_STR_(x) #x
#define CTR_STR(x) CTR_STR_(x)

/*
 * Descriptor (struct rseq_cs: version 0, flags 0, start_ip, post_commit
 * offset, abort_ip; 32-byte aligned, as the ABI requires) for the section
 * between labels 1 and 2, with its abort handler at 4; label 3 names the
 * descriptor, label 6 the descriptor store that every (re)start begins at.
 * Numeric labels, so that every inlined copy gets its own.
 */
#define CTR_RSEQ_PROLOGUE(off)                                                                        \
	".pushsection __rseq_cs, \"aw\"\n\t"                                                             \
	".balign 32\n"                                                                                  \
	"3:\n\t"                                                                                        \
	".long 0, 0\n\t"                                                                                \
	".quad 1f, 2f - 1f, 4f\n\t"                                                                     \
	".popsection\n\t"                                                                               \
	".pushsection __rseq_failure, \"ax\"\n\t"                                                       \
	".byte 0x0f, 0xb9, 0x3d\n\t"                                                                    \
	".long " CTR_STR(RSEQ_SIG) "\n"                                                                 \
	"4:\n\t"                                                                                        \
	"jmp 6f\n\t"                                                                                    \
	".popsection\n"                                                                                 \
	"6:\n\t"                                                                                        \
	"leaq 3b(%%rip), %%rax\n\t"                                                                     \
	"movq %%rax, %%fs:" CTR_STR(CTR_RSEQ_CS) "(%[" off "])\n"                                       \
	"1:\n\t"

/* The slot of this CPU into %rax, or to label 7 (CTR_RSEQ_NONE). */
#define CTR_RSEQ_SLOT(off, slots, nslots)                                                             \
	"movl %%fs:" CTR_STR(CTR_RSEQ_CPU_ID) "(%[" off "]), %%eax\n\t"                                  \
	"cmpl %[" nslots "], %%eax\n\t"                                                                  \
	"jae 7f\n\t"                                                                                    \
	"shlq $7, %%rax\n\t"                                                                            \
	"addq %[" slots "], %%rax\n\t"

/* Exits: 2 (committed), 7 (no rseq), 8 (full or sealed). */
#define CTR_RSEQ_EPILOGUE(res)                                                                        \
	"2:\n\t"                                                                                        \
	"xorl %k[" res "], %k[" res "]\n\t"                                                              \
	"jmp 9f\n"                                                                                      \
	"7:\n\t"                                                                                        \
	"movl $" CTR_STR(2) ", %k[" res "]\n\t"                                                          \
	"jmp 9f\n"                                                                                      \
	"8:\n\t"                                                                                        \
	"movl $" CTR_STR(1) ", %k[" res "]\n"                                                            \
	"9:\n\t"

_Static_assert(BGA_CACHELINE == 128, "the sections index slots with shlq $7");

/*
 * slot += delta if the slot is unsealed and the result stays in [-lim, lim]
 * (span = 2 * lim).  The bound is one unsigned compare of nv + lim against
 * span.  No lock prefix anywhere: the slot line is this CPU's.
 */
static inline int ctr_rseq_add(ptrdiff_t off, void *slots, uint32_t nslots, int64_t delta, int64_t lim,
			       uint64_t span)
{
	int res;

	__asm__ __volatile__(CTR_RSEQ_PROLOGUE("off") CTR_RSEQ_SLOT("off", "slots", "nslots")
			     "cmpl $0, " CTR_STR(CTR_SLOT_SEAL) "(%%rax)\n\t"
			     "jne 8f\n\t"
			     "movslq (%%rax), %%rcx\n\t"
			     "addq %[delta], %%rcx\n\t"
			     "leaq (%%rcx, %[lim]), %%rdx\n\t"
			     "cmpq %[span], %%rdx\n\t"
			     "ja 8f\n\t"
			     "movl %%ecx, (%%rax)\n" /* commit */
			     CTR_RSEQ_EPILOGUE("res")
			     : [res] "=r"(res)
			     : [off] "r"(off), [slots] "r"(slots), [nslots] "r"(nslots), [delta] "r"(delta),
			       [lim] "r"(lim), [span] "r"(span)
			     : "rax", "rcx", "rdx", "memory", "cc");
	return res;
}

/*
 * The limited add's section: as ctr_rseq_add (only the upper bound
 * matters, delta > 0), and in the same section *total <= room, loaded
 * after the seal flag and the slot.
 */
static inline int ctr_rseq_add_limited(ptrdiff_t off, void *slots, uint32_t nslots, int64_t delta,
				       int64_t lim, const int64_t *total, int64_t room)
{
	int res;

	__asm__ __volatile__(CTR_RSEQ_PROLOGUE("off") CTR_RSEQ_SLOT("off", "slots", "nslots")
			     "cmpl $0, " CTR_STR(CTR_SLOT_SEAL) "(%%rax)\n\t"
			     "jne 8f\n\t"
			     "movslq (%%rax), %%rcx\n\t"
			     "addq %[delta], %%rcx\n\t"
			     "cmpq %[lim], %%rcx\n\t"
			     "jg 8f\n\t"
			     "cmpq %[room], (%[total])\n\t"
			     "jg 8f\n\t"
			     "movl %%ecx, (%%rax)\n" /* commit */
			     CTR_RSEQ_EPILOGUE("res")
			     : [res] "=r"(res)
			     : [off] "r"(off), [slots] "r"(slots), [nslots] "r"(nslots), [delta] "r"(delta),
			       [lim] "r"(lim), [total] "r"(total), [room] "r"(room)
			     : "rax", "rcx", "memory", "cc");
	return res;
}

/*
 * Take this CPU's slot value out: *v = slot, slot = 0, in one section.
 * Never FULL (it ignores the seal: only the counter's lock holder calls it,
 * and only a lock holder seals).  *v = 0 with CTR_RSEQ_NONE.
 */
static inline int ctr_rseq_take(ptrdiff_t off, void *slots, uint32_t nslots, int64_t *v)
{
	int res;
	int64_t got;

	__asm__ __volatile__(CTR_RSEQ_PROLOGUE("off") CTR_RSEQ_SLOT("off", "slots", "nslots")
			     "movslq (%%rax), %[got]\n\t"
			     "movl $0, (%%rax)\n" /* commit */
			     "2:\n\t"
			     "xorl %k[res], %k[res]\n\t"
			     "jmp 9f\n"
			     "7:\n\t"
			     "xorl %k[got], %k[got]\n\t"
			     "movl $2, %k[res]\n"
			     "9:\n\t"
			     : [res] "=&r"(res), [got] "=&r"(got)
			     : [off] "r"(off), [slots] "r"(slots), [nslots] "r"(nslots)
			     : "rax", "memory", "cc");
	*v = got;
	return res;
}

#else
#define BGA_COUNTER_HAVE_RSEQ 0

static inline int ctr_rseq_add(ptrdiff_t off, void *slots, uint32_t nslots, int64_t delta, int64_t lim,
			       uint64_t span)
{
	(void)off, (void)slots, (void)nslots, (void)delta, (void)lim, (void)span;
	return CTR_RSEQ_NONE;
}

static inline int ctr_rseq_add_limited(ptrdiff_t off, void *slots, uint32_t nslots, int64_t delta,
				       int64_t lim, const int64_t *total, int64_t room)
{
	(void)off, (void)slots, (void)nslots, (void)delta, (void)lim, (void)total, (void)room;
	return CTR_RSEQ_NONE;
}

static inline int ctr_rseq_take(ptrdiff_t off, void *slots, uint32_t nslots, int64_t *v)
{
	(void)off, (void)slots, (void)nslots;
	*v = 0;
	return CTR_RSEQ_NONE;
}
#endif

#endif
