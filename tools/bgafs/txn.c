/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Transactions.  Every op that changes the namespace or frees blocks runs
 * inside the running transaction (fs_begin/fs_end: jlock shared).  A commit
 * takes jlock exclusive only to close the transaction and encode what it
 * changed (table.c); the I/O runs with ops going on:
 *
 *   1. bga_store: the allocator, with the transaction's deferred frees
 *      still allocated.  It flushes before and after its own superblock,
 *      and its area is part of the image file, so the data is durable
 *      when it returns;
 *   2. append the transaction's record to the metadata log and flush
 *      (log.c): a delta, or a checkpoint followed by the superblock that
 *      names it;
 *   3. bga_commit(txn): only now may the blocks freed in it be reused.
 *
 * A commit that fails leaves the changes in memory, the transaction not
 * durable (its fsyncs get the error) and the next commit a checkpoint, so
 * nothing a failed record held is lost from the next one.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bgafs.h"

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

/* The superblock copies, the commit protocol's flip (bgafs.h). */
uint32_t sb_crc(const struct bgafs_sb *sb)
{
	return crc32c(0, sb, offsetof(struct bgafs_sb, crc));
}

int sb_write(struct fs *fs, struct bgafs_sb *sb)
{
	unsigned char sector[512] = {0};
	sb->crc = sb_crc(sb);
	memcpy(sector, sb, sizeof(*sb));
	int rc = fs_pwrite_all(fs->fd, sector, sizeof(sector), (sb->gen % 2) * BGAFS_BLOCK);
	if (!rc && fdatasync(fs->fd))
		rc = -errno;
	return rc;
}

void txn_free_blocks(struct fs *fs, uint64_t pblk, uint64_t len)
{
	uint64_t txn = atomic_load(&fs->txn);
	int rc = bga_rec_free_deferred(fs->rec, fs->vol, pblk, len, txn);
	if (rc)
		fprintf(stderr, "bgafs: freeing blocks %llu+%llu in txn %llu: %s (left allocated)\n",
			(unsigned long long)pblk, (unsigned long long)len, (unsigned long long)txn,
			bga_strerror(rc));
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

/* A checkpoint of nb blocks is due: move to an area twice as large when
 * it takes more than a quarter of this one (so the namespace can keep
 * growing while the disk has room), and when it does not fit at all. */
static int ckpt_room(struct fs *fs, uint64_t nb)
{
	if (nb > fs->log_blocks / 4 || nb > log_free_blocks(fs)) {
		uint64_t want = 4 * nb > 2 * fs->log_blocks ? 4 * nb : 2 * fs->log_blocks;
		int rc = log_grow(fs, want);
		if (rc && nb > log_free_blocks(fs))
			return -ENOSPC;
	}
	return 0;
}

/* After a record: the reservation's view of the log (cmu). */
static void set_limit(struct fs *fs, int ckpt)
{
	pthread_mutex_lock(&fs->cmu);
	fs->ns_limit = log_ns_limit(fs);
	fs->removes_since_ckpt = ckpt ? 0 : fs->removes_since_ckpt + fs->delta_removes;
	pthread_mutex_unlock(&fs->cmu);
}

static int commit_kind(struct fs *fs, int force_ckpt)
{
	struct tbuf tb = {0};
	static const unsigned char hdr[LOG_HDR];
	int full = 0, rc;

	pthread_rwlock_wrlock(&fs->jlock);
	uint64_t txn = atomic_load(&fs->txn);
	if (!atomic_load(&fs->dirty) && !force_ckpt) {
		/* Nothing changed since the last snapshot, which is durable
		 * (a failed commit leaves dirty set): close the empty running
		 * transaction, so that it is durable and later changes join
		 * the next one. */
		atomic_store(&fs->txn, txn + 1);
		fs->logged_txn = txn;
		pthread_rwlock_unlock(&fs->jlock);
		set_durable(fs, txn);
		return 0;
	}
	atomic_store(&fs->txn, txn + 1);
	atomic_store(&fs->dirty, 0);
	int ckpt = force_ckpt || atomic_load(&fs->need_ckpt);
	rc = tbuf_put(&tb, hdr, LOG_HDR);
	fs->delta_removes = 0;
	if (!rc && !ckpt) {
		rc = table_delta(fs, &tb, &full);
		/* Past half the area, or not told as a delta: a checkpoint. */
		if (!rc && (full || fs->log_used + log_record_blocks(tb.len - LOG_HDR) > fs->log_blocks / 2))
			ckpt = 1;
	}
	if (!rc && ckpt) {
		tb.len = LOG_HDR;
		rc = table_serialize(fs, &tb);
	}
	if (!rc) {
		table_mark_logged(fs);
		fs->logged_txn = txn;
		if (ckpt) {
			pthread_mutex_lock(&fs->cmu);
			fs->ns_reserved = 0; /* what creates reserved is in this checkpoint */
			pthread_mutex_unlock(&fs->cmu);
		}
	}
	pthread_rwlock_unlock(&fs->jlock);
	if (rc)
		goto fail;

	size_t payload = tb.len - LOG_HDR;
	uint64_t nb = log_record_blocks(payload);
	if (ckpt && (rc = ckpt_room(fs, nb)))
		goto fail;
	if ((rc = bga_store(fs->vol, &fs->io)))
		goto fail_switch;
	if ((rc = log_append(fs, &tb, ckpt ? LOG_CKPT : LOG_DELTA, txn)))
		goto fail_switch;
	if (ckpt) {
		struct bgafs_sb sb = fs->sb;
		log_sb_fill(fs, &sb);
		sb.txn = txn;
		sb.gen++;
		if ((rc = sb_write(fs, &sb))) {
			/* The slot may name the new checkpoint or not: both
			 * areas stay allocated; the next checkpoint writes it
			 * again. */
			goto fail;
		}
		fs->sb = sb;
		fs->log_used = nb;
		fs->ns_bytes = payload;
		log_switch_done(fs, 1, txn_free_blocks);
	}
	set_limit(fs, ckpt);
	rc = bga_rec_commit(fs->rec, fs->vol, txn);
	if (rc)
		fprintf(stderr, "bgafs: bga_commit(%llu): %s\n", (unsigned long long)txn, bga_strerror(rc));
	free(tb.p);
	set_durable(fs, txn);
	return 0;
fail_switch:
	log_switch_done(fs, 0, txn_free_blocks);
fail:
	fprintf(stderr, "bgafs: commit of txn %llu failed: %s (the next commit writes a checkpoint)\n",
		(unsigned long long)txn, bga_strerror(rc));
	atomic_store(&fs->need_ckpt, 1);
	atomic_store(&fs->dirty, 1);
	free(tb.p);
	return rc;
}

int txn_commit(struct fs *fs)
{
	return commit_kind(fs, 0);
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
		int ckpt = fs->cwant_ckpt;
		fs->cwant_ckpt = 0;
		uint64_t seq = ++fs->cstarted;
		pthread_mutex_unlock(&fs->cmu);
		int rc = commit_kind(fs, ckpt);
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

int meta_reserve(struct fs *fs, size_t bytes)
{
	for (int tries = 0;; tries++) {
		pthread_mutex_lock(&fs->cmu);
		int ok = fs->ns_bytes + fs->ns_reserved + bytes <= fs->ns_limit;
		/* A checkpoint measures the namespace again (what was removed
		 * since) and moves the log to a larger area if the disk has
		 * room; with neither it would find the same (a commit already
		 * running may not be a checkpoint: twice). */
		int retry = !ok && tries < 2 && fs->committer_running &&
			    (fs->removes_since_ckpt || bga_free_estimate(fs->vol) > 2 * fs->ns_limit / BGAFS_BLOCK);
		if (ok)
			fs->ns_reserved += bytes;
		else if (retry)
			fs->cwant_ckpt = 1;
		pthread_mutex_unlock(&fs->cmu);
		if (ok)
			return 0;
		if (!retry)
			return -ENOSPC;
		txn_sync(fs);
	}
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
	int rc = commit_kind(fs, 1); /* a checkpoint: the next mount replays nothing */
	if (rc) {
		/* Say so on the image: fsck reports the changes after the
		 * last durable transaction as lost. */
		fs->sb.lost_after = fs->durable;
		fs->sb.gen++;
		sb_write(fs, &fs->sb);
		return rc;
	}
	/* No op runs now and the last checkpoint is durable: release what
	 * waits on the running transaction (an old log area, orphans) and
	 * store the allocator once more, so the image is exact without a
	 * reconcile; then mark it clean. */
	if ((rc = bga_rec_commit(fs->rec, fs->vol, atomic_load(&fs->txn))))
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
