/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGALLOC_PERSIST_H
#define BGALLOC_PERSIST_H

/*
 * Persistence: store and load through the caller's I/O, and a
 * file-backed I/O (lib/persist/persist.c, lib/persist/persist_load.c;
 * the format is docs/FORMAT.md).
 *
 * A part of <bgalloc.h>, which programs include; its opening comment gives
 * the conventions every contract here follows (errors, -EAGAIN and
 * -ENOSPC, threads).  This file compiles on its own.
 */

#include <stddef.h>
#include <stdint.h>

#include <bgalloc/export.h>
#include <bgalloc/volume.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The caller's I/O over a metadata area, for bga_store() and bga_load().
 * Offsets are bytes from the area's start.  Each
 * callback returns 0 or a negative errno (a positive return reads as
 * -EIO).  Between two flush calls the library assumes writes may reach
 * the device in any order, any subset may be lost, and a write may land in
 * part (each 512-byte sector is atomic); flush returns once every write
 * before it is durable.  Reads of never-written bytes must return zeros or
 * old contents, and must not fail.  The library calls one io from one
 * thread at a time per volume (stores are serialised; lazy bitmap reads
 * take the same lock).  A lazy read runs in whichever thread first touches
 * a chunk (any call on the volume), with internal locks held: callbacks
 * must not call back into bgalloc for that volume.
 */
struct bga_io {
	void *ctx;
	int (*read)(void *ctx, void *buf, size_t len, uint64_t off);
	int (*write)(void *ctx, const void *buf, size_t len, uint64_t off);
	int (*flush)(void *ctx);
};

/* bga_load_ex flags */
enum {
	BGA_LOAD_STRICT = 1u << 0,   /* any quarantined group fails the load with -EUCLEAN */
	BGA_LOAD_PREFETCH = 1u << 1, /* read every bitmap ahead in the background (see bga_prefetch) */
};

/*
 * Compute the bytes of metadata area a volume needs.  nblocks,
 * blocks_per_group and first_data_block of *cfg are read; the area for a
 * volume that will grow must be sized for the size it grows to.
 *
 * Returns: 0, with the size in *bytes.
 * Errors:
 *  -EINVAL  cfg or bytes is NULL, or a geometry bga_create rejects.
 * Threads: any thread; takes no lock.
 */
BGA_EXTERN int bga_metadata_size(const struct bga_config *cfg, uint64_t *bytes);

/*
 * Store the volume's allocation state through io, crash-atomically.  If the
 * machine stops at any point, the next bga_load gives exactly the state of
 * the previous completed store or exactly this one's (docs/FORMAT.md says
 * how: per-group copy-on-write slots and an A/B superblock generation).
 * A return of 0 comes after the new superblock's flush: the stored state
 * is durable, and a caller may bga_commit what it stored.
 *
 * What is stored: which blocks are allocated, and the configuration.
 * Blocks that reservation windows hold but no allocation took are free,
 * and so are those a bga_trim holds claimed for its discard (no caller
 * owns either);
 * blocks waiting on a deferred free are allocated (the journal rule: a
 * file system stores, makes its own metadata durable, then calls
 * bga_commit); reservations (bga_reserve) and windows are not stored.
 *
 * Other threads may allocate and free throughout: the stored state is
 * the volume's state at one instant during the call (the store copies the
 * groups it writes with every group lock held, briefly, then writes from
 * the copies with no lock held).  Concurrent bga_store calls are
 * serialised.  bga_grow waits for the copy.
 *
 * Incremental: after a completed store to the same io (same ctx and
 * callbacks, and the area still holds that store), only groups changed
 * since are written (about bitmap bytes + 512 per changed group, plus
 * 512).  The first store to an area, or to another io, formats it: every
 * group's descriptor and every initialised group's bitmap, and one flush
 * pair.  A crash during a format leaves the area unloadable or, over an
 * older image, that image with damaged (quarantined) groups.
 *
 * The first store after bga_load, through the io the volume was loaded
 * with (the same ctx and callbacks; a copy of the struct will do), is not
 * a format: it builds on the loaded image, incrementally or, when the
 * load found slots a failed store left or repaired a group, as a full
 * store that rewrites every descriptor sector while keeping the loaded
 * records beside the new ones.  Either way it is crash-atomic: a crash
 * at any point loads the loaded state or the new one.  Only a store
 * through another io (another ctx: a second bga_io_file_open of the same
 * file is one) formats the area, with the risk above.
 *
 * The metadata area must hold bga_metadata_size() bytes for the volume's
 * current size.
 *
 * Returns: 0, once the stored state is durable.
 * Errors:
 *  -EINVAL  NULL vol or io, or a NULL callback.
 *  -ENOMEM  the copies could not be allocated; nothing written.
 *  -EIO     a callback returned a positive value.  A callback's own
 *           negative errno is returned as it is.  Either way the previous
 *           completed store is still loadable, and a later store retries.
 * Threads: any thread.  Stores are serialised by the store lock; the copy
 *   holds grow_lock and every group lock at once, briefly; the callbacks
 *   run with no group lock held, under the io lock.
 */
BGA_EXTERN int bga_store(struct bga_volume *vol, const struct bga_io *io);

/*
 * Load a stored volume from the metadata area behind io.  cfg NULL:
 * geometry and tuning from the image; otherwise cfg's nblocks,
 * blocks_per_group and first_data_block must equal the image's (-EINVAL)
 * and its tuning fields (lock kind and slots, counter batch, windows,
 * flags) apply.
 *
 * Validation: no superblock at all (neither slot holds bgalloc's magic:
 * an area no store ever completed in, an empty file, other data, or the
 * wrong offset): -ENODATA.  A superblock that is damaged or absurd, a
 * truncated area, or damage that no group explains: -EUCLEAN.  Either
 * way nothing is allocated.  A group whose descriptor or bitmap
 * fails its checksum is quarantined: counted as used, never allocated
 * from, frees touching it fail with -EUCLEAN, reported by bga_check and
 * counted in bga_stats.groups_quarantined; with BGA_LOAD_STRICT the load
 * fails with -EUCLEAN instead.  A descriptor whose free count disagrees
 * with its (valid) bitmap is recomputed from the bitmap
 * (bga_stats.groups_repaired).  No input makes the load crash, hang or
 * allocate more than the geometry it passed needs.
 *
 * Bitmaps are read lazily, when their chunk of 2048 groups is first
 * touched (an allocation or free there; bga_check, bga_stats,
 * bga_foreach_free, bga_trim, bga_grow and a store to another io read
 * everything first), or all at once with bga_prefetch, BGA_LOAD_PREFETCH
 * (a background thread) or BGA_LOAD_STRICT (at load).  So io and its ctx
 * must stay valid until bga_destroy of the loaded volume.  Free counts are
 * exact from the start (taken from the descriptors), but space is promised
 * only once its bitmap is read (bga_reserve).  A read error on a lazy read
 * quarantines the groups it could not read.
 *
 * The loaded volume's last committed txn (bga_stats.last_committed_txn)
 * is the image's: the last bga_commit before the store that wrote it.
 * Blocks that waited on deferred frees at that store are allocated, with
 * no deferred free pending.  A store through the same io next is not a
 * format (see bga_store).
 *
 * Returns: 0, with *out set to the loaded volume.
 * Errors:
 *  -EINVAL  NULL io, out or callback, or cfg disagreeing with the image.
 *  -ENODATA no superblock at all.
 *  -EUCLEAN a damaged or absurd superblock, a truncated area, or damage
 *           no group explains.
 *  -ENOMEM  the volume could not be allocated.
 *  -EIO     a read callback returned a positive value; a callback's own
 *           negative errno is returned as it is.
 * Threads: any thread; the new volume is the caller's alone until the
 *   call returns.  Reads run under the io lock.
 */
BGA_EXTERN int bga_load(const struct bga_io *io, const struct bga_config *cfg, struct bga_volume **out);

/*
 * Load a stored volume, with flags.  As bga_load(), and flags may hold
 * BGA_LOAD_STRICT (any quarantined group fails the load with -EUCLEAN)
 * and BGA_LOAD_PREFETCH (every bitmap is read ahead by a background
 * thread, as bga_prefetch() would).
 *
 * Returns: 0, with *out set to the loaded volume.
 * Errors:
 *  -EINVAL  as bga_load(), or unknown flags.
 *  -ENODATA no superblock at all.
 *  -EUCLEAN as bga_load(), or, with BGA_LOAD_STRICT, any quarantined
 *           group.
 *  -ENOMEM  the volume, or the prefetch thread, could not be had.
 *  -EIO     a read callback returned a positive value; a callback's own
 *           negative errno is returned as it is.
 * Threads: as bga_load(); with BGA_LOAD_PREFETCH, a background thread
 *   reads chunks (under grow_lock and the io lock) until it is done or
 *   the volume is destroyed.
 */
BGA_EXTERN int bga_load_ex(const struct bga_io *io, const struct bga_config *cfg, uint32_t flags,
                           struct bga_volume **out);

/*
 * Read every not-yet-read bitmap of a loaded volume now.  What it could
 * not read into memory stays unread, to be read at its next touch; the
 * groups it could not read for an I/O error are quarantined.
 *
 * Returns: 0.
 * Errors:
 *  -EINVAL  vol is NULL.
 *  -ENOMEM  a chunk could not be read into memory.
 *  -EIO     a read callback returned a positive value; a callback's own
 *           negative errno is returned as it is.
 * Threads: any thread, concurrently with anything but bga_destroy.
 *   Takes grow_lock and the io lock for each chunk it reads.
 */
BGA_EXTERN int bga_prefetch(struct bga_volume *vol);

/*
 * Open a file-backed bga_io for any embedder.  The metadata area is the
 * bytes [base, ...) of the file at path (created with O_CREAT when create
 * is non-zero), read and written with pread/pwrite, flushed with
 * fdatasync.  Reads past the file's end read zeros.  On any error but
 * -EINVAL, *io is zeroed, so closing it is harmless.  Each call makes a
 * new ctx: a store through it to an area another io stored formats it
 * (bga_store).
 *
 * Returns: 0, with *io ready.
 * Errors:
 *  -EINVAL  path or io is NULL.
 *  -ENOMEM  its context could not be allocated.
 *  -ENOENT  (and any other errno open(2) sets) the file could not be
 *           opened, as open(2) says.
 * Threads: any thread; takes no lock.
 */
BGA_EXTERN int bga_io_file_open(const char *path, uint64_t base, int create, struct bga_io *io);

/*
 * Close a file-backed bga_io and zero *io.  A zeroed io is ignored.
 * Close only after bga_destroy of any volume loaded from it.
 *
 * Returns: nothing.
 * Errors: none.
 * Threads: no other call may use the io.
 */
BGA_EXTERN void bga_io_file_close(struct bga_io *io);

/*
 * Store the volume, as bga_store(), with the caller's transaction tag.
 * The tag is a number the library never interprets (an engine's journal
 * sequence number, a commit id), so that after a crash the engine knows
 * which of its transactions the image matches and what to replay.  Same
 * contract and crash atomicity as bga_store(), and the tag goes with the
 * state: a load (bga_volume_tag of the loaded volume) gives this tag once
 * the call returned 0, and after a crash or an error during it the tag of
 * whichever store's state the load gives, this one's or the previous
 * completed store's.  bga_store() itself stores the volume's current tag
 * (bga_volume_tag) again.
 *
 * Returns: 0, once the stored state and its tag are durable.
 * Errors:
 *  -EINVAL  NULL vol or io, or a NULL callback.
 *  -ENOMEM  the copies could not be allocated; nothing written.
 *  -EIO     a callback returned a positive value.  A callback's own
 *           negative errno is returned as it is.  Either way the previous
 *           completed store, and its tag, are still loadable, and
 *           bga_volume_tag is unchanged.
 * Threads: any thread.  As bga_store: stores are serialised by the store
 *   lock; the copy holds grow_lock and every group lock at once, briefly.
 */
BGA_EXTERN int bga_store_tagged(struct bga_volume *vol, const struct bga_io *io, uint64_t tag);

/*
 * Get the caller's tag of the image the volume matches (bga_store_tagged).
 * It is the one given to the volume's last bga_store_tagged() that
 * returned 0 (a bga_store() keeps it), or, before any, the tag of the
 * image it was loaded from: 0 for an image stored without one (by
 * bga_store only, or by a release before 0.3.0) and for a volume made by
 * bga_create().
 *
 * Returns: 0, with *tag set.
 * Errors:
 *  -EINVAL  NULL vol or tag.
 * Threads: any thread; takes no lock.
 */
BGA_EXTERN int bga_volume_tag(const struct bga_volume *vol, uint64_t *tag);

#ifdef __cplusplus
}
#endif

#endif
