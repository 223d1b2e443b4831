/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_BITMAP_IMPL_H
#define BGA_BITMAP_IMPL_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Internal to the library: the bulk-scan choice (tests and benchmarks)
 * and the allocator's uncounted range write.
 */

/*
 * Switch every bga_bitmap_* function to implementation `name` ("scalar" or
 * "avx2"), or back to the run-time choice when name is NULL.  Takes effect
 * for calls that start after it returns; calls in flight finish with the
 * old one (both give the same answers).  Returns 0, -ENOTSUP when this CPU
 * cannot run `name`, or -EINVAL for an unknown name; the choice is then
 * unchanged.
 */
int bga__bitmap_use_impl(const char *name);

/*
 * For the allocator: set (set true) or clear every bit of [start, start +
 * len), as bga_bitmap_set_range / bga_bitmap_clear_range do, without
 * counting the bits that flip.  For a caller that knows the range's state
 * (and asserts it in debug builds).  Uses no bulk-scan implementation.
 */
void bga__bitmap_write_range(uint64_t *map, uint64_t start, uint64_t len, bool set);

#endif
