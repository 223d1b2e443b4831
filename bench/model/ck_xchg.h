/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_MODEL_CK_XCHG_H
#define BGA_MODEL_CK_XCHG_H

/*
 * Included first in the model's copy of lib/ (-include, CMakeLists.txt).
 * Concurrency Kit's fetch-and-store, built on the compiler's builtins
 * (CK_USE_CC_BUILTINS, which the instrumentation needs), is a load then a
 * compare-and-swap loop: two accesses and, on a line another core holds,
 * two moves.  The release build's is x86's one `xchg`: one locked access,
 * one move.  This one exchange stands for it, so a fas lock's acquisition
 * moves its word once, as it does in the release library.
 */
#define CK_F_PR_FAS_UINT
static inline unsigned int ck_pr_fas_uint(unsigned int *target, unsigned int v)
{
	return __atomic_exchange_n(target, v, __ATOMIC_ACQ_REL);
}

#endif
