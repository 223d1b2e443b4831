/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The persistence guide (docs/PERSISTENCE.md, bgalloc(7)),
 * crashed at each of its points.  An engine with its own journal runs
 * each transaction T as the guide orders it:
 *
 *   1. close T (what follows is T+1's: allocations in flight included);
 *   2. bga_store_tagged(vol, io, T): T's image;
 *   3. the journal commit of T, durable;
 *   4. bga_commit(vol, T);
 *
 * and closes cleanly with a bga_commit and one more bga_store.  A crash is
 * taken before step 2, at every write of the store (the area holds the
 * image before it plus the writes so far), after step 2, after step 3,
 * after step 4 (with T's freed blocks reused in memory by T+1), before
 * and after the closing store, and at every write of the first store
 * after a load.  Each crash is recovered as the guide says, and the
 * guide's promises are checked from what the caller can see:
 *
 *  - the area loads, with no group quarantined, to the state of one
 *    completed store, whole (a store captures allocations in flight);
 *  - no block the journal's last durable transaction J owns is free in it;
 *  - the image's tag (bga_store_tagged, bga_volume_tag) is the transaction
 *    its store was for; its last committed txn L is the last bga_commit
 *    before that store, and the blocks freed in transactions L < t <= J
 *    are allocated in it (deferred frees are stored allocated until their
 *    commit), so freeing them (the replay) succeeds;
 *  - every other allocated block that J does not own was allocated by a
 *    transaction after J (its own, lost, or in flight): a leak, given
 *    back by the walk, never a block owned twice;
 *  - after the replay and the walk, the volume holds exactly what J owns,
 *    and takes deferred frees in J + 1;
 *  - after a clean close the image is exact: nothing to replay or give
 *    back.
 *
 * And, for the first store after a load through the io it was loaded
 * with: every cut loads the loaded state or the new one (not a format).
 * The same store through another io is a format, and some cut of it does
 * not load to either state: why the guide keeps the io.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "memio.h"
#include "persist_util.h"
#include "testutil.h"

#define BPG 64
#define NGROUPS 12
#define NBLOCKS (BPG * NGROUPS - 5)
#define MAXTXN 16
#define MAXEXT 64

/* ---- the engine's journal ---- */

struct txnrec {
	struct bga_extent alloc[MAXEXT], freed[MAXEXT];
	size_t nalloc, nfreed;
};

struct engine {
	struct bga_volume *vol;
	struct memio m;
	struct bga_io io;
	struct txnrec t[MAXTXN + 2]; /* t[T]: what transaction T did */
	uint64_t running;            /* the transaction allocations go to */
	uint64_t durable;            /* J: the journal's last durable transaction */
	struct bga_extent live[MAXTXN * MAXEXT]; /* allocated and not freed in any transaction */
	size_t nlive;
	struct rng r;
};

static bool owned_at(const struct engine *e, uint64_t J, uint64_t b)
{
	bool own = false;
	for (uint64_t t = 1; t <= J; t++) {
		for (size_t i = 0; i < e->t[t].nalloc; i++)
			if (b - e->t[t].alloc[i].start < e->t[t].alloc[i].len)
				own = true;
		for (size_t i = 0; i < e->t[t].nfreed; i++)
			if (b - e->t[t].freed[i].start < e->t[t].freed[i].len)
				own = false;
	}
	return own;
}

/* Blocks a transaction after J allocated (by the time of the crash). */
static bool allocated_after(const struct engine *e, uint64_t J, uint64_t b)
{
	for (uint64_t t = J + 1; t <= e->running; t++)
		for (size_t i = 0; i < e->t[t].nalloc; i++)
			if (b - e->t[t].alloc[i].start < e->t[t].alloc[i].len)
				return true;
	return false;
}

static bool freed_between(const struct engine *e, uint64_t L, uint64_t J, uint64_t b)
{
	for (uint64_t t = L + 1; t <= J; t++)
		for (size_t i = 0; i < e->t[t].nfreed; i++)
			if (b - e->t[t].freed[i].start < e->t[t].freed[i].len)
				return true;
	return false;
}

/* Allocations in the running transaction. */
static void allocate(struct engine *e, int n)
{
	struct txnrec *tr = &e->t[e->running];
	for (int i = 0; i < n && tr->nalloc < MAXEXT; i++) {
		struct bga_request req = {.goal = below(&e->r, NBLOCKS), .min_len = 1, .max_len = 1 + below(&e->r, 12)};
		struct bga_extent x;
		int rc = bga_alloc(e->vol, &req, &x);
		if (rc == -ENOSPC || rc == -EAGAIN)
			return;
		cr_assert_eq(rc, 0, "alloc: %s", bga_strerror(rc));
		tr->alloc[tr->nalloc++] = x;
		e->live[e->nlive++] = x;
	}
}

/* Deferred frees in the running transaction of extents the engine holds
 * (allocated in an earlier or this transaction, not freed yet). */
static void free_some(struct engine *e, int n)
{
	struct txnrec *tr = &e->t[e->running];
	for (int k = 0; k < n && tr->nfreed < MAXEXT && e->nlive > 0; k++) {
		size_t i = below(&e->r, e->nlive);
		struct bga_extent x = e->live[i];
		e->live[i] = e->live[--e->nlive];
		cr_assert_eq(bga_free_deferred(e->vol, x.start, x.len, e->running), 0);
		tr->freed[tr->nfreed++] = x;
	}
}

/* ---- crashes ---- */

struct area {
	unsigned char *b;
	size_t size;
};

static struct area area_now(const struct memio *m)
{
	struct area a = {malloc(m->size ? m->size : 1), m->size};
	cr_assert_not_null(a.b);
	memcpy(a.b, m->buf, m->size);
	return a;
}

/* The area before a recorded store, plus its first cut writes. */
static struct area area_cut(const struct area *pre, const struct memio *m, size_t cut)
{
	struct area a = {calloc(1, m->size), m->size};
	cr_assert_not_null(a.b);
	memcpy(a.b, pre->b, pre->size);
	for (size_t i = 0; i < cut; i++)
		if (m->log[i].data)
			memcpy(a.b + m->log[i].off, m->log[i].data, m->log[i].len);
	return a;
}

struct stored {
	struct usedmap u[2 * MAXTXN + 4]; /* the state at each completed store, and the one before any */
	uint64_t tag[2 * MAXTXN + 4];     /* the transaction each was stored for (bga_store_tagged) */
	uint64_t committed[2 * MAXTXN + 4]; /* the last bga_commit before it */
	int n;
};

static long crashes;

/*
 * Recover from `a` as the guide says, with the journal durable up to J,
 * and check every promise above.  Returns the index in s of the store
 * whose state the area held.
 */
static int recover(const struct engine *e, const struct area *a, uint64_t J, const struct stored *s,
		   const char *point)
{
	struct constio c = {a->b, a->size};
	struct bga_io io = {&c, constio_read, constio_write, constio_flush};
	struct bga_volume *vol;
	int rc = bga_load(&io, NULL, &vol);
	cr_assert_eq(rc, 0, "%s: the area does not load: %s", point, bga_strerror(rc));
	struct bga_stats st;
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_assert_eq(st.groups_quarantined, 0, "%s: a crash quarantined a group", point);
	uint64_t L = st.last_committed_txn;
	struct usedmap u;
	cr_assert_eq(usedmap_take(vol, &u), 0);
	int which = -1;
	for (int i = s->n - 1; i >= 0 && which < 0; i--)
		if (usedmap_equal(&u, &s->u[i]))
			which = i;
	cr_assert_geq(which, 0, "%s: the image is not the state of any completed store", point);
	uint64_t tag;
	bool tag_ok = false;
	cr_assert_eq(bga_volume_tag(vol, &tag), 0);
	for (int i = 0; i < s->n; i++) /* stores of equal states cannot be told apart */
		tag_ok |= usedmap_equal(&u, &s->u[i]) && tag == s->tag[i] && L == s->committed[i];
	cr_assert(tag_ok, "%s: the image's tag is %llu and last commit %llu, not %llu and %llu, the store's", point,
		  (unsigned long long)tag, (unsigned long long)L, (unsigned long long)s->tag[which],
		  (unsigned long long)s->committed[which]);
	cr_assert_leq(L, J, "%s: the image committed txn %llu, past the journal's %llu", point,
		      (unsigned long long)L, (unsigned long long)J);
	for (uint64_t b = 0; b < NBLOCKS; b++) {
		bool used = (u.bits[b / 64] >> (b % 64)) & 1, own = owned_at(e, J, b);
		cr_assert(!own || used, "%s: block %llu, owned at txn %llu, is free in the image", point,
			  (unsigned long long)b, (unsigned long long)J);
		if (used && !own)
			cr_assert(freed_between(e, L, J, b) || allocated_after(e, J, b),
				  "%s: block %llu is allocated, owned by no transaction, freed by none in (%llu, %llu] "
				  "and allocated by none after %llu",
				  point, (unsigned long long)b, (unsigned long long)L, (unsigned long long)J,
				  (unsigned long long)J);
	}
	/* the replay: the frees of (L, J] are allocated in the image */
	for (uint64_t t = L + 1; t <= J; t++)
		for (size_t i = 0; i < e->t[t].nfreed; i++) {
			const struct bga_extent *x = &e->t[t].freed[i];
			rc = bga_free(vol, x->start, x->len);
			cr_assert_eq(rc, 0, "%s: replaying txn %llu's free of %llu+%llu: %s", point,
				     (unsigned long long)t, (unsigned long long)x->start, (unsigned long long)x->len,
				     bga_strerror(rc));
		}
	/* the walk: what no transaction up to J owns goes back */
	usedmap_free(&u);
	cr_assert_eq(usedmap_take(vol, &u), 0);
	for (uint64_t b = 0; b < NBLOCKS; b++)
		if (((u.bits[b / 64] >> (b % 64)) & 1) && !owned_at(e, J, b))
			cr_assert_eq(bga_free(vol, b, 1), 0, "%s: giving back leaked block %llu", point,
				     (unsigned long long)b);
	usedmap_free(&u);
	cr_assert_eq(usedmap_take(vol, &u), 0);
	for (uint64_t b = 0; b < NBLOCKS; b++)
		cr_assert_eq((bool)((u.bits[b / 64] >> (b % 64)) & 1), owned_at(e, J, b),
			     "%s: after recovery block %llu is not as txn %llu left it", point, (unsigned long long)b,
			     (unsigned long long)J);
	assert_clean(vol);
	/* the engine goes on at J + 1 */
	if (J > 0 && e->t[J].nalloc > 0 && owned_at(e, J, e->t[J].alloc[0].start)) {
		const struct bga_extent *x = &e->t[J].alloc[0];
		cr_assert_eq(bga_free_deferred(vol, x->start, x->len, J + 1), 0, "%s: a free in txn J + 1", point);
		cr_assert_eq(bga_commit(vol, J + 1), 0);
	}
	usedmap_free(&u);
	bga_destroy(vol);
	crashes++;
	return which;
}

static void snap(struct engine *e, struct stored *s, uint64_t tag)
{
	cr_assert_lt(s->n, (int)(sizeof(s->u) / sizeof(s->u[0])));
	s->tag[s->n] = tag;
	struct bga_stats st;
	cr_assert_eq(bga_stats(e->vol, &st), 0);
	s->committed[s->n] = st.last_committed_txn;
	cr_assert_eq(usedmap_take(e->vol, &s->u[s->n]), 0);
	s->n++;
}

/* A store recorded write by write, crashed after each one; the state
 * each cut loads is the one before the store or the store's own. */
static void store_crashing(struct engine *e, struct stored *s, uint64_t T, const char *what)
{
	struct area pre = area_now(&e->m);
	int before = s->n - 1;
	snap(e, s, T); /* the store's instant: nothing runs during it here */
	memio_clear_log(&e->m);
	e->m.record = true;
	cr_assert_eq(bga_store_tagged(e->vol, &e->io, T), 0);
	e->m.record = false;
	bool saw_new = false;
	for (size_t cut = 0; cut <= e->m.nlog; cut++) {
		struct area a = area_cut(&pre, &e->m, cut);
		char point[96];
		snprintf(point, sizeof(point), "%s, txn %llu, cut %zu of %zu", what, (unsigned long long)e->running,
			 cut, e->m.nlog);
		int which = recover(e, &a, e->durable, s, point);
		cr_assert(which == before || which == s->n - 1, "%s: loaded neither the old nor the new image", point);
		saw_new |= which == s->n - 1;
		if (cut == e->m.nlog)
			cr_assert_eq(which, s->n - 1, "%s: a completed store loads to its own state", point);
		free(a.b);
	}
	cr_assert(saw_new);
	memio_clear_log(&e->m);
	free(pre.b);
}

static void crash_now(struct engine *e, const struct stored *s, const char *what)
{
	struct area a = area_now(&e->m);
	char point[96];
	snprintf(point, sizeof(point), "%s, txn %llu", what, (unsigned long long)e->running);
	recover(e, &a, e->durable, s, point);
	free(a.b);
}

Test(persist_guide, crash_at_each_point, .timeout = 120)
{
	static struct engine e; /* large: not on the stack */
	static struct stored s;
	memset(&e, 0, sizeof(e));
	memset(&s, 0, sizeof(s));
	e.r.s = 0x5eed1e;
	struct bga_config cfg;
	bga_config_init(&cfg, NBLOCKS);
	cfg.blocks_per_group = BPG;
	cr_assert_eq(bga_create(&cfg, &e.vol), 0);
	memio_init(&e.m, &e.io);
	snap(&e, &s, 0);
	cr_assert_eq(bga_store(e.vol, &e.io), 0); /* the format: an empty volume, txn 0, tag 0 */
	e.running = 1;
	allocate(&e, 6);
	int ntxn = MAXTXN - 2;
	for (int k = 0; k < ntxn; k++) {
		allocate(&e, 1 + (int)below(&e.r, 5));
		free_some(&e, (int)below(&e.r, 4));
		crash_now(&e, &s, "T running, before its store");
		/* 1: close T; what follows is T+1's, in flight during the store */
		e.running++;
		allocate(&e, (int)below(&e.r, 3));
		e.running--;
		uint64_t T = e.running;
		e.running = T + 1;
		/* 2: the store, crashed at every write */
		store_crashing(&e, &s, T, "during the store of T");
		crash_now(&e, &s, "after the store of T, before its journal commit");
		/* 3: the journal commit of T */
		e.durable = T;
		crash_now(&e, &s, "after the journal commit of T, before bga_commit");
		/* 4: bga_commit; T's freed blocks may be taken again at once */
		cr_assert_eq(bga_commit(e.vol, T), 0);
		allocate(&e, 3);
		crash_now(&e, &s, "after bga_commit of T, its frees reused");
	}
	/* a clean close: the last transaction committed, then one more store */
	uint64_t T = e.running;
	free_some(&e, 3);
	store_crashing(&e, &s, T, "the last transaction's store");
	e.durable = T;
	cr_assert_eq(bga_commit(e.vol, T), 0);
	crash_now(&e, &s, "closing: after the last bga_commit, before the closing store");
	e.running = T + 1; /* nothing more is allocated */
	store_crashing(&e, &s, T, "the closing store");
	crash_now(&e, &s, "closed");
	{
		/* closed cleanly: the image is exact, last committed T */
		struct area a = area_now(&e.m);
		struct constio c = {a.b, a.size};
		struct bga_io io = {&c, constio_read, constio_write, constio_flush};
		struct bga_volume *vol;
		cr_assert_eq(bga_load(&io, NULL, &vol), 0);
		struct bga_stats st;
		cr_assert_eq(bga_stats(vol, &st), 0);
		cr_assert_eq(st.last_committed_txn, T);
		uint64_t tag;
		cr_assert_eq(bga_volume_tag(vol, &tag), 0);
		cr_assert_eq(tag, T, "the closed image's tag is %llu, not the last transaction", (unsigned long long)tag);
		for (uint64_t b = 0; b < NBLOCKS; b++) {
			struct bga_request one = {.goal = b, .min_len = 1, .max_len = 1, .flags = BGA_EXACT_GOAL};
			struct bga_extent x;
			int rc = bga_alloc(vol, &one, &x);
			cr_assert_eq(rc == 0, !owned_at(&e, T, b), "closed image: block %llu is %s", (unsigned long long)b,
				     rc == 0 ? "free but owned" : "allocated but not owned");
		}
		bga_destroy(vol);
		free(a.b);
	}
	cr_log_info("%ld crashes recovered as the guide says", crashes);
	for (int i = 0; i < s.n; i++)
		usedmap_free(&s.u[i]);
	memio_free(&e.m);
	bga_destroy(e.vol);
}

/* ---- the first store after a load ---- */

/* A volume with some history, stored twice; returns its area. */
static void history(struct memio *m, struct bga_io *io, struct usedmap *stored)
{
	struct rng r = {77};
	struct bga_volume *vol = make_volume(NBLOCKS, BPG, 0);
	struct bga_extent ext[200];
	size_t n = 0;
	memio_init(m, io);
	churn(vol, &r, 80, 20, ext, 200, &n);
	cr_assert_eq(bga_store(vol, io), 0);
	churn(vol, &r, 40, 20, ext, 200, &n);
	cr_assert_eq(bga_free_deferred(vol, ext[0].start, ext[0].len, 3), 0); /* stored allocated */
	cr_assert_eq(bga_store(vol, io), 0);
	cr_assert_eq(usedmap_take(vol, stored), 0);
	bga_destroy(vol);
}

/* Load through io, change the volume, store through io (same_io) or
 * through another io over the same bytes, with every write recorded;
 * count the cuts that load to neither state. */
static long first_store_after_load(struct memio *m, struct bga_io *io, bool same_io, long *cuts)
{
	struct usedmap old;
	history(m, io, &old);
	struct bga_volume *vol;
	cr_assert_eq(bga_load(io, NULL, &vol), 0);
	struct usedmap got;
	cr_assert_eq(usedmap_take(vol, &got), 0);
	cr_assert(usedmap_equal(&got, &old));
	usedmap_free(&got);
	struct rng r = {91};
	struct bga_extent ext[200];
	size_t n = 0;
	churn(vol, &r, 30, 20, ext, 200, &n);
	struct usedmap new;
	cr_assert_eq(usedmap_take(vol, &new), 0);
	struct area pre = area_now(m);
	/* another io: another ctx over a copy of the same bytes */
	struct memio other;
	struct bga_io oio;
	memio_init(&other, &oio);
	cr_assert_eq(memio_grow(&other, m->size), 0);
	memcpy(other.buf, m->buf, m->size);
	struct memio *rec = same_io ? m : &other;
	memio_clear_log(m);
	rec->record = true;
	cr_assert_eq(bga_store(vol, same_io ? io : &oio), 0);
	rec->record = false;
	long bad = 0;
	for (size_t cut = 0; cut <= rec->nlog; cut++) {
		struct area a = area_cut(&pre, rec, cut);
		struct constio c = {a.b, a.size};
		struct bga_io cio = {&c, constio_read, constio_write, constio_flush};
		struct bga_volume *v2;
		int rc = bga_load(&cio, NULL, &v2);
		bool ok = false;
		if (rc == 0) {
			struct bga_stats st;
			cr_assert_eq(bga_stats(v2, &st), 0);
			struct usedmap u;
			cr_assert_eq(usedmap_take(v2, &u), 0);
			ok = st.groups_quarantined == 0 && (usedmap_equal(&u, &old) || usedmap_equal(&u, &new));
			usedmap_free(&u);
			bga_destroy(v2);
		}
		bad += !ok;
		(*cuts)++;
		free(a.b);
	}
	memio_free(&other);
	bga_destroy(vol);
	usedmap_free(&old);
	usedmap_free(&new);
	free(pre.b);
	memio_free(m);
	return bad;
}

Test(persist_guide, first_store_after_load_is_not_a_format)
{
	struct memio m;
	struct bga_io io;
	long cuts = 0;
	long bad = first_store_after_load(&m, &io, true, &cuts);
	cr_assert_eq(bad, 0, "%ld of %ld cuts of the first store after a load, through the io it was loaded with, "
			     "loaded neither state",
		     bad, cuts);
	long ocuts = 0;
	long obad = first_store_after_load(&m, &io, false, &ocuts);
	cr_assert_gt(obad, 0, "a store through another io formats the area: some cut of it should not load");
	cr_log_info("first store after a load: %ld cuts, all loaded the old or the new state; through another io "
		    "(a format) %ld of %ld did not",
		    cuts, obad, ocuts);
}
