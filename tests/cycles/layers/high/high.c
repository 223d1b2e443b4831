/* SPDX-License-Identifier: LGPL-2.1-or-later */
int fixture_high(int n)
{
	return n;
}
