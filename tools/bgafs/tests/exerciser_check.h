/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bgafs_exerciser's model and checks, defined in exerciser_check.c (the
 * model's state, reading the tree back against it, the model on disk) and
 * used by exerciser.c (the operations, the processes, main).  One
 * process's state: each process of a run has its own copy (fork).
 */
#ifndef EXERCISER_CHECK_H
#define EXERCISER_CHECK_H
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/aio_abi.h>
#include <linux/falloc.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BLK 4096u
#define MAXF 24    /* files a process owns at once */
#define MAXN 3     /* names a file may have */
#define NDIRS 3    /* subdirectories d0.. a process may make */
#define NAMELEN 32
#define MAXIO (256u << 10)
/* ---- the model ---- */
enum { OP_WRITE, OP_DWRITE, OP_AWRITE, OP_MWRITE, OP_TRUNC, OP_FALLOC, OP_PUNCH, OP_ZERO, OP_FSYNC,
       OP_CREATE, OP_RENAME, OP_LINK, OP_UNLINK, OP_MKDIR, OP_RMDIR, OP_READ, OP_DREAD, NOPS };
extern const char *const opname[NOPS];

struct oprec { /* one operation that changed (or tried to change) a file */
	uint32_t no;
	uint8_t kind;
	int32_t err; /* 0 or the errno it failed with */
	uint64_t off, len, ret;
};

struct mfile {
	int used, nnames;
	char names[MAXN][NAMELEN]; /* relative to the process's directory */
	uint8_t *d;                /* the bytes */
	uint64_t size, cap;        /* cap: bytes of d, lastop and dirty cover cap/BLK blocks */
	uint32_t *lastop;          /* per block: index into ops[] + 1 of the last op that touched it */
	/* the fsynced state (crash model) */
	int synced, size_dirty;
	char sname[NAMELEN];
	uint8_t *sd, *dirty; /* dirty: per block, touched since the fsync */
	uint64_t ssize;
};

struct model {
	int id;
	uint64_t dirs; /* bit k: d<k> exists */
	uint64_t nameno;
	struct mfile f[MAXF];
	struct oprec *ops;
	uint32_t nops, capops;
};

extern const char *mnt;       /* the mount point */
extern char base[4096];       /* the process's directory */
extern int quiet, direct_ok;
extern int gone;              /* the file system went away (the daemon killed) */
extern struct model M;

void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2))); /* exit 2 */
void *xrealloc(void *p, size_t n); /* dies when out of memory */
void path_of(char *buf, size_t n, const char *rel); /* base/rel */
/* The op M.ops[idx - 1], in words (idx 0: none). */
const char *describe(uint32_t idx);
/* Print the first difference: file, offset, the bytes, how it was read,
 * the op that last touched its block. */
void mismatch(const struct mfile *f, const char *name, uint64_t off, int want, int got, const char *how);
/* 1 (and gone set) for the errnos of a dead daemon. */
int fatal_errno(int e);
/* 0 when the file system went away: a difference is then no finding. */
int alive(void);
/* Bytes [from, size) of name against want[], buffered or O_DIRECT;
 * blocks with skip[b] set are not compared.  0, or 1 with the difference
 * printed. */
int check_bytes(const struct mfile *f, const char *name, const uint8_t *want, uint64_t from, uint64_t size,
		const uint8_t *skip, int direct, const char *how);
int check_file(const struct mfile *f, const char *when); /* every name's size, links, type; every byte, both ways */
int check_all(const char *when);                          /* every file, and every directory's names */
int check_crash(void); /* after a SIGKILL: what was fsynced and not touched since */
void state_save(const char *dir); /* the model to dir/p<id> */
void state_load(const char *dir); /* and back (dies when it cannot) */

#endif
