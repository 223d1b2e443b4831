/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_REPLAY_ORACLE_H
#define BGA_REPLAY_ORACLE_H

/*
 * A clairvoyant reference (bga-replay run -a oracle[,death][,files=off]): it reads
 * the whole trace before the replay starts (a pre-pass) and so knows what
 * no online allocator can: how many blocks each file (a handle, from its
 * rsv_open to its rsv_close) will hold at its largest, how many blocks
 * each recorded call got, and when each allocated block will be freed.
 * What it reaches is what a placement that never moves data can reach on
 * that history, the figure the bars are judged against where no online
 * allocator meets them.
 *
 *   oracle        at a file's first request, one extent sized to the
 *                 most blocks the file will hold at once (at least the
 *                 request), by best fit (the smallest free extent that
 *                 holds it, at its end where its start is where an open
 *                 file that will grow goes on); the file's requests are served
 *                 from it: at the goal when the goal falls on its unused
 *                 blocks (the replay's goal is the block after the
 *                 file's copy of goal - 1: the file's logical position,
 *                 where the recording gives one), else from its lowest
 *                 unused run.  Blocks the file frees while open go back
 *                 to it; its unused blocks go back to the free space
 *                 when it is closed.  Each call gets as many blocks as
 *                 the recording got (within min_len .. max_len), so
 *                 the replay frees nothing extra.  A file its extent no
 *                 longer holds books the next, sized to the rest of its
 *                 life size.  A request without a file, or one no
 *                 extent serves, goes at its goal when the goal's free
 *                 run holds it, else by that best fit, else into the
 *                 longest free run, as much as it holds.
 *   oracle,death  the same, but every extent (a file's, or a request's
 *                 without a file) is placed by the time its blocks die
 *                 (the mean record at which the recording frees them;
 *                 never freed: the trace's end): of the 64 smallest
 *                 free extents that hold it, one it fills exactly, else
 *                 the one whose neighbour in use dies closest in time,
 *                 placed against that neighbour.  A heuristic that
 *                 knows the future, not a proven optimum (placement for
 *                 the least fragmentation is NP-hard): a bound on what
 *                 the free-space score can be brought to, not a floor.
 *   oracle,...,files=off
 *                 no file's extent: every request placed alone (by best
 *                 fit, or by death with death), as many blocks as the
 *                 recording got.  With death: the free space alone
 *                 served, whatever it costs the files (the files'
 *                 extents keep the holes their frees leave, which count
 *                 as free and in pieces).
 *
 * The unused blocks a file holds count as free in the free map, as
 * mballoc's preallocations and bgalloc's windows do.  Before a request is
 * placed short or fails, the open file holding the most unused blocks
 * gives them all back (and books no more), then the next, until the
 * request fits: the fewest files split when the volume runs short.
 * A request with BGA_EXACT_GOAL gets its own file's unused blocks or
 * free ones, never another file's.  Each call keeps bgalloc's contract
 * for what the replay passes, as refalloc.h's do (min_len .. max_len,
 * align, BGA_EXACT_GOAL, bga_alloc_vec's pieces, BGA_ALL_OR_NOTHING),
 * and the free space is a bestfit refalloc's: ref_check compares its
 * index with its bitmap at every free map, and every unused block a
 * file holds must be in use there and inside that file's extent.
 */

#include <stddef.h>
#include <stdint.h>

#include <bgalloc.h>

#include "freemap.h"
#include "trace.h"

struct oracle;
struct oracle_file;

#define ORACLE_DEATH 1u    /* death: extents placed by when their blocks die */
#define ORACLE_NO_FILES 2u /* files=off: no file's extent, every request placed alone */

/* "oracle[,death][,files=on|off]": 0 and *opts, or -1 with the reason
 * printed (an unknown option). */
int oracle_parse(const char *spec, unsigned *opts);

/* A volume of nblocks whose free blocks are fr[0..n) (sorted, disjoint),
 * blocks below fdb never handed out, to play t with: 0, -EINVAL or
 * -ENOMEM. */
int oracle_create(unsigned opts, const struct trace *t, uint64_t nblocks, uint64_t fdb, const struct bga_extent *fr,
                  size_t n, struct oracle **out);
void oracle_destroy(struct oracle *o);

/* The replay plays t->rec[i] next: its future (a file's size at an
 * rsv_open, the blocks a call got at an alloc) applies to the calls made
 * for it, and to no call after another oracle_at or after one alloc. */
void oracle_at(struct oracle *o, size_t i);

int oracle_file_open(struct oracle *o, struct oracle_file **out);
void oracle_file_close(struct oracle *o, struct oracle_file *f);

/* As ref_alloc (refalloc.h); f NULL: no file. */
int oracle_alloc(struct oracle *o, struct oracle_file *f, const struct bga_request *req, uint64_t want,
                 struct bga_extent *out, size_t max_out, size_t *n);
/* Every block in use (none a file's unused block): freed, or -EINVAL
 * and nothing changed. */
int oracle_free(struct oracle *o, uint64_t start, uint64_t len);
/* Every block free or a file's unused one: taken (from the file); -EBUSY
 * or -EINVAL, nothing changed. */
int oracle_claim(struct oracle *o, uint64_t start, uint64_t len);
/* The free map, files' unused blocks free; 0, or -EIO with the first
 * broken invariant printed. */
int oracle_freemap(const struct oracle *o, uint64_t group, uint64_t unit, struct freemap *m);

#endif
