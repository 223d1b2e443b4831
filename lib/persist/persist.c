/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Store and load a volume's allocation state through caller I/O
 * (docs/FORMAT.md has the layout and the crash argument).
 *
 * Crash atomicity is copy-on-write per group: every group has two
 * descriptor slots and two bitmap slots, a store writes a changed group
 * into the slot that the committed state does not use, stamped with the
 * store's generation G, flushes, then writes a superblock carrying G into
 * the superblock slot the last one does not use, and flushes again.  A
 * load takes the valid superblock with the highest generation and, per
 * group, the valid descriptor with the highest generation not above it.
 * A slot left by a store that never committed carries a generation above
 * the committed one and is ignored; such a slot is rewritten by the next
 * store before that store's superblock can commit (see `force_full`), so
 * it never comes back to life under a later generation.
 *
 * No group lock is held across an I/O callback: the store copies the
 * groups it writes with every group lock held (one instant, under
 * grow_lock so the geometry holds still), then writes from the copies.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <bgalloc/bitmap.h>

#include "persist.h"
#include "window.h"
#include "persist_format.h"
#include "rcu.h"
#include "group.h"
#include "hooks.h"
#include "geom.h"
#include "charge.h"

/* ---- file-backed io ---- */

struct file_io {
	int fd;
	uint64_t base;
};

static int file_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct file_io *f = ctx;
	unsigned char *p = buf;
	while (len > 0) {
		ssize_t n = pread(f->fd, p, len, (off_t)(f->base + off));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0) { /* past the end of the file: zeros */
			memset(p, 0, len);
			return 0;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int file_write(void *ctx, const void *buf, size_t len, uint64_t off)
{
	struct file_io *f = ctx;
	const unsigned char *p = buf;
	while (len > 0) {
		ssize_t n = pwrite(f->fd, p, len, (off_t)(f->base + off));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int file_flush(void *ctx)
{
	struct file_io *f = ctx;
	return fdatasync(f->fd) ? -errno : 0;
}

int bga_io_file_open(const char *path, uint64_t base, int create, struct bga_io *io)
{
	if (path == NULL || io == NULL || base > (uint64_t)INT64_MAX)
		return -EINVAL;
	/* A failed open leaves an io that bga_io_file_close ignores. */
	memset(io, 0, sizeof(*io));
	struct file_io *f = malloc(sizeof(*f));
	if (f == NULL)
		return -ENOMEM;
	f->fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
	if (f->fd < 0) {
		int rc = -errno;
		free(f);
		return rc;
	}
	f->base = base;
	io->ctx = f;
	io->read = file_read;
	io->write = file_write;
	io->flush = file_flush;
	return 0;
}

void bga_io_file_close(struct bga_io *io)
{
	if (io == NULL || io->ctx == NULL)
		return;
	struct file_io *f = io->ctx;
	close(f->fd);
	free(f);
	memset(io, 0, sizeof(*io));
}

/* ---- sizing ---- */

int bga_metadata_size(const struct bga_config *cfg, uint64_t *bytes)
{
	if (cfg == NULL || bytes == NULL)
		return -EINVAL;
	int rc = bga__geometry_check(cfg->nblocks, cfg->blocks_per_group, cfg->first_data_block);
	if (rc)
		return rc;
	uint32_t bpg = cfg->blocks_per_group;
	*bytes = bga_pf_area_bytes(bpg, (cfg->nblocks + bpg - 1) / bpg);
	return 0;
}

/* ---- store ---- */

/* One group to write: its new record and, for BGA_DF_BITMAP, its map. */
struct wrec {
	uint64_t g;
	struct bga_pgroup rec;
	uint64_t *map;
};

struct snap {
	uint64_t nblocks, ngroups, free_blocks, inited, txn;
	struct wrec *w;
	size_t n;
	uint64_t *maps;
};

static void lock_all(struct bga_volume *vol)
{
	uint32_t n = bga_locktab_nslots(vol->locks);
	for (uint32_t s = 0; s < n; s++) {
		bga__lockdep_acquire(BGA_LOCKDEP_GROUP, s, true);
		bga_locktab_lock(vol->locks, s);
	}
}

static void unlock_all(struct bga_volume *vol)
{
	for (uint32_t s = bga_locktab_nslots(vol->locks); s-- > 0;) {
		bga__lockdep_release(BGA_LOCKDEP_GROUP, s);
		bga_locktab_unlock(vol->locks, s);
	}
}

/* Blocks of the group that no caller owns, as stored: free ones, window
 * remainders and a trim's claims (snapshot).  A group without a bitmap
 * is wholly free or, claimed whole by a trim, stored wholly free. */
static uint32_t unowned_free_locked(const struct bga_group *grp)
{
	return grp->free + bga__window_held_locked(grp) + bga__group_claimed_locked(grp);
}

/* Owners take from their windows with no group lock, so no dirty flag
 * says that a window's remainder shrank: the windows say it themselves
 * (and a window's drop marks the group dirty, for what its owner took). */
static bool want_group(const struct bga_persist *p, const struct bga_group *grp, uint64_t g, bool full)
{
	return full || g >= p->stored_ngroups || (grp->flags & BGA_GROUP_DIRTY) || bga__window_moved_locked(grp);
}

/*
 * Copy every group the store writes, with grow_lock and every group lock
 * held, so the image is the state of one instant (the locks are held for
 * memcpy only: the I/O runs from the copies).  Windows are frozen
 * meanwhile (window.h), and the blocks they hold are written as free, as
 * nobody owns them, and so are the runs a trim holds claimed for its
 * discard (groupdesc.h, bga_trim_claim); blocks waiting on a deferred free are
 * set, so they are stored as allocated (the journal rule).
 */
static int snapshot(struct bga_volume *vol, struct bga_persist *p, bool full, struct snap *s)
{
	uint32_t bpg = vol->cfg.blocks_per_group;
	size_t words = BGA_BITMAP_WORDS(bpg);
	int rc = 0;
	memset(s, 0, sizeof(*s));
	bga__grow_lock(vol);
	lock_all(vol);
	bga__window_freeze_all(vol, true);
	const struct bga_geom *geo = vol->geom;
	s->nblocks = geo->nblocks;
	s->ngroups = geo->ngroups;
	s->txn = __atomic_load_n(&vol->last_committed, __ATOMIC_RELAXED);
	size_t n = 0, nmaps = 0;
	for (uint64_t c = 0; c < geo->nchunks; c++) {
		const struct bga_chunk *ch = bga__chunk_get(vol, c);
		uint64_t g0 = c << BGA_CHUNK_SHIFT, g1 = BGA_MIN(g0 + BGA_CHUNK_GROUPS, geo->ngroups);
		if (ch == NULL && bga__persist_pending(vol, c)) {
			/* not read yet: what its records say */
			for (uint64_t g = g0; g < g1; g++) {
				struct bga_pgroup r = bga__pgroup_get(p, g);
				s->free_blocks += r.flags == BGA_DF_UNINIT ? bpg : r.flags == BGA_DF_BITMAP ? r.free : 0;
				s->inited += r.flags != BGA_DF_UNINIT;
			}
			continue;
		}
		if (ch == NULL) {
			s->free_blocks += (g1 - g0) * bpg;
			continue;
		}
		for (uint64_t g = g0; g < g1; g++) {
			const struct bga_group *grp = &ch->groups[g - g0];
			s->free_blocks += unowned_free_locked(grp);
			if (grp->bitmap || grp->free == 0)
				s->inited++;
			if (want_group(p, grp, g, full)) {
				n++;
				nmaps += grp->bitmap != NULL;
			}
		}
	}
	s->w = malloc((n ? n : 1) * sizeof(*s->w));
	s->maps = malloc((nmaps ? nmaps : 1) * words * sizeof(uint64_t));
	if (s->w == NULL || s->maps == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint64_t c = 0; c < geo->nchunks; c++) {
		struct bga_chunk *ch = bga__chunk_get(vol, c);
		uint64_t g0 = c << BGA_CHUNK_SHIFT, g1 = BGA_MIN(g0 + BGA_CHUNK_GROUPS, geo->ngroups);
		for (uint64_t g = g0; ch && g < g1; g++) {
			struct bga_group *grp = &ch->groups[g - g0];
			if (!want_group(p, grp, g, full))
				continue;
			struct wrec *w = &s->w[s->n++];
			w->g = g;
			w->map = NULL;
			w->rec.free = unowned_free_locked(grp);
			w->rec.bmcrc = 0;
			if (grp->flags & BGA_GROUP_QUARANTINED) {
				w->rec.flags = BGA_DF_QUARANTINED;
				w->rec.free = 0;
			} else if (grp->bitmap) {
				w->rec.flags = BGA_DF_BITMAP; /* its map is copied below */
			} else if (w->rec.free == 0) {
				w->rec.flags = BGA_DF_FULL;
			} else {
				w->rec.flags = BGA_DF_UNINIT;
				w->rec.free = 0;
			}
			grp->flags &= ~(uint32_t)BGA_GROUP_DIRTY;
		}
	}
	/* the maps, in a second walk so the record loop stays simple */
	size_t m = 0;
	for (size_t k = 0; k < s->n; k++) {
		if (s->w[k].rec.flags != BGA_DF_BITMAP)
			continue;
		uint64_t g = s->w[k].g;
		struct bga_group *grp = &bga__chunk_get(vol, g >> BGA_CHUNK_SHIFT)->groups[g & (BGA_CHUNK_GROUPS - 1)];
		s->w[k].map = s->maps + m++ * words;
		memcpy(s->w[k].map, grp->bitmap, words * sizeof(uint64_t));
		bga__window_clear_held_locked(grp, s->w[k].map);
		bga__group_clear_claimed_locked(grp, s->w[k].map);
		bga__window_stored_locked(grp);
	}
out:
	bga__window_freeze_all(vol, false);
	unlock_all(vol);
	bga__grow_unlock(vol);
	if (rc) {
		free(s->w);
		free(s->maps);
		memset(s, 0, sizeof(*s));
	}
	return rc;
}

/* Put the dirty flags back on groups whose write did not commit. */
static void snapshot_undo(struct bga_persist *p)
{
	p->force_full = true;
}

static int io_write(struct bga_persist *p, const struct bga_io *io, const void *buf, size_t len, uint64_t off)
{
	pthread_mutex_lock(&p->io_lock);
	int rc = io->write(io->ctx, buf, len, off);
	pthread_mutex_unlock(&p->io_lock);
	if (rc == 0)
		__atomic_fetch_add(&p->bytes_written, len, __ATOMIC_RELAXED);
	return rc > 0 ? -EIO : rc;
}

static int io_flush(struct bga_persist *p, const struct bga_io *io)
{
	pthread_mutex_lock(&p->io_lock);
	int rc = io->flush(io->ctx);
	pthread_mutex_unlock(&p->io_lock);
	return rc > 0 ? -EIO : rc;
}

/* Write unit u: its descriptor sector and the bitmaps of the groups in
 * s->w[*k ...] that fall in it (advancing *k). */
static int write_unit(struct bga_volume *vol, struct bga_persist *p, const struct bga_io *io, const struct snap *s,
		      uint64_t u, size_t *k, bool format, uint64_t gen, unsigned char *bm, uint64_t *dall,
		      uint64_t *ddelta)
{
	uint32_t bpg = vol->cfg.blocks_per_group, bmbytes = bga_pf_bitmap_bytes(bpg);
	unsigned char sec[BGA_PF_SECTOR];
	memset(sec, 0, sizeof(sec));
	for (uint32_t i = 0; i < BGA_PF_UNIT_GROUPS; i++) {
		uint64_t g = u * BGA_PF_UNIT_GROUPS + i;
		if (g >= s->ngroups)
			break;
		unsigned char *d = sec + i * 2 * BGA_PF_DESC_BYTES;
		if (*k < s->n && s->w[*k].g == g) {
			struct wrec *w = &s->w[(*k)++];
			struct bga_pgroup old = format ? bga__pf_canonical : bga__pgroup_get(p, g);
			w->rec.gen = gen;
			w->rec.slot = format ? 0 : old.slot ^ 1;
			if (w->map) {
				memcpy(bm, w->map, bpg / 8);
				memset(bm + bpg / 8, 0, bmbytes - bpg / 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
				for (uint32_t j = 0; j < bpg / 64; j++)
					bga_pf_put64(bm + 8 * j, w->map[j]);
#endif
				w->rec.bmcrc = bga_pf_crc(bm, bmbytes);
				int rc = io_write(p, io, bm, bmbytes, bga_pf_bitmap_off(bpg, g, w->rec.slot));
				if (rc)
					return rc;
			}
			bga__pf_desc_encode(d + w->rec.slot * BGA_PF_DESC_BYTES, p->uuid, g, &w->rec);
			/* The committed record stays beside it until the new
			 * superblock commits (a format has none to keep). */
			if (!format && old.gen != 0)
				bga__pf_desc_encode(d + old.slot * BGA_PF_DESC_BYTES, p->uuid, g, &old);
			*dall += bga__pgroup_digest(g, &w->rec);
			*ddelta += bga__pgroup_digest(g, &w->rec);
			if (!format && g < p->stored_ngroups)
				*ddelta -= bga__pgroup_digest(g, &old);
		} else {
			/* Unchanged: its committed record again, byte for byte, so
			 * that the sector reads the same for it whichever version
			 * of the sector a crash leaves. */
			struct bga_pgroup old = format ? bga__pf_canonical : bga__pgroup_get(p, g);
			bga__pf_desc_encode(d + old.slot * BGA_PF_DESC_BYTES, p->uuid, g, &old);
			*dall += bga__pgroup_digest(g, &old);
			if (format || g >= p->stored_ngroups)
				*ddelta += bga__pgroup_digest(g, &old);
		}
	}
	return io_write(p, io, sec, sizeof(sec), bga_pf_desc_off(bpg, u * BGA_PF_UNIT_GROUPS));
}

static uint64_t new_uuid(void)
{
	uint64_t u = 0;
	if (getrandom(&u, sizeof(u), GRND_NONBLOCK) != (ssize_t)sizeof(u) || u == 0) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		u = ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)(uintptr_t)&u << 7) ^ 1;
	}
	return u;
}

static bool same_io(const struct bga_io *a, const struct bga_io *b)
{
	return a->ctx == b->ctx && a->read == b->read && a->write == b->write && a->flush == b->flush;
}

static int store_under_store_lock(struct bga_volume *vol, struct bga_persist *p, const struct bga_io *io,
				  uint64_t tag)
{
	bga__lockdep_assert_held(BGA_LOCKDEP_STORE, 0);
	uint32_t bpg = vol->cfg.blocks_per_group;
	int rc;
	if (p->recommit && p->have_io && same_io(&p->io, io)) {
		/* The last store's data is durable (its first flush returned),
		 * its superblock maybe not: write it again before anything can
		 * overwrite the slots it points at. */
		rc = io_write(p, io, p->sb_pending, BGA_PF_SECTOR, p->sb_pending_off);
		if (rc == 0)
			rc = io_flush(p, io);
		if (rc)
			return rc;
		p->recommit = false;
	}
	struct bga_pf_sb cur;
	pthread_mutex_lock(&p->io_lock);
	rc = bga__pf_sb_read_best(io, &cur, NULL, NULL);
	pthread_mutex_unlock(&p->io_lock);
	if (rc && rc != -EUCLEAN)
		return rc;
	bool found = rc == 0;
	bool format = !(p->have_io && same_io(&p->io, io) && !p->recommit && found && cur.uuid == p->uuid &&
			cur.gen == p->gen && p->gen != 0);
	if (p->uuid == 0)
		p->uuid = new_uuid();
	/* A format writes every group from memory: read what is still only
	 * in the old area first (a lazily loaded volume). */
	if (format && bga__chunks_settle(vol) != 0)
		return -ENOMEM; /* nothing written */
	uint64_t gen = p->next_gen;
	if (found && cur.gen >= gen)
		gen = cur.gen + 1;
	bool full = format || p->force_full;

	struct snap s;
	rc = snapshot(vol, p, full, &s);
	if (rc)
		return rc;
	/* Every record the commit will change gets its chunk's array now, so
	 * that nothing can fail once the superblock is on disk. */
	if (format)
		bga__pchunks_reset(p);
	for (size_t k = 0; k < s.n; k++)
		if (bga__pgroup_slot(p, s.w[k].g) == NULL) {
			rc = -ENOMEM;
			goto fail;
		}
	unsigned char *bm = malloc(bga_pf_bitmap_bytes(bpg));
	if (bm == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	uint64_t nunits = (s.ngroups + BGA_PF_UNIT_GROUPS - 1) / BGA_PF_UNIT_GROUPS;
	/* A full store writes every unit, which also clears any slot an
	 * uncommitted store left; an incremental one the units holding a
	 * changed group, then every unit past the committed end. */
	uint64_t new_from = full ? 0 : BGA_MIN(p->stored_ngroups / BGA_PF_UNIT_GROUPS, nunits);
	uint64_t dall = 0, ddelta = 0;
	size_t k = 0;
	while (rc == 0 && k < s.n && s.w[k].g / BGA_PF_UNIT_GROUPS < new_from)
		rc = write_unit(vol, p, io, &s, s.w[k].g / BGA_PF_UNIT_GROUPS, &k, format, gen, bm, &dall, &ddelta);
	for (uint64_t u = new_from; rc == 0 && u < nunits; u++)
		rc = write_unit(vol, p, io, &s, u, &k, format, gen, bm, &dall, &ddelta);
	free(bm);
	if (rc == 0 && format) {
		/* A format leaves the other superblock slot empty (zeros), so
		 * that a load can tell a damaged superblock (non-zero and
		 * invalid) from a slot no store has used. */
		unsigned char zero[BGA_PF_SECTOR] = {0};
		rc = io_write(p, io, zero, sizeof(zero), ((gen & 1) ^ 1) * BGA_PF_SECTOR);
	}
	if (rc == 0)
		rc = io_flush(p, io);
	if (rc)
		goto fail;

	/* The digest of the records this superblock commits: the sum over
	 * every group a full store wrote, else the old sum with the changes. */
	uint64_t digest = full ? dall : p->digest + ddelta;
	struct bga_pf_sb sb = {
		.digest = digest,
		.gen = gen,
		.uuid = p->uuid,
		.nblocks = s.nblocks,
		.ngroups = s.ngroups,
		.first_data_block = vol->cfg.first_data_block,
		.blocks_per_group = bpg,
		.bitmap_bytes = bga_pf_bitmap_bytes(bpg),
		.lock_slots = vol->cfg.lock_slots,
		.rsv_default = vol->cfg.rsv_default,
		.rsv_max = vol->cfg.rsv_max,
		.flags = vol->cfg.flags,
		.lock_kind = vol->cfg.lock_kind,
		.stripe = vol->cfg.stripe,
		.counter_batch = vol->cfg.counter_batch,
		.free_blocks = s.free_blocks,
		.groups_inited = s.inited,
		.last_txn = s.txn,
		.tag = tag,
	};
	bga__pf_sb_encode(p->sb_pending, &sb);
	p->sb_pending_off = (gen & 1) * BGA_PF_SECTOR;
	rc = io_write(p, io, p->sb_pending, BGA_PF_SECTOR, p->sb_pending_off);
	if (rc == 0)
		rc = io_flush(p, io);
	/*
	 * From here the new state is what the next store must build on: its
	 * data is durable, and the superblock either landed or will be
	 * written again first thing (recommit), so the slots it names are
	 * never overwritten while an older superblock might still rule.
	 */
	p->recommit = rc != 0;
	for (k = 0; k < s.n; k++)
		*bga__pgroup_slot(p, s.w[k].g) = s.w[k].rec;
	p->digest = digest;
	p->io = *io;
	p->have_io = true;
	p->gen = gen;
	p->next_gen = gen + 1;
	p->stored_ngroups = s.ngroups;
	p->force_full = false;
	if (rc == 0)
		__atomic_store_n(&p->tag, tag, __ATOMIC_RELEASE);
	free(s.w);
	free(s.maps);
	return rc;
fail:
	snapshot_undo(p);
	if (format)
		p->have_io = false; /* the records were reset: format again */
	if (gen >= p->next_gen)
		p->next_gen = gen + 1;
	free(s.w);
	free(s.maps);
	return rc;
}

/* tag: the caller's, or with keep the volume's own, read under the
 * store lock so that a concurrent tagged store cannot slip between. */
static int store(struct bga_volume *vol, const struct bga_io *io, bool keep, uint64_t tag)
{
	if (vol == NULL || io == NULL || io->read == NULL || io->write == NULL || io->flush == NULL)
		return -EINVAL;
	struct bga_persist *p = bga__persist_get(vol);
	if (p == NULL)
		return -ENOMEM;
	bga__persist_hooks_attach(vol);
	bga__lockdep_acquire(BGA_LOCKDEP_STORE, 0, true);
	pthread_mutex_lock(&p->lock);
	int rc = store_under_store_lock(vol, p, io, keep ? p->tag : tag);
	bga__lockdep_release(BGA_LOCKDEP_STORE, 0);
	pthread_mutex_unlock(&p->lock);
	return rc;
}

int bga_store(struct bga_volume *vol, const struct bga_io *io)
{
	return store(vol, io, true, 0);
}

int bga_store_tagged(struct bga_volume *vol, const struct bga_io *io, uint64_t tag)
{
	return store(vol, io, false, tag);
}

int bga_volume_tag(const struct bga_volume *vol, uint64_t *tag)
{
	if (vol == NULL || tag == NULL)
		return -EINVAL;
	const struct bga_persist *p = __atomic_load_n(&vol->persist, __ATOMIC_ACQUIRE);
	*tag = p ? __atomic_load_n(&p->tag, __ATOMIC_ACQUIRE) : 0;
	return 0;
}
