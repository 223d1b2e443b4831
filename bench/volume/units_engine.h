/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_BENCH_UNITS_ENGINE_H
#define BGA_BENCH_UNITS_ENGINE_H

/* bga-units' storage-engine workload (units_engine.c): `what` is engine,
 * engine-ins or writers, argv the arguments after it.  Returns the exit
 * status. */
int engine_main(const char *what, int argc, char **argv);

#endif
