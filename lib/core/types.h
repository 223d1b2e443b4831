/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_TYPES_H
#define BGA_TYPES_H

/*
 * The volume: its geometry, its chunk directory, its locks and counters,
 * with their invariants, and the constants the layers share.  Each
 * subsystem's own structs are in its header: a group, its rare state and
 * its chunk (group.h), a window (window.h), a CPU's line (percpu.h), the
 * hooks to persistence (hooks.h) and the allocation context (charge.h).
 * Nothing here is public.
 *
 * The lock order of the volume's locks, and what follows from it: lib/base/lockdep.h.
 */

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include <bgalloc.h>
#include <bgalloc/bitmap.h>
#include <bgalloc/counter.h>
#include <bgalloc/locktab.h>

#include "compiler.h"
#include "counter_impl.h"
#include "cpu.h"
#include "locktab_impl.h"
#include "lockdep.h"

/*
 * Groups are kept in chunks of 2^BGA_CHUNK_SHIFT descriptors, allocated on
 * first touch, so memory follows the groups used, not the volume size.
 * 2048 (DESIGN.md's sketch had 4096): the first touch of a small volume
 * allocates half as much (docs/HISTORY.md#small-volume-changes); the
 * directory of the largest volume holds twice the chunks.  With
 * descriptors a line each (group.h) a chunk is 134 KiB, just past the
 * 128 KiB at which glibc's malloc maps memory instead of taking it from
 * the heap (BENCHMARKS.md#the-model-of-n-cores).
 */
#define BGA_CHUNK_SHIFT 11
#define BGA_CHUNK_GROUPS (1u << BGA_CHUNK_SHIFT)
#define BGA_CHUNK_WORDS (BGA_CHUNK_GROUPS / 64)

/* Orders 0 .. 20: blocks_per_group is at most 2^20. */
#define BGA_ORDERS 21
#define BGA_MAX_BPG (1u << 20)
/* At most 2^32 groups, so the chunk directory stays small. */
#define BGA_MAX_GROUPS (UINT64_C(1) << 32)

struct bga_dfree;
struct bga_chunk;
struct bga_group;
struct bga_percpu;
struct bga_persist;
struct bga_store_hooks;
struct bga_take;
struct bga_volume;
struct bga_window;

/*
 * The chunk directory (chunkdir.c), in segments that never move.  A
 * segment of n chunks (n a multiple of 64) is n chunk pointers followed
 * by its maps, BGA_DIR_MAPS of them, n/64 words each, one bit per chunk;
 * every word is atomic:
 *  - chunk pointer NULL: the chunk is untouched, all its groups full-size
 *    and wholly free;
 *  - map k < BGA_ORDERS, the index's summary of order k: bit set iff the
 *    chunk may hold a group with max_run >= 2^k (a missing chunk counts
 *    as all-free groups): groupidx.c;
 *  - BGA_DIR_DFREE, BGA_DIR_WINS: the chunk's dfree or wins map has a
 *    bit set (groupset.h).
 */
enum { BGA_DIR_DFREE = BGA_ORDERS, BGA_DIR_WINS, BGA_DIR_MAPS };
/* Chunks of the largest volume; segments that hold them when segment 0
 * has 64 chunks, each later one as many as all before: 1 + log2(2^21 / 64). */
#define BGA_DIR_MAX_CHUNKS (BGA_MAX_GROUPS / BGA_CHUNK_GROUPS)
#define BGA_DIR_CHUNKS0 64 /* the least segment 0 holds: one word per map */
#define BGA_DIR_SEGS (1 + 32 - BGA_CHUNK_SHIFT - 6)

/*
 * Geometry, published with RCU (urcu-bp) so bga_grow() can change it while
 * other threads allocate: readers take urcu_bp_read_lock() and use one
 * consistent snapshot for the whole call.
 */
struct bga_geom {
	uint64_t nblocks;
	uint64_t ngroups;
	uint64_t nchunks;
	uint64_t capacity; /* nblocks - first_data_block */
	struct bga_geom *retired; /* next on bga_volume.retired (grow.c) */
};

struct bga_volume {
	struct bga_config cfg;   /* resolved; nblocks is the creation size */
	uint32_t bpg_shift;      /* log2(blocks_per_group) when a power of two, else 0 */
	uint32_t max_order;      /* floor(log2(blocks_per_group)) */
	/* the largest min_len the fast paths serve: blocks_per_group, or
	 * stripe - 1 with a stripe (a request of whole stripes must look for
	 * an aligned run first: search.c) */
	uint32_t fast_min;
	/* BGA_START_FULL: groups below this (the creation size) start wholly
	 * used (group.c); 0 otherwise */
	uint64_t full_groups;
	struct bga_geom *geom;   /* RCU-protected */
	/*
	 * geom->nblocks as of the last completed grow, read without RCU by
	 * the fast paths of bga_alloc and bga_free: a grow stores it (release)
	 * after it has published the new geometry and opened its groups, and
	 * sizes only grow, so every block below it exists, in an open group,
	 * in every geometry a reader can hold.  Anything at or past it goes
	 * to the RCU path, which decides on the geometry itself.
	 */
	uint64_t nblocks_floor;
	/* Replaced geometries still to free, and how many: under grow_lock
	 * (bga__geom_retire, grow.c). */
	struct bga_geom *retired;
	unsigned nretired;

	/*
	 * The chunk directory (chunkdir.c).  Segment 0 (dir0, dir0_chunks
	 * chunks, a power of two >= 64) is sized at create for the volume's
	 * chunks; segment s >= 1 holds chunks [dir0_chunks << (s-1),
	 * dir0_chunks << s), made by a grow that needs it.  dirseg[0] ==
	 * dir0.  Segments and dir_chunks are written under grow_lock only,
	 * before any geometry that reaches into them is published, so a
	 * reader that indexes a chunk of its geometry finds its segment.
	 */
	struct bga_chunk **dir0;
	uint64_t dir0_chunks;
	uint32_t dir0_shift;     /* log2(dir0_chunks) */
	struct bga_chunk **dirseg[BGA_DIR_SEGS]; /* atomic */
	uint64_t dir_chunks;     /* atomic: chunks the segments hold */

	/* Group locks, one per lock-table slot (BGA_LOCKDEP_GROUP in the lock
	 * order, lockdep.h). */
	struct bga_locktab *locks;
	/* Blocks allocated (including those waiting on deferred frees) plus
	 * blocks reserved; never above geom->capacity (add_limited). */
	struct bga_counter *used;

	struct bga_percpu *cpu; /* ncpu entries */
	unsigned ncpu;

	pthread_mutex_t grow_lock;   /* serialises bga_grow and chunk installs
				      * (BGA_LOCKDEP_GROW, lockdep.h) */
	pthread_mutex_t commit_lock; /* serialises bga_commit (BGA_LOCKDEP_COMMIT) */

	struct bga_persist *persist; /* persist.c: NULL until the first store or load */
	/* What the core asks of persistence (struct bga_store_hooks): NULL
	 * until the volume has persistence state; atomic (acquire). */
	const struct bga_store_hooks *store_hooks;
	/*
	 * Atomic: the free blocks that the descriptors of the chunks a lazy
	 * load has not read yet claim.  Until its chunk is read, a group is
	 * charged to `used` whole, as if allocated, so nothing is promised
	 * on space no bitmap has vouched for (bga_reserve's rule): the read
	 * then only gives back what it verified, and a group it quarantines
	 * or repairs downwards takes nothing from a promise.  Free-space
	 * reports add it back (bga_free_exact, bga_free_estimate).
	 */
	uint64_t unverified;

	/*
	 * Written while the volume runs, each on a line of its own (the
	 * volume is allocated line-aligned): beside the read-mostly fields
	 * above, every write would make every other CPU miss on them.
	 */
	uint64_t reserved __attribute__((aligned(BGA_CACHELINE)));       /* atomic */
	uint64_t last_committed __attribute__((aligned(BGA_CACHELINE))); /* atomic */
	/* atomic: summary rechecks (groupidx.c), during which the index may
	 * miss a group for a moment: in flight in the low 32 bits, done in
	 * the high 32 */
	uint64_t idx_recheck_seq __attribute__((aligned(BGA_CACHELINE)));
};

#endif
