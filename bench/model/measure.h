/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_MODEL_MEASURE_H
#define BGA_MODEL_MEASURE_H

#include <stdio.h>

#include "workloads.h"

/*
 * The check's measure (bga-model-plain --measure A,B; measure.c says
 * what a slice is): `slices` slices of workload w on CPUs cpu_a and
 * cpu_b, each phase slice_s seconds, one JSON object a line on out.
 * 0, or 1 when a volume cannot be made.
 */
int model_measure(enum wl w, int cpu_a, int cpu_b, int slices, double slice_s, FILE *out);

#endif
