/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_PACK_H
#define BGA_PACK_H

/*
 * What files showed on a CPU (pack.c; the counts in percpu.h's struct
 * bga_pack): which of a handle's first requests are packed, with no
 * window of their own (search.c, alloc_packed; <bgalloc/window.h>,
 * bga_rsv_open).  Hints, read and written with relaxed atomics.
 */

#include "types.h"
#include "percpu.h"
#include "handle.h"

/* The handle's first request, of max_len `len`, was served: counted on
 * pc's CPU (rsv->first set; a length past BGA_SHOWN_LENS is not
 * counted). */
void bga__pack_first(struct bga_percpu *pc, struct bga_rsv *rsv, uint32_t len);
/* The handle asked again after its first request: its file grew (counted
 * once, on the calling CPU). */
void bga__pack_grew(struct bga_volume *vol, struct bga_rsv *rsv);
/* Is a first request of max_len `len` packed on pc's CPU: of the files
 * whose first request was as long, enough were seen, and few grew? */
bool bga__pack_decides(const struct bga_percpu *pc, uint32_t len);
/* Have files whose first request was `len` long more often stayed whole
 * than grown on pc's CPU (enough of them seen)?  Then such a file, not
 * packed, may take a hole of exactly its length (search.c, alloc_hole). */
bool bga__pack_mostly_whole(const struct bga_percpu *pc, uint32_t len);

/*
 * Where a file's next first window, and a packed file whose run there
 * holds it, is looked for on a CPU (the next-fit place,
 * <bgalloc/alloc.h>, where a request looks, 2): the end of the first
 * extent the CPU's last first window took (bga__pack_booked says which
 * move it) or of its last packed file placed there, or BGA_NO_GOAL when none was placed since a bga_commit()
 * freed blocks below it in its group, which makes the CPU forget it
 * (deferred.c: the holes that commit freed are filled first again, from
 * the home's start).
 */
uint64_t bga__pack_next(const struct bga_percpu *pc);
void bga__pack_set_next(struct bga_percpu *pc, uint64_t block);
/* A window booked for a handle's first time took `ext`, asked for at
 * `goal` (BGA_NO_GOAL: none) at its file's first request or not
 * (`first_req`): the place moves to ext's end unless the booking was an
 * old file's with a goal that landed in the place's group or past it, or
 * a new file's that landed outside its goal's group (search.c,
 * bga__alloc_window). */
void bga__pack_booked(struct bga_volume *vol, struct bga_percpu *pc, uint64_t goal, bool first_req,
		      const struct bga_extent *ext);

/* Does a goal-less packed file of `len` blocks go first fit from the
 * CPU's home `home` (ac->goal) instead of at its next-fit place `next`:
 * the place lies in the group after the home's, the home's group is
 * nearly full and a free run there holds the file?  Takes and drops that
 * group's lock (call it holding none); geo: the request's geometry. */
bool bga__pack_home_first(struct bga_volume *vol, const struct bga_geom *geo, uint64_t home, uint64_t next,
			  uint32_t len);

#endif
