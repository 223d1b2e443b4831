/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bgafs_posix acl: POSIX ACLs through the kernel, which enforces them
 * (FUSE_CAP_POSIX_ACL) while bgafs stores them and keeps the mode in step
 * (perm.c).  The ACLs are written as the kernel's xattr format by hand
 * (no libacl).  Checks, as ext4 behaves:
 *   - an access ACL with a named user: stored as given, the mode's group
 *     bits become the mask; the named user may open what the mode denies
 *   - chmod rewrites the owner, mask and other entries
 *   - an ACL the mode says all of is not stored (ENODATA), its bits are
 *     the mode
 *   - a default ACL: a new file and directory inherit it, cut to the mode
 *     asked for, with no umask; a directory passes it on
 *   - no default ACL: the umask applies
 *   - an owner outside the group who sets an ACL loses S_ISGID
 * and, after a remount, that every ACL and mode is still there.
 * bgafs_test.sh mounts with allow_other (uid 65534 uses the mount).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "posix.h"

enum { U_OBJ = 1, U = 2, G_OBJ = 4, G = 8, MASK = 0x10, OTH = 0x20 };
#define NOBODY 65534

struct acl {
	uint32_t version;
	struct {
		uint16_t tag, perm;
		uint32_t id;
	} e[8];
};

/* An ACL of n entries (tag, perm, id triples, in the kernel's order):
 * its size in bytes. */
static size_t mkacl(struct acl *a, int n, const unsigned *tpi)
{
	a->version = 2;
	for (int i = 0; i < n; i++) {
		a->e[i].tag = (uint16_t)tpi[3 * i];
		a->e[i].perm = (uint16_t)tpi[3 * i + 1];
		a->e[i].id = tpi[3 * i + 2];
	}
	return 4 + 8 * (size_t)n;
}

/* The perm of the entry with tag in p's ACL of kind name, or -1. */
static int acl_perm(const char *p, const char *name, unsigned tag)
{
	struct acl a;
	ssize_t n = getxattr(p, name, &a, sizeof(a));
	for (ssize_t i = 0; n > 4 && i < (n - 4) / 8; i++)
		if (a.e[i].tag == tag)
			return a.e[i].perm;
	return -1;
}

static mode_t mode_of(const char *p)
{
	struct stat st = {0};
	stat(p, &st);
	return st.st_mode & 07777;
}

/* As uid and gid 65534 with no other groups: open DIR/name with flags
 * (0 when it opened, 3 for EACCES), or, with acl non-NULL, set it as its
 * access ACL.  Through descriptors root opened: the directories above
 * DIR may be closed to others. */
static int as_nobody(const char *name, int flags, const struct acl *acl, size_t size)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY), ffd = acl ? openat(dfd, name, O_RDONLY) : -1;
	pid_t pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
			_exit(2);
		if (acl)
			_exit(fsetxattr(ffd, "system.posix_acl_access", acl, size, 0) ? 1 : 0);
		int fd = openat(dfd, name, flags);
		_exit(fd < 0 ? (errno == EACCES ? 3 : 1) : 0);
	}
	int status = -1;
	waitpid(pid, &status, 0);
	close(dfd);
	if (ffd >= 0)
		close(ffd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void case_acl(int verify)
{
	struct acl a;
	size_t n;
	umask(022);
	if (!verify) {
		/* a named user, mask rw- */
		CHECK(put(path("f"), "data") && chmod(path("f"), 0600) == 0, "make f");
		CHECK(as_nobody("f", O_RDWR, NULL, 0) == 3, "uid 65534 opens a 0600 file: not EACCES");
		n = mkacl(&a, 5, (unsigned[]){U_OBJ, 6, 0, U, 6, NOBODY, G_OBJ, 4, 0, MASK, 6, 0, OTH, 0, 0});
		CHECK(setxattr(path("f"), "system.posix_acl_access", &a, n, 0) == 0, "set an access ACL");
		CHECK(mode_of(path("f")) == 0660, "mode after the ACL: %04o, want 0660 (group bits = mask)",
		      (unsigned)mode_of(path("f")));
		CHECK(as_nobody("f", O_RDWR, NULL, 0) == 0, "the named user opens it for writing");
		/* chmod: the mask follows the group bits */
		CHECK(chmod(path("f"), 0640) == 0, "chmod 0640");
		CHECK(acl_perm(path("f"), "system.posix_acl_access", MASK) == 4 &&
			      acl_perm(path("f"), "system.posix_acl_access", U) == 6 &&
			      acl_perm(path("f"), "system.posix_acl_access", G_OBJ) == 4,
		      "after chmod 0640: mask %d (want 4), named user %d (6), group %d (4)",
		      acl_perm(path("f"), "system.posix_acl_access", MASK), acl_perm(path("f"), "system.posix_acl_access", U),
		      acl_perm(path("f"), "system.posix_acl_access", G_OBJ));
		CHECK(as_nobody("f", O_RDWR, NULL, 0) == 3, "the mask r-- stops the named user's write");
		CHECK(as_nobody("f", O_RDONLY, NULL, 0) == 0, "and lets it read");

		/* an ACL the mode says all of */
		CHECK(put(path("eq"), "") && chmod(path("eq"), 0600) == 0, "make eq");
		n = mkacl(&a, 3, (unsigned[]){U_OBJ, 7, 0, G_OBJ, 5, 0, OTH, 1, 0});
		CHECK(setxattr(path("eq"), "system.posix_acl_access", &a, n, 0) == 0, "set a minimal ACL");
		CHECK(mode_of(path("eq")) == 0751, "minimal ACL's mode %04o, want 0751", (unsigned)mode_of(path("eq")));

		/* default ACL inheritance, no umask */
		CHECK(mkdir(path("d"), 0755) == 0, "mkdir d");
		n = mkacl(&a, 5, (unsigned[]){U_OBJ, 7, 0, U, 7, NOBODY, G_OBJ, 5, 0, MASK, 7, 0, OTH, 0, 0});
		CHECK(setxattr(path("d"), "system.posix_acl_default", &a, n, 0) == 0, "set a default ACL");
		int fd = open(path("d/new"), O_CREAT | O_WRONLY, 0666);
		CHECK(fd >= 0, "create in d");
		close(fd);
		CHECK(mkdir(path("d/sub"), 0777) == 0, "mkdir in d");
		CHECK(put(path("plain"), "") , "create outside d");
		/* the owner in d/sub/x: a directory passes its default ACL on */
		CHECK(put(path("d/sub/x"), ""), "create two deep");
		CHECK_ERR(setxattr(path("f"), "system.posix_acl_default", &a, n, 0), EACCES); /* not a directory */

		/* S_ISGID: an owner outside the group who sets an ACL loses it */
		CHECK(put(path("sg"), "") && chown(path("sg"), NOBODY, 0) == 0 && chmod(path("sg"), 02770) == 0, "make sg");
		n = mkacl(&a, 5, (unsigned[]){U_OBJ, 7, 0, U, 7, 1, G_OBJ, 7, 0, MASK, 7, 0, OTH, 0, 0});
		CHECK(as_nobody("sg", 0, &a, n) == 0, "the owner sets an ACL");
		CHECK(mode_of(path("sg")) == 0770, "mode %04o, want 0770 (S_ISGID cleared)", (unsigned)mode_of(path("sg")));
		sync_path(dir);
	}
	char v[64];
	CHECK(mode_of(path("f")) == 0640 && acl_perm(path("f"), "system.posix_acl_access", U) == 6, "f%s",
	      verify ? " after a remount" : "");
	CHECK(mode_of(path("eq")) == 0751, "eq's mode %04o", (unsigned)mode_of(path("eq")));
	CHECK_ERR(getxattr(path("eq"), "system.posix_acl_access", v, sizeof(v)), ENODATA);
	CHECK(acl_perm(path("d"), "system.posix_acl_default", U) == 7, "d's default ACL");
	/* 0666 cut by the default ACL (u::rwx g::r-x mask rwx o::---): rw- for
	 * the owner, the mask rw- (the group class), o::--- */
	CHECK(mode_of(path("d/new")) == 0660, "d/new's mode %04o, want 0660 (no umask)", (unsigned)mode_of(path("d/new")));
	CHECK(acl_perm(path("d/new"), "system.posix_acl_access", U) == 7 &&
		      acl_perm(path("d/new"), "system.posix_acl_access", MASK) == 6,
	      "d/new's access ACL: named user %d (7), mask %d (6)", acl_perm(path("d/new"), "system.posix_acl_access", U),
	      acl_perm(path("d/new"), "system.posix_acl_access", MASK));
	CHECK_ERR(getxattr(path("d/new"), "system.posix_acl_default", v, sizeof(v)), ENODATA);
	CHECK(mode_of(path("d/sub")) == 0770, "d/sub's mode %04o, want 0770", (unsigned)mode_of(path("d/sub")));
	CHECK(acl_perm(path("d/sub"), "system.posix_acl_default", U) == 7, "d/sub inherits the default ACL");
	CHECK(acl_perm(path("d/sub/x"), "system.posix_acl_access", U) == 7, "d/sub/x inherits it in turn");
	CHECK(mode_of(path("plain")) == 0644, "a file outside d: %04o, want 0644 (umask 022)",
	      (unsigned)mode_of(path("plain")));
	CHECK(mode_of(path("sg")) == 0770, "sg's mode %04o", (unsigned)mode_of(path("sg")));
}
