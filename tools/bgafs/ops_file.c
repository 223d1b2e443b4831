/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * File operations: open/release (the reservation window), read, write,
 * fallocate (mode 0, KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE), truncate, fsync.
 *
 * Data goes straight to the image at the blocks the extent map names;
 * the map change itself waits for the commit.  A write, fallocate or
 * truncate that fails has changed no byte of the file (a write takes its
 * blocks before it writes any), and the kernel's page cache is kept to
 * the image's bytes (op_write).  Blocks newly mapped by a
 * write are written whole, the bytes the write does not cover as zeros:
 * a block past the end of file or in an unwritten extent must read zeros
 * whatever a previous owner left in it.
 */
#define _GNU_SOURCE /* O_DIRECT */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "bgafs.h"

#define RETRIES 4 /* commits waited for on -EAGAIN before -ENOSPC */

static const char zeros[BGAFS_BLOCK];

/* The inode of a request's ino, and the file system; NULL, with ENOENT
 * replied, when there is none.  Every operation on a node starts here
 * (ops_dir.c, ops_readdir.c and ops_xattr.c too). */
struct inode *ino_get(fuse_req_t req, fuse_ino_t ino, struct fs **fsp)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *ip = itab_get(&fs->itab, ino);
	if (!ip)
		fuse_reply_err(req, ENOENT);
	*fsp = fs;
	return ip;
}

static void free_cb(void *ctx, uint64_t pblk, uint64_t len)
{
	txn_free_blocks(ctx, pblk, len);
}

void inode_drop_locked(struct fs *fs, struct inode *ip)
{
	extmap_truncate(&ip->map, 0, free_cb, fs);
	itab_remove(&fs->itab, ip->ino);
	pthread_rwlock_unlock(&ip->lock);
	inode_free(fs->rec, ip);
}

int inode_put_locked(struct fs *fs, struct inode *ip)
{
	int changed = 0;
	if (!ip->nlink && !ip->nopen) {
		/* No name and no open file: nothing can reach the data again
		 * (the kernel's lookup references only stat it), so its blocks
		 * go with this transaction rather than at the kernel's forget. */
		changed = ip->map.n != 0;
		extmap_truncate(&ip->map, 0, free_cb, fs);
		if (!atomic_load(&ip->nlookup)) {
			inode_drop_locked(fs, ip);
			return 1;
		}
	}
	pthread_rwlock_unlock(&ip->lock);
	return changed;
}

int inode_truncate_locked(struct fs *fs, struct inode *ip, uint64_t size)
{
	if (size > BGAFS_MAX_FILE)
		return -EFBIG;
	if (size < ip->size) {
		uint64_t pblk, run;
		if ((size & (BGAFS_BLOCK - 1)) &&
		    extmap_lookup(&ip->map, size >> BGAFS_SHIFT, &pblk, &run) == MAP_WRITTEN) {
			/* Past the end of file a written block holds zeros, so
			 * a later extension reads zeros there.  First: a failure
			 * then leaves the file as it was. */
			uint64_t in = size & (BGAFS_BLOCK - 1);
			int rc = fs_pwrite_all(fs->fd, zeros, BGAFS_BLOCK - in, pblk * BGAFS_BLOCK + in);
			if (rc)
				return rc;
		}
		extmap_truncate(&ip->map, (size + BGAFS_BLOCK - 1) >> BGAFS_SHIFT, free_cb, fs);
	}
	ip->size = size;
	ts_now(&ip->mtime);
	ip->ctime = ip->mtime;
	inode_changed(fs, ip);
	return 0;
}

#define WRITE_EXTENTS 16   /* extents a write's holes start with room for */
#define FALLOC_EXTENTS 256 /* extents of an fallocate per bga_alloc_vec call */

/* Write n bytes at byte `in` of blocks [pblk, pblk+nblk), zeros around. */
static int write_padded(struct fs *fs, const char *src, size_t n, uint64_t pblk, size_t in, uint64_t nblk)
{
	size_t tail = nblk * BGAFS_BLOCK - in - n;
	struct iovec iov[3] = {{(void *)zeros, in}, {(void *)src, n}, {(void *)zeros, tail}};
	size_t total = in + n + tail;
	off_t off = (off_t)(pblk * BGAFS_BLOCK);
	ssize_t w = pwritev(fs->fd, iov, 3, off);
	if (w == (ssize_t)total)
		return 0;
	if (w < 0 && errno != EINTR)
		return -errno;
	/* A short vector write: finish piece by piece. */
	int rc = fs_pwrite_all(fs->fd, zeros, in, (uint64_t)off);
	if (!rc)
		rc = fs_pwrite_all(fs->fd, src, n, (uint64_t)off + in);
	if (!rc)
		rc = fs_pwrite_all(fs->fd, zeros, tail, (uint64_t)off + in + n);
	return rc;
}

/* The bytes [pos, end) of the file into dst: its lock held (either way). */
static int file_read(struct fs *fs, struct inode *ip, char *dst, uint64_t pos, uint64_t end)
{
	int rc = 0;
	for (uint64_t at = pos; at < end && !rc;) {
		uint64_t lblk = at >> BGAFS_SHIFT, pblk = 0, run;
		uint64_t want = ((end - 1) >> BGAFS_SHIFT) - lblk + 1;
		enum map_state st = extmap_lookup(&ip->map, lblk, &pblk, &run);
		if (run > want)
			run = want;
		uint64_t seg_end = (lblk + run) << BGAFS_SHIFT;
		if (seg_end > end)
			seg_end = end;
		if (st == MAP_WRITTEN)
			rc = fs_pread_all(fs->fd, dst + (at - pos), seg_end - at,
					  pblk * BGAFS_BLOCK + (at & (BGAFS_BLOCK - 1)));
		else
			memset(dst + (at - pos), 0, seg_end - at); /* holes and unwritten extents */
		at = seg_end;
	}
	return rc;
}

/*
 * A write-back of pages the kernel holds (mmap, writeback_cache) failed
 * for [pos, end): the kernel keeps those pages, clean and up to date, with
 * bytes the image does not hold, so reads would show them until they are
 * evicted, and after a remount they would be gone.  Put the image's bytes
 * back in them (notify_store), before the reply: the pages are under
 * write-back until then, so nothing reads them, and the failed store then
 * leaves the file as it was, as a failed write does.  (An invalidation
 * would wait for the write-back, so it could only come after the reply,
 * and a read in between would see the bytes that were lost.)  No lock is
 * held while the kernel takes the pages' locks: a read in flight holds one
 * and waits for the inode's.
 */
static void writeback_failed(struct fs *fs, struct inode *ip, fuse_ino_t ino, uint64_t pos, uint64_t end)
{
	pthread_rwlock_rdlock(&ip->lock);
	if (end > ip->size) /* a store past the size would extend the kernel's */
		end = ip->size;
	char *buf = pos < end ? malloc(end - pos) : NULL;
	int rc = buf ? file_read(fs, ip, buf, pos, end) : -ENOMEM;
	pthread_rwlock_unlock(&ip->lock);
	if (!rc) {
		struct fuse_bufvec bv = FUSE_BUFVEC_INIT(end - pos);
		bv.buf[0].mem = buf;
		rc = fuse_lowlevel_notify_store(fs->se, ino, (off_t)pos, &bv, 0);
	}
	if (rc && pos < end) /* the next best: drop them once the write-back ends */
		fuse_lowlevel_notify_inval_inode(fs->se, ino, (off_t)pos, (off_t)(end - pos));
	free(buf);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	struct fs *fs;
	struct inode *ip = ino_get(req, ino, &fs);
	if (!ip)
		return;
	pthread_rwlock_rdlock(&ip->lock);
	uint64_t end = (uint64_t)off + size;
	if (end > ip->size)
		end = ip->size;
	if ((uint64_t)off >= end) { /* nothing read: atime stays, as in ext4 */
		pthread_rwlock_unlock(&ip->lock);
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	char *buf = malloc(end - (uint64_t)off);
	int rc = buf ? file_read(fs, ip, buf, (uint64_t)off, end) : -ENOMEM;
	struct timespec now;
	ts_now(&now);
	int due = !rc && inode_atime_due(fs, ip, &now);
	pthread_rwlock_unlock(&ip->lock);
	/* Before the reply: the kernel drops its cached atime when the data
	 * arrives, and a stat right after must see the new one. */
	if (due)
		inode_touch_atime(fs, ip);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, buf, end - (uint64_t)off);
	free(buf);
}

/*
 * Write [off, off + size), all of it (0) or the first *done bytes and an
 * error.  The holes' blocks are taken first (alloc_scattered), so when
 * space runs out the write stops at a block boundary it chose before
 * writing anything.  whole (a direct write): all the blocks or none, and
 * a write that runs out of space fails having changed nothing, since the
 * kernel answers a short reply to a direct write, async or not, with EIO
 * after the part that landed (fs/fuse/file.c, fuse_get_res_by_io): the
 * file would hold bytes its writer was told did not.  Otherwise (through
 * the page cache) as many of the blocks as there are, in order: the
 * kernel passes a short count on as write(2)'s, as POSIX has it when the
 * medium fills.  Each hole's blocks are mapped once written; on an I/O
 * error part way those not yet mapped, never named anywhere, go straight
 * back.
 */
static int file_write(struct fs *fs, struct inode *ip, const char *buf, size_t size, uint64_t off, int whole,
		      size_t *done)
{
	uint64_t end = off + size, first = off >> BGAFS_SHIFT, last = (end - 1) >> BGAFS_SHIFT, want, holes;
	struct bga_extent one, *got = &one;
	size_t cap = 1, ngot = 0, next = 0;
	int rc = 0;
	if (!size)
		return 0;
	count_holes(&ip->map, first, last, &want, &holes);
	if (want) {
		uint64_t lblk = first, pblk, run;
		while (extmap_lookup(&ip->map, lblk, &pblk, &run) != MAP_HOLE)
			lblk += run;
		if (want > 1 && !(got = malloc((cap = want < WRITE_EXTENTS ? (size_t)want : WRITE_EXTENTS) *
						sizeof(*got))))
			return -ENOMEM;
		window_by_shown_size(fs, ip, end, want);
		if ((rc = alloc_scattered(fs, ip, hole_goal(fs, ip, lblk), want, &got, &cap, &ngot, !whole)))
			goto out;
	}
	for (uint64_t pos = off; pos < end;) {
		uint64_t lblk = pos >> BGAFS_SHIFT, pblk = 0, run;
		enum map_state st = extmap_lookup(&ip->map, lblk, &pblk, &run);
		if (run > last - lblk + 1)
			run = last - lblk + 1;
		if (st == MAP_HOLE) { /* got[] maps the holes in order */
			if (next == ngot) { /* fewer than asked for: a short write */
				rc = -ENOSPC;
				break;
			}
			pblk = got[next].start;
			if (run > got[next].len)
				run = got[next].len;
		}
		uint64_t seg_end = (lblk + run) << BGAFS_SHIFT;
		if (seg_end > end)
			seg_end = end;
		const char *src = buf + (pos - off);
		size_t n = seg_end - pos, in = pos & (BGAFS_BLOCK - 1);
		if (st == MAP_WRITTEN)
			rc = fs_pwrite_all(fs->fd, src, n, pblk * BGAFS_BLOCK + in);
		else
			rc = write_padded(fs, src, n, pblk, in, run);
		if (!rc && st != MAP_WRITTEN)
			rc = extmap_set(&ip->map, lblk, pblk, (uint32_t)run, 0);
		if (rc)
			break;
		if (st == MAP_HOLE) {
			got[next].start += run;
			if (!(got[next].len -= run))
				next++;
		}
		pos = seg_end;
		*done = pos - off;
		if (pos > ip->size)
			ip->size = pos;
	}
	if (next < ngot) {
		int frc = bga_rec_free_vec(fs->rec, fs->vol, got + next, ngot - next);
		(void)frc; /* ours, unnamed: cannot fail */
	}
out:
	if (got != &one)
		free(got);
	return rc;
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct fs *fs;
	struct inode *ip = ino_get(req, ino, &fs);
	if (!ip)
		return;
	if (off < 0 || (uint64_t)off + size > BGAFS_MAX_FILE) {
		fuse_reply_err(req, off < 0 ? EINVAL : EFBIG);
		return;
	}
	size_t done = 0, wrote = 0;
	/* All or nothing where the kernel cannot take a short count: a
	 * direct write (file_write), and a write-back, whose short reply the
	 * kernel takes for the whole (the rest of its pages then read back
	 * the image's bytes, writeback_failed, with no error to msync). */
	int rc = 0, whole = (fi->flags & O_DIRECT) || fi->writepage;
	uint32_t kill = 0;
	for (int tries = 0;; tries++) {
		fs_begin(fs);
		pthread_rwlock_wrlock(&ip->lock);
		rc = file_write(fs, ip, buf + done, size - done, (uint64_t)off + done, whole, &wrote);
		done += wrote;
		wrote = 0;
		if (done) {
			kill |= perm_kill_suidgid(req, ip);
			ip->mode &= ~kill;
			ts_now(&ip->mtime);
			ip->ctime = ip->mtime;
			inode_changed(fs, ip);
		}
		pthread_rwlock_unlock(&ip->lock);
		fs_end(fs, done > 0);
		/* -EAGAIN: the space is there once the running transaction's
		 * frees commit; commit now rather than fail. */
		if (rc != -EAGAIN || tries == RETRIES)
			break;
		txn_sync(fs);
	}
	if (rc == -EAGAIN)
		rc = -ENOSPC;
	if (kill)
		perm_changed(fs, ino);
	/* A direct write went past the page cache, and a buffered read
	 * racing it may have filled the cache from the old bytes: the kernel
	 * drops the range after a synchronous one, never after an async one
	 * (generic/451).  Drop it here, before the reply, so that the
	 * writer's next read sees what it wrote (keep_cache holds: the cache
	 * has only what bgafs gave it).  No lock is held: the kernel waits
	 * for reads of the range in flight, which take the inode's lock. */
	if (done && (fi->flags & O_DIRECT))
		fuse_lowlevel_notify_inval_inode(fs->se, ino, off, (off_t)done);
	if (fi->writepage && done < size)
		writeback_failed(fs, ip, ino, (uint64_t)off + done, (uint64_t)off + size);
	if (done)
		fuse_reply_write(req, done);
	else
		fuse_reply_err(req, -rc);
}

/*
 * The holes of [off, end) allocated unwritten, all or nothing (POSIX
 * fallocate: ENOSPC leaves the file as it was).  When the free count
 * cannot cover the holes, one bga_alloc_vec with BGA_ALL_OR_NOTHING
 * decides without taking anything (-ENOSPC, or -EAGAIN when the pending
 * frees would cover them; op_fallocate then commits and asks again).
 * Otherwise alloc_scattered takes them, in one call unless the free space
 * is in more than FALLOC_EXTENTS pieces, and gives them all back if it
 * runs out: an all-or-nothing call would take and give back 256 pieces
 * before the piecewise path started (bench/fs/bgafs_ab.sh).  The map then
 * takes the extents in order, hole by hole, its room made first so that
 * no step of that can fail.
 */
static int file_fallocate(struct fs *fs, struct inode *ip, uint64_t off, uint64_t end, int keep)
{
	uint64_t first = off >> BGAFS_SHIFT, last = (end - 1) >> BGAFS_SHIFT, want, holes;
	count_holes(&ip->map, first, last, &want, &holes);
	struct bga_extent *got = NULL;
	size_t ngot = 0;
	if (want) {
		uint64_t lblk = first, pblk, run;
		while (extmap_lookup(&ip->map, lblk, &pblk, &run) != MAP_HOLE)
			lblk += run;
		size_t cap = want < FALLOC_EXTENTS ? (size_t)want : FALLOC_EXTENTS;
		if (!(got = malloc(cap * sizeof(*got))))
			return -ENOMEM;
		struct goal goal = hole_goal(fs, ip, lblk);
		int rc = bga_free_exact(fs->vol) < want
				 ? alloc_hole(fs, ip, goal, want, BGA_ALL_OR_NOTHING, got, cap, &ngot)
				 : alloc_scattered(fs, ip, goal, want, &got, &cap, &ngot, 0);
		if (!rc && (rc = extmap_reserve(&ip->map, (uint32_t)(ngot + holes + 3)))) {
			int frc = bga_rec_free_vec(fs->rec, fs->vol, got, ngot);
			(void)frc; /* ours, unnamed: cannot fail */
		}
		if (rc) {
			free(got);
			return rc;
		}
	}
	size_t k = 0;
	for (uint64_t lblk = first; lblk <= last && k < ngot;) {
		uint64_t pblk = 0, run;
		enum map_state st = extmap_lookup(&ip->map, lblk, &pblk, &run);
		if (run > last - lblk + 1)
			run = last - lblk + 1;
		if (st == MAP_HOLE) {
			if (run > got[k].len)
				run = got[k].len;
			/* into a hole: one extent more at most, room made above */
			int rc = extmap_set(&ip->map, lblk, got[k].start, (uint32_t)run, EXT_UNWRITTEN);
			(void)rc;
			assert(rc == 0);
			got[k].start += run;
			if (!(got[k].len -= run))
				k++;
		}
		lblk += run;
	}
	free(got);
	if (!keep && end > ip->size)
		ip->size = end;
	ts_now(&ip->ctime);
	inode_changed(fs, ip);
	return 0;
}

/* Zero bytes [off, end) of one block, if it holds data (a hole or an
 * unwritten block reads zeros already). */
static int zero_in_block(struct fs *fs, struct inode *ip, uint64_t off, uint64_t end)
{
	uint64_t pblk, run;
	if (off >= end || extmap_lookup(&ip->map, off >> BGAFS_SHIFT, &pblk, &run) != MAP_WRITTEN)
		return 0;
	return fs_pwrite_all(fs->fd, zeros, end - off, pblk * BGAFS_BLOCK + (off & (BGAFS_BLOCK - 1)));
}

/* The bytes of [off, end) in its first and last blocks when those are
 * partly covered; *full_lo, *full_hi: the blocks wholly inside. */
static int zero_edges(struct fs *fs, struct inode *ip, uint64_t off, uint64_t end, uint64_t *full_lo,
		      uint64_t *full_hi)
{
	uint64_t lo = (off + BGAFS_BLOCK - 1) >> BGAFS_SHIFT, hi = end >> BGAFS_SHIFT;
	int rc = 0;
	if (lo > hi) { /* inside one block */
		rc = zero_in_block(fs, ip, off, end);
		lo = hi;
	} else {
		rc = zero_in_block(fs, ip, off, lo << BGAFS_SHIFT);
		if (!rc)
			rc = zero_in_block(fs, ip, hi << BGAFS_SHIFT, end);
	}
	*full_lo = lo;
	*full_hi = hi;
	return rc;
}

/* PUNCH_HOLE: the blocks wholly inside go back to bgalloc (deferred to
 * the transaction's commit, like every free of a block a durable table
 * may still name); the partial edges are zeroed in place. */
static int file_punch(struct fs *fs, struct inode *ip, uint64_t off, uint64_t end)
{
	uint64_t lo, hi;
	int rc = extmap_reserve(&ip->map, 1); /* the punch's one failure, before any byte changes */
	if (!rc)
		rc = zero_edges(fs, ip, off, end, &lo, &hi);
	if (!rc && lo < hi)
		rc = extmap_punch(&ip->map, lo, hi, free_cb, fs);
	return rc;
}

/* ZERO_RANGE: like ext4, the range ends up allocated and reading zeros:
 * holes are allocated unwritten, written blocks wholly inside become
 * unwritten (no data is written), the partial edges are zeroed. */
static int file_zero_range(struct fs *fs, struct inode *ip, uint64_t off, uint64_t end)
{
	uint64_t lo, hi;
	int rc = zero_edges(fs, ip, off, end, &lo, &hi);
	for (uint64_t lblk = lo; !rc && lblk < hi;) {
		uint64_t pblk = 0, run;
		enum map_state st = extmap_lookup(&ip->map, lblk, &pblk, &run);
		if (run > hi - lblk)
			run = hi - lblk;
		if (st == MAP_WRITTEN)
			rc = extmap_set(&ip->map, lblk, pblk, (uint32_t)run, EXT_UNWRITTEN);
		lblk += run;
	}
	return rc;
}

static int file_fallocate_mode(struct fs *fs, struct inode *ip, int mode, uint64_t off, uint64_t end)
{
	if (!S_ISREG(ip->mode))
		return S_ISDIR(ip->mode) ? -EISDIR : -ENODEV;
	int keep = mode & FALLOC_FL_KEEP_SIZE;
	if (mode & FALLOC_FL_PUNCH_HOLE) {
		int rc = file_punch(fs, ip, off, end);
		if (!rc) {
			ts_now(&ip->mtime);
			ip->ctime = ip->mtime;
			inode_changed(fs, ip);
		}
		return rc;
	}
	/* Allocate first, so a ZERO_RANGE that runs out of space has changed
	 * no data. */
	int rc = file_fallocate(fs, ip, off, end, keep);
	if (!rc && (mode & FALLOC_FL_ZERO_RANGE)) {
		rc = file_zero_range(fs, ip, off, end);
		ts_now(&ip->mtime);
		ip->ctime = ip->mtime;
	}
	return rc;
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	(void)fi;
	struct fs *fs;
	struct inode *ip = ino_get(req, ino, &fs);
	if (!ip)
		return;
	/* The kernel's FUSE passes only these three (fs/fuse/file.c
	 * fuse_file_fallocate answers COLLAPSE_RANGE and INSERT_RANGE with
	 * EOPNOTSUPP itself), and checks PUNCH_HOLE comes with KEEP_SIZE. */
	if ((mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) ||
	    ((mode & FALLOC_FL_PUNCH_HOLE) && (mode & FALLOC_FL_ZERO_RANGE))) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE)) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	if (off < 0 || len <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if ((uint64_t)off + (uint64_t)len > BGAFS_MAX_FILE) {
		fuse_reply_err(req, EFBIG);
		return;
	}
	int rc;
	for (int tries = 0;; tries++) {
		fs_begin(fs);
		pthread_rwlock_wrlock(&ip->lock);
		rc = file_fallocate_mode(fs, ip, mode, (uint64_t)off, (uint64_t)(off + len));
		uint32_t kill = rc ? 0 : perm_kill_suidgid(req, ip);
		if (kill) {
			ip->mode &= ~kill;
			inode_changed(fs, ip);
		}
		pthread_rwlock_unlock(&ip->lock);
		if (kill)
			perm_changed(fs, ino);
		fs_end(fs, 1);
		if (rc != -EAGAIN || tries == RETRIES)
			break;
		txn_sync(fs);
	}
	fuse_reply_err(req, rc == -EAGAIN ? ENOSPC : -rc);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs;
	struct inode *ip = ino_get(req, ino, &fs);
	if (!ip)
		return;
	int rc = 0, trunc = (fi->flags & O_TRUNC) && (fi->flags & O_ACCMODE) != O_RDONLY;
	fs_begin(fs);
	pthread_rwlock_wrlock(&ip->lock);
	if (S_ISDIR(ip->mode))
		rc = -EISDIR;
	else if (!ip->rsv)
		rc = bga_rec_rsv_open(fs->rec, fs->vol, &ip->rsv);
	if (!rc && trunc)
		rc = inode_truncate_locked(fs, ip, 0);
	if (!rc)
		ip->nopen++;
	pthread_rwlock_unlock(&ip->lock);
	fs_end(fs, trunc);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	/* bgafs is the only writer of its files: the page cache stays valid
	 * across opens, since bgafs tells the kernel of the changes it did
	 * not make through the cache (op_write: direct writes, failed
	 * write-backs).  Not with strictatime: every read must reach bgafs to
	 * move atime, so each open starts with an empty cache (generic/003). */
	fi->keep_cache = !(fs->atime & ATIME_STRICT);
	fuse_reply_open(req, fi);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	struct fs *fs;
	struct inode *ip = ino_get(req, ino, &fs);
	if (!ip)
		return;
	fs_begin(fs);
	pthread_rwlock_wrlock(&ip->lock);
	if (ip->nopen && !--ip->nopen && ip->rsv) {
		bga_rec_rsv_close(fs->rec, ip->rsv);
		ip->rsv = NULL;
		ip->win_size = 0;
	}
	int dropped = inode_put_locked(fs, ip);
	fs_end(fs, dropped);
	fuse_reply_err(req, 0);
}

void inode_touch_atime(struct fs *fs, struct inode *ip)
{
	struct timespec now;
	fs_begin(fs);
	pthread_rwlock_wrlock(&ip->lock);
	ts_now(&now);
	int due = inode_atime_due(fs, ip, &now); /* again: another reader may have moved it */
	if (due) {
		ip->atime = now;
		inode_changed(fs, ip);
	}
	pthread_rwlock_unlock(&ip->lock);
	fs_end(fs, due);
}

int inode_sync(struct fs *fs, struct inode *ip)
{
	pthread_rwlock_rdlock(&ip->lock);
	uint64_t txn = ip->last_txn;
	pthread_rwlock_unlock(&ip->lock);
	return txn_sync_to(fs, txn);
}

/* The file's data, its attributes and the entries that name it since it
 * was created are all in the transactions up to its last change. */
static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	(void)fi;
	struct fs *fs;
	struct inode *ip = ino_get(req, ino, &fs);
	if (ip)
		fuse_reply_err(req, -inode_sync(fs, ip));
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

void forget_one(struct fs *fs, fuse_ino_t ino, uint64_t nlookup)
{
	struct inode *ip = itab_get(&fs->itab, ino);
	if (!ip)
		return;
	fs_begin(fs);
	pthread_rwlock_wrlock(&ip->lock);
	uint64_t had = atomic_fetch_sub(&ip->nlookup, nlookup);
	if (had < nlookup) /* the kernel never forgets more than it looked up */
		atomic_store(&ip->nlookup, 0);
	int dropped = inode_put_locked(fs, ip);
	fs_end(fs, dropped);
}

void bgafs_ops_file(struct fuse_lowlevel_ops *o)
{
	o->open = op_open;
	o->release = op_release;
	o->read = op_read;
	o->write = op_write;
	o->fallocate = op_fallocate;
	o->fsync = op_fsync;
	o->flush = op_flush;
}
