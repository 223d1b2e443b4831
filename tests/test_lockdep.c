/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The lock-order checker (lib/lockdep.h): an inverted acquisition aborts at
 * once in a debug build, the documented order does not.  Release builds
 * have no checker, so these tests skip there.
 */
#include <signal.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "internal.h"

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
