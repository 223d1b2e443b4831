/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_PEER_EXT2_H
#define BGA_PEER_EXT2_H

/*
 * The libext2fs peer, used the way a user-space file system (fuse2fs) uses
 * it: an image made by `mke2fs -t ext4 -b 4096`, opened with ext2fs_open()
 * (bitarray bitmaps), its bitmaps read with ext2fs_read_bitmaps(), and every
 * call serialised on one mutex because libext2fs is not thread-safe.
 *
 * Block numbers are the file system's; blocks the image's metadata uses
 * are already allocated when it is opened.
 */

#include <stdint.h>

#include <ext2fs/ext2fs.h>

struct peer_ext2;

/*
 * Make an image of `nblocks` 4 KiB blocks at `path` (a sparse file; it is
 * unlinked again by destroy) and open it.  With path NULL the image is a
 * fresh mkstemp() file under $TMPDIR, or /tmp.  mke2fs runs as a child
 * process (no shell), from /usr/sbin, /sbin or PATH.  The file system may
 * be a little smaller than asked (mke2fs trims a partial last group):
 * peer_ext2_nblocks() says what it has.
 * Returns 0; -EINVAL (out NULL, nblocks < 64 or > 2^40); -ENOMEM; -EIO
 * when mke2fs fails; another negative errno from the file system.
 * Not thread-safe; neither is destroy, which writes nothing back.
 */
int peer_ext2_create(const char *path, uint64_t nblocks, struct peer_ext2 **out);
void peer_ext2_destroy(struct peer_ext2 *p);

/* The open file system, for callers that use libext2fs directly (the
 * caller serialises).  */
ext2_filsys peer_ext2_fs(struct peer_ext2 *p);

/* Blocks in the file system, and blocks free now. */
uint64_t peer_ext2_nblocks(struct peer_ext2 *p);
uint64_t peer_ext2_free_blocks(struct peer_ext2 *p);

/*
 * One block near `goal` (ext2fs_new_block2 + ext2fs_block_alloc_stats2),
 * under the mutex.  Returns 0, or -ENOSPC.
 */
int peer_ext2_alloc_block(struct peer_ext2 *p, uint64_t goal, uint64_t *out);

/* A run of exactly `len` blocks at or after `goal` (ext2fs_new_range +
 * ext2fs_block_alloc_stats_range), under the mutex.  0 or -ENOSPC.  Where
 * ext2fs_new_range would never return (peer_ext2.c says when), the
 * answer it would give. */
int peer_ext2_alloc_range(struct peer_ext2 *p, uint64_t goal, uint64_t len, uint64_t *out);

/* Free [start, start + len), under the mutex.  0, or -EINVAL if any block
 * is not allocated. */
int peer_ext2_free(struct peer_ext2 *p, uint64_t start, uint64_t len);

#endif
