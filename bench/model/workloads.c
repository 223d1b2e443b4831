// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The model's workloads (workloads.h): the demo's (bench/scale/scale_workloads.c)
 * as one core's operations, for the counts on modelled cores (model.c)
 * and the check's measure on this machine's CPUs (measure.c).
 */
#include <errno.h>
#include <stdlib.h>

#include <bgalloc/locktab.h>

#include "workloads.h"

const char *const wl_name[W_N] = {"churn", "writers", "appenders-own", "counter", "lock"};
const char *const var_name[V_N] = {"bgalloc", "baseline", "percpu", "atomic", "fas", "ticket", "mcs", "mutex", "whole", "limited"};

static int alloc1(struct run *r, uint64_t goal, struct bga_rsv *rsv, struct bga_extent *e)
{
	struct bga_request req = {.goal = goal, .min_len = 1, .max_len = 1, .rsv = rsv, .flags = 0};
	return bga_alloc(r->vol, &req, e);
}

static void churn_setup(struct run *r, struct core *c)
{
	struct bga_extent e;

	c->n = WORKING_SET / (uint32_t)r->ncores;
	if (!c->n)
		c->n = 1;
	c->blk = malloc(c->n * sizeof(*c->blk));
	for (uint32_t i = 0; i < c->n; i++)
		c->blk[i] = alloc1(r, rng_below(&c->rng, r->nblocks), NULL, &e) ? NO_BLOCK : e.start;
}

static inline __attribute__((always_inline)) void churn_op(struct run *r, struct core *c)
{
	uint64_t *b = &c->blk[rng_below(&c->rng, c->n)];
	uint64_t goal = rng_below(&c->rng, r->nblocks);
	struct bga_extent e;

	if (*b != NO_BLOCK && bga_free(r->vol, *b, 1))
		c->errors++;
	if (alloc1(r, goal, NULL, &e)) {
		*b = NO_BLOCK;
		c->errors++;
	} else {
		*b = e.start;
	}
}

static void churn_teardown(struct run *r, struct core *c)
{
	for (uint32_t i = 0; i < c->n; i++)
		if (c->blk[i] != NO_BLOCK)
			bga_free(r->vol, c->blk[i], 1);
	free(c->blk);
}

/* writers' directory: group 1 for every core; appenders-own: a group of
 * each core's own, as far apart as the groups allow (scale_workloads.c) */
static uint64_t dir_of(struct run *r, struct core *c)
{
	uint64_t groups = r->nblocks / 32768, spread;

	if (r->w == W_WRITERS)
		return r->nblocks > 65536 ? 32768 : 0;
	spread = (groups - 1) / (uint64_t)r->ncores;
	if (!spread)
		spread = 1;
	return (1 + (uint64_t)c->idx * spread % (groups - 1)) * 32768;
}

static void writers_setup(struct run *r, struct core *c)
{
	c->nfiles = r->w == W_WRITERS ? WRITER_FILES : APPEND_FILES;
	c->f = calloc(c->nfiles, sizeof(*c->f));
	c->dir = dir_of(r, c);
}

static void wfile_delete(struct run *r, struct core *c, struct wfile *f)
{
	for (uint32_t i = 0; i < f->next; i++)
		if (bga_free(r->vol, f->ext[i].start, f->ext[i].len))
			c->errors++;
	f->next = f->blocks = 0;
}

static inline __attribute__((always_inline)) void writers_op(struct run *r, struct core *c)
{
	struct wfile *f = &c->f[c->cur];
	struct bga_extent e;
	uint64_t goal;

	if (f->blocks == 0 && !c->rsv &&
	    (bga_rsv_open(r->vol, &c->rsv) || (r->v == V_WHOLE && bga_rsv_set_size(c->rsv, FILE_BLOCKS))))
		c->errors++;
	goal = f->next ? f->ext[f->next - 1].start + f->ext[f->next - 1].len : c->dir;
	if (goal >= r->nblocks)
		goal = c->dir;
	if (alloc1(r, goal, c->rsv, &e)) {
		c->errors++;
		return;
	}
	if (f->next && f->ext[f->next - 1].start + f->ext[f->next - 1].len == e.start)
		f->ext[f->next - 1].len++;
	else
		f->ext[f->next++] = e;
	if (++f->blocks < FILE_BLOCKS)
		return;
	bga_rsv_close(c->rsv);
	c->rsv = NULL;
	c->cur = c->cur + 1 == c->nfiles ? 0 : c->cur + 1;
	wfile_delete(r, c, &c->f[c->cur]);
}

static void writers_teardown(struct run *r, struct core *c)
{
	bga_rsv_close(c->rsv);
	for (uint32_t i = 0; i < c->nfiles; i++)
		wfile_delete(r, c, &c->f[i]);
	free(c->f);
}

void model_setup(struct run *r, struct core *c)
{
	if (r->w == W_CHURN)
		churn_setup(r, c);
	else if (r->w == W_WRITERS || r->w == W_APP_OWN)
		writers_setup(r, c);
}

static inline __attribute__((always_inline)) void op(struct run *r, struct core *c)
{
	switch (r->w) {
	case W_CHURN:
		churn_op(r, c);
		break;
	case W_WRITERS:
	case W_APP_OWN:
		writers_op(r, c);
		break;
	case W_LOCK:
		bga_locktab_lock(r->locks, 0);
		bga_locktab_unlock(r->locks, 0);
		break;
	default:
		bga_counter_add(r->ctr, 1);
		break;
	}
}

void model_op(struct run *r, struct core *c)
{
	op(r, c);
}

/* Here, beside the workloads, so that they inline into it as into
 * model_op: callgrind's count is theirs, not a call's. */
__attribute__((noinline)) void model_op_measured(struct run *r, struct core *c)
{
	op(r, c);
	__asm__ __volatile__("" ::: "memory");
}

/* counter/limited's op, apart, so that the others' (model_op's switch)
 * stay as they were: the callers choose by r->v outside the counted code. */
static inline __attribute__((always_inline)) void op_limited(struct run *r, struct core *c)
{
	if (bga_counter_add_limited(r->ctr, 1, INT64_MAX / 2))
		c->errors++;
}

void model_op_limited(struct run *r, struct core *c)
{
	op_limited(r, c);
}

__attribute__((noinline)) void model_op_limited_measured(struct run *r, struct core *c)
{
	op_limited(r, c);
	__asm__ __volatile__("" ::: "memory");
}

void model_teardown(struct run *r, struct core *c)
{
	if (r->w == W_CHURN)
		churn_teardown(r, c);
	else if (r->w == W_WRITERS || r->w == W_APP_OWN)
		writers_teardown(r, c);
}

int model_target_create(struct run *r)
{
	struct bga_config cfg;
	enum var v = r->v;

	r->nblocks = r->w == W_APP_OWN ? APP_BLOCKS : NBLOCKS;
	if (r->w == W_LOCK)
		return v >= V_FAS ? bga_locktab_create(&r->locks, 1, (enum bga_lock_kind)(BGA_LOCK_FAS + (v - V_FAS)))
				  : -EINVAL;
	if (r->w == W_COUNTER)
		return v == V_ATOMIC || v == V_PERCPU || v == V_LIMITED
			       ? bga_counter_create(&r->ctr, 0, 0, v == V_ATOMIC ? BGA_COUNTER_ATOMIC : BGA_COUNTER_PERCPU)
			       : -EINVAL;
	if (v != V_BGA && v != V_BASE && !(v == V_WHOLE && (r->w == W_WRITERS || r->w == W_APP_OWN)))
		return -EINVAL;
	bga_config_init(&cfg, r->nblocks);
	/* BGA_MODEL_BATCH=N: the used counter's batch instead of the volume's
	 * own choice, to ask what the fold rate costs (docs/MODEL.md); the
	 * table's figures are made without it. */
	if (getenv("BGA_MODEL_BATCH"))
		cfg.counter_batch = atoi(getenv("BGA_MODEL_BATCH"));
	if (v == V_BASE)
		cfg.flags = BGA_GLOBAL_LOCK | BGA_ATOMIC_COUNTERS;
	else
		cfg.lock_kind = BGA_LOCK_FAS; /* the release default, which TSan builds replace */
	return bga_create(&cfg, &r->vol);
}

void model_target_destroy(struct run *r)
{
	if (r->vol)
		bga_destroy(r->vol);
	bga_counter_destroy(r->ctr);
	bga_locktab_destroy(r->locks);
	r->vol = NULL;
	r->ctr = NULL;
	r->locks = NULL;
}

long model_warm_ops(enum wl w)
{
	/* writers and appenders fill their files before they delete */
	return w == W_CHURN ? 256 : w == W_COUNTER || w == W_LOCK ? 4096 : (long)(w == W_WRITERS ? WRITER_FILES : APPEND_FILES) * FILE_BLOCKS + 64;
}
