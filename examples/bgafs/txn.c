/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Transactions.  Every op that changes the namespace or frees blocks runs
 * inside the running transaction (fs_begin/fs_end: jlock shared).  A commit
 * takes jlock exclusive only to close the transaction and serialise the
 * namespace; the I/O runs with ops going on:
 *
 *   1. write the table into fresh blocks (the data is already in the image);
 *   2. bga_store: the allocator, with the table's blocks taken and the
 *      transaction's deferred frees still allocated.  It flushes before
 *      and after its own superblock, and its area is part of the image
 *      file, so data, table and allocator are durable when it returns;
 *   3. write the superblock slot of the next generation, naming the table;
 *      flush;
 *   4. bga_commit(txn): only now may the blocks freed in it be reused.
 *
 * Tables are written into blocks of a metadata pool the file system owns
 * (listed at the end of each table), filled from bgalloc while there is
 * room, so writers that fill the disk never take the room of the next
 * commit.  The previous table's blocks go back to the pool only in the
 * table of the commit that overwrites the older superblock slot naming it:
 * the fallback slot (when the newest is torn) always names an intact
 * table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bgafs.h"

#define POOL_SLACK 64 /* pool blocks kept beyond twice the table */

void fs_begin(struct fs *fs)
{
	pthread_rwlock_rdlock(&fs->jlock);
}

void fs_end(struct fs *fs, int changed)
{
	if (changed)
		atomic_store_explicit(&fs->dirty, 1, memory_order_relaxed);
	pthread_rwlock_unlock(&fs->jlock);
}

void txn_free_blocks(struct fs *fs, uint64_t pblk, uint64_t len)
{
	uint64_t txn = atomic_load(&fs->txn);
	int rc = bga_free_deferred(fs->vol, pblk, len, txn);
	if (rc)
		fprintf(stderr, "bgafs: freeing blocks %llu+%llu in txn %llu: %s (left allocated)\n",
			(unsigned long long)pblk, (unsigned long long)len, (unsigned long long)txn,
			bga_strerror(rc));
}

int pool_add(struct fs *fs, uint64_t start, uint64_t len)
{
	if (fs->npool && fs->pool[fs->npool - 1].start + fs->pool[fs->npool - 1].len == start) {
		fs->pool[fs->npool - 1].len += len;
	} else {
		if (fs->npool == fs->pool_cap) {
			uint32_t cap = fs->pool_cap ? fs->pool_cap * 2 : 16;
			struct bgafs_ext *v = realloc(fs->pool, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			fs->pool = v;
			fs->pool_cap = cap;
		}
		fs->pool[fs->npool++] = (struct bgafs_ext){start, len};
	}
	fs->pool_blocks += len;
	return 0;
}

/* Blocks for a table of nb blocks: from the metadata pool first (a disk
 * that writers have filled can still commit), then from bgalloc.  On
 * failure whatever was taken is in the pool again. */
static int table_alloc(struct fs *fs, uint64_t nb, struct bgafs_ext *ext, uint32_t *next)
{
	uint64_t goal = BGA_NO_GOAL;
	*next = 0;
	while (nb && fs->npool && *next < BGAFS_SB_EXTENTS) {
		struct bgafs_ext *e = &fs->pool[fs->npool - 1];
		uint64_t take = e->len < nb ? e->len : nb;
		ext[(*next)++] = (struct bgafs_ext){e->start + e->len - take, take};
		e->len -= take;
		fs->pool_blocks -= take;
		nb -= take;
		if (!e->len)
			fs->npool--;
	}
	while (nb) {
		int rc = -ENOSPC;
		struct bga_extent got;
		if (*next < BGAFS_SB_EXTENTS) {
			/* Ask for the whole run, then halves of it: few extents
			 * when the space allows, a table when it is fragmented. */
			struct bga_request req = {.goal = goal, .min_len = nb, .max_len = nb};
			while ((rc = bga_alloc(fs->vol, &req, &got)) && (rc == -ENOSPC || rc == -EAGAIN) &&
			       req.min_len > 1)
				req.min_len = (req.min_len + 1) / 2;
		}
		if (rc) {
			for (uint32_t i = 0; i < *next; i++)
				pool_add(fs, ext[i].start, ext[i].len); /* cannot fail: it just shrank */
			*next = 0;
			return rc;
		}
		ext[(*next)++] = (struct bgafs_ext){got.start, got.len};
		goal = got.start + got.len < fs->sb.nblocks ? got.start + got.len : BGA_NO_GOAL;
		nb -= got.len;
	}
	return 0;
}

/* Keep the pool at twice the table and some: filled from bgalloc while
 * there is room (the blocks count as owned from the next table on; a crash
 * before it leaves them to the reconcile), and what is far beyond it freed
 * in the running transaction (the durable table still lists them). */
static void pool_adjust(struct fs *fs, uint64_t table_blocks)
{
	uint64_t want = 2 * table_blocks + POOL_SLACK;
	if (fs->pool_frozen)
		return;
	while (fs->pool_blocks < want) {
		struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = 1, .max_len = want - fs->pool_blocks};
		struct bga_extent got;
		if (bga_alloc(fs->vol, &req, &got))
			break; /* a full disk: the next commit tries again */
		if (pool_add(fs, got.start, got.len)) {
			bga_free(fs->vol, got.start, got.len);
			break;
		}
		atomic_store(&fs->dirty, 1); /* the next table lists them */
	}
	while (fs->pool_blocks > 4 * want && fs->npool) {
		struct bgafs_ext e = fs->pool[--fs->npool];
		fs->pool_blocks -= e.len;
		txn_free_blocks(fs, e.start, e.len);
		atomic_store(&fs->dirty, 1);
	}
}

/* Every change in a transaction <= txn is on disk.  Only a closed
 * transaction can be durable: one still running can take changes, and a
 * waiter for them would return before they are written. */
static void set_durable(struct fs *fs, uint64_t txn)
{
	if (txn >= atomic_load(&fs->txn)) {
		fprintf(stderr, "bgafs: bug: txn %llu marked durable while running\n", (unsigned long long)txn);
		abort();
	}
	pthread_mutex_lock(&fs->cmu);
	if (txn > fs->durable)
		fs->durable = txn;
	pthread_mutex_unlock(&fs->cmu);
}

static int table_write(struct fs *fs, const struct tbuf *tb, const struct bgafs_sb *sb)
{
	static const unsigned char zeros[BGAFS_BLOCK];
	size_t off = 0;
	int rc = 0;
	for (uint32_t i = 0; i < sb->table_next && !rc; i++) {
		size_t n = sb->table[i].len * BGAFS_BLOCK;
		size_t have = tb->len - off < n ? tb->len - off : n;
		rc = fs_pwrite_all(fs->fd, tb->p + off, have, sb->table[i].start * BGAFS_BLOCK);
		if (!rc && have % BGAFS_BLOCK) /* whole blocks: no stale bytes after the table */
			rc = fs_pwrite_all(fs->fd, zeros, BGAFS_BLOCK - have % BGAFS_BLOCK,
					   sb->table[i].start * BGAFS_BLOCK + have);
		off += have;
	}
	return rc;
}

int txn_commit(struct fs *fs)
{
	struct tbuf tb = {0};
	struct bgafs_sb sb = fs->sb, old = fs->sb;

	pthread_rwlock_wrlock(&fs->jlock);
	uint64_t txn = atomic_load(&fs->txn);
	if (!atomic_load(&fs->dirty)) {
		/* Nothing changed since the last snapshot, which is durable
		 * (a failed commit leaves dirty set): close the empty running
		 * transaction, so that it is durable and later changes join
		 * the next one. */
		atomic_store(&fs->txn, txn + 1);
		pthread_rwlock_unlock(&fs->jlock);
		set_durable(fs, txn);
		return 0;
	}
	atomic_store(&fs->txn, txn + 1);
	atomic_store(&fs->dirty, 0);
	int rc = table_serialize(fs, &tb);
	pthread_rwlock_unlock(&fs->jlock);
	if (rc)
		goto fail;

	/* The table ends with the pool it leaves: what the pool keeps after
	 * giving this table its blocks, and the previous table, which only
	 * the older superblock slot names (and this commit overwrites that
	 * slot).  Its size is bounded before the blocks are chosen. */
	size_t bound = tb.len + 8 + 16 * ((size_t)fs->npool + old.table_next);
	uint64_t nb = (bound + BGAFS_BLOCK - 1) / BGAFS_BLOCK;
	if ((rc = table_alloc(fs, nb, sb.table, &sb.table_next)))
		goto fail;
	if ((rc = table_put_pool(&tb, fs->pool, fs->npool, old.table, old.table_next)))
		goto fail_table;
	/* The metadata area is a range of the image file, so bga_store's
	 * flushes (before its superblock and after it) also make the data and
	 * the table durable: no flush of our own is needed before ours. */
	if ((rc = table_write(fs, &tb, &sb)) || (rc = bga_store(fs->vol, &fs->io)))
		goto fail_table;
	sb.table_bytes = tb.len;
	sb.table_crc = crc32c(0, tb.p, tb.len);
	sb.txn = txn;
	sb.gen++;
	if ((rc = sb_write(fs, &sb))) {
		/* The slot may or may not name the new table now: keep its
		 * blocks out of the pool (the next mount's reconcile frees
		 * them if not); the next commit rewrites the same slot. */
		goto fail;
	}
	fs->sb = sb;
	rc = bga_commit(fs->vol, txn);
	if (rc)
		fprintf(stderr, "bgafs: bga_commit(%llu): %s\n", (unsigned long long)txn, bga_strerror(rc));
	for (uint32_t i = 0; i < old.table_next; i++)
		if (pool_add(fs, old.table[i].start, old.table[i].len))
			txn_free_blocks(fs, old.table[i].start, old.table[i].len);
	pool_adjust(fs, nb);
	fs->commits++;
	free(tb.p);
	set_durable(fs, txn);
	return 0;
fail_table:
	for (uint32_t i = 0; i < sb.table_next; i++)
		pool_add(fs, sb.table[i].start, sb.table[i].len);
fail:
	fprintf(stderr, "bgafs: commit of txn %llu failed: %s (retried)\n", (unsigned long long)txn,
		bga_strerror(rc));
	atomic_store(&fs->dirty, 1);
	free(tb.p);
	return rc;
}

static void *committer(void *arg)
{
	struct fs *fs = arg;
	pthread_mutex_lock(&fs->cmu);
	while (!fs->cstop) {
		if (!fs->cwant) {
			struct timespec t;
			clock_gettime(CLOCK_REALTIME, &t);
			t.tv_sec += 1;
			pthread_cond_timedwait(&fs->ccv, &fs->cmu, &t);
			if (fs->cstop)
				break;
		}
		fs->cwant = 0;
		uint64_t seq = ++fs->cstarted;
		pthread_mutex_unlock(&fs->cmu);
		int rc = txn_commit(fs);
		pthread_mutex_lock(&fs->cmu);
		fs->clast_err = rc;
		fs->cdone_seq = seq;
		pthread_cond_broadcast(&fs->cdone);
	}
	pthread_mutex_unlock(&fs->cmu);
	return NULL;
}

int txn_start(struct fs *fs)
{
	int rc = pthread_create(&fs->committer, NULL, committer, fs);
	if (rc)
		return -rc;
	fs->committer_running = 1;
	return 0;
}

void txn_stop(struct fs *fs)
{
	if (!fs->committer_running)
		return;
	pthread_mutex_lock(&fs->cmu);
	fs->cstop = 1;
	pthread_cond_broadcast(&fs->ccv);
	pthread_mutex_unlock(&fs->cmu);
	pthread_join(fs->committer, NULL);
	fs->committer_running = 0;
}

int txn_sync_to(struct fs *fs, uint64_t txn)
{
	if (!fs->committer_running)
		return txn_commit(fs);
	int rc = 0;
	pthread_mutex_lock(&fs->cmu);
	/* A commit running now may already hold txn in its snapshot: then its
	 * end is enough.  Otherwise the next one, which starts at once. */
	uint64_t seen = fs->cdone_seq;
	while (fs->durable < txn && !fs->cstop) {
		if (fs->cdone_seq > seen + 1 && fs->clast_err) {
			rc = fs->clast_err; /* a commit that started after the call failed */
			break;
		}
		fs->cwant = 1;
		pthread_cond_signal(&fs->ccv);
		pthread_cond_wait(&fs->cdone, &fs->cmu);
	}
	if (!rc && fs->durable < txn)
		rc = -EIO;
	pthread_mutex_unlock(&fs->cmu);
	return rc;
}

int txn_sync(struct fs *fs)
{
	return txn_sync_to(fs, atomic_load(&fs->txn));
}

/* Files unlinked while open and still open at unmount (a lazy unmount):
 * nothing names them any more, so their blocks go with this last commit. */
static void free_orphans(struct fs *fs)
{
	struct itab *t = &fs->itab;
	for (uint64_t i = 0; i < t->cap; i++) {
		struct inode *ip = t->v[i];
		if (ip && !ip->nlink && ip->map.n) {
			struct extmap *m = &ip->map;
			for (uint32_t k = 0; k < m->n; k++)
				txn_free_blocks(fs, m->v[k].pblk, m->v[k].len);
			m->n = 0;
			m->blocks = 0;
			atomic_store(&fs->dirty, 1);
		}
	}
}

int txn_unmount(struct fs *fs)
{
	txn_stop(fs);
	free_orphans(fs); /* no op runs any more: no lock to take */
	int rc = txn_commit(fs);
	/* The pool may have grown after that table was written: one more
	 * commit, with the pool frozen, lists it, so the image is exact. */
	fs->pool_frozen = 1;
	if (!rc && atomic_load(&fs->dirty))
		rc = txn_commit(fs);
	if (rc)
		return rc;
	/* No op runs now and the last table is durable: release what waits
	 * on the running transaction (pool blocks given back, orphans) and
	 * store the allocator once more, so the image is exact without a
	 * reconcile; then mark it clean. */
	if ((rc = bga_commit(fs->vol, atomic_load(&fs->txn))))
		return rc;
	if ((rc = bga_store(fs->vol, &fs->io)))
		return rc;
	if (fs->io.flush && (rc = fs->io.flush(fs->io.ctx)))
		return rc;
	fs->sb.txn = atomic_load(&fs->txn);
	fs->sb.gen++;
	fs->sb.clean = 1;
	return sb_write(fs, &fs->sb);
}
