/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The metadata log: how the namespace reaches the disk.
 *
 * DESIGN.  The namespace lives in memory; the disk holds a log of it in
 * one area of blocks the file system allocated from bgalloc at mkfs (at
 * most BGAFS_LOG_EXTENTS extents, addressed as one circular run of
 * log_blocks blocks).  The area holds records, each starting at a block:
 *
 *   header   u32 magic "BGLR", u32 kind, u64 seq, u64 txn, u64 bytes,
 *            u32 crc32c of the payload, u32 crc32c of the header before it
 *            (LOG_HDR bytes in all, the rest zero)
 *   payload  bytes bytes (table.c), then zeros to the block's end
 *
 * A checkpoint record (LOG_CKPT) is the whole namespace; a delta record
 * (LOG_DELTA) is what one commit changed, as states rather than
 * operations (an inode's record as it is now, a directory name and what it
 * names now, an inode gone), so applying one is idempotent and needs no
 * order inside it.  Sequence numbers rise by one a record over the image's
 * whole life; the superblock names the area, the block and the sequence
 * number of the newest checkpoint whose superblock write completed.  A
 * mount reads that checkpoint and applies each record that follows while
 * its header and payload check and its seq is the next one: a torn
 * record (the commit that never returned), or an older record the area
 * wrapped over, ends the replay.
 *
 * A commit (txn.c) writes one delta: the inode records of the inodes
 * changed in it (attributes, extent list or symlink target, and an xattr
 * blob), one record per directory name changed, one per inode gone.  So
 * its cost is what changed, whatever the namespace's size: one small
 * change is one 4 KiB record, plus the allocator's changed groups
 * (bga_store) and no superblock write.  When the records since the
 * checkpoint pass half the area (or a delta cannot be told: a change list
 * lost to ENOMEM, or a commit failed), the commit writes a checkpoint
 * instead, into the blocks after the head, then the superblock naming it;
 * only then are the blocks before it free.  The cost of checkpoints is
 * amortised over half an area of deltas.
 *
 * Space.  The log area is allocated when the disk is empty and never
 * shared with data, so a full disk still commits, and no commit looks for
 * blocks: the metadata pool of the one-table-per-commit format (version
 * 1), which fragmented until no table could be placed, is gone.  A checkpoint that would take more than a
 * quarter of the area moves the log into a new area twice the size (when
 * bgalloc has it), freeing the old one once the superblock names the new.
 * The namespace may use at most 3/8 of the area: a create reserves its
 * bytes against that (meta_reserve, as ext4 reserves metadata blocks at
 * the call), and fails with ENOSPC when even a fresh checkpoint and a
 * larger area cannot make room.  So when metadata space really runs out
 * the user sees ENOSPC from creat, mkdir, symlink, link and rename, while
 * writes, deletes and fsync go on working.
 *
 * Crash consistency: the commit stores the allocator (with the
 * transaction's frees still allocated) before it writes the record, and
 * flushes after, so the namespace a replay finds never names a block the
 * allocator on disk has free; blocks the allocator holds beyond it are the
 * reconcile's (fsck.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bgafs.h"

#define LOG_MAGIC 0x524c4742u /* "BGLR" */

struct loghdr {
	uint32_t magic, kind;
	uint64_t seq, txn, bytes;
	uint32_t pcrc, hcrc;
};
_Static_assert(sizeof(struct loghdr) <= LOG_HDR, "a record header fits LOG_HDR");

uint64_t log_record_blocks(size_t payload)
{
	return (LOG_HDR + payload + BGAFS_BLOCK - 1) / BGAFS_BLOCK;
}

uint64_t log_initial_blocks(uint64_t nblocks)
{
	uint64_t b = nblocks / 32;
	return b < 256 ? 256 : b > 16384 ? 16384 : b;
}

uint64_t log_ns_limit(const struct fs *fs)
{
	return fs->log_blocks * BGAFS_BLOCK / 8 * 3;
}

uint64_t log_free_blocks(const struct fs *fs)
{
	return fs->log_blocks - fs->log_used;
}

/* The image block of area block lb, and how many follow it contiguously
 * (within the extent). */
static uint64_t phys(const struct fs *fs, uint64_t lb, uint64_t *run)
{
	for (uint32_t i = 0; i < fs->log_next; i++) {
		if (lb < fs->log[i].len) {
			*run = fs->log[i].len - lb;
			return fs->log[i].start + lb;
		}
		lb -= fs->log[i].len;
	}
	*run = 0;
	return 0;
}

/* n whole blocks at area block pos, wrapping at the end of the area. */
static int log_io(struct fs *fs, uint64_t pos, unsigned char *buf, uint64_t n, int write)
{
	while (n) {
		uint64_t run, p = phys(fs, pos % fs->log_blocks, &run);
		if (!run)
			return -EUCLEAN;
		if (run > n)
			run = n;
		int rc = write ? fs_pwrite_all(fs->fd, buf, run * BGAFS_BLOCK, p * BGAFS_BLOCK)
			       : fs_pread_all(fs->fd, buf, run * BGAFS_BLOCK, p * BGAFS_BLOCK);
		if (rc)
			return rc;
		buf += run * BGAFS_BLOCK;
		pos += run;
		n -= run;
	}
	return 0;
}

static uint32_t hdr_crc(const struct loghdr *h)
{
	return crc32c(0, h, offsetof(struct loghdr, hcrc));
}

int log_append(struct fs *fs, struct tbuf *tb, int kind, uint64_t txn)
{
	static const unsigned char zeros[BGAFS_BLOCK];
	size_t payload = tb->len - LOG_HDR;
	uint64_t nb = log_record_blocks(payload);
	if (nb > log_free_blocks(fs))
		return -ENOSPC;
	if (tb->len % BGAFS_BLOCK && tbuf_put(tb, zeros, BGAFS_BLOCK - tb->len % BGAFS_BLOCK))
		return -ENOMEM;
	struct loghdr h = {.magic = LOG_MAGIC, .kind = (uint32_t)kind, .seq = fs->log_seq, .txn = txn,
			   .bytes = payload, .pcrc = crc32c(0, tb->p + LOG_HDR, payload)};
	h.hcrc = hdr_crc(&h);
	memset(tb->p, 0, LOG_HDR);
	memcpy(tb->p, &h, sizeof(h));
	int rc = log_io(fs, fs->log_head, tb->p, nb, 1);
	if (!rc && fdatasync(fs->fd))
		rc = -errno;
	if (rc)
		return rc;
	fs->log_last_pos = fs->log_head;
	fs->log_head = (fs->log_head + nb) % fs->log_blocks;
	fs->log_used += nb;
	fs->log_seq++;
	return 0;
}

/* Extents of at least blocks in all, each at least blocks / 8 (so that
 * they fit the superblock), into ext[]. */
static int area_alloc(struct fs *fs, uint64_t blocks, struct bgafs_ext *ext, uint32_t *n)
{
	uint64_t left = blocks, floor = blocks / 8 ? blocks / 8 : 1;
	*n = 0;
	while (left) {
		struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = left, .max_len = left};
		struct bga_extent got;
		int rc;
		while ((rc = bga_rec_alloc(fs->rec, fs->vol, &req, &got)) && req.min_len > floor)
			req.min_len = (req.min_len + 1) / 2 > floor ? (req.min_len + 1) / 2 : floor;
		if (rc || *n == BGAFS_LOG_EXTENTS) {
			if (!rc)
				bga_rec_free(fs->rec, fs->vol, got.start, got.len);
			for (uint32_t i = 0; i < *n; i++) /* never named anywhere: straight back */
				bga_rec_free(fs->rec, fs->vol, ext[i].start, ext[i].len);
			*n = 0;
			return rc ? rc : -ENOSPC;
		}
		ext[(*n)++] = (struct bgafs_ext){got.start, got.len};
		left -= got.len;
	}
	return 0;
}

static int set_area(struct fs *fs, const struct bgafs_ext *ext, uint32_t n)
{
	if (!fs->log && !(fs->log = malloc(BGAFS_LOG_EXTENTS * sizeof(*fs->log))))
		return -ENOMEM;
	if (n > BGAFS_LOG_EXTENTS)
		return -EUCLEAN;
	memmove(fs->log, ext, n * sizeof(*ext));
	fs->log_next = n;
	fs->log_blocks = 0;
	for (uint32_t i = 0; i < n; i++)
		fs->log_blocks += ext[i].len;
	fs->log_head = fs->log_used = 0;
	return 0;
}

int log_create(struct fs *fs, uint64_t blocks)
{
	struct bgafs_ext ext[BGAFS_LOG_EXTENTS];
	uint32_t n;
	int rc = area_alloc(fs, blocks, ext, &n);
	if (!rc && (rc = set_area(fs, ext, n)))
		for (uint32_t i = 0; i < n; i++)
			bga_rec_free(fs->rec, fs->vol, ext[i].start, ext[i].len);
	fs->log_seq = 1;
	return rc;
}

int log_grow(struct fs *fs, uint64_t blocks)
{
	struct bgafs_ext ext[BGAFS_LOG_EXTENTS];
	uint32_t n;
	if (fs->old_next) /* a switch not yet named by a superblock */
		return -EBUSY;
	int rc = area_alloc(fs, blocks, ext, &n);
	if (rc)
		return rc;
	memcpy(fs->old_log, fs->log, fs->log_next * sizeof(*fs->log));
	fs->old_next = fs->log_next;
	fs->old_head = fs->log_head;
	fs->old_used = fs->log_used;
	if ((rc = set_area(fs, ext, n))) {
		fs->old_next = 0;
		for (uint32_t i = 0; i < n; i++)
			bga_rec_free(fs->rec, fs->vol, ext[i].start, ext[i].len);
	}
	return rc;
}

void log_switch_done(struct fs *fs, int named, void (*free_old)(struct fs *fs, uint64_t pblk, uint64_t len))
{
	if (!fs->old_next)
		return;
	if (named) { /* the superblock names the new area: the old one is free */
		for (uint32_t i = 0; i < fs->old_next; i++)
			free_old(fs, fs->old_log[i].start, fs->old_log[i].len);
	} else { /* the checkpoint never reached the new area: back to the old */
		for (uint32_t i = 0; i < fs->log_next; i++)
			bga_rec_free(fs->rec, fs->vol, fs->log[i].start, fs->log[i].len);
		set_area(fs, fs->old_log, fs->old_next); /* cannot fail: fs->log is there */
		fs->log_head = fs->old_head;
		fs->log_used = fs->old_used;
	}
	fs->old_next = 0;
}

void log_sb_fill(struct fs *fs, struct bgafs_sb *sb)
{
	memset(sb->log, 0, sizeof(sb->log));
	memcpy(sb->log, fs->log, fs->log_next * sizeof(*fs->log));
	sb->log_next = fs->log_next;
	sb->log_blocks = fs->log_blocks;
	sb->ckpt_pos = fs->log_last_pos;
	sb->ckpt_seq = fs->log_seq - 1;
}

/* The record at area block pos with sequence number seq: 0 with *out (the
 * payload, malloc'ed) and *h, or -EUCLEAN (not there, torn), -ENOMEM. */
static int read_record(struct fs *fs, uint64_t pos, uint64_t seq, struct loghdr *h, unsigned char **out)
{
	unsigned char first[BGAFS_BLOCK];
	int rc = log_io(fs, pos, first, 1, 0);
	if (rc)
		return rc;
	memcpy(h, first, sizeof(*h));
	if (h->magic != LOG_MAGIC || h->hcrc != hdr_crc(h) || h->seq != seq ||
	    (h->kind != LOG_CKPT && h->kind != LOG_DELTA) || log_record_blocks(h->bytes) > fs->log_blocks)
		return -EUCLEAN;
	uint64_t nb = log_record_blocks(h->bytes);
	unsigned char *p = malloc(nb * BGAFS_BLOCK);
	if (!p)
		return -ENOMEM;
	memcpy(p, first, BGAFS_BLOCK);
	if (nb > 1 && (rc = log_io(fs, pos + 1, p + BGAFS_BLOCK, nb - 1, 0))) {
		free(p);
		return rc;
	}
	if (crc32c(0, p + LOG_HDR, h->bytes) != h->pcrc) {
		free(p);
		return -EUCLEAN;
	}
	*out = p;
	return 0;
}

int log_replay(struct fs *fs, const struct bgafs_sb *sb)
{
	int rc = set_area(fs, sb->log, sb->log_next);
	if (rc)
		return rc;
	if (fs->log_blocks != sb->log_blocks || !fs->log_blocks || sb->ckpt_pos >= fs->log_blocks)
		return -EUCLEAN;
	uint64_t pos = sb->ckpt_pos, seq = sb->ckpt_seq, used = 0;
	for (;;) {
		struct loghdr h;
		unsigned char *p;
		rc = read_record(fs, pos, seq, &h, &p);
		if (rc == -EUCLEAN && used) /* the end of the log */
			break;
		if (rc)
			return rc;
		if (!used && h.kind != LOG_CKPT) {
			free(p);
			return -EUCLEAN;
		}
		if (h.kind == LOG_CKPT) {
			/* The namespace as it was then, whole (also a checkpoint
			 * whose superblock write did not complete). */
			itab_destroy(&fs->itab, fs->rec);
			itab_init(&fs->itab);
			rc = table_parse(fs, p + LOG_HDR, h.bytes);
			fs->ns_bytes = h.bytes;
		} else {
			rc = table_apply_delta(fs, p + LOG_HDR, h.bytes);
		}
		free(p);
		if (rc)
			return rc;
		uint64_t nb = log_record_blocks(h.bytes);
		fs->ns_txn = h.txn;
		used += nb;
		pos = (pos + nb) % fs->log_blocks;
		seq++;
		if (used >= fs->log_blocks)
			break;
	}
	fs->log_head = pos;
	fs->log_used = used;
	fs->log_seq = seq;
	fs->log_last_pos = sb->ckpt_pos;
	itab_reset_free(&fs->itab);
	return 0;
}
