/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "low.h"

int fixture_home_high(int n)
{
	return fixture_home_low(n) + 1;
}
