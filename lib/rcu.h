/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_RCU_H
#define BGA_RCU_H

/*
 * liburcu's bullet-proof flavour: readers need no registration, which the
 * public API promises.  _LGPL_SOURCE inlines the read-side fast path (we
 * are LGPL too): with it, a read lock/unlock pair is a few instructions
 * instead of two calls into liburcu-bp.so that each resolve its
 * thread-local reader through __tls_get_addr (measured with callgrind on
 * single-thread churn: ~90 instructions per operation saved).
 */
#define _LGPL_SOURCE
#include <urcu-bp.h>

#endif
