/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The persistence state and the on-disk records (docs/FORMAT.md): the
 * superblock and descriptor codecs, the per-group committed records, and
 * the little that bga_destroy, the frees and the statistics need.  The
 * bottom of the persistence code: it calls no other persist file and
 * nothing of the volume's, so the store (persist.c) and the load
 * (persist_load.c) both build on it without calling each other.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "persist.h"
#include "persist_format.h"
#include "geom.h"

/* ---- the persistence state ---- */

struct bga_persist *bga__persist_get(struct bga_volume *vol)
{
	struct bga_persist *p = __atomic_load_n(&vol->persist, __ATOMIC_ACQUIRE);
	if (p != NULL)
		return p;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->io_lock, NULL);
	p->next_gen = 1;
	struct bga_persist *expect = NULL;
	if (!__atomic_compare_exchange_n(&vol->persist, &expect, p, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		pthread_mutex_destroy(&p->lock);
		pthread_mutex_destroy(&p->io_lock);
		free(p);
		return expect;
	}
	return p;
}

void bga__pchunks_reset(struct bga_persist *p)
{
	for (uint64_t c = 0; c < p->pchunk_end; c++) {
		free(p->pchunk[c]);
		p->pchunk[c] = NULL;
	}
	p->pchunk_end = 0;
}

void bga__persist_destroy(struct bga_volume *vol)
{
	struct bga_persist *p = vol->persist;
	if (p == NULL)
		return;
	bga__pchunks_reset(p);
	free(p->pchunk);
	free(p->pending);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->io_lock);
	free(p);
	vol->persist = NULL;
}

void bga__persist_stats(const struct bga_volume *vol, uint64_t *quarantined, uint64_t *repaired)
{
	const struct bga_persist *p = __atomic_load_n(&vol->persist, __ATOMIC_ACQUIRE);
	*quarantined = p ? __atomic_load_n(&p->quarantined, __ATOMIC_RELAXED) : 0;
	*repaired = p ? __atomic_load_n(&p->repaired, __ATOMIC_RELAXED) : 0;
}

const struct bga_pgroup bga__pf_canonical = {BGA_PF_UNINIT_GEN, 0, 0, BGA_DF_UNINIT, 0};

/* g's record slot if its chunk's array holds one, else NULL. */
static const struct bga_pgroup *pgroup_held(const struct bga_persist *p, uint64_t g)
{
	const struct bga_pchunk *pc = (g >> BGA_CHUNK_SHIFT) < p->npchunk ? p->pchunk[g >> BGA_CHUNK_SHIFT] : NULL;
	uint32_t i = (uint32_t)(g & (BGA_CHUNK_GROUPS - 1));
	return pc && i < pc->cap ? &pc->rec[i] : NULL;
}

struct bga_pgroup bga__pgroup_get(const struct bga_persist *p, uint64_t g)
{
	const struct bga_pgroup *r = pgroup_held(p, g);
	return r ? *r : bga__pf_canonical;
}

bool bga__pgroup_held(const struct bga_persist *p, uint64_t g)
{
	return pgroup_held(p, g) != NULL;
}

int bga__pchunk_reserve(struct bga_persist *p, uint64_t nchunks)
{
	if (nchunks <= p->npchunk)
		return 0;
	struct bga_pchunk **d = realloc(p->pchunk, nchunks * sizeof(*d));
	if (d == NULL)
		return -ENOMEM;
	memset(d + p->npchunk, 0, (nchunks - p->npchunk) * sizeof(*d));
	p->pchunk = d;
	p->npchunk = nchunks;
	return 0;
}

/* The record slot of g, its chunk's array made on first use. */
struct bga_pgroup *bga__pgroup_slot(struct bga_persist *p, uint64_t g)
{
	uint64_t c = g >> BGA_CHUNK_SHIFT;
	/* the directory follows the chunks that hold records, not the
	 * largest volume: a small volume's costs stay small */
	if (c >= p->npchunk && bga__pchunk_reserve(p, BGA_MAX(c + 1, 2 * p->npchunk)))
		return NULL;
	struct bga_pchunk **pc = &p->pchunk[c];
	uint32_t i = (uint32_t)(g & (BGA_CHUNK_GROUPS - 1));
	if (*pc == NULL || i >= (*pc)->cap) {
		uint32_t old = *pc ? (*pc)->cap : 0, cap = old ? old : 64;
		while (cap <= i)
			cap *= 2;
		struct bga_pchunk *n = realloc(*pc, sizeof(*n) + cap * sizeof(n->rec[0]));
		if (n == NULL)
			return NULL; /* the old array, if any, stays as it was */
		/* the new records canonical: the first, then doubling copies
		 * (a handful of calls, not one struct copy a record: each an
		 * interceptor call under ASan) */
		n->rec[old] = bga__pf_canonical;
		for (uint32_t k = 1; old + k < cap; k *= 2)
			memcpy(n->rec + old + k, n->rec + old, (size_t)BGA_MIN(k, cap - old - k) * sizeof(n->rec[0]));
		n->cap = cap;
		if (*pc == NULL && c >= p->pchunk_end)
			p->pchunk_end = c + 1;
		*pc = n;
	}
	return &(*pc)->rec[i];
}

bool bga__persist_pending(const struct bga_volume *vol, uint64_t c)
{
	const struct bga_persist *p = __atomic_load_n(&vol->persist, __ATOMIC_ACQUIRE);
	return p && c < p->npending_chunks &&
	       ((__atomic_load_n(&p->pending[c / 64], __ATOMIC_ACQUIRE) >> (c % 64)) & 1);
}

void bga__persist_quiesce(struct bga_volume *vol)
{
	struct bga_persist *p = vol->persist;
	if (p && p->prefetching) {
		__atomic_store_n(&p->stop, 1, __ATOMIC_RELAXED);
		pthread_join(p->prefetcher, NULL);
		p->prefetching = false;
	}
}

/* ---- superblock ---- */

void bga__pf_sb_encode(unsigned char *b, const struct bga_pf_sb *sb)
{
	memset(b, 0, BGA_PF_SECTOR);
	memcpy(b + BGA_SB_MAGIC, BGA_PF_MAGIC, 8);
	bga_pf_put32(b + BGA_SB_VERSION, BGA_PF_VERSION);
	bga_pf_put32(b + BGA_SB_SIZE, BGA_PF_SECTOR);
	bga_pf_put64(b + BGA_SB_GEN, sb->gen);
	bga_pf_put64(b + BGA_SB_UUID, sb->uuid);
	bga_pf_put64(b + BGA_SB_NBLOCKS, sb->nblocks);
	bga_pf_put64(b + BGA_SB_NGROUPS, sb->ngroups);
	bga_pf_put64(b + BGA_SB_FIRST, sb->first_data_block);
	bga_pf_put32(b + BGA_SB_BPG, sb->blocks_per_group);
	bga_pf_put32(b + BGA_SB_BMBYTES, sb->bitmap_bytes);
	bga_pf_put32(b + BGA_SB_LOCK_SLOTS, sb->lock_slots);
	bga_pf_put32(b + BGA_SB_BATCH, (uint32_t)sb->counter_batch);
	bga_pf_put32(b + BGA_SB_RSV_DEFAULT, sb->rsv_default);
	bga_pf_put32(b + BGA_SB_RSV_MAX, sb->rsv_max);
	bga_pf_put32(b + BGA_SB_FLAGS, sb->flags);
	bga_pf_put32(b + BGA_SB_LOCK_KIND, sb->lock_kind);
	bga_pf_put32(b + BGA_SB_STRIPE, sb->stripe);
	bga_pf_put64(b + BGA_SB_FREE, sb->free_blocks);
	bga_pf_put64(b + BGA_SB_INITED, sb->groups_inited);
	bga_pf_put64(b + BGA_SB_TXN, sb->last_txn);
	bga_pf_put64(b + BGA_SB_DIGEST, sb->digest);
	bga_pf_put64(b + BGA_SB_TAG, sb->tag);
	bga_pf_put32(b + BGA_SB_CRC, bga_pf_crc(b, BGA_SB_CRC));
}

bool bga__pf_sb_recognised(const unsigned char *b)
{
	return memcmp(b + BGA_SB_MAGIC, BGA_PF_MAGIC, 8) == 0 ||
	       (bga_pf_get32(b + BGA_SB_VERSION) == BGA_PF_VERSION && bga_pf_get32(b + BGA_SB_SIZE) == BGA_PF_SECTOR);
}

int bga__pf_sb_decode(const unsigned char *b, struct bga_pf_sb *sb, const char **why)
{
	const char *w = NULL;
	memset(sb, 0, sizeof(*sb));
	if (memcmp(b + BGA_SB_MAGIC, BGA_PF_MAGIC, 8) != 0)
		w = "bad magic";
	else if (bga_pf_get32(b + BGA_SB_CRC) != bga_pf_crc(b, BGA_SB_CRC))
		w = "bad superblock checksum";
	else if (bga_pf_get32(b + BGA_SB_VERSION) != BGA_PF_VERSION)
		w = "unknown format version";
	else if (bga_pf_get32(b + BGA_SB_SIZE) != BGA_PF_SECTOR)
		w = "bad superblock size";
	if (w == NULL) {
		sb->gen = bga_pf_get64(b + BGA_SB_GEN);
		sb->uuid = bga_pf_get64(b + BGA_SB_UUID);
		sb->nblocks = bga_pf_get64(b + BGA_SB_NBLOCKS);
		sb->ngroups = bga_pf_get64(b + BGA_SB_NGROUPS);
		sb->first_data_block = bga_pf_get64(b + BGA_SB_FIRST);
		sb->blocks_per_group = bga_pf_get32(b + BGA_SB_BPG);
		sb->bitmap_bytes = bga_pf_get32(b + BGA_SB_BMBYTES);
		sb->lock_slots = bga_pf_get32(b + BGA_SB_LOCK_SLOTS);
		sb->counter_batch = (int32_t)bga_pf_get32(b + BGA_SB_BATCH);
		sb->rsv_default = bga_pf_get32(b + BGA_SB_RSV_DEFAULT);
		sb->rsv_max = bga_pf_get32(b + BGA_SB_RSV_MAX);
		sb->flags = bga_pf_get32(b + BGA_SB_FLAGS);
		sb->lock_kind = bga_pf_get32(b + BGA_SB_LOCK_KIND);
		sb->stripe = bga_pf_get32(b + BGA_SB_STRIPE);
		sb->free_blocks = bga_pf_get64(b + BGA_SB_FREE);
		sb->groups_inited = bga_pf_get64(b + BGA_SB_INITED);
		sb->last_txn = bga_pf_get64(b + BGA_SB_TXN);
		sb->digest = bga_pf_get64(b + BGA_SB_DIGEST);
		sb->tag = bga_pf_get64(b + BGA_SB_TAG);
		if (sb->gen == 0)
			w = "generation 0";
		else if (bga__geometry_check(sb->nblocks, sb->blocks_per_group, sb->first_data_block))
			w = "absurd geometry";
		else if (sb->ngroups != (sb->nblocks + sb->blocks_per_group - 1) / sb->blocks_per_group)
			w = "group count disagrees with nblocks";
		else if (sb->bitmap_bytes != bga_pf_bitmap_bytes(sb->blocks_per_group))
			w = "bad bitmap size";
		else if (sb->free_blocks > sb->nblocks - sb->first_data_block || sb->groups_inited > sb->ngroups)
			w = "bad free or group counts";
	}
	if (why)
		*why = w;
	return w ? -EUCLEAN : 0;
}

/* Read both superblock slots; *best the valid one of highest generation.
 * 0, -EUCLEAN (none valid; *why says why slot 0 failed) or an I/O error. */
int bga__pf_sb_read_best(const struct bga_io *io, struct bga_pf_sb *best, int *best_slot, const char **why)
{
	unsigned char buf[2 * BGA_PF_SECTOR];
	int rc = io->read(io->ctx, buf, sizeof(buf), 0);
	if (rc) /* a positive result is out of contract: an I/O error */
		return rc > 0 ? -EIO : rc;
	int found = -1;
	for (int s = 0; s < 2; s++) {
		struct bga_pf_sb sb;
		const char *w;
		if (bga__pf_sb_decode(buf + s * BGA_PF_SECTOR, &sb, &w)) {
			if (s == 0 && why)
				*why = w;
			continue;
		}
		if (found < 0 || sb.gen > best->gen) {
			*best = sb;
			found = s;
		}
	}
	if (found < 0)
		return -EUCLEAN;
	if (best_slot)
		*best_slot = found;
	return 0;
}

/* ---- descriptors ---- */

void bga__pf_desc_encode(unsigned char *d, uint64_t uuid, uint64_t g, const struct bga_pgroup *r)
{
	memset(d, 0, BGA_PF_DESC_BYTES);
	bga_pf_put64(d + BGA_DESC_GEN, r->gen);
	bga_pf_put32(d + BGA_DESC_GROUP, (uint32_t)g);
	bga_pf_put32(d + BGA_DESC_FREE, r->free);
	bga_pf_put32(d + BGA_DESC_FLAGS, r->flags);
	bga_pf_put32(d + BGA_DESC_BMCRC, r->bmcrc);
	bga_pf_put32(d + BGA_DESC_CRC, bga_pf_desc_crc(uuid, d));
}

/* 1 valid (in *r), 0 empty or invalid. */
int bga__pf_desc_decode(const unsigned char *d, uint64_t uuid, uint64_t g, uint32_t bpg, struct bga_pgroup *r)
{
	if (bga_pf_get32(d + BGA_DESC_CRC) != bga_pf_desc_crc(uuid, d))
		return 0;
	r->gen = bga_pf_get64(d + BGA_DESC_GEN);
	r->free = bga_pf_get32(d + BGA_DESC_FREE);
	r->flags = (uint8_t)bga_pf_get32(d + BGA_DESC_FLAGS);
	r->bmcrc = bga_pf_get32(d + BGA_DESC_BMCRC);
	uint32_t flags = bga_pf_get32(d + BGA_DESC_FLAGS);
	if (r->gen == 0 || bga_pf_get32(d + BGA_DESC_GROUP) != (uint32_t)g || r->free > bpg ||
	    bga_pf_get32(d + BGA_DESC_RSVD) != 0 || (flags & ~(uint32_t)BGA_DF_ALL) ||
	    __builtin_popcount(flags & BGA_DF_KNOWN) != 1)
		return 0;
	return 1;
}


uint64_t bga__pgroup_digest(uint64_t g, const struct bga_pgroup *r)
{
	return bga_pf_digest(g, r->gen, r->free, r->flags, r->bmcrc, r->slot);
}

