/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bgafs_posix's cases for what an inode and a directory must keep, each
 * from an xfstests case that once failed on bgafs and passed on ext4 and
 * fuse2fs:
 *
 *   times     times before 1970 (and a nanosecond part) survive a
 *             remount; a time past what the table stores is clamped, the
 *             same before and after (generic/258)
 *   sgid      in a set-group-ID directory a new inode takes its group, a
 *             new directory the S_ISGID bit too (generic/314)
 *   readdir   names made while a directory is open appear after a
 *             rewinddir (generic/471)
 *   noatime   on a noatime mount a read or a listing leaves atime alone
 *             (generic/120; bgafs_test.sh mounts with -o noatime)
 *   strictatime  on a strictatime mount every read moves atime, the
 *             page cache's too (generic/003)
 *   killpriv  a write, fallocate, punch, zero range or truncate by an
 *             unprivileged process clears S_ISUID, and S_ISGID as the
 *             kernel's rule says; by root it clears neither
 *             (generic/683-685)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "posix.h"

/* ---- times ---- */

#define T1960 (-315619200L) /* 1960-01-01 00:00:00 UTC */
/* The table's upper end (signed 64-bit nanoseconds): INT64_MAX / 1e9 - 1. */
#define TMAX 9223372035L

static const struct {
	const char *name;
	struct timespec set[2], want[2]; /* atime, mtime */
} times_cases[] = {
	{"t1960", {{T1960, 0}, {T1960, 0}}, {{T1960, 0}, {T1960, 0}}},
	{"tfrac", {{-1, 500000000}, {-2, 999999999}}, {{-1, 500000000}, {-2, 999999999}}},
	{"t2200", {{7258118400L, 1}, {0, 0}}, {{7258118400L, 1}, {0, 0}}},
	{"t3000", {{32503680000L, 0}, {-32503680000L, 0}}, {{TMAX, 999999999}, {-TMAX, 0}}},
};

void case_times(int verify)
{
	for (size_t i = 0; i < sizeof(times_cases) / sizeof(times_cases[0]); i++) {
		const char *p = path("%s", times_cases[i].name);
		if (!verify) {
			CHECK(put(p, "t"), "make %s", p);
			CHECK(utimensat(AT_FDCWD, p, times_cases[i].set, 0) == 0, "utimensat %s", p);
		}
		struct stat st = {0};
		CHECK(stat(p, &st) == 0, "stat %s", p);
		/* bgafs_test.sh reads every file before the verify: relatime
		 * moves an atime in the past then */
		int atime_kept = !verify || times_cases[i].want[0].tv_sec > time(NULL);
		CHECK((!atime_kept || ts_eq(st.st_atim, times_cases[i].want[0])) &&
			      ts_eq(st.st_mtim, times_cases[i].want[1]),
		      "%s%s: atime %lld.%09ld mtime %lld.%09ld, want %lld.%09ld and %lld.%09ld", times_cases[i].name,
		      verify ? " after a remount" : "", (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
		      (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (long long)times_cases[i].want[0].tv_sec,
		      times_cases[i].want[0].tv_nsec, (long long)times_cases[i].want[1].tv_sec,
		      times_cases[i].want[1].tv_nsec);
	}
	if (!verify)
		sync_path(dir);
}

/* ---- set-group-ID directories ---- */

#define SGID_GROUP 4242 /* no caller's group: only inheritance gives it */

static void want_owner(const char *p, gid_t gid, mode_t mode)
{
	struct stat st = {0};
	CHECK(lstat(p, &st) == 0, "lstat %s", p);
	CHECK(st.st_gid == gid && (st.st_mode & 07777) == mode, "%s: group %u mode %04o, want %u %04o", p,
	      (unsigned)st.st_gid, (unsigned)(st.st_mode & 07777), (unsigned)gid, (unsigned)mode);
}

void case_sgid(int verify)
{
	umask(022);
	if (!verify) {
		CHECK(mkdir(path("sg"), 0775) == 0 && chown(path("sg"), (uid_t)-1, SGID_GROUP) == 0 &&
			      chmod(path("sg"), 02775) == 0,
		      "make the set-group-ID directory");
		CHECK(mkdir(path("sg/d"), 0755) == 0, "mkdir in it");
		CHECK(mkdir(path("sg/d/e"), 0700) == 0, "mkdir two deep");
		CHECK(put(path("sg/f"), "f"), "create in it");
		CHECK(symlink("f", path("sg/l")) == 0, "symlink in it");
		CHECK(mknod(path("sg/fifo"), S_IFIFO | 0640, 0) == 0, "mkfifo in it");
		CHECK(mkdir(path("plain"), 0775) == 0 && chown(path("plain"), (uid_t)-1, SGID_GROUP) == 0,
		      "make a plain directory of that group");
		CHECK(mkdir(path("plain/d"), 0755) == 0 && put(path("plain/f"), "f"), "make in the plain one");
		sync_path(path("sg/d"));
	}
	want_owner(path("sg"), SGID_GROUP, 02775);
	want_owner(path("sg/d"), SGID_GROUP, 02755);
	want_owner(path("sg/d/e"), SGID_GROUP, 02700);
	want_owner(path("sg/f"), SGID_GROUP, 0644);
	want_owner(path("sg/fifo"), SGID_GROUP, 0640);
	struct stat st = {0};
	CHECK(lstat(path("sg/l"), &st) == 0 && st.st_gid == SGID_GROUP, "symlink's group %u", (unsigned)st.st_gid);
	/* without S_ISGID the caller's group, as always */
	want_owner(path("plain/d"), getegid(), 0755);
	want_owner(path("plain/f"), getegid(), 0644);
}

/* ---- rewinddir ---- */

#define RD_NEW 2000

static long count_entries(DIR *d)
{
	long n = 0;
	while (readdir(d))
		n++;
	return n;
}

void case_readdir(int verify)
{
	if (verify) {
		DIR *d = opendir(path("rd"));
		CHECK(d && count_entries(d) == RD_NEW + 4, "entries after a remount");
		if (d)
			closedir(d);
		return;
	}
	CHECK(mkdir(path("rd"), 0755) == 0 && put(path("rd/a"), "") && put(path("rd/b"), ""), "make rd");
	DIR *d = opendir(path("rd"));
	CHECK(d != NULL, "opendir");
	if (!d)
		return;
	CHECK(count_entries(d) == 4, "the first pass: ., .., a, b");
	for (int i = 0; i < RD_NEW; i++)
		CHECK(put(path("rd/n%05d", i), ""), "create n%05d", i);
	CHECK(readdir(d) == NULL, "still at the end of the first pass");
	rewinddir(d);
	long n = count_entries(d);
	CHECK(n == RD_NEW + 4, "after rewinddir %ld entries, want %d: names made while open must appear", n,
	      RD_NEW + 4);
	/* and names removed meanwhile go */
	for (int i = 0; i < RD_NEW; i += 2)
		unlink(path("rd/n%05d", i));
	rewinddir(d);
	n = count_entries(d);
	CHECK(n == RD_NEW / 2 + 4, "after removing half and rewinddir: %ld entries, want %d", n, RD_NEW / 2 + 4);
	for (int i = 0; i < RD_NEW; i += 2)
		CHECK(put(path("rd/n%05d", i), ""), "create n%05d again", i);
	closedir(d);
	sync_path(path("rd"));
}

/* ---- noatime ---- */

void case_noatime(int verify)
{
	/* atime two days back, mtime one day back: relatime would move it */
	static const struct timespec old[2] = {{1000000000, 0}, {1000086400, 0}};
	if (!verify) {
		CHECK(put(path("na"), "some data"), "make na");
		CHECK(mkdir(path("nadir"), 0755) == 0 && put(path("nadir/e"), ""), "make nadir");
		CHECK(utimensat(AT_FDCWD, path("na"), old, 0) == 0 && utimensat(AT_FDCWD, path("nadir"), old, 0) == 0,
		      "utimensat");
		read_through(path("na"));
		DIR *d = opendir(path("nadir"));
		while (d && readdir(d)) {
		}
		if (d)
			closedir(d);
		sync_path(dir);
	}
	CHECK(ts_eq(atime_of(path("na")), old[0]), "a read on a noatime mount moved atime to %lld",
	      (long long)atime_of(path("na")).tv_sec);
	CHECK(ts_eq(atime_of(path("nadir")), old[0]), "a listing on a noatime mount moved atime to %lld",
	      (long long)atime_of(path("nadir")).tv_sec);
}

/* ---- set-user-ID and set-group-ID bits after a change of the data ---- */

enum { KP_WRITE, KP_FALLOC, KP_PUNCH, KP_ZERO, KP_TRUNC, KP_N };
static const char *const kp_names[] = {"write", "fallocate", "punch", "zero range", "truncate"};

/* p holds n bytes of data (written, not a hole), as xfstests' files do. */
static int put_bytes(const char *p, size_t n)
{
	char *b = malloc(n);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int ok = b && fd >= 0 && (memset(b, 'X', n), write(fd, b, n) == (ssize_t)n);
	free(b);
	close(fd);
	return ok;
}

/* As uid and gid 65534 with no other groups (or as root when !drop),
 * open DIR/name and change its data by op; 0 when the call worked.  The
 * open goes through a descriptor of DIR that root opened: the directories
 * above it may be closed to others. */
static int kp_change(const char *name, int op, int drop)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		if (drop && (setgroups(0, NULL) || setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)))
			_exit(2);
		int fd = openat(dfd, name, O_RDWR);
		if (fd < 0)
			_exit(3);
		int r = op == KP_WRITE    ? (pwrite(fd, "x", 1, 4096) == 1 ? 0 : -1)
			: op == KP_FALLOC ? fallocate(fd, 0, 65536, 65536)
			: op == KP_PUNCH  ? fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096)
			: op == KP_ZERO   ? fallocate(fd, FALLOC_FL_ZERO_RANGE, 0, 4096)
					  : ftruncate(fd, 100);
		_exit(r ? 1 : 0);
	}
	int status = -1;
	waitpid(pid, &status, 0);
	close(dfd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* What the kernel's rule (setattr_should_drop_suidgid) leaves of mode
 * after an unprivileged writer outside the file's group: S_ISUID goes;
 * S_ISGID goes too (with group execute it always does; without it, for
 * a writer outside the group). */
void case_killpriv(int verify)
{
	static const struct {
		mode_t mode, want; /* before; after an unprivileged change */
		gid_t group;       /* the file's group */
	} kp[] = {
		{06666, 00666, 0},     /* non-exec: both go (writer outside the group) */
		{06676, 00676, 0},     /* group-exec */
		{06766, 00766, 0},     /* user-exec */
		{06777, 00777, 0},     /* all exec */
		{02676, 00676, 0},     /* only set-group-ID, group-exec */
		{02666, 02666, 65534}, /* only set-group-ID, no group-exec, writer in the group: kept */
	};
	if (verify)
		return;
	for (int op = 0; op < KP_N; op++)
		for (size_t i = 0; i < sizeof(kp) / sizeof(kp[0]); i++)
			for (int drop = 0; drop < 2; drop++) {
				char name[64];
				snprintf(name, sizeof(name), "kp%d.%zu.%d", op, i, drop);
				const char *p = path("%s", name);
				/* every change within the size: the reply carries no
				 * attributes, and the stat right after must see the mode */
				CHECK(put_bytes(p, 196608) && chown(p, 0, kp[i].group) == 0 &&
					      chmod(p, kp[i].mode) == 0,
				      "make %s", p);
				int rc = kp_change(name, op, drop);
				CHECK(rc == 0, "%s by %s of a %04o file failed (%d)", kp_names[op], drop ? "uid 65534" : "root",
				      (unsigned)kp[i].mode, rc);
				struct stat st = {0};
				stat(p, &st);
				mode_t want = drop ? kp[i].want : kp[i].mode; /* root (CAP_FSETID) keeps them */
				CHECK((st.st_mode & 07777) == want, "%s by %s of a %04o file left %04o, want %04o", kp_names[op],
				      drop ? "uid 65534" : "root", (unsigned)kp[i].mode, (unsigned)(st.st_mode & 07777),
				      (unsigned)want);
			}
	sync_path(dir);
}

/* ---- strictatime ---- */

/* One read of p through the page cache, as cat does. */
static void read_cached(const char *p)
{
	char b[4096];
	int fd = open(p, O_RDONLY);
	while (fd >= 0 && read(fd, b, sizeof(b)) > 0) {
	}
	close(fd);
}

static int ts_after(struct timespec a, struct timespec b)
{
	return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

void case_strictatime(int verify)
{
	if (verify)
		return;
	CHECK(put(path("sa"), "cached data"), "make sa");
	read_cached(path("sa")); /* the page cache holds it now */
	struct timespec a = atime_of(path("sa"));
	for (int i = 0; i < 3; i++) {
		usleep(20000);
		read_cached(path("sa"));
		struct timespec b = atime_of(path("sa"));
		CHECK(ts_after(b, a), "read %d on a strictatime mount left atime at %lld.%09ld", i + 2, (long long)b.tv_sec,
		      b.tv_nsec);
		a = b;
	}
}
