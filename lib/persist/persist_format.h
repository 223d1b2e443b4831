/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_PERSIST_FORMAT_H
#define BGA_PERSIST_FORMAT_H

/*
 * The on-disk format of a metadata area (docs/FORMAT.md has the byte-level
 * tables and the reasoning).  Shared by persist.c, bga-inspect and the
 * tests that build or damage images on purpose.
 *
 *   [0, 512)       superblock slot 0 (even generations)
 *   [512, 1024)    superblock slot 1 (odd generations)
 *   [1024, 4096)   zero
 *   4096 + u * unit_bytes: unit u, groups [8u, 8u + 8):
 *       one 512-byte descriptor sector: per group two 32-byte descriptor
 *       slots (group 8u + i at byte 64 i, slot s at + 32 s), then
 *       16 bitmap slots of bitmap_bytes each (group 8u + i, slot s at
 *       512 + (2 i + s) * bitmap_bytes)
 *
 * Everything is little-endian; every record carries a crc32c (Castagnoli,
 * the iSCSI/ext4 polynomial, standard init and final inversion).
 * Crash atomicity: copy-on-write per group between its two slots, and a
 * superblock generation that says which writes count (FORMAT.md).
 */

#include <stdint.h>
#include <string.h>

#include <isa-l/crc.h>

#define BGA_PF_MAGIC "BGALLOC\x01"
#define BGA_PF_VERSION 1u
#define BGA_PF_SECTOR 512u
#define BGA_PF_HEADER 4096u
#define BGA_PF_UNIT_GROUPS 8u
#define BGA_PF_DESC_BYTES 32u

/* superblock field offsets */
enum {
	BGA_SB_MAGIC = 0,       /* 8 bytes */
	BGA_SB_VERSION = 8,     /* u32 */
	BGA_SB_SIZE = 12,       /* u32: 512 */
	BGA_SB_GEN = 16,        /* u64 */
	BGA_SB_UUID = 24,       /* u64 */
	BGA_SB_NBLOCKS = 32,    /* u64 */
	BGA_SB_NGROUPS = 40,    /* u64 */
	BGA_SB_FIRST = 48,      /* u64 first_data_block */
	BGA_SB_BPG = 56,        /* u32 */
	BGA_SB_BMBYTES = 60,    /* u32 bitmap slot bytes */
	BGA_SB_LOCK_SLOTS = 64, /* u32 */
	BGA_SB_BATCH = 68,      /* i32 */
	BGA_SB_RSV_DEFAULT = 72,
	BGA_SB_RSV_MAX = 76,
	BGA_SB_FLAGS = 80,
	BGA_SB_LOCK_KIND = 84,
	BGA_SB_FREE = 88,       /* u64 free blocks at the store */
	BGA_SB_INITED = 96,     /* u64 groups stored with a bitmap or as full */
	BGA_SB_TXN = 104,       /* u64 last committed txn at the store */
	BGA_SB_DIGEST = 112,    /* u64 sum of bga_pf_digest over every group's committed record */
	BGA_SB_STRIPE = 120,    /* u32 cfg.stripe (0 in images from before it existed: none) */
	BGA_SB_TAG = 128,       /* u64 the caller's tag (bga_store_tagged; 0 in images from before it existed) */
	BGA_SB_CRC = 508,       /* u32 crc32c of bytes [0, 508) */
};

/* descriptor field offsets (32 bytes) */
enum {
	BGA_DESC_GEN = 0,    /* u64; 0 = empty slot */
	BGA_DESC_GROUP = 8,  /* u32 group number (low 32 bits) */
	BGA_DESC_FREE = 12,  /* u32 free blocks in the group's span */
	BGA_DESC_FLAGS = 16, /* u32 BGA_DF_* */
	BGA_DESC_BMCRC = 20, /* u32 crc32c of the bitmap slot (BGA_DF_BITMAP) */
	BGA_DESC_RSVD = 24,  /* u32 zero */
	BGA_DESC_CRC = 28,   /* u32 crc32c of the volume uuid (8 bytes LE) and bytes [0, 28) */
};

enum {
	BGA_DF_UNINIT = 1u << 0, /* never initialised: wholly free, no bitmap */
	BGA_DF_FULL = 1u << 1,   /* wholly used, no bitmap */
	BGA_DF_BITMAP = 1u << 2, /* the bitmap slot holds the group's map */
	BGA_DF_QUARANTINED = 1u << 3, /* quarantined at a load: wholly used, no bitmap */
	BGA_DF_KNOWN = BGA_DF_UNINIT | BGA_DF_FULL | BGA_DF_BITMAP | BGA_DF_QUARANTINED,
	BGA_DF_ALL = BGA_DF_KNOWN,
};

/* The generation every never-initialised group's record carries (any
 * committed generation is at least 1, so it is always in force). */
#define BGA_PF_UNINIT_GEN 1u

static inline void bga_pf_put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void bga_pf_put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t bga_pf_get32(const unsigned char *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline uint64_t bga_pf_get64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* Standard CRC-32C ("123456789" -> 0xe3069283), continued from crc. */
static inline uint32_t bga_pf_crc_more(uint32_t crc, const void *buf, size_t len)
{
	uint32_t c = ~crc;
	const unsigned char *p = buf;
	while (len > 0) {
		int n = len > (1u << 30) ? (1 << 30) : (int)len;
		c = crc32_iscsi((unsigned char *)(uintptr_t)p, n, c);
		p += n;
		len -= (size_t)n;
	}
	return ~c;
}

static inline uint32_t bga_pf_crc(const void *buf, size_t len)
{
	return bga_pf_crc_more(0, buf, len);
}

/* Bytes of one bitmap slot: the group's bits, rounded up to a sector. */
static inline uint32_t bga_pf_bitmap_bytes(uint32_t bpg)
{
	return (bpg / 8 + BGA_PF_SECTOR - 1) / BGA_PF_SECTOR * BGA_PF_SECTOR;
}

static inline uint64_t bga_pf_unit_bytes(uint32_t bpg)
{
	return BGA_PF_SECTOR + 2u * BGA_PF_UNIT_GROUPS * (uint64_t)bga_pf_bitmap_bytes(bpg);
}

static inline uint64_t bga_pf_desc_off(uint32_t bpg, uint64_t g)
{
	return BGA_PF_HEADER + g / BGA_PF_UNIT_GROUPS * bga_pf_unit_bytes(bpg);
}

static inline uint64_t bga_pf_bitmap_off(uint32_t bpg, uint64_t g, unsigned slot)
{
	return bga_pf_desc_off(bpg, g) + BGA_PF_SECTOR +
	       (2u * (g % BGA_PF_UNIT_GROUPS) + slot) * (uint64_t)bga_pf_bitmap_bytes(bpg);
}

static inline uint64_t bga_pf_area_bytes(uint32_t bpg, uint64_t ngroups)
{
	return BGA_PF_HEADER + (ngroups + BGA_PF_UNIT_GROUPS - 1) / BGA_PF_UNIT_GROUPS * bga_pf_unit_bytes(bpg);
}

/* The descriptor crc: the volume's uuid first, so that a record left by
 * another image never passes for one of this image. */
static inline uint32_t bga_pf_desc_crc(uint64_t uuid, const unsigned char *d)
{
	unsigned char u[8];
	bga_pf_put64(u, uuid);
	return bga_pf_crc_more(bga_pf_crc(u, 8), d, BGA_DESC_CRC);
}

/*
 * One group's share of the superblock digest: a 64-bit mix of where its
 * committed record is and what it says.  The superblock holds the sum over
 * all groups (mod 2^64), so a load can tell when some group's newest
 * record was damaged and an older one passed for it.
 */
static inline uint64_t bga_pf_digest(uint64_t g, uint64_t gen, uint32_t free, uint32_t flags, uint32_t bmcrc,
				     unsigned slot)
{
	uint64_t x = g * UINT64_C(0x9e3779b97f4a7c15) ^ gen * UINT64_C(0xc2b2ae3d27d4eb4f) ^
		     ((uint64_t)free << 32 | bmcrc) ^ ((uint64_t)flags << 8 | slot) * UINT64_C(0x165667b19e3779f9);
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

#endif
