/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_RCU_H
#define BGA_RCU_H

/*
 * liburcu's bullet-proof flavour: readers need no registration, which the
 * public API promises.  _LGPL_SOURCE inlines the read-side fast path (we
 * are LGPL too): with it, a read lock/unlock pair is a few instructions
 * instead of two calls into liburcu-bp.so that each resolve its
 * thread-local reader through __tls_get_addr
 * (docs/HISTORY.md#what-the-hot-path-inlines-and-skips).
 */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define BGA_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BGA_SANITIZED 1
#endif
/*
 * Not under sanitizers: liburcu 0.13 keeps its readers at a 32-byte offset
 * in an arena while the type asks for 128-byte alignment, which UBSan
 * reports from the inlined code (the library's own calls are not
 * instrumented).
 */
#ifndef BGA_SANITIZED
#define _LGPL_SOURCE
#endif
#include <urcu-bp.h>

/*
 * Publication of RCU-protected pointers: C11 acquire/release rather than
 * liburcu's rcu_dereference/rcu_assign_pointer.  On x86-64 both compile to
 * plain moves; these ones ThreadSanitizer can see.  Grace periods (and so
 * reclamation) stay liburcu's: urcu_bp_read_lock/unlock and
 * urcu_bp_synchronize_rcu.
 */
#define bga_rcu_load(p) __atomic_load_n(&(p), __ATOMIC_ACQUIRE)
#define bga_rcu_publish(p, v) __atomic_store_n(&(p), (v), __ATOMIC_RELEASE)

#endif
