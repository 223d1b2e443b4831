/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The libext2fs peer: the allocator a fuse2fs-style file system gets when it
 * links libext2fs.  Nothing here is tuned; the point is to measure
 * libext2fs exactly as such a program drives it, one mutex included.
 */
#define _GNU_SOURCE
#include "peer_ext2.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct peer_ext2 {
	/* libext2fs keeps no locks of its own: every use of fs, the bitmap
	 * and the superblock counts happens under this one mutex, as fuse2fs
	 * does. */
	pthread_mutex_t lock;
	ext2_filsys fs;
	uint64_t nblocks;
	char path[];
};

#define PEER_BLOCK_SIZE 4096

static int peer_err(errcode_t e)
{
	if (e == EXT2_ET_BLOCK_ALLOC_FAIL)
		return -ENOSPC;
	if (e == EXT2_ET_NO_MEMORY)
		return -ENOMEM;
	/* libext2fs passes system errnos through unchanged. */
	if (e > 0 && e < 4096)
		return -(int)e;
	return -EIO;
}

/*
 * mke2fs lives in /sbin, which is often not on an ordinary user's PATH, so
 * try the usual places before PATH.  posix_spawn, never a shell: the path
 * is passed as one argv element.
 */
static int run_mke2fs(const char *path, uint64_t nblocks)
{
	static const char *const where[] = {"/usr/sbin/mke2fs", "/sbin/mke2fs", NULL};
	char count[32];
	posix_spawn_file_actions_t fa;
	pid_t pid = -1;
	int rc = ENOENT, status;

	snprintf(count, sizeof(count), "%llu", (unsigned long long)nblocks);
	char *const argv[] = {"mke2fs", "-t", "ext4", "-b", "4096", "-F", "-q",
			      (char *)path, count, NULL};

	if (posix_spawn_file_actions_init(&fa))
		return -ENOMEM;
	/* -q still prints to stderr on trouble; keep stdout out of the
	 * benchmark's report. */
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	for (int i = 0; where[i] && rc; i++)
		if (access(where[i], X_OK) == 0)
			rc = posix_spawn(&pid, where[i], &fa, NULL, argv, environ);
	if (rc)
		rc = posix_spawnp(&pid, "mke2fs", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		return -rc;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -EIO;
	return 0;
}

static int make_image(char *path, uint64_t nblocks, int want_temp)
{
	int fd;

	if (want_temp)
		fd = mkstemp(path);
	else
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/* Sparse: mke2fs writes only metadata, so a 4 GiB image costs a few
	 * MiB of disk. */
	if (ftruncate(fd, (off_t)(nblocks * PEER_BLOCK_SIZE)) < 0) {
		int e = -errno;

		close(fd);
		unlink(path);
		return e;
	}
	close(fd);
	return 0;
}

int peer_ext2_create(const char *path, uint64_t nblocks, struct peer_ext2 **out)
{
	struct peer_ext2 *p;
	const char *tmp;
	size_t plen;
	errcode_t e;
	int rc;

	if (!out || nblocks < 64 || nblocks > (UINT64_C(1) << 40))
		return -EINVAL;
	tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	plen = path ? strlen(path) + 1 : strlen(tmp) + sizeof("/bga-peer-ext2-XXXXXX");
	p = calloc(1, sizeof(*p) + plen);
	if (!p)
		return -ENOMEM;
	if (path)
		memcpy(p->path, path, plen);
	else
		snprintf(p->path, plen, "%s/bga-peer-ext2-XXXXXX", tmp);
	p->nblocks = nblocks;

	rc = make_image(p->path, nblocks, !path);
	if (rc)
		goto out_free;
	rc = run_mke2fs(p->path, nblocks);
	if (rc)
		goto out_unlink;
	/* EXT2_FLAG_64BITS gives the 64-bit bitmap API, whose default backend
	 * is the bitarray: the one fuse2fs allocates from. */
	e = ext2fs_open(p->path, EXT2_FLAG_RW | EXT2_FLAG_64BITS, 0, 0, unix_io_manager, &p->fs);
	if (e) {
		rc = peer_err(e);
		goto out_unlink;
	}
	e = ext2fs_read_bitmaps(p->fs);
	if (e) {
		rc = peer_err(e);
		ext2fs_free(p->fs);
		goto out_unlink;
	}
	p->nblocks = ext2fs_blocks_count(p->fs->super);
	pthread_mutex_init(&p->lock, NULL);
	*out = p;
	return 0;

out_unlink:
	unlink(p->path);
out_free:
	free(p);
	return rc;
}

void peer_ext2_destroy(struct peer_ext2 *p)
{
	if (!p)
		return;
	/* ext2fs_free() drops everything without writing the bitmaps and
	 * group descriptors back (ext2fs_close would spend seconds on a
	 * churned image that is unlinked next anyway). */
	ext2fs_free(p->fs);
	unlink(p->path);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

ext2_filsys peer_ext2_fs(struct peer_ext2 *p)
{
	return p->fs;
}

uint64_t peer_ext2_nblocks(struct peer_ext2 *p)
{
	return p->nblocks;
}

uint64_t peer_ext2_free_blocks(struct peer_ext2 *p)
{
	uint64_t n;

	pthread_mutex_lock(&p->lock);
	n = ext2fs_free_blocks_count(p->fs->super);
	pthread_mutex_unlock(&p->lock);
	return n;
}

int peer_ext2_alloc_block(struct peer_ext2 *p, uint64_t goal, uint64_t *out)
{
	blk64_t b;
	errcode_t e;

	pthread_mutex_lock(&p->lock);
	e = ext2fs_new_block2(p->fs, goal, NULL, &b);
	if (!e)
		ext2fs_block_alloc_stats2(p->fs, b, +1);
	pthread_mutex_unlock(&p->lock);
	if (e)
		return peer_err(e);
	*out = b;
	return 0;
}

/*
 * ext2fs_new_range(MIN_LENGTH) as it would answer if it always returned.
 * It does not (e2fsprogs 1.47.0): when its scan finds no free block
 * between where it is and the end, it starts again at the first data
 * block without noting that it has gone round, so with the last block in
 * use and no free run of len anywhere it scans the bitmap for ever
 * (bga-replay's ext2 peer on bgafs under the exerciser; its scan wraps
 * properly only when it runs off the end of the bitmap).  So the last
 * block, when in use, is shown free to it for the call (its bitmap bit
 * alone: no counts change), which makes every scan run off the end.
 * A run it then returns that takes in that block is one block too short:
 * the next step of its search is the one from the first data block, and
 * that call fails if it can find only the same run again.  Wherever
 * new_range returns on its own this gives what it gives.
 */
static errcode_t new_range_min(ext2_filsys fs, blk64_t goal, blk64_t len, blk64_t *b)
{
	ext2fs_block_bitmap map = fs->block_map;
	blk64_t last = ext2fs_blocks_count(fs->super) - 1, got;
	int hide = ext2fs_test_block_bitmap2(map, last);
	errcode_t e;

	if (hide)
		ext2fs_unmark_block_bitmap2(map, last);
	e = ext2fs_new_range(fs, EXT2_NEWRANGE_MIN_LENGTH, goal, len, NULL, b, &got);
	if (!e && hide && *b + got > last)
		e = ext2fs_new_range(fs, EXT2_NEWRANGE_MIN_LENGTH, fs->super->s_first_data_block, len, NULL, b,
				     &got);
	if (!e && (got != len || (hide && *b + got > last)))
		e = EXT2_ET_BLOCK_ALLOC_FAIL;
	if (hide)
		ext2fs_mark_block_bitmap2(map, last);
	return e;
}

int peer_ext2_alloc_range(struct peer_ext2 *p, uint64_t goal, uint64_t len, uint64_t *out)
{
	blk64_t b;
	errcode_t e;

	if (len == 0 || len > UINT32_MAX)
		return -EINVAL;
	pthread_mutex_lock(&p->lock);
	/* MIN_LENGTH: without it new_range hands back the first free run
	 * even when it is shorter than len.  With it, the run is exactly len
	 * (never longer), found from goal to the end and then from the start,
	 * as ext2fs_alloc_range() asks. */
	e = new_range_min(p->fs, goal, len, &b);
	if (!e)
		ext2fs_block_alloc_stats_range(p->fs, b, (blk_t)len, +1);
	pthread_mutex_unlock(&p->lock);
	if (e)
		return peer_err(e);
	*out = b;
	return 0;
}

int peer_ext2_free(struct peer_ext2 *p, uint64_t start, uint64_t len)
{
	blk64_t zero;
	errcode_t e;
	int rc = 0;

	if (len == 0 || len > UINT32_MAX || start >= p->nblocks || len > p->nblocks - start)
		return -EINVAL;
	pthread_mutex_lock(&p->lock);
	/* All or nothing, like bga_free: a free bit anywhere in the range
	 * (find_first_zero succeeds) refuses the whole free. */
	e = ext2fs_find_first_zero_block_bitmap2(p->fs->block_map, start, start + len - 1, &zero);
	if (e == 0)
		rc = -EINVAL;
	else if (e != ENOENT)
		rc = peer_err(e);
	else
		ext2fs_block_alloc_stats_range(p->fs, start, (blk_t)len, -1);
	pthread_mutex_unlock(&p->lock);
	return rc;
}
