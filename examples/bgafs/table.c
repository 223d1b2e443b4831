/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The namespace table: every linked inode with its extents or directory
 * entries, as one byte stream written whole at each commit (copy-on-write,
 * into fresh blocks; the superblock names them and carries the crc32c).
 *
 *   header   u32 magic "BGNT", u32 version, u64 inode count
 *   inode    u64 ino, u32 mode, nlink, uid, gid, u64 size,
 *            u64 atime, mtime, ctime (ns), u64 parent, u32 count, u32 0
 *   then count extents (u64 lblk, u64 pblk, u32 len, u32 flags) for a
 *   regular file, count entries (u64 ino, u16 len, name) for a directory,
 *   or the count bytes of a symbolic link's target.
 *   pool     u64 count, then count extents (u64 start, u64 len): the
 *            metadata pool (txn.c), blocks the file system owns, unused.
 *
 * Unlinked inodes still open are not written: a crash frees their blocks
 * through the reconcile pass, as ext4's orphan list would.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bgafs.h"

#define TABLE_MAGIC 0x544e4742u /* "BGNT" */

static int put(struct tbuf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		while (cap < b->len + n)
			cap *= 2;
		unsigned char *q = realloc(b->p, cap);
		if (!q)
			return -ENOMEM;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

#define PUT(b, v)                                  \
	do {                                       \
		__typeof__(v) v_ = (v);            \
		if (put((b), &v_, sizeof(v_)))     \
			return -ENOMEM;            \
	} while (0)

static uint64_t ts_ns(struct timespec t)
{
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static struct timespec ns_ts(uint64_t ns)
{
	return (struct timespec){.tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull)};
}

static int put_dentry(void *ctx, const struct dentry *e)
{
	struct tbuf *b = ctx;
	PUT(b, e->ino);
	PUT(b, e->len);
	return put(b, e->name, e->len);
}

static int put_inode(struct tbuf *b, const struct inode *ip)
{
	PUT(b, ip->ino);
	PUT(b, ip->mode);
	PUT(b, ip->nlink);
	PUT(b, ip->uid);
	PUT(b, ip->gid);
	PUT(b, ip->size);
	PUT(b, ts_ns(ip->atime));
	PUT(b, ts_ns(ip->mtime));
	PUT(b, ts_ns(ip->ctime));
	PUT(b, ip->parent);
	uint32_t count = S_ISDIR(ip->mode) ? ip->dir.count : S_ISLNK(ip->mode) ? (uint32_t)strlen(ip->link) : ip->map.n;
	PUT(b, count);
	PUT(b, (uint32_t)0);
	if (S_ISDIR(ip->mode))
		return dir_foreach(&ip->dir, put_dentry, b);
	if (S_ISLNK(ip->mode))
		return put(b, ip->link, count);
	for (uint32_t i = 0; i < ip->map.n; i++) {
		const struct extent *e = &ip->map.v[i];
		PUT(b, e->lblk);
		PUT(b, e->pblk);
		PUT(b, e->len);
		PUT(b, e->flags);
	}
	return 0;
}

int table_serialize(struct fs *fs, struct tbuf *b)
{
	struct itab *t = &fs->itab;
	b->len = 0;
	PUT(b, (uint32_t)TABLE_MAGIC);
	PUT(b, (uint32_t)2);
	size_t count_at = b->len;
	PUT(b, (uint64_t)0);
	uint64_t n = 0;
	pthread_rwlock_rdlock(&t->lock);
	int rc = 0;
	for (uint64_t i = 0; i < t->cap && !rc; i++) {
		struct inode *ip = t->v[i];
		if (ip && ip->nlink) {
			rc = put_inode(b, ip);
			n++;
		}
	}
	pthread_rwlock_unlock(&t->lock);
	memcpy(b->p + count_at, &n, sizeof(n));
	return rc;
}

int table_put_pool(struct tbuf *b, const struct bgafs_ext *pool, uint32_t n, const struct bgafs_ext *more,
		   uint32_t nmore)
{
	PUT(b, (uint64_t)n + nmore);
	for (uint32_t i = 0; i < n + nmore; i++) {
		const struct bgafs_ext *e = i < n ? &pool[i] : &more[i - n];
		PUT(b, e->start);
		PUT(b, e->len);
	}
	return 0;
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

#define GET(r, v)                            \
	do {                                 \
		if (get((r), &(v), sizeof(v))) \
			goto bad;            \
	} while (0)

int table_parse(struct fs *fs, const unsigned char *p, size_t len)
{
	struct rd r = {p, len, 0};
	uint32_t magic, version;
	uint64_t n;
	struct inode *ip = NULL;
	GET(&r, magic);
	GET(&r, version);
	GET(&r, n);
	if (magic != TABLE_MAGIC || version != 2)
		goto bad;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t ino, size, at, mt, ct, parent;
		uint32_t mode, nlink, uid, gid, count, pad;
		GET(&r, ino);
		GET(&r, mode);
		GET(&r, nlink);
		GET(&r, uid);
		GET(&r, gid);
		GET(&r, size);
		GET(&r, at);
		GET(&r, mt);
		GET(&r, ct);
		GET(&r, parent);
		GET(&r, count);
		GET(&r, pad);
		if (!ino || ino > (1ull << 40) || !(S_ISDIR(mode) || S_ISREG(mode) || S_ISLNK(mode)))
			goto bad;
		ip = inode_new(mode, uid, gid);
		if (!ip)
			return -ENOMEM;
		ip->ino = ino;
		ip->nlink = nlink;
		ip->size = size;
		ip->atime = ns_ts(at);
		ip->mtime = ns_ts(mt);
		ip->ctime = ns_ts(ct);
		ip->parent = parent;
		if (S_ISLNK(mode)) {
			if (count > 4096 || r.len - r.off < count || !(ip->link = strndup((const char *)r.p + r.off, count)))
				goto bad;
			r.off += count;
			count = 0;
		}
		for (uint32_t k = 0; k < count; k++) {
			if (S_ISDIR(mode)) {
				uint64_t cino;
				uint16_t nl;
				GET(&r, cino);
				GET(&r, nl);
				if (!nl || nl > BGAFS_NAME_MAX || r.len - r.off < nl)
					goto bad;
				if (dir_add(&ip->dir, (const char *)r.p + r.off, nl, cino))
					goto nomem;
				r.off += nl;
			} else {
				struct extent e;
				GET(&r, e.lblk);
				GET(&r, e.pblk);
				GET(&r, e.len);
				GET(&r, e.flags);
				if (!e.len || (ip->map.n && ip->map.v[ip->map.n - 1].lblk +
								ip->map.v[ip->map.n - 1].len > e.lblk))
					goto bad;
				/* Appending in order: extmap_set places it last. */
				if (extmap_set(&ip->map, e.lblk, e.pblk, e.len, e.flags & EXT_UNWRITTEN))
					goto nomem;
			}
		}
		if (itab_insert(&fs->itab, ip))
			goto bad;
		ip = NULL;
	}
	uint64_t npool;
	GET(&r, npool);
	for (uint64_t i = 0; i < npool; i++) {
		struct bgafs_ext e;
		GET(&r, e.start);
		GET(&r, e.len);
		if (!e.len)
			goto bad;
		if (pool_add(fs, e.start, e.len))
			goto nomem;
	}
	if (r.off != r.len || !itab_get(&fs->itab, BGAFS_ROOT))
		goto bad;
	return 0;
bad:
	inode_free(ip);
	return -EUCLEAN;
nomem:
	inode_free(ip);
	return -ENOMEM;
}

int table_read(struct fs *fs, const struct bgafs_sb *sb, unsigned char **out)
{
	size_t len = sb->table_bytes, off = 0;
	if (sb->table_next > BGAFS_SB_EXTENTS || len > (1ull << 36))
		return -EUCLEAN;
	unsigned char *p = malloc(len ? len : 1);
	if (!p)
		return -ENOMEM;
	for (uint32_t i = 0; i < sb->table_next && off < len; i++) {
		uint64_t n = sb->table[i].len * BGAFS_BLOCK;
		if (n > len - off)
			n = len - off;
		int rc = fs_pread_all(fs->fd, p + off, n, sb->table[i].start * BGAFS_BLOCK);
		if (rc) {
			free(p);
			return rc;
		}
		off += n;
	}
	if (off != len || crc32c(0, p, len) != sb->table_crc) {
		free(p);
		return -EUCLEAN;
	}
	*out = p;
	return 0;
}
