/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A header that declares a function of another folder: the fixture that
 * proves scripts/callcycles.py --source fails on a header declaring what
 * its own folder does not define (fixture_home_high, high/high.c), and
 * passes over one it does (fixture_home_low, low.c; the function
 * pointer's name is no declaration). */
#ifndef FIXTURE_HOME_LOW_H
#define FIXTURE_HOME_LOW_H
int fixture_home_low(int n);
int fixture_home_high(int n);
extern int (*fixture_home_hook)(int n);
#endif
