/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_FAULTWRAP_H
#define BGA_FAULTWRAP_H

/*
 * The wrapped C allocator of the fault tests (test_faults.c,
 * test_faults_persist.c), and the few fixtures both of them use.
 *
 * faultwrap.c defines __wrap_malloc, __wrap_calloc, ... and only an
 * executable linked with -Wl,--wrap=malloc,... (bga_fault_test in
 * tests/CMakeLists.txt) calls them: there the calls of the static library
 * and of the test's own files go through the wrappers; Criterion's and the
 * shared libraries' do not.  sched_getcpu is wrapped too, so that the
 * CPU-id source's last resort (cpu.c's per-thread hash) can be reached,
 * and getrandom, so that a store's fallback volume id can be.
 *
 * "An allocator call" below is a call of malloc, calloc, realloc,
 * aligned_alloc or posix_memalign; free is never one.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <criterion/criterion.h>

#include <bgalloc.h>

#include "testutil.h"

/* ---- failing the k-th allocator call ---- */

/* Arms the fault: counting from this call, in every thread together, the
 * k-th allocator call fails (malloc, calloc, realloc and aligned_alloc
 * return NULL, posix_memalign returns ENOMEM) and every other call is
 * served.  Only that one call fails, however many follow it.  k = 0
 * disarms: no call fails or is counted. */
void fault_arm(long k);

/* Disarms the fault and returns the allocator calls made since
 * fault_arm, the failed one included.  Fewer than k means that the run
 * ended before its k-th call: nothing failed, and a loop over k is done. */
long fault_disarm(void);

/* ---- leak tracking ---- */

/* Starts counting live blocks from 0: each block an allocator call hands
 * out (realloc only when its pointer was NULL) adds one, each free of a
 * non-NULL pointer takes one. */
void fault_track(void);

/* Stops counting, and asserts (failing the Criterion test) that the count
 * is 0: every block handed out since fault_track was freed.  what and k
 * name the run in the failure message. */
void fault_untrack(const char *what, long k);

/* ---- running code inside a library call ---- */

/* While fault_calloc_hook is set, the next calloc of n * m ==
 * fault_calloc_hook_size bytes first sets fault_calloc_hook to NULL, then
 * runs the hook (once), then allocates: a way to run code between two
 * steps of a library function.  Not thread-safe: set both before the
 * call, from the thread that makes it. */
extern size_t fault_calloc_hook_size;
extern void (*fault_calloc_hook)(void);

/* ---- sched_getcpu and getrandom ---- */

/* While set in a thread, sched_getcpu fails there (-1, errno ENOSYS);
 * other threads are not affected.  Starts false in every thread. */
extern __thread bool fault_getcpu_fails;

/* What getrandom does: 0, the real call; 1, fails (-1, errno EAGAIN);
 * 2, fills the buffer with zeros and returns its length. */
extern int fault_getrandom_mode;

/* ---- fixtures both fault tests use ---- */

/* Groups of 64 blocks; a chunk (TEST_CHUNK_GROUPS groups) of them. */
#define BPG 64
#define CHUNK_BLOCKS (TEST_CHUNK_GROUPS * BPG)

/* Allocates exactly start..start+len-1 of vol; the test fails if that
 * cannot be done. */
static inline void alloc_exact(struct bga_volume *vol, uint64_t start, uint64_t len)
{
	struct bga_request req = {.goal = start, .min_len = len, .max_len = len, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0, "setup alloc %llu+%llu", (unsigned long long)start,
		     (unsigned long long)len);
}

#endif
