/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The lock-order checker (lib/base/lockdep.h): an inverted acquisition aborts at
 * once in a debug build, the documented order does not.  Release builds
 * have no checker, so these tests skip there.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "group.h"

#ifdef BGA_DEBUG
#define NEED_CHECKER() ((void)0)
#else
#define NEED_CHECKER() cr_skip_test("lockdep exists only in BGA_DEBUG builds")
#endif

static struct bga_volume *vol;

/* 8 chunks of 64-block groups, 16 lock slots; only chunk 0 touched. */
static void setup(void)
{
	struct bga_config cfg;
	bga_config_init(&cfg, (uint64_t)64 * BGA_CHUNK_GROUPS * 8);
	cfg.blocks_per_group = 64;
	cfg.lock_slots = 16;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	cr_assert_eq(bga__group_ensure(vol, 0), 0);
}

static void teardown(void)
{
	bga_destroy(vol);
}

TestSuite(lockdep, .init = setup, .fini = teardown);

/* The grow deadlock of issue 10: a chunk installed under a group lock. */
Test(lockdep, chunk_install_under_group_lock_aborts, .signal = SIGABRT)
{
	NEED_CHECKER();
	cr_assert_null(bga__chunk_get(vol, 3));
	bga__group_lock(vol, 0);
	bga__chunk_ensure(vol, 3); /* takes grow_lock inside a group lock */
	cr_assert_fail("an inverted acquisition went through");
}

Test(lockdep, descending_slots_abort, .signal = SIGABRT)
{
	NEED_CHECKER();
	bga__group_lock(vol, 5);
	bga__group_lock(vol, 3);
	cr_assert_fail("slot 3 taken after slot 5");
}

Test(lockdep, same_slot_twice_aborts, .signal = SIGABRT)
{
	NEED_CHECKER();
	bga__group_lock(vol, 2);
	bga__group_lock(vol, 2 + 16); /* another group of the same slot */
	cr_assert_fail("a slot taken twice");
}

Test(lockdep, grow_lock_under_commit_is_fine_but_not_the_reverse, .signal = SIGABRT)
{
	NEED_CHECKER();
	bga__lockdep_acquire(BGA_LOCKDEP_COMMIT, 0, true);
	bga__grow_lock(vol);
	bga__grow_unlock(vol);
	bga__lockdep_release(BGA_LOCKDEP_COMMIT, 0);
	cr_assert_eq(bga__lockdep_held(), 0);
	bga__grow_lock(vol);
	bga__lockdep_acquire(BGA_LOCKDEP_COMMIT, 0, true); /* aborts */
	cr_assert_fail("commit_lock taken inside grow_lock");
}

Test(lockdep, documented_order_passes)
{
	NEED_CHECKER();
	/* grow_lock, then ascending slots; a trylock may go downwards. */
	bga__grow_lock(vol);
	bga__group_lock(vol, 1);
	bga__group_lock(vol, 4);
	cr_assert(bga__group_trylock(vol, 2));
	cr_assert_eq(bga__lockdep_held(), 4);
	bga__group_unlock(vol, 2);
	bga__group_unlock(vol, 4);
	bga__group_unlock(vol, 1);
	bga__grow_unlock(vol);
	cr_assert_eq(bga__lockdep_held(), 0);
	/* Installing a chunk with no group lock held is the fixed path. */
	cr_assert_not_null(bga__chunk_ensure(vol, 5));
	cr_assert_eq(bga__lockdep_held(), 0);
}

Test(lockdep, blocking_below_a_trylocked_slot_aborts, .signal = SIGABRT)
{
	NEED_CHECKER();
	cr_assert(bga__group_trylock(vol, 7));
	bga__group_lock(vol, 6);
	cr_assert_fail("slot 6 waited for while slot 7 is held");
}

/* ---- what a violation says ---- */

/* Run fn in a child whose stderr is a pipe: it must die of SIGABRT, having
 * written a line that contains `want`. */
static void expect_abort_saying(void (*fn)(void), const char *want)
{
	int pfd[2];
	cr_assert_eq(pipe(pfd), 0);
	fflush(stderr);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(pfd[1], STDERR_FILENO);
		close(pfd[0]);
		fn();
		_exit(0); /* no abort: the parent sees exit status 0 */
	}
	close(pfd[1]);
	char buf[1024];
	size_t n = 0;
	ssize_t r;
	while (n < sizeof(buf) - 1 && (r = read(pfd[0], buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	close(pfd[0]);
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "the child did not abort (status %#x)", status);
	cr_assert_not_null(strstr(buf, want), "the report \"%s\" does not say \"%s\"", buf, want);
}

static void store_lock_under_a_group_lock(void)
{
	bga__group_lock(vol, 4);
	bga__lockdep_acquire(BGA_LOCKDEP_STORE, 0, true);
}

static void commit_lock_under_grow_lock(void)
{
	bga__grow_lock(vol);
	bga__lockdep_acquire(BGA_LOCKDEP_COMMIT, 0, true);
}

static void release_of_grow_lock_not_held(void)
{
	bga__lockdep_release(BGA_LOCKDEP_GROW, 0);
}

static void release_of_an_unknown_level(void)
{
	bga__lockdep_release(9, 1);
}

Test(lockdep, a_violation_names_both_locks)
{
	NEED_CHECKER();
	expect_abort_saying(store_lock_under_a_group_lock,
			    "waiting for the store lock 0 while holding group lock slot 4");
	expect_abort_saying(commit_lock_under_grow_lock, "waiting for commit_lock 0 while holding grow_lock 0");
}

Test(lockdep, releasing_a_lock_not_held_aborts)
{
	NEED_CHECKER();
	expect_abort_saying(release_of_grow_lock_not_held, "released grow_lock 0, which this thread does not hold");
	expect_abort_saying(release_of_an_unknown_level, "released ? 1, which this thread does not hold");
	cr_assert_eq(bga__lockdep_held(), 0, "the children's locks are not this thread's");
}

/* A release that is not the most recent acquisition takes that one lock
 * off the record, and only it: what is left still orders later locks. */
Test(lockdep, release_out_of_order_keeps_the_rest)
{
	NEED_CHECKER();
	bga__grow_lock(vol);
	bga__group_lock(vol, 3);
	bga__group_lock(vol, 7);
	bga__group_unlock(vol, 3); /* the middle of the record */
	cr_assert_eq(bga__lockdep_held(), 2);
	bga__group_unlock(vol, 7);
	cr_assert_eq(bga__lockdep_held(), 1);
	/* slot 2 is below 3 and 7: legal only if both are off the record */
	bga__group_lock(vol, 2);
	bga__group_unlock(vol, 2);
	bga__grow_unlock(vol);
	cr_assert_eq(bga__lockdep_held(), 0);
}

/* The same out-of-order release, seen to leave slot 7 recorded: a wait on
 * slot 5 while it is still held aborts. */
static void slot_5_after_releasing_3_of_3_and_7(void)
{
	bga__group_lock(vol, 3);
	bga__group_lock(vol, 7);
	bga__group_unlock(vol, 3);
	bga__group_lock(vol, 5);
}

Test(lockdep, release_out_of_order_keeps_the_later_lock)
{
	NEED_CHECKER();
	expect_abort_saying(slot_5_after_releasing_3_of_3_and_7,
			    "waiting for group lock slot 5 while holding group lock slot 7");
}
