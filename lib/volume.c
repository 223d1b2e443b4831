/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The public volume API: create, alloc, free, reserve, ENOSPC logic. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

#include "rcu.h"

#include <bgalloc/bitmap.h>

#include "cpu.h"
#include "persist.h"
#include "volume.h"

/* Busy groups skipped with trylock before an allocation blocks on a lock. */
#define BGA_BUSY_SKIPS 3
/* Searches again after an -ENOSPC that the exact free count contradicts. */
#define BGA_SEARCH_RETRIES 16

static unsigned ncpus_online(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

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

static int config_check(const struct bga_config *cfg)
{
	uint32_t bpg = cfg->blocks_per_group;
	if (cfg->nblocks == 0 || cfg->nblocks > BGA_MAX_BLOCKS)
		return -EINVAL;
	if (bpg < 64 || bpg > BGA_MAX_BPG || bpg % 64)
		return -EINVAL;
	if ((cfg->nblocks + bpg - 1) / bpg > BGA_MAX_GROUPS)
		return -EINVAL;
	if (cfg->first_data_block >= cfg->nblocks || cfg->first_data_block >= bpg)
		return -EINVAL;
	if (cfg->lock_slots && ((cfg->lock_slots & (cfg->lock_slots - 1)) || cfg->lock_slots > (1u << 20)))
		return -EINVAL;
	if (cfg->counter_batch < 0 || cfg->counter_batch > (1 << 24))
		return -EINVAL;
	if (cfg->rsv_max > BGA_MAX_BPG || cfg->rsv_default > cfg->rsv_max)
		return -EINVAL;
	if (cfg->flags & ~(uint32_t)(BGA_GLOBAL_LOCK | BGA_ATOMIC_COUNTERS))
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

int bga_create(const struct bga_config *cfg, struct bga_volume **out)
{
	if (cfg == NULL || out == NULL)
		return -EINVAL;
	int rc = config_check(cfg);
	if (rc)
		return rc;
	struct bga_volume *vol = calloc(1, sizeof(*vol));
	if (vol == NULL)
		return -ENOMEM;
	vol->cfg = *cfg;
	uint32_t bpg = cfg->blocks_per_group;
	vol->bpg_shift = (bpg & (bpg - 1)) ? 0 : (uint32_t)__builtin_ctz(bpg);
	vol->max_order = 31u - (uint32_t)__builtin_clz(bpg);
	unsigned ncpu = ncpus_online();
	if (vol->cfg.lock_slots == 0) {
		/*
		 * The kernel's NR_BG_LOCKS, 4 << ilog2(min(ncpus, 32)), and at
		 * least one slot per group up to BGA_AUTO_SLOTS_MAX: groups
		 * that share a slot share its line, so threads working in
		 * different groups still move it between CPUs.  bga-share, two
		 * threads each in its own half of 32 groups: 1.26x of one
		 * thread with 8 slots, 1.94x with one per group (BENCHMARKS.md).
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
		vol->cfg.counter_batch = (int32_t)(2 * ncpu > 32 ? 2 * ncpu : 32);
	pthread_mutex_init(&vol->grow_lock, NULL);
	pthread_mutex_init(&vol->commit_lock, NULL);

	/* Directory and summaries are sized for the largest volume and left to
	 * calloc's untouched (zero, unbacked) pages: see struct bga_volume. */
	uint64_t max_groups = groups_for(vol, BGA_MAX_BLOCKS);
	if (max_groups > BGA_MAX_GROUPS)
		max_groups = BGA_MAX_GROUPS;
	vol->max_chunks = (max_groups + BGA_CHUNK_GROUPS - 1) >> BGA_CHUNK_SHIFT;
	rc = -ENOMEM;
	vol->chunks = calloc(vol->max_chunks, sizeof(*vol->chunks));
	vol->dfree_chunks = calloc(BGA_BITMAP_WORDS(vol->max_chunks), sizeof(uint64_t));
	if (!vol->chunks || !vol->dfree_chunks)
		goto fail;
	for (unsigned k = 0; k < BGA_ORDERS; k++)
		if (!(vol->summary[k] = calloc(BGA_BITMAP_WORDS(vol->max_chunks), sizeof(uint64_t))))
			goto fail;
	vol->geom = bga__geom_new(vol, cfg->nblocks);
	if (vol->geom == NULL)
		goto fail;
	vol->nblocks_floor = cfg->nblocks;
	rc = bga_locktab_create(&vol->locks, vol->cfg.lock_slots, (enum bga_lock_kind)vol->cfg.lock_kind);
	if (rc)
		goto fail;
	rc = bga_counter_create(&vol->used, (int64_t)cfg->first_data_block * 0, vol->cfg.counter_batch,
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
		vol->cpu[i].home = bga__group_first(vol, vol->geom->ngroups * i / vol->ncpu);

	const struct bga_geom *geo = vol->geom;
	bga__idx_mark_untouched(vol, 0, geo->nchunks);
	/* Chunks holding a partial group (below first_data_block, or the short
	 * last group) are built now so that a missing chunk always means
	 * wholly free, full-size groups. */
	if (cfg->first_data_block && !bga__chunk_ensure(vol, 0))
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
	if (vol->chunks && vol->geom) {
		/* Growth only adds chunks: none exists past the current end. */
		for (uint64_t c = 0; c < vol->geom->nchunks; c++) {
			struct bga_chunk *ch = vol->chunks[c];
			if (ch == NULL)
				continue;
			for (uint32_t i = 0; i < BGA_CHUNK_GROUPS; i++) {
				struct bga_group *grp = &ch->groups[i];
				free(grp->bitmap);
				if (grp->ext) {
					bga__dfree_destroy_group(grp);
					bga__rsv_destroy_group(grp);
					free(grp->ext);
				}
			}
			free(ch);
		}
	}
	free(vol->chunks);
	for (unsigned k = 0; k < BGA_ORDERS; k++)
		free(vol->summary[k]);
	free(vol->dfree_chunks);
	free(vol->geom);
	while (vol->retired) {
		struct bga_geom *next = vol->retired->retired;
		free(vol->retired);
		vol->retired = next;
	}
	free(vol->cpu);
	bga_locktab_destroy(vol->locks);
	bga__persist_destroy(vol);
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

/*
 * Blocks are charged where they are taken, under the group lock, and for
 * what was found, never for max_len before the search: an up-front charge
 * made every other request see no room while it was in flight, and so
 * returned -ENOSPC (and -EAGAIN) while unpromised free runs existed
 * (issue 10).  A charge can then fail only when the blocks that nobody
 * owns or was promised number fewer than min_len, which is exactly when
 * -ENOSPC is due.
 */
int bga__charge_locked(struct bga_volume *vol, struct bga_actx *ac, uint32_t *len)
{
	if (ac->reserved) {
		uint64_t r = __atomic_load_n(&vol->reserved, __ATOMIC_RELAXED), want;
		do {
			if (r < ac->min) {
				ac->stop = -EINVAL; /* fewer than min_len reserved now */
				return ac->stop;
			}
			want = BGA_MIN((uint64_t)*len, r);
		} while (!__atomic_compare_exchange_n(&vol->reserved, &r, r - want, false, __ATOMIC_ACQ_REL,
						      __ATOMIC_RELAXED));
		*len = (uint32_t)want;
		return 0;
	}
	int64_t cap = (int64_t)ac->geo->capacity;
	if (bga_likely(bga__counter_add_limited(vol->used, *len, cap) == 0))
		return 0;
	for (;;) {
		int64_t left = cap - bga_counter_sum(vol->used);
		if (left < (int64_t)ac->min) {
			ac->stop = -ENOSPC; /* the count decides for every group */
			return ac->stop;
		}
		uint32_t want = (uint32_t)BGA_MIN((int64_t)*len, left);
		if (bga_counter_add_limited(vol->used, want, cap) == 0) {
			*len = want;
			return 0;
		}
	}
}

/* Give back a charge whose blocks were not taken. */
static void uncharge(struct bga_volume *vol, const struct bga_actx *ac, uint32_t len)
{
	if (ac->reserved)
		__atomic_fetch_add(&vol->reserved, len, __ATOMIC_RELAXED);
	else
		bga_counter_add(vol->used, -(int64_t)len);
}

int bga__take_locked(struct bga_volume *vol, struct bga_actx *ac, struct bga_group *grp, uint64_t g, uint32_t off,
		     uint32_t *len)
{
	int rc = bga__charge_locked(vol, ac, len);
	if (rc)
		return rc;
	rc = bga__group_take_locked(vol, grp, g, off, *len);
	if (rc)
		uncharge(vol, ac, *len);
	return rc;
}

/*
 * Blocks that nobody owns and nobody was promised, exactly (a reserved
 * request counts what is reserved, which it may draw on).
 */
static int64_t blocks_unpromised(struct bga_volume *vol, const struct bga_actx *ac)
{
	if (ac->reserved)
		return (int64_t)__atomic_load_n(&vol->reserved, __ATOMIC_RELAXED);
	return (int64_t)ac->geo->capacity - bga_counter_sum(vol->used);
}

/*
 * Try one group under its lock.  `from` is the first offset to look at.
 * With `book`, the run found (up to book->end - book->start blocks, set by
 * the caller to the window size) becomes that window, and only up to
 * ac->max of it is taken.  -ENOSPC: no run here (or ac->stop says the
 * count ruled the whole request out).
 */
static inline __attribute__((always_inline)) int
try_group_locked(struct bga_volume *vol, struct bga_actx *ac, uint64_t g, uint32_t from, bool avoid,
		 struct bga_window *book, struct bga_extent *out)
{
	struct bga_group *grp = bga__group_lookup(vol, g);
	uint32_t wsize = book ? book->end - book->start : 0;
	uint32_t off, len, want = BGA_MAX(ac->max, wsize);
	if (!bga__group_find_locked(vol, grp, g, from, ac->min, want, avoid, NULL, &off, &len)) {
		/* A failed whole-group search means max_run overstated the
		 * longest run: fix it so the index stops pointing here. */
		if (from == 0 && !(avoid && grp->ext && grp->ext->windows))
			bga__group_refresh_locked(vol, grp, g);
		return -ENOSPC;
	}
	/* The window is at most its size (never above rsv_max); an extent
	 * longer than the window goes on past it. */
	if (book && bga__rsv_link_locked(grp, g, book, off, off + BGA_MIN(len, wsize)) != 0)
		return -ENOMEM;
	len = BGA_MIN(len, ac->max);
	int rc = bga__take_locked(vol, ac, grp, g, off, &len);
	if (rc) {
		if (book)
			bga__rsv_unlink_locked(grp, book);
		return rc;
	}
	out->start = bga__group_first(vol, g) + off;
	out->len = len;
	return 0;
}

static int try_group(struct bga_volume *vol, struct bga_actx *ac, uint64_t g, uint32_t from, bool avoid,
		     struct bga_window *book, bool wait, struct bga_extent *out)
{
	int rc = bga__group_ensure(vol, g); /* before the lock: lockdep.h */
	if (rc)
		return rc;
	if (wait)
		bga__group_lock(vol, g);
	else if (!bga__group_trylock(vol, g))
		return -EBUSY;
	rc = try_group_locked(vol, ac, g, from, avoid, book, out);
	bga__group_unlock(vol, g);
	return rc;
}

/*
 * The common case without the search's machinery: a free run in the goal's
 * own word, at or after the goal, that the word decides, in a group that
 * is not contended and holds no windows.  Anything else returns false with
 * nothing changed, and takes the full search.  This is the hot path budget
 * of DESIGN.md: one lock-table lookup, one trylock/unlock, a few word
 * operations, one group count update.
 *
 * The run found is charged to the used counter here, under the group lock
 * and before it is taken, through the counter's lock-free path against
 * `cap` (a capacity that is never above the real one); if that path
 * cannot decide, nothing is taken and false is returned.
 */
static bool alloc_at_goal(struct bga_volume *vol, uint64_t goal, uint32_t min, uint32_t max, int64_t cap,
			  struct bga_extent *out)
{
	uint64_t g = bga__group_of(vol, goal);
	struct bga_chunk *ch = bga__chunk_get(vol, g >> BGA_CHUNK_SHIFT);
	uint32_t off = (uint32_t)(goal - bga__group_first(vol, g)), start, len;
	if (ch == NULL || !bga__group_trylock(vol, g))
		return false;
	struct bga_group *grp = &ch->groups[g & (BGA_CHUNK_GROUPS - 1)];
	bool hit = grp->bitmap && off < grp->hi && !(grp->ext && grp->ext->windows) &&
		   bga__word_run(grp->bitmap, off, min, max, &start, &len) &&
		   bga__counter_add_limited_fast(vol->used, len, cap);
	if (hit) {
		bga__group_take_word_locked(vol, grp, g, start, len);
		out->start = bga__group_first(vol, g) + start;
		out->len = len;
	}
	bga__group_unlock(vol, g);
	return hit;
}

/*
 * Search every group for a run: the goal's group from the goal onwards,
 * then the index from the next group round to the goal's group again.
 * Busy groups are skipped (trylock) a few times before the search blocks;
 * skipped groups are visited again at the end, so contention never
 * causes a false -ENOSPC.  Stops at once when ac->stop is set.
 */
int bga__search(struct bga_volume *vol, struct bga_actx *ac, uint64_t goal, bool avoid, struct bga_window *book,
		struct bga_extent *out, bool *goal_busy)
{
	const struct bga_geom *geo = ac->geo;
	uint64_t g0 = bga__group_of(vol, goal);
	uint64_t skipped[BGA_BUSY_SKIPS];
	unsigned nskipped = 0;
	int rc = try_group(vol, ac, g0, (uint32_t)(goal - bga__group_first(vol, g0)), avoid, book, false, out);
	if (rc != -EBUSY && rc != -ENOSPC)
		return rc;
	if (ac->stop)
		return ac->stop;
	if (rc == -EBUSY)
		skipped[nskipped++] = g0;
	if (goal_busy)
		*goal_busy = rc == -EBUSY;

	uint64_t n = geo->ngroups;
	/* Two segments: (g0, n) then [0, g0]; g0 again from its start. */
	for (int seg = 0; seg < 2; seg++) {
		uint64_t g = seg == 0 ? g0 + 1 : 0, end = seg == 0 ? n : g0 + 1;
		while ((g = bga__idx_next(vol, g, end, ac->min)) < end) {
			bool wait = nskipped >= BGA_BUSY_SKIPS;
			rc = try_group(vol, ac, g, 0, avoid, book, wait, out);
			if (rc == -EBUSY)
				skipped[nskipped++] = g;
			else if (rc != -ENOSPC)
				return rc;
			else if (ac->stop)
				return ac->stop;
			g++;
		}
	}
	for (unsigned i = 0; i < nskipped; i++) {
		rc = try_group(vol, ac, skipped[i], 0, avoid, book, true, out);
		if (rc != -ENOSPC || ac->stop)
			return ac->stop ? ac->stop : rc;
	}
	return -ENOSPC;
}

static int alloc_exact(struct bga_volume *vol, struct bga_actx *ac, uint64_t goal, struct bga_extent *out)
{
	uint64_t g = bga__group_of(vol, goal);
	uint32_t from = (uint32_t)(goal - bga__group_first(vol, g)), off, len;
	int rc = bga__group_ensure(vol, g); /* before the lock: lockdep.h */
	if (rc)
		return rc;
	rc = -ENOSPC;
	bga__group_lock(vol, g);
	struct bga_group *grp = bga__group_lookup(vol, g);
	if (!bga__group_test_locked(vol, grp, g, from) &&
	    bga__group_find_locked(vol, grp, g, from, ac->min, ac->max, false, NULL, &off, &len) && off == from) {
		rc = bga__take_locked(vol, ac, grp, g, off, &len);
		out->start = goal;
		out->len = len;
	}
	bga__group_unlock(vol, g);
	return rc;
}

/*
 * Allocations whose goal group was found locked stick to the group they
 * got instead for this many allocations before trying the goal's group
 * again, so threads that aim at one hot group drift apart instead of
 * taking turns at its lock and cache lines (DESIGN.md: "so threads drift
 * apart instead of piling up").
 */
#define BGA_STEER_ALLOCS 64
/*
 * Backoff: a group found busy again within BGA_STEER_ALLOCS allocations
 * of this CPU's return to it keeps the CPU away twice as long as last
 * time, up to this many allocations.  A CPU that keeps coming back to a
 * group another CPU lives in then stops paying for a busy lock (and that
 * group's lines) every 64 allocations; a group found busy only now and
 * then costs 64 steered allocations as before.
 */
#define BGA_STEER_MAX 4096

/*
 * Where a plain request looks first on this CPU: its home for
 * BGA_NO_GOAL; for a goal in a group this CPU was steered away from, where
 * it went instead; the goal itself otherwise.  Hints at or past `nblocks`
 * are stale and dropped.
 */
static inline uint64_t resolve_goal(const struct bga_volume *vol, struct bga_percpu *pc, uint64_t goal,
				    uint64_t nblocks, bool *steered)
{
	*steered = false;
	if (goal == BGA_NO_GOAL)
		return bga__home(pc, nblocks);
	if (__atomic_load_n(&pc->steer_left, __ATOMIC_RELAXED) != 0 &&
	    __atomic_load_n(&pc->steer_from, __ATOMIC_RELAXED) == bga__group_of(vol, goal)) {
		uint64_t to = __atomic_load_n(&pc->steer_to, __ATOMIC_RELAXED);
		if (to < nblocks) {
			*steered = true;
			return to;
		}
	}
	return goal;
}

/*
 * After a plain request for `want` (req->goal) landed at *out, having
 * looked first at `goal`: move the CPU's home on, count a steered
 * allocation, or, when the goal's group was busy and the search went
 * elsewhere, steer this CPU's later requests for that group to where it
 * went.
 */
static inline void note_result(const struct bga_volume *vol, struct bga_percpu *pc, uint64_t want, uint64_t goal,
			       bool steered, bool busy, const struct bga_extent *out)
{
	uint64_t next = out->start + out->len;
	if (want == BGA_NO_GOAL) {
		__atomic_store_n(&pc->home, next, __ATOMIC_RELAXED);
	} else if (steered) {
		uint32_t left = __atomic_load_n(&pc->steer_left, __ATOMIC_RELAXED);
		__atomic_store_n(&pc->steer_to, next, __ATOMIC_RELAXED);
		if (left != 0)
			__atomic_store_n(&pc->steer_left, left - 1, __ATOMIC_RELAXED);
	} else if (busy && bga__group_of(vol, out->start) != bga__group_of(vol, goal)) {
		uint64_t from = bga__group_of(vol, goal);
		uint32_t len = BGA_STEER_ALLOCS, prev = __atomic_load_n(&pc->steer_len, __ATOMIC_RELAXED);
		if (__atomic_load_n(&pc->steer_from, __ATOMIC_RELAXED) == from && prev >= BGA_STEER_ALLOCS &&
		    __atomic_load_n(&pc->steer_since, __ATOMIC_RELAXED) < BGA_STEER_ALLOCS)
			len = BGA_MIN(2 * prev, BGA_STEER_MAX);
		__atomic_store_n(&pc->steer_from, from, __ATOMIC_RELAXED);
		__atomic_store_n(&pc->steer_to, next, __ATOMIC_RELAXED);
		__atomic_store_n(&pc->steer_left, len, __ATOMIC_RELAXED);
		__atomic_store_n(&pc->steer_len, len, __ATOMIC_RELAXED);
		__atomic_store_n(&pc->steer_since, 0, __ATOMIC_RELAXED);
	} else if (__atomic_load_n(&pc->steer_len, __ATOMIC_RELAXED) != 0 &&
		   __atomic_load_n(&pc->steer_from, __ATOMIC_RELAXED) == bga__group_of(vol, goal)) {
		/* Only a CPU that was steered once counts its returns. */
		uint32_t since = __atomic_load_n(&pc->steer_since, __ATOMIC_RELAXED);
		if (since < BGA_STEER_ALLOCS)
			__atomic_store_n(&pc->steer_since, since + 1, __ATOMIC_RELAXED);
	}
}

/*
 * The search without a window.  Other handles' windows are avoided while
 * free space exists elsewhere, and used only as a last resort.
 */
static inline __attribute__((always_inline)) int alloc_plain(struct bga_volume *vol, struct bga_actx *ac,
							     const struct bga_request *req, struct bga_extent *out)
{
	if (req->flags & BGA_EXACT_GOAL)
		return alloc_exact(vol, ac, req->goal, out);
	struct bga_percpu *pc = bga__percpu(vol);
	bool steered, busy = false;
	uint64_t goal = resolve_goal(vol, pc, req->goal, ac->geo->nblocks, &steered);
	int rc = 0;
	if (ac->reserved || !alloc_at_goal(vol, goal, ac->min, ac->max, (int64_t)ac->geo->capacity, out)) {
		bool windows = __atomic_load_n(&vol->rsv_open, __ATOMIC_RELAXED) != 0;
		rc = bga__search(vol, ac, goal, windows, NULL, out, &busy);
		if (rc == -ENOSPC && windows && !ac->stop)
			rc = bga__search(vol, ac, goal, false, NULL, out, NULL);
	}
	if (rc == 0)
		note_result(vol, pc, req->goal, goal, steered, busy, out);
	return rc;
}

/*
 * bga_alloc's common case, without RCU, the retry loop, or the search: a
 * plain request (no window handle, no flags) whose resolved goal, below
 * vol->nblocks_floor, has a run its own word decides, in an uncontended
 * group (alloc_at_goal, charging there against the floor's capacity).
 * Returns false with nothing changed otherwise; bga_alloc then takes the
 * full path, which decides on the geometry.
 */
static inline __attribute__((always_inline)) bool alloc_fast(struct bga_volume *vol, const struct bga_request *req,
							     struct bga_extent *out)
{
	uint64_t floor = __atomic_load_n(&vol->nblocks_floor, __ATOMIC_ACQUIRE);
	struct bga_percpu *pc = bga__percpu(vol);
	bool steered;
	uint64_t goal = resolve_goal(vol, pc, req->goal, floor, &steered);
	if (goal >= floor)
		return false;
	uint32_t max = (uint32_t)BGA_MIN(req->max_len, (uint64_t)vol->cfg.blocks_per_group);
	int64_t cap = (int64_t)(floor - vol->cfg.first_data_block);
	if (!alloc_at_goal(vol, goal, (uint32_t)req->min_len, max, cap, out))
		return false;
	note_result(vol, pc, req->goal, goal, steered, false, out);
	return true;
}

/* alloc_plain for rsv.c; bga_alloc has it inline. */
int bga__alloc_plain(struct bga_volume *vol, struct bga_actx *ac, const struct bga_request *req,
		     struct bga_extent *out)
{
	return alloc_plain(vol, ac, req, out);
}

int bga_alloc(struct bga_volume *vol, const struct bga_request *req, struct bga_extent *out)
{
	if (vol == NULL || req == NULL || out == NULL)
		return -EINVAL;
	if (req->min_len == 0 || req->min_len > req->max_len)
		return -EINVAL;
	if (req->flags & ~(uint32_t)(BGA_EXACT_GOAL | BGA_USE_RESERVED))
		return -EINVAL;
	if ((req->flags & BGA_EXACT_GOAL) && req->goal == BGA_NO_GOAL)
		return -EINVAL;
	if (req->rsv == NULL && req->flags == 0 && req->min_len <= vol->cfg.blocks_per_group &&
	    alloc_fast(vol, req, out))
		return 0;

	urcu_bp_read_lock();
	const struct bga_geom *geo = bga_rcu_load(vol->geom);
	int rc = -EINVAL;
	if (req->goal != BGA_NO_GOAL && req->goal >= geo->nblocks)
		goto out;
	bool reserved = req->flags & BGA_USE_RESERVED;
	if (reserved && __atomic_load_n(&vol->reserved, __ATOMIC_RELAXED) < req->min_len)
		goto out;
	rc = -ENOSPC;
	if (req->min_len > vol->cfg.blocks_per_group)
		goto nospace; /* extents never cross a group boundary */
	struct bga_actx ac = {
		.geo = geo,
		.min = (uint32_t)req->min_len,
		.max = (uint32_t)BGA_MIN(req->max_len, (uint64_t)vol->cfg.blocks_per_group),
		.reserved = reserved,
	};
	for (int tries = 0;; tries++) {
		if (req->rsv != NULL)
			rc = bga__rsv_alloc(vol, &ac, req, out);
		else
			rc = alloc_plain(vol, &ac, req, out);
		/*
		 * A search visits groups one at a time, so blocks freed
		 * behind it while others are taken ahead of it can make it
		 * miss free space that existed throughout.  The exact counter
		 * tells: while it shows room for min_len, search again.
		 */
		if (rc != -ENOSPC || ac.stop || tries == BGA_SEARCH_RETRIES || (req->flags & BGA_EXACT_GOAL) ||
		    blocks_unpromised(vol, &ac) < (int64_t)req->min_len)
			break;
		sched_yield();
	}
nospace:;
	/*
	 * -EAGAIN only if the commit would make room: the pending blocks must
	 * leave min_len blocks unpromised to reservations (a reserved request
	 * brings its own promise), and a run of min_len must form.  Pending
	 * blocks can join free ones, so no count of them alone decides.
	 */
	uint64_t pending = __atomic_load_n(&vol->dfree_blocks, __ATOMIC_RELAXED);
	if (rc == -ENOSPC && pending != 0 &&
	    (reserved || (int64_t)geo->capacity - bga_counter_sum(vol->used) + (int64_t)pending >=
				 (int64_t)req->min_len) &&
	    bga__dfree_would_fit(vol, geo, req->min_len,
				 (req->flags & BGA_EXACT_GOAL) ? req->goal : BGA_NO_GOAL))
		rc = -EAGAIN;
out:
	urcu_bp_read_unlock();
	return rc;
}

/* ---- freeing ranges, possibly across groups ---- */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/*
 * Lock every slot that groups g0..g1 map to, in ascending slot order, each
 * once (two groups may share a slot).  Everything else holds at most one
 * group lock, so this order cannot deadlock.
 */
static void lock_groups(struct bga_volume *vol, uint64_t g0, uint64_t g1, uint32_t *slots, uint32_t *nslots)
{
	uint32_t n = bga_locktab_nslots(vol->locks), k = 0;
	if (g1 - g0 + 1 >= n) {
		for (uint32_t s = 0; s < n; s++)
			slots[k++] = s;
	} else {
		for (uint64_t g = g0; g <= g1; g++)
			slots[k++] = bga_locktab_slot(vol->locks, g);
		qsort(slots, k, sizeof(*slots), cmp_u32);
		uint32_t u = 0;
		for (uint32_t i = 0; i < k; i++)
			if (u == 0 || slots[u - 1] != slots[i])
				slots[u++] = slots[i];
		k = u;
	}
	for (uint32_t i = 0; i < k; i++) {
		bga__lockdep_acquire(BGA_LOCKDEP_GROUP, slots[i], true);
		bga_locktab_lock(vol->locks, slots[i]);
	}
	*nslots = k;
}

static void unlock_groups(struct bga_volume *vol, const uint32_t *slots, uint32_t n)
{
	for (uint32_t i = n; i-- > 0;) {
		bga__lockdep_release(BGA_LOCKDEP_GROUP, slots[i]);
		bga_locktab_unlock(vol->locks, slots[i]);
	}
}

/* The part of [start, start+len) inside group g, as group offsets. */
static void clip(const struct bga_volume *vol, uint64_t g, uint64_t start, uint64_t len, uint32_t *off,
		 uint32_t *n)
{
	uint64_t first = bga__group_first(vol, g), end = first + vol->cfg.blocks_per_group;
	uint64_t s = BGA_MAX(start, first), e = BGA_MIN(start + len, end);
	*off = (uint32_t)(s - first);
	*n = (uint32_t)(e - s);
}

int bga__range_check(struct bga_volume *vol, const struct bga_geom *geo, uint64_t start, uint64_t len)
{
	if (len == 0 || start >= geo->nblocks || len > geo->nblocks - start ||
	    start < vol->cfg.first_data_block)
		return -EINVAL;
	return 0;
}

/* The checks of bga__range_apply for one group, with its lock held. */
static int range_usable_locked(const struct bga_volume *vol, const struct bga_group *grp, uint64_t g, uint32_t off, uint32_t n)
{
	/* A quarantined group (persist_load.c) has no bitmap: the test costs
	 * the fast path nothing it does not load already. */
	if (bga_unlikely(grp->bitmap == NULL && (grp->flags & BGA_GROUP_QUARANTINED)))
		return -EUCLEAN;
	if (!bga__group_is_used_locked(vol, grp, g, off, n))
		return -EINVAL;
	if (grp->ext && grp->ext->dfree && bga__dfree_overlaps_locked(grp, off, n))
		return -EINVAL;
	return 0;
}

/*
 * Run `fn` over [start, start+len) with every group lock of the range held,
 * after checking all-or-nothing that every block is allocated and not
 * waiting on a deferred free.  `fn` may fail only before it changes
 * anything (it is called once per group with `commit` false to prepare,
 * then once per group with `commit` true).
 */
int bga__range_apply(struct bga_volume *vol, const struct bga_geom *geo, uint64_t start, uint64_t len,
		     bga__range_fn fn, void *arg)
{
	uint64_t g0 = bga__group_of(vol, start), g1 = bga__group_of(vol, start + len - 1);
	uint32_t nslots = bga_locktab_nslots(vol->locks);
	uint32_t stack_slots[16], *slots = stack_slots;
	uint64_t ng = g1 - g0 + 1;
	if (BGA_MIN(ng, (uint64_t)nslots) > 16) {
		slots = malloc(BGA_MIN(ng, (uint64_t)nslots) * sizeof(*slots));
		if (slots == NULL)
			return -ENOMEM;
	}
	/* A range in untouched chunks is free by definition: reject it before
	 * allocating anything. */
	int rc = 0;
	for (uint64_t c = g0 >> BGA_CHUNK_SHIFT; c <= g1 >> BGA_CHUNK_SHIFT; c++)
		if (bga__chunk_get(vol, c) == NULL)
			rc = -EINVAL;
	uint32_t held = 0;
	if (rc == 0) {
		lock_groups(vol, g0, g1, slots, &held);
		for (uint64_t g = g0; g <= g1 && rc == 0; g++) {
			struct bga_group *grp = bga__group_lookup(vol, g);
			uint32_t off, n;
			clip(vol, g, start, len, &off, &n);
			rc = range_usable_locked(vol, grp, g, off, n);
			if (rc == 0)
				rc = fn(vol, geo, grp, g, off, n, false, arg);
		}
		for (uint64_t g = g0; g <= g1 && rc == 0; g++) {
			uint32_t off, n;
			clip(vol, g, start, len, &off, &n);
			fn(vol, geo, bga__group_lookup(vol, g), g, off, n, true, arg);
		}
		unlock_groups(vol, slots, held);
	}
	if (slots != stack_slots)
		free(slots);
	return rc;
}

static int free_fn(struct bga_volume *vol, const struct bga_geom *geo, struct bga_group *grp, uint64_t g,
		   uint32_t off, uint32_t n, bool commit, void *arg)
{
	(void)geo;
	(void)arg;
	if (!commit)
		return bga__group_prepare_release_locked(vol, grp, g, off, n);
	bga__group_release_locked(vol, grp, g, off, n);
	return 0;
}

/* bga_free of a range inside one group: the common case, without the
 * callbacks of bga__range_apply. */
static int free_in_group(struct bga_volume *vol, uint64_t g, uint32_t off, uint32_t n)
{
	struct bga_chunk *ch = bga__chunk_get(vol, g >> BGA_CHUNK_SHIFT);
	if (ch == NULL)
		return -EINVAL; /* an untouched group is wholly free */
	struct bga_group *grp = &ch->groups[g & (BGA_CHUNK_GROUPS - 1)];
	bga__group_lock(vol, g);
	int rc = range_usable_locked(vol, grp, g, off, n);
	if (rc == 0)
		rc = bga__group_prepare_release_locked(vol, grp, g, off, n);
	if (rc == 0)
		bga__group_release_locked(vol, grp, g, off, n);
	bga__group_unlock(vol, g);
	return rc;
}

int bga_free(struct bga_volume *vol, uint64_t start, uint64_t len)
{
	if (vol == NULL)
		return -EINVAL;
	uint64_t g = bga__group_of(vol, start);
	uint32_t off = (uint32_t)(start - bga__group_first(vol, g));
	bool one_group = len != 0 && len <= vol->cfg.blocks_per_group - off;
	uint64_t floor = __atomic_load_n(&vol->nblocks_floor, __ATOMIC_ACQUIRE);
	int rc;
	if (one_group && start >= vol->cfg.first_data_block && start < floor && len <= floor - start) {
		/* Inside every geometry, and free_in_group reads none: no
		 * RCU section. */
		rc = free_in_group(vol, g, off, (uint32_t)len);
	} else {
		urcu_bp_read_lock();
		const struct bga_geom *geo = bga_rcu_load(vol->geom);
		rc = bga__range_check(vol, geo, start, len);
		if (rc == 0)
			rc = one_group ? free_in_group(vol, g, off, (uint32_t)len)
				       : bga__range_apply(vol, geo, start, len, free_fn, NULL);
		urcu_bp_read_unlock();
	}
	if (rc == 0)
		bga__counter_add(vol->used, -(int64_t)len);
	return rc;
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

/* free = capacity - (allocated + reserved) + reserved */
uint64_t bga_free_estimate(const struct bga_volume *vol)
{
	if (vol == NULL)
		return 0;
	urcu_bp_read_lock();
	int64_t cap = (int64_t)bga_rcu_load(vol->geom)->capacity;
	urcu_bp_read_unlock();
	int64_t f = cap - bga_counter_read(vol->used) + (int64_t)__atomic_load_n(&vol->reserved, __ATOMIC_RELAXED);
	return f < 0 ? 0 : f > cap ? (uint64_t)cap : (uint64_t)f;
}

uint64_t bga_free_exact(struct bga_volume *vol)
{
	if (vol == NULL)
		return 0;
	urcu_bp_read_lock();
	const struct bga_geom *geo = bga_rcu_load(vol->geom);
	int64_t f = (int64_t)geo->capacity - bga_counter_sum(vol->used) +
		    (int64_t)__atomic_load_n(&vol->reserved, __ATOMIC_RELAXED);
	urcu_bp_read_unlock();
	return f < 0 ? 0 : (uint64_t)f;
}

int bga_lock_stats(struct bga_volume *vol, uint32_t slot, struct bga_lock_stats *out)
{
	if (vol == NULL)
		return -EINVAL;
	return bga_locktab_stats(vol->locks, slot, out);
}
