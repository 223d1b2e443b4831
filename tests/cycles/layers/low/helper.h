/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A deliberate call up a layer, from an inline function of a header (low
 * calls high): the fixture that proves scripts/callcycles.py --layers
 * reads inline headers and fails on an upward call. */
#ifndef FIXTURE_HELPER_H
#define FIXTURE_HELPER_H
int fixture_high(int n);

static inline int fixture_helper(int n)
{
	return fixture_high(n + 1);
}
#endif
