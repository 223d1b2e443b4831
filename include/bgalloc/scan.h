/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGALLOC_SCAN_H
#define BGALLOC_SCAN_H

/*
 * The scan of a stored metadata area (bga_store's format,
 * docs/FORMAT.md): what an administrator's tool sees of an area without
 * loading it, read-only: its superblock, each group's descriptor and
 * each problem, with the byte offset where it lies.  bga-inspect(1) is
 * built on it.
 *
 * A part of <bgalloc.h>, which programs include; its opening comment gives
 * the conventions every contract here follows (errors, -EAGAIN and
 * -ENOSPC, threads).  This file compiles on its own.
 */

#include <stdint.h>

#include <bgalloc/export.h>
#include <bgalloc/persist.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The superblock a scan found: the valid slot of highest generation. */
struct bga_scan_sb {
	uint64_t gen;              /* raised by one at each completed bga_store */
	uint64_t uuid;             /* the area's, set at its format */
	uint64_t nblocks, ngroups, first_data_block;
	uint64_t free_blocks;      /* as the store counted them */
	uint64_t groups_inited;    /* groups that were ever initialised */
	uint64_t last_txn;         /* the last committed transaction stored */
	uint64_t digest;           /* over every group's record */
	uint64_t tag;              /* bga_store_tagged's tag (0: none) */
	uint32_t version;          /* the format's version */
	uint32_t slot;             /* which of the two slots (0, 1) */
	uint32_t blocks_per_group, lock_slots, rsv_default, rsv_max, flags, lock_kind, stripe;
	int32_t counter_batch;     /* the config the volume was stored with */
};

/* What a scan reports (struct bga_scan_item's kind). */
enum {
	BGA_SCAN_SUPER_BAD = 1,  /* a superblock slot that is not zero and fails its checks (a problem) */
	BGA_SCAN_GROUP = 2,      /* a group's valid descriptor (a problem if its state is quarantined) */
	BGA_SCAN_GROUP_BAD = 3,  /* a group with no valid descriptor: a load quarantines it (a problem) */
	BGA_SCAN_BITMAP_BAD = 4, /* a group's bitmap that fails its checksum: a load quarantines it (a problem) */
	BGA_SCAN_READ = 5,       /* a read that failed: what it held was not scanned (a problem) */
};

/* A group's stored state (struct bga_scan_item's state). */
enum {
	BGA_SCAN_UNINIT = 1,      /* never initialised: wholly free, no bitmap */
	BGA_SCAN_FULL = 2,        /* wholly used, no bitmap */
	BGA_SCAN_BITMAP = 3,      /* its bitmap holds its map */
	BGA_SCAN_QUARANTINED = 4, /* stored as quarantined: wholly used, no bitmap */
};

/* One thing a scan found. */
struct bga_scan_item {
	uint32_t kind;   /* BGA_SCAN_SUPER_BAD ... BGA_SCAN_READ */
	uint32_t slot;   /* SUPER_BAD: the slot; GROUP: the descriptor slot chosen */
	uint64_t offset; /* byte offset in the area (io's offsets) of what it names */
	uint64_t len;    /* READ: the bytes that could not be read; else 0 */
	uint64_t group;  /* the group (GROUP, GROUP_BAD, BITMAP_BAD; READ of a bitmap);
			  * else UINT64_MAX */
	uint64_t gen;    /* GROUP: the descriptor's generation */
	uint32_t state;  /* GROUP: BGA_SCAN_UNINIT ... BGA_SCAN_QUARANTINED */
	uint32_t free;   /* GROUP: free blocks as stored */
	int err;         /* READ: the read's negative errno; else 0 */
	const char *why; /* SUPER_BAD: what was wrong, in words (static); else NULL */
};

/* bga_scan flags */
enum {
	BGA_SCAN_SUPER_ONLY = 1u << 0, /* read the superblocks only: no group is reported */
};

typedef int (*bga_scan_cb)(void *ctx, const struct bga_scan_item *item);

/*
 * Scan a stored metadata area without loading it, read-only.  Reads both
 * superblock slots (a slot of zeros is no problem: a store never wrote
 * it), takes the valid one of highest generation into *sb, then reads
 * every group's descriptor pair and, for a group stored with its bitmap,
 * the bitmap, and checks each checksum as bga_load does.  cb(ctx, item)
 * (may be NULL) is called for each bad superblock slot, each group in
 * order (its valid descriptor, or GROUP_BAD), each bitmap that fails its
 * checksum and each read that fails, which the scan goes on past.  cb
 * returns 0 to go on; a negative return stops the scan and is returned,
 * a positive one stops it with -ECANCELED.  With
 * BGA_SCAN_SUPER_ONLY in flags, only the superblocks are read.  A group
 * the scan calls bad, bga_load quarantines; a load also repairs a
 * stored free count that disagrees with its bitmap, which a scan does not
 * read.  It writes nothing: io->write and io->flush may be NULL.
 *
 * Returns: the problems found, 0 or more (bad superblock slots, groups
 *   with no valid descriptor or stored as quarantined, bitmaps failing
 *   their checksums, failed reads past the superblocks), with *sb set.
 * Errors:
 *  -EINVAL  io, io->read or sb is NULL, or flags holds an unknown bit;
 *           nothing is read, *sb is unchanged and cb is not called.
 *  -ENODATA neither superblock slot holds a valid superblock (cb was told
 *           of each bad slot); *sb is unchanged.
 *  -ENOMEM  a bitmap's buffer could not be allocated; *sb is set.
 *  -EIO     reading the superblocks failed and the read callback returned
 *           a positive value; its own negative errno is returned as it is
 *           (cb was told, BGA_SCAN_READ); *sb is unchanged.
 *  -ECANCELED cb returned a positive value (a negative one is returned as
 *           it is); *sb is set when cb stopped the scan at a group or a
 *           read past the superblocks, else unchanged.
 * Threads: any thread; takes no lock and needs no volume.  The area must
 *   not be written meanwhile, or what the scan reports mixes two stores.
 */
BGA_EXTERN int bga_scan(const struct bga_io *io, unsigned flags, struct bga_scan_sb *sb, bga_scan_cb cb,
                        void *ctx);

#ifdef __cplusplus
}
#endif

#endif
