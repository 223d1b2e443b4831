/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The namespace's encodings, the payloads of the log's records (log.c).
 *
 * Checkpoint (the whole namespace):
 *   header   u32 magic "BGNT", u32 version 3, u64 inode count
 *   then count inode records, each with its directory entries.
 *
 * Inode record:
 *   u64 ino, u32 mode, nlink, uid, gid, u64 rdev, u64 size,
 *   u64 atime, mtime, ctime (signed ns since 1970, two's complement), u64 parent, u32 count, u32 xattr_bytes,
 *   then count extents (u64 lblk, u64 pblk, u32 len, u32 flags) for a
 *   regular file, count entries (u64 ino, u16 len, name) for a directory,
 *   the count bytes of a symbolic link's target, or nothing (count 0) for
 *   a FIFO, socket or device;
 *   then xattr_bytes bytes: the inode's extended attributes as one blob
 *   (0: none; the blob's own format is in xattr.c, xattr_put).
 *
 * Delta (what the commit of the transactions after the previous record
 * changed), header u32 magic "BGND", u32 version 1, then records until the
 * end, each starting with a u8 type:
 *   1 INODE   u32 flags, then an inode record; a directory's carries no
 *             entries (count 0: they come as DENT records).  Flag FRESH: a
 *             new inode, perhaps at the ino of one gone (replay drops
 *             whatever the ino held before)
 *   2 GONE    u64 ino: no longer in the namespace
 *   3 DENT    u64 dir, u64 ino (0: the name is gone), u16 len, name
 *
 * An inode is in the namespace when it has links; unlinked inodes still
 * open are not written: a crash frees their blocks through the reconcile
 * pass, as ext4's orphan list would.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bgafs.h"

#define TABLE_MAGIC 0x544e4742u /* "BGNT" */
#define TABLE_VERSION 3u
#define DELTA_MAGIC 0x444e4742u /* "BGND" */
#define DELTA_VERSION 1u
#define INODE_REC 80u           /* an inode record's fixed part */
#define DENT_REC 10u            /* a checkpoint entry's fixed part */
enum { R_INODE = 1, R_GONE = 2, R_DENT = 3 };
enum { F_FRESH = 1u };

#define PUT(b, v)                                   \
	do {                                        \
		__typeof__(v) v_ = (v);             \
		if (tbuf_put((b), &v_, sizeof(v_))) \
			return -ENOMEM;             \
	} while (0)

size_t table_bytes_new(size_t namelen, size_t linklen)
{
	return INODE_REC + DENT_REC + namelen + linklen;
}

size_t table_bytes_name(size_t namelen)
{
	return DENT_REC + namelen;
}

/* Times are signed nanoseconds since 1970 (ts_clamp keeps them in
 * range), stored as their two's complement: a time before 1970 is a
 * negative count, and its nanoseconds part is still 0..999999999. */
static uint64_t ts_ns(struct timespec t)
{
	return (uint64_t)((int64_t)t.tv_sec * 1000000000 + t.tv_nsec);
}

static struct timespec ns_ts(uint64_t u)
{
	int64_t ns = (int64_t)u, sec = ns / 1000000000, rem = ns % 1000000000;
	if (rem < 0) { /* C division truncates; the seconds must round down */
		sec--;
		rem += 1000000000;
	}
	return (struct timespec){.tv_sec = (time_t)sec, .tv_nsec = (long)rem};
}

static int put_dentry(void *ctx, const struct dentry *e)
{
	struct tbuf *b = ctx;
	PUT(b, e->ino);
	PUT(b, e->len);
	return tbuf_put(b, e->name, e->len);
}

static int put_inode(struct tbuf *b, const struct inode *ip, int entries)
{
	PUT(b, ip->ino);
	PUT(b, ip->mode);
	PUT(b, ip->nlink);
	PUT(b, ip->uid);
	PUT(b, ip->gid);
	PUT(b, ip->rdev);
	PUT(b, ip->size);
	PUT(b, ts_ns(ip->atime));
	PUT(b, ts_ns(ip->mtime));
	PUT(b, ts_ns(ip->ctime));
	PUT(b, ip->parent);
	uint32_t count = S_ISDIR(ip->mode)   ? (entries ? ip->dir.count : 0)
			 : S_ISLNK(ip->mode) ? (uint32_t)strlen(ip->link)
			 : S_ISREG(ip->mode) ? ip->map.n
					     : 0;
	PUT(b, count);
	PUT(b, (uint32_t)xattr_blob_bytes(&ip->xattrs));
	int rc = 0;
	if (S_ISDIR(ip->mode))
		rc = entries ? dir_foreach(&ip->dir, put_dentry, b) : 0;
	else if (S_ISLNK(ip->mode))
		rc = tbuf_put(b, ip->link, count);
	else
		for (uint32_t i = 0; i < ip->map.n; i++) {
			const struct extent *e = &ip->map.v[i];
			PUT(b, e->lblk);
			PUT(b, e->pblk);
			PUT(b, e->len);
			PUT(b, e->flags);
		}
	return rc ? rc : xattr_put(&ip->xattrs, b);
}

static int ondisk_fit(struct fs *fs, uint64_t cap)
{
	if (cap <= fs->ondisk_cap)
		return 0;
	uint8_t *v = realloc(fs->ondisk, cap);
	if (!v)
		return -ENOMEM;
	memset(v + fs->ondisk_cap, 0, cap - fs->ondisk_cap);
	fs->ondisk = v;
	fs->ondisk_cap = cap;
	return 0;
}

int table_serialize(struct fs *fs, struct tbuf *b)
{
	struct itab *t = &fs->itab;
	PUT(b, (uint32_t)TABLE_MAGIC);
	PUT(b, TABLE_VERSION);
	size_t count_at = b->len;
	PUT(b, (uint64_t)0);
	uint64_t n = 0;
	pthread_rwlock_rdlock(&t->lock);
	int rc = ondisk_fit(fs, t->cap);
	for (uint64_t i = 0; i < t->cap && !rc; i++) {
		struct inode *ip = t->v[i];
		if (ip && ip->nlink) {
			rc = put_inode(b, ip, 1);
			n++;
		}
	}
	pthread_rwlock_unlock(&t->lock);
	memcpy(b->p + count_at, &n, sizeof(n));
	return rc;
}

static int put_dent(struct tbuf *b, uint64_t dir, uint64_t ino, const char *name, uint16_t len)
{
	PUT(b, (uint8_t)R_DENT);
	PUT(b, dir);
	PUT(b, ino);
	PUT(b, len);
	return tbuf_put(b, name, len);
}

int table_delta(struct fs *fs, struct tbuf *b, int *full)
{
	struct itab *t = &fs->itab;
	*full = atomic_load(&fs->need_ckpt);
	PUT(b, (uint32_t)DELTA_MAGIC);
	PUT(b, DELTA_VERSION);
	pthread_rwlock_rdlock(&t->lock);
	int rc = ondisk_fit(fs, t->cap);
	uint64_t end = t->cap > fs->ondisk_cap ? t->cap : fs->ondisk_cap;
	for (uint64_t i = 1; i < end && !rc && !*full; i++) {
		struct inode *ip = i < t->cap ? t->v[i] : NULL;
		if (ip && ip->nlink) {
			if (ip->last_txn <= fs->logged_txn)
				continue;
			if (!(rc = tbuf_put(b, &(uint8_t){R_INODE}, 1)) &&
			    !(rc = tbuf_put(b, &(uint32_t){ip->logged ? 0 : F_FRESH}, 4)))
				rc = put_inode(b, ip, 0);
		} else if (i < fs->ondisk_cap && fs->ondisk[i]) {
			if (!(rc = tbuf_put(b, &(uint8_t){R_GONE}, 1)))
				rc = tbuf_put(b, &i, 8);
			fs->delta_removes++;
		}
	}
	/* Names after inodes: a FRESH directory drops what its ino held first. */
	for (uint64_t i = 1; i < t->cap && !rc && !*full; i++) {
		struct inode *ip = t->v[i];
		if (!ip || !ip->nlink || !S_ISDIR(ip->mode))
			continue;
		for (struct dchange *c = ip->dchg; c && !rc; c = c->next) {
			struct dentry *d = dir_find(&ip->dir, c->name, c->len);
			rc = put_dent(b, ip->ino, d ? d->ino : 0, c->name, c->len);
			fs->delta_removes += !d;
		}
	}
	pthread_rwlock_unlock(&t->lock);
	return rc;
}

void table_mark_logged(struct fs *fs)
{
	struct itab *t = &fs->itab;
	pthread_rwlock_rdlock(&t->lock);
	/* Without the marks a delta cannot be told: checkpoints until then. */
	int lost = ondisk_fit(fs, t->cap);
	for (uint64_t i = 0; i < fs->ondisk_cap; i++) {
		struct inode *ip = i < t->cap ? t->v[i] : NULL;
		fs->ondisk[i] = ip && ip->nlink;
	}
	for (uint64_t i = 0; i < t->cap; i++) {
		struct inode *ip = t->v[i];
		if (ip) {
			ip->logged = ip->nlink != 0;
			dchange_free(ip);
		}
	}
	pthread_rwlock_unlock(&t->lock);
	atomic_store(&fs->need_ckpt, lost);
}

void dentry_changed(struct fs *fs, struct inode *dir, const char *name, size_t len)
{
	struct dchange *c = malloc(sizeof(*c) + len);
	if (!c) { /* the name's state cannot be told: the next commit writes everything */
		atomic_store(&fs->need_ckpt, 1);
		return;
	}
	c->len = (uint16_t)len;
	memcpy(c->name, name, len);
	c->next = dir->dchg;
	dir->dchg = c;
}

struct rd {
	const unsigned char *p;
	size_t len, off;
};

static int get(struct rd *r, void *out, size_t n)
{
	if (r->len - r->off < n)
		return -EUCLEAN;
	memcpy(out, r->p + r->off, n);
	r->off += n;
	return 0;
}

#define GET(r, v)                              \
	do {                                   \
		if (get((r), &(v), sizeof(v))) \
			goto bad;              \
	} while (0)

/* One inode record into a new inode (*out); a directory's entries with
 * it.  0, -EUCLEAN, -ENOMEM. */
static int parse_inode(struct rd *r, struct inode **out)
{
	uint64_t ino, rdev, size, at, mt, ct, parent;
	uint32_t mode, nlink, uid, gid, count, xattr_bytes;
	struct inode *ip = NULL;
	GET(r, ino);
	GET(r, mode);
	GET(r, nlink);
	GET(r, uid);
	GET(r, gid);
	GET(r, rdev);
	GET(r, size);
	GET(r, at);
	GET(r, mt);
	GET(r, ct);
	GET(r, parent);
	GET(r, count);
	GET(r, xattr_bytes);
	int special = S_ISFIFO(mode) || S_ISSOCK(mode) || S_ISCHR(mode) || S_ISBLK(mode);
	if (!ino || ino > (1ull << 40) || !nlink || !(S_ISDIR(mode) || S_ISREG(mode) || S_ISLNK(mode) || special) ||
	    (special && count))
		goto bad;
	if (!(ip = inode_new(mode, uid, gid)))
		return -ENOMEM;
	ip->ino = ino;
	ip->nlink = nlink;
	ip->rdev = rdev;
	ip->size = size;
	ip->atime = ns_ts(at);
	ip->mtime = ns_ts(mt);
	ip->ctime = ns_ts(ct);
	ip->parent = parent;
	if (S_ISLNK(mode)) {
		if (count > 4096 || r->len - r->off < count || !(ip->link = strndup((const char *)r->p + r->off, count)))
			goto bad;
		r->off += count;
		count = 0;
	}
	for (uint32_t k = 0; k < count; k++) {
		if (S_ISDIR(mode)) {
			uint64_t cino;
			uint16_t nl;
			GET(r, cino);
			GET(r, nl);
			if (!nl || nl > BGAFS_NAME_MAX || r->len - r->off < nl)
				goto bad;
			if (dir_add(&ip->dir, (const char *)r->p + r->off, nl, cino))
				goto nomem;
			r->off += nl;
		} else {
			struct extent e;
			GET(r, e.lblk);
			GET(r, e.pblk);
			GET(r, e.len);
			GET(r, e.flags);
			if (!e.len ||
			    (ip->map.n && ip->map.v[ip->map.n - 1].lblk + ip->map.v[ip->map.n - 1].len > e.lblk))
				goto bad;
			/* Appending in order: extmap_set places it last. */
			if (extmap_set(&ip->map, e.lblk, e.pblk, e.len, e.flags & EXT_UNWRITTEN))
				goto nomem;
		}
	}
	if (r->len - r->off < xattr_bytes)
		goto bad;
	int rc = xattr_parse(&ip->xattrs, r->p + r->off, xattr_bytes);
	if (rc == -ENOMEM)
		goto nomem;
	if (rc)
		goto bad;
	r->off += xattr_bytes;
	*out = ip;
	return 0;
bad: /* a parsed inode has no window yet: no recorder to close one through */
	inode_free(NULL, ip);
	return -EUCLEAN;
nomem:
	inode_free(NULL, ip);
	return -ENOMEM;
}

int table_parse(struct fs *fs, const unsigned char *p, size_t len)
{
	struct rd r = {p, len, 0};
	uint32_t magic, version;
	uint64_t n;
	GET(&r, magic);
	GET(&r, version);
	GET(&r, n);
	if (magic != TABLE_MAGIC || version != TABLE_VERSION)
		goto bad;
	for (uint64_t i = 0; i < n; i++) {
		struct inode *ip;
		int rc = parse_inode(&r, &ip);
		if (rc)
			return rc;
		if (itab_insert(&fs->itab, ip)) {
			inode_free(fs->rec, ip);
			goto bad;
		}
	}
	if (r.off != r.len || !itab_get(&fs->itab, BGAFS_ROOT))
		goto bad;
	return 0;
bad:
	return -EUCLEAN;
}

static void drop(struct fs *fs, struct inode *ip)
{
	itab_remove(&fs->itab, ip->ino);
	inode_free(fs->rec, ip);
}

int table_apply_delta(struct fs *fs, const unsigned char *p, size_t len)
{
	struct rd r = {p, len, 0};
	uint32_t magic, version;
	GET(&r, magic);
	GET(&r, version);
	if (magic != DELTA_MAGIC || version != DELTA_VERSION)
		goto bad;
	while (r.off < r.len) {
		uint8_t type;
		GET(&r, type);
		if (type == R_INODE) {
			uint32_t flags;
			struct inode *ip, *old;
			GET(&r, flags);
			int rc = parse_inode(&r, &ip);
			if (rc)
				return rc;
			old = itab_get(&fs->itab, ip->ino);
			if (old && !(flags & F_FRESH)) {
				/* The same inode changed: a directory keeps its
				 * entries (they change through DENT records). */
				if ((old->mode & S_IFMT) != (ip->mode & S_IFMT)) {
					inode_free(fs->rec, ip);
					goto bad;
				}
				struct dirtab d = old->dir;
				old->dir = ip->dir;
				ip->dir = d;
			}
			if (old)
				drop(fs, old);
			if (itab_insert(&fs->itab, ip)) {
				inode_free(fs->rec, ip);
				goto bad;
			}
		} else if (type == R_GONE) {
			uint64_t ino;
			GET(&r, ino);
			struct inode *ip = itab_get(&fs->itab, ino);
			if (!ip || ino == BGAFS_ROOT)
				goto bad;
			drop(fs, ip);
		} else if (type == R_DENT) {
			uint64_t dino, ino;
			uint16_t nl;
			GET(&r, dino);
			GET(&r, ino);
			GET(&r, nl);
			struct inode *dir = itab_get(&fs->itab, dino);
			if (!dir || !S_ISDIR(dir->mode) || !nl || nl > BGAFS_NAME_MAX || r.len - r.off < nl)
				goto bad;
			const char *name = (const char *)r.p + r.off;
			r.off += nl;
			dir_remove(&dir->dir, name, nl);
			if (ino && dir_add(&dir->dir, name, nl, ino))
				return -ENOMEM;
		} else {
			goto bad;
		}
	}
	return 0;
bad:
	return -EUCLEAN;
}
