/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_LOCKDEP_H
#define BGA_LOCKDEP_H

/*
 * The lock order of the library, written here once, where debug builds
 * (BGA_DEBUG) check it; every other comment points here.  Outermost first:
 *
 *   BGA_LOCKDEP_STORE   the store lock (bga_persist.lock: bga_store and
 *                       lazy loads; persist.h)
 *   BGA_LOCKDEP_COMMIT  vol->commit_lock (bga_commit)
 *   BGA_LOCKDEP_GROW    vol->grow_lock (bga_grow, and chunk installs:
 *                       bga__chunk_ensure)
 *   BGA_LOCKDEP_GROUP   group locks (a group's lock-table slot); several
 *                       held only in ascending slot order (a range across
 *                       groups, a claim, a store); allocation holds one at
 *                       a time
 *   leaves              the counter's fold lock (counter_impl.h) and the
 *                       persistence io_lock, taken around every io
 *                       callback: they never hold another lock, so they
 *                       are not tracked
 *
 * What follows from it: a chunk is installed before any group lock is
 * taken, so a lookup under a group lock (bga__group_lookup) never
 * allocates and never waits for a grow; no group lock is held while
 * calling back into the user (the one callback made with a library lock
 * held is a lazy bitmap read, under grow_lock and io_lock; <bgalloc.h>
 * says so).  Which path takes which lock: lib/README.md, "Locking rules".
 *
 * A small lockdep checks it, in debug builds only.  Every lock has a
 * level; a thread may block on a lock only when every lock it holds has a
 * lower level, or, for group locks (BGA_LOCKDEP_GROUP), the same level and
 * a lower lock-table slot.
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
