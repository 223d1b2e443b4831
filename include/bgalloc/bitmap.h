/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGALLOC_BITMAP_H
#define BGALLOC_BITMAP_H

/*
 * Bit search over arrays of 64-bit words.  Bit i lives in word i / 64 at
 * position i % 64 (least significant bit first), the layout ext2 uses on a
 * little-endian machine.  A set bit means "in use", a clear bit "free".
 *
 * These functions are pure: they take no locks and allocate nothing.  The
 * caller serialises writers against readers of the same words.  Bits at or
 * past `nbits` in the last word are never read as part of the map, whatever
 * their value.
 *
 * Positions are returned as uint64_t; "not found" is reported as `nbits`
 * (or `to` for the ranged functions), never as a negative value.
 *
 * Threads: any thread; no lock, no allocation.  The caller serialises
 * writers of the same words against their readers.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bgalloc/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Number of 64-bit words needed to hold `nbits` bits. */
#define BGA_BITMAP_WORDS(nbits) (((nbits) + 63) / 64)

/*
 * Find the first clear bit at or after from.  When the word holding from
 * answers, no indirect call is made; otherwise full words are skipped in
 * bulk (SIMD where the CPU supports it, chosen at run time).
 *
 * Returns: its position; nbits if there is none or from >= nbits.
 * Errors: none.
 */
BGA_EXTERN uint64_t bga_bitmap_next_zero(const uint64_t *map, uint64_t nbits, uint64_t from);

/*
 * Find the first set bit at or after from.
 *
 * Returns: its position; nbits if there is none or from >= nbits.
 * Errors: none.
 */
BGA_EXTERN uint64_t bga_bitmap_next_set(const uint64_t *map, uint64_t nbits, uint64_t from);

/*
 * Find the first run of at least min clear bits starting at or after from.
 * The run is extended forward up to max bits (max >= min >= 1), and its
 * length (min <= *len <= max) stored in *len.
 *
 * Returns: the run's start; nbits (and *len untouched) when no such run
 *   exists, or when min == 0, min > max or from >= nbits.
 * Errors: none.
 */
BGA_EXTERN uint64_t bga_bitmap_find_zero_run(const uint64_t *map, uint64_t nbits, uint64_t from,
                                             uint64_t min, uint64_t max, uint64_t *len);

/*
 * Measure the longest run of clear bits in [0, nbits).
 *
 * Returns: its length; 0 when every bit is set.
 * Errors: none.
 */
BGA_EXTERN uint64_t bga_bitmap_longest_zero_run(const uint64_t *map, uint64_t nbits);

/*
 * Measure the run of clear bits that contains pos, extended both ways
 * within [0, nbits).  Its start goes to *start when start is not NULL.
 *
 * Returns: its length; 0 when bit pos is set or pos >= nbits (*start is
 *   then left untouched).
 * Errors: none.
 */
BGA_EXTERN uint64_t bga_bitmap_zero_run_at(const uint64_t *map, uint64_t nbits, uint64_t pos,
                                           uint64_t *start);

/*
 * The range functions below take no `nbits`: the caller keeps the range
 * inside the map (start + len must not overflow).  They read and write only
 * the bits of the range, so garbage past nbits is left as it is.
 */

/*
 * Count the set bits in [from, to).
 *
 * Returns: the count; 0 when from >= to.
 * Errors: none.
 */
BGA_EXTERN uint64_t bga_bitmap_popcount(const uint64_t *map, uint64_t from, uint64_t to);

/*
 * Test whether every bit in [start, start + len) is clear.
 *
 * Returns: true when every bit is clear (also for len 0).
 * Errors: none.
 */
BGA_EXTERN bool bga_bitmap_range_is_clear(const uint64_t *map, uint64_t start, uint64_t len);

/*
 * Test whether every bit in [start, start + len) is set.
 *
 * Returns: true when every bit is set (also for len 0).
 * Errors: none.
 */
BGA_EXTERN bool bga_bitmap_range_is_set(const uint64_t *map, uint64_t start, uint64_t len);

/*
 * Set every bit in [start, start + len).  Bits already set stay set.
 *
 * Returns: how many bits flipped from 0 to 1; the caller compares it with
 *   len to catch a double allocation.
 * Errors: none.
 */
BGA_EXTERN uint64_t bga_bitmap_set_range(uint64_t *map, uint64_t start, uint64_t len);

/*
 * Clear every bit in [start, start + len).
 *
 * Returns: how many bits flipped from 1 to 0; fewer than len means part
 *   of the range was already free (a double free).
 * Errors: none.
 */
BGA_EXTERN uint64_t bga_bitmap_clear_range(uint64_t *map, uint64_t start, uint64_t len);

/*
 * Name the scan implementation chosen at run time for this CPU.  It is
 * chosen on first use: "avx2" where the CPU has AVX2, else "scalar".  For
 * benchmarks and reports.
 *
 * Returns: a static string, never NULL.
 * Errors: none.
 */
BGA_EXTERN const char *bga_bitmap_impl(void);

#ifdef __cplusplus
}
#endif

#endif
