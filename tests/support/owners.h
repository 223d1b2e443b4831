/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_TEST_OWNERS_H
#define BGA_TEST_OWNERS_H

/*
 * Who holds each block, for tests where threads allocate at once: one byte
 * per block, 0 free, else the holding thread's id + 1, changed atomically,
 * so a block handed out twice, or freed by a thread that does not hold
 * it, shows at once.
 */

#include <stdbool.h>
#include <stdint.h>

#include <bgalloc.h>

#define OWNERS_NONE UINT64_MAX

/* Mark e's blocks as thread id's.  OWNERS_NONE, or the first block that
 * another thread held already (the others are marked anyway). */
static inline uint64_t owners_take(uint8_t *owner, struct bga_extent e, int id)
{
	uint64_t bad = OWNERS_NONE;
	for (uint64_t b = e.start; b < e.start + e.len; b++) {
		uint8_t zero = 0;
		if (!__atomic_compare_exchange_n(&owner[b], &zero, (uint8_t)(id + 1), false, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED) && bad == OWNERS_NONE)
			bad = b;
	}
	return bad;
}

/* Mark e's blocks free.  OWNERS_NONE, or the first block that thread id
 * did not hold. */
static inline uint64_t owners_give(uint8_t *owner, struct bga_extent e, int id)
{
	uint64_t bad = OWNERS_NONE;
	for (uint64_t b = e.start; b < e.start + e.len; b++)
		if (__atomic_exchange_n(&owner[b], 0, __ATOMIC_ACQ_REL) != (uint8_t)(id + 1) && bad == OWNERS_NONE)
			bad = b;
	return bad;
}

/* The first block of [start, start + len) that a thread holds, or
 * OWNERS_NONE (a trim's discard may only see blocks nobody holds). */
static inline uint64_t owners_first_held(const uint8_t *owner, uint64_t start, uint64_t len)
{
	for (uint64_t b = start; b < start + len; b++)
		if (__atomic_load_n(&owner[b], __ATOMIC_ACQUIRE) != 0)
			return b;
	return OWNERS_NONE;
}

/*
 * The map as the concurrent tests check it: who holds each of cap blocks,
 * and where a wrong block goes, fail(ctx, what, block), as the test counts
 * its failures.  owners_discard is bga_trim's discard callback, its ctx
 * the struct owners.
 */
struct owners {
	uint8_t *map;
	uint64_t cap; /* blocks the map covers */
	void (*fail)(void *ctx, const char *what, uint64_t block);
	void *ctx;
};

/* e handed to thread id: inside the map, and held by no other thread. */
static inline void owners_own(struct owners *o, struct bga_extent e, int id)
{
	bool past = e.start + e.len > o->cap;
	uint64_t b = past ? e.start : owners_take(o->map, e, id);
	if (b != OWNERS_NONE)
		o->fail(o->ctx, past ? "extent past the end" : "block handed out twice", b);
}

/* e freed by thread id: every block of it held by id. */
static inline void owners_disown(struct owners *o, struct bga_extent e, int id)
{
	uint64_t b = owners_give(o->map, e, id);
	if (b != OWNERS_NONE)
		o->fail(o->ctx, "freed a block the map gives to another", b);
}

/* A trimmed extent is in use while discarded: nobody may hold a block of it. */
static inline int owners_discard(void *ctx, uint64_t start, uint64_t len)
{
	struct owners *o = ctx;
	uint64_t b = owners_first_held(o->map, start, len);
	if (b != OWNERS_NONE)
		o->fail(o->ctx, "trim claimed an owned block", b);
	return 0;
}

#endif
