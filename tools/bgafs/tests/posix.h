/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the cases of bgafs_posix (posix.c, posix_meta.c, posix_acl.c) share: the
 * checks, which count failures, and the paths under the mounted DIR. */
#ifndef BGAFS_POSIX_H
#define BGAFS_POSIX_H
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

extern int failures;
extern const char *dir;

#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "FAIL %s:%d: ", __func__, __LINE__);    \
			fprintf(stderr, __VA_ARGS__);                           \
			fprintf(stderr, " (errno %s)\n", strerror(errno));     \
			failures++;                                             \
		}                                                               \
	} while (0)

/* The call failed with exactly err. */
#define CHECK_ERR(call, err)                                                                        \
	do {                                                                                        \
		errno = 0;                                                                          \
		long r_ = (long)(call);                                                             \
		CHECK(r_ == -1 && errno == (err), "%s gave %ld, want errno %s", #call, r_, strerror(err)); \
	} while (0)

/* DIR/name, name printf-formatted; four buffers in turn. */
char *path(const char *fmt, ...);
/* fsync p: what a case made is durable (bgafs commits the whole
 * transaction), so a SIGKILL after it loses nothing the verify checks. */
void sync_path(const char *p);
int put(const char *p, const char *s);          /* p holds s now: 1, else 0 */
void read_through(const char *p);               /* read all of p from bgafs, not the page cache */
struct timespec atime_of(const char *p);
int ts_eq(struct timespec a, struct timespec b);

/* posix_meta.c: each case's first run, or with verify its check after a remount */
void case_times(int verify);
void case_sgid(int verify);
void case_readdir(int verify);
void case_noatime(int verify);
void case_killpriv(int verify);
void case_strictatime(int verify);
/* posix_acl.c */
void case_acl(int verify);

#endif
