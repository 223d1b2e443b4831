/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_GROUPDESC_H
#define BGA_GROUPDESC_H

/*
 * A group's descriptor and its rare state, with their invariants: what
 * a chunk (chunk.h) holds 2048 of.  The group under its lock, and its
 * functions: group.h.  No functions here: the chunk embeds the
 * descriptor, so its header needs the struct, and group.h, which finds a
 * group through its chunk, needs the chunk; a header of its own keeps
 * both one way (chunk.h -> groupdesc.h, group.h -> chunk.h).
 */

#include "types.h"

/* A run of blocks in one group: offset and length. */
struct bga_run {
	uint32_t off, len;
};

/*
 * The runs one trim has claimed in a group for its discard (walk.c):
 * marked used and charged like an allocation, but owned by no caller, so
 * a store writes them as free (persist.c), as it does window remainders.
 * Linked into its group's list, under the group lock, from the claim to
 * the give-back; the record and its runs live on the trim's side.
 */
struct bga_trim_claim {
	struct bga_trim_claim *next;
	const struct bga_run *runs;
	size_t n;
};

/* Places a group remembers where a file outgrew its hole (search.c,
 * bga__window_outgrown_locked). */
#define BGA_OUTGROWN 16

/* Rarely used per-group state, allocated on first use. */
struct bga_group_ext {
	struct bga_window *windows; /* linked windows, unsorted; under the group lock */
	struct bga_trim_claim *claims;   /* trims' claims while they discard; under the group lock */
	struct bga_dfree *dfree;    /* pending deferred frees in this group */
	uint64_t *pending;          /* blocks_per_group bits: set iff a block is in dfree;
				     * made with the first record, so a free checks
				     * for pending blocks in O(words), not O(records) */
	uint32_t dfree_blocks;      /* blocks in dfree */
	uint32_t sized_next;        /* where the last sized window booked here ended: the
				     * next one's first fit starts there (search.c) */
	uint64_t *held;             /* blocks_per_group bits: window.h's held map, while
				     * the group holds many windows; under the group lock */
	bool held_lost;             /* window.h: a free met a held block no remainder holds */
	/* window.h: where files written in order ran into another file's
	 * block, offset + 1 (0: none), the last BGA_OUTGROWN noted, a ring
	 * (search.c); under the group lock */
	uint32_t outgrown[BGA_OUTGROWN];
	uint8_t outgrown_next;
};

enum {
	BGA_GROUP_TRIMMED = 1u << 0, /* trimmed and not freed into since */
	/* persist.c: failed its checksum at load; wholly used, no bitmap,
	 * never allocated from or freed into (-EUCLEAN) */
	BGA_GROUP_QUARANTINED = 1u << 1,
	/* persist.c: changed since the last store copied it; set with every
	 * change of `free` (the flags share its line, which the change writes
	 * anyway) */
	BGA_GROUP_DIRTY = 1u << 2,
	/* search.c: a window booking's first pass (a run with room for the
	 * largest window) found none here, and nothing was freed into the
	 * group or unlinked from it since: the next first pass skips it
	 * (its second pass, any run, does not).  Cleared with every change
	 * that can make room: a release (bga__group_freed_locked and the
	 * whole-group release), a window's unlink, a grow. */
	BGA_GROUP_NO_ROOM = 1u << 3,
};

/*
 * One block group.  Every field is written under the group's lock.
 * `free` and `max_run` are also read without it (relaxed atomics) by the
 * group index search and the statistics, which treat them as hints.
 *
 * Invariants (checked by bga_check and BGA_ASSERT):
 *  - the usable span is [lo, hi): lo from first_data_block, hi kept here
 *    so that a grow changes it under the lock, and every reader of the
 *    group, whatever geometry it holds, sees the span the bitmap has;
 *  - bitmap == NULL  =>  free == 0 or free == span (hi - lo): the group is
 *    wholly used or wholly free;
 *  - bitmap != NULL  =>  popcount(bitmap) == blocks_per_group - free, and
 *    every bit outside [lo, hi) is set;
 *  - max_run >= the longest free run: an upper bound, exact after a
 *    recompute, and 0 when free is 0.  It may exceed free: allocations
 *    leave it alone (keeping it tight cost a store and often an index
 *    update per allocation), so a free that lands in a long run finds it
 *    large enough already and skips its merge scan.  A search it misleads
 *    recomputes it (bga__group_refresh_locked);
 *  - the group index holds bit k for this group iff max_run >= 2^k.
 */
struct bga_group {
	uint64_t *bitmap;
	uint32_t free;
	uint32_t max_run;
	uint32_t flags;
	uint32_t hi; /* end of the usable span (offset); see bga__grp_span */
	struct bga_group_ext *ext;
	/*
	 * A 64-byte line of its own (32 bytes of it padding; the chunk is
	 * allocated aligned): every booking and window drop writes its
	 * group's descriptor, and neighbouring groups are what different
	 * CPUs' files use side by side (a directory, or a home, each).  Two
	 * to a line, that shared-nothing work moved the line between their
	 * CPUs (BENCHMARKS.md#the-model-of-n-cores).  Padding rather than
	 * a permuted slot order: the lookup stays a mask and a shift.
	 */
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct bga_group) == 64 && _Alignof(struct bga_group) == 64,
	       "a group's descriptor is one 64-byte line of its own");

#endif
