/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A harness's share of a libFuzzer run, and the ceiling libFuzzer's own
 * work leaves.  Linked around a harness whose entry point is renamed
 * (-DLLVMFuzzerTestOneInput=fz_share_harness): every input's call is
 * timed (CLOCK_MONOTONIC, so fuzz_mt's threads count in full), and at
 * exit one line goes to stderr:
 *
 *   share: N inputs in W s, harness H s (H/W %), libFuzzer L us/input,
 *          ceiling C execs/s
 *
 * W runs from the first input to the exit, so L = (W - H) / N is all
 * the rest of an input's cost: mutation, coverage collection and the
 * feature bookkeeping of entropic scheduling, corpus upkeep.  C = N / (W
 * - H) is what the run would reach with a harness that cost nothing and
 * hit the same coverage: the most any cheaper harness can reach on this
 * machine.  `scripts/fuzz.sh share HARNESS SECONDS` builds and runs it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

int fz_share_harness(const uint8_t *data, size_t size);

static double t_first, t_harness;
static unsigned long long inputs;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	double t0 = now();
	int rc;

	if (inputs++ == 0)
		t_first = t0;
	rc = fz_share_harness(data, size);
	t_harness += now() - t0;
	return rc;
}

__attribute__((destructor)) static void share_report(void)
{
	double wall = now() - t_first, rest = wall - t_harness;

	if (inputs == 0 || rest <= 0)
		return;
	fprintf(stderr,
		"share: %llu inputs in %.1f s, harness %.1f s (%.0f %%), libFuzzer %.0f us/input, ceiling %.0f execs/s\n",
		inputs, wall, t_harness, 100.0 * t_harness / wall, 1e6 * rest / (double)inputs,
		(double)inputs / rest);
}
