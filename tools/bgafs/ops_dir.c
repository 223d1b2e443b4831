/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Namespace operations: lookup, forget, getattr, setattr, create, mkdir,
 * mknod, symlink, readlink, unlink, rmdir, rename (NOREPLACE, EXCHANGE),
 * link, fsyncdir, statfs (the listing is ops_readdir.c's).
 *
 * Each takes the locks of the directories it changes (and then of the
 * inodes it names) for the few memory operations it does; nothing waits on
 * I/O under a directory lock.  Renames also hold fs->rename_lock so the
 * parent chain they walk to order two directory locks stays still.
 */
#include <errno.h>
#include <linux/fs.h> /* RENAME_NOREPLACE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include "bgafs.h"

#define TIMEOUT 1.0 /* attribute and entry cache, seconds */

void fill_stat(const struct inode *ip, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ip->ino;
	st->st_mode = ip->mode;
	st->st_nlink = ip->nlink;
	st->st_uid = ip->uid;
	st->st_gid = ip->gid;
	st->st_size = S_ISDIR(ip->mode) ? BGAFS_BLOCK : (off_t)ip->size;
	st->st_blocks = (blkcnt_t)(ip->map.blocks * (BGAFS_BLOCK / 512));
	st->st_blksize = BGAFS_BLOCK;
	st->st_atim = ip->atime;
	st->st_mtim = ip->mtime;
	st->st_ctim = ip->ctime;
	st->st_rdev = ip->rdev;
}

static void entry_of(struct inode *ip, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = ip->ino;
	e->attr_timeout = e->entry_timeout = TIMEOUT;
	fill_stat(ip, &e->attr);
}

static int bad_name(const char *name)
{
	size_t len = strlen(name);
	return !len ? -EINVAL : len > BGAFS_NAME_MAX ? -ENAMETOOLONG : 0;
}

static void touch_dir(struct inode *dir)
{
	ts_now(&dir->mtime);
	dir->ctime = dir->mtime;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs;
	struct inode *dir = ino_get(req, parent, &fs), *ip = NULL;
	if (!dir)
		return;
	int rc = bad_name(name);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	pthread_rwlock_rdlock(&dir->lock);
	if (!S_ISDIR(dir->mode)) {
		rc = -ENOTDIR;
	} else {
		struct dentry *d = dir_find(&dir->dir, name, strlen(name));
		/* Counted under the directory's lock: an entry still names it,
		 * so it cannot be dropped meanwhile. */
		if (d && (ip = itab_get(&fs->itab, d->ino)))
			atomic_fetch_add(&ip->nlookup, 1);
	}
	pthread_rwlock_unlock(&dir->lock);
	struct fuse_entry_param e;
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	if (!ip) { /* a negative entry the kernel may cache */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = TIMEOUT;
		fuse_reply_entry(req, &e);
		return;
	}
	pthread_rwlock_rdlock(&ip->lock);
	entry_of(ip, &e);
	pthread_rwlock_unlock(&ip->lock);
	fuse_reply_entry(req, &e);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forget_one(fuse_req_userdata(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		forget_one(fuse_req_userdata(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	struct fs *fs;
	struct inode *ip = ino_get(req, ino, &fs);
	if (!ip)
		return;
	struct stat st;
	pthread_rwlock_rdlock(&ip->lock);
	fill_stat(ip, &st);
	pthread_rwlock_unlock(&ip->lock);
	fuse_reply_attr(req, &st, TIMEOUT);
}

static void set_time(struct timespec *dst, const struct timespec *src, int now)
{
	if (now) {
		ts_now(dst);
	} else {
		*dst = *src;
		ts_clamp(dst);
	}
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	(void)fi;
	struct fs *fs;
	struct inode *ip = ino_get(req, ino, &fs);
	if (!ip)
		return;
	int rc = 0;
	fs_begin(fs);
	pthread_rwlock_wrlock(&ip->lock);
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (S_ISDIR(ip->mode))
			rc = -EISDIR;
		else if (attr->st_size < 0)
			rc = -EINVAL;
		else
			rc = inode_truncate_locked(fs, ip, (uint64_t)attr->st_size);
	}
	if (!rc) {
		if (to_set & FUSE_SET_ATTR_MODE)
			ip->mode = (ip->mode & S_IFMT) | (attr->st_mode & 07777);
		/* a truncate clears set-ID bits (the kernel sends the mode it
		 * computed beside the size: perm_kill_suidgid adds the rest) */
		if (to_set & FUSE_SET_ATTR_SIZE)
			ip->mode &= ~perm_kill_suidgid(req, ip);
		if ((to_set & FUSE_SET_ATTR_MODE) && fs->acl)
			acl_chmod_locked(ip);
		if (to_set & FUSE_SET_ATTR_UID)
			ip->uid = attr->st_uid;
		if (to_set & FUSE_SET_ATTR_GID)
			ip->gid = attr->st_gid;
		if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW))
			set_time(&ip->atime, &attr->st_atim, to_set & FUSE_SET_ATTR_ATIME_NOW);
		if (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW))
			set_time(&ip->mtime, &attr->st_mtim, to_set & FUSE_SET_ATTR_MTIME_NOW);
		if (to_set & FUSE_SET_ATTR_CTIME) {
			ip->ctime = attr->st_ctim;
			ts_clamp(&ip->ctime);
		} else
			ts_now(&ip->ctime);
		inode_changed(fs, ip);
	}
	struct stat st;
	fill_stat(ip, &st);
	pthread_rwlock_unlock(&ip->lock);
	fs_end(fs, 1);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, TIMEOUT);
}

/* Link a fresh inode into dir under name: create and mkdir. */
static int make_node(struct fs *fs, fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     const char *link, dev_t rdev, struct inode **out)
{
	int rc = bad_name(name);
	if (rc)
		return rc;
	struct inode *dir = itab_get(&fs->itab, parent);
	if (!dir)
		return -ENOENT;
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct inode *ip = inode_new(mode, ctx->uid, ctx->gid);
	if (!ip)
		return -ENOMEM;
	if (S_ISREG(mode) && (rc = bga_rec_rsv_open(fs->rec, fs->vol, &ip->rsv))) {
		inode_free(fs->rec, ip);
		return rc;
	}
	if (link) {
		if (!(ip->link = strdup(link))) {
			inode_free(fs->rec, ip);
			return -ENOMEM;
		}
		ip->size = strlen(link);
	}
	if (S_ISCHR(mode) || S_ISBLK(mode))
		ip->rdev = rdev; /* character and block devices only */
	ip->parent = parent;
	atomic_store(&ip->nlookup, 1);
	size_t len = strlen(name);
	/* Room in the metadata log first, or fail here (not at the commit);
	 * what the inode may inherit included. */
	if ((rc = meta_reserve(fs, table_bytes_new(len, link ? strlen(link) : 0) + perm_inherit_bytes(fs, dir)))) {
		inode_free(fs->rec, ip);
		return rc;
	}
	fs_begin(fs);
	inode_changed(fs, ip);
	pthread_rwlock_wrlock(&dir->lock);
	if (!S_ISDIR(dir->mode))
		rc = -ENOTDIR;
	else if (!dir->nlink)
		rc = -ENOENT; /* removed while the kernel raced us here */
	else if (dir_find(&dir->dir, name, len))
		rc = -EEXIST;
	else if (!(rc = perm_inherit_locked(fs, ip, dir, ctx->umask)) && !(rc = itab_insert(&fs->itab, ip)) &&
		 (rc = dir_add(&dir->dir, name, len, ip->ino)))
		itab_remove(&fs->itab, ip->ino);
	if (!rc) {
		dentry_changed(fs, dir, name, len);
		if (S_ISDIR(mode))
			dir->nlink++;
		touch_dir(dir);
		inode_changed(fs, dir);
	}
	pthread_rwlock_unlock(&dir->lock);
	fs_end(fs, !rc);
	if (rc) {
		inode_free(fs->rec, ip);
		return rc;
	}
	*out = ip;
	return 0;
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *ip;
	int rc = make_node(fs, req, parent, name, S_IFREG | (mode & 07777), NULL, 0, &ip);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	struct fuse_entry_param e;
	pthread_rwlock_wrlock(&ip->lock);
	ip->nopen++;
	entry_of(ip, &e);
	pthread_rwlock_unlock(&ip->lock);
	fi->keep_cache = 1;
	fuse_reply_create(req, &e, fi);
}

/* The reply to mkdir, mknod and symlink: the new inode, or rc. */
static void reply_node(fuse_req_t req, int rc, struct inode *ip)
{
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	struct fuse_entry_param e;
	pthread_rwlock_rdlock(&ip->lock);
	entry_of(ip, &e);
	pthread_rwlock_unlock(&ip->lock);
	fuse_reply_entry(req, &e);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *ip;
	int rc = make_node(fs, req, parent, name, S_IFDIR | (mode & 07777), NULL, 0, &ip);
	reply_node(req, rc, ip);
}

/* Regular files, FIFOs, sockets and device nodes.  The kernel checks the
 * type and who may make a device (CAP_MKNOD) before asking; opens of the
 * special files never reach bgafs (the kernel serves them itself). */
static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *ip = NULL;
	mode_t type = mode & S_IFMT;
	int rc = -EINVAL;
	if (type == S_IFREG || type == S_IFIFO || type == S_IFSOCK || type == S_IFCHR || type == S_IFBLK)
		rc = make_node(fs, req, parent, name, type | (mode & 07777), NULL, rdev, &ip);
	reply_node(req, rc, ip);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *ip;
	int rc = strlen(link) > 4096 ? -ENAMETOOLONG : make_node(fs, req, parent, name, S_IFLNK | 0777, link, 0, &ip);
	reply_node(req, rc, ip);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct fs *fs;
	struct inode *ip = ino_get(req, ino, &fs);
	if (!ip)
		return;
	pthread_rwlock_rdlock(&ip->lock);
	int islnk = S_ISLNK(ip->mode);
	char *link = islnk ? strdup(ip->link) : NULL;
	pthread_rwlock_unlock(&ip->lock);
	if (link)
		fuse_reply_readlink(req, link);
	else
		fuse_reply_err(req, islnk ? ENOMEM : EINVAL);
	free(link);
}

/* unlink and rmdir */
static void remove_entry(fuse_req_t req, fuse_ino_t parent, const char *name, int isdir)
{
	struct fs *fs;
	struct inode *dir = ino_get(req, parent, &fs);
	if (!dir)
		return;
	int rc = bad_name(name);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	size_t len = strlen(name);
	struct inode *ip = NULL;
	fs_begin(fs);
	pthread_rwlock_wrlock(&dir->lock);
	struct dentry *d = S_ISDIR(dir->mode) ? dir_find(&dir->dir, name, len) : NULL;
	if (!S_ISDIR(dir->mode))
		rc = -ENOTDIR;
	else if (!d || !(ip = itab_get(&fs->itab, d->ino)))
		rc = -ENOENT;
	if (ip) {
		pthread_rwlock_wrlock(&ip->lock);
		if (isdir && !S_ISDIR(ip->mode))
			rc = -ENOTDIR;
		else if (!isdir && S_ISDIR(ip->mode))
			rc = -EISDIR;
		else if (isdir && ip->dir.count)
			rc = -ENOTEMPTY;
		else {
			dir_remove(&dir->dir, name, len);
			dentry_changed(fs, dir, name, len);
			touch_dir(dir);
			ip->ctime = dir->mtime;
			inode_changed(fs, dir);
			inode_changed(fs, ip);
			if (isdir) {
				ip->nlink = 0;
				dir->nlink--;
			} else {
				ip->nlink--;
			}
		}
	}
	pthread_rwlock_unlock(&dir->lock);
	if (ip)
		inode_put_locked(fs, ip); /* frees the blocks now when it is not open */
	fs_end(fs, !rc);
	fuse_reply_err(req, -rc);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, 0);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_entry(req, parent, name, 1);
}

/* Is directory a an ancestor of (or equal to) b?  rename_lock held. */
static int is_ancestor(struct fs *fs, uint64_t a, uint64_t b)
{
	for (int depth = 0; depth < 4096; depth++) {
		if (b == a)
			return 1;
		if (b == BGAFS_ROOT)
			return 0;
		struct inode *ip = itab_get(&fs->itab, b);
		if (!ip)
			return 0;
		b = ip->parent;
	}
	return 0;
}

/* Lock two inodes that are entries of locked directories: neither is an
 * ancestor of the other here, so ino order is a safe order for them. */
static void lock_pair(struct inode *a, struct inode *b)
{
	if (b && b->ino < a->ino) {
		struct inode *t = a;
		a = b;
		b = t;
	}
	pthread_rwlock_wrlock(&a->lock);
	if (b)
		pthread_rwlock_wrlock(&b->lock);
}

/* A directory moves from parent `from` to parent `to`. */
static void move_dir(struct inode *ip, struct inode *from, struct inode *to)
{
	if (!S_ISDIR(ip->mode) || from == to)
		return;
	ip->parent = to->ino;
	from->nlink--;
	to->nlink++;
}

/* RENAME_EXCHANGE: the entries sd (in p, naming s) and dd (in np, naming
 * d) swap inodes, atomically, whatever their types.  Both directories are
 * locked for writing. */
static int exchange(struct fs *fs, struct inode *p, struct dentry *sd, struct inode *s, struct inode *np,
		    struct dentry *dd, struct inode *d)
{
	if (!d)
		return -ENOENT;
	if (d == s)
		return 0;
	/* A directory never moves under itself (s was checked already). */
	if (S_ISDIR(d->mode) && is_ancestor(fs, d->ino, p->ino))
		return -EINVAL;
	lock_pair(s, d);
	sd->ino = d->ino;
	dd->ino = s->ino;
	dentry_changed(fs, p, sd->name, sd->len);
	dentry_changed(fs, np, dd->name, dd->len);
	move_dir(s, p, np);
	move_dir(d, np, p);
	touch_dir(p);
	touch_dir(np);
	s->ctime = d->ctime = p->mtime;
	inode_changed(fs, p);
	inode_changed(fs, np);
	inode_changed(fs, s);
	inode_changed(fs, d);
	pthread_rwlock_unlock(&s->lock);
	pthread_rwlock_unlock(&d->lock);
	return 0;
}

static int do_rename(struct fs *fs, struct inode *p, const char *name, struct inode *np, const char *newname,
		     unsigned flags, struct inode **victim)
{
	size_t len = strlen(name), newlen = strlen(newname);
	if (!S_ISDIR(p->mode) || !S_ISDIR(np->mode))
		return -ENOTDIR;
	struct dentry *sd = dir_find(&p->dir, name, len), *dd = dir_find(&np->dir, newname, newlen);
	struct inode *s = sd ? itab_get(&fs->itab, sd->ino) : NULL;
	if (!s)
		return -ENOENT;
	if (dd && dd->ino == sd->ino)
		return 0; /* two links to one inode: POSIX says do nothing */
	if (S_ISDIR(s->mode) && is_ancestor(fs, s->ino, np->ino))
		return -EINVAL;
	struct inode *d = dd ? itab_get(&fs->itab, dd->ino) : NULL;
	if (flags & RENAME_EXCHANGE)
		return exchange(fs, p, sd, s, np, dd, d);
	if (d) {
		if (d == p)
			return -ENOTEMPTY; /* it holds s */
		if (flags & RENAME_NOREPLACE)
			return -EEXIST;
		if (S_ISDIR(s->mode) && !S_ISDIR(d->mode))
			return -ENOTDIR;
		if (!S_ISDIR(s->mode) && S_ISDIR(d->mode))
			return -EISDIR;
	}
	lock_pair(s, d);
	int rc = 0;
	if (d && S_ISDIR(d->mode) && d->dir.count)
		rc = -ENOTEMPTY;
	else if (dd)
		dd->ino = s->ino; /* replace in place: no allocation can fail */
	else
		rc = dir_add(&np->dir, newname, newlen, s->ino);
	if (!rc) {
		dentry_changed(fs, np, newname, newlen);
		dir_remove(&p->dir, name, len);
		dentry_changed(fs, p, name, len);
		if (d) {
			if (S_ISDIR(d->mode)) {
				d->nlink = 0;
				np->nlink--;
			} else {
				d->nlink--;
			}
			ts_now(&d->ctime);
		}
		move_dir(s, p, np);
		touch_dir(p);
		touch_dir(np);
		s->ctime = p->mtime;
		inode_changed(fs, p);
		inode_changed(fs, np);
		inode_changed(fs, s);
		if (d)
			inode_changed(fs, d);
	}
	pthread_rwlock_unlock(&s->lock);
	if (d && rc == 0)
		*victim = d; /* still locked: the caller puts it */
	else if (d)
		pthread_rwlock_unlock(&d->lock);
	return rc;
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct fs *fs = fuse_req_userdata(req);
	int rc = bad_name(name);
	if (!rc)
		rc = bad_name(newname);
	if (!rc && ((flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) ||
		    (flags & (RENAME_NOREPLACE | RENAME_EXCHANGE)) == (RENAME_NOREPLACE | RENAME_EXCHANGE)))
		rc = -EINVAL; /* RENAME_WHITEOUT (overlayfs's) is not supported */
	struct inode *p = itab_get(&fs->itab, parent), *np = itab_get(&fs->itab, newparent);
	if (!rc && (!p || !np))
		rc = -ENOENT;
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	struct inode *victim = NULL;
	if ((rc = meta_reserve(fs, table_bytes_name(strlen(newname))))) {
		fuse_reply_err(req, -rc);
		return;
	}
	fs_begin(fs);
	pthread_mutex_lock(&fs->rename_lock);
	/* Ancestors before descendants, as every other op locks parent
	 * before child; unrelated directories by ino. */
	struct inode *a = p, *b = np;
	if (p != np && (is_ancestor(fs, np->ino, p->ino) || (!is_ancestor(fs, p->ino, np->ino) && np->ino < p->ino)))
		a = np, b = p;
	pthread_rwlock_wrlock(&a->lock);
	if (b != a)
		pthread_rwlock_wrlock(&b->lock);
	rc = do_rename(fs, p, name, np, newname, flags, &victim);
	if (b != a)
		pthread_rwlock_unlock(&b->lock);
	pthread_rwlock_unlock(&a->lock);
	pthread_mutex_unlock(&fs->rename_lock);
	if (victim)
		inode_put_locked(fs, victim);
	fs_end(fs, !rc);
	fuse_reply_err(req, -rc);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct fs *fs;
	struct inode *ip = ino_get(req, ino, &fs), *dir;
	if (!ip)
		return;
	int rc = bad_name(newname);
	if (!rc && !(dir = itab_get(&fs->itab, newparent)))
		rc = -ENOENT;
	if (!rc && S_ISDIR(ip->mode))
		rc = -EPERM;
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	size_t len = strlen(newname);
	struct fuse_entry_param e;
	if ((rc = meta_reserve(fs, table_bytes_name(len)))) {
		fuse_reply_err(req, -rc);
		return;
	}
	fs_begin(fs);
	pthread_rwlock_wrlock(&dir->lock);
	pthread_rwlock_wrlock(&ip->lock);
	if (!S_ISDIR(dir->mode))
		rc = -ENOTDIR;
	else if (!dir->nlink || !ip->nlink)
		rc = -ENOENT;
	else if (dir_find(&dir->dir, newname, len))
		rc = -EEXIST;
	else if (!(rc = dir_add(&dir->dir, newname, len, ip->ino))) {
		dentry_changed(fs, dir, newname, len);
		ip->nlink++;
		touch_dir(dir);
		ip->ctime = dir->mtime;
		inode_changed(fs, dir);
		inode_changed(fs, ip);
		atomic_fetch_add(&ip->nlookup, 1);
		entry_of(ip, &e);
	}
	pthread_rwlock_unlock(&ip->lock);
	pthread_rwlock_unlock(&dir->lock);
	fs_end(fs, !rc);
	if (rc)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_entry(req, &e);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	(void)fi;
	struct fs *fs;
	struct inode *dir = ino_get(req, ino, &fs);
	if (dir)
		fuse_reply_err(req, -inode_sync(fs, dir));
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	(void)ino;
	struct fs *fs = fuse_req_userdata(req);
	struct statvfs sv = {0};
	/* The metadata log is overhead, as ext4's journal: not in the size. */
	uint64_t total = fs->nblocks - fs->first_data_block - fs->log_blocks;
	uint64_t freeb = bga_free_exact(fs->vol); /* one sum of the counter; the estimate is a batch off */
	if (freeb > total)
		freeb = total;
	sv.f_bsize = sv.f_frsize = BGAFS_BLOCK;
	sv.f_blocks = total;
	sv.f_bfree = freeb;
	sv.f_bavail = freeb; /* the metadata log is allocated already */
	sv.f_files = 1ull << 32;
	sv.f_ffree = sv.f_files - itab_count(&fs->itab);
	sv.f_namemax = BGAFS_NAME_MAX;
	fuse_reply_statfs(req, &sv);
}

void bgafs_ops_dir(struct fuse_lowlevel_ops *o)
{
	o->lookup = op_lookup;
	o->forget = op_forget;
	o->forget_multi = op_forget_multi;
	o->getattr = op_getattr;
	o->setattr = op_setattr;
	o->create = op_create;
	o->mkdir = op_mkdir;
	o->mknod = op_mknod;
	o->symlink = op_symlink;
	o->readlink = op_readlink;
	o->unlink = op_unlink;
	o->rmdir = op_rmdir;
	o->rename = op_rename;
	o->link = op_link;
	o->fsyncdir = op_fsyncdir;
	o->statfs = op_statfs;
}
