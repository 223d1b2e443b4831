/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recorder (bga_rec.h): recorded calls that call the library and
 * append a record of each call to a trace (bga_trace.h).
 */
#define _GNU_SOURCE
#include "bga_rec.h"

#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bga_trace.h"

#define REC_BUF (1u << 20)
#define REC_INIT_BATCH 512 /* extents per init_free record */

struct bga_rec {
	struct bga_volume *vol;
	FILE *f;
	_Atomic uint64_t seq;
	uint64_t t0;
	/* buf, the handle table and err are under lock. */
	pthread_mutex_t lock;
	unsigned char *buf;
	size_t used;
	int err;
	/* open handles: rsv pointer -> id, open addressing, linear probing */
	struct rec_handle {
		const struct bga_rsv *rsv;
		uint64_t id;
	} *handles;
	size_t hcap, hcount;
	uint64_t next_id;
	/* BGA_REC_YIELD set at bga_rec_open: yield between each call and its
	 * record, so that a test sees records reach the buffer out of order */
	int yield;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint16_t thread_no(void)
{
	static _Atomic uint16_t next;
	static _Thread_local uint16_t mine;
	if (!mine)
		mine = atomic_fetch_add(&next, 1) + 1;
	return mine;
}

static uint64_t take_seq(struct bga_rec *r)
{
	return atomic_fetch_add_explicit(&r->seq, 1, memory_order_relaxed);
}

static void flush_locked(struct bga_rec *r)
{
	if (r->used && !r->err && fwrite(r->buf, 1, r->used, r->f) != r->used)
		r->err = errno ? -errno : -EIO;
	r->used = 0;
}

/* Append one record; the caller holds r->lock. */
static void put_locked(struct bga_rec *r, unsigned op, int rc, uint64_t seq, const uint64_t *args,
                       const struct bga_extent *ext, size_t next)
{
	unsigned nargs = bgt_op_nargs(op);
	size_t size = BGT_REC_SIZE + 8 * (size_t)nargs + 16 * next;
	if (r->err)
		return;
	if (size > UINT32_MAX || next > UINT32_MAX) {
		r->err = -EOVERFLOW;
		return;
	}
	if (r->used + size > REC_BUF)
		flush_locked(r);
	unsigned char small[BGT_REC_SIZE + 8 * 8 + 16], *p = small, *big = NULL;
	if (size <= REC_BUF)
		p = r->buf + r->used;
	else if (size > sizeof(small) && !(p = big = malloc(size))) {
		r->err = -ENOMEM;
		return;
	}
	bgt_put_u32(p, (uint32_t)size);
	p[4] = (unsigned char)op;
	p[5] = (unsigned char)nargs;
	uint16_t t = htole16(thread_no());
	memcpy(p + 6, &t, 2);
	bgt_put_u32(p + 8, (uint32_t)rc);
	bgt_put_u32(p + 12, (uint32_t)next);
	bgt_put_u64(p + 16, seq);
	bgt_put_u64(p + 24, now_ns() - r->t0);
	unsigned char *q = p + BGT_REC_SIZE;
	for (unsigned i = 0; i < nargs; i++, q += 8)
		bgt_put_u64(q, args[i]);
	for (size_t i = 0; i < next; i++, q += 16) {
		bgt_put_u64(q, ext[i].start);
		bgt_put_u64(q + 8, ext[i].len);
	}
	if (big) {
		if (fwrite(big, 1, size, r->f) != size)
			r->err = errno ? -errno : -EIO;
		free(big);
	} else {
		r->used += size;
	}
}

static void put(struct bga_rec *r, unsigned op, int rc, uint64_t seq, const uint64_t *args,
                const struct bga_extent *ext, size_t next)
{
	pthread_mutex_lock(&r->lock);
	put_locked(r, op, rc, seq, args, ext, next);
	pthread_mutex_unlock(&r->lock);
}

/* ---- open handles: the rsv pointer's id ---- */

static size_t hslot(const struct bga_rec *r, const struct bga_rsv *rsv)
{
	uint64_t h = (uint64_t)(uintptr_t)rsv * UINT64_C(0x9e3779b97f4a7c15);
	return (size_t)(h >> 20) & (r->hcap - 1);
}

/* The id of rsv, 0 when the recorder never saw it opened. */
static uint64_t handle_find_locked(const struct bga_rec *r, const struct bga_rsv *rsv)
{
	if (!rsv || !r->hcap)
		return 0;
	for (size_t i = hslot(r, rsv);; i = (i + 1) & (r->hcap - 1)) {
		if (r->handles[i].rsv == rsv)
			return r->handles[i].id;
		if (!r->handles[i].rsv)
			return 0;
	}
}

static int handle_add_locked(struct bga_rec *r, const struct bga_rsv *rsv, uint64_t id)
{
	if (2 * (r->hcount + 1) > r->hcap) {
		size_t ncap = r->hcap ? 2 * r->hcap : 64;
		struct rec_handle *old = r->handles, *nh = calloc(ncap, sizeof(*nh));
		if (!nh)
			return -ENOMEM;
		size_t ocap = r->hcap;
		r->handles = nh;
		r->hcap = ncap;
		for (size_t i = 0; i < ocap; i++)
			if (old[i].rsv) {
				size_t j = hslot(r, old[i].rsv);
				while (nh[j].rsv)
					j = (j + 1) & (ncap - 1);
				nh[j] = old[i];
			}
		free(old);
	}
	size_t i = hslot(r, rsv);
	while (r->handles[i].rsv)
		i = (i + 1) & (r->hcap - 1);
	r->handles[i].rsv = rsv;
	r->handles[i].id = id;
	r->hcount++;
	return 0;
}

/* Remove rsv (linear probing's backward-shift delete); its id, or 0. */
static uint64_t handle_del_locked(struct bga_rec *r, const struct bga_rsv *rsv)
{
	if (!rsv || !r->hcap)
		return 0;
	size_t mask = r->hcap - 1, i = hslot(r, rsv);
	while (r->handles[i].rsv != rsv) {
		if (!r->handles[i].rsv)
			return 0;
		i = (i + 1) & mask;
	}
	uint64_t id = r->handles[i].id;
	for (size_t j = (i + 1) & mask; r->handles[j].rsv; j = (j + 1) & mask) {
		size_t home = hslot(r, r->handles[j].rsv);
		/* move j back to i when its home is not in (i, j] */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			r->handles[i] = r->handles[j];
			i = j;
		}
	}
	r->handles[i].rsv = NULL;
	r->hcount--;
	return id;
}

static uint64_t handle_id(struct bga_rec *r, const struct bga_rsv *rsv)
{
	if (!rsv)
		return 0;
	pthread_mutex_lock(&r->lock);
	uint64_t id = handle_find_locked(r, rsv);
	pthread_mutex_unlock(&r->lock);
	return id;
}

/* ---- the free map ---- */

struct walk {
	uint64_t hash, free, start, len;
	struct bga_rec *rec; /* init_free records, when set */
	struct bga_extent batch[REC_INIT_BATCH];
	size_t n;
};

static void walk_emit(struct walk *w)
{
	if (!w->len)
		return;
	w->hash = bgt_hash_u64(bgt_hash_u64(w->hash, w->start), w->len);
	w->free += w->len;
	if (w->rec) {
		w->batch[w->n++] = (struct bga_extent){w->start, w->len};
		if (w->n == REC_INIT_BATCH) {
			put_locked(w->rec, BGT_INIT_FREE, 0, take_seq(w->rec), NULL, w->batch, w->n);
			w->n = 0;
		}
	}
}

static int walk_cb(void *ctx, uint64_t start, uint64_t len)
{
	struct walk *w = ctx;
	if (w->len && w->start + w->len == start) {
		w->len += len;
		return 0;
	}
	walk_emit(w);
	w->start = start;
	w->len = len;
	return 0;
}

static int walk_all(struct bga_volume *vol, struct walk *w)
{
	struct bga_config cfg;
	int rc = bga_volume_config(vol, &cfg);
	w->hash = BGT_HASH_INIT;
	if (!rc && cfg.nblocks > cfg.first_data_block)
		rc = bga_foreach_free(vol, 0, cfg.nblocks, 1, walk_cb, w);
	if (rc)
		return rc;
	walk_emit(w);
	if (w->rec && w->n)
		put_locked(w->rec, BGT_INIT_FREE, 0, take_seq(w->rec), NULL, w->batch, w->n);
	return 0;
}

int bga_rec_hash(struct bga_volume *vol, uint64_t *hash, uint64_t *free_blocks)
{
	struct walk *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	int rc = walk_all(vol, w);
	if (!rc) {
		if (hash)
			*hash = w->hash;
		if (free_blocks)
			*free_blocks = w->free;
	}
	free(w);
	return rc;
}

/* ---- open and close ---- */

int bga_rec_open(struct bga_volume *vol, const char *path, const char *source, uint32_t block_size,
                 struct bga_rec **out)
{
	struct bga_config cfg;
	if (!vol || !path || !out || bga_volume_config(vol, &cfg))
		return -EINVAL;
	struct bga_rec *r = calloc(1, sizeof(*r));
	struct walk *w = calloc(1, sizeof(*w));
	int rc = -ENOMEM;
	if (!r || !w || !(r->buf = malloc(REC_BUF)))
		goto fail;
	pthread_mutex_init(&r->lock, NULL);
	r->vol = vol;
	r->next_id = 1;
	r->yield = getenv("BGA_REC_YIELD") != NULL;
	r->t0 = now_ns();
	if (!(r->f = fopen(path, "wb"))) {
		rc = -errno;
		goto fail;
	}
	unsigned char h[BGT_HEADER_SIZE] = {0};
	memcpy(h, BGT_MAGIC, 8);
	bgt_put_u32(h + 8, BGT_VERSION);
	bgt_put_u32(h + 12, BGT_HEADER_SIZE);
	bgt_put_u64(h + 16, cfg.nblocks);
	bgt_put_u32(h + 24, cfg.blocks_per_group);
	bgt_put_u32(h + 28, cfg.flags);
	bgt_put_u64(h + 32, cfg.first_data_block);
	bgt_put_u32(h + 40, block_size);
	bgt_put_u32(h + 44, cfg.stripe);
	if (source)
		strncpy((char *)h + 48, source, BGT_SOURCE_LEN - 1);
	memcpy(r->buf, h, sizeof(h));
	r->used = sizeof(h);
	w->rec = r;
	pthread_mutex_lock(&r->lock);
	rc = walk_all(vol, w);
	flush_locked(r);
	if (!rc)
		rc = r->err;
	pthread_mutex_unlock(&r->lock);
	if (rc)
		goto fail;
	free(w);
	*out = r;
	return 0;
fail:
	if (r && r->f)
		fclose(r->f);
	if (r)
		free(r->buf);
	free(r);
	free(w);
	return rc;
}

int bga_rec_close(struct bga_rec *r)
{
	if (!r)
		return 0;
	uint64_t args[2];
	int rc = bga_rec_hash(r->vol, &args[0], &args[1]);
	pthread_mutex_lock(&r->lock);
	if (!rc)
		put_locked(r, BGT_END, 0, take_seq(r), args, NULL, 0);
	flush_locked(r);
	if (!rc)
		rc = r->err;
	pthread_mutex_unlock(&r->lock);
	if (fclose(r->f) && !rc)
		rc = -EIO;
	pthread_mutex_destroy(&r->lock);
	free(r->handles);
	free(r->buf);
	free(r);
	return rc;
}

/* ---- the recorded calls ---- */

/*
 * Each recorded call takes its record's seq where the order of records
 * must follow: a free (and anything that gives blocks back) before its
 * call, so that no allocation of its blocks by another thread can come
 * first in the trace; an allocation after its call, so that it comes
 * after every free it reused.
 */

static void yield_maybe(const struct bga_rec *r)
{
	if (r->yield)
		sched_yield();
}

static void req_args(uint64_t *a, uint64_t handle, const struct bga_request *req)
{
	a[0] = handle;
	a[1] = req ? req->goal : 0;
	a[2] = req ? req->min_len : 0;
	a[3] = req ? req->max_len : 0;
	a[4] = req ? req->flags : 0;
	a[5] = req ? req->align : 0;
}

/* The allocation's record and, for an anchored goal, its goal_from, both
 * of one seq under one hold of the lock (bga_trace.h). */
static void put_alloc(struct bga_rec *r, unsigned op, int rc, const uint64_t *a, uint64_t anchor, int64_t distance,
                      const struct bga_extent *ext, size_t next)
{
	uint64_t seq = take_seq(r);
	pthread_mutex_lock(&r->lock);
	put_locked(r, op, rc, seq, a, ext, next);
	if (anchor != BGA_NO_GOAL)
		put_locked(r, BGT_GOAL_FROM, 0, seq, (uint64_t[]){anchor, (uint64_t)distance}, NULL, 0);
	pthread_mutex_unlock(&r->lock);
}

int bga_rec_alloc_from(struct bga_rec *r, struct bga_volume *vol, const struct bga_request *req, uint64_t anchor,
                       int64_t distance, struct bga_extent *out)
{
	if (!r)
		return bga_alloc(vol, req, out);
	if (r->vol != vol) /* a call on another volume: refused, not recorded */
		return -EINVAL;
	int rc = bga_alloc(vol, req, out);
	yield_maybe(r);
	uint64_t a[6];
	req_args(a, req ? handle_id(r, req->rsv) : 0, req);
	put_alloc(r, BGT_ALLOC, rc, a, req ? anchor : BGA_NO_GOAL, distance, out, rc ? 0 : 1);
	return rc;
}

int bga_rec_alloc(struct bga_rec *r, struct bga_volume *vol, const struct bga_request *req, struct bga_extent *out)
{
	return bga_rec_alloc_from(r, vol, req, BGA_NO_GOAL, 0, out);
}

int bga_rec_alloc_vec_from(struct bga_rec *r, struct bga_volume *vol, const struct bga_request *req,
                           uint64_t anchor, int64_t distance, uint64_t want, struct bga_extent *out, size_t max_out,
                           size_t *n_out)
{
	if (!r)
		return bga_alloc_vec(vol, req, want, out, max_out, n_out);
	if (r->vol != vol)
		return -EINVAL;
	int rc = bga_alloc_vec(vol, req, want, out, max_out, n_out);
	yield_maybe(r);
	uint64_t a[8];
	req_args(a, req ? handle_id(r, req->rsv) : 0, req);
	a[6] = want;
	a[7] = max_out;
	put_alloc(r, BGT_ALLOC_VEC, rc, a, req ? anchor : BGA_NO_GOAL, distance, out, rc || !n_out ? 0 : *n_out);
	return rc;
}

int bga_rec_alloc_vec(struct bga_rec *r, struct bga_volume *vol, const struct bga_request *req, uint64_t want,
                      struct bga_extent *out, size_t max_out, size_t *n_out)
{
	return bga_rec_alloc_vec_from(r, vol, req, BGA_NO_GOAL, 0, want, out, max_out, n_out);
}

int bga_rec_free(struct bga_rec *r, struct bga_volume *vol, uint64_t start, uint64_t len)
{
	if (!r)
		return bga_free(vol, start, len);
	if (r->vol != vol)
		return -EINVAL;
	uint64_t seq = take_seq(r);
	int rc = bga_free(vol, start, len);
	yield_maybe(r);
	put(r, BGT_FREE, rc, seq, (uint64_t[]){start, len}, NULL, 0);
	return rc;
}

int bga_rec_free_vec(struct bga_rec *r, struct bga_volume *vol, const struct bga_extent *ext, size_t n)
{
	if (!r)
		return bga_free_vec(vol, ext, n);
	if (r->vol != vol)
		return -EINVAL;
	uint64_t seq = take_seq(r);
	int rc = bga_free_vec(vol, ext, n);
	yield_maybe(r);
	put(r, BGT_FREE_VEC, rc, seq, NULL, ext, ext ? n : 0);
	return rc;
}

int bga_rec_free_deferred(struct bga_rec *r, struct bga_volume *vol, uint64_t start, uint64_t len, uint64_t txn)
{
	if (!r)
		return bga_free_deferred(vol, start, len, txn);
	if (r->vol != vol)
		return -EINVAL;
	uint64_t seq = take_seq(r);
	int rc = bga_free_deferred(vol, start, len, txn);
	yield_maybe(r);
	put(r, BGT_FREE_DEFERRED, rc, seq, (uint64_t[]){start, len, txn}, NULL, 0);
	return rc;
}

int bga_rec_free_deferred_vec(struct bga_rec *r, struct bga_volume *vol, const struct bga_extent *ext, size_t n,
                              uint64_t txn)
{
	if (!r)
		return bga_free_deferred_vec(vol, ext, n, txn);
	if (r->vol != vol)
		return -EINVAL;
	uint64_t seq = take_seq(r);
	int rc = bga_free_deferred_vec(vol, ext, n, txn);
	yield_maybe(r);
	put(r, BGT_FREE_DEFERRED_VEC, rc, seq, (uint64_t[]){txn}, ext, ext ? n : 0);
	return rc;
}

int bga_rec_commit(struct bga_rec *r, struct bga_volume *vol, uint64_t txn)
{
	if (!r)
		return bga_commit(vol, txn);
	if (r->vol != vol)
		return -EINVAL;
	uint64_t seq = take_seq(r);
	int rc = bga_commit(vol, txn);
	yield_maybe(r);
	put(r, BGT_COMMIT, rc, seq, (uint64_t[]){txn}, NULL, 0);
	return rc;
}

int bga_rec_claim(struct bga_rec *r, struct bga_volume *vol, uint64_t start, uint64_t len)
{
	if (!r)
		return bga_claim(vol, start, len);
	if (r->vol != vol)
		return -EINVAL;
	int rc = bga_claim(vol, start, len);
	yield_maybe(r);
	put(r, BGT_CLAIM, rc, take_seq(r), (uint64_t[]){start, len}, NULL, 0);
	return rc;
}

int bga_rec_reserve(struct bga_rec *r, struct bga_volume *vol, uint64_t n)
{
	if (!r)
		return bga_reserve(vol, n);
	if (r->vol != vol)
		return -EINVAL;
	int rc = bga_reserve(vol, n);
	yield_maybe(r);
	put(r, BGT_RESERVE, rc, take_seq(r), (uint64_t[]){n}, NULL, 0);
	return rc;
}

int bga_rec_unreserve(struct bga_rec *r, struct bga_volume *vol, uint64_t n)
{
	if (!r)
		return bga_unreserve(vol, n);
	if (r->vol != vol)
		return -EINVAL;
	uint64_t seq = take_seq(r);
	int rc = bga_unreserve(vol, n);
	yield_maybe(r);
	put(r, BGT_UNRESERVE, rc, seq, (uint64_t[]){n}, NULL, 0);
	return rc;
}

int bga_rec_rsv_open(struct bga_rec *r, struct bga_volume *vol, struct bga_rsv **out)
{
	if (!r)
		return bga_rsv_open(vol, out);
	if (r->vol != vol)
		return -EINVAL;
	int rc = bga_rsv_open(vol, out);
	yield_maybe(r);
	pthread_mutex_lock(&r->lock);
	uint64_t id = 0;
	if (!rc) {
		id = r->next_id++;
		if (handle_add_locked(r, *out, id) && !r->err)
			r->err = -ENOMEM;
	}
	put_locked(r, BGT_RSV_OPEN, rc, take_seq(r), (uint64_t[]){id}, NULL, 0);
	pthread_mutex_unlock(&r->lock);
	return rc;
}

/* rsv's id in r (0: not opened through r), removed when remove is set. */
static uint64_t handle_take(struct bga_rec *r, const struct bga_rsv *rsv, int remove)
{
	if (!r || !rsv)
		return 0;
	pthread_mutex_lock(&r->lock);
	uint64_t id = remove ? handle_del_locked(r, rsv) : handle_find_locked(r, rsv);
	pthread_mutex_unlock(&r->lock);
	return id;
}

void bga_rec_rsv_close(struct bga_rec *r, struct bga_rsv *rsv)
{
	uint64_t id = handle_take(r, rsv, 1);
	uint64_t seq = id ? take_seq(r) : 0;
	bga_rsv_close(rsv);
	if (!id)
		return;
	yield_maybe(r);
	put(r, BGT_RSV_CLOSE, 0, seq, (uint64_t[]){id}, NULL, 0);
}

int bga_rec_rsv_set_size(struct bga_rec *r, struct bga_rsv *rsv, uint32_t blocks)
{
	uint64_t id = handle_take(r, rsv, 0);
	uint64_t seq = id ? take_seq(r) : 0;
	int rc = bga_rsv_set_size(rsv, blocks);
	if (!id)
		return rc;
	yield_maybe(r);
	put(r, BGT_RSV_SET_SIZE, rc, seq, (uint64_t[]){id, blocks}, NULL, 0);
	return rc;
}
