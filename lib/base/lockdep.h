/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_LOCKDEP_H
#define BGA_LOCKDEP_H

/*
 * A small lockdep for the volume's locks, in debug builds (BGA_DEBUG) only.
 *
 * Every lock has a level; a thread may block on a lock only when every
 * lock it holds has a lower level, or, for group locks (level
 * BGA_LOCKDEP_GROUP), the same level and a lower lock-table slot.  The
 * levels, outermost first (the order of struct bga_volume's comment):
 *
 *   BGA_LOCKDEP_STORE   the persistence lock (bga_store, persist.h)
 *   BGA_LOCKDEP_COMMIT  vol->commit_lock   (bga_commit)
 *   BGA_LOCKDEP_GROW    vol->grow_lock     (bga_grow, chunk installs)
 *   BGA_LOCKDEP_GROUP   group locks, ascending slot order
 *
 * The counter's fold lock and the persistence io_lock are leaves: taken
 * inside any of these, they never hold another lock, so they are not
 * tracked.
 *
 * A trylock cannot wait, so it is not checked, but a lock it takes is
 * recorded: blocking on a lower lock while holding it is still an
 * inversion.  A violation aborts with both locks named, so the next
 * inversion fails a test at once instead of hanging once in a million runs.
 * Release builds compile all of this to nothing.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	BGA_LOCKDEP_STORE = 0,
	BGA_LOCKDEP_COMMIT = 1,
	BGA_LOCKDEP_GROW = 2,
	BGA_LOCKDEP_GROUP = 3,
};

#ifdef BGA_DEBUG
/* Record that the calling thread takes (level, sub); with `check`, first
 * assert the order above against every lock it holds. */
void bga__lockdep_acquire(unsigned level, uint64_t sub, bool check);
/* Record that the calling thread dropped (level, sub). */
void bga__lockdep_release(unsigned level, uint64_t sub);
/* Locks the calling thread holds now (tests). */
unsigned bga__lockdep_held(void);
/* Whether the calling thread's record is that of a thread between library
 * calls, as a fresh thread's is: no lock recorded (depth 0) and none
 * counted past the record (overflow 0).  The entries above the depth are
 * dead and never read.  If not, why[0 .. n) names the innermost recorded
 * lock and the count (bga__thread_idle, thread.h). */
bool bga__lockdep_idle(char *why, size_t n);
/* Does the calling thread hold (level, sub)?  A thread past the record's
 * depth holding group locks counts as holding every group lock. */
bool bga__lockdep_holds(unsigned level, uint64_t sub);
/* Abort unless the calling thread holds (level, sub): the check behind
 * every function whose name says which lock its caller holds. */
#define bga__lockdep_assert_held(level, sub) bga__lockdep_assert_held_at(level, sub, __FILE__, __LINE__)
void bga__lockdep_assert_held_at(unsigned level, uint64_t sub, const char *file, int line);
#else
/* Macros, not empty inlines: the arguments (a lock-table slot lookup) must
 * not be evaluated either. */
#define bga__lockdep_acquire(level, sub, check) ((void)0)
#define bga__lockdep_release(level, sub) ((void)0)
#define bga__lockdep_assert_held(level, sub) ((void)0)
#endif

#endif
