/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGALLOC_VOLUME_H
#define BGALLOC_VOLUME_H

/*
 * Volumes: their configuration, create, destroy and grow, and the
 * extent, the run of blocks every other part hands out and takes back.
 *
 * A part of <bgalloc.h>, which programs include; its opening comment gives
 * the conventions every contract here follows (errors, -EAGAIN and
 * -ENOSPC, threads).  This file compiles on its own.
 */

#include <stdint.h>

#include <bgalloc/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest volume: 2^48 blocks. */
#define BGA_MAX_BLOCKS (UINT64_C(1) << 48)

/* bga_config.flags: baseline modes, for comparison, and how the volume starts. */
enum {
	BGA_GLOBAL_LOCK = 1u << 0,     /* every group behind one lock (ext3 before 2.5.x, fuse2fs) */
	BGA_ATOMIC_COUNTERS = 1u << 1, /* one shared atomic free counter instead of per-CPU slots */
	/*
	 * Every block starts allocated, as Ceph's allocators start: the
	 * embedder then hands the volume its own free list with bga_free()
	 * or bga_free_vec() (Ceph's init_add_free), and takes ranges back
	 * with bga_claim() (init_rm_free, ext4's ext4_mb_mark_bb).  A group
	 * nothing was freed into has no bitmap (it is wholly used); create
	 * costs its descriptor, 32 bytes a group, and no bitmap.  Blocks a
	 * later bga_grow() adds are free.  bga_load() ignores the flag: the
	 * image says which blocks are allocated.
	 */
	BGA_START_FULL = 1u << 2,
};
/* Each flag is also a macro of its own name, so `#ifdef BGA_START_FULL`
 * tells a program whether the header it is built with has it. */
#define BGA_START_FULL BGA_START_FULL

/*
 * A volume's configuration.  Fill it with bga_config_init(), change the
 * fields wanted, then pass it to bga_create() (or bga_load(), whose image
 * holds the geometry).  Each field's comment gives its range and default.
 */
struct bga_config {
	uint64_t nblocks;          /* volume size in blocks, 1 .. BGA_MAX_BLOCKS */
	uint32_t blocks_per_group; /* default 32768; a multiple of 64, 64 .. 1 << 20 */
	uint64_t first_data_block; /* default 0; blocks below it are never handed out; < nblocks, and may lie
	                              past whole groups, which then hand out nothing */
	uint32_t lock_slots;       /* default 0 = auto: 4 << ilog2(min(ncpus, 32)), raised to one per group up to 256;
	                              else a power of two <= 1 << 20 */
	int32_t counter_batch;     /* default 0 = auto: max(32, 2 * ncpus), raised up to 1024 while
	                              ncpus * batch stays under 1/64 of the capacity; else 1 .. 1 << 24 */
	uint32_t rsv_default;      /* default 8: initial reservation window, blocks; <= rsv_max */
	uint32_t rsv_max;          /* default 1027: largest window; <= 1 << 20 (windows are also capped at blocks_per_group) */
	uint32_t flags;            /* BGA_GLOBAL_LOCK | BGA_ATOMIC_COUNTERS | BGA_START_FULL; other bits -EINVAL */
	/*
	 * Group lock kind, an enum bga_lock_kind of <bgalloc/locktab.h>;
	 * default 0 = BGA_LOCK_DEFAULT, which with BGA_GLOBAL_LOCK means a
	 * pthread mutex: the one lock of fuse2fs (a pthread mutex) and of ext3
	 * before the patch (lock_super, a sleeping semaphore) both sleep.
	 * Values past BGA_LOCK_MUTEX are -EINVAL.
	 */
	uint32_t lock_kind;
	/*
	 * Stripe, in blocks (ext4's stripe=): default 0, none; else at most
	 * blocks_per_group (-EINVAL past it), any value (a RAID stripe need
	 * not be a power of two).  A bga_alloc() or bga_alloc_vec() request
	 * without its own align, a window handle or BGA_EXACT_GOAL whose
	 * min_len and max_len (max_len as capped to a group) are both
	 * multiples of stripe is placed at a start that is a multiple of
	 * stripe, with a length that is one, when such a run exists
	 * anywhere; only when none does is it placed as without a stripe.
	 * Other requests ignore it.  Stored with the volume (bga_store).
	 */
	uint32_t stripe;
	/* more fields may follow */
};

/* A run of blocks: [start, start + len). */
struct bga_extent {
	uint64_t start, len;
};

struct bga_volume;

/*
 * Fill a configuration with the defaults for a volume of nblocks blocks.
 * Every field of struct bga_config gets the default its comment gives;
 * nblocks is not checked here (bga_create does).
 *
 * Returns: nothing.
 * Errors: none.
 * Threads: any thread; touches only *cfg.
 */
BGA_EXTERN void bga_config_init(struct bga_config *cfg, uint64_t nblocks);

/*
 * Create a volume.  Its blocks are all free (except those below
 * first_data_block), or all allocated with BGA_START_FULL.  Groups are
 * initialised lazily, a chunk of 2048 groups at its first touch: memory
 * grows with the groups touched, not with nblocks.  What a volume costs
 * untouched is its fixed state (lock table, counter, per-CPU lines) and a
 * chunk directory of 11 bytes per 2048 groups (for 64 chunks at least,
 * rounded up to a power of two), which bga_grow extends.  With
 * BGA_START_FULL every chunk of the creation size is installed at create
 * (32 bytes of descriptor a group, no bitmap until a group is freed into).
 *
 * Returns: 0, with *out set to the new volume.
 * Errors:
 *  -EINVAL  cfg or out is NULL, or a field of *cfg is out of the range
 *           its comment in struct bga_config gives.
 *  -ENOMEM  the volume's fixed state could not be allocated.
 * Threads: any thread; the new volume is the caller's alone until the
 *   call returns.
 */
BGA_EXTERN int bga_create(const struct bga_config *cfg, struct bga_volume **out);

/*
 * Destroy a volume and free its memory.  NULL is ignored.  Close every
 * bga_rsv handle of the volume first.
 *
 * Returns: nothing.
 * Errors: none.
 * Threads: no other call on the volume may be in flight, nor start.
 */
BGA_EXTERN void bga_destroy(struct bga_volume *vol);

/*
 * Grow the volume to new_nblocks while other threads keep allocating.  The
 * new blocks are free.  Each call sees one size throughout, the old or
 * the new one, when it runs concurrently with a grow.
 *
 * Returns: 0, also when new_nblocks equals the current size.
 * Errors:
 *  -EINVAL  NULL vol, a shrink, or a size past BGA_MAX_BLOCKS or past
 *           2^32 groups.
 *  -ENOMEM  the new geometry or chunk directory could not be allocated.
 * Threads: any thread.  Takes grow_lock (grows are serialised, and wait
 *   for a store's copy), and group locks one at a time under it.  The
 *   geometries it replaces are freed a batch at a time: one call in 32
 *   waits for every thread inside a library call to leave it (an RCU
 *   grace period).
 */
BGA_EXTERN int bga_grow(struct bga_volume *vol, uint64_t new_nblocks);

/*
 * Report the configuration a volume runs with.  Defaults are resolved,
 * and nblocks is the current size.
 *
 * Returns: 0, with the configuration in *out.
 * Errors:
 *  -EINVAL  vol or out is NULL.
 * Threads: any thread; takes no lock.
 */
BGA_EXTERN int bga_volume_config(const struct bga_volume *vol, struct bga_config *out);

#ifdef __cplusplus
}
#endif

#endif
