/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_MODEL_CLOCK_H
#define BGA_MODEL_CLOCK_H

/*
 * A modelled core's clock (clock.c), in instruction times: what a core
 * waits for of the lines that move, by x86-TSO's rules on an out-of-order
 * core, instead of a fitted overlap.  rt.c calls it on every access of a
 * modelled core with whether the access moved a line (rt.h's rule).
 *
 * Two parameters, set before a count (clk_config): `ipa`, the instructions
 * of the release library per instrumented access (callgrind's count over
 * the runtime's, one core), and `xfer`, one line transfer in instruction
 * times (x over c: the transfer time over one core's CPU time per
 * instruction, both measured here; model.sh and report.py).  Two
 * constants, the published figures of this machine's core (AMD family
 * 1Ah, Zen 5): a reorder buffer of CLK_ROB instructions and a store queue
 * of CLK_STQ stores.
 *
 * The rules, each with its reason:
 *  1. Every access advances the clock by ipa: the work between accesses.
 *  2. A load that moves a line (a read of a line another core wrote last)
 *     issues its miss at once; its data comes one transfer later.  The
 *     core runs on past it but retires in order, so it stops when the
 *     oldest unfinished load miss is CLK_ROB instructions behind, until
 *     that miss is done.  Load misses within a reorder buffer of each
 *     other therefore overlap.  Data dependences are not seen (a load whose
 *     address is another miss's data cannot issue before it): this is the
 *     most overlap the hardware allows, a bound from below on the waits.
 *  3. A plain store that moves a line (a write of a line other cores hold)
 *     retires into the store buffer (x86-TSO): the core does not wait.
 *     Its ownership request is issued at once and done one transfer
 *     later; stores leave the buffer in order, so the core waits only
 *     when CLK_STQ stores queue behind an unfinished one, or at the next
 *     drain (4, 5).  An atomic store that is not sequentially consistent
 *     is a plain `mov` on x86: the same.
 *  4. A locked instruction (atomic read-modify-write, compare-exchange,
 *     a sequentially consistent store: `xchg`) first drains: it waits for
 *     every earlier load and store.  Then, if its line moves, one transfer
 *     of its own, which nothing overlaps: later loads wait for it.  (AMD64
 *     Architecture Programmer's Manual vol. 2, 7.4.2: all previous loads
 *     and stores complete before a locked instruction's memory access is
 *     issued, and its loads and stores complete before a later one's.)
 *     A lock hand-off thus costs the lock word's transfer plus the waits
 *     for the data the holder protects (2, 3), no more.
 *  5. A sequentially consistent fence (`mfence`) drains as 4, no transfer.
 *  6. An access that moves nothing costs only its work (1): a line read by
 *     both cores and written by neither stays shared in both, no move.
 * Not modelled: adjacent-line prefetch (on this core a history-based
 * up/down prefetcher, not a fixed pair rule), miss-buffer limits (a core
 * has a few misses in flight, fewer than its L1 miss buffers).
 *
 * A core's clock also runs while it waits for a lock another modelled core
 * holds at that modelled instant (clk_wait_until): that time is the lock's
 * queue, kept apart from the stalls (report.py's queueing model has it).
 */
#include <stdint.h>

#define CLK_CORES 64   /* cores with a clock: rt.h's RT_MAX_CORES at most */
#define CLK_ROB 448.0 /* Zen 5 reorder buffer entries */
#define CLK_STQ 104u  /* Zen 5 store queue entries */

enum clk_kind { CLK_LOAD, CLK_STORE, CLK_LOCKED, CLK_FENCE };

void clk_config(double ipa, double xfer);
void clk_reset(void);
/* One access of `core`; `moved`: it moved a line.  Returns the stall it
 * caused (instruction times). */
double clk_access(int core, enum clk_kind kind, int moved);
/* The core waits until `t` (a lock held elsewhere until then). */
void clk_wait_until(int core, double t);
double clk_now(int core);
/* Cores 0 .. n-1 start together: each clock to the latest of them (the
 * measure's barrier after its threads' setup). */
void clk_sync(int n);
/* Stall and lock waits of `core` so far, instruction times. */
double clk_stall(int core);
double clk_waited(int core);

#endif
