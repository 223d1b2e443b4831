/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The other half of the deliberate cycle (see ping.c). */
int fixture_ping(int n);

int fixture_pong(int n)
{
	return n > 0 ? fixture_ping(n - 1) : 1;
}
