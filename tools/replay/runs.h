/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_REPLAY_RUNS_H
#define BGA_REPLAY_RUNS_H

/*
 * How many pieces a replayed file's (or object's) extents make: physical
 * runs, whatever their logical order (runs_physical: the replay's
 * extents per file), and logical runs, each a piece that goes on both
 * logically and physically from the last, as the file's own map holds
 * them (runs_logical: the replay's logical extents per file).
 */

#include <stddef.h>
#include <stdint.h>

#include <bgalloc.h>

/* qsort's order of struct bga_extent by start. */
int runs_by_start(const void *a, const void *b);

/* Runs of ext[0..n) once sorted (ext is sorted in place) and merged: a
 * block listed twice (freed and allocated again to the same file, as
 * bgafs trims and rewrites) joins the runs it overlaps.  0 when n is 0. */
size_t runs_physical(struct bga_extent *ext, size_t n);

/*
 * Logical runs of ext[0..n), lblk[i] the logical place of ext[i]'s first
 * block: the extents in logical order, a new run wherever one does not
 * go on from the last both logically and physically.  The places come
 * from the goal_from records (bga_trace.h; run.c): a request's first
 * block lies at its anchor's place moved by the distance, a request
 * without one (a file's first, or the rest of a write a first call left
 * short) goes on from the file's last, and the blocks of a request map
 * its hole in order.  Places are relative to the file's first request;
 * a trace without goal_from counts one file written in order, as
 * runs_physical would where its pieces ascend.  0 when n is 0 or memory
 * runs out.
 */
size_t runs_logical(const struct bga_extent *ext, const int64_t *lblk, size_t n);

#endif
