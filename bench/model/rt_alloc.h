/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_MODEL_RT_ALLOC_H
#define BGA_MODEL_RT_ALLOC_H

/*
 * The model's heap blocks by allocation site (rt_alloc.c): its wrappers
 * of malloc and its kin note every live block of the program with the
 * return address that asked for it, for rt.c's report, which names a
 * shared heap line by the code that allocated it.
 */
#include <stddef.h>
#include <stdint.h>

/* The live heap block holding a: 1 with its base, size and allocation
 * site, or 0. */
int rt_heap_block(uintptr_t a, uintptr_t *base, size_t *size, uintptr_t *site);

#endif
