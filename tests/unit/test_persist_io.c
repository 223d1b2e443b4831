/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The persistence code's error paths (issue 16), part two: callbacks that
 * fail or answer out of contract, the store's recovery from a superblock
 * that may not have landed, stores of lazily loaded, grown or partly built
 * volumes, and the file-backed io's system-call errors.  Damaged images
 * are in test_persist_errors.c.
 */
#include "persist_image.h"

/* ---- callbacks that fail or answer out of contract ---- */

enum { FAIL_NONE, FAIL_SUPER, FAIL_DESC, FAIL_BITMAP };

/* A memio whose reads of one kind of sector fail with `rc` (negative, or
 * positive: out of contract, which must read as -EIO). */
struct badio {
	struct memio m;
	int where, rc;
	uint32_t bpg;
	int write_rc, flush_rc; /* != 0: every write / flush returns it */
};

static int badio_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct badio *b = ctx;
	int kind = off < BGA_PF_HEADER ? FAIL_SUPER
		   : (off - BGA_PF_HEADER) % bga_pf_unit_bytes(b->bpg) == 0 ? FAIL_DESC
									  : FAIL_BITMAP;
	if (b->where == kind)
		return b->rc;
	return memio_read(&b->m, buf, len, off);
}

static int badio_write(void *ctx, const void *buf, size_t len, uint64_t off)
{
	struct badio *b = ctx;
	return b->write_rc ? b->write_rc : memio_write(&b->m, buf, len, off);
}

static int badio_flush(void *ctx)
{
	struct badio *b = ctx;
	return b->flush_rc ? b->flush_rc : memio_flush(&b->m);
}

static void badio_init(struct badio *b, struct bga_io *io, uint32_t bpg)
{
	struct bga_io unused;
	memio_init(&b->m, &unused);
	b->where = FAIL_NONE;
	b->rc = 0;
	b->bpg = bpg;
	b->write_rc = b->flush_rc = 0;
	*io = (struct bga_io){b, badio_read, badio_write, badio_flush};
}

Test(persist_io, read_errors_at_each_stage_of_a_load)
{
	const uint32_t bpg = 64;
	struct badio b;
	struct bga_io io;
	struct usedmap want;
	badio_init(&b, &io, bpg);
	struct bga_volume *vol = make_volume(bpg * 4096 * 2, bpg, 0);
	struct rng r = {99};
	struct bga_extent ext[128];
	size_t n = 0;
	churn(vol, &r, 200, 40, ext, 128, &n);
	cr_assert_eq(bga_store(vol, &io), 0);
	cr_assert_eq(usedmap_take(vol, &want), 0);
	static const int rcs[] = {-EIO, -ENXIO, 1, 7};
	for (size_t i = 0; i < sizeof(rcs) / sizeof(rcs[0]); i++) {
		int expect = rcs[i] > 0 ? -EIO : rcs[i];
		b.rc = rcs[i];
		b.where = FAIL_SUPER;
		load_fails(&io, NULL, 0, expect, "superblock read");
		b.where = FAIL_DESC;
		load_fails(&io, NULL, 0, expect, "descriptor read");
		b.where = FAIL_BITMAP;
		load_fails(&io, NULL, BGA_LOAD_STRICT, expect, "bitmap read at a strict load");
		/* a lazy load reads no bitmap: it succeeds, and the first read
		 * fails, quarantining (bga_prefetch returns the error) */
		struct bga_volume *back;
		cr_assert_eq(bga_load(&io, NULL, &back), 0);
		cr_assert_eq(bga_prefetch(back), expect);
		struct bga_stats st;
		cr_assert_eq(bga_stats(back, &st), 0);
		cr_assert_gt(st.groups_quarantined, 0);
		assert_only_quarantine(back, st.groups_quarantined, UINT64_MAX);
		bga_destroy(back);
		/* the store reads the superblocks first: their error is its own */
		b.where = FAIL_SUPER;
		cr_assert_eq(bga_store(vol, &io), expect, "a store whose superblock read fails");
	}
	b.where = FAIL_NONE;
	bga_destroy(load_expect(&io, BGA_LOAD_STRICT, &want));
	usedmap_free(&want);
	memio_free(&b.m);
	bga_destroy(vol);
}

Test(persist_io, positive_write_or_flush_results_are_eio)
{
	const uint32_t bpg = 64;
	struct badio b;
	struct bga_io io;
	badio_init(&b, &io, bpg);
	struct bga_volume *vol = make_volume(bpg * 40, bpg, 0);
	b.write_rc = 1;
	cr_assert_eq(bga_store(vol, &io), -EIO);
	b.write_rc = 0;
	b.flush_rc = 3;
	cr_assert_eq(bga_store(vol, &io), -EIO);
	b.flush_rc = 0;
	struct usedmap want;
	cr_assert_eq(usedmap_take(vol, &want), 0);
	cr_assert_eq(bga_store(vol, &io), 0);
	bga_destroy(load_expect(&io, 0, &want));
	usedmap_free(&want);
	memio_free(&b.m);
	bga_destroy(vol);
}

Test(persist_io, null_callbacks_refused)
{
	struct memio m;
	struct bga_io io;
	memio_init(&m, &io);
	struct bga_volume *vol = make_volume(64 * 8, 64, 0), *back;
	struct bga_io bad = io;
	bad.read = NULL;
	cr_assert_eq(bga_store(vol, &bad), -EINVAL);
	cr_assert_eq(bga_load(&bad, NULL, &back), -EINVAL);
	bad = io;
	bad.write = NULL;
	cr_assert_eq(bga_store(vol, &bad), -EINVAL);
	cr_assert_eq(bga_load(&bad, NULL, &back), -EINVAL);
	bad = io;
	bad.flush = NULL;
	cr_assert_eq(bga_load(&bad, NULL, &back), -EINVAL);
	cr_assert_eq(m.writes, 0, "nothing written");
	cr_assert_eq(bga_prefetch(NULL), -EINVAL);
	cr_assert_eq(bga_prefetch(vol), 0, "a volume never loaded has nothing to read");
	memio_free(&m);
	bga_destroy(vol);
}

/* ---- the store's recovery ---- */

/* Writes at superblock offsets fail while armed. */
struct sbfail {
	struct memio m;
	bool fail_sb;
};

static int sbfail_write(void *ctx, const void *buf, size_t len, uint64_t off)
{
	struct sbfail *s = ctx;
	if (s->fail_sb && off < BGA_PF_HEADER)
		return -EIO;
	return memio_write(&s->m, buf, len, off);
}

static int sbfail_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	return memio_read(&((struct sbfail *)ctx)->m, buf, len, off);
}

static int sbfail_flush(void *ctx)
{
	return memio_flush(&((struct sbfail *)ctx)->m);
}

/* The superblock write fails: the area still holds the previous store, and
 * the next store writes that superblock again before anything else. */
Test(persist_io, failed_superblock_write_is_written_again_first)
{
	struct sbfail s;
	struct bga_io unused, io;
	memio_init(&s.m, &unused);
	s.fail_sb = false;
	io = (struct bga_io){&s, sbfail_read, sbfail_write, sbfail_flush};
	struct bga_volume *vol = make_volume(64 * 64, 64, 0);
	struct rng r = {5};
	struct bga_extent ext[64];
	size_t n = 0;
	churn(vol, &r, 60, 30, ext, 64, &n);
	cr_assert_eq(bga_store(vol, &io), 0);
	struct usedmap s0, s1, s2;
	cr_assert_eq(usedmap_take(vol, &s0), 0);
	churn(vol, &r, 60, 30, ext, 64, &n);
	cr_assert_eq(usedmap_take(vol, &s1), 0);
	s.fail_sb = true;
	cr_assert_eq(bga_store(vol, &io), -EIO);
	s.fail_sb = false;
	bga_destroy(load_expect(&io, 0, &s0)); /* the data landed, not the superblock */
	/* the next store: its superblock write first (S1 commits), then its
	 * own writes; make one of those fail, and S1 is what the area holds */
	churn(vol, &r, 60, 30, ext, 64, &n);
	cr_assert_eq(usedmap_take(vol, &s2), 0);
	s.m.writes = 0;
	s.m.fail_write = 1; /* the recommit is write 0 */
	cr_assert_eq(bga_store(vol, &io), -EIO);
	s.m.fail_write = -1;
	bga_destroy(load_expect(&io, 0, &s1));
	cr_assert_eq(bga_store(vol, &io), 0);
	bga_destroy(load_expect(&io, 0, &s2));
	usedmap_free(&s0);
	usedmap_free(&s1);
	usedmap_free(&s2);
	memio_free(&s.m);
	bga_destroy(vol);
}

/* The superblock's flush fails: the store says so; the superblock may or
 * may not be durable, so the next store writes and flushes it again first,
 * and an error there is that store's error. */
Test(persist_io, failed_superblock_flush_is_redone_first)
{
	struct memio m;
	struct bga_io io;
	struct bga_volume *vol = make_volume(64 * 64, 64, 0);
	struct rng r = {6};
	struct bga_extent ext[64];
	size_t n = 0;
	churn(vol, &r, 60, 30, ext, 64, &n);
	memio_init(&m, &io);
	cr_assert_eq(bga_store(vol, &io), 0);
	churn(vol, &r, 60, 30, ext, 64, &n);
	struct usedmap s1, s2;
	cr_assert_eq(usedmap_take(vol, &s1), 0);
	m.flushes = 0;
	m.fail_flush = 1; /* the data flush passes, the superblock's fails */
	cr_assert_eq(bga_store(vol, &io), -EIO);
	m.fail_flush = -1;
	/* the superblock sector as it would be had its write been lost */
	unsigned char *sb = sb_in_force(&m);
	unsigned char landed[BGA_PF_SECTOR];
	memcpy(landed, sb, sizeof(landed));
	memset(sb, 0, BGA_PF_SECTOR);
	churn(vol, &r, 60, 30, ext, 64, &n);
	cr_assert_eq(usedmap_take(vol, &s2), 0);
	/* the rewrite fails: nothing else written */
	m.writes = 0;
	m.fail_write = 0;
	uint64_t before = m.bytes_written;
	cr_assert_eq(bga_store(vol, &io), -EIO);
	m.fail_write = -1;
	cr_assert_eq(m.bytes_written, before);
	/* its flush fails */
	m.flushes = 0;
	m.fail_flush = 0;
	cr_assert_eq(bga_store(vol, &io), -EIO);
	m.fail_flush = -1;
	cr_assert_eq(memcmp(sb, landed, BGA_PF_SECTOR), 0, "the same superblock written again");
	bga_destroy(load_expect(&io, 0, &s1));
	cr_assert_eq(bga_store(vol, &io), 0);
	bga_destroy(load_expect(&io, 0, &s2));
	usedmap_free(&s1);
	usedmap_free(&s2);
	memio_free(&m);
	bga_destroy(vol);
}

/* A wrapper read: same ctx and write/flush, another read function. */
static int memio_read_other(void *ctx, void *buf, size_t len, uint64_t off)
{
	return memio_read(ctx, buf, len, off);
}

/* Two volumes storing in turn into one area, and one volume through an io
 * that differs in one callback: each store finds an area it did not leave
 * and formats it, above the generation it found. */
/* memio's write and flush under other names: another io's callbacks. */
static int memio_write_other(void *ctx, const void *buf, size_t len, uint64_t off)
{
	return memio_write(ctx, buf, len, off);
}

static int memio_flush_other(void *ctx)
{
	return memio_flush(ctx);
}

Test(persist_io, another_writer_in_the_area_means_a_format)
{
	struct memio m;
	struct bga_io io;
	struct usedmap wa, wb;
	struct bga_volume *a = stored_volume(64 * 64, 64, 0, &m, &io, &wa);
	struct bga_volume *b = make_volume(64 * 64, 64, 0);
	struct rng r = {8};
	struct bga_extent ext[64];
	size_t n = 0;
	churn(b, &r, 80, 20, ext, 64, &n);
	cr_assert_eq(usedmap_take(b, &wb), 0);
	cr_assert_eq(bga_store(a, &io), 0); /* a's generation 2 */
	uint64_t gen_a = bga_pf_get64(sb_in_force(&m) + BGA_SB_GEN);
	cr_assert_eq(bga_store(b, &io), 0);
	uint64_t gen_b = bga_pf_get64(sb_in_force(&m) + BGA_SB_GEN);
	cr_assert_gt(gen_b, gen_a, "a format above the generation found");
	bga_destroy(load_expect(&io, 0, &wb));
	uint64_t before = m.bytes_written;
	cr_assert_eq(bga_store(a, &io), 0);
	cr_assert_gt(m.bytes_written - before, 64 * 64 / 8, "a wrote every group again");
	bga_destroy(load_expect(&io, 0, &wa));
	/* a unchanged, through the same ctx and another read: a format too */
	struct bga_io io2 = io;
	io2.read = memio_read_other;
	before = m.bytes_written;
	cr_assert_eq(bga_store(a, &io2), 0);
	cr_assert_gt(m.bytes_written - before, 2 * BGA_PF_SECTOR, "another io: every unit written");
	before = m.bytes_written;
	cr_assert_eq(bga_store(a, &io2), 0);
	cr_assert_eq(m.bytes_written - before, BGA_PF_SECTOR, "the same io again: only the superblock, not %llu bytes",
		     (unsigned long long)(m.bytes_written - before));
	bga_destroy(load_expect(&io, 0, &wa));
	/* the same ctx and read, another write, then another flush: each is
	 * another io, so each first store formats, and the next is the same */
	struct bga_io io3 = io2, io4;
	io3.write = memio_write_other;
	io4 = io3;
	io4.flush = memio_flush_other;
	const struct bga_io *next[] = {&io3, &io4};
	for (int i = 0; i < 2; i++) {
		before = m.bytes_written;
		cr_assert_eq(bga_store(a, next[i]), 0);
		cr_assert_gt(m.bytes_written - before, 2 * BGA_PF_SECTOR, "io %d: every unit written", i + 3);
		before = m.bytes_written;
		cr_assert_eq(bga_store(a, next[i]), 0);
		cr_assert_eq(m.bytes_written - before, BGA_PF_SECTOR, "io %d again: only the superblock", i + 3);
	}
	bga_destroy(load_expect(&io, 0, &wa));
	usedmap_free(&wa);
	usedmap_free(&wb);
	memio_free(&m);
	bga_destroy(a);
	bga_destroy(b);
}

/* ---- the store of a lazily loaded, grown or partly built volume ---- */

static bool chunk_present(struct bga_volume *vol, uint64_t c)
{
	return bga__chunk_get(vol, c) != NULL;
}

/* An incremental store of a lazily loaded volume counts its unread
 * chunks from their records (a wholly used group among them), and one
 * after a grow writes the new groups; the superblock's counts agree. */
Test(persist_io, store_counts_unread_chunks_and_grown_groups)
{
	const uint32_t bpg = 64;
	const uint64_t chunk = (uint64_t)bpg * 4096;
	struct bga_volume *vol = make_volume(2 * chunk, bpg, 0);
	struct bga_request req = {.goal = chunk + 5 * bpg, .min_len = bpg, .max_len = bpg, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0); /* a wholly used group in chunk 1 */
	req.goal = chunk + 9 * bpg + 3;
	req.min_len = req.max_len = 7;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	req.goal = 100;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	struct memio m;
	struct bga_io io;
	struct bga_volume *back = store_and_load(vol, &m, &io);
	cr_assert(!chunk_present(back, 1));
	cr_assert_eq(bga_free(back, 100, 7), 0); /* chunk 0 read, chunk 1 not */
	cr_assert(!chunk_present(back, 1));
	cr_assert_eq(bga_store(back, &io), 0);
	struct bga_pf_sb sb;
	cr_assert_eq(bga__pf_sb_decode(sb_in_force(&m), &sb, NULL), 0);
	cr_assert_eq(sb.free_blocks, bga_free_exact(back));
	cr_assert_eq(sb.groups_inited, 3, "groups 1, 4101 and 4105");
	cr_assert(!chunk_present(back, 1), "an incremental store reads nothing");
	/* grown by a chunk never touched, stored again incrementally */
	cr_assert_eq(bga_grow(back, 3 * chunk), 0);
	cr_assert_eq(bga_store(back, &io), 0);
	struct usedmap want;
	cr_assert_eq(usedmap_take(back, &want), 0);
	cr_assert_eq(bga__pf_sb_decode(sb_in_force(&m), &sb, NULL), 0);
	cr_assert_eq(sb.nblocks, 3 * chunk);
	cr_assert_eq(sb.free_blocks, bga_free_exact(back));
	struct bga_volume *again = load_expect(&io, 0, &want);
	cr_assert_eq(bga_free_exact(again), 3 * chunk - bpg - 7);
	bga_destroy(again);
	usedmap_free(&want);
	bga_destroy(back);
	memio_free(&m);
	bga_destroy(vol);
}

/* A chunk built in memory whose groups were never initialised, stored by a
 * format above generation 1: its records are all "never initialised" but
 * not the canonical ones, and the load leaves the chunk unbuilt and free. */
Test(persist_io, built_chunk_of_untouched_groups_loads_free)
{
	const uint32_t bpg = 64;
	const uint64_t chunk = (uint64_t)bpg * 4096;
	struct bga_volume *vol = make_volume(2 * chunk, bpg, 0);
	struct bga_request req = {.goal = 3, .min_len = 2, .max_len = 2, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	cr_assert_eq(bga_free(vol, chunk + 10, 1), -EINVAL, "a double free in an untouched chunk");
	if (!chunk_present(vol, 1))
		cr_assert_eq(bga__chunk_ensure(vol, 1) != NULL, true);
	struct memio m1, m2;
	struct bga_io io1, io2;
	memio_init(&m1, &io1);
	memio_init(&m2, &io2);
	cr_assert_eq(bga_store(vol, &io1), 0);
	cr_assert_eq(bga_store(vol, &io2), 0); /* a format at generation 2 */
	struct usedmap want;
	cr_assert_eq(usedmap_take(vol, &want), 0);
	struct bga_volume *back;
	cr_assert_eq(bga_load_ex(&io2, NULL, BGA_LOAD_PREFETCH, &back), 0);
	cr_assert(!chunk_present(back, 1), "nothing of chunk 1 to read");
	cr_assert_eq(bga_free_exact(back), 2 * chunk - 2);
	bga_destroy(back);
	bga_destroy(load_expect(&io2, BGA_LOAD_STRICT, &want));
	usedmap_free(&want);
	memio_free(&m1);
	memio_free(&m2);
	bga_destroy(vol);
}

/* ---- the file-backed io ---- */

Test(persist_io, file_io_system_call_errors)
{
	struct bga_io io;
	cr_assert_eq(bga_io_file_open("/tmp/x", (uint64_t)INT64_MAX + 1, 1, &io), -EINVAL);
	cr_assert_eq(bga_io_file_open("/tmp/x", 0, 1, NULL), -EINVAL);
	bga_io_file_close(NULL);
	memset(&io, 0, sizeof(io));
	bga_io_file_close(&io);
	struct bga_volume *vol = make_volume(64 * 64, 64, 0), *back;
	/* a full device: the write fails, and the store says how */
	if (bga_io_file_open("/dev/full", 0, 0, &io) == 0) {
		cr_assert_eq(bga_store(vol, &io), -ENOSPC);
		bga_io_file_close(&io);
	} else {
		cr_log_warn("no /dev/full: the write error is not tried");
	}
	/* a device that cannot sync: the flush fails */
	if (bga_io_file_open("/dev/null", 0, 0, &io) == 0) {
		cr_assert_eq(bga_store(vol, &io), -EINVAL, "fdatasync on /dev/null");
		/* it reads as an empty area */
		cr_assert_eq(bga_load(&io, NULL, &back), -ENODATA);
		bga_io_file_close(&io);
	} else {
		cr_log_warn("no /dev/null: the flush error is not tried");
	}
	/* a read the kernel refuses: an offset plus length past off_t */
	char path[] = "/tmp/bga-perr-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(bga_io_file_open(path, (uint64_t)INT64_MAX - 100, 0, &io), 0);
	int rc = bga_load(&io, NULL, &back);
	cr_assert(rc < 0 && rc != -EUCLEAN, "the read error itself: %d", rc);
	cr_assert(bga_store(vol, &io) < 0);
	bga_io_file_close(&io);
	unlink(path);
	bga_destroy(vol);
}


/* The area's superblocks erased since the volume's last store through
 * the same io: the store finds no image to build on and formats (bga_store:
 * "the first store to an area ... formats it"), writing as much as the
 * first store did, and the area loads the volume's state. */
Test(persist_io, a_store_over_erased_superblocks_formats)
{
	struct memio m;
	struct bga_io io;
	struct bga_volume *vol = make_volume(64 * 40, 64, 0);
	memio_init(&m, &io);
	cr_assert_eq(bga_store(vol, &io), 0);
	size_t format = m.bytes_written;
	struct bga_request req = {.goal = 100, .min_len = 1, .max_len = 1, .flags = BGA_EXACT_GOAL};
	struct bga_extent e;
	cr_assert_eq(bga_alloc(vol, &req, &e), 0);
	memset(m.buf, 0, 2 * BGA_PF_SECTOR);
	m.bytes_written = 0;
	cr_assert_eq(bga_store(vol, &io), 0);
	cr_assert_geq(m.bytes_written, format, "%llu bytes: not a format (%zu)", (unsigned long long)m.bytes_written,
		      format);
	struct usedmap want;
	cr_assert_eq(usedmap_take(vol, &want), 0);
	bga_destroy(load_expect(&io, 0, &want));
	usedmap_free(&want);
	memio_free(&m);
	bga_destroy(vol);
}

/* BGA_LOAD_PREFETCH with nothing left to read ahead: a strict load (every
 * bitmap read at once), or an image whose groups were never touched.
 * Either loads the stored state, and a bga_prefetch after it answers 0. */
Test(persist_io, prefetch_with_nothing_left_to_read)
{
	struct memio m;
	struct bga_io io;
	struct usedmap want;
	struct bga_volume *vol = stored_volume(64 * 40, 64, 0, &m, &io, &want);
	struct bga_volume *back = load_expect(&io, BGA_LOAD_STRICT | BGA_LOAD_PREFETCH, &want);
	cr_assert_eq(bga_prefetch(back), 0);
	bga_destroy(back);
	usedmap_free(&want);
	memio_free(&m);
	bga_destroy(vol);

	vol = make_volume(64 * 40, 64, 0);
	cr_assert_eq(bga_prefetch(vol), 0, "a volume never loaded has nothing to read");
	cr_assert_eq(bga_free_exact(vol), 64 * 40);
	memio_init(&m, &io);
	cr_assert_eq(bga_store(vol, &io), 0);
	cr_assert_eq(usedmap_take(vol, &want), 0);
	back = load_expect(&io, BGA_LOAD_PREFETCH, &want);
	cr_assert_eq(bga_free_exact(back), 64 * 40);
	cr_assert_eq(bga_prefetch(back), 0);
	bga_destroy(back);
	usedmap_free(&want);
	memio_free(&m);
	bga_destroy(vol);
}
