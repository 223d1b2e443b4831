/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGALLOC_VERSION_H
#define BGALLOC_VERSION_H

/*
 * The library's version: the header's and the library's.
 *
 * A part of <bgalloc.h>, which programs include; its opening comment gives
 * the conventions every contract here follows (errors, -EAGAIN and
 * -ENOSPC, threads).  This file compiles on its own.
 */

#include <bgalloc/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The version of this header: semantic versioning (CHANGELOG.md).  MINOR
 * grows with new interfaces, PATCH with fixes; while MAJOR is 0 a MINOR
 * bump may also change an interface, and CHANGELOG.md says how.  The
 * shared library's SONAME (libbgalloc.so.0) changes only when a program
 * built against an earlier release could no longer run against the new
 * one; a struct that grows does not change it (docs/ABI.md).
 * CMake reads its project version from these three lines.
 */
#define BGA_VERSION_MAJOR 0
#define BGA_VERSION_MINOR 3
#define BGA_VERSION_PATCH 0
#define BGA_VERSION_STRING "0.3.0"
/* One number for comparisons: 0x00MMmmpp, e.g. 0x000200 for 0.2.0. */
#define BGA_VERSION_HEX ((BGA_VERSION_MAJOR << 16) | (BGA_VERSION_MINOR << 8) | BGA_VERSION_PATCH)

/*
 * The version of the library the program runs against.  It may be newer
 * than BGA_VERSION_STRING, the header the program was built with.
 *
 * Returns: "MAJOR.MINOR.PATCH", a static string, never NULL.
 * Errors: none.
 * Threads: any thread; takes no lock.
 */
BGA_EXTERN const char *bga_version(void);

#ifdef __cplusplus
}
#endif

#endif
