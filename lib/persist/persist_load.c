/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Load a stored volume (docs/FORMAT.md).  Two passes: the descriptors of
 * every group are read and judged first (which record is in force, which
 * group is quarantined), and only then are bitmaps read and installed, so
 * that the superblock digest can be checked before any group is trusted.
 *
 * Every length read from the image is bounded by the geometry the
 * superblock passed (itself checked against what bga_create accepts), so a
 * hostile image can cost reads and time in proportion to its own size,
 * never an allocation it names.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc/bitmap.h>

#include "persist.h"
#include "persist_format.h"
#include "rcu.h"
#include "group.h"
#include "hooks.h"

/* Bitmaps read on first touch of their chunk (1), or all at load (0). */
#ifndef BGA_LAZY_LOAD
#define BGA_LAZY_LOAD 1
#endif

/* The tuning an image may ask for when the caller passes no config: what
 * bga_create accepts, less lock tables big enough to be an attack. */
#define BGA_LOAD_MAX_SLOTS (1u << 16)

static bool all_zero(const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/*
 * The superblock in force.  A slot of zeros is one no store has used; a
 * slot that is neither zeros nor valid is damage (a crash cannot make it:
 * sectors land whole), so the load fails rather than fall back to an
 * older state that might be the damaged one's predecessor.  When neither
 * slot is even recognisably a superblock, nothing here was ever a bgalloc
 * area (or the caller reads at the wrong offset): -ENODATA, not damage.
 */
static int read_super(const struct bga_io *io, struct bga_pf_sb *best)
{
	unsigned char buf[2 * BGA_PF_SECTOR];
	int rc = io->read(io->ctx, buf, sizeof(buf), 0);
	if (rc)
		return rc > 0 ? -EIO : rc;
	if (!bga__pf_sb_recognised(buf) && !bga__pf_sb_recognised(buf + BGA_PF_SECTOR))
		return -ENODATA;
	int found = 0;
	for (int s = 0; s < 2; s++) {
		const unsigned char *b = buf + s * BGA_PF_SECTOR;
		struct bga_pf_sb sb;
		if (all_zero(b, BGA_PF_SECTOR))
			continue;
		if (bga__pf_sb_decode(b, &sb, NULL))
			return -EUCLEAN;
		if ((sb.gen & 1) != (uint64_t)s)
			return -EUCLEAN;
		if (found && sb.uuid != best->uuid)
			return -EUCLEAN;
		if (!found || sb.gen > best->gen)
			*best = sb;
		found = 1;
	}
	return found ? 0 : -EUCLEAN;
}

static int make_config(const struct bga_pf_sb *sb, const struct bga_config *cfg, struct bga_config *out)
{
	if (cfg) {
		if (cfg->nblocks != sb->nblocks || cfg->blocks_per_group != sb->blocks_per_group ||
		    cfg->first_data_block != sb->first_data_block)
			return -EINVAL;
		*out = *cfg;
		out->flags &= ~(uint32_t)BGA_START_FULL; /* the image says what is allocated */
		return 0;
	}
	bga_config_init(out, sb->nblocks);
	out->blocks_per_group = sb->blocks_per_group;
	out->first_data_block = sb->first_data_block;
	if (sb->lock_slots > BGA_LOAD_MAX_SLOTS)
		return -EUCLEAN;
	out->lock_slots = sb->lock_slots;
	out->counter_batch = sb->counter_batch;
	out->rsv_default = sb->rsv_default;
	out->rsv_max = sb->rsv_max;
	out->flags = sb->flags & ~(uint32_t)BGA_START_FULL;
	out->lock_kind = sb->lock_kind;
	out->stripe = sb->stripe; /* bga_create refuses one past blocks_per_group */
	return 0;
}

struct loader {
	struct bga_volume *vol;
	struct bga_persist *p;
	const struct bga_io *io;
	struct bga_pf_sb sb;
	uint64_t max_gen, digest;
	uint64_t *suspects; /* groups whose other slot is damaged */
	size_t nsuspects, capsuspects;
	uint64_t missing; /* groups with no valid record: their share of the digest is unknown */
	bool stale;
};

static int note_suspect(struct loader *l, uint64_t g)
{
	if (l->nsuspects == l->capsuspects) {
		size_t cap = l->capsuspects ? 2 * l->capsuspects : 64;
		uint64_t *s = realloc(l->suspects, cap * sizeof(*s));
		if (s == NULL)
			return -ENOMEM;
		l->suspects = s;
		l->capsuspects = cap;
	}
	l->suspects[l->nsuspects++] = g;
	return 0;
}

static const struct bga_pgroup quarantine_rec = {0, 0, 0, BGA_DF_QUARANTINED, 0};

static int set_record(struct bga_persist *p, uint64_t g, const struct bga_pgroup *r)
{
	if (memcmp(r, &bga__pf_canonical, sizeof(*r)) == 0 && !bga__pgroup_held(p, g))
		return 0; /* canonical already */
	struct bga_pgroup *slot = bga__pgroup_slot(p, g);
	if (slot == NULL)
		return -ENOMEM;
	*slot = *r;
	return 0;
}

/* Pass one over one unit's descriptor sector. */
static int judge_unit(struct loader *l, uint64_t u, const unsigned char *sec)
{
	uint32_t bpg = l->sb.blocks_per_group;
	for (uint32_t i = 0; i < BGA_PF_UNIT_GROUPS; i++) {
		uint64_t g = u * BGA_PF_UNIT_GROUPS + i;
		if (g >= l->sb.ngroups)
			break;
		struct bga_pgroup r[2];
		int ok[2], chosen = -1;
		bool damaged[2];
		for (unsigned s = 0; s < 2; s++) {
			const unsigned char *d = sec + (2 * i + s) * BGA_PF_DESC_BYTES;
			ok[s] = bga__pf_desc_decode(d, l->p->uuid, g, bpg, &r[s]);
			damaged[s] = !ok[s] && !all_zero(d, BGA_PF_DESC_BYTES);
			if (ok[s]) {
				r[s].slot = (uint8_t)s;
				if (r[s].gen > l->max_gen)
					l->max_gen = r[s].gen;
				if (r[s].gen > l->sb.gen) {
					l->stale = true; /* left by a store that never committed */
					ok[s] = 0;
				}
			}
		}
		if (ok[0] && ok[1])
			chosen = r[1].gen > r[0].gen ? 1 : 0;
		else if (ok[0] || ok[1])
			chosen = ok[1];
		struct bga_pgroup rec = chosen >= 0 ? r[chosen] : quarantine_rec;
		if (chosen < 0)
			l->missing++;
		if (chosen >= 0) {
			l->digest += bga__pgroup_digest(g, &rec);
			if (damaged[chosen ^ 1]) {
				int rc = note_suspect(l, g);
				if (rc)
					return rc;
			}
		}
		int rc = set_record(l->p, g, &rec);
		if (rc)
			return rc;
	}
	return 0;
}

static int judge_all(struct loader *l)
{
	unsigned char sec[BGA_PF_SECTOR];
	uint64_t nunits = (l->sb.ngroups + BGA_PF_UNIT_GROUPS - 1) / BGA_PF_UNIT_GROUPS;
	for (uint64_t u = 0; u < nunits; u++) {
		int rc = l->io->read(l->io->ctx, sec, sizeof(sec),
				     bga_pf_desc_off(l->sb.blocks_per_group, u * BGA_PF_UNIT_GROUPS));
		if (rc)
			return rc > 0 ? -EIO : rc;
		/* Every store writes every unit once (the format), so a unit of
		 * zeros is a truncated or foreign area: stop before reading on
		 * through what could be terabytes of holes. */
		if (all_zero(sec, sizeof(sec)))
			return -EUCLEAN;
		rc = judge_unit(l, u, sec);
		if (rc)
			return rc;
	}
	/*
	 * A damaged newest record lets an older one pass; the digest tells.
	 * The groups that can hide such damage are the suspects (a damaged
	 * slot beside the one chosen): quarantine them all.  A group with no
	 * valid record at all (quarantined already) hides its share of the
	 * sum, so the suspects go too.  With neither, the damage is elsewhere
	 * and nothing can be trusted.
	 */
	if (l->digest != l->sb.digest) {
		if (l->nsuspects == 0 && l->missing == 0)
			return -EUCLEAN;
		for (size_t k = 0; k < l->nsuspects; k++) {
			int rc = set_record(l->p, l->suspects[k], &quarantine_rec);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* ---- installing groups ---- */

/*
 * Read group g's bitmap per its record r; NULL with *rc 0 when it fails
 * its checksum or its shape (bits outside the span must be set), NULL
 * with *rc < 0 on an I/O error or ENOMEM.
 */
static uint64_t *read_bitmap(struct bga_volume *vol, struct bga_persist *p, const struct bga_io *io, uint64_t g,
			     const struct bga_pgroup *r, uint32_t lo, uint32_t hi, unsigned char *buf, int *rc)
{
	uint32_t bpg = vol->cfg.blocks_per_group, bmbytes = bga_pf_bitmap_bytes(bpg);
	pthread_mutex_lock(&p->io_lock);
	*rc = io->read(io->ctx, buf, bmbytes, bga_pf_bitmap_off(bpg, g, r->slot));
	pthread_mutex_unlock(&p->io_lock);
	if (*rc)
		return *rc = *rc > 0 ? -EIO : *rc, NULL;
	if (bga_pf_crc(buf, bmbytes) != r->bmcrc)
		return NULL;
	uint64_t *map = malloc(BGA_BITMAP_WORDS(bpg) * sizeof(uint64_t));
	if (map == NULL)
		return *rc = -ENOMEM, NULL;
	for (uint32_t j = 0; j < bpg / 64; j++)
		map[j] = bga_pf_get64(buf + 8 * j);
	if (!bga_bitmap_range_is_set(map, 0, lo) || !bga_bitmap_range_is_set(map, hi, bpg - hi)) {
		free(map);
		return NULL;
	}
	return map;
}

/* Install one group of an installed chunk from its record.  0, or an I/O
 * error or -ENOMEM (the group then stays as it was). */
static int install_group(struct bga_volume *vol, struct bga_persist *p, const struct bga_io *io, uint64_t g,
			 unsigned char *buf)
{
	struct bga_pgroup r = bga__pgroup_get(p, g);
	uint64_t *map = NULL;
	bool quarantine = r.flags & BGA_DF_QUARANTINED;
	if (r.flags & BGA_DF_UNINIT)
		return 0;
	struct bga_chunk *ch = bga__chunk_get(vol, g >> BGA_CHUNK_SHIFT);
	struct bga_group *grp = &ch->groups[g & (BGA_CHUNK_GROUPS - 1)];
	uint32_t bpg = vol->cfg.blocks_per_group, lo, hi, free = 0;
	bga__grp_span(vol, grp, g, &lo, &hi);
	if (r.flags & BGA_DF_BITMAP) {
		int rc;
		map = read_bitmap(vol, p, io, g, &r, lo, hi, buf, &rc);
		if (rc)
			return rc;
		quarantine = map == NULL;
	}
	bga__group_lock(vol, g);
	if (map) {
		free = bpg - (uint32_t)bga_bitmap_popcount(map, 0, bpg);
		grp->bitmap = map;
	}
	__atomic_store_n(&grp->free, free, __ATOMIC_RELAXED);
	if (quarantine)
		grp->flags |= BGA_GROUP_QUARANTINED | BGA_GROUP_DIRTY; /* stored as quarantined next time */
	if (map)
		bga__group_refresh_locked(vol, grp, g);
	else
		bga__group_set_run_locked(vol, grp, g, 0);
	bga__group_unlock(vol, g);
	bga_counter_add(vol->used, (int64_t)(hi - lo) - (int64_t)free);
	if (quarantine) {
		__atomic_fetch_add(&p->quarantined, 1, __ATOMIC_RELAXED);
		struct bga_pgroup *slot = bga__pgroup_slot(p, g);
		if (slot)
			*slot = quarantine_rec;
	} else if (map && free != r.free) {
		/* As e2fsck: the bitmap, which passed its checksum, wins over
		 * the count; the next store writes the group again. */
		__atomic_fetch_add(&p->repaired, 1, __ATOMIC_RELAXED);
		bga__group_lock(vol, g);
		grp->flags |= BGA_GROUP_DIRTY;
		bga__group_unlock(vol, g);
	}
	return 0;
}

/* Some group of chunk c, whose groups below ngroups are the volume's, has
 * a record. */
static bool chunk_needs_install(const struct bga_persist *p, uint64_t c, uint64_t ngroups)
{
	const struct bga_pchunk *pc = c < p->npchunk ? p->pchunk[c] : NULL;
	if (pc == NULL)
		return false;
	uint64_t n = BGA_MIN(ngroups - (c << BGA_CHUNK_SHIFT), (uint64_t)pc->cap);
	for (uint32_t i = 0; i < n; i++)
		if (!(pc->rec[i].flags & BGA_DF_UNINIT))
			return true;
	return false;
}

/*
 * Groups of chunks that exist already (bga_create builds those of a
 * partial first or last group) and of chunks with a group quarantined
 * now are installed at once; the rest of each chunk with records waits
 * for its first touch (bga__persist_fill_chunk), charged to the used
 * counter now from its records so that the free counts are exact from
 * the start.  Everything at once with `eager`.
 */
static int install_all(struct bga_volume *vol, struct bga_persist *p, const struct bga_io *io, uint64_t ngroups,
		       bool eager)
{
	uint32_t bpg = vol->cfg.blocks_per_group;
	unsigned char *buf = malloc(bga_pf_bitmap_bytes(bpg));
	uint64_t nchunks = (ngroups + BGA_CHUNK_GROUPS - 1) >> BGA_CHUNK_SHIFT;
	p->pending = calloc((nchunks + 63) / 64, sizeof(uint64_t));
	if (buf == NULL || p->pending == NULL || bga__pchunk_reserve(p, nchunks)) {
		free(buf);
		return -ENOMEM;
	}
	p->npending_chunks = nchunks;
	int rc = 0;
	for (uint64_t c = 0; rc == 0 && c < nchunks; c++) {
		if (!chunk_needs_install(p, c, ngroups))
			continue;
		uint64_t g0 = c << BGA_CHUNK_SHIFT, g1 = BGA_MIN(g0 + BGA_CHUNK_GROUPS, ngroups);
		bool now = eager || bga__chunk_get(vol, c) != NULL;
		for (uint64_t g = g0; g < g1 && !now; g++)
			now = bga__pgroup_get(p, g).flags == BGA_DF_QUARANTINED;
		if (!now) {
			/* Charged whole until read: the free blocks its
			 * records claim are not promised before a bitmap
			 * vouches for them (types.h, vol->unverified). */
			int64_t used = 0;
			uint64_t unverified = 0;
			for (uint64_t g = g0; g < g1; g++) {
				struct bga_pgroup r = bga__pgroup_get(p, g);
				used += r.flags == BGA_DF_UNINIT ? 0 : bpg;
				unverified += r.flags == BGA_DF_BITMAP ? r.free : 0;
			}
			bga_counter_add(vol->used, used);
			__atomic_fetch_add(&vol->unverified, unverified, __ATOMIC_RELEASE);
			p->pending[c / 64] |= UINT64_C(1) << (c % 64);
			p->npending++;
			continue;
		}
		if (bga__chunk_ensure(vol, c) == NULL) {
			rc = -ENOMEM;
			break;
		}
		for (uint64_t g = g0; rc == 0 && g < g1; g++)
			rc = install_group(vol, p, io, g, buf);
	}
	free(buf);
	return rc;
}

/* Set index bits of group i of an unpublished chunk for max_run. */
static void set_bits(struct bga_volume *vol, struct bga_chunk *ch, uint32_t i, uint32_t run)
{
	for (unsigned k = 0; k < BGA_ORDERS; k++) {
		uint64_t m = UINT64_C(1) << (i % 64);
		if (k <= vol->max_order && (UINT32_C(1) << k) <= run)
			ch->bits[k][i / 64] |= m;
		else
			ch->bits[k][i / 64] &= ~m;
	}
}

int bga__persist_fill_chunk(struct bga_volume *vol, struct bga_chunk *ch, uint64_t c)
{
	struct bga_persist *p = __atomic_load_n(&vol->persist, __ATOMIC_ACQUIRE);
	if (!bga__persist_pending(vol, c))
		return 0;
	uint32_t bpg = vol->cfg.blocks_per_group;
	unsigned char *buf = malloc(bga_pf_bitmap_bytes(bpg));
	if (buf == NULL)
		return -ENOMEM;
	/* The groups first, the shared counts after: running out of memory
	 * half way leaves nothing to undo but this chunk's bitmaps (a
	 * transient -ENOMEM must not quarantine a sound group, which the
	 * next store would write as damaged). */
	int64_t delta = 0;
	uint64_t quarantined = 0, repaired = 0, unverified = 0;
	int lazy_err = 0;
	/* Groups past the chunk's words are past the volume: no records. */
	for (uint32_t i = 0, n = BGA_MIN(64 * bga__chunk_words(ch), BGA_CHUNK_GROUPS); i < n; i++) {
		uint64_t g = (c << BGA_CHUNK_SHIFT) + i;
		struct bga_pgroup r = bga__pgroup_get(p, g);
		if (r.flags == BGA_DF_UNINIT)
			continue;
		struct bga_group *grp = &ch->groups[i];
		uint32_t lo, hi;
		bga__grp_span(vol, grp, g, &lo, &hi);
		/* charged whole at load (install_all); what its records
		 * called free is verified now */
		int64_t charged = hi - lo;
		unverified += r.flags == BGA_DF_BITMAP ? r.free : 0;
		uint64_t *map = NULL;
		bool quarantine = r.flags == BGA_DF_QUARANTINED;
		if (r.flags == BGA_DF_BITMAP) {
			int rc;
			map = read_bitmap(vol, p, &p->io, g, &r, lo, hi, buf, &rc);
			if (rc == -ENOMEM) {
				for (uint32_t j = 0; j < i; j++) {
					free(ch->groups[j].bitmap);
					ch->groups[j].bitmap = NULL;
				}
				free(buf);
				return -ENOMEM;
			}
			if (rc && !lazy_err)
				lazy_err = rc;
			quarantine = map == NULL;
		}
		uint32_t free = map ? bpg - (uint32_t)bga_bitmap_popcount(map, 0, bpg) : 0;
		grp->bitmap = map;
		grp->free = free;
		grp->max_run = map ? (uint32_t)bga_bitmap_longest_zero_run(map, hi) : 0;
		set_bits(vol, ch, i, grp->max_run);
		if (quarantine) {
			/* stored as quarantined at the next store */
			grp->flags |= BGA_GROUP_QUARANTINED | BGA_GROUP_DIRTY;
			quarantined++;
		} else if (map && free != r.free) {
			grp->flags |= BGA_GROUP_DIRTY;
			repaired++;
		}
		delta += (int64_t)(hi - lo) - (int64_t)free - charged;
	}
	free(buf);
	if (lazy_err && !p->lazy_err)
		p->lazy_err = lazy_err;
	__atomic_fetch_add(&p->quarantined, quarantined, __ATOMIC_RELAXED);
	__atomic_fetch_add(&p->repaired, repaired, __ATOMIC_RELAXED);
	/* Only what the bitmaps verified is given back, so a group found
	 * damaged, or with fewer free blocks than its count said, takes
	 * nothing from a promise: no promise was made on it. */
	__atomic_fetch_sub(&vol->unverified, unverified, __ATOMIC_RELEASE);
	if (delta)
		bga_counter_add(vol->used, delta);
	__atomic_fetch_and(&p->pending[c / 64], ~(UINT64_C(1) << (c % 64)), __ATOMIC_RELEASE);
	__atomic_fetch_sub(&p->npending, 1, __ATOMIC_RELEASE);
	return 0;
}

static int prefetch(struct bga_volume *vol, struct bga_persist *p)
{
	for (uint64_t c = 0; c < p->npending_chunks; c++) {
		if (__atomic_load_n(&p->stop, __ATOMIC_RELAXED))
			return 0;
		if (bga__persist_pending(vol, c) && bga__chunk_ensure(vol, c) == NULL)
			return -ENOMEM;
	}
	bga__grow_lock(vol);
	int rc = p->lazy_err;
	bga__grow_unlock(vol);
	return rc;
}

int bga_prefetch(struct bga_volume *vol)
{
	if (vol == NULL)
		return -EINVAL;
	struct bga_persist *p = __atomic_load_n(&vol->persist, __ATOMIC_ACQUIRE);
	return p ? prefetch(vol, p) : 0;
}

int bga__persist_settle(struct bga_volume *vol)
{
	struct bga_persist *p = __atomic_load_n(&vol->persist, __ATOMIC_ACQUIRE);
	if (!p || !__atomic_load_n(&p->npending, __ATOMIC_ACQUIRE))
		return 0;
	/* A read error quarantines what it could not read (the chunk is then
	 * built); only a chunk that could not be built stays pending. */
	return prefetch(vol, p) == -ENOMEM ? -ENOMEM : 0;
}

static void *prefetch_thread(void *arg)
{
	struct bga_volume *vol = arg;
	prefetch(vol, vol->persist);
	return NULL;
}

int bga_load_ex(const struct bga_io *io, const struct bga_config *cfg, uint32_t flags, struct bga_volume **out)
{
	if (io == NULL || out == NULL || io->read == NULL || io->write == NULL || io->flush == NULL ||
	    (flags & ~(uint32_t)(BGA_LOAD_STRICT | BGA_LOAD_PREFETCH)))
		return -EINVAL;
	struct loader l;
	memset(&l, 0, sizeof(l));
	int rc = read_super(io, &l.sb);
	if (rc)
		return rc;
	struct bga_config c;
	rc = make_config(&l.sb, cfg, &c);
	if (rc)
		return rc;
	struct bga_volume *vol;
	rc = bga_create(&c, &vol);
	if (rc)
		return rc == -EINVAL && cfg == NULL ? -EUCLEAN : rc;
	struct bga_persist *p = bga__persist_get(vol);
	if (p == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	p->uuid = l.sb.uuid;
	/* chunk installs fill from the image while chunks are pending */
	bga__persist_hooks_attach(vol);
	l.vol = vol;
	l.p = p;
	l.io = io;
	l.max_gen = l.sb.gen;
	rc = judge_all(&l);
	if (rc)
		goto fail;
	/* Strict must see every bitmap before it answers. */
	rc = install_all(vol, p, io, l.sb.ngroups, (flags & BGA_LOAD_STRICT) || !BGA_LAZY_LOAD);
	if (rc)
		goto fail;
	if ((flags & BGA_LOAD_STRICT) && p->quarantined) {
		rc = -EUCLEAN;
		goto fail;
	}
	__atomic_store_n(&vol->last_committed, l.sb.last_txn, __ATOMIC_RELAXED);
	p->io = *io;
	p->have_io = true;
	p->gen = l.sb.gen;
	p->next_gen = l.max_gen + 1;
	p->stored_ngroups = l.sb.ngroups;
	p->digest = l.sb.digest;
	p->tag = l.sb.tag;
	/* A slot an uncommitted store left, or a group whose record must
	 * change: the next store rewrites every unit (and the digest). */
	p->force_full = l.stale || p->quarantined || p->repaired || l.digest != l.sb.digest;
	free(l.suspects);
	if ((flags & BGA_LOAD_PREFETCH) && p->npending &&
	    pthread_create(&p->prefetcher, NULL, prefetch_thread, vol) == 0)
		p->prefetching = true;
	*out = vol;
	return 0;
fail:
	free(l.suspects);
	bga_destroy(vol);
	return rc;
}

int bga_load(const struct bga_io *io, const struct bga_config *cfg, struct bga_volume **out)
{
	return bga_load_ex(io, cfg, 0, out);
}

const struct bga_store_hooks bga__persist_hooks = {
	.chunk_fill = bga__persist_fill_chunk,
	.settle = bga__persist_settle,
	.pending = bga__persist_pending,
	.quiesce = bga__persist_quiesce,
	.destroy = bga__persist_destroy,
};
