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
 * Included by counter_impl.h after struct bga_counter, whose fields the
 * sections read by offset.  Contract of every function here:
 *   - c is a counter on CTR_PATH_RSEQ: c->rseq_off is __rseq_offset, and
 *     c->slots has c->nslots entries of 128 bytes: value (int32, low half
 *     of the word) at offset 0, the rseq seal flag (uint32) at offset 8;
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

struct bga_counter;

#if defined(__x86_64__) && !defined(BGA_TSAN_BUILD) && !defined(BGA_COUNTER_NO_RSEQ)
#define BGA_COUNTER_HAVE_RSEQ 1

/* Offsets in struct rseq (uapi, fixed by the ABI) and in counter_slot. */
#define CTR_RSEQ_CPU_ID 4
#define CTR_RSEQ_CS 8
#define CTR_STR_(x) #x
#define CTR_STR(x) CTR_STR_(x)

_Static_assert(offsetof(struct rseq, cpu_id) == CTR_RSEQ_CPU_ID, "struct rseq ABI");
_Static_assert(offsetof(struct rseq, rseq_cs) == CTR_RSEQ_CS, "struct rseq ABI");
_Static_assert(sizeof(struct counter_slot) == 128, "the sections index slots with shlq $7");
_Static_assert(offsetof(struct counter_slot, rseq_sealed) == 8, "the sections test the seal at 8");

/*
 * Descriptor (struct rseq_cs: version 0, flags 0, start_ip, post_commit
 * offset, abort_ip; 32-byte aligned, as the ABI requires) for the section
 * between labels 1 and 2, with its abort handler at 4; label 3 names the
 * descriptor, label 6 the descriptor store that every (re)start begins at.
 * Numeric labels, so that every inlined copy gets its own.
 */
#define CTR_RSEQ_PROLOGUE                                                                             \
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
	"movq %%rax, %%fs:" CTR_STR(CTR_RSEQ_CS) "(%[off])\n"                                            \
	"1:\n\t"                                                                                        \
	/* This CPU's slot into %rax, or to label 7 (CTR_RSEQ_NONE). */                                  \
	"movl %%fs:" CTR_STR(CTR_RSEQ_CPU_ID) "(%[off]), %%eax\n\t"                                      \
	"cmpl %c[nslots](%[c]), %%eax\n\t"                                                              \
	"jae 7f\n\t"                                                                                    \
	"shlq $7, %%rax\n\t"                                                                            \
	"leaq %c[slots](%[c], %%rax), %%rax\n\t"

/* Exits: 2 (committed), 7 (no rseq), 8 (full or sealed). */
#define CTR_RSEQ_EPILOGUE                                                                             \
	"2:\n\t"                                                                                        \
	"xorl %k[res], %k[res]\n\t"                                                                     \
	"jmp 9f\n"                                                                                      \
	"7:\n\t"                                                                                        \
	"movl $2, %k[res]\n\t"                                                                          \
	"jmp 9f\n"                                                                                      \
	"8:\n\t"                                                                                        \
	"movl $1, %k[res]\n"                                                                            \
	"9:\n\t"

/* The counter's fields the sections read, as immediates. */
#define CTR_RSEQ_FIELDS                                                                               \
	[nslots] "i"(offsetof(struct bga_counter, nslots)),                                             \
	[slots] "i"(offsetof(struct bga_counter, slots)),                                               \
	[max] "i"(offsetof(struct bga_counter, slot_max)),                                              \
	[span] "i"(offsetof(struct bga_counter, slot_span)),                                            \
	[ceiling] "i"(offsetof(struct bga_counter, ceiling))

/*
 * Register use is kept small on purpose (the counter, the rseq offset,
 * delta, and r10/r11/rax as scratch, none of them argument registers): with
 * every field in a register of its own, the callers had to save and restore
 * four to six callee-saved registers around the fast path.
 */

/*
 * slot += delta if the slot is unsealed and the result stays within
 * slot_max of 0: one unsigned compare of nv + slot_max against slot_span
 * (= 2 * slot_max).  No lock prefix anywhere: the slot line is this CPU's.
 */
static inline int ctr_rseq_add(struct bga_counter *c, int64_t delta)
{
	int res;

	__asm__ __volatile__(CTR_RSEQ_PROLOGUE
			     "cmpl $0, 8(%%rax)\n\t"
			     "jne 8f\n\t"
			     "movslq (%%rax), %%r10\n\t"
			     "addq %[delta], %%r10\n\t"
			     "movq %%r10, %%r11\n\t"
			     "addq %c[max](%[c]), %%r11\n\t"
			     "cmpq %c[span](%[c]), %%r11\n\t"
			     "ja 8f\n\t"
			     "movl %%r10d, (%%rax)\n" /* commit */
			     CTR_RSEQ_EPILOGUE
			     : [res] "=r"(res)
			     : [off] "r"(c->rseq_off), [c] "r"(c), [delta] "r"(delta), CTR_RSEQ_FIELDS
			     : "rax", "r10", "r11", "memory", "cc");
	return res;
}

/*
 * The limited add's section: as ctr_rseq_add (only the upper bound
 * matters, delta > 0), and in the same section ceiling <= headroom (the
 * ceiling bounds the total: counter_impl.h), loaded after the seal flag
 * and the slot.
 */
static inline int ctr_rseq_add_limited(struct bga_counter *c, int64_t delta, int64_t headroom)
{
	int res;

	__asm__ __volatile__(CTR_RSEQ_PROLOGUE
			     "cmpl $0, 8(%%rax)\n\t"
			     "jne 8f\n\t"
			     "movslq (%%rax), %%r10\n\t"
			     "addq %[delta], %%r10\n\t"
			     "cmpq %c[max](%[c]), %%r10\n\t"
			     "jg 8f\n\t"
			     "cmpq %[headroom], %c[ceiling](%[c])\n\t"
			     "jg 8f\n\t"
			     "movl %%r10d, (%%rax)\n" /* commit */
			     CTR_RSEQ_EPILOGUE
			     : [res] "=r"(res)
			     : [off] "r"(c->rseq_off), [c] "r"(c), [delta] "r"(delta), [headroom] "r"(headroom),
			       CTR_RSEQ_FIELDS
			     : "rax", "r10", "memory", "cc");
	return res;
}

/*
 * Take this CPU's slot value out: *v = slot, slot = keep (|keep| <=
 * slot_max, the caller's: a fold's hysteresis, counter.c), in one section.
 * Never FULL (it ignores the seal: only the counter's lock holder calls it,
 * and only a lock holder seals).  *v = 0 with CTR_RSEQ_NONE, and nothing
 * stored: keep went nowhere.
 */
static inline int ctr_rseq_take(struct bga_counter *c, int32_t keep, int64_t *v)
{
	int res;
	int64_t got;

	__asm__ __volatile__(CTR_RSEQ_PROLOGUE
			     "movslq (%%rax), %[got]\n\t"
			     "movl %[keep], (%%rax)\n" /* commit */
			     "2:\n\t"
			     "xorl %k[res], %k[res]\n\t"
			     "jmp 9f\n"
			     "7:\n\t"
			     "xorl %k[got], %k[got]\n\t"
			     "movl $2, %k[res]\n"
			     "9:\n\t"
			     : [res] "=&r"(res), [got] "=&r"(got)
			     : [off] "r"(c->rseq_off), [c] "r"(c), [keep] "r"(keep), CTR_RSEQ_FIELDS
			     : "rax", "memory", "cc");
	*v = got;
	return res;
}

#else
#define BGA_COUNTER_HAVE_RSEQ 0

static inline int ctr_rseq_add(struct bga_counter *c, int64_t delta)
{
	(void)c, (void)delta;
	return CTR_RSEQ_NONE;
}

static inline int ctr_rseq_add_limited(struct bga_counter *c, int64_t delta, int64_t headroom)
{
	(void)c, (void)delta, (void)headroom;
	return CTR_RSEQ_NONE;
}

static inline int ctr_rseq_take(struct bga_counter *c, int32_t keep, int64_t *v)
{
	(void)c, (void)keep;
	*v = 0;
	return CTR_RSEQ_NONE;
}
#endif

#endif
