/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_REPLAY_TRACE_H
#define BGA_REPLAY_TRACE_H

/* A trace read into memory (either form), its records in seq order. */

#include <stdint.h>
#include <stdio.h>

#include <bgalloc.h>

#include "bga_trace.h"

struct trace_header {
	uint32_t version;
	uint64_t nblocks, first_data_block;
	uint32_t blocks_per_group, flags, block_size, stripe;
	char source[BGT_SOURCE_LEN];
};

struct trace_rec {
	uint64_t seq, ns;
	uint64_t args[8];
	uint64_t anchor;  /* an alloc's goal_from, when anchored (bga_trace.h) */
	int64_t distance; /* and the logical distance from the anchor */
	size_t ext;    /* index of its first extent in trace.ext */
	uint32_t next; /* extents */
	int32_t rc;
	uint16_t thread;
	uint8_t op;
	uint8_t anchored; /* a goal_from record of its seq was read */
};

struct trace {
	struct trace_header h;
	struct trace_rec *rec;
	size_t nrec;
	struct bga_extent *ext;
	size_t next;
	uint64_t skipped; /* records of ops this reader does not know */
};

/* Read path (binary, or the text form: told apart by the magic).  A
 * goal_from record is not kept as a record: it sets anchor, distance and anchored
 * of the allocation of its seq (one that names none, or a second for the
 * same allocation, is refused); the writers below write it back.  0, or -1
 * with the reason printed to stderr, naming the file and the byte offset
 * (binary) or line (text) that was wrong. */
int trace_read(const char *path, struct trace *t);
void trace_free(struct trace *t);

static inline const struct bga_extent *trace_ext(const struct trace *t, const struct trace_rec *r)
{
	return t->ext + r->ext;
}

/*
 * The fill of the recorded volume over the trace: blocks in use (the
 * capacity, nblocks - first_data_block, less the free blocks), as the
 * recorded results say: an allocation's extents and a claim take blocks, a
 * free gives them back, a deferred free at the commit of its txn.
 * first_at: the first record (an index into rec) after which at least
 * pct percent of the capacity is in use, or SIZE_MAX when the trace never
 * gets there; peak and peak_at: the most in use, and after which record.
 * 0, or -1 when out of memory.
 */
struct trace_fill {
	uint64_t capacity, peak;
	size_t first_at, peak_at;
};
int trace_fill(const struct trace *t, unsigned pct, struct trace_fill *out);

/* A whole file, NUL-terminated (*len bytes before the NUL), or NULL with
 * the reason printed.  When PATH does not exist but PATH.00 does, the
 * file is read from its parts PATH.00, PATH.01, ... in order, a byte
 * split (`split -b 900K -d -a 2 PATH PATH.`): how tests/data/traces keeps
 * a trace whose xz is over 1 MiB, each part under it. */
char *read_whole(const char *path, size_t *len);

/* Write t in the text form, or in the binary form.  0 or -1 (errno set). */
int trace_write_text(const struct trace *t, FILE *f);
int trace_write_binary(const struct trace *t, FILE *f);

#endif
