/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGALLOC_EXPORT_H
#define BGALLOC_EXPORT_H

/*
 * The library is built with -fvisibility=hidden; only symbols marked
 * BGA_EXTERN are exported from the shared object.
 */
#if defined(__GNUC__) || defined(__clang__)
#define BGA_EXTERN __attribute__((visibility("default")))
#else
#define BGA_EXTERN
#endif

#endif
