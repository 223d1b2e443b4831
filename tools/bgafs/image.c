/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The image: superblock slots, mkfs, and opening an image for mount or
 * fsck. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bgafs.h"

_Static_assert(sizeof(struct bgafs_sb) <= 512, "a superblock fits one sector");

/*
 * The whole-buffer loops below look like the library's file io
 * (bga_io_file_open, lib/persist/persist.c), and are kept on purpose:
 * that is a struct bga_io bound to a file and a base offset, with its own
 * descriptor and an indirect call per request, for the allocator's
 * metadata area (bgafs uses it so, at BGAFS_META_OFF).  The superblock,
 * the log and the data go through the image's one descriptor at absolute
 * offsets, the data also with pwritev (write_padded, ops_file.c), which
 * the callbacks do not offer; the library exports no bare pread/pwrite
 * loop, and one more public call for 30 lines of an example would not pay.
 */

static int sb_valid(const struct bgafs_sb *sb, uint64_t file_blocks)
{
	return sb->magic == BGAFS_MAGIC && sb->version == BGAFS_VERSION && sb->block_size == BGAFS_BLOCK &&
	       sb->crc == sb_crc(sb) && sb->nblocks <= file_blocks && sb->first_data_block < sb->nblocks &&
	       sb->log_next <= BGAFS_LOG_EXTENTS;
}

/* Geometry of an image of nblocks: the bgalloc configuration and where
 * its data blocks start. */
static int geometry(uint64_t nblocks, struct bga_config *cfg, uint64_t *meta_bytes)
{
	bga_config_init(cfg, nblocks);
	int rc = bga_metadata_size(cfg, meta_bytes);
	if (rc)
		return rc;
	cfg->first_data_block = 2 + (*meta_bytes + BGAFS_BLOCK - 1) / BGAFS_BLOCK;
	uint64_t again;
	if ((rc = bga_metadata_size(cfg, &again)))
		return rc;
	if (again > *meta_bytes) /* cannot happen unless the size depends on first_data_block */
		return -EINVAL;
	if (cfg->first_data_block + 64 + log_initial_blocks(nblocks) > nblocks)
		return -ENOSPC;
	return 0;
}

static int fs_alloc(const char *path, int fd, struct fs **out)
{
	struct fs *fs = calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	fs->fd = fd;
	fs->path = strdup(path);
	pthread_rwlockattr_t a;
	pthread_rwlockattr_init(&a);
	/* The commit must get in while ops keep coming: prefer the writer. */
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&fs->jlock, &a);
	pthread_rwlockattr_destroy(&a);
	pthread_mutex_init(&fs->rename_lock, NULL);
	pthread_mutex_init(&fs->cmu, NULL);
	pthread_cond_init(&fs->ccv, NULL);
	pthread_cond_init(&fs->cdone, NULL);
	itab_init(&fs->itab);
	*out = fs;
	return 0;
}

void fs_close(struct fs *fs)
{
	if (!fs)
		return;
	itab_destroy(&fs->itab, fs->rec); /* closes the inodes' windows before the volume goes */
	int rrc = bga_rec_close(fs->rec); /* the trace ends with the free map the image holds */
	if (rrc)
		fprintf(stderr, "bgafs: the allocation trace is incomplete: %s\n", bga_strerror(rrc));
	free(fs->log);
	free(fs->ondisk);
	bga_destroy(fs->vol);
	if (fs->io.ctx)
		bga_io_file_close(&fs->io);
	if (fs->fd >= 0)
		close(fs->fd);
	pthread_rwlock_destroy(&fs->jlock);
	pthread_mutex_destroy(&fs->rename_lock);
	pthread_mutex_destroy(&fs->cmu);
	pthread_cond_destroy(&fs->ccv);
	pthread_cond_destroy(&fs->cdone);
	free(fs->path);
	free(fs);
}

int fs_mkfs(const char *path, uint64_t bytes, int force)
{
	uint64_t nblocks = bytes / BGAFS_BLOCK, meta_bytes;
	struct bga_config cfg;
	int rc = geometry(nblocks, &cfg, &meta_bytes);
	/* BGAFS_ATOMIC_COUNTERS=1: the baseline counter mode, stored in the
	 * image and so used by every mount (bench/fs/dbench_counters.sh). */
	const char *atomic = getenv("BGAFS_ATOMIC_COUNTERS");
	if (atomic && strcmp(atomic, "0"))
		cfg.flags |= BGA_ATOMIC_COUNTERS;
	if (rc) {
		fprintf(stderr, "bgafs mkfs: %llu bytes is too small or too large: %s\n",
			(unsigned long long)bytes, bga_strerror(rc));
		return rc;
	}
	int fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd < 0) {
		rc = -errno;
		fprintf(stderr, "bgafs mkfs: %s: %s\n", path, strerror(errno));
		return rc;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) { /* never under a mounted file system */
		fprintf(stderr, "bgafs mkfs: %s: in use by a mounted bgafs\n", path);
		close(fd);
		return -EBUSY;
	}
	/* An existing file system, of any format version (the magic in
	 * either slot), is overwritten only when asked (-f), as mke2fs asks
	 * first. */
	struct bgafs_sb old;
	for (int i = 0; !force && i < 2; i++)
		if (fs_pread_all(fd, &old, sizeof(old), (uint64_t)i * BGAFS_BLOCK) == 0 && old.magic == BGAFS_MAGIC) {
			fprintf(stderr, "bgafs mkfs: %s already holds a bgafs file system; -f overwrites it\n", path);
			close(fd);
			return -EEXIST;
		}
	if (ftruncate(fd, 0)) { /* a fresh image: no stale superblock survives */
		rc = -errno;
		close(fd);
		return rc;
	}
	struct fs *fs;
	if ((rc = fs_alloc(path, fd, &fs))) {
		close(fd);
		return rc;
	}
	if (ftruncate(fd, (off_t)(nblocks * BGAFS_BLOCK))) {
		rc = -errno;
		goto out;
	}
	if ((rc = bga_create(&cfg, &fs->vol)) || (rc = bga_io_file_open(path, BGAFS_META_OFF, 0, &fs->io)))
		goto out;
	struct inode *root = inode_new(S_IFDIR | 0755, getuid(), getgid());
	if (!root) {
		rc = -ENOMEM;
		goto out;
	}
	root->ino = BGAFS_ROOT;
	root->parent = BGAFS_ROOT;
	if ((rc = itab_insert(&fs->itab, root)))
		goto out;
	fs->sb = (struct bgafs_sb){.magic = BGAFS_MAGIC, .version = BGAFS_VERSION, .block_size = BGAFS_BLOCK,
				   .gen = 0, .nblocks = nblocks, .first_data_block = cfg.first_data_block,
				   .meta_bytes = meta_bytes, .clean = 1};
	fs->nblocks = nblocks;
	fs->first_data_block = cfg.first_data_block;
	if ((rc = log_create(fs, log_initial_blocks(nblocks))))
		goto out;
	/* The unmount's checkpoint writes the root and stores the volume
	 * (superblock gen 1, slot B), then the clean mark (gen 2, slot A). */
	atomic_store(&fs->txn, 1);
	atomic_store(&fs->dirty, 1);
	rc = txn_unmount(fs);
out:
	if (rc)
		fprintf(stderr, "bgafs mkfs: %s: %s\n", path, bga_strerror(rc));
	fs_close(fs);
	return rc;
}

int fs_open(const char *path, int rw, struct fs **out)
{
	int fd = open(path, rw ? O_RDWR : O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "bgafs: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	/* A mounted image is locked by its daemon, which keeps writing for a
	 * moment after fusermount3 -u returns (the final commit): fsck and a
	 * second mount wait for it rather than read a half-saved image. */
	int lk = rw ? LOCK_EX : LOCK_SH, tries = rw ? 50 : 300;
	for (int i = 0; flock(fd, lk | LOCK_NB); i++) {
		int e = errno;
		/* Mounted (not just finishing an unmount): no wait will help. */
		char mnt[4096];
		if (i % 10 == 0 && e == EWOULDBLOCK && fs_mounted_at(path, mnt, sizeof(mnt))) {
			fprintf(stderr, "bgafs: %s is mounted at %s; unmount it first (fusermount3 -u %s)\n", path, mnt,
				mnt);
			close(fd);
			return -EBUSY;
		}
		if (e != EWOULDBLOCK || i == tries) {
			fprintf(stderr, "bgafs: %s: %s\n", path,
				e == EWOULDBLOCK ? "in use by a mounted bgafs" : strerror(e));
			close(fd);
			return -EBUSY;
		}
		if (i == 0)
			fprintf(stderr, "bgafs: %s is in use by a bgafs daemon; waiting up to %d s\n", path,
				tries / 10);
		usleep(100000);
	}
	struct stat st;
	struct fs *fs;
	int rc = fstat(fd, &st) ? -errno : fs_alloc(path, fd, &fs);
	if (rc) {
		close(fd);
		return rc;
	}
	uint64_t file_blocks = (uint64_t)st.st_size / BGAFS_BLOCK;
	struct bgafs_sb slot[2];
	for (int i = 0; i < 2; i++)
		if (fs_pread_all(fd, &slot[i], sizeof(slot[i]), (uint64_t)i * BGAFS_BLOCK) ||
		    !sb_valid(&slot[i], file_blocks))
			slot[i].magic = 0;
	/* Newest valid slot whose log replays; the other one is the previous
	 * superblock write (a fallback for a torn one). */
	int order[2] = {0, 1};
	if (slot[1].magic && (!slot[0].magic || slot[1].gen > slot[0].gen))
		order[0] = 1, order[1] = 0;
	rc = -EUCLEAN;
	for (int k = 0; k < 2 && rc; k++) {
		const struct bgafs_sb *sb = &slot[order[k]];
		if (!sb->magic)
			continue;
		itab_destroy(&fs->itab, fs->rec);
		itab_init(&fs->itab);
		rc = log_replay(fs, sb);
		if (rc)
			fprintf(stderr, "bgafs: %s: superblock %d (gen %llu): namespace log unreadable: %s\n",
				path, order[k], (unsigned long long)sb->gen, bga_strerror(rc));
		else
			fs->sb = *sb;
	}
	if (rc) {
		fprintf(stderr, "bgafs: %s: no valid superblock and namespace (not a bgafs image?)\n", path);
		goto fail;
	}
	if ((rc = bga_io_file_open(path, BGAFS_META_OFF, 0, &fs->io)) || (rc = bga_load(&fs->io, NULL, &fs->vol))) {
		fprintf(stderr, "bgafs: %s: loading the allocator: %s\n", path, bga_strerror(rc));
		goto fail;
	}
	struct bga_config cfg;
	bga_volume_config(fs->vol, &cfg);
	if (cfg.nblocks != fs->sb.nblocks || cfg.first_data_block != fs->sb.first_data_block) {
		fprintf(stderr, "bgafs: %s: the allocator's geometry (%llu blocks from %llu) is not the superblock's\n",
			path, (unsigned long long)cfg.nblocks, (unsigned long long)cfg.first_data_block);
		rc = -EUCLEAN;
		goto fail;
	}
	struct bga_stats bst;
	if (fs->sb.txn > fs->ns_txn) /* a clean unmount's mark: nothing after the checkpoint */
		fs->ns_txn = fs->sb.txn;
	uint64_t txn = fs->ns_txn;
	fs->bga_txn = !bga_stats(fs->vol, &bst) ? bst.last_committed_txn : 0;
	if (fs->bga_txn > txn)
		txn = fs->bga_txn;
	atomic_store(&fs->txn, txn + 1);
	fs->durable = fs->logged_txn = txn;
	fs->ns_limit = log_ns_limit(fs);
	table_mark_logged(fs); /* the namespace is the log's */
	fs->nblocks = fs->sb.nblocks;
	fs->first_data_block = fs->sb.first_data_block;
	if (rw) {
		if (!fs->sb.clean) {
			/* The allocator on disk may be a commit ahead of the
			 * namespace (blocks taken or freed after the snapshot):
			 * give back what no file owns before anything reuses it. */
			int bad = fs_check(fs, 1, 1);
			if (bad) {
				fprintf(stderr, "bgafs: %s: %d problems the reconcile cannot fix; run bgafs fsck\n",
					path, bad);
				rc = -EUCLEAN;
				goto fail;
			}
		}
		if (fs->sb.lost_after) {
			fprintf(stderr, "bgafs: %s: the last unmount could not commit the changes after transaction "
					"%llu: they are lost\n", path, (unsigned long long)fs->sb.lost_after);
			fs->sb.lost_after = 0;
		}
		/* Mark the image in use before anything is stored, so a crash
		 * from here on reconciles at the next mount. */
		fs->sb.gen++;
		fs->sb.clean = 0;
		if ((rc = sb_write(fs, &fs->sb)))
			goto fail;
	}
	*out = fs;
	return 0;
fail:
	fs_close(fs);
	return rc;
}
