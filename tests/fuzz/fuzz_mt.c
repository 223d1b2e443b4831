/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Concurrency fuzzer: the input decodes into a small volume config, a
 * thread count (2 .. 4) and one operation stream per thread, run at once
 * on one volume.  No model can predict interleavings, so this checks what
 * must hold under any of them:
 *  - ownership: an atomic byte per block holds the owning thread; a block
 *    handed out must have had no owner (else it was handed out twice),
 *    and a thread frees only what it owns, which must then succeed;
 *  - a trim never claims a block someone owns, and nobody is handed a
 *    block while a trim holds it;
 *  - reservations never overcommit and USE_RESERVED never fails with
 *    -EINVAL while the thread's own reservation covers min_len;
 *  - grows (by up to GROW_MAX blocks in all) run among the others, and
 *    every check bounds blocks by the size the volume has now;
 *  - near full (the input's thread-count byte has bit 7 set): the volume is
 *    filled but for NEAR_FREE single blocks, threads only allocate (min 1)
 *    and free, each holding at most NEAR_HOLD blocks, so free blocks that
 *    nobody holds exist at every instant and any -ENOSPC or -EAGAIN is
 *    false (issue 10);
 *  - at the end, after freeing everything: every data block is free,
 *    nothing reserved, bga_check() clean.
 *
 * The alphabet of each thread's stream (one byte picks the call, % 16):
 * bga_alloc (a goal or none, min 1 .. 16, through the thread's window
 * handle, BGA_USE_RESERVED within its own reservation, BGA_EXACT_GOAL),
 * bga_free and bga_free_deferred of what it owns (tails or whole
 * extents), bga_commit of the open txn, bga_reserve and bga_unreserve,
 * its window handle (open, close, resize), bga_foreach_free and bga_trim
 * over a range, bga_stats and bga_free_estimate, bga_grow; near full, only
 * allocations of single blocks and frees.
 *
 * The threads are a pool made at the first input and kept (pool_run):
 * creating and joining two to four threads per input cost more than most
 * inputs' calls.  The reset contract: a pool thread begins every input's
 * stream in the state a fresh thread would have, as far as the library
 * and this harness keep state per thread; and so does the thread that
 * calls LLVMFuzzerTestOneInput, which libFuzzer (and replay.c) keeps too.
 *  - The library's (lib/base/thread.h has the whole list and why it is
 *    complete): lockdep's record empty, every node of the lock table's
 *    MCS pool free, outside every urcu-bp read-side section (the reader's
 *    registration is kept: registered and outside a section, it is to
 *    every other thread an unregistered one), the CPU-id caches in range
 *    (hints, kept: stale, they cost shared lines, never correctness), the
 *    rseq area the kernel's.  In BGA_DEBUG builds (the replay tests but
 *    the TSan one, and make fuzz) check_idle checks this, by
 *    bga__thread_idle and bga__locktab_thread_idle, in each pool thread
 *    before its stream and after it, and in the caller at the start and
 *    end of each input; a failure names what was left behind.
 *    tests/fuzz/thread_idle_test.c shows that the check fires.
 *  - The harness's: all that an input uses lives in its struct shared and
 *    struct thr, zeroed per input on the caller's stack, and its volume is
 *    made per input; a pool thread keeps only its slot number, and the
 *    file's only static state is the pool's semaphores, slots and barrier
 *    (nothing thread-local).  pool_thread checks that the struct thr it is
 *    handed is fresh (no blocks owned, nothing reserved, no window, its
 *    input at the start); pool_run, that every slot is idle before an
 *    input (no stream, no wake-up or end pending).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc.h>

#include "fuzz_input.h"
#ifdef BGA_DEBUG
#include "locktab_impl.h"
#include "thread.h"
#endif

#define MAX_THREADS 4
#define MAX_OPS 128
#define OWNER_TRIM 0xff
#define GROW_MAX 4096
#define NEAR_HOLD 2
#define NEAR_FREE (MAX_THREADS * NEAR_HOLD + 2)

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void fail(const char *fmt, ...)
{
	va_list ap;

	fputs("fuzz_mt: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

struct shared {
	struct bga_config cfg;
	struct bga_volume *vol;
	_Atomic uint8_t *owner; /* per block: 0 none, 1 .. MAX_THREADS a thread, OWNER_TRIM a trim */
	_Atomic uint64_t open_txn; /* the txn new deferred frees join; commits take and advance it */
	bool near_full;
};

/* The volume's size now: a grow may run at any time. */
static uint64_t cur_nblocks(const struct shared *s)
{
	struct bga_config c;

	if (bga_volume_config(s->vol, &c))
		abort();
	return c.nblocks;
}

struct thr {
	struct shared *s;
	struct fz_in in;
	uint8_t id;
	struct bga_extent *own;
	size_t nown, cap;
	uint64_t reserved;
	struct bga_rsv *rsv;
};

FZ_ORACLE static void claim(struct thr *t, uint64_t start, uint64_t len, uint8_t who, const char *what)
{
	uint64_t b;

	for (b = start; b < start + len; b++) {
		uint8_t zero = 0;

		if (!atomic_compare_exchange_strong_explicit(&t->s->owner[b], &zero, who, memory_order_acq_rel,
							     memory_order_acquire))
			fail("%s: thread %u got block %" PRIu64 " of [%" PRIu64 ", +%" PRIu64
			     ") which belongs to %u (handed out twice)", what, who, b, start, len, zero);
	}
}

/* Blocks below `end` that some thread owns. */
FZ_ORACLE static uint64_t count_owned(struct shared *s, uint64_t end)
{
	uint64_t b, n = 0;

	for (b = 0; b < end; b++)
		n += atomic_load_explicit(&s->owner[b], memory_order_relaxed) != 0;
	return n;
}

FZ_ORACLE static void release(struct thr *t, uint64_t start, uint64_t len, uint8_t who)
{
	uint64_t b;

	for (b = start; b < start + len; b++) {
		uint8_t cur = atomic_load_explicit(&t->s->owner[b], memory_order_relaxed);

		if (cur != who)
			fail("block %" PRIu64 " should belong to %u, belongs to %u", b, who, cur);
		atomic_store_explicit(&t->s->owner[b], 0, memory_order_release);
	}
}

static void own_add(struct thr *t, struct bga_extent e)
{
	if (t->nown == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		struct bga_extent *p = realloc(t->own, cap * sizeof(*p));

		if (!p)
			abort();
		t->own = p;
		t->cap = cap;
	}
	t->own[t->nown++] = e;
}

/* Take (part of) an owned extent out of the list: its tail, or all of it. */
static struct bga_extent own_take(struct thr *t)
{
	size_t i = fz_below(&t->in, t->nown);
	struct bga_extent e = t->own[i];
	uint64_t cut = fz_below(&t->in, e.len);

	if (cut) {
		t->own[i].len = cut;
		e.start += cut;
		e.len -= cut;
	} else {
		t->own[i] = t->own[--t->nown];
	}
	return e;
}

static void op_alloc(struct thr *t)
{
	const struct bga_config *c = &t->s->cfg;
	struct bga_request req = { .goal = BGA_NO_GOAL };
	struct bga_extent e;
	uint8_t b = fz_u8(&t->in);
	int rc;

	if (b & 1)
		req.goal = fz_below(&t->in, cur_nblocks(t->s));
	req.min_len = 1 + (fz_u8(&t->in) & 15);
	req.max_len = req.min_len + (fz_u8(&t->in) & 31);
	if (b & 2)
		req.rsv = t->rsv;
	if ((b & 4) && t->reserved >= req.min_len) {
		req.flags |= BGA_USE_RESERVED;
		/* Stay inside our own promise, or we would eat another thread's. */
		if (req.max_len > t->reserved)
			req.max_len = t->reserved;
	}
	if ((b & 8) && req.goal != BGA_NO_GOAL)
		req.flags |= BGA_EXACT_GOAL;
	rc = bga_alloc(t->s->vol, &req, &e);
	if (rc == -ENOSPC || rc == -EAGAIN)
		return;
	if (rc)
		fail("alloc(goal %" PRIu64 ", %" PRIu64 "..%" PRIu64 ", flags %#x) returned %d", req.goal,
		     req.min_len, req.max_len, req.flags, rc);
	if (e.len < req.min_len || e.len > req.max_len || e.len > c->blocks_per_group ||
	    e.start < c->first_data_block || e.start >= cur_nblocks(t->s) || e.len > cur_nblocks(t->s) - e.start ||
	    e.start / c->blocks_per_group != (e.start + e.len - 1) / c->blocks_per_group ||
	    ((req.flags & BGA_EXACT_GOAL) && e.start != req.goal))
		fail("alloc(goal %" PRIu64 ", %" PRIu64 "..%" PRIu64 ", flags %#x) returned bad [%" PRIu64
		     ", +%" PRIu64 ")", req.goal, req.min_len, req.max_len, req.flags, e.start, e.len);
	claim(t, e.start, e.len, t->id, "alloc");
	if (req.flags & BGA_USE_RESERVED)
		t->reserved -= e.len;
	own_add(t, e);
}

static void op_free(struct thr *t, bool deferred)
{
	struct bga_extent e;
	uint64_t txn;
	int rc;

	if (!t->nown)
		return;
	e = own_take(t);
	/* Disown first: the moment the library has it back, another thread may get it. */
	release(t, e.start, e.len, t->id);
	if (!deferred) {
		rc = bga_free(t->s->vol, e.start, e.len);
		if (rc)
			fail("free of owned [%" PRIu64 ", +%" PRIu64 ") returned %d", e.start, e.len, rc);
		return;
	}
	txn = atomic_load(&t->s->open_txn);
	rc = bga_free_deferred(t->s->vol, e.start, e.len, txn);
	if (rc == -EINVAL && atomic_load(&t->s->open_txn) > txn) {
		/* A commit of txn or later got in first: still ours. */
		claim(t, e.start, e.len, t->id, "refused deferred free");
		own_add(t, e);
		return;
	}
	if (rc)
		fail("free_deferred of owned [%" PRIu64 ", +%" PRIu64 ") txn %" PRIu64 " returned %d", e.start, e.len,
		     txn, rc);
}

static void op_commit(struct thr *t)
{
	uint64_t txn = atomic_fetch_add(&t->s->open_txn, 1);
	int rc = bga_commit(t->s->vol, txn);

	/* -EINVAL: a concurrent commit of a later txn landed first. */
	if (rc && rc != -EINVAL)
		fail("commit %" PRIu64 " returned %d", txn, rc);
}

static void op_reserve(struct thr *t, bool un)
{
	uint64_t n;
	int rc;

	if (un) {
		if (!t->reserved)
			return;
		n = 1 + fz_below(&t->in, t->reserved);
		rc = bga_unreserve(t->s->vol, n);
		if (rc)
			fail("unreserve %" PRIu64 " of our %" PRIu64 " returned %d", n, t->reserved, rc);
		t->reserved -= n;
		return;
	}
	n = 1 + (fz_u8(&t->in) & 63);
	rc = bga_reserve(t->s->vol, n);
	if (rc == 0)
		t->reserved += n;
	else if (rc != -ENOSPC)
		fail("reserve %" PRIu64 " returned %d", n, rc);
}

static void op_window(struct thr *t)
{
	uint8_t b = fz_u8(&t->in);
	int rc;

	if (!t->rsv) {
		rc = bga_rsv_open(t->s->vol, &t->rsv);
		if (rc)
			fail("rsv_open returned %d", rc);
	} else if (b & 1) {
		bga_rsv_close(t->rsv);
		t->rsv = NULL;
	} else {
		rc = bga_rsv_set_size(t->rsv, (b >> 1) % (t->s->cfg.rsv_max + 1));
		if (rc)
			fail("rsv_set_size returned %d", rc);
	}
}

struct walk {
	struct thr *t;
	uint64_t from, to, min_len, sum;
	bool trim;
};

static int walk_cb(void *ctx, uint64_t start, uint64_t len)
{
	struct walk *w = ctx;
	const struct bga_config *c = &w->t->s->cfg;

	if (len < w->min_len || start < w->from || start >= w->to || len > w->to - start ||
	    start < c->first_data_block ||
	    start / c->blocks_per_group != (start + len - 1) / c->blocks_per_group)
		fail("%s [%" PRIu64 ", %" PRIu64 ") min %" PRIu64 " reported bad [%" PRIu64 ", +%" PRIu64 ")",
		     w->trim ? "trim" : "foreach_free", w->from, w->to, w->min_len, start, len);
	if (w->trim) {
		/* The extent is claimed from the library while we hold it. */
		claim(w->t, start, len, OWNER_TRIM, "trim");
		release(w->t, start, len, OWNER_TRIM);
		w->sum += len;
	}
	return 0;
}

static void op_walk(struct thr *t, bool trim)
{
	struct walk w = { .t = t, .trim = trim };
	uint64_t trimmed;
	int rc;

	uint64_t nblocks = cur_nblocks(t->s);

	w.from = fz_below(&t->in, nblocks);
	w.to = w.from + 1 + fz_below(&t->in, nblocks - w.from);
	w.min_len = 1 + (fz_u8(&t->in) & 7);
	if (trim)
		rc = bga_trim(t->s->vol, w.from, w.to, w.min_len, walk_cb, &w, &trimmed);
	else
		rc = bga_foreach_free(t->s->vol, w.from, w.to, w.min_len, walk_cb, &w);
	if (rc)
		fail("%s returned %d", trim ? "trim" : "foreach_free", rc);
	if (trim && trimmed != w.sum)
		fail("trim says %" PRIu64 " trimmed, callbacks saw %" PRIu64, trimmed, w.sum);
}

static void op_grow(struct thr *t)
{
	uint64_t now = cur_nblocks(t->s), to = now + 1 + fz_below(&t->in, 512);
	int rc;

	if (to > t->s->cfg.nblocks + GROW_MAX)
		return;
	rc = bga_grow(t->s->vol, to);
	/* -EINVAL: another grow went past `to` first. */
	if (rc && !(rc == -EINVAL && cur_nblocks(t->s) > to))
		fail("grow to %" PRIu64 " returned %d", to, rc);
}

/* Near full: hold at most NEAR_HOLD blocks; every allocation must work. */
static void op_near_full(struct thr *t)
{
	uint64_t held = 0;
	struct bga_request req = { .goal = BGA_NO_GOAL, .min_len = 1 };
	struct bga_extent e;
	uint8_t b = fz_u8(&t->in);
	size_t i;
	int rc;

	for (i = 0; i < t->nown; i++)
		held += t->own[i].len;
	if (held >= NEAR_HOLD || (held && (b & 1))) {
		op_free(t, false);
		return;
	}
	if (b & 2)
		req.goal = fz_below(&t->in, cur_nblocks(t->s));
	/* Free blocks are single holes, so a long max_len still gets one
	 * block: the in-flight charge of max_len was the bug. */
	req.max_len = b & 4 ? 256 : 1;
	if (b & 8)
		req.rsv = t->rsv;
	rc = bga_alloc(t->s->vol, &req, &e);
	if (rc)
		fail("near full: alloc(goal %" PRIu64 ", 1..%" PRIu64 ") returned %d while at least %d free blocks "
		     "were held by nobody", req.goal, req.max_len, rc, NEAR_FREE - MAX_THREADS * NEAR_HOLD);
	if (e.len != 1)
		fail("near full: got %" PRIu64 " blocks where only single blocks are free", e.len);
	claim(t, e.start, e.len, t->id, "near-full alloc");
	own_add(t, e);
}

static void *worker(void *arg)
{
	struct thr *t = arg;
	struct bga_stats st;
	unsigned op;
	int rc;

	for (op = 0; op < MAX_OPS && fz_more(&t->in); op++) {
		if (t->s->near_full) {
			op_near_full(t);
			continue;
		}
		switch (fz_u8(&t->in) % 16) {
		case 0: case 1: case 2: case 3: case 4: op_alloc(t); break;
		case 5: case 6: op_free(t, false); break;
		case 7: op_free(t, true); break;
		case 8: op_commit(t); break;
		case 9: op_reserve(t, false); break;
		case 10: op_reserve(t, true); break;
		case 11: op_window(t); break;
		case 12: op_walk(t, false); break;
		case 13: op_walk(t, true); break;
		case 14:
			rc = bga_stats(t->s->vol, &st);
			if (rc && rc != -ENOSYS)
				fail("stats returned %d", rc);
			(void)bga_free_estimate(t->s->vol);
			break;
		default: op_grow(t); break;
		}
	}
	return NULL;
}

/*
 * The pool: MAX_THREADS threads, thread k waiting on go[k] for an input's
 * stream (work[k]); the n threads an input uses meet at its start barrier
 * (so the streams start together, as before), and each posts `done` at
 * its end.  The threads an input does not use are not woken.
 */
static struct {
	sem_t go[MAX_THREADS], done;
	struct thr *work[MAX_THREADS];
	pthread_barrier_t start;
	bool started;
} pool;

/*
 * The library's half of the reset contract (the header): the calling
 * thread's state is that of a thread between calls.  k is the pool
 * thread's slot, or -1 for the caller of LLVMFuzzerTestOneInput; `when`
 * says which end of its work, for the failure.
 */
static void check_idle(int k, const char *when)
{
#ifdef BGA_DEBUG
	char why[192];

	if (bga__thread_idle(why, sizeof(why)) && bga__locktab_thread_idle(why, sizeof(why)))
		return;
	if (k < 0)
		fail("the calling thread %s: library state left behind: %s", when, why);
	fail("pool thread %d %s: library state left behind: %s", k, when, why);
#else
	(void)k, (void)when;
#endif
}

/* The harness's half: what a pool thread is handed is an input's own. */
static void check_fresh(const struct thr *t, unsigned k)
{
	if (!t || !t->s || t->id != k + 1 || t->in.pos != 0 || t->own || t->nown || t->cap || t->reserved ||
	    t->rsv)
		fail("pool thread %u is handed a stream that is not fresh", k);
}

static void *pool_thread(void *arg)
{
	unsigned k = (unsigned)(uintptr_t)arg;

	for (;;) {
		while (sem_wait(&pool.go[k]))
			;
		check_fresh(pool.work[k], k);
		check_idle((int)k, "before its stream");
		pthread_barrier_wait(&pool.start);
		worker(pool.work[k]);
		check_idle((int)k, "after its stream");
		sem_post(&pool.done);
	}
	return NULL;
}

/* Run t[0 .. n) at once on the pool; every slot must be idle before. */
static void pool_run(struct thr *t, unsigned n)
{
	unsigned k;
	int v;

	if (!pool.started) {
		pthread_t th;

		if (sem_init(&pool.done, 0, 0))
			abort();
		for (k = 0; k < MAX_THREADS; k++)
			if (sem_init(&pool.go[k], 0, 0) ||
			    pthread_create(&th, NULL, pool_thread, (void *)(uintptr_t)k) || pthread_detach(th))
				abort();
		pool.started = true;
	}
	/* idle: no stream left in a slot, no post not taken */
	for (k = 0; k < MAX_THREADS; k++)
		if (pool.work[k] || sem_getvalue(&pool.go[k], &v) || v)
			fail("pool slot %u is not idle before the input", k);
	if (sem_getvalue(&pool.done, &v) || v)
		fail("pool: %d ends posted before the input", v);
	if (pthread_barrier_init(&pool.start, NULL, n))
		abort();
	for (k = 0; k < n; k++) {
		pool.work[k] = &t[k];
		sem_post(&pool.go[k]);
	}
	for (k = 0; k < n; k++)
		while (sem_wait(&pool.done))
			;
	for (k = 0; k < n; k++)
		pool.work[k] = NULL;
	pthread_barrier_destroy(&pool.start);
}

static void decode_config(struct fz_in *in, struct bga_config *c)
{
	uint8_t b;

	bga_config_init(c, 64 + fz_u16(in) % 8192);
	c->blocks_per_group = 64 * (1 + fz_u8(in) % 16);
	b = fz_u8(in);
	c->first_data_block = b % 4;
	c->rsv_max = fz_u16(in) % (c->blocks_per_group + 1);
	c->rsv_default = c->rsv_max ? fz_u16(in) % (c->rsv_max + 1) : 0;
	b = fz_u8(in);
	c->flags = b & 3;
	c->lock_slots = (b & 4) ? 1u << ((b >> 3) % 4) : 0;
	c->counter_batch = (b & 0x20) ? 1 + (b >> 6) : 0;
}

/*
 * Allocate the whole volume, then free NEAR_FREE single blocks spread over
 * it, at least two blocks apart; what stays allocated goes on `keeper`'s
 * list, owned as thread 1's but out of its reach until the run is over.
 */
static void fill_but(struct shared *s, struct thr *keeper)
{
	struct bga_request req = { .goal = 0, .min_len = 1, .max_len = s->cfg.blocks_per_group };
	uint64_t cap = s->cfg.nblocks - s->cfg.first_data_block, step = cap / NEAR_FREE, k;
	struct bga_extent e;

	keeper->s = s;
	keeper->id = 1;
	if (step < 2)
		return;
	while (bga_alloc(s->vol, &req, &e) == 0) {
		claim(keeper, e.start, e.len, 1, "fill");
		own_add(keeper, e);
	}
	for (k = 0; k < NEAR_FREE; k++) {
		uint64_t b = s->cfg.first_data_block + k * step;
		size_t i;

		for (i = 0; i < keeper->nown; i++) {
			struct bga_extent *o = &keeper->own[i];

			if (b < o->start || b >= o->start + o->len)
				continue;
			if (bga_free(s->vol, b, 1))
				fail("near full: freeing block %" PRIu64 " returned an error", b);
			release(keeper, b, 1, 1);
			/* Split the owned extent around b. */
			if (b + 1 < o->start + o->len)
				own_add(keeper, (struct bga_extent){ b + 1, o->start + o->len - b - 1 });
			keeper->own[i].len = b - keeper->own[i].start;
			if (keeper->own[i].len == 0)
				keeper->own[i] = keeper->own[--keeper->nown];
			break;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size, 0 };
	struct thr t[MAX_THREADS], keeper;
	struct shared s;
	struct bga_check_report rep;
	uint64_t owned = 0, b, freeb;
	size_t chunk, pos, i;
	unsigned n, k;
	int rc;

	check_idle(-1, "at the start of an input");
	memset(&s, 0, sizeof(s));
	memset(t, 0, sizeof(t));
	memset(&keeper, 0, sizeof(keeper));
	decode_config(&in, &s.cfg);
	b = fz_u8(&in);
	n = 2 + (b & 0x7f) % 3;
	s.near_full = b & 0x80;
	atomic_init(&s.open_txn, 1);
	rc = bga_create(&s.cfg, &s.vol);
	if (rc)
		fail("create returned %d", rc);
	s.owner = calloc(s.cfg.nblocks + GROW_MAX, sizeof(*s.owner));
	if (!s.owner)
		abort();
	if (s.near_full)
		fill_but(&s, &keeper);

	/* Each thread gets its own slice of the remaining bytes. */
	chunk = (size - (in.pos < size ? in.pos : size)) / n;
	pos = in.pos;
	for (k = 0; k < n; k++) {
		t[k].s = &s;
		t[k].id = (uint8_t)(k + 1);
		t[k].in = (struct fz_in){ data + (pos < size ? pos : size), chunk, 0 };
		pos += chunk;
	}
	pool_run(t, n);

	/* The filler goes back to thread 1, whose owner id it carries. */
	for (i = 0; i < keeper.nown; i++)
		own_add(&t[0], keeper.own[i]);
	free(keeper.own);

	/* Quiescent now: the books must balance exactly. */
	for (k = 0; k < n; k++)
		for (i = 0; i < t[k].nown; i++)
			owned += t[k].own[i].len;
	rc = bga_commit(s.vol, atomic_load(&s.open_txn));
	if (rc)
		fail("final commit returned %d", rc);
	memset(&rep, 0, sizeof(rep));
	rc = bga_check(s.vol, &rep);
	if (rc)
		fail("bga_check after the run: %d: %s", rc, rep.message);
	freeb = bga_free_exact(s.vol);
	if (freeb != cur_nblocks(&s) - s.cfg.first_data_block - owned)
		fail("free_exact %" PRIu64 ", expected %" PRIu64 " (%" PRIu64 " owned)", freeb,
		     cur_nblocks(&s) - s.cfg.first_data_block - owned, owned);
	owned = count_owned(&s, cur_nblocks(&s));
	for (k = 0; k < n; k++) {
		uint64_t r = 0;

		for (i = 0; i < t[k].nown; i++) {
			r += t[k].own[i].len;
			rc = bga_free(s.vol, t[k].own[i].start, t[k].own[i].len);
			if (rc)
				fail("final free of thread %u's [%" PRIu64 ", +%" PRIu64 ") returned %d", k + 1,
				     t[k].own[i].start, t[k].own[i].len, rc);
		}
		owned -= r;
		if (t[k].reserved && (rc = bga_unreserve(s.vol, t[k].reserved)))
			fail("final unreserve of %" PRIu64 " returned %d", t[k].reserved, rc);
		bga_rsv_close(t[k].rsv);
		free(t[k].own);
	}
	if (owned)
		fail("owner bytes and owned lists disagree by %" PRIu64, owned);
	if (bga_reserved(s.vol))
		fail("%" PRIu64 " blocks still reserved", bga_reserved(s.vol));
	freeb = bga_free_exact(s.vol);
	if (freeb != cur_nblocks(&s) - s.cfg.first_data_block)
		fail("free_exact %" PRIu64 " after freeing everything", freeb);
	rc = bga_check(s.vol, &rep);
	if (rc)
		fail("bga_check at the end: %d: %s", rc, rep.message);
	bga_destroy(s.vol);
	free(s.owner);
	check_idle(-1, "at the end of an input");
	return 0;
}
