/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_PERCPU_H
#define BGA_PERCPU_H

/*
 * A CPU's own line of the volume (vol->cpu[]): a sub-struct per subsystem
 * that keeps state per CPU, each saying who writes and who reads it.  One
 * padded line per CPU: the fields are written on allocations, and two
 * CPUs' in one line would make every such write a cross-CPU miss.  A
 * thread may migrate between reading and writing its CPU's entry, so
 * every field is a relaxed atomic (the locality window's span aside,
 * window.h) and any value it holds is safe: hints and sums, never a
 * decision.
 */

#include "types.h"
#include "window.h"

/* Steering (alloc/steer.h): where this CPU's requests look first.
 * volume.c seeds the home; only steer.h writes afterwards. */
struct bga_steer_hints {
	uint64_t home;  /* where BGA_NO_GOAL allocations look first */
	uint64_t from;  /* a goal group whose lock this CPU found busy ... */
	uint64_t to;    /* ... and the block it allocates from instead */
	uint32_t left;  /* allocations before `from` is tried again */
	uint32_t len;   /* what `left` started from (bga__note_result) */
	uint32_t since; /* unsteered allocations aimed at `from` since the CPU
			 * came back to it, up to BGA_STEER_ALLOCS */
};

/* Window handles on this CPU (alloc/rsv.c and the route write; bga_stats
 * sums them): kept per CPU so that counting never moves a shared line. */
struct bga_rsv_counts {
	uint64_t allocs, hits;   /* allocations through a handle, and those its window served */
	uint64_t opened, closed; /* handles; their difference, summed, is rsv_windows_open */
};

/*
 * Packing on this CPU (alloc/search.c writes, reads and decays it; a
 * hint: a lost update only moves a ratio a little):
 * per length L of a handle's first request, 1 .. BGA_SHOWN_LENS, the
 * files whose first request was L long (`files`) and those of them that
 * asked again through the same handle (`grew`).
 */
#define BGA_SHOWN_LENS (BGA_LOCAL_MAX_REQ - 1)
struct bga_pack {
	uint16_t files[BGA_SHOWN_LENS];
	uint16_t grew[BGA_SHOWN_LENS];
	uint64_t next; /* where the CPU's next first window looks from (pack.h); 0: none */
	/* search.c's alloc_hole: group hole_group - 1 held no hole of length
	 * L (bit L - 1 of hole_none) while its free count was hole_free */
	uint64_t hole_group;
	uint32_t hole_free;
	uint16_t hole_none;
};

/* Deferred frees (deferred.c): blocks and extents that deferred frees on
 * this CPU added, minus those commits on it released; their sums over the
 * CPUs are the pending totals (bga__dfree_pending), which no shared line
 * holds. */
struct bga_dfree_totals {
	int64_t blocks, extents;
};

struct bga_percpu {
	struct bga_steer_hints steer;
	struct bga_rsv_counts rsv;
	struct bga_pack pack;
	struct bga_dfree_totals dfree;
	struct bga_local_window local; /* window.h */
} __attribute__((aligned(BGA_CACHELINE)));

/* The line of CPU `cpu` (a bga__cpu_hint()). */
static inline struct bga_percpu *bga__percpu_on(struct bga_volume *vol, unsigned cpu)
{
	/* As counter_slot_on: only a CPU hot-added past the configured set
	 * needs the (slow) division. */
	if (bga_unlikely(cpu >= vol->ncpu))
		cpu %= vol->ncpu;
	return &vol->cpu[cpu];
}

/* The calling CPU's line. */
static inline struct bga_percpu *bga__percpu(struct bga_volume *vol)
{
	return bga__percpu_on(vol, bga__cpu_hint());
}

/* Where a BGA_NO_GOAL allocation on pc's CPU looks first, in a volume of
 * nblocks (a home past it is stale). */
static inline uint64_t bga__home(const struct bga_percpu *pc, uint64_t nblocks)
{
	uint64_t b = __atomic_load_n(&pc->steer.home, __ATOMIC_RELAXED);
	return b < nblocks ? b : 0;
}

#endif
