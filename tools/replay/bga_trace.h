/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_TRACE_H
#define BGA_TRACE_H

/*
 * The allocation-trace format, version 1 (docs/TRACE.md is its manual).
 *
 * A trace is a header, then records.  Every integer is little-endian.
 *
 *   header (80 bytes): magic "BGATRACE", u32 version (1), u32 header size
 * (80), u64 nblocks, u32 blocks_per_group, u32 the volume's config
 *     flags, u64 first_data_block, u32 block size in bytes (0: unknown),
 *     u32 stripe, char source[32] (who recorded it, NUL-padded).
 *   record: u32 size (all its bytes), u8 op, u8 nargs, u16 thread, i32 rc,
 *     u32 next (extents that follow the arguments), u64 seq, u64 ns (since
 *     the recording began), then nargs u64 arguments, then next extents
 *     (u64 start, u64 len).
 *
 * Records are written in any order and read in seq order.  seq is taken
 * before a call that gives blocks back (free, free_vec, free_deferred,
 * free_deferred_vec, commit, unreserve, rsv_close, rsv_set_size) and after a call that takes
 * them (alloc, alloc_vec, claim, reserve, rsv_open), so a block freed by
 * one thread and handed to another is freed earlier in seq order than it
 * is handed out, however the two threads' records reach the file.
 *
 * A reader skips records whose op it does not know (size says how long
 * they are), and refuses a version it does not know.
 *
 * goal_from qualifies the alloc or alloc_vec record of the same seq (the
 * one pair of records that share a seq): `anchor` is a block its file
 * held then (the nearest mapped one to the hole the request fills), and
 * `distance` the hole's logical distance from it (a signed 64-bit
 * number; negative when the anchor lies after the hole).  The goal asked
 * is read relative to the anchor (goal - anchor), so a replay aims at its
 * own block for the anchor moved as far; and a replay may aim at
 * anchor + distance instead (the goal that keeps the file's logical
 * layout), or past the anchor, whatever the recorder asked.  Without
 * one, a goal is the block after goal - 1 (a file going on past its last
 * block).  A reader that does not know the op skips it and keeps that
 * older meaning.
 */

#include <endian.h>
#include <stdint.h>
#include <string.h>

#define BGT_MAGIC "BGATRACE"
#define BGT_VERSION 1u
#define BGT_HEADER_SIZE 80u
#define BGT_REC_SIZE 32u /* the fixed part of a record */
#define BGT_SOURCE_LEN 32

/* The arguments of each op, in order (handle 0: none). */
enum bgt_op {
	BGT_INIT_FREE = 1,     /* -: extents free when the recording began */
	BGT_ALLOC = 2,         /* handle goal min_len max_len flags align: the extent got */
	BGT_ALLOC_VEC = 3,     /* handle goal min_len max_len flags align want max_out: extents got */
	BGT_FREE = 4,          /* start len */
	BGT_FREE_VEC = 5,      /* -: the extents freed */
	BGT_FREE_DEFERRED = 6, /* start len txn */
	BGT_COMMIT = 7,        /* txn */
	BGT_CLAIM = 8,         /* start len */
	BGT_RESERVE = 9,       /* n */
	BGT_UNRESERVE = 10,    /* n */
	BGT_RSV_OPEN = 11,     /* handle (the id the recorder gave it) */
	BGT_RSV_CLOSE = 12,    /* handle */
	BGT_RSV_SET_SIZE = 13, /* handle blocks */
	BGT_END = 14,          /* hash free_blocks: the free map when the recording ended */
	BGT_FREE_DEFERRED_VEC = 15, /* txn: the extents freed at its commit */
	BGT_GOAL_FROM = 16,    /* anchor distance: see below */
	BGT_OP_MAX = 16,
};

/* Arguments an op carries (0 for an unknown op). */
static inline unsigned bgt_op_nargs(unsigned op)
{
	static const unsigned char n[BGT_OP_MAX + 1] = {
		[BGT_ALLOC] = 6, [BGT_ALLOC_VEC] = 8, [BGT_FREE] = 2, [BGT_FREE_DEFERRED] = 3,
		[BGT_COMMIT] = 1, [BGT_CLAIM] = 2, [BGT_RESERVE] = 1, [BGT_UNRESERVE] = 1,
		[BGT_RSV_OPEN] = 1, [BGT_RSV_CLOSE] = 1, [BGT_RSV_SET_SIZE] = 2, [BGT_END] = 2,
		[BGT_FREE_DEFERRED_VEC] = 1, [BGT_GOAL_FROM] = 2,
	};
	return op <= BGT_OP_MAX ? n[op] : 0;
}

/* The op's name in the text form ("alloc", "free_vec", ...), NULL if unknown. */
static inline const char *bgt_op_name(unsigned op)
{
	static const char *const names[BGT_OP_MAX + 1] = {
		[BGT_INIT_FREE] = "init_free", [BGT_ALLOC] = "alloc", [BGT_ALLOC_VEC] = "alloc_vec",
		[BGT_FREE] = "free", [BGT_FREE_VEC] = "free_vec", [BGT_FREE_DEFERRED] = "free_deferred",
		[BGT_COMMIT] = "commit", [BGT_CLAIM] = "claim", [BGT_RESERVE] = "reserve",
		[BGT_UNRESERVE] = "unreserve", [BGT_RSV_OPEN] = "rsv_open", [BGT_RSV_CLOSE] = "rsv_close",
		[BGT_RSV_SET_SIZE] = "rsv_set_size", [BGT_END] = "end", [BGT_FREE_DEFERRED_VEC] = "free_deferred_vec",
		[BGT_GOAL_FROM] = "goal_from",
	};
	return op <= BGT_OP_MAX ? names[op] : NULL;
}

/*
 * The free-map hash: 64-bit FNV-1a over (start, len) of every maximal
 * free extent in block order, each as two little-endian u64, extents that
 * touch across a group boundary merged.  Two volumes hash alike exactly
 * when the same blocks are free (barring a 64-bit collision).
 */
#define BGT_HASH_INIT UINT64_C(0xcbf29ce484222325)
static inline uint64_t bgt_hash_u64(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

/* Little-endian fields at any alignment. */
static inline void bgt_put_u32(unsigned char *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static inline void bgt_put_u64(unsigned char *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static inline uint32_t bgt_get_u32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return le32toh(v);
}

static inline uint64_t bgt_get_u64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return le64toh(v);
}

#endif
