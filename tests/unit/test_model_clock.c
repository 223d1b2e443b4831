/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The model's clock (bench/model/clock.c): each of clock.h's rules on a
 * made-up run of accesses, one instruction time each (ipa 1), a move of
 * 1000 instruction times, with the stall each rule gives worked out by
 * hand.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "clock.h"

#define X 1000.0

static void fresh(void)
{
	clk_reset();
	clk_config(1, X);
}

/* n accesses that move nothing */
static double quiet(int core, int n)
{
	double st = 0;
	for (int i = 0; i < n; i++)
		st += clk_access(core, CLK_LOAD, 0);
	return st;
}

Test(model_clock, nothing_moved_no_stall)
{
	fresh();
	cr_expect_eq(quiet(0, 3000), 0);
	cr_expect_eq(clk_access(0, CLK_STORE, 0), 0);
	cr_expect_eq(clk_access(0, CLK_LOCKED, 0), 0);
	cr_expect_eq(clk_now(0), 3002);
}

Test(model_clock, store_waits_in_the_buffer_until_a_locked_instruction)
{
	fresh();
	/* the store at t=1 is done at 1001: no wait at the store */
	cr_expect_eq(clk_access(0, CLK_STORE, 1), 0);
	cr_expect_eq(quiet(0, 99), 0);
	/* a locked instruction at t=101 (moving nothing) drains: 900 */
	cr_expect_eq(clk_access(0, CLK_LOCKED, 0), 900);
	/* a locked instruction whose line moves: one transfer of its own */
	cr_expect_eq(clk_access(0, CLK_LOCKED, 1), X);
	cr_expect_eq(clk_stall(0), 900 + X);
}

Test(model_clock, a_store_that_left_the_buffer_costs_no_drain)
{
	fresh();
	clk_access(0, CLK_STORE, 1);
	cr_expect_eq(quiet(0, 1200), 0);
	cr_expect_eq(clk_access(0, CLK_FENCE, 0), 0);
}

Test(model_clock, loads_in_one_reorder_buffer_overlap)
{
	fresh();
	/* misses at t=1 and t=2: the first holds retirement at 1 + ROB,
	 * until 1001; the second is done at 1002: one transfer, less the
	 * ROB the core ran ahead, plus 1 */
	clk_access(0, CLK_LOAD, 1);
	clk_access(0, CLK_LOAD, 1);
	quiet(0, 2000);
	cr_expect(fabs(clk_stall(0) - (X - CLK_ROB + 1)) < 1e-9, "stall %g", clk_stall(0));
}

Test(model_clock, loads_a_reorder_buffer_apart_do_not)
{
	fresh();
	clk_access(0, CLK_LOAD, 1);
	quiet(0, 600);
	clk_access(0, CLK_LOAD, 1);
	quiet(0, 2000);
	cr_expect(fabs(clk_stall(0) - 2 * (X - CLK_ROB)) < 1e-9, "stall %g", clk_stall(0));
}

Test(model_clock, a_locked_instruction_waits_for_earlier_loads)
{
	fresh();
	clk_access(0, CLK_LOAD, 1);		       /* t=1, done 1001 */
	cr_expect_eq(clk_access(0, CLK_LOCKED, 1), 999 + X); /* t=2: drain to 1001, then its own */
}

Test(model_clock, a_full_store_queue_waits_for_its_oldest)
{
	fresh();
	cr_expect_eq(clk_access(0, CLK_STORE, 1), 0); /* t=1, done 1001 */
	for (unsigned i = 1; i < CLK_STQ - 1; i++)
		cr_expect_eq(clk_access(0, CLK_STORE, 0), 0);
	/* the store queue's last entry: CLK_STQ stores behind the miss */
	cr_expect_eq(clk_access(0, CLK_STORE, 0), 0);
	cr_expect_eq(clk_access(0, CLK_STORE, 0), 1001 - (CLK_STQ + 1));
}

Test(model_clock, lock_waits_are_not_stalls_and_cores_are_apart)
{
	fresh();
	clk_wait_until(1, 5000);
	cr_expect_eq(clk_now(1), 5000);
	cr_expect_eq(clk_waited(1), 5000);
	cr_expect_eq(clk_stall(1), 0);
	cr_expect_eq(clk_now(0), 0);
	clk_sync(2);
	cr_expect_eq(clk_now(0), 5000);
}
