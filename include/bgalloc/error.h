/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGALLOC_ERROR_H
#define BGALLOC_ERROR_H

/*
 * Error names: bga_strerror.
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
 * Name an error code returned by this library.  The name is the errno's
 * and a few words, as "ENOSPC: no space ...".  err may be negative or
 * positive.  An errno the library only
 * passes through (an io callback's, open's) is named as glibc names it
 * ("ENOENT: No such file or directory"); a number no one names is
 * "unknown error".
 *
 * Returns: a static string, never NULL, never freed or changed.
 * Errors: none.
 * Threads: any thread; takes no lock.
 */
BGA_EXTERN const char *bga_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif
