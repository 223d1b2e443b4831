/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Permissions that FUSE leaves to the file system: the set-user-ID and
 * set-group-ID bits a change of data clears, what a new inode takes from
 * a set-group-ID directory, and POSIX ACLs.
 *
 * ACLs.  With FUSE_CAP_POSIX_ACL the kernel enforces ACLs (it reads them
 * through getxattr and caches them) and leaves the rest to the file system
 * (libfuse's fuse_common.h): storing them as the xattrs
 * system.posix_acl_access and system.posix_acl_default, in the kernel's
 * format (struct posix_acl_xattr_header: a version, then tag, perm, id
 * entries, little-endian); keeping the mode and the access ACL in step
 * both ways (a set ACL gives the mode its bits, a chmod rewrites the
 * ACL's owner, mask or group, and other entries); and giving a new inode
 * its directory's default ACL, in place of the umask.  This follows the
 * kernel's fs/posix_acl.c (posix_acl_equiv_mode, posix_acl_update_mode,
 * __posix_acl_chmod, posix_acl_create_masq), which ext4 uses.  An access
 * ACL that says no more than the mode is not stored, as there.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bgafs.h"

/* ---- who the caller is ---- */

/* The caller's effective capabilities and supplementary groups, from
 * /proc/TID/status (FUSE passes only uid, gid and the thread id).  0, or
 * -1 when the file cannot be read (the caller is gone). */
static int caller_status(fuse_req_t req, uint64_t *capeff, gid_t gid, int *in_group)
{
	char p[64], line[4096];
	snprintf(p, sizeof(p), "/proc/%d/status", (int)fuse_req_ctx(req)->pid);
	FILE *f = fopen(p, "re");
	if (!f)
		return -1;
	int seen = 0;
	*in_group = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;
		if (sscanf(line, "CapEff: %llx", &v) == 1) {
			*capeff = v;
			seen |= 1;
		} else if (!strncmp(line, "Groups:", 7)) {
			char *s = line + 7, *end;
			for (;;) {
				unsigned long g = strtoul(s, &end, 10);
				if (end == s)
					break;
				*in_group |= (gid_t)g == gid;
				s = end;
			}
			seen |= 2;
		}
	}
	fclose(f);
	return seen == 3 ? 0 : -1;
}

#define CAP_FSETID_BIT 4 /* <linux/capability.h> CAP_FSETID */

/* Is the caller in group gid, or privileged (CAP_FSETID)?  The kernel's
 * in_group_or_capable. */
static int in_group_or_capable(fuse_req_t req, gid_t gid)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	uint64_t cap = 0;
	int in = 0;
	if (caller_status(req, &cap, gid, &in))
		return ctx->uid == 0 || ctx->gid == gid; /* gone: its ids are all there is */
	return in || ctx->gid == gid || (cap >> CAP_FSETID_BIT & 1);
}

uint32_t perm_kill_suidgid(fuse_req_t req, const struct inode *ip)
{
	if (!S_ISREG(ip->mode) || !(ip->mode & (S_ISUID | S_ISGID)))
		return 0;
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	uint64_t cap = 0;
	int in = 0;
	int known = !caller_status(req, &cap, ip->gid, &in);
	if (known ? (cap >> CAP_FSETID_BIT & 1) : ctx->uid == 0)
		return 0;
	uint32_t kill = ip->mode & S_ISUID;
	/* setattr_should_drop_sgid: with group execute always; without
	 * it, for a caller outside the file's group */
	if ((ip->mode & S_ISGID) && ((ip->mode & S_IXGRP) || !(in || ctx->gid == ip->gid)))
		kill |= S_ISGID;
	return kill;
}

void perm_changed(struct fs *fs, fuse_ino_t ino)
{
	/* an offset below 0: the attributes only, not the page cache */
	if (fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
}

/* ---- ACLs ---- */

enum { A_USER_OBJ = 1, A_USER = 2, A_GROUP_OBJ = 4, A_GROUP = 8, A_MASK = 0x10, A_OTHER = 0x20 };
#define ACL_VERSION 2u
#define ACL_HDR 4u
#define ACL_ENT 8u

int acl_kind(const char *name)
{
	return !strcmp(name, ACL_ACCESS) ? 1 : !strcmp(name, ACL_DEFAULT) ? 2 : 0;
}

static unsigned ent_tag(const unsigned char *e)
{
	uint16_t v;
	memcpy(&v, e, 2);
	return le16toh(v);
}

static unsigned ent_perm(const unsigned char *e)
{
	uint16_t v;
	memcpy(&v, e + 2, 2);
	return le16toh(v);
}

static void ent_set_perm(unsigned char *e, unsigned perm)
{
	uint16_t v = htole16((uint16_t)perm);
	memcpy(e + 2, &v, 2);
}

/* An ACL in the xattr format that the kernel would accept
 * (posix_acl_valid, less the order of named entries): the number of
 * entries, or -EINVAL. */
static int acl_check(const unsigned char *p, size_t size)
{
	uint32_t ver;
	if (size < ACL_HDR || (size - ACL_HDR) % ACL_ENT)
		return -EINVAL;
	memcpy(&ver, p, 4);
	if (le32toh(ver) != ACL_VERSION)
		return -EINVAL;
	int n = (int)((size - ACL_HDR) / ACL_ENT), uo = 0, go = 0, o = 0, m = 0, named = 0;
	for (int i = 0; i < n; i++) {
		const unsigned char *e = p + ACL_HDR + i * ACL_ENT;
		if (ent_perm(e) & ~7u)
			return -EINVAL;
		switch (ent_tag(e)) {
		case A_USER_OBJ: uo++; break;
		case A_GROUP_OBJ: go++; break;
		case A_OTHER: o++; break;
		case A_MASK: m++; break;
		case A_USER:
		case A_GROUP: named++; break;
		default: return -EINVAL;
		}
	}
	if (uo != 1 || go != 1 || o != 1 || m > 1 || (named && !m))
		return -EINVAL;
	return n;
}

/* The permission bits an access ACL gives the mode, and whether the ACL
 * says more than they do (posix_acl_equiv_mode). */
static uint32_t acl_mode(const unsigned char *p, int n, int *more)
{
	uint32_t u = 0, g = 0, o = 0, m = 0;
	int has_mask = 0;
	*more = 0;
	for (int i = 0; i < n; i++) {
		const unsigned char *e = p + ACL_HDR + i * ACL_ENT;
		unsigned perm = ent_perm(e);
		switch (ent_tag(e)) {
		case A_USER_OBJ: u = perm; break;
		case A_GROUP_OBJ: g = perm; break;
		case A_OTHER: o = perm; break;
		case A_MASK: m = perm; has_mask = 1; *more = 1; break;
		default: *more = 1;
		}
	}
	return u << 6 | (has_mask ? m : g) << 3 | o;
}

/* Rewrite the ACL's owner, group class and other entries from mode
 * (__posix_acl_chmod): the group class is the mask when there is one. */
static void acl_chmod_entries(unsigned char *p, int n, uint32_t mode)
{
	unsigned char *group = NULL, *mask = NULL;
	for (int i = 0; i < n; i++) {
		unsigned char *e = p + ACL_HDR + i * ACL_ENT;
		switch (ent_tag(e)) {
		case A_USER_OBJ: ent_set_perm(e, (mode >> 6) & 7); break;
		case A_GROUP_OBJ: group = e; break;
		case A_MASK: mask = e; break;
		case A_OTHER: ent_set_perm(e, mode & 7); break;
		}
	}
	ent_set_perm(mask ? mask : group, (mode >> 3) & 7);
}

int acl_set_locked(fuse_req_t req, struct inode *ip, int kind, const void *value, size_t size)
{
	int n = acl_check(value, size);
	if (n < 0)
		return n;
	const char *name = kind == 1 ? ACL_ACCESS : ACL_DEFAULT;
	if (kind == 2) {
		if (!S_ISDIR(ip->mode))
			return -EACCES; /* the kernel's answer (set_posix_acl) */
		return xattr_set(&ip->xattrs, name, value, (uint32_t)size, 0);
	}
	int more;
	uint32_t mode = (ip->mode & ~0777u) | acl_mode(value, n, &more);
	/* posix_acl_update_mode: a caller outside the group loses S_ISGID */
	if ((mode & S_ISGID) && !in_group_or_capable(req, ip->gid))
		mode &= ~(uint32_t)S_ISGID;
	int rc = more ? xattr_set(&ip->xattrs, name, value, (uint32_t)size, 0) : xattr_remove(&ip->xattrs, name);
	if (rc && rc != -ENODATA)
		return rc;
	ip->mode = mode;
	return 0;
}

void acl_chmod_locked(struct inode *ip)
{
	const struct xattr *x = xattr_find(&ip->xattrs, ACL_ACCESS);
	int n = x ? acl_check(x->value, x->size) : -EINVAL;
	if (n > 0)
		acl_chmod_entries(x->value, n, ip->mode);
}

static size_t acl_inherit_bytes(const struct inode *dir)
{
	const struct xattr *x = xattr_find(&dir->xattrs, ACL_DEFAULT);
	return x ? 2 * (6 + sizeof(ACL_DEFAULT) + x->size) : 0;
}

/* A new inode ip in dir (dir's lock held, ip not yet visible): with a
 * default ACL in dir, the ACLs it inherits and its mode cut to them; else
 * its mode less umask.  0, -ENOSPC, -ENOMEM (ip may be half done). */
static int acl_inherit_locked(struct inode *ip, const struct inode *dir, uint32_t umask)
{
	const struct xattr *x = xattr_find(&dir->xattrs, ACL_DEFAULT);
	int n = x ? acl_check(x->value, x->size) : -EINVAL;
	if (S_ISLNK(ip->mode))
		return 0;
	if (n < 0) { /* no default ACL: the umask, which the kernel left to us */
		ip->mode &= ~(umask & 0777);
		return 0;
	}
	if (S_ISDIR(ip->mode)) {
		int rc = xattr_set(&ip->xattrs, ACL_DEFAULT, x->value, x->size, 0);
		if (rc)
			return rc;
	}
	/* posix_acl_create_masq: the new access ACL is the default ACL with
	 * each class cut to what the requested mode allows, and the mode cut
	 * to what the ACL allows */
	unsigned char *a = malloc(x->size);
	if (!a)
		return -ENOMEM;
	memcpy(a, x->value, x->size);
	uint32_t mode = ip->mode;
	unsigned char *group = NULL, *mask = NULL;
	int more = 0;
	for (int i = 0; i < n; i++) {
		unsigned char *e = a + ACL_HDR + i * ACL_ENT;
		unsigned perm = ent_perm(e);
		switch (ent_tag(e)) {
		case A_USER_OBJ:
			perm &= (mode >> 6) & 7;
			mode &= (perm << 6) | ~(uint32_t)S_IRWXU;
			ent_set_perm(e, perm);
			break;
		case A_OTHER:
			perm &= mode & 7;
			mode &= perm | ~(uint32_t)S_IRWXO;
			ent_set_perm(e, perm);
			break;
		case A_GROUP_OBJ: group = e; break;
		case A_MASK: mask = e; more = 1; break;
		default: more = 1;
		}
	}
	unsigned char *gc = mask ? mask : group;
	unsigned perm = ent_perm(gc) & ((mode >> 3) & 7);
	mode &= (perm << 3) | ~(uint32_t)S_IRWXG;
	ent_set_perm(gc, perm);
	int rc = more ? xattr_set(&ip->xattrs, ACL_ACCESS, a, x->size, 0) : 0;
	free(a);
	if (!rc)
		ip->mode = mode;
	return rc;
}

/* ---- what a new inode takes from its directory ---- */

size_t perm_inherit_bytes(struct fs *fs, struct inode *dir)
{
	if (!fs->acl)
		return 0;
	pthread_rwlock_rdlock(&dir->lock);
	size_t n = acl_inherit_bytes(dir);
	pthread_rwlock_unlock(&dir->lock);
	return n;
}

int perm_inherit_locked(struct fs *fs, struct inode *ip, const struct inode *dir, uint32_t umask)
{
	/* the kernel's inode_init_owner; the VFS has already cleared S_ISGID
	 * of a file the caller may not give it */
	if (dir->mode & S_ISGID) {
		ip->gid = dir->gid;
		if (S_ISDIR(ip->mode))
			ip->mode |= S_ISGID;
	}
	return fs->acl ? acl_inherit_locked(ip, dir, umask) : 0;
}
