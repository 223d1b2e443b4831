/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga_scan (<bgalloc/scan.h>): a stored area read as bga_load reads it,
 * reporting instead of loading.  The decoders are the load's own
 * (persist_rec.c), so a scan and a load never disagree on what is valid.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc/scan.h>

#include "persist.h"
#include "persist_format.h"

/* A read through io: a positive result is out of contract, an I/O error
 * (as bga__pf_sb_read_best says). */
static int io_read(const struct bga_io *io, void *buf, size_t len, uint64_t off)
{
	int rc = io->read(io->ctx, buf, len, off);
	return rc > 0 ? -EIO : rc;
}

/* cb's answer: 0 go on, else what bga_scan returns (negative: a count
 * of problems is never mistaken for a stop). */
static int report(bga_scan_cb cb, void *ctx, const struct bga_scan_item *it)
{
	int rc = cb ? cb(ctx, it) : 0;
	return rc > 0 ? -ECANCELED : rc;
}

static uint32_t state_of(uint32_t df)
{
	switch (df) {
	case BGA_DF_UNINIT: return BGA_SCAN_UNINIT;
	case BGA_DF_FULL: return BGA_SCAN_FULL;
	case BGA_DF_BITMAP: return BGA_SCAN_BITMAP;
	default: return BGA_SCAN_QUARANTINED; /* the decoder lets one known flag through */
	}
}

static void sb_public(const struct bga_pf_sb *in, uint32_t slot, struct bga_scan_sb *out)
{
	*out = (struct bga_scan_sb){
		.gen = in->gen,
		.uuid = in->uuid,
		.nblocks = in->nblocks,
		.ngroups = in->ngroups,
		.first_data_block = in->first_data_block,
		.free_blocks = in->free_blocks,
		.groups_inited = in->groups_inited,
		.last_txn = in->last_txn,
		.digest = in->digest,
		.tag = in->tag,
		.version = BGA_PF_VERSION, /* the decoder accepts no other */
		.slot = slot,
		.blocks_per_group = in->blocks_per_group,
		.lock_slots = in->lock_slots,
		.rsv_default = in->rsv_default,
		.rsv_max = in->rsv_max,
		.flags = in->flags,
		.lock_kind = in->lock_kind,
		.stripe = in->stripe,
		.counter_batch = in->counter_batch,
	};
}

/* Both slots: 0 with *best and *slot set, -ENODATA, a read's error or
 * cb's return; *problems counts the bad slots. */
static int scan_super(const struct bga_io *io, struct bga_pf_sb *best, uint32_t *slot, long *problems,
		      bga_scan_cb cb, void *ctx)
{
	unsigned char buf[2 * BGA_PF_SECTOR];
	int rc = io_read(io, buf, sizeof(buf), 0);
	if (rc) {
		struct bga_scan_item it = {.kind = BGA_SCAN_READ, .len = sizeof(buf), .group = UINT64_MAX, .err = rc};
		int crc = report(cb, ctx, &it);
		return crc ? crc : rc;
	}
	int found = 0;
	for (uint32_t s = 0; s < 2; s++) {
		const unsigned char *b = buf + BGA_PF_SECTOR * s;
		struct bga_pf_sb cur;
		const char *why = NULL;
		bool zero = true;
		for (unsigned i = 0; i < BGA_PF_SECTOR && zero; i++)
			zero = b[i] == 0;
		if (zero) /* never written: no problem */
			continue;
		if (bga__pf_sb_decode(b, &cur, &why)) {
			struct bga_scan_item it = {.kind = BGA_SCAN_SUPER_BAD, .slot = s,
						   .offset = BGA_PF_SECTOR * (uint64_t)s, .group = UINT64_MAX, .why = why};
			++*problems;
			if ((rc = report(cb, ctx, &it)))
				return rc;
			continue;
		}
		if (!found || cur.gen > best->gen) {
			*best = cur;
			*slot = s;
		}
		found = 1;
	}
	return found ? 0 : -ENODATA;
}

/* Group g's bitmap (slot s) against its record's checksum; 0 or cb's
 * return, or -ENOMEM. */
static int scan_bitmap(const struct bga_io *io, const struct bga_pf_sb *sb, uint64_t g, unsigned s,
		       const struct bga_pgroup *r, long *problems, bga_scan_cb cb, void *ctx)
{
	uint32_t bb = bga_pf_bitmap_bytes(sb->blocks_per_group);
	uint64_t off = bga_pf_bitmap_off(sb->blocks_per_group, g, s);
	unsigned char *bm = malloc(bb);
	if (bm == NULL)
		return -ENOMEM;
	struct bga_scan_item it = {.offset = off, .group = g};
	int rc = io_read(io, bm, bb, off);
	if (rc) {
		it.kind = BGA_SCAN_READ;
		it.len = bb;
		it.err = rc;
	} else if (bga_pf_crc(bm, bb) != r->bmcrc) {
		it.kind = BGA_SCAN_BITMAP_BAD;
	}
	free(bm);
	if (!it.kind)
		return 0;
	++*problems;
	return report(cb, ctx, &it);
}

/* The groups of the unit (BGA_PF_UNIT_GROUPS groups) at g0, whose
 * descriptor sector is sec. */
static int scan_unit(const struct bga_io *io, const struct bga_pf_sb *sb, uint64_t g0, const unsigned char *sec,
		     long *problems, bga_scan_cb cb, void *ctx)
{
	uint32_t bpg = sb->blocks_per_group;
	uint64_t off = bga_pf_desc_off(bpg, g0);
	for (uint64_t g = g0; g < g0 + BGA_PF_UNIT_GROUPS && g < sb->ngroups; g++) {
		struct bga_pgroup r[2];
		int best = -1, rc;
		uint64_t doff = off + (g - g0) * 2 * BGA_PF_DESC_BYTES;
		for (unsigned s = 0; s < 2; s++) {
			/* a slot newer than the superblock is a store that never
			 * completed: the load ignores it too */
			int ok = bga__pf_desc_decode(sec + (g - g0) * 2 * BGA_PF_DESC_BYTES + BGA_PF_DESC_BYTES * s,
						     sb->uuid, g, bpg, &r[s]) &&
				 r[s].gen <= sb->gen;
			if (ok && (best < 0 || r[s].gen > r[best].gen))
				best = (int)s;
		}
		if (best < 0) {
			struct bga_scan_item it = {.kind = BGA_SCAN_GROUP_BAD, .offset = doff, .group = g};
			++*problems;
			if ((rc = report(cb, ctx, &it)))
				return rc;
			continue;
		}
		struct bga_scan_item it = {.kind = BGA_SCAN_GROUP,
					   .slot = (uint32_t)best,
					   .offset = doff + BGA_PF_DESC_BYTES * (uint64_t)best,
					   .group = g,
					   .gen = r[best].gen,
					   .state = state_of(r[best].flags),
					   .free = r[best].free};
		if (it.state == BGA_SCAN_QUARANTINED)
			++*problems;
		if ((rc = report(cb, ctx, &it)))
			return rc;
		if (r[best].flags == BGA_DF_BITMAP &&
		    (rc = scan_bitmap(io, sb, g, (unsigned)best, &r[best], problems, cb, ctx)))
			return rc;
	}
	return 0;
}

int bga_scan(const struct bga_io *io, unsigned flags, struct bga_scan_sb *sb, bga_scan_cb cb, void *ctx)
{
	if (io == NULL || io->read == NULL || sb == NULL || (flags & ~(unsigned)BGA_SCAN_SUPER_ONLY))
		return -EINVAL;
	struct bga_pf_sb best = {0};
	uint32_t slot = 0;
	long problems = 0;
	int rc = scan_super(io, &best, &slot, &problems, cb, ctx);
	if (rc)
		return rc;
	sb_public(&best, slot, sb);
	unsigned char sec[BGA_PF_SECTOR];
	for (uint64_t g0 = 0; !(flags & BGA_SCAN_SUPER_ONLY) && g0 < best.ngroups; g0 += BGA_PF_UNIT_GROUPS) {
		uint64_t off = bga_pf_desc_off(best.blocks_per_group, g0);
		if ((rc = io_read(io, sec, sizeof(sec), off))) {
			struct bga_scan_item it = {.kind = BGA_SCAN_READ, .offset = off, .len = sizeof(sec),
						   .group = UINT64_MAX, .err = rc};
			problems++;
			if ((rc = report(cb, ctx, &it)))
				return rc;
			continue;
		}
		if ((rc = scan_unit(io, &best, g0, sec, &problems, cb, ctx)))
			return rc;
	}
	return problems > INT32_MAX ? INT32_MAX : (int)problems;
}
