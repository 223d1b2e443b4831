/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A deliberate call cycle (ping.c <-> pong.c) that scripts/callcycles.py
 * must report: the fixture that proves the check can fail. */
int fixture_pong(int n);

int fixture_ping(int n)
{
	return n > 0 ? fixture_pong(n - 1) : 0;
}
