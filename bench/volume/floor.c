/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The floor of churn (the `bga-floor` executable): how fast single-block
 * churn could be on this machine, and so how far bgalloc's hot path is
 * from it.  One process runs the same churn (bga-share's: a 2^20-block
 * volume, a 4096-block working set, each operation a free of one block of
 * the set and an allocation of one block at a random goal, one thread,
 * the same random streams) on four implementations, interleaved:
 *
 *   bgalloc    bga_free + bga_alloc, the library as shipped;
 *   locked     the least that bgalloc's design must do, written for this
 *              one case and nothing else: the calls' argument checks, the
 *              block's group, the group's lock from a hashed table of
 *              ck spinlocks (one line each), the double-free test, the bit
 *              cleared or set, the group's exact free count, the volume's
 *              used count on a per-thread line checked against the
 *              capacity (a plain add: what an rseq section costs at best),
 *              the extent written.  No deferred frees, windows, lazy
 *              groups, growth, steering, statistics, persistence, modes;
 *   counter    locked, with the used count on the library's per-CPU
 *              counter (counter_impl.h, inline, as bga_alloc and bga_free
 *              use it) instead of the plain add: what the counter's
 *              exactness protocol costs on top;
 *   biased     counter, with the fast side of a group lock biased to this
 *              thread's CPU (a restartable sequence; see floor_lock);
 *   unlocked   counter, with the group lock taken and dropped by plain
 *              stores (one thread only): what the counter floor would be
 *              if the uncontended lock cost no locked instruction, as a
 *              lock owned by its CPU (a restartable sequence) could;
 *   lockfree   the bitmap alone with atomic word operations (fetch_and to
 *              free, a CAS to take the first zero bit at or after the
 *              goal), no lock, no counts: the "lock-free bitmap floor" of
 *              DESIGN.md's measured facts;
 *   plain      the bitmap alone with plain loads and stores: what the
 *              arithmetic costs, with no synchronisation at all.
 *
 * `counter` is the bar for bgalloc (`locked` if the counter were free): what no implementation of a locked
 * group-bitmap allocator with exact counts can beat by much, whatever its
 * structure.  Each variant's two operations are out-of-line functions, as
 * bgalloc's are, so calls cost the same.
 *
 *   bga-floor [reps] [ops]        the timing: median ns per operation of
 *                                 each variant, and bgalloc's over each
 *   bga-floor --count VARIANT OPS one run of one variant, nothing else: for
 *                                 callgrind (bench/volume/floor.sh counts them)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ck_spinlock.h>

#include <bgalloc.h>

/* Inside the library (tests/cycles/reach.txt): the `counter` variant
 * charges the library's own counter as bga_alloc and bga_free do, inline
 * on the CPU hint (counter_impl.h); the public bga_counter_add is a call,
 * and the floor would then measure a call the library does not make. */
#include "counter_impl.h"
#include "args.h"
#include "rng.h"
#include "xfer.h"

#define NBLOCKS (UINT64_C(1) << 20)
#define BPG_SHIFT 15
#define BPG (UINT32_C(1) << BPG_SHIFT)
#define NGROUPS (NBLOCKS >> BPG_SHIFT)
#define WSET 4096
#define LOCK_SLOTS 256
#define LINE 128

/* ---- the floor's volume: just enough for single-block churn ---- */

struct fgroup {
	uint64_t *bitmap;
	uint32_t free; /* exact, under the group's lock */
};

struct flock {
	ck_spinlock_fas_t lock;
	int32_t bias; /* `biased`: the CPU whose restartable sequence may take it */
	uint32_t held; /* `biased`: taken by that sequence */
} __attribute__((aligned(LINE)));

struct fvol {
	uint64_t nblocks, first_data_block;
	int64_t cap; /* blocks that may be used */
	struct fgroup groups[NGROUPS];
	struct flock locks[LOCK_SLOTS];
	struct {
		int64_t used; /* this thread's line of the used count */
	} __attribute__((aligned(LINE))) used;
	struct bga_counter *ctr; /* the `counter` variant's used count */
};

static int fvol_init(struct fvol *v)
{
	memset(v, 0, sizeof(*v));
	v->nblocks = NBLOCKS;
	v->cap = (int64_t)NBLOCKS;
	for (uint32_t g = 0; g < NGROUPS; g++) {
		v->groups[g].bitmap = calloc(BPG / 64, sizeof(uint64_t));
		if (v->groups[g].bitmap == NULL)
			return -ENOMEM;
		v->groups[g].free = BPG;
	}
	for (uint32_t s = 0; s < LOCK_SLOTS; s++) {
		ck_spinlock_fas_init(&v->locks[s].lock);
		v->locks[s].bias = sched_getcpu(); /* (main pins itself first) */
	}
	return bga_counter_create(&v->ctr, 0, 0, BGA_COUNTER_PERCPU);
}

static void fvol_fini(struct fvol *v)
{
	for (uint32_t g = 0; g < NGROUPS; g++)
		free(v->groups[g].bitmap);
	bga_counter_destroy(v->ctr);
}

/* The first zero bit at or after `off` in a group's bitmap, wrapping to
 * its start; BPG when there is none. */
static inline uint32_t first_zero_from(const uint64_t *map, uint32_t off)
{
	uint32_t i = off / 64;
	uint64_t w = ~map[i] & (~UINT64_C(0) << (off % 64));
	for (uint32_t n = 0; n <= BPG / 64; n++) {
		if (w)
			return i * 64 + (uint32_t)__builtin_ctzll(w);
		i = (i + 1) % (BPG / 64);
		w = ~map[i];
	}
	return BPG;
}

/* The calls' checks, as bga_free and bga_alloc make them for this case. */
static inline bool free_args_ok(const struct fvol *v, uint64_t start, uint64_t len)
{
	return v != NULL && len == 1 && start >= v->first_data_block && start < v->nblocks;
}

static inline bool alloc_args_ok(const struct fvol *v, const struct bga_request *q, const struct bga_extent *out)
{
	return v != NULL && q != NULL && out != NULL && q->flags == 0 && q->rsv == NULL && q->min_len == 1 &&
	       q->max_len >= 1 && q->goal < v->nblocks;
}

/*
 * How the floor's group lock is taken:
 *   LW_FAS     ck's fas spinlock (xchg to take, a store to drop);
 *   LW_PLAIN   plain stores, no locked instruction: a bound on what a lock
 *              owned by the CPU that uses it could cost, from one thread
 *              only (the `unlocked` variant; it is not a lock);
 *   LW_BIASED  the fast side of a lock biased to one CPU (the `biased`
 *              variant): a restartable sequence that checks that the lock
 *              is biased to the CPU it runs on and that neither side holds
 *              it, then sets `held` with a plain store; the fas lock when
 *              that fails.  What it would cost on the fast side, measured;
 *              the revocation a real one needs (another CPU clearing the
 *              bias under the fas lock, membarrier(PRIVATE_EXPEDITED_RSEQ),
 *              then waiting for `held`) is not here, as one thread never
 *              revokes.
 */
enum lockway { LW_FAS, LW_PLAIN, LW_BIASED };

#if defined(__x86_64__)
#include <sys/rseq.h>
#define FLOOR_STR_(x) #x
#define FLOOR_STR(x) FLOOR_STR_(x)

/* The fast side of the biased lock; false when it cannot take it (another
 * CPU's bias, held, or no rseq in this thread). */
static inline __attribute__((always_inline)) bool biased_take(struct flock *l)
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
			     ".long " FLOOR_STR(RSEQ_SIG) "\n"
			     "4:\n\t"
			     "jmp 6f\n\t"
			     ".popsection\n"
			     "6:\n\t"
			     "leaq 3b(%%rip), %%rax\n\t"
			     "movq %%rax, %%fs:8(%[off])\n"
			     "1:\n\t"
			     "movl %%fs:4(%[off]), %%eax\n\t"
			     "cmpl %%eax, %c[bias](%[l])\n\t"
			     "jne 8f\n\t"
			     "cmpl $0, %c[held](%[l])\n\t"
			     "jne 8f\n\t"
			     "cmpl $0, (%[l])\n\t"
			     "jne 8f\n\t"
			     "movl $1, %c[held](%[l])\n" /* commit */
			     "2:\n\t"
			     "xorl %k[res], %k[res]\n\t"
			     "jmp 9f\n"
			     "8:\n\t"
			     "movl $1, %k[res]\n"
			     "9:\n\t"
			     : [res] "=r"(res)
			     : [off] "r"(__rseq_offset), [l] "r"(l), [bias] "i"(offsetof(struct flock, bias)),
			       [held] "i"(offsetof(struct flock, held))
			     : "rax", "memory", "cc");
	return res == 0;
}
#else
static inline bool biased_take(struct flock *l)
{
	(void)l;
	return false;
}
#endif

static inline __attribute__((always_inline)) void floor_lock(struct flock *l, enum lockway way)
{
	if (way == LW_PLAIN) {
		ck_pr_store_uint(&l->lock.value, 1);
		ck_pr_barrier();
	} else if (way != LW_BIASED || !biased_take(l)) {
		ck_spinlock_fas_lock(&l->lock);
	}
}

static inline __attribute__((always_inline)) void floor_unlock(struct flock *l, enum lockway way)
{
	if (way == LW_PLAIN) {
		ck_pr_barrier();
		ck_pr_store_uint(&l->lock.value, 0);
	} else if (way == LW_BIASED && l->held) {
		ck_pr_barrier();
		ck_pr_store_uint(&l->held, 0);
	} else {
		ck_spinlock_fas_unlock(&l->lock);
	}
}

/*
 * locked: the group lock, the exact counts.  With `lib` the used count is
 * the library's per-CPU counter, charged and given back inline as bga_alloc
 * and bga_free do (counter_impl.h, on its rseq path where the thread has
 * rseq), instead of a plain add: the `counter` variant.
 */
static inline __attribute__((always_inline)) int locked_free_with(struct fvol *v, uint64_t start, uint64_t len,
								  bool lib, enum lockway way)
{
	if (!free_args_ok(v, start, len))
		return -EINVAL;
	uint64_t g = start >> BPG_SHIFT;
	uint32_t off = (uint32_t)(start & (BPG - 1));
	struct fgroup *grp = &v->groups[g];
	struct flock *l = &v->locks[g % LOCK_SLOTS];
	uint64_t *w = &grp->bitmap[off / 64], m = UINT64_C(1) << (off % 64);
	int rc = 0;
	floor_lock(l, way);
	if (!(*w & m)) {
		rc = -EINVAL; /* a double free */
	} else {
		*w &= ~m;
		grp->free++;
	}
	floor_unlock(l, way);
	if (rc == 0) {
		if (lib)
			bga__counter_add(v->ctr, -1);
		else
			v->used.used--;
	}
	return rc;
}

static inline __attribute__((always_inline)) int locked_alloc_with(struct fvol *v, const struct bga_request *q,
								   struct bga_extent *out, bool lib, enum lockway way)
{
	if (!alloc_args_ok(v, q, out))
		return -EINVAL;
	uint64_t goal = q->goal, g = goal >> BPG_SHIFT;
	struct fgroup *grp = &v->groups[g];
	struct flock *l = &v->locks[g % LOCK_SLOTS];
	int rc = -ENOSPC;
	floor_lock(l, way);
	uint32_t b = grp->free ? first_zero_from(grp->bitmap, (uint32_t)(goal & (BPG - 1))) : BPG;
	bool charged = b < BPG && (lib ? bga__counter_add_limited_fast_on(v->ctr, bga__cpu_hint(), 1, v->cap) ||
						 bga_counter_add_limited(v->ctr, 1, v->cap) == 0
				      : v->used.used < v->cap && ++v->used.used);
	if (charged) {
		grp->bitmap[b / 64] |= UINT64_C(1) << (b % 64);
		grp->free--;
		rc = 0;
	}
	floor_unlock(l, way);
	if (rc == 0)
		*out = (struct bga_extent){.start = (g << BPG_SHIFT) + b, .len = 1};
	return rc; /* (a real one would try other groups on -ENOSPC: churn never needs to) */
}

/* The locked family's two out-of-line calls, per variant. */
#define LOCKED_VARIANT(name, lib, way)                                                                 \
	static __attribute__((noinline)) int name##_free(struct fvol *v, uint64_t start, uint64_t len)  \
	{                                                                                               \
		return locked_free_with(v, start, len, lib, way);                                        \
	}                                                                                               \
	static __attribute__((noinline)) int name##_alloc(struct fvol *v, const struct bga_request *q,  \
							  struct bga_extent *out)                       \
	{                                                                                               \
		return locked_alloc_with(v, q, out, lib, way);                                           \
	}

LOCKED_VARIANT(locked, false, LW_FAS)
LOCKED_VARIANT(counter, true, LW_FAS)
LOCKED_VARIANT(unlocked, true, LW_PLAIN)
LOCKED_VARIANT(biased, true, LW_BIASED)

/* lockfree: atomic word operations on the bitmap, nothing else */
static __attribute__((noinline)) int lockfree_free(struct fvol *v, uint64_t start, uint64_t len)
{
	if (!free_args_ok(v, start, len))
		return -EINVAL;
	uint32_t off = (uint32_t)(start & (BPG - 1));
	uint64_t *w = &v->groups[start >> BPG_SHIFT].bitmap[off / 64], m = UINT64_C(1) << (off % 64);
	return __atomic_fetch_and(w, ~m, __ATOMIC_RELEASE) & m ? 0 : -EINVAL;
}

static __attribute__((noinline)) int lockfree_alloc(struct fvol *v, const struct bga_request *q,
						    struct bga_extent *out)
{
	if (!alloc_args_ok(v, q, out))
		return -EINVAL;
	uint64_t g = q->goal >> BPG_SHIFT;
	uint64_t *map = v->groups[g].bitmap;
	for (;;) {
		uint32_t b = first_zero_from(map, (uint32_t)(q->goal & (BPG - 1)));
		if (b == BPG)
			return -ENOSPC;
		uint64_t m = UINT64_C(1) << (b % 64);
		if (!(__atomic_fetch_or(&map[b / 64], m, __ATOMIC_ACQUIRE) & m)) {
			*out = (struct bga_extent){.start = (g << BPG_SHIFT) + b, .len = 1};
			return 0;
		}
	}
}

/* plain: the bitmap's arithmetic alone */
static __attribute__((noinline)) int plain_free(struct fvol *v, uint64_t start, uint64_t len)
{
	if (!free_args_ok(v, start, len))
		return -EINVAL;
	uint32_t off = (uint32_t)(start & (BPG - 1));
	uint64_t *w = &v->groups[start >> BPG_SHIFT].bitmap[off / 64], m = UINT64_C(1) << (off % 64);
	if (!(*w & m))
		return -EINVAL;
	*w &= ~m;
	return 0;
}

static __attribute__((noinline)) int plain_alloc(struct fvol *v, const struct bga_request *q, struct bga_extent *out)
{
	if (!alloc_args_ok(v, q, out))
		return -EINVAL;
	uint64_t g = q->goal >> BPG_SHIFT;
	uint64_t *map = v->groups[g].bitmap;
	uint32_t b = first_zero_from(map, (uint32_t)(q->goal & (BPG - 1)));
	if (b == BPG)
		return -ENOSPC;
	map[b / 64] |= UINT64_C(1) << (b % 64);
	*out = (struct bga_extent){.start = (g << BPG_SHIFT) + b, .len = 1};
	return 0;
}

/* ---- the churn, the same for every variant ---- */

/*
 * One loop per variant, each named loop_<variant> so that callgrind can
 * count it alone (--toggle-collect=loop_locked, ...): the body is
 * bga-share's churn_loop with the variant's two calls.
 */
#define CHURN_LOOP(name, VOL_T, FREE, ALLOC)                                                       \
	static __attribute__((noinline)) int loop_##name(VOL_T *v, uint64_t *slot, struct rng *r,   \
							  uint64_t ops)                                \
	{                                                                                           \
		struct bga_extent e;                                                                \
		int rc = 0;                                                                         \
		for (uint64_t i = 0; i < ops && !rc; i++) {                                         \
			uint64_t k = rng_below(r, WSET);                                            \
			struct bga_request q = {.goal = rng_below(r, NBLOCKS), .min_len = 1, .max_len = 1}; \
			rc = FREE(v, slot[k], 1);                                                   \
			if (!rc)                                                                    \
				rc = ALLOC(v, &q, &e);                                              \
			slot[k] = e.start;                                                  \
		}                                                                                   \
		return rc;                                                                          \
	}

CHURN_LOOP(bgalloc, struct bga_volume, bga_free, bga_alloc)
CHURN_LOOP(locked, struct fvol, locked_free, locked_alloc)
CHURN_LOOP(counter, struct fvol, counter_free, counter_alloc)
CHURN_LOOP(unlocked, struct fvol, unlocked_free, unlocked_alloc)
CHURN_LOOP(biased, struct fvol, biased_free, biased_alloc)
CHURN_LOOP(lockfree, struct fvol, lockfree_free, lockfree_alloc)
CHURN_LOOP(plain, struct fvol, plain_free, plain_alloc)

enum variant { V_BGALLOC, V_COUNTER, V_BIASED, V_UNLOCKED, V_LOCKED, V_LOCKFREE, V_PLAIN, NVARIANT };
static const char *const variant_name[NVARIANT] = {"bgalloc", "counter",  "biased",   "unlocked",
						   "locked",  "lockfree", "plain"};

/* Fill the working set (each variant's own allocation at the same goals),
 * then time `ops` operations; ns per operation, or a negative errno. */
static double run_variant(enum variant var, uint64_t ops)
{
	static uint64_t slot[WSET];
	struct bga_volume *vol = NULL;
	struct fvol *fv = NULL;
	struct bga_config cfg;
	struct bga_extent e;
	struct rng r;
	int rc = 0;

	rng_seed(&r, 77, 0);
	if (var == V_BGALLOC) {
		bga_config_init(&cfg, NBLOCKS);
		cfg.blocks_per_group = BPG;
		rc = bga_create(&cfg, &vol);
	} else {
		fv = aligned_alloc(LINE, sizeof(*fv));
		rc = fv == NULL ? -ENOMEM : fvol_init(fv);
	}
	for (uint64_t i = 0; i < WSET && rc == 0; i++) {
		struct bga_request q = {.goal = rng_below(&r, NBLOCKS), .min_len = 1, .max_len = 1};
		rc = var == V_BGALLOC ? bga_alloc(vol, &q, &e)
		     : var == V_COUNTER ? counter_alloc(fv, &q, &e)
		     : var == V_UNLOCKED ? unlocked_alloc(fv, &q, &e)
		     : var == V_BIASED ? biased_alloc(fv, &q, &e)
		     : var == V_LOCKED ? locked_alloc(fv, &q, &e)
		     : var == V_LOCKFREE ? lockfree_alloc(fv, &q, &e)
					 : plain_alloc(fv, &q, &e);
		slot[i] = e.start;
	}
	double t0 = now_s();
	if (rc == 0)
		rc = var == V_BGALLOC ? loop_bgalloc(vol, slot, &r, ops)
		     : var == V_COUNTER ? loop_counter(fv, slot, &r, ops)
		     : var == V_UNLOCKED ? loop_unlocked(fv, slot, &r, ops)
		     : var == V_BIASED ? loop_biased(fv, slot, &r, ops)
		     : var == V_LOCKED ? loop_locked(fv, slot, &r, ops)
		     : var == V_LOCKFREE ? loop_lockfree(fv, slot, &r, ops)
					 : loop_plain(fv, slot, &r, ops);
	double ns = (now_s() - t0) * 1e9 / (double)ops;
	if (vol)
		bga_destroy(vol);
	if (fv) {
		fvol_fini(fv);
		free(fv);
	}
	return rc ? rc : ns;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--count") == 0) {
		for (int v = 0; v < NVARIANT; v++)
			if (strcmp(argv[2], variant_name[v]) == 0)
				return run_variant((enum variant)v, arg_u64("bga-floor", "OPS", argv[3], 1, UINT64_C(1) << 40)) < 0;
		fprintf(stderr, "bga-floor: no variant %s\n", argv[2]);
		return 2;
	}
	if (argc > 3 || (argc > 1 && argv[1][0] == '-')) {
		fprintf(stderr, "usage: bga-floor [reps 1..64] [ops] | --count VARIANT OPS\n");
		return 2;
	}
	int reps = argc > 1 ? arg_int("bga-floor", "reps", argv[1], 1, 64) : 11;
	uint64_t ops = argc > 2 ? arg_u64("bga-floor", "ops", argv[2], 1, UINT64_C(1) << 40) : 4000000;
	double ns[NVARIANT][64];
	pin_to_cpu(0);
	for (int k = 0; k < reps; k++)
		for (int v = 0; v < NVARIANT; v++) {
			/* rotate the order, so no variant always runs first */
			int x = (v + k) % NVARIANT;
			ns[x][k] = run_variant((enum variant)x, ops);
			if (ns[x][k] < 0) {
				fprintf(stderr, "%s: %s\n", variant_name[x], strerror((int)-ns[x][k]));
				return 1;
			}
		}
	double med[NVARIANT];
	for (int v = 0; v < NVARIANT; v++)
		med[v] = bench_median(ns[v], reps);
	printf("single-thread churn, 2^20 blocks, %d-block working set, %d reps of %llu ops, CPU 0\n", WSET, reps,
	       (unsigned long long)ops);
	printf("%-10s %10s %14s\n", "variant", "ns per op", "bgalloc / it");
	for (int v = 0; v < NVARIANT; v++)
		printf("%-10s %10.2f %14.2f\n", variant_name[v], med[v], med[V_BGALLOC] / med[v]);
	return 0;
}
