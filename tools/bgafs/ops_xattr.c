/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Extended attribute operations: setxattr, getxattr, listxattr,
 * removexattr.  Namespaces as ext4: user., trusted. and security. are
 * stored, and system.posix_acl_access and system.posix_acl_default when
 * the kernel enforces ACLs (fs->acl; perm.c keeps them and the mode in
 * step); any other name gives EOPNOTSUPP.  Who may touch which namespace
 * (trusted. needs CAP_SYS_ADMIN; user. only on regular files and
 * directories) the kernel checks before the request reaches us, as it
 * does for every file system.
 * The attributes live in the inode's record in the metadata log (table.c
 * writes xattr_put's blob), so a set or remove is one inode_changed().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bgafs.h"

static int bad_xattr_name(const struct fs *fs, const char *name)
{
	if (fs->acl && acl_kind(name))
		return 0;
	static const char *const prefixes[] = {"user.", "trusted.", "security."};
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t n = strlen(prefixes[i]);
		if (!strncmp(name, prefixes[i], n))
			return name[n] ? 0 : -EINVAL;
	}
	return -EOPNOTSUPP;
}

/* setxattr (value non-NULL) and removexattr: a change of the inode, in
 * the running transaction. */
static void change(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size, int flags)
{
	struct fs *fs;
	struct inode *ip = ino_get(req, ino, &fs);
	if (!ip)
		return;
	int rc = bad_xattr_name(fs, name);
	if (!rc && (flags & ~(XA_CREATE | XA_REPLACE)))
		rc = -EINVAL;
	if (!rc && size > BGAFS_XATTR_VALUE)
		rc = -E2BIG;
	/* Room in the log for the inode record's growth (a new name: its
	 * entry header too), before joining, as a create reserves. */
	if (!rc && value)
		rc = meta_reserve(fs, 4 + 6 + strlen(name) + size);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	fs_begin(fs);
	pthread_rwlock_wrlock(&ip->lock);
	int acl = fs->acl ? acl_kind(name) : 0;
	if (!value)
		rc = xattr_remove(&ip->xattrs, name);
	else if (acl)
		rc = acl_set_locked(req, ip, acl, value, size);
	else
		rc = xattr_set(&ip->xattrs, name, value, (uint32_t)size, flags);
	if (!rc) {
		ts_now(&ip->ctime);
		inode_changed(fs, ip);
	}
	pthread_rwlock_unlock(&ip->lock);
	fs_end(fs, !rc);
	fuse_reply_err(req, -rc);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
			int flags)
{
	change(req, ino, name, value ? value : "", size, flags);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct fs *fs;
	struct inode *ip = ino_get(req, ino, &fs);
	if (!ip)
		return;
	int rc = bad_xattr_name(fs, name);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	char *copy = NULL;
	uint32_t len = 0;
	pthread_rwlock_rdlock(&ip->lock);
	const struct xattr *e = xattr_find(&ip->xattrs, name);
	if (!e)
		rc = -ENODATA;
	else if ((len = e->size) && size >= len && !(copy = malloc(len)))
		rc = -ENOMEM;
	else if (copy)
		memcpy(copy, e->value, len);
	pthread_rwlock_unlock(&ip->lock);
	if (rc)
		fuse_reply_err(req, -rc);
	else if (!size)
		fuse_reply_xattr(req, len);
	else if (size < len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, copy, len);
	free(copy);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct fs *fs;
	struct inode *ip = ino_get(req, ino, &fs);
	if (!ip)
		return;
	char *buf = size ? malloc(size) : NULL;
	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_rwlock_rdlock(&ip->lock);
	long n = xattr_list(&ip->xattrs, buf, size);
	pthread_rwlock_unlock(&ip->lock);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else if (!size)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	change(req, ino, name, NULL, 0, 0);
}

void bgafs_ops_xattr(struct fuse_lowlevel_ops *o)
{
	o->setxattr = op_setxattr;
	o->getxattr = op_getxattr;
	o->listxattr = op_listxattr;
	o->removexattr = op_removexattr;
}
