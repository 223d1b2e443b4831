// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The model's runtime: what rt.h says.  Built without instrumentation and
 * linked into bga-model, whose copy of lib/ is built with
 * -fsanitize=thread (bench/model/CMakeLists.txt): every load, store and
 * atomic of lib/ lands here.  The atomics are performed here too (the
 * instrumentation replaced them by calls), sequentially consistent
 * whatever order was asked: the baton runs one thread at a time, so the
 * order asked cannot be observed.
 *
 * Not seen: accesses inside libc (memset, memcpy, the pthread mutex word
 * except as the wrapper below touches it) and inside liburcu-bp.
 */
#define _GNU_SOURCE
#include "rt.h"

#include "clock.h"
#include "rt_alloc.h"

_Static_assert(RT_MAX_CORES <= CLK_CORES, "a clock for every modelled core");

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* glibc's own allocator, under rt_alloc.c's wrappers: the runtime's own
 * tables are no heap blocks of the program's. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void __libc_free(void *);

extern char __executable_start[], _end[];

/* ---- lines ----------------------------------------------------------- */

struct line {
	uint64_t key; /* line number + 1; 0 = empty slot */
	uint64_t sharers;
	int32_t owner; /* last writer; -1: never written */
	uint32_t rmoves, wmoves;
	uint64_t users; /* cores that touched it while measuring */
	uintptr_t addr, pc; /* the access behind the last counted move */
};

#define LINE_BITS 21
#define LINE_SLOTS (1u << LINE_BITS)
static struct line *lines;
static uint32_t lines_used;

static __thread int cur_core = -1; /* -1: not a modelled core; counted as core 0 */
static int measuring;
static uint64_t n_ops, n_acc, n_rmoves, n_wmoves, n_amoves;
static double n_stall, n_waited; /* clock.h's, measured, instruction times */
static int virtual_holds;

/* access kinds: a read, a plain write, an atomic read-modify-write or store */
enum { RD = 0, WR = 1, AT = 2 };
#define MO_SEQ_CST 5 /* the instrumentation's memory orders: relaxed 0 ... seq_cst 5 */

/* ---- locks ------------------------------------------------------------- */

struct lockst {
	uintptr_t addr; /* 0 = empty */
	const char *kind;
	uint64_t holds, cs_acc, cs_moves, cores;
	/* on the modelled clocks: the holds' length and the stalls of the
	 * acquisitions (the hand-off), trylocks and locks that found it held */
	double cs_clk, acq_stall, waited;
	uint64_t tryfails, waits;
	/* the last holds of two cores: (core + 1, start, end); 0 = none */
	int vcore[2];
	double vh0[2], vh1[2];
};
#define LOCK_SLOTS 8192u
static struct lockst locks[LOCK_SLOTS];
#define MAX_HELD 8
static struct lockst *held[RT_MAX_CORES][MAX_HELD];
static double held_t0[RT_MAX_CORES][MAX_HELD];
static int nheld[RT_MAX_CORES];
static double acq_stall_of[RT_MAX_CORES]; /* the stall of a core's last access */
static uintptr_t looked[RT_MAX_CORES]; /* the lock word it last found held */

struct range {
	uintptr_t base;
	size_t n, stride;
	const char *name;
};
static struct range lock_ranges[8], objects[64], rseq_slots[4];
static int nlock_ranges, nobjects, nrseq_slots;

static inline int core_now(void)
{
	return cur_core < 0 ? 0 : cur_core;
}

static inline uint64_t mix(uint64_t x)
{
	x *= 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 29);
}

static struct line *line_of(uint64_t l)
{
	uint64_t key = l + 1;
	uint32_t i = (uint32_t)mix(key) & (LINE_SLOTS - 1);

	if (!lines)
		lines = __libc_calloc(LINE_SLOTS, sizeof(*lines));
	for (;; i = (i + 1) & (LINE_SLOTS - 1)) {
		struct line *e = &lines[i];
		if (e->key == key)
			return e;
		if (e->key == 0) {
			if (++lines_used > LINE_SLOTS / 4 * 3) {
				fprintf(stderr, "model: more than %u lines touched\n", LINE_SLOTS / 4 * 3);
				abort();
			}
			e->key = key;
			e->owner = -1;
			return e;
		}
	}
}

/* Moves made while holding a lock, by the access that made them: where a
 * critical section's moves come from (the report's "cs_pcs"). */
struct cs_pc {
	uintptr_t pc; /* 0 = empty */
	uint64_t moves;
};
#define CS_PC_SLOTS 4096u
static struct cs_pc cs_pcs[CS_PC_SLOTS];

static void cs_pc_count(uintptr_t pc)
{
	for (uint32_t i = (uint32_t)mix(pc) & (CS_PC_SLOTS - 1), k = 0; k < CS_PC_SLOTS; i = (i + 1) & (CS_PC_SLOTS - 1), k++) {
		if (cs_pcs[i].pc == pc || cs_pcs[i].pc == 0) {
			cs_pcs[i].pc = pc;
			cs_pcs[i].moves++;
			return;
		}
	}
}

/* Stalls (clock.h) by the access that made them: where a core waits (the
 * report's "stall_pcs"). */
struct stall_pc {
	uintptr_t pc; /* 0 = empty */
	double stall;
};
static struct stall_pc stall_pcs[CS_PC_SLOTS];

static void stall_pc_count(uintptr_t pc, double st)
{
	for (uint32_t i = (uint32_t)mix(pc) & (CS_PC_SLOTS - 1), k = 0; k < CS_PC_SLOTS; i = (i + 1) & (CS_PC_SLOTS - 1), k++) {
		if (stall_pcs[i].pc == pc || stall_pcs[i].pc == 0) {
			stall_pcs[i].pc = pc;
			stall_pcs[i].stall += st;
			return;
		}
	}
}

static int touch_line(uint64_t l, int kind, uintptr_t addr, uintptr_t pc)
{
	int write = kind != RD;
	struct line *e = line_of(l);
	int c = core_now();
	uint64_t me = 1ull << c;
	int moved = 0;

	if (write) {
		moved = (e->sharers & ~me) ? 2 : 0;
		e->owner = c;
		e->sharers = me;
	} else if (!(e->sharers & me)) {
		moved = e->owner >= 0 && e->owner != c;
		e->sharers |= me;
	}
	if (measuring)
		e->users |= me;
	if (!moved || !measuring)
		return moved;
	if (moved == 1) {
		n_rmoves++;
		e->rmoves++;
	} else {
		n_wmoves++;
		n_amoves += kind == AT;
		e->wmoves++;
	}
	e->addr = addr;
	e->pc = pc;
	for (int i = 0; i < nheld[c]; i++)
		held[c][i]->cs_moves++;
	if (nheld[c])
		cs_pc_count(pc);
	return moved;
}

static int in_lock_range(uintptr_t a);
static void lock_released(uintptr_t addr);

/* kind: RD, WR or AT for the line; clk: what the core does (clock.h) */
static inline void access_clk(const volatile void *p, size_t size, int kind, enum clk_kind clk, uintptr_t pc)
{
	int write = kind != RD, moved = 0;
	uintptr_t a = (uintptr_t)p;
	int c = core_now();
	double st;

	if (measuring) {
		n_acc++;
		for (int i = 0; i < nheld[c]; i++)
			held[c][i]->cs_acc++;
	}
	if (size) {
		/* Concurrency Kit's unlocks are plain (volatile) stores of 0: a
		 * plain write by the holder to a lock word it holds is its release. */
		if (write && nheld[c] && nlock_ranges && in_lock_range(a))
			lock_released(a);
		/* the lines of one access miss together: one miss for the clock */
		for (uint64_t l = a >> 6; l <= (a + size - 1) >> 6; l++)
			moved |= touch_line(l, kind, a, pc);
	}
	st = clk_access(c, clk, moved);
	acq_stall_of[c] = st;
	if (measuring && st > 0) {
		n_stall += st;
		stall_pc_count(pc, st);
	}
}

/* Whether a is in the calling core's own per-CPU slot (rt_rseq_slots). */
static int own_rseq_slot(uintptr_t a)
{
	for (int i = 0; i < nrseq_slots; i++) {
		struct range *r = &rseq_slots[i];
		if (a >= r->base && a < r->base + r->n * r->stride)
			return (int)((a - r->base) / r->stride) == core_now();
	}
	return 0;
}

static inline void access_(const volatile void *p, size_t size, int kind, uintptr_t pc)
{
	enum clk_kind clk = kind == RD ? CLK_LOAD : kind == WR ? CLK_STORE : CLK_LOCKED;

	if (clk == CLK_LOCKED && nrseq_slots && own_rseq_slot((uintptr_t)p))
		clk = CLK_STORE;
	access_clk(p, size, kind, clk, pc);
}

static struct lockst *lock_of(uintptr_t addr, const char *kind)
{
	uint32_t i = (uint32_t)mix(addr) & (LOCK_SLOTS - 1);

	for (;; i = (i + 1) & (LOCK_SLOTS - 1)) {
		if (locks[i].addr == addr)
			return &locks[i];
		if (locks[i].addr == 0) {
			locks[i].addr = addr;
			locks[i].kind = kind;
			return &locks[i];
		}
	}
}

static void lock_acquired(uintptr_t addr, const char *kind)
{
	int c = core_now();
	struct lockst *l = lock_of(addr, kind);

	if (nheld[c] == MAX_HELD) {
		fprintf(stderr, "model: more than %d locks held at once\n", MAX_HELD);
		abort();
	}
	held_t0[c][nheld[c]] = clk_now(c);
	held[c][nheld[c]++] = l;
	looked[c] = 0;
	if (measuring) {
		l->holds++;
		l->cores |= 1ull << c;
		l->acq_stall += acq_stall_of[c];
	}
}

static void lock_released(uintptr_t addr)
{
	int c = core_now();

	for (int i = nheld[c] - 1; i >= 0; i--) {
		struct lockst *l = held[c][i];
		double t0 = held_t0[c][i], t1 = clk_now(c);
		if (l->addr != addr)
			continue;
		if (measuring)
			l->cs_clk += t1 - t0;
		if (l->vcore[0] != c + 1) {
			l->vcore[1] = l->vcore[0];
			l->vh0[1] = l->vh0[0];
			l->vh1[1] = l->vh1[0];
		}
		l->vcore[0] = c + 1;
		l->vh0[0] = t0;
		l->vh1[0] = t1;
		memmove(&held[c][i], &held[c][i + 1], (size_t)(nheld[c] - i - 1) * sizeof(held[c][0]));
		memmove(&held_t0[c][i], &held_t0[c][i + 1], (size_t)(nheld[c] - i - 1) * sizeof(held_t0[c][0]));
		nheld[c]--;
		return;
	}
}

static int in_lock_range(uintptr_t a)
{
	for (int i = 0; i < nlock_ranges; i++) {
		struct range *r = &lock_ranges[i];
		if (a >= r->base && a < r->base + r->n * r->stride && (a - r->base) % r->stride == 0)
			return 1;
	}
	return 0;
}

/*
 * Contention on the modelled clocks.  The baton runs one core at a time, so
 * a lock word is always free when a core reaches it; but the core whose
 * turn it is stands at a modelled instant, and another core's last hold of
 * that lock (the baton runs the core with the earliest clock next, so those
 * holds lie around this instant) may cover it.  Then the core finds the
 * lock held: its exchange or load of the word returns the held value, and
 * the library's own code does what it does with a held lock (a trylock
 * fails and steers the request away; a lock spins).  A core that looks at
 * the same held word again without taking any lock between is waiting for
 * it: its clock goes to the end of that hold (clock.h: a lock's queue,
 * not a stall) and the word is free to it.
 */
static int vheld(struct lockst *l, int c, double now, double *until)
{
	int found = 0;

	for (int i = 0; i < 2; i++)
		if (l->vcore[i] && l->vcore[i] != c + 1 && l->vh0[i] <= now && now < l->vh1[i]) {
			if (!found || l->vh1[i] > *until)
				*until = l->vh1[i];
			found = 1;
		}
	return found;
}

static int held_elsewhere(const volatile void *a)
{
	int c = cur_core;
	double until = 0;
	struct lockst *l;

	if (!virtual_holds || c < 0 || !nlock_ranges || !in_lock_range((uintptr_t)a))
		return 0;
	l = lock_of((uintptr_t)a, "spin");
	if (!vheld(l, c, clk_now(c), &until))
		return 0;
	if (looked[c] == (uintptr_t)a) {
		if (measuring) {
			l->waits++;
			l->waited += until - clk_now(c);
			n_waited += until - clk_now(c);
		}
		clk_wait_until(c, until);
		looked[c] = 0;
		return 0;
	}
	looked[c] = (uintptr_t)a;
	if (measuring)
		l->tryfails++;
	return 1;
}

/* An atomic changed the word at a from old to new: a lock word of a range
 * going 0 -> non-zero is an acquisition, back to 0 a release. */
static inline void lock_watch(const volatile void *a, uint64_t old, uint64_t new)
{
	if (!nlock_ranges || !in_lock_range((uintptr_t)a))
		return;
	if (old == 0 && new != 0)
		lock_acquired((uintptr_t)a, "spin");
	else if (old != 0 && new == 0)
		lock_released((uintptr_t)a);
}

/* ---- the API of rt.h ------------------------------------------------------- */

void rt_set_core(int core)
{
	cur_core = core;
}

void rt_measure(int on)
{
	measuring = on;
}

void rt_op_done(void)
{
	if (measuring)
		n_ops++;
}

int rt_counting(void)
{
	return 1;
}

void rt_reset(void)
{
	if (lines)
		memset(lines, 0, LINE_SLOTS * sizeof(*lines));
	lines_used = 0;
	memset(locks, 0, sizeof(locks));
	memset(cs_pcs, 0, sizeof(cs_pcs));
	memset(stall_pcs, 0, sizeof(stall_pcs));
	memset(nheld, 0, sizeof(nheld));
	nlock_ranges = nobjects = nrseq_slots = 0;
	memset(held_t0, 0, sizeof(held_t0));
	memset(looked, 0, sizeof(looked));
	n_ops = n_acc = n_rmoves = n_wmoves = n_amoves = 0;
	n_stall = n_waited = 0;
	clk_reset();
	measuring = 0;
}

void rt_clock_config(double ipa, double xfer, int holds)
{
	clk_config(ipa, xfer);
	virtual_holds = holds && xfer > 0;
}

void rt_clock_sync(int n)
{
	clk_sync(n);
}

double rt_clock(int core)
{
	return clk_now(core);
}

void rt_lock_range(const void *base, size_t n, size_t stride, const char *name)
{
	if (nlock_ranges < (int)(sizeof(lock_ranges) / sizeof(lock_ranges[0])))
		lock_ranges[nlock_ranges++] = (struct range){(uintptr_t)base, n, stride, name};
	rt_object(base, n, stride, name);
}

void rt_rseq_slots(const void *base, size_t n, size_t stride)
{
	if (nrseq_slots < (int)(sizeof(rseq_slots) / sizeof(rseq_slots[0])))
		rseq_slots[nrseq_slots++] = (struct range){(uintptr_t)base, n, stride, "rseq"};
}

void rt_object(const void *base, size_t n, size_t size, const char *type)
{
	if (nobjects < (int)(sizeof(objects) / sizeof(objects[0])))
		objects[nobjects++] = (struct range){(uintptr_t)base, n, size, type};
}

/* Where address a is, as one JSON string: a registered object and its
 * element and offset, a live heap block by its allocation site, the
 * executable's image, or the bare address. */
static void name_addr(FILE *f, uintptr_t a)
{
	uintptr_t exe = (uintptr_t)__executable_start, base, site;
	size_t size;

	for (int i = 0; i < nobjects; i++) {
		struct range *r = &objects[i];
		if (a >= r->base && a < r->base + r->n * r->stride) {
			size_t k = (a - r->base) / r->stride;
			if (r->n > 1)
				fprintf(f, "\"obj:%s[%zu]+%zu\"", r->name, k, (size_t)(a - r->base - k * r->stride));
			else
				fprintf(f, "\"obj:%s+%zu\"", r->name, (size_t)(a - r->base));
			return;
		}
	}
	if (a >= exe && a < (uintptr_t)_end) {
		fprintf(f, "\"exe:0x%" PRIxPTR "\"", a - exe);
		return;
	}
	if (rt_heap_block(a, &base, &size, &site)) {
		fprintf(f, "\"heap:0x%" PRIxPTR "+%zu/%zu\"", site - exe, (size_t)(a - base), size);
		return;
	}
	fprintf(f, "\"addr:0x%" PRIxPTR "\"", a);
}

static int by_moves(const void *x, const void *y)
{
	const struct line *a = *(struct line *const *)x, *b = *(struct line *const *)y;
	uint32_t ma = a->rmoves + a->wmoves, mb = b->rmoves + b->wmoves;
	return ma < mb ? 1 : ma > mb ? -1 : (a->key > b->key) - (a->key < b->key);
}

void rt_report(FILE *f, int top)
{
	struct line **moved = __libc_malloc(sizeof(*moved) * (lines_used + 1));
	uint32_t n = 0;
	int first = 1;

	fprintf(f, "\"ops\": %" PRIu64 ", \"accesses\": %" PRIu64 ", \"rmoves\": %" PRIu64 ", \"wmoves\": %" PRIu64
		   ", \"amoves\": %" PRIu64 ", \"lines_touched\": %u, \"stall\": %.1f, \"waited\": %.1f, \"locks\": [",
		n_ops, n_acc, n_rmoves, n_wmoves, n_amoves, lines_used, n_stall, n_waited);
	for (uint32_t i = 0; i < LOCK_SLOTS; i++) {
		struct lockst *l = &locks[i];
		if (!l->addr || !l->holds)
			continue;
		fprintf(f, "%s{\"kind\": \"%s\", \"where\": ", first ? "" : ", ", l->kind);
		name_addr(f, l->addr);
		fprintf(f, ", \"holds\": %" PRIu64 ", \"cs_acc\": %" PRIu64 ", \"cs_moves\": %" PRIu64 ", \"cores\": %d",
			l->holds, l->cs_acc, l->cs_moves, __builtin_popcountll(l->cores));
		fprintf(f, ", \"cs_clk\": %.1f, \"acq_stall\": %.1f, \"tryfails\": %" PRIu64 ", \"waits\": %" PRIu64
			   ", \"waited\": %.1f}",
			l->cs_clk, l->acq_stall, l->tryfails, l->waits, l->waited);
		first = 0;
	}
	fprintf(f, "], \"lines\": [");
	for (uint32_t i = 0; lines && moved && i < LINE_SLOTS; i++)
		if (lines[i].key && lines[i].rmoves + lines[i].wmoves)
			moved[n++] = &lines[i];
	if (moved)
		qsort(moved, n, sizeof(*moved), by_moves);
	for (uint32_t i = 0; i < n && (int)i < top; i++) {
		struct line *e = moved[i];
		fprintf(f, "%s{\"where\": ", i ? ", " : "");
		name_addr(f, e->addr);
		fprintf(f, ", \"rmoves\": %u, \"wmoves\": %u, \"cores\": %d, \"pc\": \"0x%" PRIxPTR "\"}", e->rmoves,
			e->wmoves, __builtin_popcountll(e->users), e->pc - (uintptr_t)__executable_start);
	}
	fprintf(f, "], \"lines_moving\": %u, \"cs_pcs\": [", n);
	first = 1;
	for (uint32_t i = 0; i < CS_PC_SLOTS; i++)
		if (cs_pcs[i].pc) {
			fprintf(f, "%s[\"0x%" PRIxPTR "\", %" PRIu64 "]", first ? "" : ", ",
				cs_pcs[i].pc - (uintptr_t)__executable_start, cs_pcs[i].moves);
			first = 0;
		}
	fprintf(f, "], \"stall_pcs\": [");
	first = 1;
	for (uint32_t i = 0; i < CS_PC_SLOTS; i++)
		if (stall_pcs[i].pc) {
			fprintf(f, "%s[\"0x%" PRIxPTR "\", %.1f]", first ? "" : ", ",
				stall_pcs[i].pc - (uintptr_t)__executable_start, stall_pcs[i].stall);
			first = 0;
		}
	fprintf(f, "]");
	__libc_free(moved);
}

#define SITE ((uintptr_t)__builtin_return_address(0))

/* ---- pthread mutexes: every one a lock ------------------------------------ */

static int (*real_lock)(pthread_mutex_t *), (*real_trylock)(pthread_mutex_t *), (*real_unlock)(pthread_mutex_t *);

static void resolve(void)
{
	real_lock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
	real_trylock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_trylock");
	real_unlock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_unlock");
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
	int rc;
	if (!real_lock)
		resolve();
	rc = real_lock(m);
	if (rc == 0 && cur_core >= 0) {
		access_(m, 4, AT, SITE);
		lock_acquired((uintptr_t)m, "mutex");
	}
	return rc;
}

int pthread_mutex_trylock(pthread_mutex_t *m)
{
	int rc;
	if (!real_trylock)
		resolve();
	rc = real_trylock(m);
	if (cur_core >= 0) {
		access_(m, 4, AT, SITE);
		if (rc == 0)
			lock_acquired((uintptr_t)m, "mutex");
	}
	return rc;
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
	if (!real_unlock)
		resolve();
	if (cur_core >= 0) {
		access_(m, 4, AT, SITE);
		lock_released((uintptr_t)m);
	}
	return real_unlock(m);
}

/* ---- the instrumentation's entry points ------------------------------------ */

#define PLAIN(kind, n, write)                                                                                         \
	void __tsan_##kind##n(void *p)                                                                                \
	{                                                                                                             \
		access_(p, n, write, SITE);                                                                           \
	}                                                                                                             \
	void __tsan_unaligned_##kind##n(void *p)                                                                      \
	{                                                                                                             \
		access_(p, n, write, SITE);                                                                           \
	}                                                                                                             \
	void __tsan_volatile_##kind##n(void *p)                                                                       \
	{                                                                                                             \
		access_(p, n, write, SITE);                                                                           \
	}                                                                                                             \
	void __tsan_##kind##n##_pc(void *p, void *pc)                                                                 \
	{                                                                                                             \
		access_(p, n, write, (uintptr_t)pc);                                                                  \
	}
PLAIN(read, 1, 0)
PLAIN(read, 2, 0)
PLAIN(read, 4, 0)
PLAIN(read, 8, 0)
PLAIN(read, 16, 0)
PLAIN(write, 1, 1)
PLAIN(write, 2, 1)
PLAIN(write, 4, 1)
PLAIN(write, 8, 1)
PLAIN(write, 16, 1)

void __tsan_read_range(void *p, unsigned long n)
{
	access_(p, n, 0, SITE);
}
void __tsan_write_range(void *p, unsigned long n)
{
	access_(p, n, 1, SITE);
}
void __tsan_func_entry(void *pc)
{
	(void)pc;
}
void __tsan_func_exit(void)
{
}
void __tsan_init(void)
{
}
void __tsan_vptr_update(void **p, void *v)
{
	access_(p, sizeof(*p), 1, SITE);
	*p = v;
}
void __tsan_vptr_read(void **p)
{
	access_(p, sizeof(*p), 0, SITE);
}
void __tsan_atomic_thread_fence(int mo)
{
	/* only a sequentially consistent fence is an instruction on x86 (mfence) */
	if (mo == MO_SEQ_CST)
		access_clk(NULL, 0, RD, CLK_FENCE, SITE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
void __tsan_atomic_signal_fence(int mo)
{
	(void)mo;
}

void *__tsan_memcpy(void *d, const void *s, size_t n)
{
	access_(s, n, 0, SITE);
	access_(d, n, 1, SITE);
	return memcpy(d, s, n);
}
void *__tsan_memmove(void *d, const void *s, size_t n)
{
	access_(s, n, 0, SITE);
	access_(d, n, 1, SITE);
	return memmove(d, s, n);
}
void *__tsan_memset(void *d, int c, size_t n)
{
	access_(d, n, 1, SITE);
	return memset(d, c, n);
}

#define SC __ATOMIC_SEQ_CST
#define ATOMICS(bits, T)                                                                                              \
	T __tsan_atomic##bits##_load(const volatile T *a, int mo)                                                     \
	{                                                                                                             \
		(void)mo;                                                                                             \
		access_(a, sizeof(T), 0, SITE);                                                                       \
		if (held_elsewhere(a))                                                                                \
			return (T)1;                                                                                  \
		return __atomic_load_n(a, SC);                                                                        \
	}                                                                                                             \
	void __tsan_atomic##bits##_store(volatile T *a, T v, int mo)                                                  \
	{                                                                                                             \
		T old = *a;                                                                                           \
		/* x86: a plain mov unless sequentially consistent (xchg) */                                          \
		access_clk(a, sizeof(T), mo == MO_SEQ_CST ? AT : WR, mo == MO_SEQ_CST ? CLK_LOCKED : CLK_STORE,       \
			   SITE);                                                                                     \
		__atomic_store_n(a, v, SC);                                                                           \
		lock_watch(a, (uint64_t)old, (uint64_t)v);                                                            \
	}                                                                                                             \
	RMW(bits, T, exchange, if (held_elsewhere(a)) return v; old = __atomic_exchange_n(a, v, SC); new = v)        \
	RMW(bits, T, fetch_add, old = __atomic_fetch_add(a, v, SC); new = (T)(old + v))                               \
	RMW(bits, T, fetch_sub, old = __atomic_fetch_sub(a, v, SC); new = (T)(old - v))                               \
	RMW(bits, T, fetch_and, old = __atomic_fetch_and(a, v, SC); new = (T)(old & v))                               \
	RMW(bits, T, fetch_or, old = __atomic_fetch_or(a, v, SC); new = (T)(old | v))                                 \
	RMW(bits, T, fetch_xor, old = __atomic_fetch_xor(a, v, SC); new = (T)(old ^ v))                               \
	RMW(bits, T, fetch_nand, old = __atomic_fetch_nand(a, v, SC); new = (T) ~(old & v))                           \
	int __tsan_atomic##bits##_compare_exchange_strong(volatile T *a, T *c, T v, int mo, int fmo)                  \
	{                                                                                                             \
		T old = *c;                                                                                           \
		int ok;                                                                                               \
		(void)mo, (void)fmo;                                                                                  \
		access_(a, sizeof(T), AT, SITE);                                                                       \
		ok = __atomic_compare_exchange_n(a, c, v, 0, SC, SC);                                                 \
		if (ok)                                                                                               \
			lock_watch(a, (uint64_t)old, (uint64_t)v);                                                    \
		return ok;                                                                                            \
	}                                                                                                             \
	int __tsan_atomic##bits##_compare_exchange_weak(volatile T *a, T *c, T v, int mo, int fmo)                    \
	{                                                                                                             \
		T old = *c;                                                                                           \
		int ok;                                                                                               \
		(void)mo, (void)fmo;                                                                                  \
		access_(a, sizeof(T), AT, SITE);                                                                       \
		ok = __atomic_compare_exchange_n(a, c, v, 0, SC, SC);                                                 \
		if (ok)                                                                                               \
			lock_watch(a, (uint64_t)old, (uint64_t)v);                                                    \
		return ok;                                                                                            \
	}                                                                                                             \
	T __tsan_atomic##bits##_compare_exchange_val(volatile T *a, T c, T v, int mo, int fmo)                        \
	{                                                                                                             \
		T exp = c;                                                                                            \
		(void)mo, (void)fmo;                                                                                  \
		access_(a, sizeof(T), AT, SITE);                                                                       \
		if (__atomic_compare_exchange_n(a, &exp, v, 0, SC, SC))                                               \
			lock_watch(a, (uint64_t)c, (uint64_t)v);                                                      \
		return exp;                                                                                           \
	}

#define RMW(bits, T, op, body)                                                                                        \
	T __tsan_atomic##bits##_##op(volatile T *a, T v, int mo)                                                      \
	{                                                                                                             \
		T old, new;                                                                                           \
		(void)mo;                                                                                             \
		access_(a, sizeof(T), AT, SITE);                                                                       \
		body;                                                                                                 \
		lock_watch(a, (uint64_t)old, (uint64_t) new);                                                         \
		return old;                                                                                           \
	}

ATOMICS(8, uint8_t)
ATOMICS(16, uint16_t)
ATOMICS(32, uint32_t)
ATOMICS(64, uint64_t)
ATOMICS(128, unsigned __int128)
