// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A modelled core's clock: clock.h's rules.  Called from rt.c under the
 * baton (one modelled core at a time), so the state is unlocked.
 */
#include "clock.h"

#include <string.h>

/* Unfinished misses a core keeps: above, the oldest is waited for (far
 * more than a reorder buffer of accesses: never reached in practice). */
#define CLK_Q 256u

struct clk {
	double t, stall, waited;
	uint64_t stores;
	unsigned ld0, nld, st0, nst;
	double ld_issue[CLK_Q], ld_done[CLK_Q];
	double st_done[CLK_Q];
	uint64_t st_seq[CLK_Q];
};

static struct clk clks[CLK_CORES];
static double clk_ipa = 1, clk_xfer;

void clk_config(double ipa, double xfer)
{
	clk_ipa = ipa > 0 ? ipa : 1;
	clk_xfer = xfer > 0 ? xfer : 0;
}

void clk_reset(void)
{
	memset(clks, 0, sizeof(clks));
}

/* Wait until `t`: a stall. */
static void stall_to(struct clk *k, double t)
{
	if (t > k->t) {
		k->stall += t - k->t;
		k->t = t;
	}
}

/* Load misses: the done ones leave; the oldest that a reorder buffer is
 * behind holds retirement (rule 2). */
static void retire_loads(struct clk *k)
{
	while (k->nld) {
		unsigned i = k->ld0;
		if (k->ld_done[i] > k->t && k->t - k->ld_issue[i] < CLK_ROB)
			return;
		stall_to(k, k->ld_done[i]);
		k->ld0 = (i + 1) % CLK_Q;
		k->nld--;
	}
}

/* Store misses: done ones leave the buffer; a full buffer behind the
 * oldest waits for it (rule 3). */
static void retire_stores(struct clk *k)
{
	while (k->nst) {
		unsigned i = k->st0;
		if (k->st_done[i] > k->t && k->stores - k->st_seq[i] < CLK_STQ)
			return;
		stall_to(k, k->st_done[i]);
		k->st0 = (i + 1) % CLK_Q;
		k->nst--;
	}
}

static void drain(struct clk *k)
{
	for (unsigned n = 0; n < k->nld; n++)
		stall_to(k, k->ld_done[(k->ld0 + n) % CLK_Q]);
	for (unsigned n = 0; n < k->nst; n++)
		stall_to(k, k->st_done[(k->st0 + n) % CLK_Q]);
	k->nld = k->nst = 0;
}

double clk_access(int core, enum clk_kind kind, int moved)
{
	struct clk *k = &clks[core];
	double before = k->stall;

	k->t += clk_ipa;
	retire_loads(k);
	switch (kind) {
	case CLK_LOAD:
		if (moved) {
			if (k->nld == CLK_Q) {
				stall_to(k, k->ld_done[k->ld0]);
				k->ld0 = (k->ld0 + 1) % CLK_Q;
				k->nld--;
			}
			unsigned i = (k->ld0 + k->nld++) % CLK_Q;
			k->ld_issue[i] = k->t;
			k->ld_done[i] = k->t + clk_xfer;
		}
		break;
	case CLK_STORE:
		k->stores++;
		if (moved) {
			if (k->nst == CLK_Q) {
				stall_to(k, k->st_done[k->st0]);
				k->st0 = (k->st0 + 1) % CLK_Q;
				k->nst--;
			}
			unsigned i = (k->st0 + k->nst++) % CLK_Q;
			k->st_seq[i] = k->stores;
			k->st_done[i] = k->t + clk_xfer;
		}
		retire_stores(k);
		break;
	case CLK_LOCKED:
		drain(k);
		if (moved)
			stall_to(k, k->t + clk_xfer);
		break;
	case CLK_FENCE:
		drain(k);
		break;
	}
	return k->stall - before;
}

void clk_wait_until(int core, double t)
{
	struct clk *k = &clks[core];

	if (t > k->t) {
		k->waited += t - k->t;
		k->t = t;
	}
}

void clk_sync(int n)
{
	double t = 0;

	for (int i = 0; i < n; i++)
		t = clks[i].t > t ? clks[i].t : t;
	for (int i = 0; i < n; i++)
		clks[i].t = t;
}

double clk_now(int core)
{
	return clks[core].t;
}

double clk_stall(int core)
{
	return clks[core].stall;
}

double clk_waited(int core)
{
	return clks[core].waited;
}
