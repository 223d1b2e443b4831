/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_MODEL_WORKLOADS_H
#define BGA_MODEL_WORKLOADS_H

/*
 * The model's workloads (workloads.c), for the counts on modelled cores
 * (model.c's baton) and the check's measure on this machine's CPUs
 * (measure.c).
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>

#include <bgalloc.h>
#include <bgalloc/counter.h>

#include "rng.h"

/* lock: one lock of a lock table taken and released (bga-lab's lock
 * kinds; bga_locktab_lock on slot 0), for bga-lab's count verdict */
enum wl { W_CHURN, W_WRITERS, W_APP_OWN, W_COUNTER, W_LOCK, W_N };
extern const char *const wl_name[W_N];
/* whole: bgalloc with each file's handle sized to the whole file
 * (bga_rsv_set_size(FILE_BLOCKS)): a file's window booked once, whole */
/* limited: the per-CPU counter's bga_counter_add_limited(1) far from its
 * limit (the volume's charge), beside percpu's bga_counter_add(1) */
enum var { V_BGA, V_BASE, V_PERCPU, V_ATOMIC, V_FAS, V_TICKET, V_MCS, V_MUTEX, V_WHOLE, V_LIMITED, V_N };
extern const char *const var_name[V_N];

#define NBLOCKS (UINT64_C(1) << 20)
#define APP_BLOCKS (UINT64_C(1) << 22)
#define WORKING_SET 4096u
#define FILE_BLOCKS 256u
#define WRITER_FILES 4u
#define APPEND_FILES 17u /* 16 complete, one written */
#define NO_BLOCK UINT64_MAX

struct wfile {
	uint32_t next, blocks;
	struct bga_extent ext[FILE_BLOCKS];
};

struct core {
	int idx;
	struct rng rng;
	sem_t turn;
	/* churn */
	uint64_t *blk;
	uint32_t n;
	/* writers, appenders */
	uint32_t nfiles, cur;
	uint64_t dir;
	struct bga_rsv *rsv;
	struct wfile *f;
	uint64_t errors;
	pthread_t th;
} __attribute__((aligned(128)));

struct run {
	enum wl w;
	enum var v;
	int ncores;
	long warm, rounds;
	uint64_t nblocks;
	struct bga_volume *vol;
	struct bga_counter *ctr;
	struct bga_locktab *locks;
	struct core *cores;
};

/* r's volume (or counter) for r->w and r->v, r->nblocks set: 0 or a
 * negative errno.  model_target_destroy frees it. */
int model_target_create(struct run *r);
void model_target_destroy(struct run *r);
/* A core's files or blocks before its first op, one op, and the end. */
void model_setup(struct run *r, struct core *c);
void model_op(struct run *r, struct core *c);
void model_teardown(struct run *r, struct core *c);
/* model_op, which callgrind counts (--toggle-collect): one operation of
 * the measured rounds, nothing of the baton. */
void model_op_measured(struct run *r, struct core *c);
/* The same two for counter/limited (r->v == V_LIMITED), which model_op
 * does not do: a test of the variant there would add to every other
 * workload's count. */
void model_op_limited(struct run *r, struct core *c);
void model_op_limited_measured(struct run *r, struct core *c);
/* Ops a core runs before measuring: past setup into the steady state. */
long model_warm_ops(enum wl w);

#endif
