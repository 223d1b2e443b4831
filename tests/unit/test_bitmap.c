/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga_bitmap_* against a bit-by-bit reference, on random maps of random
 * sizes and densities, under every scan implementation this CPU can run.
 * Bits past nbits in the last word hold garbage throughout.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <bgalloc/bitmap.h>

#include "bitmap_impl.h"
#include "compiler.h"
#include "testutil.h"

#define SEED 0x6267616c6c6f63ULL /* "bgalloc" */

/* ---------------------------------------------------------------- */
/* The reference: one bit at a time, only ever below nbits. */

static bool ref_get(const uint64_t *m, uint64_t i)
{
	return m[i / 64] >> (i % 64) & 1;
}

static void ref_put(uint64_t *m, uint64_t i, bool v)
{
	if (v)
		m[i / 64] |= 1ULL << (i % 64);
	else
		m[i / 64] &= ~(1ULL << (i % 64));
}

static uint64_t ref_next(const uint64_t *m, uint64_t nbits, uint64_t from, bool v)
{
	for (uint64_t i = from; i < nbits; i++)
		if (ref_get(m, i) == v)
			return i;
	return nbits;
}

/* Clear bits starting at i, stopping at nbits. */
static uint64_t ref_zeros_from(const uint64_t *m, uint64_t nbits, uint64_t i)
{
	uint64_t n = 0;

	while (i + n < nbits && !ref_get(m, i + n))
		n++;
	return n;
}

static uint64_t ref_find_zero_run(const uint64_t *m, uint64_t nbits, uint64_t from, uint64_t min,
				  uint64_t max, uint64_t *len)
{
	if (min == 0 || min > max)
		return nbits;
	for (uint64_t s = from; s < nbits; s++) {
		uint64_t n = ref_zeros_from(m, nbits, s);

		if (n >= min) {
			*len = n < max ? n : max;
			return s;
		}
		s += n; /* every start inside this run has a shorter run */
	}
	return nbits;
}

static uint64_t ref_longest(const uint64_t *m, uint64_t nbits)
{
	uint64_t best = 0, cur = 0;

	for (uint64_t i = 0; i < nbits; i++) {
		cur = ref_get(m, i) ? 0 : cur + 1;
		if (cur > best)
			best = cur;
	}
	return best;
}

static uint64_t ref_run_at(const uint64_t *m, uint64_t nbits, uint64_t pos, uint64_t *start)
{
	uint64_t s = pos, e = pos;

	if (pos >= nbits || ref_get(m, pos))
		return 0;
	while (s > 0 && !ref_get(m, s - 1))
		s--;
	while (e < nbits && !ref_get(m, e))
		e++;
	*start = s;
	return e - s;
}

static uint64_t ref_popcount(const uint64_t *m, uint64_t from, uint64_t to)
{
	uint64_t c = 0;

	for (uint64_t i = from; i < to; i++)
		c += ref_get(m, i);
	return c;
}

static bool ref_all(const uint64_t *m, uint64_t start, uint64_t len, bool v)
{
	for (uint64_t i = start; i < start + len; i++)
		if (ref_get(m, i) != v)
			return false;
	return true;
}

static uint64_t ref_assign(uint64_t *m, uint64_t start, uint64_t len, bool v)
{
	uint64_t flipped = 0;

	for (uint64_t i = start; i < start + len; i++) {
		flipped += ref_get(m, i) != v;
		ref_put(m, i, v);
	}
	return flipped;
}

/* ---------------------------------------------------------------- */
/* Random maps. */

struct map {
	uint64_t *buf; /* allocation; the map starts `off` words in */
	uint64_t *w;
	uint64_t nbits;
	size_t nw, off;
};

static uint64_t pick_nbits(struct rng *r)
{
	switch (below(r, 8)) {
	case 0:
		return below(r, 130); /* 0, 1, 63, 64, 65, 127, 128, ... */
	case 1:
		return 32768 - 64 + below(r, 129); /* around one group */
	case 2:
		return 64 * (1 + below(r, 80)); /* whole words only */
	default:
		return below(r, 4000);
	}
}

/* Fill bits [0, nbits) by one of several shapes; the tail gets garbage. */
static void fill(struct rng *r, struct map *m)
{
	uint64_t nbits = m->nbits;
	unsigned shape = (unsigned)below(r, 7);

	memset(m->w, 0, m->nw * sizeof(uint64_t));
	if (shape <= 4) {
		/* Independent bits: all clear, sparse, half, dense, all set. */
		static const unsigned per1024[] = {0, 16, 512, 1008, 1024};

		for (uint64_t i = 0; i < nbits; i++)
			ref_put(m->w, i, below(r, 1024) < per1024[shape]);
	} else {
		/* Runs of random length, up to thousands of bits, so the bulk
		 * scans (16 words per step) are used and cut short. */
		bool v = below(r, 2);
		uint64_t i = 0;

		while (i < nbits) {
			uint64_t n = 1 + below(r, 1ULL << below(r, shape == 5 ? 13 : 7));

			for (uint64_t k = 0; k < n && i < nbits; k++, i++)
				ref_put(m->w, i, v);
			v = !v;
		}
	}
	if (nbits % 64) {
		uint64_t tail = ~0ULL << (nbits % 64);
		uint64_t g;

		switch (below(r, 3)) {
		case 0:
			g = ~0ULL;
			break;
		case 1:
			g = 0;
			break;
		default:
			g = rnd(r);
		}
		m->w[m->nw - 1] = (m->w[m->nw - 1] & ~tail) | (g & tail);
	}
}

static void map_new(struct rng *r, struct map *m, uint64_t nbits)
{
	m->nbits = nbits;
	m->nw = BGA_BITMAP_WORDS(nbits);
	/* Start the map at every 8-byte offset within a 32-byte vector. */
	m->off = below(r, 4);
	m->buf = malloc((m->off + m->nw + 1) * sizeof(uint64_t));
	cr_assert(m->buf);
	m->w = m->buf + m->off;
	fill(r, m);
}

static void map_free(struct map *m)
{
	free(m->buf);
}

/* A position to search from: often near words' edges and the map's end. */
static uint64_t pick_pos(struct rng *r, uint64_t nbits)
{
	switch (below(r, 6)) {
	case 0:
		return nbits + below(r, 3); /* at or past the end */
	case 1:
		return nbits > 0 ? nbits - 1 - below(r, nbits < 70 ? nbits : 70) : 0;
	case 2:
		return 64 * below(r, BGA_BITMAP_WORDS(nbits) + 1) + below(r, 2) - (nbits ? 1 : 0);
	default:
		return below(r, nbits + 1);
	}
}

/* A range inside [0, nbits), possibly empty. */
static void pick_range(struct rng *r, uint64_t nbits, uint64_t *start, uint64_t *len)
{
	if (nbits == 0) {
		*start = *len = 0;
		return;
	}
	*start = below(r, nbits);
	switch (below(r, 3)) {
	case 0:
		*len = below(r, 1 + BGA_MIN(nbits - *start, 70));
		break;
	default:
		*len = below(r, 1 + nbits - *start);
	}
}

static int use_impl(const char *name)
{
	int err = bga__bitmap_use_impl(name);

	if (err == -ENOTSUP)
		cr_skip_test("this CPU cannot run the %s scan", name);
	cr_assert_eq(err, 0, "bga__bitmap_use_impl(%s) = %d", name, err);
	cr_assert_str_eq(bga_bitmap_impl(), name);
	return err;
}

/* ---------------------------------------------------------------- */

static void check_searches(struct rng *r, const struct map *m, unsigned it)
{
	const uint64_t *w = m->w;
	uint64_t nbits = m->nbits;

	cr_assert_eq(bga_bitmap_longest_zero_run(w, nbits), ref_longest(w, nbits),
		     "it %u nbits %lu: longest_zero_run", it, (unsigned long)nbits);
	for (int q = 0; q < 8; q++) {
		uint64_t from = pick_pos(r, nbits), got, want, glen = 7777, wlen = 7777, gs = 1, ws = 1;
		uint64_t min, max;

		got = bga_bitmap_next_zero(w, nbits, from);
		want = ref_next(w, nbits, from, false);
		cr_assert_eq(got, want, "it %u nbits %lu: next_zero(%lu) = %lu, want %lu", it,
			     (unsigned long)nbits, (unsigned long)from, (unsigned long)got,
			     (unsigned long)want);
		got = bga_bitmap_next_set(w, nbits, from);
		want = ref_next(w, nbits, from, true);
		cr_assert_eq(got, want, "it %u nbits %lu: next_set(%lu) = %lu, want %lu", it,
			     (unsigned long)nbits, (unsigned long)from, (unsigned long)got,
			     (unsigned long)want);

		got = bga_bitmap_zero_run_at(w, nbits, from, &gs);
		want = ref_run_at(w, nbits, from, &ws);
		cr_assert_eq(got, want, "it %u nbits %lu: zero_run_at(%lu) = %lu, want %lu", it,
			     (unsigned long)nbits, (unsigned long)from, (unsigned long)got,
			     (unsigned long)want);
		cr_assert_eq(gs, ws, "it %u: zero_run_at(%lu) start %lu, want %lu", it,
			     (unsigned long)from, (unsigned long)gs, (unsigned long)ws);
		cr_assert_eq(bga_bitmap_zero_run_at(w, nbits, from, NULL), want);

		/* min: mostly small (allocations), sometimes long; max around it,
		 * sometimes below it (no answer) or unbounded. */
		min = below(r, 3) ? below(r, 20) : below(r, 2000);
		switch (below(r, 4)) {
		case 0:
			max = UINT64_MAX;
			break;
		case 1:
			max = min > 0 ? min - below(r, 2) : 0;
			break;
		default:
			max = min + below(r, 300);
		}
		got = bga_bitmap_find_zero_run(w, nbits, from, min, max, &glen);
		want = ref_find_zero_run(w, nbits, from, min, max, &wlen);
		cr_assert_eq(got, want,
			     "it %u nbits %lu: find_zero_run(from %lu, min %lu, max %lu) = %lu, want %lu",
			     it, (unsigned long)nbits, (unsigned long)from, (unsigned long)min,
			     (unsigned long)max, (unsigned long)got, (unsigned long)want);
		cr_assert_eq(glen, wlen, "it %u: find_zero_run len %lu, want %lu", it,
			     (unsigned long)glen, (unsigned long)wlen);
	}
}

static void check_ranges(struct rng *r, struct map *m, unsigned it)
{
	uint64_t *ref = malloc((m->nw + 1) * sizeof(uint64_t)), *un = malloc((m->nw + 1) * sizeof(uint64_t));

	cr_assert(ref && un);
	for (int q = 0; q < 8; q++) {
		uint64_t start, len, got, want;

		pick_range(r, m->nbits, &start, &len);
		cr_assert_eq(bga_bitmap_popcount(m->w, start, start + len),
			     ref_popcount(m->w, start, start + len), "it %u: popcount [%lu, +%lu)",
			     it, (unsigned long)start, (unsigned long)len);
		if (len) /* from > to is an empty range */
			cr_assert_eq(bga_bitmap_popcount(m->w, start + len, start), 0);
		cr_assert_eq(bga_bitmap_range_is_clear(m->w, start, len),
			     ref_all(m->w, start, len, false), "it %u: range_is_clear [%lu, +%lu)",
			     it, (unsigned long)start, (unsigned long)len);
		cr_assert_eq(bga_bitmap_range_is_set(m->w, start, len),
			     ref_all(m->w, start, len, true), "it %u: range_is_set [%lu, +%lu)", it,
			     (unsigned long)start, (unsigned long)len);

		/* Set or clear, then compare every word, the garbage tail and
		 * the guard word after the map included. */
		bool set = below(r, 2);

		m->w[m->nw] = 0x5a5a5a5a5a5a5a5aULL;
		memcpy(ref, m->w, (m->nw + 1) * sizeof(uint64_t));
		want = ref_assign(ref, start, len, set);
		/* The allocator's uncounted write (bitmap_impl.h) writes the
		 * same bits, on a copy. */
		memcpy(un, m->w, (m->nw + 1) * sizeof(uint64_t));
		bga__bitmap_write_range(un, start, len, set);
		cr_assert_eq(memcmp(ref, un, (m->nw + 1) * sizeof(uint64_t)), 0,
			     "it %u: write_range(%s) [%lu, +%lu) wrote the wrong bits", it, set ? "set" : "clear",
			     (unsigned long)start, (unsigned long)len);
		got = set ? bga_bitmap_set_range(m->w, start, len)
			  : bga_bitmap_clear_range(m->w, start, len);
		cr_assert_eq(got, want, "it %u: %s_range [%lu, +%lu) flipped %lu, want %lu", it,
			     set ? "set" : "clear", (unsigned long)start, (unsigned long)len,
			     (unsigned long)got, (unsigned long)want);
		cr_assert_eq(memcmp(ref, m->w, (m->nw + 1) * sizeof(uint64_t)), 0,
			     "it %u: %s_range [%lu, +%lu) wrote the wrong bits", it,
			     set ? "set" : "clear", (unsigned long)start, (unsigned long)len);
		/* Doing it again flips nothing: a double allocation or free. */
		got = set ? bga_bitmap_set_range(m->w, start, len)
			  : bga_bitmap_clear_range(m->w, start, len);
		cr_assert_eq(got, 0, "it %u: repeated %s_range flipped %lu", it,
			     set ? "set" : "clear", (unsigned long)got);
	}
	free(un);
	free(ref);
}

static void random_suite(const char *impl)
{
	struct rng r = {SEED};

	use_impl(impl);
	for (unsigned it = 0; it < 4000; it++) {
		struct map m;

		map_new(&r, &m, pick_nbits(&r));
		check_searches(&r, &m, it);
		check_ranges(&r, &m, it);
		/* The range operations changed the map: search it again. */
		check_searches(&r, &m, it);
		map_free(&m);
	}
}

Test(bitmap_random, scalar)
{
	random_suite("scalar");
}

Test(bitmap_random, avx2)
{
	random_suite("avx2");
}

/* ---------------------------------------------------------------- */
/* Edges, under each implementation. */

static void edge_empty(void)
{
	uint64_t w[1] = {0}, len = 42, s = 42;

	cr_assert_eq(bga_bitmap_next_zero(w, 0, 0), 0);
	cr_assert_eq(bga_bitmap_next_set(w, 0, 0), 0);
	cr_assert_eq(bga_bitmap_find_zero_run(w, 0, 0, 1, 1, &len), 0);
	cr_assert_eq(len, 42, "len written on failure");
	cr_assert_eq(bga_bitmap_longest_zero_run(w, 0), 0);
	cr_assert_eq(bga_bitmap_zero_run_at(w, 0, 0, &s), 0);
	cr_assert_eq(s, 42, "start written on failure");
	cr_assert_eq(bga_bitmap_popcount(w, 0, 0), 0);
	cr_assert(bga_bitmap_range_is_clear(w, 0, 0));
	cr_assert(bga_bitmap_range_is_set(w, 0, 0));
	cr_assert_eq(bga_bitmap_set_range(w, 0, 0), 0);
	cr_assert_eq(w[0], 0);
	/* nbits 0 with garbage: nothing is ever reported. */
	w[0] = 0x1234;
	cr_assert_eq(bga_bitmap_next_set(w, 0, 0), 0);
	cr_assert_eq(bga_bitmap_next_zero(w, 0, 0), 0);
}

static const uint64_t sizes[] = {1, 63, 64, 65, 127, 128, 129, 1000, 1024, 4095, 32767, 32768,
				 32769, 40000};

static void edge_all_set_and_last_bit(void)
{
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint64_t n = sizes[k], nw = BGA_BITMAP_WORDS(n), len = 42, s = 42;
		uint64_t *w = malloc(nw * sizeof(uint64_t));

		/* Garbage zeros past nbits must not look free. */
		memset(w, 0xff, nw * sizeof(uint64_t));
		if (n % 64)
			w[nw - 1] &= ~(1ULL << 63);
		cr_assert_eq(bga_bitmap_next_zero(w, n, 0), n, "n %lu", (unsigned long)n);
		cr_assert_eq(bga_bitmap_next_set(w, n, 0), 0);
		cr_assert_eq(bga_bitmap_next_set(w, n, n - 1), n - 1);
		cr_assert_eq(bga_bitmap_find_zero_run(w, n, 0, 1, UINT64_MAX, &len), n);
		cr_assert_eq(bga_bitmap_longest_zero_run(w, n), 0);
		cr_assert_eq(bga_bitmap_zero_run_at(w, n, n - 1, &s), 0);
		cr_assert_eq(bga_bitmap_popcount(w, 0, n), n);
		cr_assert(bga_bitmap_range_is_set(w, 0, n));
		cr_assert(!bga_bitmap_range_is_clear(w, 0, n));
		cr_assert_eq(bga_bitmap_set_range(w, 0, n), 0, "double allocation not caught");

		/* Free the last bit only. */
		cr_assert_eq(bga_bitmap_clear_range(w, n - 1, 1), 1);
		cr_assert_eq(bga_bitmap_clear_range(w, n - 1, 1), 0, "double free not caught");
		cr_assert_eq(bga_bitmap_next_zero(w, n, 0), n - 1, "n %lu", (unsigned long)n);
		cr_assert_eq(bga_bitmap_next_zero(w, n, n - 1), n - 1);
		cr_assert_eq(bga_bitmap_find_zero_run(w, n, 0, 1, UINT64_MAX, &len), n - 1);
		cr_assert_eq(len, 1);
		cr_assert_eq(bga_bitmap_find_zero_run(w, n, 0, 2, 9, &len), n);
		cr_assert_eq(bga_bitmap_longest_zero_run(w, n), 1);
		cr_assert_eq(bga_bitmap_zero_run_at(w, n, n - 1, &s), 1);
		cr_assert_eq(s, n - 1);
		cr_assert_eq(bga_bitmap_popcount(w, 0, n), n - 1);
		cr_assert(!bga_bitmap_range_is_set(w, 0, n));
		cr_assert(bga_bitmap_range_is_set(w, 0, n - 1));
		cr_assert(bga_bitmap_range_is_clear(w, n - 1, 1));
		cr_assert_eq(bga_bitmap_set_range(w, 0, n), 1, "partial double allocation");
		free(w);
	}
}

static void edge_all_clear(void)
{
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint64_t n = sizes[k], nw = BGA_BITMAP_WORDS(n), len = 42, s = 42;
		uint64_t *w = calloc(nw, sizeof(uint64_t));

		/* Garbage ones past nbits must not look used. */
		if (n % 64)
			w[nw - 1] |= 1ULL << 63;
		cr_assert_eq(bga_bitmap_next_set(w, n, 0), n, "n %lu", (unsigned long)n);
		cr_assert_eq(bga_bitmap_next_zero(w, n, 0), 0);
		cr_assert_eq(bga_bitmap_longest_zero_run(w, n), n);
		cr_assert_eq(bga_bitmap_zero_run_at(w, n, n - 1, &s), n);
		cr_assert_eq(s, 0);
		cr_assert_eq(bga_bitmap_zero_run_at(w, n, n / 2, NULL), n);
		cr_assert_eq(bga_bitmap_popcount(w, 0, n), 0);
		cr_assert(bga_bitmap_range_is_clear(w, 0, n));
		cr_assert_eq(bga_bitmap_clear_range(w, 0, n), 0, "double free not caught");

		/* The whole map, from a position, unbounded and bounded. */
		cr_assert_eq(bga_bitmap_find_zero_run(w, n, 0, n, UINT64_MAX, &len), 0);
		cr_assert_eq(len, n);
		cr_assert_eq(bga_bitmap_find_zero_run(w, n, n - 1, 1, UINT64_MAX, &len), n - 1);
		cr_assert_eq(len, 1);
		cr_assert_eq(bga_bitmap_find_zero_run(w, n, 0, 1, 5, &len), 0);
		cr_assert_eq(len, BGA_MIN(5, n));
		len = 42;
		cr_assert_eq(bga_bitmap_find_zero_run(w, n, 1, n, UINT64_MAX, &len), n);
		cr_assert_eq(len, 42);
		cr_assert_eq(bga_bitmap_set_range(w, 0, n), n);
		cr_assert_eq(bga_bitmap_popcount(w, 0, n), n);
		free(w);
	}
}

static void edge_from_past_end_and_bad_min(void)
{
	uint64_t w[3] = {0, 0, 0}, len = 42;

	for (uint64_t n = 1; n <= 192; n++) {
		uint64_t froms[] = {n, n + 1, n + 64, UINT64_MAX};

		for (size_t k = 0; k < 4; k++) {
			cr_assert_eq(bga_bitmap_next_zero(w, n, froms[k]), n);
			cr_assert_eq(bga_bitmap_next_set(w, n, froms[k]), n);
			cr_assert_eq(bga_bitmap_find_zero_run(w, n, froms[k], 1, 1, &len), n);
			cr_assert_eq(bga_bitmap_zero_run_at(w, n, froms[k], NULL), 0);
		}
		/* min == 0 and min > max find nothing, though every bit is free. */
		cr_assert_eq(bga_bitmap_find_zero_run(w, n, 0, 0, 10, &len), n);
		cr_assert_eq(bga_bitmap_find_zero_run(w, n, 0, 0, 0, &len), n);
		cr_assert_eq(bga_bitmap_find_zero_run(w, n, 0, 2, 1, &len), n);
		cr_assert_eq(len, 42);
		/* A run longer than the map is never found. */
		cr_assert_eq(bga_bitmap_find_zero_run(w, n, 0, n + 1, UINT64_MAX, &len), n);
		cr_assert_eq(len, 42);
	}
}

static void edge_crossing_words(void)
{
	/* A run that straddles the word boundary at 64 and 128. */
	uint64_t w[3] = {~0ULL >> 4, 0, ~0ULL << 3}, len = 0, s = 0;

	cr_assert_eq(bga_bitmap_find_zero_run(w, 192, 0, 70, UINT64_MAX, &len), 60);
	cr_assert_eq(len, 4 + 64 + 3);
	cr_assert_eq(bga_bitmap_zero_run_at(w, 192, 100, &s), 71);
	cr_assert_eq(s, 60);
	cr_assert_eq(bga_bitmap_set_range(w, 62, 68), 68);
	cr_assert_eq(bga_bitmap_clear_range(w, 61, 70), 68, "bits 61 and 130 were already clear");
	cr_assert_eq(w[0], ~0ULL >> 4);
	cr_assert_eq(w[1], 0);
	cr_assert_eq(w[2], ~0ULL << 3);
}

static void edges(const char *impl)
{
	use_impl(impl);
	edge_empty();
	edge_all_set_and_last_bit();
	edge_all_clear();
	edge_from_past_end_and_bad_min();
	edge_crossing_words();
}

Test(bitmap_edges, scalar)
{
	edges("scalar");
}

Test(bitmap_edges, avx2)
{
	edges("avx2");
}

Test(bitmap_impl, choice)
{
	cr_assert_eq(bga__bitmap_use_impl("no-such-scan"), -EINVAL);
	cr_assert_eq(bga__bitmap_use_impl("scalar"), 0);
	cr_assert_str_eq(bga_bitmap_impl(), "scalar");
	cr_assert_eq(bga__bitmap_use_impl("no-such-scan"), -EINVAL);
	cr_assert_str_eq(bga_bitmap_impl(), "scalar", "a failed switch changed the choice");
	cr_assert_eq(bga__bitmap_use_impl(NULL), 0);
#if defined(__x86_64__)
	__builtin_cpu_init();
	cr_assert_str_eq(bga_bitmap_impl(), __builtin_cpu_supports("avx2") ? "avx2" : "scalar");
#else
	cr_assert_str_eq(bga_bitmap_impl(), "scalar");
#endif
}
