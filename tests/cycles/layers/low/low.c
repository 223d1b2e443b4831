/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "helper.h"

int fixture_low(int n)
{
	return n > 0 ? fixture_helper(n - 1) : 0;
}
