/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The volume: create, destroy, reservations, free counts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rcu.h"
#include "window.h"

#include <bgalloc/bitmap.h>

#include "cpu.h"
#include "group.h"
#include "percpu.h"
#include "hooks.h"
#include "geom.h"
#include "charge.h"
#include "deferred.h"

void bga_config_init(struct bga_config *cfg, uint64_t nblocks)
{
	if (cfg == NULL)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->nblocks = nblocks;
	cfg->blocks_per_group = 32768;
	cfg->first_data_block = 0;
	cfg->lock_slots = 0;
	cfg->counter_batch = 0;
	cfg->rsv_default = 8;
	cfg->rsv_max = 1027;
	cfg->flags = 0;
}

int bga__geometry_check(uint64_t nblocks, uint32_t bpg, uint64_t first)
{
	if (nblocks == 0 || nblocks > BGA_MAX_BLOCKS)
		return -EINVAL;
	if (bpg < 64 || bpg > BGA_MAX_BPG || bpg % 64)
		return -EINVAL;
	if ((nblocks + bpg - 1) / bpg > BGA_MAX_GROUPS)
		return -EINVAL;
	if (first >= nblocks)
		return -EINVAL;
	return 0;
}

static int config_check(const struct bga_config *cfg)
{
	if (bga__geometry_check(cfg->nblocks, cfg->blocks_per_group, cfg->first_data_block))
		return -EINVAL;
	if (cfg->lock_slots && ((cfg->lock_slots & (cfg->lock_slots - 1)) || cfg->lock_slots > (1u << 20)))
		return -EINVAL;
	if (cfg->counter_batch < 0 || cfg->counter_batch > (1 << 24))
		return -EINVAL;
	if (cfg->rsv_max > BGA_MAX_BPG || cfg->rsv_default > cfg->rsv_max)
		return -EINVAL;
	if (cfg->flags & ~(uint32_t)(BGA_GLOBAL_LOCK | BGA_ATOMIC_COUNTERS | BGA_START_FULL))
		return -EINVAL;
	if (cfg->stripe > cfg->blocks_per_group)
		return -EINVAL;
	if (cfg->lock_kind > BGA_LOCK_MUTEX)
		return -EINVAL;
	return 0;
}

static uint64_t groups_for(const struct bga_volume *vol, uint64_t nblocks)
{
	return (nblocks + vol->cfg.blocks_per_group - 1) / vol->cfg.blocks_per_group;
}

/* The automatic lock table grows with the groups up to here: 32 KiB of
 * padded slots. */
#define BGA_AUTO_SLOTS_MAX 256u

struct bga_geom *bga__geom_new(const struct bga_volume *vol, uint64_t nblocks)
{
	struct bga_geom *geo = malloc(sizeof(*geo));
	if (geo == NULL)
		return NULL;
	geo->nblocks = nblocks;
	geo->ngroups = groups_for(vol, nblocks);
	geo->nchunks = (geo->ngroups + BGA_CHUNK_GROUPS - 1) >> BGA_CHUNK_SHIFT;
	geo->capacity = nblocks - vol->cfg.first_data_block;
	geo->retired = NULL;
	return geo;
}

/*
 * The used counter's batch: ext4's max(32, 2 * ncpus), raised towards
 * BGA_AUTO_BATCH_MAX while the counter's error, about ncpus * batch,
 * stays under 1/64 of the capacity.  A thread that allocates steadily
 * (a file being written) folds its slot into the shared total every
 * `batch` blocks, moving the total's line and lock between CPUs: with 32,
 * two threads appending in groups of their own fell below one thread
 * (BENCHMARKS.md#shared-writes-on-disjoint-paths).  Near full the
 * limited add decides on the exact sum anyway,
 * so the larger error costs speed only in the last 1/64 of the volume.
 */
#define BGA_AUTO_BATCH_MAX 1024
static int32_t auto_batch(unsigned ncpu, uint64_t capacity)
{
	uint64_t batch = 2 * (uint64_t)ncpu > 32 ? 2 * (uint64_t)ncpu : 32;
	uint64_t per_cpu = capacity / 64 / ncpu;
	if (per_cpu > batch)
		batch = per_cpu < BGA_AUTO_BATCH_MAX ? per_cpu : BGA_AUTO_BATCH_MAX;
	return (int32_t)batch;
}

int bga_create(const struct bga_config *cfg, struct bga_volume **out)
{
	if (cfg == NULL || out == NULL)
		return -EINVAL;
	int rc = config_check(cfg);
	if (rc)
		return rc;
	/* line-aligned: the fields written at run time have lines of their own (types.h) */
	struct bga_volume *vol = aligned_alloc(BGA_CACHELINE, sizeof(*vol));
	if (vol == NULL)
		return -ENOMEM;
	memset(vol, 0, sizeof(*vol));
	vol->cfg = *cfg;
	uint32_t bpg = cfg->blocks_per_group;
	vol->bpg_shift = (bpg & (bpg - 1)) ? 0 : (uint32_t)__builtin_ctz(bpg);
	vol->max_order = 31u - (uint32_t)__builtin_clz(bpg);
	vol->fast_min = cfg->stripe > 1 ? cfg->stripe - 1 : bpg;
	/* The configured CPUs, counted once per process (cpu.c): asking
	 * for the online ones read /sys/devices/system/cpu/online at every
	 * create, system calls that were most of what a small volume's
	 * create cost (docs/HISTORY.md#small-volume-changes). */
	unsigned ncpu = bga__cpu_count();
	if (vol->cfg.lock_slots == 0) {
		/*
		 * The kernel's NR_BG_LOCKS, 4 << ilog2(min(ncpus, 32)), and at
		 * least one slot per group up to BGA_AUTO_SLOTS_MAX: groups
		 * that share a slot share its line, so threads working in
		 * different groups still move it between CPUs
		 * (BENCHMARKS.md#lock-slots-one-per-group).
		 */
		unsigned n = ncpu < 32 ? ncpu : 32;
		uint32_t slots = 4u << (31 - __builtin_clz(n));
		uint64_t groups = groups_for(vol, cfg->nblocks);
		while (slots < BGA_AUTO_SLOTS_MAX && slots < groups)
			slots *= 2;
		vol->cfg.lock_slots = slots;
	}
	if (vol->cfg.flags & BGA_GLOBAL_LOCK) {
		vol->cfg.lock_slots = 1;
		if (vol->cfg.lock_kind == BGA_LOCK_DEFAULT)
			vol->cfg.lock_kind = BGA_LOCK_MUTEX;
	}
	if (vol->cfg.counter_batch == 0)
		vol->cfg.counter_batch = auto_batch(ncpu, cfg->nblocks - cfg->first_data_block);
	pthread_mutex_init(&vol->grow_lock, NULL);
	pthread_mutex_init(&vol->commit_lock, NULL);

	rc = -ENOMEM;
	vol->geom = bga__geom_new(vol, cfg->nblocks);
	if (vol->geom == NULL || bga__dir_init(vol, vol->geom->nchunks))
		goto fail;
	vol->nblocks_floor = cfg->nblocks;
	rc = bga_locktab_create(&vol->locks, vol->cfg.lock_slots, (enum bga_lock_kind)vol->cfg.lock_kind);
	if (rc)
		goto fail;
	/* BGA_START_FULL: every block of the creation size is allocated
	 * (group.c, group_init_fresh); blocks a grow adds are free. */
	bool full = cfg->flags & BGA_START_FULL;
	vol->full_groups = full ? groups_for(vol, cfg->nblocks) : 0;
	rc = bga_counter_create(&vol->used, full ? (int64_t)(cfg->nblocks - cfg->first_data_block) : 0,
				vol->cfg.counter_batch,
				(vol->cfg.flags & BGA_ATOMIC_COUNTERS) ? BGA_COUNTER_ATOMIC : BGA_COUNTER_PERCPU);
	if (rc)
		goto fail;
	rc = -ENOMEM;
	vol->ncpu = bga__cpu_count();
	vol->cpu = aligned_alloc(BGA_CACHELINE, vol->ncpu * sizeof(*vol->cpu));
	if (vol->cpu == NULL)
		goto fail;
	memset(vol->cpu, 0, vol->ncpu * sizeof(*vol->cpu));
	/* Spread the CPUs' home groups evenly so unrelated callers start apart. */
	for (unsigned i = 0; i < vol->ncpu; i++)
		vol->cpu[i].steer.home = bga__group_first(vol, vol->geom->ngroups * i / vol->ncpu);

	const struct bga_geom *geo = vol->geom;
	/*
	 * A missing chunk means wholly free groups, for every reader (the
	 * index, walks, checks, stores, frees).  So a volume that starts full
	 * installs its chunks now: descriptors of wholly used groups, with no
	 * bitmap until something is freed into them.  Chunks past the
	 * creation size (a grow) are free as anywhere.
	 */
	if (full) {
		for (uint64_t c = 0; c < geo->nchunks; c++)
			if (!bga__chunk_ensure(vol, c))
				goto fail;
	} else {
		bga__idx_mark_untouched(vol, 0, geo->nchunks);
	}
	/* Chunks holding a partial group (below first_data_block, or the short
	 * last group) are built now so that a missing chunk always means
	 * wholly free, full-size groups. */
	for (uint64_t c = 0; cfg->first_data_block && c <= ((cfg->first_data_block - 1) / bpg) >> BGA_CHUNK_SHIFT; c++)
		if (!bga__chunk_ensure(vol, c))
			goto fail;
	if (cfg->nblocks % bpg && !bga__chunk_ensure(vol, geo->nchunks - 1))
		goto fail;
	*out = vol;
	return 0;
fail:
	bga_destroy(vol);
	return rc;
}

void bga_destroy(struct bga_volume *vol)
{
	if (vol == NULL)
		return;
	const struct bga_store_hooks *hooks = bga__store_hooks(vol);
	if (hooks)
		hooks->quiesce(vol); /* a BGA_LOAD_PREFETCH thread still reading */
	if (vol->dir0 && vol->geom) {
		/* Growth only adds chunks: none exists past the current end. */
		for (uint64_t c = 0; c < vol->geom->nchunks; c++) {
			struct bga_chunk *ch = bga__chunk_get(vol, c);
			if (ch == NULL)
				continue;
			/* Only the volume's own groups: those past its end were
			 * never opened (group_init_fresh, grow), and reading
			 * them faulted in a small volume's whole chunk. */
			uint64_t g0 = c << BGA_CHUNK_SHIFT;
			uint32_t n = (uint32_t)BGA_MIN(vol->geom->ngroups - g0, (uint64_t)BGA_CHUNK_GROUPS);
			for (uint32_t i = 0; i < n; i++) {
				struct bga_group *grp = &ch->groups[i];
				if (grp->bitmap)
					free(grp->bitmap);
				if (grp->ext) {
					bga__dfree_destroy_group(grp);
					bga__window_destroy_group(grp);
					free(grp->ext);
				}
			}
			free(ch);
		}
	}
	bga__dir_destroy(vol);
	free(vol->geom);
	while (vol->retired) {
		struct bga_geom *next = vol->retired->retired;
		free(vol->retired);
		vol->retired = next;
	}
	free(vol->cpu);
	bga_locktab_destroy(vol->locks);
	if (hooks)
		hooks->destroy(vol);
	bga_counter_destroy(vol->used);
	pthread_mutex_destroy(&vol->grow_lock);
	pthread_mutex_destroy(&vol->commit_lock);
	free(vol);
}

int bga_volume_config(const struct bga_volume *vol, struct bga_config *out)
{
	if (vol == NULL || out == NULL)
		return -EINVAL;
	*out = vol->cfg;
	/* Under the read lock: a concurrent grow may free this geometry. */
	urcu_bp_read_lock();
	out->nblocks = bga_rcu_load(vol->geom)->nblocks;
	urcu_bp_read_unlock();
	return 0;
}

/* ---- delayed-allocation reservations ---- */

int bga_reserve(struct bga_volume *vol, uint64_t n)
{
	if (vol == NULL || n == 0)
		return -EINVAL;
	urcu_bp_read_lock();
	const struct bga_geom *geo = bga_rcu_load(vol->geom);
	int rc = -EINVAL;
	if (n <= geo->nblocks) {
		/* The limited add is what makes this exact: a "check, then
		 * add" would let two reservations both pass the check. */
		rc = bga_counter_add_limited(vol->used, (int64_t)n, (int64_t)geo->capacity);
		/* Promises are made on verified space only: read what a lazy
		 * load left unread, then decide again (types.h). */
		int settled = rc ? bga__unverified_settle(vol) : 0;
		if (settled < 0)
			rc = settled;
		else if (settled)
			rc = bga_counter_add_limited(vol->used, (int64_t)n, (int64_t)geo->capacity);
		if (rc == 0)
			__atomic_fetch_add(&vol->reserved, n, __ATOMIC_RELAXED);
	}
	urcu_bp_read_unlock();
	return rc;
}

int bga_unreserve(struct bga_volume *vol, uint64_t n)
{
	if (vol == NULL || n == 0)
		return -EINVAL;
	uint64_t r = __atomic_load_n(&vol->reserved, __ATOMIC_RELAXED);
	do {
		if (r < n)
			return -EINVAL;
	} while (!__atomic_compare_exchange_n(&vol->reserved, &r, r - n, false, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	bga_counter_add(vol->used, -(int64_t)n);
	return 0;
}

uint64_t bga_reserved(struct bga_volume *vol)
{
	return vol ? __atomic_load_n(&vol->reserved, __ATOMIC_RELAXED) : 0;
}

/* free = capacity - (allocated + reserved + unread) + reserved + unread
 * (unread: the free blocks of a lazy load's unread chunks, types.h) */
uint64_t bga_free_estimate(const struct bga_volume *vol)
{
	if (vol == NULL)
		return 0;
	urcu_bp_read_lock();
	int64_t cap = (int64_t)bga_rcu_load(vol->geom)->capacity;
	urcu_bp_read_unlock();
	int64_t f = cap - bga_counter_read(vol->used) + (int64_t)__atomic_load_n(&vol->reserved, __ATOMIC_RELAXED) +
		    (int64_t)__atomic_load_n(&vol->unverified, __ATOMIC_ACQUIRE);
	return f < 0 ? 0 : f > cap ? (uint64_t)cap : (uint64_t)f;
}

uint64_t bga_free_exact(struct bga_volume *vol)
{
	if (vol == NULL)
		return 0;
	urcu_bp_read_lock();
	const struct bga_geom *geo = bga_rcu_load(vol->geom);
	int64_t f = bga__unpromised(vol, geo) + (int64_t)__atomic_load_n(&vol->reserved, __ATOMIC_RELAXED) +
		    (int64_t)__atomic_load_n(&vol->unverified, __ATOMIC_ACQUIRE);
	urcu_bp_read_unlock();
	return f < 0 ? 0 : (uint64_t)f;
}

int bga_lock_stats(struct bga_volume *vol, uint32_t slot, struct bga_lock_stats *out)
{
	if (vol == NULL)
		return -EINVAL;
	return bga_locktab_stats(vol->locks, slot, out);
}
