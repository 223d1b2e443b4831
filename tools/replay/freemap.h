/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_REPLAY_FREEMAP_H
#define BGA_REPLAY_FREEMAP_H

/*
 * What a free map looks like, from its maximal free extents given in block
 * order: counts, the histogram, the longest run, the free-map hash
 * (bga_trace.h), bgalloc's fragmentation score (as <bgalloc.h> defines
 * bga_stats.frag_score, with extents split at multiples of `group`) and
 * Ceph's (Allocator::get_fragmentation_score of ceph/ceph's
 * src/os/bluestore/Allocator.cc at main, with lengths in bytes of `unit`
 * each; and as Reef and earlier defined it, grades worth 1.1 and
 * "terrible" every byte alone).
 * The same figures for any allocator, so they compare.
 */

#include <stdint.h>
#include <stdio.h>

#include <bgalloc.h>

struct freemap {
	uint64_t group, unit;
	uint64_t free_blocks, free_extents, longest, longest_start;
	uint64_t hist_count[64], hist_blocks[64];
	double actual_bga, actual_ceph, actual_ceph_legacy;
	uint64_t hash;
	double score_bga, score_ceph; /* set by freemap_finish */
	double score_ceph_legacy;     /* Ceph's score as Reef and earlier define it */
	/* the extent being merged */
	uint64_t cur_start, cur_len;
};

void freemap_init(struct freemap *m, uint64_t group, uint64_t unit);
/* An extent; touching extents are merged before they count. */
void freemap_add(struct freemap *m, uint64_t start, uint64_t len);
void freemap_finish(struct freemap *m);

/* The whole volume's free map (bga_foreach_free), scored with extents
 * split at multiples of group (0: the volume's blocks_per_group).  0 or
 * its error. */
int freemap_of_volume(struct bga_volume *vol, uint64_t unit, uint64_t group, struct freemap *m);

/* Ceph's score of one length in bytes (get_score), for the tests. */
double freemap_ceph_get_score(uint64_t v);

/* Print the summary: free blocks and extents, longest run, both scores,
 * the histogram as e2freefrag prints it. */
void freemap_print(FILE *f, const struct freemap *m);

#endif

/*
 * Where a free map's small runs came from (bga-replay run with
 * BGA_REPLAY_BLAME=FILE set): per block, the record that last allocated
 * it and the one that last freed it, as the replay handed them out and
 * gave them back (a window's remainder is never handed out, so it counts
 * as never allocated).  At the end, each free run shorter than
 * BLAME_SMALL blocks is classed by how it came to be:
 *   gap      no block of it was handed out over the trace: skipped by
 *            every request around it (a window's remainder given back, a
 *            packed file's neighbour, a goal past it);
 *   hole     handed out and given back, and both its neighbours were
 *            handed out before it was given back: a freed extent nobody
 *            reused;
 *   remnant  given back, then a neighbour was handed out after: a later
 *            request took part of a free run and left this piece;
 * and appended to FILE when the replay reaches the trace's end record
 * (a trace without one, or --verify, reports nothing): one run a line,
 * "ALLOCATOR CLASS START+LEN freed@SEQ LEFT RIGHT", each neighbour as
 * "OP@SEQ/hHANDLE/goal|nogoal/MIN-MAX" of the request that holds it
 * ("start": in use when the trace began; "-": none), then a line
 * "ALLOCATOR total CLASS runs N blocks M" for each class.  With
 * BGA_REPLAY_BLAME_SLICES=N as well, before the totals, the volume in N
 * equal slices (the last takes the rest), where old and new data lie:
 * "ALLOCATOR slice START+LEN free PCT% handed H mean seq S", H the
 * blocks the replay handed out that are still held, S the mean seq of
 * the requests that took them ("-": none).
 */
#define BLAME_SMALL 16
struct trace;
struct blame;
/* NULL unless BGA_REPLAY_BLAME is set (or on no memory). */
struct blame *blame_open(const char *label, const struct trace *t, uint64_t nblocks,
                         const struct bga_extent *fr, size_t n);
void blame_alloc(struct blame *b, size_t rec, const struct bga_extent *e, size_t n);
void blame_free(struct blame *b, size_t rec, const struct bga_extent *e, size_t n);
/* Free; report to the file first when report is set (the replay's last
 * record: a replay stopped early, or probed after it, reports nothing). */
void blame_close(struct blame *b, int report);
