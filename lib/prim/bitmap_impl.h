/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_BITMAP_IMPL_H
#define BGA_BITMAP_IMPL_H

/*
 * Internal: choose which bulk-scan implementation <bgalloc/bitmap.h> uses,
 * so tests can check every one and benchmarks can compare them.  Not for
 * the allocator: it uses whatever was chosen at run time.
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

#endif
