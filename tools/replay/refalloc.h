/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_REPLAY_REFALLOC_H
#define BGA_REPLAY_REFALLOC_H

/*
 * Reference allocators (bga-replay run -a firstfit|bestfit|mballoc): the
 * textbook placements, played over a history to show what it lets an
 * allocator reach, not to be fast.  The free space is kept twice, as a
 * bitmap (the truth) and as its maximal free extents sorted by start and
 * by (length, start) (the index the policies search); every allocation,
 * free and claim checks the bitmap first, and ref_check compares the
 * index with it.
 *
 *   firstfit  the first free run at or after the goal (the volume's start
 *             without one) that holds max_len, wrapping round; when none
 *             does, the first that holds min_len, as much as it holds.
 *   bestfit   the goal's run when it holds max_len from the goal (a file
 *             going on in place); else the smallest run that holds
 *             max_len, the lowest of equals; when none does, the longest,
 *             as much as it holds.
 *   mballoc   ext4's multiblock allocator's two preallocations, over
 *             first fit: a goal-less request of at most 16 blocks
 *             (mb_stream_req) is packed into the locality group's
 *             preallocation of 512 blocks; a file's request (a handle)
 *             is normalised to a preallocation sized by what the file
 *             has written (the power of two above it, 16 to 2048
 *             blocks), tried at the goal, whose rest serves the file's
 *             next requests while they go on in place; a preallocation
 *             is discarded when its file is closed, when a request leaves
 *             it, and before an -ENOSPC.  Preallocated blocks count as
 *             free in the free map, as bgalloc's windows do.
 *
 * Each call keeps bgalloc's contract for what the replay passes (<bgalloc/alloc.h>):
 * min_len .. max_len blocks an extent, align (absolute), BGA_EXACT_GOAL,
 * bga_alloc_vec's pieces each from the end of the one before, and
 * BGA_ALL_OR_NOTHING.  An extent may cross a group boundary, as ext2's do.
 */

#include <stddef.h>
#include <stdint.h>

#include <bgalloc.h>

#include "freemap.h"

enum ref_policy { REF_FIRSTFIT, REF_BESTFIT, REF_MBALLOC };

struct refalloc;
struct ref_file;

/* A volume of nblocks, blocks below fdb never handed out, whose free
 * blocks are fr[0..n) (sorted, disjoint): 0, -EINVAL or -ENOMEM. */
int ref_create(enum ref_policy p, uint64_t nblocks, uint64_t fdb, const struct bga_extent *fr, size_t n,
               struct refalloc **out);
void ref_destroy(struct refalloc *r);

/* A file's state (mballoc's inode preallocation); NULL for the other
 * policies, which keep none.  Close discards its preallocation. */
int ref_file_open(struct refalloc *r, struct ref_file **out);
void ref_file_close(struct refalloc *r, struct ref_file *f);

/* want 0: one extent (out[0], *n = 1), as bga_alloc; else pieces of
 * `want` blocks, as bga_alloc_vec.  0, -EINVAL or -ENOSPC. */
int ref_alloc(struct refalloc *r, struct ref_file *f, const struct bga_request *req, uint64_t want,
              struct bga_extent *out, size_t max_out, size_t *n);
/* Every block in use, or -EINVAL and nothing changed. */
int ref_free(struct refalloc *r, uint64_t start, uint64_t len);
/* Every block free: taken; -EBUSY (one in use) or -EINVAL, nothing changed. */
int ref_claim(struct refalloc *r, uint64_t start, uint64_t len);

/* The index against the bitmap: 0, or -EIO with the first difference
 * printed. */
int ref_check(const struct refalloc *r);
/* The free map (preallocated blocks free); ref_check's result. */
int ref_freemap(const struct refalloc *r, uint64_t group, uint64_t unit, struct freemap *m);

/*
 * For an allocator built over this one's free space (oracle.h: a
 * bestfit refalloc holds the truth, and ref_claim takes what it chose):
 */
/* The free map with held[0..n) (in use here, sorted, disjoint: blocks an
 * allocator holds for a file, free in its map) counted free; ref_check's
 * result, or -EIO where a held run is free here or out of order. */
int ref_freemap_with(const struct refalloc *r, uint64_t group, uint64_t unit, const struct bga_extent *held,
                     size_t n, struct freemap *m);
/* The maximal free extent holding block b: 1 and *e, or 0. */
int ref_free_at(const struct refalloc *r, uint64_t b, struct bga_extent *e);
/* Up to k free extents with an aligned run of `need`, the smallest first
 * (the lowest of equals): how many, in out[]. */
size_t ref_smallest(const struct refalloc *r, uint64_t need, uint64_t align, struct bga_extent *out, size_t k);
/* Whether every block of [start, start + len) is in the volume and in use. */
int ref_in_use(const struct refalloc *r, uint64_t start, uint64_t len);
/* A request refalloc's contract refuses: -EINVAL, else 0. */
int ref_request_ok(const struct refalloc *r, const struct bga_request *req, uint64_t want, size_t max_out);
/* out[0..n) as the request was promised (in the volume, min_len ..
 * max_len when one extent, aligned, in use): 0, or -EIO printed. */
int ref_extents_ok(const struct refalloc *r, const struct bga_request *req, uint64_t want,
                   const struct bga_extent *out, size_t n);
/* One extent by a policy (ctx its state, file the request's file or
 * NULL), and the undoing of one. */
struct ref_ops {
	int (*one)(void *ctx, void *file, uint64_t goal, uint64_t min, uint64_t max, uint64_t align, uint32_t flags,
	           struct bga_extent *out);
	void (*undo)(void *ctx, uint64_t start, uint64_t len);
};
/* want 0: one extent by ops->one; else bga_alloc_vec's pieces, each
 * from the end of the one before (goal), at most max_len and max_out of
 * them, all undone when BGA_ALL_OR_NOTHING is not met. */
int ref_pieces(const struct ref_ops *ops, void *ctx, void *file, const struct bga_request *req, uint64_t want,
               struct bga_extent *out, size_t max_out, size_t *n);

#endif
