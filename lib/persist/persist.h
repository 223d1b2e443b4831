/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_PERSIST_H
#define BGA_PERSIST_H

/*
 * Shared between persist.c (format, superblock, store), persist_load.c
 * (load, lazy reads, prefetch) and the hooks in the rest of the library.
 * A volume that was never stored or loaded has vol->persist == NULL and
 * pays one pointer test on the rare paths that call in here, nothing on
 * the fast paths.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <bgalloc.h>

#include "types.h"

struct bga_volume;
struct bga_chunk;

/* A superblock as persist.c decodes it. */
struct bga_pf_sb {
	uint64_t gen, uuid, nblocks, ngroups, first_data_block;
	uint32_t blocks_per_group, bitmap_bytes;
	uint32_t lock_slots, rsv_default, rsv_max, flags, lock_kind, stripe;
	int32_t counter_batch;
	uint64_t free_blocks, groups_inited, last_txn, digest;
	uint64_t tag; /* bga_store_tagged's */
};

/*
 * The committed record of one group, as the last completed store (or the
 * load) left it on disk: enough to write its descriptor sector again byte
 * for byte when a neighbour in the sector changes.
 */
struct bga_pgroup {
	uint64_t gen;
	uint32_t free, bmcrc;
	uint8_t flags, slot;
};

/* The record of a never-initialised group (gen 1, slot 0, BGA_DF_UNINIT). */
extern const struct bga_pgroup bga__pf_canonical;

/*
 * The records of one chunk's groups: rec[i] for group i of the chunk,
 * i < cap; every group at or past cap has the canonical record.  cap is
 * a power of two from 64 to BGA_CHUNK_GROUPS, doubled when a group past
 * it gets a record (bga__pgroup_slot), so a small volume's chunk holds
 * its own groups' records, not BGA_CHUNK_GROUPS of them, whose making
 * was most of what a small volume's store and load cost under ASan
 * (docs/HISTORY.md#small-volume-changes).
 * An array moves only when a group of its chunk gets a record, which a
 * lazy chunk fill, the one reader outside the store lock, never reads
 * at the same time: it reads only chunks still pending, whose groups no
 * store writes.
 */
struct bga_pchunk {
	uint32_t cap;
	struct bga_pgroup rec[];
};

/*
 * Per-volume persistence state.  Everything but the counters is under
 * `lock`, which serialises stores and lazy loads (BGA_LOCKDEP_STORE, the
 * outermost lock: lib/base/lockdep.h).
 */
struct bga_persist {
	pthread_mutex_t lock;
	struct bga_io io; /* where the committed state lives */
	bool have_io;
	uint64_t uuid;
	uint64_t gen;            /* committed generation; 0 before the first store */
	uint64_t next_gen;       /* above every generation seen in the area */
	uint64_t stored_ngroups; /* groups the committed superblock covers */
	uint64_t digest;         /* the committed superblock's digest */
	uint64_t tag;            /* the tag of the last store that returned 0, or the load's (atomic: bga_volume_tag) */
	bool force_full;         /* some unit may hold an uncommitted slot: rewrite them all */
	bool recommit;           /* the last superblock write may not have landed */
	unsigned char sb_pending[512];
	uint64_t sb_pending_off;
	/* per chunk, the records of its groups; NULL: every group of the
	 * chunk has the canonical never-initialised record */
	struct bga_pchunk **pchunk;
	uint64_t npchunk;
	uint64_t pchunk_end; /* one past the highest chunk with an array: walks stop here */
	uint64_t quarantined, repaired; /* atomic */
	/* Lazy loading (persist_load.c): chunks whose groups' records are
	 * not yet read into the volume, one bit each (atomic), and how many;
	 * the io calls are serialised by io_lock, a leaf lock. */
	pthread_mutex_t io_lock;
	uint64_t *pending;
	uint64_t npending_chunks; /* bits in `pending` */
	uint64_t npending;        /* atomic */
	int lazy_err;             /* the first read error of a lazy read (under grow_lock) */
	bool prefetching;         /* the BGA_LOAD_PREFETCH thread was started */
	int stop;                 /* atomic: bga_destroy asks it to stop */
	pthread_t prefetcher;
	uint64_t bytes_written;         /* by stores, for the benchmarks (atomic) */
};

/* The volume's state, made on first use; NULL on ENOMEM. */
struct bga_persist *bga__persist_get(struct bga_volume *vol);
void bga__pchunks_reset(struct bga_persist *p);
struct bga_pgroup bga__pgroup_get(const struct bga_persist *p, uint64_t g);
/* Whether g's chunk's array holds a slot for g (else its record is the
 * canonical one and no slot is made for it). */
bool bga__pgroup_held(const struct bga_persist *p, uint64_t g);
/* The record directory sized for nchunks chunks at least: a lazy load
 * sizes it for the whole volume, so that a store never moves it while a
 * chunk fill reads it.  0 or -ENOMEM. */
int bga__pchunk_reserve(struct bga_persist *p, uint64_t nchunks);
/* g's record, its chunk's array made on first use; NULL on ENOMEM. */
struct bga_pgroup *bga__pgroup_slot(struct bga_persist *p, uint64_t g);

/* Decode and validate one 512-byte superblock: 0, or -EUCLEAN with *why
 * (optional) naming what was wrong. */
int bga__pf_sb_decode(const unsigned char *buf, struct bga_pf_sb *sb, const char **why);
/* Whether the 512-byte slot at buf is a bgalloc superblock, valid or not:
 * it has the magic, or the format version and size at their offsets (a
 * damaged magic).  What tells a damaged superblock from none. */
bool bga__pf_sb_recognised(const unsigned char *buf);
void bga__pf_sb_encode(unsigned char *buf, const struct bga_pf_sb *sb);
/* Both superblock slots read; *best is the valid one of highest
 * generation.  0, -EUCLEAN (none valid: *why says why slot 0 failed) or
 * the read's error. */
int bga__pf_sb_read_best(const struct bga_io *io, struct bga_pf_sb *best, int *best_slot, const char **why);
void bga__pf_desc_encode(unsigned char *d, uint64_t uuid, uint64_t g, const struct bga_pgroup *r);
/* 1 when the 32 bytes at d are a valid record of group g (in *r), else 0. */
int bga__pf_desc_decode(const unsigned char *d, uint64_t uuid, uint64_t g, uint32_t bpg, struct bga_pgroup *r);

/* g's share of the superblock digest for record r. */
uint64_t bga__pgroup_digest(uint64_t g, const struct bga_pgroup *r);

/*
 * The lazy load's hook in chunk installs (group.c): fill the fresh,
 * unpublished chunk c from the image when its groups are still pending.
 * Caller holds grow_lock and no group lock.  Cannot fail: a group whose
 * bitmap cannot be read (or allocated) is quarantined.
 */
int bga__persist_fill_chunk(struct bga_volume *vol, struct bga_chunk *ch, uint64_t c);
/* Read every pending chunk now (no lock held): for the walks that treat a
 * missing chunk as wholly free (check, stats, foreach, trim, grow, a store
 * that formats).  0, or -ENOMEM when a chunk could not be built: then one
 * is still pending, and the caller must not read a missing chunk as free. */
int bga__persist_settle(struct bga_volume *vol);
/* True when chunk c is still pending: a missing chunk that is not free. */
bool bga__persist_pending(const struct bga_volume *vol, uint64_t c);

/* Stop the prefetch thread (first thing in bga_destroy). */
void bga__persist_quiesce(struct bga_volume *vol);
/* Release the persistence state at bga_destroy. */
void bga__persist_destroy(struct bga_volume *vol);

/* The table of the functions above that the core calls (core/hooks.h), and
 * setting it on a volume that has persistence state (persist_load.c):
 * a store and a load set it once bga__persist_get has returned. */
extern const struct bga_store_hooks bga__persist_hooks;
static inline void bga__persist_hooks_attach(struct bga_volume *vol)
{
	__atomic_store_n(&vol->store_hooks, &bga__persist_hooks, __ATOMIC_RELEASE);
}

/* Groups quarantined at load, and descriptor free counts recomputed from
 * their bitmaps (bga_stats). */
void bga__persist_stats(const struct bga_volume *vol, uint64_t *quarantined, uint64_t *repaired);

#endif
