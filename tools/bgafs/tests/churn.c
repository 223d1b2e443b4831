/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bgafs_churn DIR SEED OPS FILL_PERCENT: an fsstress-like aging load for
 * the bgafs tests, deterministic for a seed.  Under DIR it creates,
 * writes, appends to, truncates, hard-links, renames (files, symbolic
 * links and directories, across directories) and deletes files, makes
 * symbolic links with targets of 1-3000 bytes and directories, filling the
 * file system to FILL_PERCENT of its blocks and then churning around
 * there (deletes win while it is above).  ENOSPC is expected of anything
 * that adds; any other error, or an ENOSPC from a delete, fails (exit 1).
 * Prints the ops done, the ENOSPC count and the highest use seen.
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define MAXE 20000
#define PATHMAX 512

struct ent {
	char path[PATHMAX]; /* relative to DIR; "" is DIR itself */
	char type;          /* 'f', 'd', 'l' */
};

static struct ent *e;
static int ne;
static uint64_t rng;
static unsigned long enospc, nameno;
static const char *root;
static char seedtag[32]; /* names of one seed's run never meet another's */

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static void full(char *buf, const char *rel)
{
	snprintf(buf, PATHMAX * 2, "%s/%s", root, rel);
}

/* An error other than ENOSPC from an op that adds (allowed ENOSPC) or
 * any error from one that does not: fatal. */
static int check(int rc, const char *what, const char *path, int adds)
{
	if (rc >= 0)
		return 0;
	if (errno == ENOSPC && adds) {
		enospc++;
		return -1;
	}
	fprintf(stderr, "churn: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static int pick(char type)
{
	int tries = 64;
	while (tries--) {
		int i = (int)rnd((uint32_t)ne);
		if (!type || e[i].type == type)
			return i;
	}
	return -1;
}

static int add(const char *dir, char type)
{
	if (ne == MAXE || strlen(dir) >= PATHMAX - 64)
		return -1;
	snprintf(e[ne].path, PATHMAX, "%.*s%s%sn%lu", PATHMAX - 64, dir, *dir ? "/" : "", seedtag, nameno++);
	e[ne].type = type;
	return ne++;
}

static void del(int i)
{
	e[i] = e[--ne];
}

/* Use after a commit (fsync of the top directory): blocks freed in the
 * running transaction count as used until it commits. */
static double used_fraction(void)
{
	struct statvfs sv;
	int fd = open(root, O_RDONLY | O_DIRECTORY);
	if (fd >= 0) {
		if (fsync(fd))
			check(-1, "fsync", root, 1);
		close(fd);
	}
	if (statvfs(root, &sv))
		return 0;
	return 1.0 - (double)sv.f_bfree / (double)sv.f_blocks;
}

static void write_data(const char *p, size_t len, int append, int adds)
{
	static char buf[65536];
	int fd = open(p, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0644);
	if (check(fd, "open", p, adds))
		return;
	while (len) {
		size_t n = len < sizeof(buf) ? len : sizeof(buf);
		for (size_t k = 0; k < n; k += 512)
			buf[k] = (char)rnd(256);
		ssize_t w = write(fd, buf, n);
		if (w < 0) {
			check(-1, "write", p, 1);
			break;
		}
		len -= (size_t)w;
	}
	if (rnd(8) == 0 && fsync(fd))
		check(-1, "fsync", p, 1);
	close(fd);
}

/* What an earlier run left: its names join the churn. */
static int load(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)flag;
	size_t rl = strlen(root);
	if (ftw->level == 0 || ne == MAXE || strlen(path) - rl - 1 >= PATHMAX - 64)
		return 0;
	snprintf(e[ne].path, PATHMAX, "%s", path + rl + 1);
	e[ne++].type = S_ISDIR(st->st_mode) ? 'd' : S_ISLNK(st->st_mode) ? 'l' : 'f';
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: bgafs_churn DIR SEED OPS FILL_PERCENT\n");
		return 2;
	}
	root = argv[1];
	rng = strtoull(argv[2], NULL, 0) * 2654435761u + 1;
	snprintf(seedtag, sizeof(seedtag), "s%s", argv[2]);
	long ops = atol(argv[3]);
	double fill = atof(argv[4]) / 100.0, high = 0, used = 0;
	e = calloc(MAXE, sizeof(*e));
	if (!e)
		return 1;
	e[ne++] = (struct ent){"", 'd'};
	if (nftw(root, load, 16, FTW_PHYS))
		return fprintf(stderr, "churn: walking %s: %s\n", root, strerror(errno)), 1;
	char p[PATHMAX * 2], q[PATHMAX * 2];
	long i;
	for (i = 0; i < ops; i++) {
		if (i % 32 == 0) {
			used = used_fraction();
			if (used > high)
				high = used;
		}
		int above = used >= fill;
		uint32_t op = rnd(100);
		if (above && op < 45)
			op = 90 + rnd(10); /* deletes */
		int d = pick('d'), k;
		if (d < 0)
			d = 0;
		if (op < 30) { /* a new file */
			if ((k = add(e[d].path, 'f')) < 0)
				continue;
			full(p, e[k].path);
			size_t len = rnd(4) ? rnd(65536) : rnd(1 << 20);
			write_data(p, len, 0, 1);
			if (access(p, F_OK))
				del(k); /* the create itself failed */
		} else if (op < 38) { /* append */
			if ((k = pick('f')) < 0)
				continue;
			full(p, e[k].path);
			write_data(p, rnd(32768), 1, 1);
		} else if (op < 44) { /* truncate */
			if ((k = pick('f')) < 0)
				continue;
			full(p, e[k].path);
			check(truncate(p, rnd(1 << 17)), "truncate", p, 1);
		} else if (op < 52) { /* mkdir */
			if ((k = add(e[d].path, 'd')) < 0)
				continue;
			full(p, e[k].path);
			if (check(mkdir(p, 0755), "mkdir", p, 1))
				del(k);
		} else if (op < 62) { /* symlink */
			if ((k = add(e[d].path, 'l')) < 0)
				continue;
			full(p, e[k].path);
			char target[3001];
			size_t len = rnd(4) ? 1 + rnd(64) : 1 + rnd(3000);
			for (size_t t = 0; t < len; t++)
				target[t] = (char)('a' + rnd(26));
			target[len] = 0;
			if (check(symlink(target, p), "symlink", p, 1))
				del(k);
		} else if (op < 68) { /* hard link */
			int s = pick('f');
			if (s < 0 || (k = add(e[d].path, 'f')) < 0)
				continue;
			full(p, e[s].path);
			full(q, e[k].path);
			if (check(link(p, q), "link", q, 1))
				del(k);
		} else if (op < 90) { /* rename */
			int s = pick(0);
			if (s <= 0)
				continue;
			char np[PATHMAX * 2];
			if (e[s].type == 'd')
				d = 0; /* directories move to the top: no cycles */
			snprintf(np, sizeof(np), "%s%s%sr%lu", e[d].path, *e[d].path ? "/" : "", seedtag, nameno++);
			if (strlen(np) >= PATHMAX - 64)
				continue;
			full(p, e[s].path);
			full(q, np);
			if (check(rename(p, q), "rename", p, 1))
				continue;
			size_t ol = strlen(e[s].path);
			if (e[s].type == 'd')
				for (int j = 0; j < ne; j++)
					if (!strncmp(e[j].path, e[s].path, ol) && e[j].path[ol] == '/') {
						char t[PATHMAX * 3];
						int n = snprintf(t, sizeof(t), "%s%s", np, e[j].path + ol);
						if (n >= PATHMAX) /* too deep to follow: forget it */
							e[j].type = 0;
						else
							memcpy(e[j].path, t, (size_t)n + 1);
					}
			strcpy(e[s].path, np);
		} else { /* delete */
			int s = pick(0);
			if (s <= 0)
				continue;
			full(p, e[s].path);
			if (e[s].type == 'd') {
				if (rmdir(p) == 0)
					del(s);
				else if (errno != ENOTEMPTY)
					check(-1, "rmdir", p, 0);
			} else {
				check(unlink(p), "unlink", p, 0);
				del(s);
			}
		}
	}
	used = used_fraction();
	if (used > high)
		high = used;
	printf("churn: %ld ops, %d entries, %lu ENOSPC, highest use %.1f%%, now %.1f%%\n", i, ne, enospc,
	       high * 100, used * 100);
	free(e);
	return 0;
}
