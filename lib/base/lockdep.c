/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The lock-order checker of lockdep.h (debug builds only). */
#include "lockdep.h"

#ifdef BGA_DEBUG
#include <stdio.h>
#include <stdlib.h>

/* The coverage build (make coverage, -DBGA_COVERAGE) writes this process's
 * gcov counters before it aborts: a process that dies of abort() never
 * writes them, and the death tests that run this side would count nothing. */
#ifdef BGA_COVERAGE
extern void __gcov_dump(void);
#define lockdep_abort() (__gcov_dump(), abort())
#else
#define lockdep_abort() abort()
#endif

/*
 * The locks this thread holds, in the order taken.  A range free can hold
 * every lock-table slot; past the stack's depth the extra locks are only
 * counted.  They are taken in ascending slot order, so the recorded ones
 * (the lowest) still order every later acquisition correctly against
 * other levels, and the top recorded slot is below any later one.
 */
#define LOCKDEP_DEPTH 64
struct held {
	unsigned level;
	uint64_t sub;
};
static __thread struct held stack[LOCKDEP_DEPTH];
static __thread unsigned depth, overflow;

static const char *level_name(unsigned level)
{
	switch (level) {
	case BGA_LOCKDEP_STORE:
		return "the store lock";
	case BGA_LOCKDEP_COMMIT:
		return "commit_lock";
	case BGA_LOCKDEP_GROW:
		return "grow_lock";
	case BGA_LOCKDEP_GROUP:
		return "group lock slot";
	default:
		return "?";
	}
}

void bga__lockdep_acquire(unsigned level, uint64_t sub, bool check)
{
	for (unsigned i = 0; check && i < depth; i++) {
		const struct held *h = &stack[i];
		if (h->level < level || (h->level == level && level == BGA_LOCKDEP_GROUP && h->sub < sub))
			continue;
		fprintf(stderr,
			"bgalloc: lock order violated: waiting for %s %llu while holding %s %llu "
			"(order: store lock, commit_lock, grow_lock, group locks by ascending slot)\n",
			level_name(level), (unsigned long long)sub, level_name(h->level),
			(unsigned long long)h->sub);
		lockdep_abort();
	}
	if (depth < LOCKDEP_DEPTH)
		stack[depth++] = (struct held){level, sub};
	else
		overflow++;
}

void bga__lockdep_release(unsigned level, uint64_t sub)
{
	for (unsigned i = depth; i-- > 0;) {
		if (stack[i].level != level || stack[i].sub != sub)
			continue;
		for (unsigned j = i; j + 1 < depth; j++)
			stack[j] = stack[j + 1];
		depth--;
		return;
	}
	if (overflow == 0) {
		fprintf(stderr, "bgalloc: released %s %llu, which this thread does not hold\n", level_name(level),
			(unsigned long long)sub);
		lockdep_abort();
	}
	overflow--;
}

unsigned bga__lockdep_held(void)
{
	return depth + overflow;
}

bool bga__lockdep_idle(char *why, size_t n)
{
	if (depth == 0 && overflow == 0)
		return true;
	/* Recorded ones released first, the counted ones remain: depth 0 with
	 * overflow > 0 is a state too. */
	if (depth == 0)
		snprintf(why, n, "lockdep: %u group locks held, past its record", overflow);
	else
		snprintf(why, n, "lockdep: %u locks held (innermost recorded: %s %llu)", depth + overflow,
			 level_name(stack[depth - 1].level), (unsigned long long)stack[depth - 1].sub);
	return false;
}

bool bga__lockdep_holds(unsigned level, uint64_t sub)
{
	for (unsigned i = 0; i < depth; i++)
		if (stack[i].level == level && stack[i].sub == sub)
			return true;
	return overflow != 0 && level == BGA_LOCKDEP_GROUP;
}

void bga__lockdep_assert_held_at(unsigned level, uint64_t sub, const char *file, int line)
{
	if (bga__lockdep_holds(level, sub))
		return;
	fprintf(stderr, "bgalloc: %s:%d: %s %llu is not held\n", file, line, level_name(level),
		(unsigned long long)sub);
	lockdep_abort();
}
#endif
