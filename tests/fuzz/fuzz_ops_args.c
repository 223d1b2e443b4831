/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz_ops: the decoding of a call's arguments from the input (blocks,
 * lengths, ranges to free, txns and requests), each biased towards the
 * places where answers change: group starts, the end, windows' blocks,
 * what was handed out lately.  The order of the bytes read is the input
 * format (fuzz_ops.c): a change here changes what saved inputs mean.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <bgalloc.h>

#include "fuzz_ops_args.h"
#include "fuzz_ops_state.h"

/* A block number biased towards interesting places. */
uint64_t pick_block(struct fz *f)
{
	uint64_t n = f->cfg.nblocks, bpg = f->cfg.blocks_per_group;
	uint8_t c = fz_u8(&f->in);

	/* the blocks a handle's window holds: thieves' targets */
	if (f->v2 && (c & 8)) {
		struct bga_rsv *r = f->rsv[(c >> 4) % MAX_RSV];
		struct bga_extent w = { 0, 0 };

		if (r && bga_rsv_window(r, &w) == 0 && w.len)
			return w.start + ((c & 0x80) ? fz_below(&f->in, w.len) : 0);
	}
	switch (c & 7) {
	case 0: return f->cfg.first_data_block;
	case 1: return fz_below(&f->in, n / bpg + 1) * bpg; /* a group start (or nblocks) */
	case 2: return n - 1 - fz_below(&f->in, n < 8 ? n : 8);
	case 3: return n + fz_u8(&f->in); /* past the end */
	case 4: return fz_below(&f->in, f->cfg.first_data_block + 1);
	default: return fz_below(&f->in, n);
	}
}

uint64_t pick_len(struct fz *f)
{
	uint64_t bpg = f->cfg.blocks_per_group;

	switch (fz_u8(&f->in) & 7) {
	case 0: return 0;
	case 1: return bpg;
	case 2: return bpg + 1;
	case 3: return UINT64_MAX - fz_u8(&f->in);
	case 4: return fz_below(&f->in, 2 * bpg + 2);
	default: return 1 + (fz_u8(&f->in) & 15);
	}
}

/* A range to free: often one handed out lately, or an allocated run in the model. */
void pick_range(struct fz *f, uint64_t *start, uint64_t *len)
{
	uint8_t mode = fz_u8(&f->in) & 3;
	uint64_t b;

	if (mode == 0 && f->nrecent) {
		struct bga_extent e = f->recent[fz_below(&f->in, f->nrecent < RECENT ? f->nrecent : RECENT)];
		uint64_t cut = fz_below(&f->in, e.len);

		switch (fz_u8(&f->in) & 3) {
		case 0: *start = e.start; *len = e.len; break;
		case 1: *start = e.start + cut; *len = e.len - cut; break; /* a tail */
		case 2: *start = e.start; *len = cut ? cut : 1; break;     /* a head */
		default: *start = e.start + cut; *len = e.len + 1; break;  /* one too far */
		}
		return;
	}
	if (mode == 1) {
		*start = pick_block(f);
		*len = pick_len(f);
		return;
	}
	/* An allocated run in the model, possibly across groups. */
	b = fz_below(&f->in, f->cfg.nblocks);
	if (b < f->cfg.nblocks) {
		/* one scan, not a compare per block under the coverage
		 * instrumentation: the same first allocated block */
		const uint8_t *a = memchr(f->m.state + b, REFM_ALLOC, f->cfg.nblocks - b);
		b = a ? (uint64_t)(a - f->m.state) : f->cfg.nblocks;
	}
	*start = b;
	*len = 0;
	while (b < f->cfg.nblocks && f->m.state[b] == REFM_ALLOC && *len < 1 + (uint64_t)fz_u8(&f->in) * 8) {
		b++;
		(*len)++;
	}
	if (*len == 0)
		*len = 1;
}

static struct bga_rsv *pick_rsv(struct fz *f)
{
	uint8_t i = fz_u8(&f->in);

	return (i & 0x80) ? f->rsv[i % MAX_RSV] : NULL;
}

/*
 * A request: goal, lengths, handle, flags (`flags_ok` the known ones; now
 * and then an unknown bit), and in the second format first an allocation
 * unit (good ones, and bad ones now and then), with lengths and an exact
 * goal mostly rounded to it.
 */
void decode_request(struct fz *f, struct bga_request *req, uint8_t g, uint32_t flags_ok)
{
	uint8_t a = f->v2 ? fz_u8(&f->in) : 0;

	if ((g & 3) == 0)
		req->goal = BGA_NO_GOAL;
	else
		req->goal = pick_block(f);
	req->min_len = pick_len(f);
	switch (fz_u8(&f->in) & 3) {
	case 0: req->max_len = req->min_len; break;
	case 1: req->max_len = req->min_len + fz_u8(&f->in); break;
	case 2: req->max_len = req->min_len - 1; break; /* bad unless min_len was 0 */
	default: req->max_len = UINT64_MAX; break;
	}
	req->rsv = pick_rsv(f);
	req->flags = fz_u8(&f->in);
	if (!(req->flags & 0x80))
		req->flags &= flags_ok;
	else
		req->flags &= 0x7f; /* now and then an unknown bit */
	if (!f->v2 || (a & 3) != 0)
		return;
	/* 2 .. 2048 (past a small group: -EINVAL), or now and then 3 or 0 */
	req->align = (a & 4) ? UINT64_C(1) << (1 + (a >> 3) % 11) : (a & 8) ? 3 : (a >> 4) & 1;
	if (req->align > 1 && !(a & 0x40)) {
		uint64_t u = req->align;
		req->min_len = req->min_len < u ? u : req->min_len / u * u;
		if (req->max_len != UINT64_MAX)
			req->max_len = req->max_len < req->min_len ? req->min_len : req->max_len / u * u;
		else
			req->max_len = UINT64_MAX / u * u;
		if (req->goal != BGA_NO_GOAL && !(a & 0x80))
			req->goal = req->goal / u * u;
	}
}

/* A txn for a deferred free: 0, the last committed, the one before it
 * (all refused), or one to four past the last committed. */
uint64_t pick_txn(struct fz *f)
{
	switch (fz_u8(&f->in) & 7) {
	case 0: return 0;
	case 1: return f->m.last_txn;
	case 2: return f->m.last_txn ? f->m.last_txn - 1 : 0;
	default: return f->m.last_txn + 1 + (fz_u8(&f->in) & 3);
	}
}
