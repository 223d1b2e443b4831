/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bgafs_posix CASE DIR [verify]: the POSIX features of bgafs, checked
 * through the kernel, one case per feature, on a mounted bgafs at DIR
 * (bgafs_test.sh mounts it).  Every call's result and errno is checked
 * against what ext4 does.  With "verify", a case checks instead what must
 * have survived an unmount and a remount of what the first run made.
 *
 *   falloc    PUNCH_HOLE and ZERO_RANGE: contents, st_blocks, errnos, and
 *             a seeded run of writes, punches, zero ranges and truncates
 *             against an in-memory model, every byte read back
 *   xattr     set/get/list/remove with XATTR_CREATE/REPLACE, ENODATA,
 *             ERANGE, E2BIG, ENOSPC, EOPNOTSUPP, ctime
 *   special   mknod: FIFOs (data through one), sockets (bind), character
 *             and block devices (type, rdev), EEXIST
 *   exchange  renameat2(RENAME_EXCHANGE): files, a file with a directory
 *             across parents (link counts, ".."), EINVAL, ENOENT
 *   atime     relatime: a read moves an atime older than mtime or ctime,
 *             a second read leaves it; a listing does it for a directory
 *
 * and posix_meta.c's: times, sgid, readdir, noatime, strictatime, killpriv; posix_acl.c's acl.
 *
 * Exit 0 pass, 1 fail.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include "posix.h"

int failures;
const char *dir;

char *path(const char *fmt, ...)
{
	static char buf[4][4096];
	static int k;
	char name[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	char *b = buf[k++ & 3];
	snprintf(b, 4096, "%s/%s", dir, name);
	return b;
}

static void pattern(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (unsigned char)(seed >> 16);
	}
}

static void write_all(int fd, const void *p, size_t n, off_t off)
{
	CHECK(pwrite(fd, p, n, off) == (ssize_t)n, "pwrite %zu at %lld", n, (long long)off);
}

void sync_path(const char *p)
{
	int fd = open(p, O_RDONLY | O_NONBLOCK);
	CHECK(fd >= 0 && fsync(fd) == 0, "fsync %s", p);
	close(fd);
}

/* ---- falloc ---- */

#define FSZ (1u << 20) /* the model file */

static int same_as(int fd, const unsigned char *want, size_t n)
{
	unsigned char *got = malloc(n + 1);
	ssize_t r = pread(fd, got, n + 1, 0);
	int ok = r == (ssize_t)n && !memcmp(got, want, n);
	if (!ok && r >= 0)
		for (size_t i = 0; i < n && i < (size_t)r; i++)
			if (got[i] != want[i]) {
				fprintf(stderr, "  first difference at byte %zu: 0x%02x, want 0x%02x (read %zd of %zu)\n",
					i, got[i], want[i], r, n);
				break;
			}
	free(got);
	return ok;
}

static long blocks_of(int fd)
{
	struct stat st;
	return fstat(fd, &st) ? -1 : (long)st.st_blocks;
}

static void case_falloc(int verify)
{
	unsigned char *m = calloc(1, FSZ), *buf = malloc(FSZ);
	if (verify) { /* what the first run left: the fixed file and the model file */
		int fd = open(path("punched"), O_RDONLY);
		pattern(m, 40960, 1);
		memset(m + 5000, 0, 20000);
		CHECK(fd >= 0 && same_as(fd, m, 40960), "punched file after a remount");
		CHECK(blocks_of(fd) == 6 * 8, "punched file: %ld sectors after a remount, want 48", blocks_of(fd));
		close(fd);
		free(m);
		free(buf);
		return;
	}
	/* A hole punched in the middle: the whole blocks inside go, the edges
	 * are zeroed, the size stays. */
	int fd = open(path("punched"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	pattern(m, 40960, 1);
	write_all(fd, m, 40960, 0);
	CHECK(blocks_of(fd) == 10 * 8, "written: %ld sectors", blocks_of(fd));
	CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 5000, 20000) == 0, "punch");
	memset(m + 5000, 0, 20000);
	CHECK(same_as(fd, m, 40960), "punched contents");
	/* blocks 2..5 lie wholly inside [5000, 25000) */
	CHECK(blocks_of(fd) == 6 * 8, "punched: %ld sectors, want 48", blocks_of(fd));
	CHECK_ERR(fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 4096), EOPNOTSUPP); /* needs KEEP_SIZE */
	CHECK_ERR(fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, 4096), EOPNOTSUPP);
	CHECK_ERR(fallocate(fd, FALLOC_FL_INSERT_RANGE, 0, 4096), EOPNOTSUPP);
	CHECK_ERR(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 0), EINVAL);
	/* punching past the end of file changes nothing there */
	CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 1 << 20, 4096) == 0, "punch past EOF");
	CHECK(same_as(fd, m, 40960), "contents after a punch past EOF");
	fsync(fd);
	close(fd);

	/* ZERO_RANGE: zeros in place, blocks kept (and allocated where it was
	 * a hole); without KEEP_SIZE it extends the file. */
	fd = open(path("zeroed"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	pattern(m, 40960, 2);
	write_all(fd, m, 40960, 0);
	CHECK(fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 100, 9000) == 0, "zero range");
	memset(m + 100, 0, 9000);
	CHECK(same_as(fd, m, 40960), "zeroed contents");
	CHECK(blocks_of(fd) == 10 * 8, "zero range keeps the blocks: %ld sectors", blocks_of(fd));
	CHECK(fallocate(fd, FALLOC_FL_ZERO_RANGE, 36864, 16384) == 0, "zero range past EOF");
	memset(m + 36864, 0, 16384);
	struct stat st;
	fstat(fd, &st);
	CHECK(st.st_size == 36864 + 16384, "zero range extended the size to %lld", (long long)st.st_size);
	CHECK(st.st_blocks == 13 * 8, "zero range past EOF allocates: %ld sectors, want 104", (long)st.st_blocks);
	CHECK(same_as(fd, m, 36864 + 16384), "contents after a zero range past EOF");
	close(fd);

	/* A seeded run against the model: writes, punches, zero ranges (both
	 * sizes), truncates; everything read back after each step.  The model
	 * holds zeros past the end of file, as a later extension must read. */
	fd = open(path("model"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	memset(m, 0, FSZ);
	size_t size = 0;
	unsigned seed = 42;
	for (int step = 0; step < 600 && !failures; step++) {
		seed = seed * 1103515245u + 12345u;
		unsigned op = (seed >> 16) % 8;
		seed = seed * 1103515245u + 12345u;
		size_t off = (seed >> 8) % (FSZ - 1);
		seed = seed * 1103515245u + 12345u;
		size_t len = 1 + (seed >> 8) % (op < 3 ? 65536 : 200000);
		if (off + len > FSZ)
			len = FSZ - off;
		if (op < 3) {
			pattern(buf, len, seed);
			write_all(fd, buf, len, (off_t)off);
			memcpy(m + off, buf, len);
			if (off + len > size)
				size = off + len;
		} else if (op < 5) {
			CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0,
			      "step %d: punch %zu+%zu", step, off, len);
			memset(m + off, 0, len); /* past the end of file it holds zeros already */
		} else if (op < 7) {
			int keep = op == 5;
			CHECK(fallocate(fd, FALLOC_FL_ZERO_RANGE | (keep ? FALLOC_FL_KEEP_SIZE : 0), (off_t)off,
					(off_t)len) == 0,
			      "step %d: zero range %zu+%zu", step, off, len);
			memset(m + off, 0, len);
			if (!keep && off + len > size)
				size = off + len;
		} else {
			CHECK(ftruncate(fd, (off_t)off) == 0, "step %d: truncate %zu", step, off);
			if (off < size)
				memset(m + off, 0, size - off);
			size = off;
		}
		CHECK(same_as(fd, m, size), "step %d (op %u at %zu+%zu): contents differ from the model", step, op,
		      off, len);
	}
	fsync(fd);
	close(fd);
	free(m);
	free(buf);
}

/* ---- xattr ---- */

static void case_xattr(int verify)
{
	char *f = path("xa");
	char val[256];
	if (verify) {
		CHECK(getxattr(f, "user.colour", val, sizeof(val)) == 4 && !memcmp(val, "blue", 4),
		      "user.colour after a remount");
		CHECK(getxattr(f, "user.empty", val, sizeof(val)) == 0, "empty value after a remount");
		CHECK_ERR(getxattr(f, "user.gone", val, sizeof(val)), ENODATA);
		CHECK(listxattr(f, val, sizeof(val)) == (ssize_t)sizeof("user.colour") + (ssize_t)sizeof("user.empty"),
		      "list after a remount");
		return;
	}
	int fd = open(f, O_RDWR | O_CREAT | O_TRUNC, 0644);
	close(fd);
	CHECK_ERR(getxattr(f, "user.colour", val, sizeof(val)), ENODATA);
	CHECK(listxattr(f, NULL, 0) == 0, "an empty list");
	struct stat before, after;
	stat(f, &before);
	usleep(20000);
	CHECK(setxattr(f, "user.colour", "red", 3, XATTR_CREATE) == 0, "create");
	stat(f, &after);
	CHECK(after.st_ctim.tv_sec > before.st_ctim.tv_sec ||
		      (after.st_ctim.tv_sec == before.st_ctim.tv_sec && after.st_ctim.tv_nsec > before.st_ctim.tv_nsec),
	      "setxattr moves ctime");
	CHECK_ERR(setxattr(f, "user.colour", "green", 5, XATTR_CREATE), EEXIST);
	CHECK_ERR(setxattr(f, "user.nothere", "x", 1, XATTR_REPLACE), ENODATA);
	CHECK(setxattr(f, "user.colour", "blue", 4, XATTR_REPLACE) == 0, "replace");
	CHECK(getxattr(f, "user.colour", NULL, 0) == 4, "size query");
	CHECK_ERR(getxattr(f, "user.colour", val, 2), ERANGE);
	memset(val, 0, sizeof(val));
	CHECK(getxattr(f, "user.colour", val, sizeof(val)) == 4 && !memcmp(val, "blue", 4), "get: '%s'", val);
	CHECK(setxattr(f, "user.empty", "", 0, 0) == 0, "an empty value");
	CHECK(getxattr(f, "user.empty", val, sizeof(val)) == 0, "get an empty value");
	CHECK(setxattr(f, "user.gone", "1", 1, 0) == 0, "set user.gone");
	CHECK(removexattr(f, "user.gone") == 0, "remove");
	CHECK_ERR(removexattr(f, "user.gone"), ENODATA);
	CHECK_ERR(getxattr(f, "user.gone", val, sizeof(val)), ENODATA);
	ssize_t n = listxattr(f, NULL, 0);
	CHECK(n == (ssize_t)(sizeof("user.colour") + sizeof("user.empty")), "list size %zd", n);
	CHECK_ERR(listxattr(f, val, 5), ERANGE);
	n = listxattr(f, val, sizeof(val));
	int seen = 0;
	for (char *p = val; n > 0 && p < val + n; p += strlen(p) + 1)
		seen += !strcmp(p, "user.colour") * 1 + !strcmp(p, "user.empty") * 2;
	CHECK(seen == 3, "list names");
	CHECK_ERR(setxattr(f, "bogus.name", "x", 1, 0), EOPNOTSUPP);
	CHECK_ERR(getxattr(f, "bogus.name", val, sizeof(val)), EOPNOTSUPP);
	/* The space of one inode: a value of XATTR_SIZE_MAX (xfstests'
	 * generic/020 sets one), 128 KiB of names and values in all. */
	char *big = calloc(1, 70000);
	CHECK(setxattr(f, "user.big", big, 65536, 0) == 0, "a 65536-byte value");
	CHECK_ERR(setxattr(f, "user.big2", big, 65536, 0), ENOSPC);
	CHECK(setxattr(f, "user.big2", big, 60000, 0) == 0, "a second big value");
	CHECK_ERR(setxattr(f, "user.big", big, 70000, 0), E2BIG); /* past XATTR_SIZE_MAX: the kernel */
	CHECK(getxattr(f, "user.big", big, 70000) == 65536, "get the 65536-byte value");
	CHECK(removexattr(f, "user.big") == 0, "remove the big value");
	CHECK(setxattr(f, "user.big3", big, 65536, 0) == 0, "the space is back");
	CHECK(removexattr(f, "user.big3") == 0, "remove user.big3");
	CHECK(removexattr(f, "user.big2") == 0, "remove user.big2");
	free(big);
	/* Directories carry user. attributes; symbolic links may not (the
	 * kernel's rule). */
	mkdir(path("xadir"), 0755);
	CHECK(setxattr(path("xadir"), "user.d", "1", 1, 0) == 0, "on a directory");
	CHECK(symlink("xa", path("xalink")) == 0, "symlink");
	CHECK_ERR(lsetxattr(path("xalink"), "user.l", "1", 1, 0), EPERM);
	CHECK(setxattr(path("xalink"), "user.via", "1", 1, 0) == 0, "through a symlink: its target");
	CHECK(removexattr(f, "user.via") == 0, "the target got it");
	CHECK(setxattr(f, "trusted.t", "1", 1, 0) == 0, "trusted. as root");
	CHECK(removexattr(f, "trusted.t") == 0, "remove trusted.");
	/* Unlinked while open: still there through the descriptor. */
	fd = open(path("xaopen"), O_RDWR | O_CREAT, 0644);
	CHECK(fsetxattr(fd, "user.o", "v", 1, 0) == 0, "fsetxattr");
	unlink(path("xaopen"));
	CHECK(fgetxattr(fd, "user.o", val, sizeof(val)) == 1, "fgetxattr after unlink");
	close(fd);
	sync_path(f);
}

/* ---- special files ---- */

static void case_special(int verify)
{
	struct stat st;
	if (!verify) {
		CHECK(mkfifo(path("fifo"), 0640) == 0, "mkfifo");
		CHECK(mknod(path("sock"), S_IFSOCK | 0600, 0) == 0, "mknod a socket");
		CHECK(mknod(path("chr"), S_IFCHR | 0600, makedev(1, 3)) == 0, "mknod a character device");
		CHECK(mknod(path("blk"), S_IFBLK | 0600, makedev(259, 70000)) == 0, "mknod a block device");
		CHECK(mknod(path("reg"), S_IFREG | 0600, 0) == 0, "mknod a regular file");
		CHECK_ERR(mknod(path("fifo"), S_IFIFO | 0600, 0), EEXIST);
		CHECK_ERR(mknod(path("nodir/x"), S_IFIFO | 0600, 0), ENOENT);
		CHECK_ERR(mknod(path("reg/x"), S_IFIFO | 0600, 0), ENOTDIR);
		/* data through the FIFO (the kernel serves it; bgafs holds the name) */
		int fd = open(path("fifo"), O_RDWR);
		CHECK(fd >= 0, "open the FIFO");
		char b[8] = {0};
		CHECK(write(fd, "ping", 4) == 4 && read(fd, b, sizeof(b)) == 4 && !memcmp(b, "ping", 4), "FIFO data");
		close(fd);
		/* a unix socket bound in bgafs: bind(2) is a mknod */
		int s = socket(AF_UNIX, SOCK_STREAM, 0);
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path("bound"));
		if (strlen(sa.sun_path) == strlen(path("bound"))) {
			CHECK(bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind a unix socket");
			CHECK(listen(s, 1) == 0, "listen");
			int c = socket(AF_UNIX, SOCK_STREAM, 0);
			CHECK(connect(c, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect through the bound name");
			close(c);
		}
		close(s);
		CHECK(unlink(path("reg")) == 0, "unlink");
		sync_path(dir);
	}
	CHECK(lstat(path("fifo"), &st) == 0 && S_ISFIFO(st.st_mode) && (st.st_mode & 07777) == 0640, "FIFO stat");
	CHECK(lstat(path("sock"), &st) == 0 && S_ISSOCK(st.st_mode), "socket stat");
	CHECK(lstat(path("chr"), &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3),
	      "character device stat: rdev %u:%u", major(st.st_rdev), minor(st.st_rdev));
	CHECK(lstat(path("blk"), &st) == 0 && S_ISBLK(st.st_mode) && st.st_rdev == makedev(259, 70000),
	      "block device stat: rdev %u:%u", major(st.st_rdev), minor(st.st_rdev));
	CHECK(lstat(path("bound"), &st) == 0 && S_ISSOCK(st.st_mode), "bound socket stat");
}

/* ---- RENAME_EXCHANGE ---- */

int put(const char *p, const char *s)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int ok = fd >= 0 && write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok;
}

static int holds(const char *p, const char *s)
{
	char b[64] = {0};
	int fd = open(p, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, b, sizeof(b) - 1) : -1;
	close(fd);
	return n == (ssize_t)strlen(s) && !memcmp(b, s, n);
}

static nlink_t links(const char *p)
{
	struct stat st;
	return lstat(p, &st) ? 0 : st.st_nlink;
}

static ino_t ino_of(const char *p)
{
	struct stat st;
	return lstat(p, &st) ? 0 : st.st_ino;
}

static void case_exchange(int verify)
{
	if (verify) {
		CHECK(holds(path("a"), "B") && holds(path("b"), "A"), "files exchanged, after a remount");
		CHECK(holds(path("p1/x"), "file") && ino_of(path("p2/x/..")) == ino_of(path("p2")),
		      "file and directory exchanged, after a remount");
		CHECK(links(path("p1")) == 2 && links(path("p2")) == 3, "parents' links after a remount: %lu %lu",
		      (unsigned long)links(path("p1")), (unsigned long)links(path("p2")));
		return;
	}
	CHECK(put(path("a"), "A") && put(path("b"), "B"), "make a, b");
	ino_t ia = ino_of(path("a")), ib = ino_of(path("b"));
	CHECK(renameat2(AT_FDCWD, path("a"), AT_FDCWD, path("b"), RENAME_EXCHANGE) == 0, "exchange two files");
	CHECK(holds(path("a"), "B") && holds(path("b"), "A"), "contents swapped");
	CHECK(ino_of(path("a")) == ib && ino_of(path("b")) == ia, "inodes swapped");
	/* a directory in p1 with a file in p2 */
	CHECK(mkdir(path("p1"), 0755) == 0 && mkdir(path("p2"), 0755) == 0, "mkdir p1 p2");
	CHECK(mkdir(path("p1/x"), 0755) == 0 && mkdir(path("p1/x/inner"), 0755) == 0, "mkdir p1/x");
	CHECK(put(path("p2/x"), "file"), "make p2/x");
	CHECK(links(path("p1")) == 3 && links(path("p2")) == 2, "links before");
	CHECK(renameat2(AT_FDCWD, path("p1/x"), AT_FDCWD, path("p2/x"), RENAME_EXCHANGE) == 0,
	      "exchange a directory with a file");
	CHECK(holds(path("p1/x"), "file"), "the file is in p1");
	CHECK(ino_of(path("p2/x/inner")) != 0, "the directory is in p2");
	CHECK(ino_of(path("p2/x/..")) == ino_of(path("p2")), "its .. is p2");
	CHECK(links(path("p1")) == 2 && links(path("p2")) == 3, "links after: %lu %lu",
	      (unsigned long)links(path("p1")), (unsigned long)links(path("p2")));
	CHECK_ERR(renameat2(AT_FDCWD, path("a"), AT_FDCWD, path("nothere"), RENAME_EXCHANGE), ENOENT);
	CHECK_ERR(renameat2(AT_FDCWD, path("a"), AT_FDCWD, path("b"), RENAME_EXCHANGE | RENAME_NOREPLACE), EINVAL);
	/* a directory exchanged with its own descendant */
	CHECK_ERR(renameat2(AT_FDCWD, path("p2/x"), AT_FDCWD, path("p2/x/inner"), RENAME_EXCHANGE), EINVAL);
	CHECK_ERR(renameat2(AT_FDCWD, path("p2/x/inner"), AT_FDCWD, path("p2/x"), RENAME_EXCHANGE), EINVAL);
	CHECK(rename(path("p2/x/inner"), path("inner2")) == 0 && rmdir(path("inner2")) == 0, "plain rename still works");
}

/* ---- atime ---- */

struct timespec atime_of(const char *p)
{
	struct stat st = {0};
	stat(p, &st);
	return st.st_atim;
}

int ts_eq(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

void read_through(const char *p)
{
	char b[4096];
	int fd = open(p, O_RDONLY);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	while (read(fd, b, sizeof(b)) > 0) {
	}
	close(fd);
}

static void case_atime(int verify)
{
	char *f = path("at");
	if (verify) {
		struct timespec want;
		FILE *s = fopen(path("at.want"), "r");
		CHECK(s && fscanf(s, "%ld %ld", &want.tv_sec, &want.tv_nsec) == 2, "read at.want");
		if (s)
			fclose(s);
		CHECK(ts_eq(atime_of(f), want), "atime after a remount: %ld.%09ld, want %ld.%09ld", atime_of(f).tv_sec,
		      atime_of(f).tv_nsec, want.tv_sec, want.tv_nsec);
		return;
	}
	CHECK(put(f, "some data"), "make at");
	int fd = open(f, O_RDONLY);
	fsync(fd);
	close(fd);
	/* atime two days back, mtime one day back: older than mtime */
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct timespec ts[2] = {{now.tv_sec - 2 * 86400, 0}, {now.tv_sec - 86400, 0}};
	CHECK(utimensat(AT_FDCWD, f, ts, 0) == 0, "utimensat");
	read_through(f);
	struct timespec a1 = atime_of(f);
	CHECK(a1.tv_sec >= now.tv_sec, "a read moves an old atime: %ld, now %ld", a1.tv_sec, now.tv_sec);
	usleep(20000);
	read_through(f);
	CHECK(ts_eq(atime_of(f), a1), "a second read leaves a fresh atime: %ld.%09ld, was %ld.%09ld",
	      atime_of(f).tv_sec, atime_of(f).tv_nsec, a1.tv_sec, a1.tv_nsec);
	/* a write makes it due again */
	fd = open(f, O_WRONLY | O_APPEND);
	CHECK(write(fd, "x", 1) == 1, "append");
	close(fd);
	usleep(20000);
	read_through(f);
	struct timespec a2 = atime_of(f);
	CHECK(a2.tv_sec > a1.tv_sec || (a2.tv_sec == a1.tv_sec && a2.tv_nsec > a1.tv_nsec),
	      "a read after a write moves atime");
	FILE *s = fopen(path("at.want"), "w");
	fprintf(s, "%ld %ld\n", a2.tv_sec, a2.tv_nsec);
	fclose(s);
	/* a listing is a read of the directory */
	mkdir(path("atdir"), 0755);
	put(path("atdir/e"), "");
	CHECK(utimensat(AT_FDCWD, path("atdir"), ts, 0) == 0, "utimensat on a directory");
	DIR *d = opendir(path("atdir"));
	while (d && readdir(d)) {
	}
	if (d)
		closedir(d);
	CHECK(atime_of(path("atdir")).tv_sec >= now.tv_sec, "a listing moves the directory's atime");
}

static const struct {
	const char *name;
	void (*run)(int verify);
} cases[] = {
	{"falloc", case_falloc},   {"xattr", case_xattr},     {"special", case_special}, {"exchange", case_exchange},
	{"atime", case_atime},     {"times", case_times},     {"sgid", case_sgid},       {"readdir", case_readdir},
	{"noatime", case_noatime}, {"killpriv", case_killpriv}, {"acl", case_acl},
	{"strictatime", case_strictatime},
};

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bgafs_posix CASE DIR [verify]\n");
		return 2;
	}
	dir = argv[2];
	int verify = argc > 3 && !strcmp(argv[3], "verify");
	const char *c = argv[1];
	size_t i = 0;
	while (i < sizeof(cases) / sizeof(cases[0]) && strcmp(cases[i].name, c))
		i++;
	if (i == sizeof(cases) / sizeof(cases[0])) {
		fprintf(stderr, "bgafs_posix: unknown case %s\n", c);
		return 2;
	}
	cases[i].run(verify);
	printf("bgafs_posix %s%s: %s\n", c, verify ? " verify" : "", failures ? "FAIL" : "ok");
	return failures ? 1 : 0;
}
