/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Placement promises that tests/mutants/ plants bugs against: where a
 * goal-less request looks (<bgalloc/alloc.h>, "Where a request looks",
 * and bga_alloc's BGA_NO_GOAL), when a CPU's locality window is booked
 * (lib/core/window.h), and the group descriptor's line of its own
 * (lib/core/group.h, struct bga_group).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "group.h"
#include "testutil.h"
#include "types.h"
#include "pin.h"

static struct bga_volume *make(uint64_t nblocks, uint32_t bpg, uint32_t lock_slots)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	bga_config_init(&cfg, nblocks);
	cfg.blocks_per_group = bpg;
	if (lock_slots)
		cfg.lock_slots = lock_slots;
	cr_assert_eq(bga_create(&cfg, &vol), 0);
	return vol;
}

static uint64_t alloc_nogoal(struct bga_volume *vol, uint32_t len)
{
	struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = len, .max_len = len};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(e.len, len);
	return e.start;
}

/*
 * BGA_NO_GOAL starts at the first block of the CPU's home group: a block
 * freed below the last extent is the next goal-less request's, as first
 * fit would take it; the next request does not go on from where the last
 * one ended (next fit).
 */
Test(home, goalless_requests_refill_the_low_end_first)
{
	cpu_set_t old;
	cr_assert_eq(test_pin_one_cpu(&old), 0);
	const uint32_t bpg = 1024;
	struct bga_volume *vol = make(8 * bpg, bpg, 0);
	uint64_t first = alloc_nogoal(vol, 4);
	cr_assert_eq(first % bpg, 0, "the home group's first block, not %llu", (unsigned long long)first);
	uint64_t second = alloc_nogoal(vol, 4);
	cr_assert_eq(second, first + 4, "packed after the first extent");
	uint64_t third = alloc_nogoal(vol, 4);
	cr_assert_eq(third, first + 8);
	cr_assert_eq(bga_free(vol, first, 4), 0);
	cr_assert_eq(alloc_nogoal(vol, 2), first, "the hole at the low end is filled first");
	cr_assert_eq(alloc_nogoal(vol, 2), first + 2);
	cr_assert_eq(alloc_nogoal(vol, 4), first + 12, "then after the last extent");
	cr_assert_eq(bga_check(vol, NULL), 0);
	bga_destroy(vol);
	cr_assert_eq(test_unpin(&old), 0);
}

/*
 * The home moves to another group only when its lock is found held: a
 * home group that merely ran out of room keeps the home, so the first
 * block freed in it is the next goal-less request's, not the group the
 * walk went on to.
 */
Test(home, stays_in_a_full_group_without_contention)
{
	cpu_set_t old;
	cr_assert_eq(test_pin_one_cpu(&old), 0);
	const uint32_t bpg = 512;
	struct bga_volume *vol = make(8 * bpg, bpg, 0);
	uint64_t home = alloc_nogoal(vol, 8);
	cr_assert_eq(home % bpg, 0);
	for (uint32_t i = 8; i < bpg; i += 8)
		cr_assert_eq(alloc_nogoal(vol, 8), home + i, "the home group fills in order");
	uint64_t beyond = alloc_nogoal(vol, 8);
	cr_assert(beyond < home || beyond >= home + bpg, "a full home group: the walk goes on");
	cr_assert_eq(alloc_nogoal(vol, 8), beyond + 8, "and packs there meanwhile");
	cr_assert_eq(bga_free(vol, home + 64, 8), 0);
	cr_assert_eq(alloc_nogoal(vol, 8), home + 64, "room again in the home group: the home never moved");
	struct bga_stats st;
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_assert_eq(st.rsv_window_blocks, 0, "no contention, no locality window");
	cr_assert_eq(bga_check(vol, NULL), 0);
	bga_destroy(vol);
	cr_assert_eq(test_unpin(&old), 0);
}

/*
 * A CPU's locality window is booked only while its home is contended:
 * small goal-less requests leave no window behind until a walk finds the
 * home group's lock held; after that, the next ones come from a window
 * booked for the CPU (bga_stats counts its unused blocks).  "Held" is
 * the home group's lock slot taken by the test itself, as
 * steering::backs_off_from_a_group_that_stays_busy does.
 */
Test(locality, window_booked_only_after_contention)
{
	cpu_set_t old;
	cr_assert_eq(test_pin_one_cpu(&old), 0);
	const uint32_t bpg = 4096;
	struct bga_volume *vol = make(64 * bpg, bpg, 64); /* each group alone in its lock slot */
	struct bga_stats st;
	uint64_t home = alloc_nogoal(vol, 1);
	cr_assert_eq(home % bpg, 0);
	for (int i = 0; i < 32; i++)
		alloc_nogoal(vol, 1 + i % 4);
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_assert_eq(st.rsv_window_blocks, 0, "no contention, yet a locality window of %llu blocks",
		     (unsigned long long)st.rsv_window_blocks);

	uint64_t g = home / bpg;
	bga_locktab_lock(vol->locks, g);
	uint64_t away = alloc_nogoal(vol, 1);
	bga_locktab_unlock(vol->locks, g);
	cr_assert(away / bpg != g, "a busy home group is passed over");
	for (int i = 0; i < 4; i++)
		alloc_nogoal(vol, 2);
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_assert_gt(st.rsv_window_blocks, 0, "the home was found busy, yet no locality window was booked");
	cr_assert_eq(bga_check(vol, NULL), 0);
	bga_destroy(vol);
	cr_assert_eq(test_unpin(&old), 0);
}

/*
 * Every group descriptor sits on a 64-byte line of its own: line-aligned
 * and no two on one line, in every chunk, the ones a grow adds too.
 */
static void assert_own_lines(struct bga_volume *vol, uint64_t ngroups)
{
	uintptr_t prev = 0;
	for (uint64_t g = 0; g < ngroups; g++) {
		cr_assert_eq(bga__group_ensure(vol, g), 0);
		uintptr_t at = (uintptr_t)bga__group_lookup(vol, g);
		cr_assert_eq(at % 64, 0, "group %llu's descriptor at %#lx is not line-aligned", (unsigned long long)g,
			     (unsigned long)at);
		if (g % BGA_CHUNK_GROUPS)
			cr_assert_geq(at - prev, 64, "groups %llu and %llu share a line", (unsigned long long)g - 1,
				      (unsigned long long)g);
		prev = at;
	}
}

Test(descriptor, each_group_on_a_line_of_its_own)
{
	cr_assert_eq(sizeof(struct bga_group) % 64, 0);
	const uint32_t bpg = 64;
	uint64_t ngroups = BGA_CHUNK_GROUPS + 5;
	struct bga_volume *vol = make(ngroups * bpg, bpg, 0);
	assert_own_lines(vol, ngroups);
	cr_assert_eq(bga_grow(vol, (ngroups + BGA_CHUNK_GROUPS) * bpg), 0);
	assert_own_lines(vol, ngroups + BGA_CHUNK_GROUPS);
	cr_assert_eq(bga_check(vol, NULL), 0);
	bga_destroy(vol);
}

/*
 * The other half of the home's rule (lib/alloc/steer.h,
 * bga__note_result): found held, the home moves to the start of the group
 * the walk went to, so CPUs that meet drift apart; a goal-less request
 * after the home's lock is free again starts there, not back in the old
 * home.  Requests of more than 16 blocks, which no locality window
 * serves, show the walk alone.
 */
Test(home, moves_to_where_the_walk_went_when_found_held)
{
	cpu_set_t old;
	cr_assert_eq(test_pin_one_cpu(&old), 0);
	const uint32_t bpg = 4096;
	struct bga_volume *vol = make(64 * bpg, bpg, 64);
	uint64_t home = alloc_nogoal(vol, 32);
	cr_assert_eq(home % bpg, 0);
	uint64_t g = home / bpg;
	bga_locktab_lock(vol->locks, g);
	uint64_t away = alloc_nogoal(vol, 32);
	bga_locktab_unlock(vol->locks, g);
	cr_assert(away / bpg != g, "a busy home group is passed over");
	cr_assert_eq(away % bpg, 0, "the walk takes the next group from its low end");
	uint64_t next = alloc_nogoal(vol, 32);
	cr_assert_eq(next, away + 32, "the home moved with the walk: %llu, not %llu", (unsigned long long)next,
		     (unsigned long long)(away + 32));
	cr_assert_eq(bga_check(vol, NULL), 0);
	bga_destroy(vol);
	cr_assert_eq(test_unpin(&old), 0);
}

/*
 * Where a request looks, 1 (<bgalloc/alloc.h>): no call but a small
 * goal-less bga_alloc takes from a CPU's locality window.  The window is
 * booked first (the home found held, then a small goal-less request);
 * a goal-less bga_alloc_vec of small pieces then leaves it as it was, as
 * bga_stats counts its blocks, and takes none of them.
 * vec::goalless_never_takes_the_locality_window sees it only when its
 * home happens to be contended.
 */
Test(locality, alloc_vec_never_takes_the_window)
{
	cpu_set_t old;
	cr_assert_eq(test_pin_one_cpu(&old), 0);
	const uint32_t bpg = 4096;
	struct bga_volume *vol = make(64 * bpg, bpg, 64);
	struct bga_stats st;
	uint64_t g = alloc_nogoal(vol, 1) / bpg;
	bga_locktab_lock(vol->locks, g);
	alloc_nogoal(vol, 1);
	bga_locktab_unlock(vol->locks, g);
	uint64_t in_window = alloc_nogoal(vol, 1);
	cr_assert_eq(bga_stats(vol, &st), 0);
	uint64_t held = st.rsv_window_blocks;
	cr_assert_gt(held, 0, "no locality window to test against");
	struct bga_request r = {.goal = BGA_NO_GOAL, .min_len = 4, .max_len = 16};
	struct bga_extent out[16];
	size_t n = 0;
	cr_assert_eq(bga_alloc_vec(vol, &r, 12, out, 16, &n), 0);
	cr_assert_eq(bga_stats(vol, &st), 0);
	cr_assert_eq(st.rsv_window_blocks, held, "bga_alloc_vec changed the locality window: %llu blocks, then %llu",
		     (unsigned long long)held, (unsigned long long)st.rsv_window_blocks);
	for (size_t i = 0; i < n; i++)
		cr_assert(out[i].start + out[i].len <= in_window + 1 || out[i].start > in_window + held,
			  "[%llu,+%llu) lies in the window after block %llu", (unsigned long long)out[i].start,
			  (unsigned long long)out[i].len, (unsigned long long)in_window);
	cr_assert_eq(bga_check(vol, NULL), 0);
	bga_destroy(vol);
	cr_assert_eq(test_unpin(&old), 0);
}
