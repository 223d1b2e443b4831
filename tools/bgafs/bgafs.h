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
 *                        metadata log area (F = first_data_block)
 *
 * The namespace (every inode, its extents, every directory entry) lives in
 * memory while mounted.  On disk it is a metadata log (log.c, DESIGN in
 * log.c's header): a circular area of blocks allocated at mkfs that holds
 * a checkpoint (the whole namespace, table.c) followed by one delta record
 * per commit (what that transaction changed: inode records, directory
 * entries, inodes gone).  The superblock names the area and the newest
 * checkpoint; a mount reads the checkpoint and replays the deltas chained
 * after it.  A commit (txn.c) stores the allocator, writes its record and
 * flushes, so a crash at any point leaves a namespace whose blocks are all
 * still allocated in bgalloc.  Blocks the allocator on disk holds that the
 * namespace does not own (the allocator may be one commit ahead) are given
 * back by the reconcile pass of the next mount, which runs whenever the
 * superblock is not marked clean.
 *
 * Locks, in the order they are taken:
 *   fs->jlock (shared by every op that changes state or frees blocks;
 *              exclusive by the commit while it snapshots the namespace: it
 *              plays jbd2's handle: an op joins the running transaction)
 *   fs->rename_lock (renames only: keeps directory parents stable)
 *   inode->lock of directories, ancestors before descendants, else by ino
 *   inode->lock of non-directories
 *   fs->itab.lock (the ino -> inode table; never held while taking another)
 *   fs->cmu (the committer's state; a leaf)
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
/* The allocator calls that -o trace=FILE records are the recorder's
 * (tools/replay/bga_rec.h): bga_rec_alloc(fs->rec, fs->vol, ...), which
 * is the plain call while fs->rec is NULL (no trace, mkfs).  A plain
 * bga_free() is never recorded: the mount's reconcile, which runs before
 * the trace starts, calls it. */
#include "bga_rec.h"

#define BGAFS_BLOCK 4096u
#define BGAFS_SHIFT 12
#define BGAFS_MAGIC 0x3153464147424742ull /* "BGBGAFS1" */
#define BGAFS_VERSION 2u                  /* 2: the metadata log (1: one table per commit) */
#define BGAFS_LOG_EXTENTS 16              /* log area extents in a superblock */
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
	uint64_t txn;              /* newest transaction durable when written */
	uint64_t log_blocks;       /* blocks in the log area (the sum of log[]) */
	uint32_t log_next;         /* log[] extents used */
	uint32_t clean;            /* 1: unmounted cleanly, no reconcile needed */
	struct bgafs_ext log[BGAFS_LOG_EXTENTS]; /* the log area, in order */
	uint64_t ckpt_pos;         /* block of the area where the checkpoint starts */
	uint64_t ckpt_seq;         /* its record sequence number */
	uint64_t lost_after;       /* 0; else changes after this txn could not be committed */
	uint32_t pad;
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
/* Room for `extra` more extents: with room for k + 3 (an extmap_set
 * asks for 3), k sets into holes, each adding one extent at most, cannot
 * fail.  0 or -ENOMEM. */
int extmap_reserve(struct extmap *m, uint32_t extra);
/* Unmap every block at or past lblk, calling fn on each physical range. */
typedef void (*extmap_free_fn)(void *ctx, uint64_t pblk, uint64_t len);
void extmap_truncate(struct extmap *m, uint64_t lblk, extmap_free_fn fn, void *ctx);
/* Unmap [lblk, end), calling fn on each physical range (fallocate's
 * PUNCH_HOLE).  0, or -ENOMEM with nothing changed. */
int extmap_punch(struct extmap *m, uint64_t lblk, uint64_t end, extmap_free_fn fn, void *ctx);
/* The block of the file a hole at lblk is placed relative to, in
 * *anchor: the last block of the extent ending nearest below lblk, else
 * the first block of the first extent after it; and lblk's logical
 * distance from it in *distance (negative for an extent after lblk).
 * A mapped lblk: its own block, distance 0.  0, or -ENOENT for an empty
 * map.  ext4's ext4_ext_find_goal aims at anchor + distance. */
int extmap_near(const struct extmap *m, uint64_t lblk, uint64_t *anchor, int64_t *distance);
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

/* ---- extended attributes (xattr.c) ---- */

#define BGAFS_XATTR_BYTES 131072u  /* names and values of one inode, at most */
#define BGAFS_XATTR_VALUE 65536u   /* one value, at most (the kernel's XATTR_SIZE_MAX) */
#define BGAFS_XATTR_LIST 65536u    /* the NUL-terminated names of one inode, at most (XATTR_LIST_MAX) */

struct xattr {
	char *name;
	void *value;
	uint32_t namelen, size;
};

/* An inode's extended attributes: a small array in set order (a few
 * entries per file).  The owning inode's lock protects it. */
struct xattrs {
	struct xattr *v;
	uint32_t n, cap;
	uint32_t bytes; /* sum of namelen + size (<= BGAFS_XATTR_BYTES) */
	uint32_t list;  /* sum of namelen + 1: listxattr's length (<= BGAFS_XATTR_LIST) */
};

enum { XA_CREATE = 1, XA_REPLACE = 2 }; /* the values of XATTR_CREATE, XATTR_REPLACE */

const struct xattr *xattr_find(const struct xattrs *x, const char *name);
/* Set name to value: 0, -EEXIST (XA_CREATE and present), -ENODATA
 * (XA_REPLACE and absent), -E2BIG (a value past BGAFS_XATTR_VALUE),
 * -ENOSPC (past BGAFS_XATTR_BYTES or BGAFS_XATTR_LIST), -ENOMEM; nothing
 * changes on an error. */
int xattr_set(struct xattrs *x, const char *name, const void *value, uint32_t size, int flags);
int xattr_remove(struct xattrs *x, const char *name); /* 0, -ENODATA */
/* The names, each NUL-terminated, into buf of size (NULL/0: just the
 * length): the length, or -ERANGE when it does not fit. */
long xattr_list(const struct xattrs *x, char *buf, size_t size);
void xattr_destroy(struct xattrs *x);
/* The attributes as the blob of an inode record (table.c; the format is
 * in xattr.c): its length, the bytes appended to b (0 or -ENOMEM), and
 * parsed back into an empty x (0, -EUCLEAN, -ENOMEM). */
struct tbuf;
size_t xattr_blob_bytes(const struct xattrs *x);
int xattr_put(const struct xattrs *x, struct tbuf *b);
int xattr_parse(struct xattrs *x, const unsigned char *p, size_t len);

/* ---- inodes (inode.c) ---- */

struct inode {
	pthread_rwlock_t lock;
	uint64_t ino;
	uint32_t mode, nlink, uid, gid;
	uint64_t rdev;          /* character and block devices */
	uint64_t size;
	struct timespec atime, mtime, ctime;
	uint64_t parent;        /* directories: the parent's ino (rename_lock) */
	struct extmap map;      /* regular files */
	struct dirtab dir;      /* directories */
	char *link;             /* symbolic links: the target */
	struct xattrs xattrs;   /* extended attributes */
	_Atomic uint64_t nlookup; /* kernel references (lookup, create, forget) */
	uint32_t nopen;         /* open file handles */
	uint64_t last_txn;      /* the transaction of its last change (fsync waits for it) */
	struct bga_rsv *rsv;    /* reservation window while open */
	uint32_t win_size;      /* the size window_by_shown_size set on rsv, 0: none (place.c) */
	/* The log (txn.c, table.c; written under the inode's lock, read by
	 * the commit under jlock exclusive): */
	int logged;             /* the log's namespace holds this inode (not merely its ino) */
	struct dchange *dchg;   /* directories: names changed since the last commit */
};

/* A name of a directory added, removed or repointed since the last commit
 * (dentry_changed); the commit logs the name's state at its snapshot. */
struct dchange {
	struct dchange *next;
	uint16_t len;
	char name[];
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
/* Frees every inode still in it, closing their windows through rec (fs->rec). */
void itab_destroy(struct itab *t, struct bga_rec *rec);
struct inode *itab_get(struct itab *t, uint64_t ino);
/* Insert ip under ip->ino (load) or, with ip->ino == 0, a fresh ino. */
int itab_insert(struct itab *t, struct inode *ip);
void itab_remove(struct itab *t, uint64_t ino);
/* After a load that inserted and removed by ino: every hole below next is
 * free for reuse (the log's replay). */
void itab_reset_free(struct itab *t);
uint64_t itab_count(struct itab *t);
struct inode *inode_new(uint32_t mode, uint32_t uid, uint32_t gid);
/* Whether a read moves ip's atime on, by the mount's atime option
 * (fs->atime): relatime (the default, as ext4 and fuse2fs) when it is not
 * newer than mtime or ctime, or is a day old; strictatime always;
 * noatime never; nodiratime never for a directory.  Lock held (either
 * way). */
struct fs;
int inode_atime_due(const struct fs *fs, const struct inode *ip, const struct timespec *now);
/* Free ip, closing its window through rec (fs->rec, NULL: no trace). */
void inode_free(struct bga_rec *rec, struct inode *ip);
/* Free ip's list of directory changes (the next delta's), if any. */
void dchange_free(struct inode *ip);

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
	/* The metadata log (log.c; commit thread only, but for the
	 * reservation fields, which take cmu). */
	struct bgafs_ext *log;  /* the area's extents (sb.log, or a new one being switched to) */
	uint32_t log_next;
	uint64_t log_blocks;
	uint64_t log_head;      /* block of the area the next record starts at */
	uint64_t log_used;      /* blocks from the checkpoint to the head */
	uint64_t log_seq;       /* sequence number of the next record */
	uint64_t log_last_pos;  /* block the last record written (or the checkpoint replayed) starts at */
	/* while the log moves to a larger area (log_grow), the old one */
	struct bgafs_ext old_log[BGAFS_LOG_EXTENTS];
	uint32_t old_next;
	uint64_t old_head, old_used;
	uint64_t logged_txn;    /* every change in a txn <= this is in a record written or being written */
	uint64_t ns_txn;        /* the newest transaction of the namespace loaded (fsck) */
	uint64_t bga_txn;       /* the allocator's last committed transaction, loaded (fsck) */
	uint8_t *ondisk;        /* per ino: the log's namespace holds an inode there */
	uint64_t ondisk_cap;
	atomic_int need_ckpt;   /* the next commit writes a checkpoint (a failed commit, a change list lost) */
	int cwant_ckpt;         /* a waiter wants a checkpoint (meta_reserve; cmu) */
	uint64_t ns_limit;      /* bytes the namespace may take: 3/8 of the area (cmu) */
	uint64_t ns_bytes;      /* the newest checkpoint's payload: the namespace's size then */
	uint64_t ns_reserved;   /* bytes creates reserved since (meta_reserve; cmu) */
	uint64_t removes_since_ckpt; /* names and inodes the deltas since it removed (cmu) */
	uint64_t delta_removes; /* the same in the delta being written (commit thread) */
	int writeback_cache;   /* -o writeback_cache: the kernel caches writes */
	int goal_distance;     /* -o goal=distance: a hole aims at its logical distance (place.c) */
	int window_shown;      /* -o window=shown (the default): a file written out of order has its
				  window sized by its shown end (place.c, window_by_shown_size) */
	uint32_t group_blocks, rsv_max; /* the allocator's blocks_per_group (a window's largest
					  size) and rsv_max (the unsized doubling's cap) */
	struct fuse_session *se; /* for notifications to the kernel (ops_file.c, perm_changed) */
	struct bga_rec *rec;   /* -o trace=FILE: the allocation trace being recorded */
	unsigned atime;        /* the mount's atime options (ATIME_*; inode_atime_due) */
	int acl;               /* the kernel enforces POSIX ACLs (FUSE_CAP_POSIX_ACL; perm.c) */
};

enum { ATIME_NOATIME = 1u, ATIME_NODIRATIME = 2u, ATIME_STRICT = 4u }; /* fs->atime; 0: relatime */

uint32_t crc32c(uint32_t crc, const void *buf, size_t len); /* ISA-L's, in the usual ~crc convention */
int parse_size(const char *s, uint64_t *out);
/* 1 with the mount point in mnt when a bgafs is mounted from the image at
 * path (/proc/self/mountinfo: fuse.bgafs, fsname = its real path), else 0. */
int fs_mounted_at(const char *path, char *mnt, size_t len);
void ts_now(struct timespec *ts);
/* A time the kernel set, brought into the range the table stores (signed
 * 64-bit nanoseconds, about 1678 to 2262), as the kernel truncates to a
 * file system's s_time_min/max. */
void ts_clamp(struct timespec *ts);

/* image.c */
/* Make a file system; -EEXIST (and a message) when path holds one
 * already, unless force. */
int fs_mkfs(const char *path, uint64_t bytes, int force);
/* Open an image: superblock, bgalloc volume, namespace.  rw: mount (reconcile
 * if unclean, mark the image in use); 0: read-only, for fsck.  0 or -errno,
 * with a message on stderr. */
int fs_open(const char *path, int rw, struct fs **out);
void fs_close(struct fs *fs);
/* util.c: whole reads and writes of the image (a read past its end: zeros). */
int fs_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
int fs_pread_all(int fd, void *buf, size_t len, uint64_t off);
/* txn.c: a superblock copy, written into the slot of sb->gen, then
 * flushed; sb_crc is its checksum. */
int sb_write(struct fs *fs, struct bgafs_sb *sb);
uint32_t sb_crc(const struct bgafs_sb *sb);

/* table.c: the namespace's encodings.  A checkpoint is the whole
 * namespace; a delta what changed since the last record.  Both take jlock
 * exclusive (no op runs).  0 or -ENOMEM. */
struct tbuf {
	unsigned char *p;
	size_t len, cap;
};
int tbuf_put(struct tbuf *b, const void *p, size_t n); /* util.c: append, growing; 0 or -ENOMEM */
int table_serialize(struct fs *fs, struct tbuf *out);
/* The delta of the transactions after fs->logged_txn, counting the names
 * and inodes it removes into fs->delta_removes.  *full set: some
 * change cannot be told as a delta (a change list lost to ENOMEM): write
 * a checkpoint instead. */
int table_delta(struct fs *fs, struct tbuf *out, int *full);
/* After a record of the namespace as it is now: the inodes' change marks
 * reset (jlock exclusive). */
void table_mark_logged(struct fs *fs);
int table_parse(struct fs *fs, const unsigned char *p, size_t len);       /* a checkpoint, into an empty itab */
int table_apply_delta(struct fs *fs, const unsigned char *p, size_t len); /* 0, -EUCLEAN, -ENOMEM */
/* Bytes a new inode adds to a checkpoint: its record, a name of namelen
 * bytes, a symlink target of linklen. */
size_t table_bytes_new(size_t namelen, size_t linklen);
size_t table_bytes_name(size_t namelen); /* a directory entry */

/* log.c */
int log_create(struct fs *fs, uint64_t blocks);  /* mkfs: allocate the area (fs->log) */
/* Append a record (kind LOG_CKPT or LOG_DELTA) of transaction txn whose
 * payload is tb->p[LOG_HDR..len) (the caller leaves LOG_HDR bytes free at
 * the front), at the head, and flush.  0 or -errno (-ENOSPC: it does not
 * fit in the area's free blocks; nothing written). */
enum { LOG_CKPT = 1, LOG_DELTA = 2 };
#define LOG_HDR 64u
int log_append(struct fs *fs, struct tbuf *tb, int kind, uint64_t txn);
uint64_t log_free_blocks(const struct fs *fs);
uint64_t log_ns_limit(const struct fs *fs); /* bytes the namespace may take: 3/8 of the area */
/* The log area mkfs makes for an image of nblocks: 1/32 of it, from 256
 * blocks to 16384 (1-64 MiB); it grows when the namespace needs more. */
uint64_t log_initial_blocks(uint64_t nblocks);
uint64_t log_record_blocks(size_t payload);
/* A new area of at least blocks for the next checkpoint; the old one is
 * freed (deferred) once the superblock names the new.  0, -ENOSPC. */
int log_grow(struct fs *fs, uint64_t blocks);
/* After a checkpoint into the area log_grow made: named, the superblock
 * now names it (the old area is handed to free_old, which frees it in the
 * running transaction: txn_free_blocks); not named, the checkpoint was not
 * written (the new area is given back). */
void log_switch_done(struct fs *fs, int named, void (*free_old)(struct fs *fs, uint64_t pblk, uint64_t len));
/* Read the checkpoint sb names and replay the records chained after it
 * into fs->itab; sets the head, sequence and fs->ns_txn.  0 or -errno. */
int log_replay(struct fs *fs, const struct bgafs_sb *sb);
void log_sb_fill(struct fs *fs, struct bgafs_sb *sb); /* the area and its checkpoint, into sb */

/* txn.c */
int txn_start(struct fs *fs);
void txn_stop(struct fs *fs);         /* stops the committer */
/* Wait until transaction txn is durable (committing it now if need be):
 * 0, or the error of the commit that failed to make it so. */
int txn_sync_to(struct fs *fs, uint64_t txn);
int txn_sync(struct fs *fs);          /* txn_sync_to the running transaction */
int txn_commit(struct fs *fs);        /* commit now (committer stopped or the committer itself) */
/* Room in the log for a create that adds bytes to the namespace
 * (table_bytes_new): 0, or -ENOSPC when the log area cannot hold it and
 * cannot grow.  Call before fs_begin (it may wait for a checkpoint). */
int meta_reserve(struct fs *fs, size_t bytes);
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
/* The entry name of directory dir was added, removed or repointed in the
 * running transaction: dir's lock held for writing, fs_begin() joined.
 * Every such change must be told, or a crash loses it (table.c). */
void dentry_changed(struct fs *fs, struct inode *dir, const char *name, size_t len);

/* fsck.c: check ownership of every block.  fix: give leaked blocks back
 * (mount's reconcile).  Returns the number of problems (leaks not counted
 * when fixed), printing each. */
int fs_check(struct fs *fs, int fix, int verbose);

/* perm.c: permissions FUSE leaves to the file system. */
/* The bits of ip's mode (S_ISUID, S_ISGID) that a change of its data or
 * size by req's caller clears, by the kernel's rule
 * (setattr_should_drop_suidgid): none for a caller with CAP_FSETID;
 * else S_ISUID, and S_ISGID when the file is group-executable or the
 * caller is outside its group.  ip's lock held. */
uint32_t perm_kill_suidgid(fuse_req_t req, const struct inode *ip);
/* ino's mode changed where the reply carries no attributes (a write, an
 * fallocate): the kernel's cached attributes are dropped, so the next
 * stat asks.  No lock held. */
void perm_changed(struct fs *fs, fuse_ino_t ino);
#define ACL_ACCESS "system.posix_acl_access"
#define ACL_DEFAULT "system.posix_acl_default"
int acl_kind(const char *name); /* 1 ACL_ACCESS, 2 ACL_DEFAULT, else 0 */
/* setxattr of an ACL (kind from acl_kind) on ip, lock held for writing:
 * the mode takes an access ACL's bits (and loses S_ISGID for a caller
 * outside the group without CAP_FSETID); an access ACL the mode says
 * all of is not stored.  0, -EINVAL (not an ACL), -EACCES (a default ACL
 * on a non-directory), -ENOSPC, -ENOMEM; nothing changes on an error. */
int acl_set_locked(fuse_req_t req, struct inode *ip, int kind, const void *value, size_t size);
/* After ip->mode changed (chmod): its access ACL follows.  Lock held. */
void acl_chmod_locked(struct inode *ip);
/* What a new inode ip takes from its directory dir (dir's lock held, ip
 * not yet visible; create, mkdir, mknod, symlink): in a set-group-ID
 * directory its group, and a directory S_ISGID too; with ACLs (where
 * the kernel leaves the umask to us), dir's default ACL (the ACLs it
 * inherits and its mode cut to them), or else its mode less umask.  0, -ENOSPC, -ENOMEM (ip may be half done: the
 * caller frees it). */
int perm_inherit_locked(struct fs *fs, struct inode *ip, const struct inode *dir, uint32_t umask);
/* Bytes of the namespace (a bound) what a new inode in dir inherits
 * takes; no lock held (it takes dir's). */
size_t perm_inherit_bytes(struct fs *fs, struct inode *dir);

/* ---- placement (place.c): where a file's new blocks go ---- */

/* A hole's goal (block; BGA_NO_GOAL: none), and the file's block nearest
 * the hole (anchor; BGA_NO_GOAL: none, a goal of the caller's own) with
 * the hole's logical distance from it, which the trace records beside
 * the request whatever it aims at (bga_rec_alloc_from). */
struct goal {
	uint64_t block, anchor;
	int64_t distance;
};

/* The goal of the hole at lblk of ip: just past the file's block before
 * it (-o goal=past, the default), or that block moved by the logical
 * distance (-o goal=distance). */
struct goal hole_goal(struct fs *fs, struct inode *ip, uint64_t lblk);
/* Up to want blocks for a hole aimed at goal, as at most max_out extents
 * in out[] (*n), in the order they map the hole: one bga_alloc_vec call
 * for a hole of 16 blocks or more (or flags with BGA_ALL_OR_NOTHING,
 * fallocate's), else one bga_alloc.  0 or the library's error. */
int alloc_hole(struct fs *fs, struct inode *ip, struct goal goal, uint64_t want, uint32_t flags,
	       struct bga_extent *out, size_t max_out, size_t *n);
/* The holes of [lblk, last] of m: their block count, and how many. */
void count_holes(const struct extmap *m, uint64_t lblk, uint64_t last, uint64_t *blocks, uint64_t *holes);
/* Before a write of want blocks in holes ending at byte end: a file
 * written out of order (-o window=shown) has its window sized by the
 * blocks it has shown it still needs, up to a group (place.c says when
 * and why); nothing for a file written in order. */
void window_by_shown_size(struct fs *fs, struct inode *ip, uint64_t end, uint64_t want);
/* want blocks as extents, call after call from the end of the last, in
 * *got (grown from *cap as needed, *n of them).  0, or the error with
 * nothing kept; with some_ok, a -ENOSPC after some blocks were taken is
 * 0 with fewer than want. */
int alloc_scattered(struct fs *fs, struct inode *ip, struct goal goal, uint64_t want, struct bga_extent **got,
		    size_t *cap, size_t *n, int some_ok);

/* ops_dir.c, ops_readdir.c, ops_file.c, ops_xattr.c */
void bgafs_ops_dir(struct fuse_lowlevel_ops *o);
void bgafs_ops_readdir(struct fuse_lowlevel_ops *o);
void bgafs_ops_file(struct fuse_lowlevel_ops *o);
void bgafs_ops_xattr(struct fuse_lowlevel_ops *o);
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
