/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_ACTX_H
#define BGA_ACTX_H

/*
 * The allocation context: one request's state through the slow path
 * (route.c), as ext4's ext4_allocation_context.  The route owns it; the
 * core sees only its first member, the narrow request it takes for
 * (struct bga_take, charge.h), passed as &ac->take.
 */

#include "types.h"
#include "charge.h"

struct bga_actx {
	struct bga_take take;          /* first: what the core reads (charge.h) */
	/* The route's own (the core never reads these). */
	const struct bga_request *req; /* the request as the caller gave it */
	unsigned kind;                 /* enum bga_req_kind (request.h), decided once */
	uint64_t goal;                 /* the resolved goal: where the walk looks first */
	bool steered;                  /* the goal is where this CPU's steering sent it */
	bool goal_busy;                /* the goal's group was skipped: its lock was held */
	bool note;                     /* where the extent went moves the CPU's hints (steer.h) */
	struct bga_percpu *pc;         /* the calling CPU's hints (steering, its locality window) */
	struct bga_window *book;       /* the window being booked, or NULL */
	uint32_t wsize;                /* its size */
	bool whole;                    /* a bga_alloc_vec piece: one run for all of max first, and a
					* goal inside a free run moved to its start (search.c) */
	uint32_t fit;                  /* a file's first window's first pass: runs of at least
					* this many (0: take.room's); with no window booked, a
					* packed file's request (search.c) */
	bool sized;                    /* the window's size is the caller's (bga_rsv_set_size):
					* its first pass wants a run of all of it (search.c) */
	bool at_next;                  /* a packed file's walk starts at the CPU's next-fit place
					* (ac->goal): taken there only where the run there starts
					* and holds it (search.c) */
	bool keep_windows;             /* a bga_alloc_vec piece that may not take other windows'
					* blocks back, even at its exact goal (search.c) */
	bool vec;                      /* a bga_alloc_vec piece: a window's group tail is taken
					* and the file goes on in the next group (search.c) */
};

#endif
