/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Directory listing: opendir, readdir, releasedir.
 *
 * readdir serves a snapshot taken when a pass starts (offset 0), so
 * entries removed while a program walks the directory (rm -r, dbench's
 * deltree) never make it skip the others.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bgafs.h"

struct dsnap {
	size_t n, cap;
	struct dsent {
		uint64_t ino;
		uint32_t mode;
		char *name;
	} *v;
	struct fs *fs;
};

static int snap_add(struct dsnap *s, uint64_t ino, uint32_t mode, const char *name)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct dsent *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	if (!(s->v[s->n].name = strdup(name)))
		return -ENOMEM;
	s->v[s->n].ino = ino;
	s->v[s->n++].mode = mode;
	return 0;
}

static int snap_entry(void *ctx, const struct dentry *e)
{
	struct dsnap *s = ctx;
	struct inode *ip = itab_get(&s->fs->itab, e->ino);
	/* The file type never changes, so it is read without the child's lock. */
	return snap_add(s, e->ino, ip ? (ip->mode & S_IFMT) : S_IFREG, e->name);
}

static void snap_clear(struct dsnap *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].name);
	s->n = 0;
}

static void snap_free(struct dsnap *s)
{
	snap_clear(s);
	free(s->v);
	free(s);
}

/* The snapshot of dir's entries as they are now. */
static int snap_fill(struct dsnap *s, struct inode *dir)
{
	snap_clear(s);
	pthread_rwlock_rdlock(&dir->lock);
	int rc = S_ISDIR(dir->mode) ? 0 : -ENOTDIR;
	if (!rc && !(rc = snap_add(s, dir->ino, S_IFDIR, ".")) && !(rc = snap_add(s, dir->parent, S_IFDIR, "..")))
		rc = dir_foreach(&dir->dir, snap_entry, s);
	pthread_rwlock_unlock(&dir->lock);
	return rc;
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs;
	struct inode *dir = ino_get(req, ino, &fs);
	if (!dir)
		return;
	pthread_rwlock_rdlock(&dir->lock);
	int isdir = S_ISDIR(dir->mode);
	pthread_rwlock_unlock(&dir->lock);
	struct dsnap *s = isdir ? calloc(1, sizeof(*s)) : NULL;
	if (!s) {
		fuse_reply_err(req, isdir ? ENOMEM : ENOTDIR);
		return;
	}
	s->fs = fs;
	fi->fh = (uintptr_t)s;
	fuse_reply_open(req, fi);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct dsnap *s = (struct dsnap *)(uintptr_t)fi->fh;
	/* The snapshot is taken at the start of each pass, so a rewinddir
	 * (a seek to 0) sees the names made since the last (POSIX). */
	int rc = 0;
	struct inode *dir = off == 0 ? itab_get(&s->fs->itab, ino) : NULL; /* open: the kernel holds it */
	if (off == 0 && (rc = dir ? snap_fill(s, dir) : -ENOENT)) {
		fuse_reply_err(req, -rc);
		return;
	}
	char *buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	size_t used = 0;
	for (size_t i = off < 0 ? 0 : (size_t)off; i < s->n; i++) {
		struct stat st = {.st_ino = s->v[i].ino, .st_mode = s->v[i].mode};
		size_t n = fuse_add_direntry(req, buf + used, size - used, s->v[i].name, &st, (off_t)(i + 1));
		if (n > size - used)
			break;
		used += n;
	}
	/* A listing reads the directory: relatime, as for a file's data, and
	 * before the reply, as there. */
	if (dir) {
		struct timespec now;
		ts_now(&now);
		pthread_rwlock_rdlock(&dir->lock);
		int due = inode_atime_due(s->fs, dir, &now);
		pthread_rwlock_unlock(&dir->lock);
		if (due)
			inode_touch_atime(s->fs, dir);
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	snap_free((struct dsnap *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

void bgafs_ops_readdir(struct fuse_lowlevel_ops *o)
{
	o->opendir = op_opendir;
	o->readdir = op_readdir;
	o->releasedir = op_releasedir;
}
