/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bgafs: a FUSE file system whose every data block comes from bgalloc.
 *
 * Image layout (4 KiB blocks, little-endian, one file):
 *
 *   block 0, block 1     superblock slots A and B (first 512 bytes used, one
 *                        sector, so a write of one lands whole or not at all)
 *   blocks 2 .. F-1      the bgalloc metadata area (bga_store/bga_load)
 *   blocks F .. N-1      allocated through bgalloc: file data and the
 *                        namespace table (F = first_data_block)
 *
 * The namespace (every inode, its extents, every directory entry) lives in
 * memory while mounted and is written whole, copy-on-write, at each commit
 * (table.c) into blocks of a metadata pool that bgalloc filled and the file
 * system owns, so a disk full of data can still commit (txn.c).  A commit (txn.c) writes the
 * table, calls bga_store, flushes, writes the superblock slot the next
 * generation names, flushes, and only then bga_commit()s the transaction,
 * so a crash at any point leaves one valid superblock whose table and files
 * are intact and whose blocks are all still allocated in bgalloc.  Blocks
 * the allocator on disk holds that the surviving table does not own (the
 * allocator may be one commit ahead) are given back by the reconcile pass
 * of the next mount, which runs whenever the superblock is not marked clean.
 *
 * Locks, in the order they are taken:
 *   fs->jlock (shared by every op that changes state or frees blocks;
 *              exclusive by the commit while it snapshots the namespace: it
 *              plays jbd2's handle: an op joins the running transaction)
 *   fs->rename_lock (renames only: keeps directory parents stable)
 *   inode->lock of directories, ancestors before descendants, else by ino
 *   inode->lock of non-directories
 *   fs->itab.lock (the ino -> inode table; never held while taking another)
 * Readers (read, getattr, lookup, readdir) take only inode locks.
 */
#ifndef BGAFS_H
#define BGAFS_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>
#include <time.h>
#include <bgalloc.h>

#define BGAFS_BLOCK 4096u
#define BGAFS_SHIFT 12
#define BGAFS_MAGIC 0x3153464147424742ull /* "BGBGAFS1" */
#define BGAFS_VERSION 1u
#define BGAFS_SB_EXTENTS 24               /* table extents in a superblock */
#define BGAFS_META_OFF (2ull * BGAFS_BLOCK) /* bgalloc metadata area */
#define BGAFS_MAX_FILE (1ull << 40)       /* larger offsets give EFBIG */
#define BGAFS_NAME_MAX 255
#define BGAFS_ROOT 1ull

/* ---- superblock (image.c) ---- */

struct bgafs_ext {
	uint64_t start, len;
};

struct bgafs_sb {
	uint64_t magic;
	uint32_t version, block_size;
	uint64_t gen;              /* bumped at every write; slot = gen % 2 */
	uint64_t nblocks;          /* image size in blocks */
	uint64_t first_data_block; /* 2 + metadata area blocks */
	uint64_t meta_bytes;       /* bga_metadata_size() at mkfs */
	uint64_t txn;              /* last committed transaction */
	uint64_t table_bytes;      /* namespace table length */
	uint32_t table_crc;        /* crc32c of the table's table_bytes */
	uint32_t table_next;       /* table extents used */
	uint32_t clean;            /* 1: unmounted cleanly, no reconcile needed */
	uint32_t pad;
	struct bgafs_ext table[BGAFS_SB_EXTENTS];
	uint32_t crc;              /* crc32c of everything before it */
};

/* ---- extent map (extent.c) ---- */

enum { EXT_UNWRITTEN = 1u }; /* allocated by fallocate, reads as zeros */

struct extent {
	uint64_t lblk, pblk;
	uint32_t len, flags;
};

/* A file's block map: extents sorted by lblk, never overlapping, merged with
 * neighbours that continue them physically with the same flags.  Not
 * thread-safe: the owning inode's lock protects it. */
struct extmap {
	struct extent *v;
	uint32_t n, cap;
	uint64_t blocks; /* physical blocks mapped (st_blocks / 8) */
};

enum map_state { MAP_HOLE, MAP_WRITTEN, MAP_UNWRITTEN };

/* State of lblk: *pblk (mapped states) and *run, the number of blocks from
 * lblk on with the same state and physically contiguous (UINT64_MAX for a
 * hole past the last extent). */
enum map_state extmap_lookup(const struct extmap *m, uint64_t lblk, uint64_t *pblk, uint64_t *run);
/* Map [lblk, lblk+len) to pblk.. with flags, replacing whatever mapped that
 * range (the caller has freed or reuses it).  0 or -ENOMEM. */
int extmap_set(struct extmap *m, uint64_t lblk, uint64_t pblk, uint32_t len, uint32_t flags);
/* Unmap every block at or past lblk, calling fn on each physical range. */
typedef void (*extmap_free_fn)(void *ctx, uint64_t pblk, uint64_t len);
void extmap_truncate(struct extmap *m, uint64_t lblk, extmap_free_fn fn, void *ctx);
/* Unmap [lblk, end), calling fn on each physical range (fallocate's
 * PUNCH_HOLE).  0, or -ENOMEM with nothing changed. */
int extmap_punch(struct extmap *m, uint64_t lblk, uint64_t end, extmap_free_fn fn, void *ctx);
/* The physical block just past the extent ending nearest below lblk: the
 * allocation goal for lblk (BGA_NO_GOAL when none). */
uint64_t extmap_goal(const struct extmap *m, uint64_t lblk);
void extmap_destroy(struct extmap *m);

/* ---- directories (dir.c) ---- */

struct dentry {
	struct dentry *next;
	uint64_t ino;
	uint32_t hash;
	uint16_t len;
	char name[];
};

/* A directory's entries: a chained hash table by name.  The owning inode's
 * lock protects it. */
struct dirtab {
	struct dentry **b;
	uint32_t nb, count;
};

struct dentry *dir_find(const struct dirtab *d, const char *name, size_t len);
int dir_add(struct dirtab *d, const char *name, size_t len, uint64_t ino); /* 0, -ENOMEM */
int dir_remove(struct dirtab *d, const char *name, size_t len);           /* 0, -ENOENT */
typedef int (*dir_fn)(void *ctx, const struct dentry *e);
int dir_foreach(const struct dirtab *d, dir_fn fn, void *ctx); /* stops at a non-zero return */
void dir_destroy(struct dirtab *d);

/* ---- inodes (inode.c) ---- */

struct inode {
	pthread_rwlock_t lock;
	uint64_t ino;
	uint32_t mode, nlink, uid, gid;
	uint64_t rdev;
	uint64_t size;
	struct timespec atime, mtime, ctime;
	uint64_t parent;        /* directories: the parent's ino (rename_lock) */
	struct extmap map;      /* regular files */
	struct dirtab dir;      /* directories */
	char *link;             /* symbolic links: the target */
	_Atomic uint64_t nlookup; /* kernel references (lookup, create, forget) */
	uint32_t nopen;         /* open file handles */
	uint64_t last_txn;      /* the transaction of its last change (fsync waits for it) */
	struct bga_rsv *rsv;    /* reservation window while open */
};

/* ino -> inode, with inos reused once their inode is gone. */
struct itab {
	pthread_rwlock_t lock;
	struct inode **v;
	uint64_t cap, count;
	uint64_t *freeino;
	size_t nfree, freecap;
	uint64_t next; /* lowest ino never handed out */
};

int itab_init(struct itab *t);
void itab_destroy(struct itab *t); /* frees every inode still in it */
struct inode *itab_get(struct itab *t, uint64_t ino);
/* Insert ip under ip->ino (load) or, with ip->ino == 0, a fresh ino. */
int itab_insert(struct itab *t, struct inode *ip);
void itab_remove(struct itab *t, uint64_t ino);
uint64_t itab_count(struct itab *t);
struct inode *inode_new(uint32_t mode, uint32_t uid, uint32_t gid);
/* relatime, as ext4 and fuse2fs: a read moves atime on when it is not
 * newer than mtime or ctime, or is a day old.  Lock held (either way). */
int inode_atime_due(const struct inode *ip, const struct timespec *now);
void inode_free(struct inode *ip);

/* ---- the file system (image.c, txn.c) ---- */

struct fs {
	int fd;               /* the image */
	char *path;
	struct bga_io io;     /* the bgalloc metadata area of the image */
	struct bga_volume *vol;
	struct bgafs_sb sb;   /* the newest superblock on disk (commit thread only) */
	uint64_t nblocks, first_data_block; /* the geometry, for every thread */
	struct itab itab;

	pthread_rwlock_t jlock;
	_Atomic uint64_t txn;  /* the running transaction */
	atomic_int dirty;      /* anything to commit */
	pthread_mutex_t rename_lock;

	/* the commit thread */
	pthread_t committer;
	int committer_running;
	pthread_mutex_t cmu;
	pthread_cond_t ccv;    /* wakes the committer */
	pthread_cond_t cdone;  /* wakes waiters on a commit */
	uint64_t cstarted, cdone_seq;
	uint64_t durable;      /* every change in a txn <= durable is on disk; always < txn */
	int cwant, cstop, clast_err;
	/* The metadata pool: blocks allocated in bgalloc and owned by the file
	 * system (listed in each table) that the next tables are written
	 * into, so writers that fill the disk cannot take the room a commit
	 * needs (commit thread only; a mount fills it from the table). */
	struct bgafs_ext *pool;
	uint32_t npool, pool_cap;
	uint64_t pool_blocks;
	int pool_frozen;       /* the last commits: the pool neither grows nor shrinks */
	uint64_t commits;      /* commits that wrote a table */
	int writeback_cache;   /* -o writeback_cache: the kernel caches writes */
};

uint32_t crc32c(uint32_t crc, const void *buf, size_t len);
int parse_size(const char *s, uint64_t *out);
void ts_now(struct timespec *ts);

/* image.c */
int fs_mkfs(const char *path, uint64_t bytes);
/* Open an image: superblock, bgalloc volume, namespace.  rw: mount (reconcile
 * if unclean, mark the image in use); 0: read-only, for fsck.  0 or -errno,
 * with a message on stderr. */
int fs_open(const char *path, int rw, struct fs **out);
void fs_close(struct fs *fs);
int sb_write(struct fs *fs, struct bgafs_sb *sb); /* the slot of sb->gen, then flush */
int fs_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
int fs_pread_all(int fd, void *buf, size_t len, uint64_t off);

/* table.c */
struct tbuf {
	unsigned char *p;
	size_t len, cap;
};
int table_serialize(struct fs *fs, struct tbuf *out); /* jlock held exclusive */
/* Append the pool section (the extents of pool[] and more[]) that ends a
 * table.  0 or -ENOMEM. */
int table_put_pool(struct tbuf *b, const struct bgafs_ext *pool, uint32_t n, const struct bgafs_ext *more,
		   uint32_t nmore);
int pool_add(struct fs *fs, uint64_t start, uint64_t len); /* txn.c; 0 or -ENOMEM */
int table_parse(struct fs *fs, const unsigned char *p, size_t len);
int table_read(struct fs *fs, const struct bgafs_sb *sb, unsigned char **out);

/* txn.c */
int txn_start(struct fs *fs);
void txn_stop(struct fs *fs);         /* stops the committer */
/* Wait until transaction txn is durable (committing it now if need be):
 * 0, or the error of the commit that failed to make it so. */
int txn_sync_to(struct fs *fs, uint64_t txn);
int txn_sync(struct fs *fs);          /* txn_sync_to the running transaction */
int txn_commit(struct fs *fs);        /* commit now (committer stopped or the committer itself) */
int txn_unmount(struct fs *fs);       /* final commit and the clean mark */
void txn_free_blocks(struct fs *fs, uint64_t pblk, uint64_t len); /* deferred, running txn; jlock shared */
void fs_begin(struct fs *fs);         /* join the running transaction */
void fs_end(struct fs *fs, int changed);
/* ip changed in the running transaction: its lock held for writing,
 * fs_begin() joined. */
static inline void inode_changed(struct fs *fs, struct inode *ip)
{
	ip->last_txn = atomic_load_explicit(&fs->txn, memory_order_relaxed);
}

/* fsck.c: check ownership of every block.  fix: give leaked blocks back
 * (mount's reconcile).  Returns the number of problems (leaks not counted
 * when fixed), printing each. */
int fs_check(struct fs *fs, int fix, int verbose);

/* ops_dir.c, ops_file.c */
void bgafs_ops_dir(struct fuse_lowlevel_ops *o);
void bgafs_ops_file(struct fuse_lowlevel_ops *o);
void fill_stat(const struct inode *ip, struct stat *st);
struct inode *ino_get(fuse_req_t req, fuse_ino_t ino, struct fs **fsp);
/* Drop an inode with no links, opens or kernel references: free its
 * blocks (deferred), remove it.  Called with its lock held for writing
 * and fs_begin() joined; unlocks it. */
void inode_drop_locked(struct fs *fs, struct inode *ip);
int inode_truncate_locked(struct fs *fs, struct inode *ip, uint64_t size);
/* A read of ip's data or entries: atime moves on when inode_atime_due()
 * (relatime).  Called with no lock held; joins the running transaction
 * when it changes anything. */
void inode_touch_atime(struct fs *fs, struct inode *ip);
/* Wait until ip's last change is durable (fsync, fsyncdir). */
int inode_sync(struct fs *fs, struct inode *ip);
/* Unlock ip.  With no links and no opens its blocks are freed; with no
 * kernel references either it is dropped.  Returns 1 when it freed or
 * dropped anything (the transaction has changes).  fs_begin() joined. */
int inode_put_locked(struct fs *fs, struct inode *ip);
/* The kernel drops nlookup references to ino. */
void forget_one(struct fs *fs, fuse_ino_t ino, uint64_t nlookup);

#endif
