/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The checker: every block of the image has exactly one owner (the
 * metadata area, the metadata log, or one file's extent), every owned
 * block is allocated in bgalloc, every allocated block is owned, every
 * directory entry names a live inode whose link count matches, written
 * extents end within the file's size, bga_check() is clean, the namespace
 * is no older than the allocator's last committed transaction, and no
 * unmount recorded changes it could not commit.
 *
 * The mount's reconcile runs the same walk with fix set: leaked blocks
 * (allocated, owned by nobody: the allocator on disk can be a commit ahead
 * of the namespace) are given back.  Anything else it finds stops the mount.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bgafs.h"

#define SHOW 20 /* problems printed per kind */

struct check {
	struct fs *fs;
	uint64_t *owned, *freebm;
	uint64_t *refs; /* per ino: directory entries naming it */
	uint64_t nrefs, *subdirs;
	int problems, shown, verbose;
};

static int test_bit(const uint64_t *bm, uint64_t b)
{
	return (bm[b / 64] >> (b % 64)) & 1;
}

static void set_bit(uint64_t *bm, uint64_t b)
{
	bm[b / 64] |= 1ull << (b % 64);
}

__attribute__((format(printf, 2, 3))) static void problem(struct check *c, const char *fmt, ...)
{
	c->problems++;
	if (c->shown++ >= SHOW * 4)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs("bgafs fsck: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void own(struct check *c, uint64_t start, uint64_t len, uint64_t ino)
{
	uint64_t n = c->fs->sb.nblocks;
	if (start < c->fs->sb.first_data_block || start >= n || len > n - start) {
		problem(c, "ino %llu: extent %llu+%llu outside the data blocks [%llu, %llu)",
			(unsigned long long)ino, (unsigned long long)start, (unsigned long long)len,
			(unsigned long long)c->fs->sb.first_data_block, (unsigned long long)n);
		return;
	}
	for (uint64_t b = start; b < start + len; b++) {
		if (test_bit(c->owned, b))
			problem(c, "block %llu has two owners (one is %s %llu)", (unsigned long long)b,
				ino ? "ino" : "the metadata log", (unsigned long long)ino);
		set_bit(c->owned, b);
	}
}

static int free_cb(void *ctx, uint64_t start, uint64_t len)
{
	struct check *c = ctx;
	for (uint64_t b = start; b < start + len; b++)
		set_bit(c->freebm, b);
	return 0;
}

struct dctx {
	struct check *c;
	struct inode *dir;
};

static int check_dentry(void *ctx, const struct dentry *e)
{
	struct dctx *d = ctx;
	struct check *c = d->c;
	struct inode *child = itab_get(&c->fs->itab, e->ino);
	if (!child || !child->nlink) {
		problem(c, "directory %llu: entry '%s' names ino %llu, which does not exist",
			(unsigned long long)d->dir->ino, e->name, (unsigned long long)e->ino);
		return 0;
	}
	if (e->ino < c->nrefs)
		c->refs[e->ino]++;
	if (S_ISDIR(child->mode)) {
		c->subdirs[d->dir->ino]++;
		if (child->parent != d->dir->ino)
			problem(c, "directory %llu ('%s') has parent %llu, but is in directory %llu",
				(unsigned long long)e->ino, e->name, (unsigned long long)child->parent,
				(unsigned long long)d->dir->ino);
	}
	return 0;
}

static void check_inodes(struct check *c)
{
	struct itab *t = &c->fs->itab;
	for (uint64_t i = 0; i < t->cap; i++) {
		struct inode *ip = t->v[i];
		if (!ip || !ip->nlink)
			continue;
		if (S_ISDIR(ip->mode)) {
			struct dctx d = {c, ip};
			dir_foreach(&ip->dir, check_dentry, &d);
			continue;
		}
		uint64_t eof_blk = (ip->size + BGAFS_BLOCK - 1) / BGAFS_BLOCK, blocks = 0;
		for (uint32_t k = 0; k < ip->map.n; k++) {
			const struct extent *e = &ip->map.v[k];
			own(c, e->pblk, e->len, ip->ino);
			blocks += e->len;
			if (!(e->flags & EXT_UNWRITTEN) && e->lblk + e->len > eof_blk)
				problem(c, "ino %llu: written extent at block %llu+%u past its size %llu",
					(unsigned long long)ip->ino, (unsigned long long)e->lblk, e->len,
					(unsigned long long)ip->size);
			if (k && ip->map.v[k - 1].lblk + ip->map.v[k - 1].len > e->lblk)
				problem(c, "ino %llu: extents overlap at block %llu", (unsigned long long)ip->ino,
					(unsigned long long)e->lblk);
		}
		if (blocks != ip->map.blocks)
			problem(c, "ino %llu: block count %llu, extents hold %llu", (unsigned long long)ip->ino,
				(unsigned long long)ip->map.blocks, (unsigned long long)blocks);
	}
	for (uint64_t i = 0; i < t->cap; i++) {
		struct inode *ip = t->v[i];
		if (!ip || !ip->nlink)
			continue;
		uint64_t want = S_ISDIR(ip->mode) ? 2 + c->subdirs[i] : c->refs[i];
		uint64_t refs = c->refs[i] + (i == BGAFS_ROOT);
		if (!refs)
			problem(c, "ino %llu is in no directory", (unsigned long long)i);
		else if (S_ISDIR(ip->mode) && refs != 1)
			problem(c, "directory %llu is in %llu directories", (unsigned long long)i,
				(unsigned long long)refs);
		if (ip->nlink != want)
			problem(c, "ino %llu: link count %u, should be %llu", (unsigned long long)i, ip->nlink,
				(unsigned long long)want);
	}
}

/* Walk every data block against the allocator; with fix, give leaked runs
 * back.  Returns the number of leaked blocks found. */
static uint64_t check_blocks(struct check *c, int fix)
{
	struct fs *fs = c->fs;
	uint64_t n = fs->sb.nblocks, leaked = 0, run = 0;
	for (uint64_t b = fs->sb.first_data_block; b <= n; b++) {
		int leak = b < n && !test_bit(c->owned, b) && !test_bit(c->freebm, b);
		if (b < n && test_bit(c->owned, b) && test_bit(c->freebm, b))
			problem(c, "block %llu is in use but free in bgalloc", (unsigned long long)b);
		if (leak) {
			run++;
			continue;
		}
		if (!run)
			continue;
		uint64_t start = b - run;
		leaked += run;
		if (fix) { /* the mount's reconcile, before any trace starts: not recorded */
			int rc = bga_free(fs->vol, start, run);
			if (rc)
				problem(c, "giving back leaked blocks %llu+%llu: %s", (unsigned long long)start,
					(unsigned long long)run, bga_strerror(rc));
		} else {
			problem(c, "blocks %llu+%llu are allocated but owned by nothing (leaked)",
				(unsigned long long)start, (unsigned long long)run);
		}
		run = 0;
	}
	return leaked;
}

int fs_check(struct fs *fs, int fix, int verbose)
{
	struct check c = {.fs = fs, .verbose = verbose};
	uint64_t words = (fs->sb.nblocks + 63) / 64;
	c.nrefs = fs->itab.cap;
	c.owned = calloc(words, 8);
	c.freebm = calloc(words, 8);
	c.refs = calloc(c.nrefs + 1, 8);
	c.subdirs = calloc(c.nrefs + 1, 8);
	if (!c.owned || !c.freebm || !c.refs || !c.subdirs) {
		fprintf(stderr, "bgafs fsck: out of memory\n");
		c.problems = 1;
		goto out;
	}
	struct inode *root = itab_get(&fs->itab, BGAFS_ROOT);
	if (!root || !S_ISDIR(root->mode))
		problem(&c, "the root directory is missing");
	for (uint32_t i = 0; i < fs->log_next; i++)
		own(&c, fs->log[i].start, fs->log[i].len, 0);
	if (fs->sb.lost_after && !fix)
		problem(&c, "the daemon could not commit the changes after transaction %llu: they are lost",
			(unsigned long long)fs->sb.lost_after);
	/* The allocator is stored before each record and committed after it,
	 * so the namespace is never older than its last committed
	 * transaction: when it is, a record that was durable (and may have
	 * answered an fsync) did not replay. */
	if (fs->ns_txn < fs->bga_txn) {
		if (fix)
			fprintf(stderr, "bgafs: the namespace (transaction %llu) is older than the allocator's last "
					"commit (%llu): acknowledged changes may be lost; run bgafs fsck\n",
				(unsigned long long)fs->ns_txn, (unsigned long long)fs->bga_txn);
		else
			problem(&c, "the namespace (transaction %llu) is older than the last committed transaction "
				    "(%llu): changes that were durable are lost",
				(unsigned long long)fs->ns_txn, (unsigned long long)fs->bga_txn);
	}
	check_inodes(&c);
	int rc = bga_foreach_free(fs->vol, 0, fs->sb.nblocks, 1, free_cb, &c);
	if (rc)
		problem(&c, "bga_foreach_free: %s", bga_strerror(rc));
	uint64_t leaked = check_blocks(&c, fix);
	if (fix && leaked && verbose)
		fprintf(stderr, "bgafs: reconcile gave back %llu leaked blocks\n", (unsigned long long)leaked);
	struct bga_check_report rep;
	if (bga_check(fs->vol, &rep))
		problem(&c, "bga_check: %d violations, first: %s", rep.violations, rep.message);
out:
	free(c.owned);
	free(c.freebm);
	free(c.refs);
	free(c.subdirs);
	return c.problems;
}
