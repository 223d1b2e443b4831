/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bit search over 64-bit words.  Every public function answers from the
 * word that holds its starting position when it can, inline and without an
 * indirect call: that is the allocator's common case (a free bit near the
 * goal).  Only when whole words must be skipped does it go through the
 * bulk-scan table, chosen once per process for the CPU.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include <bgalloc/bitmap.h>

#include "bitmap_impl.h"
#include "compiler.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BGA_HAVE_AVX2_IMPL 1
#include <immintrin.h>
#endif

#define ALL_ONES (~(uint64_t)0)

/*
 * The bulk scans, over whole words only; the callers mask partial words.
 * skip_ones/skip_zeros: first index in [i, n) whose word is not all ones /
 * not all zeros, or n.  rskip_zeros: c in [0, n] such that map[c..n) are all
 * zero and c == 0 or map[c - 1] != 0.  popcount: set bits in map[0, n).
 */
struct bitmap_ops {
	const char *name;
	size_t (*skip_ones)(const uint64_t *map, size_t i, size_t n);
	size_t (*skip_zeros)(const uint64_t *map, size_t i, size_t n);
	size_t (*rskip_zeros)(const uint64_t *map, size_t n);
	uint64_t (*popcount)(const uint64_t *map, size_t n);
};

static inline unsigned pop64(uint64_t x)
{
#ifdef __POPCNT__
	return (unsigned)__builtin_popcountll(x);
#else
	/*
	 * Baseline x86-64 has no popcnt instruction and __builtin_popcountll
	 * would become a call into libgcc on the single-word hot path.
	 */
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (unsigned)((x * 0x0101010101010101ULL) >> 56);
#endif
}

/* Bits [0, n) for 1 <= n <= 64. */
static inline uint64_t low_mask(unsigned n)
{
	return ALL_ONES >> (64 - n);
}

/* ------------------------------------------------------------------ */
/* Scalar bulk scans.  Four words are tested per branch: one AND chain
 * instead of four compare-and-branch pairs. */

static size_t scalar_skip_ones(const uint64_t *map, size_t i, size_t n)
{
	for (; i + 4 <= n; i += 4)
		if ((map[i] & map[i + 1] & map[i + 2] & map[i + 3]) != ALL_ONES)
			break;
	for (; i < n; i++)
		if (map[i] != ALL_ONES)
			return i;
	return n;
}

static size_t scalar_skip_zeros(const uint64_t *map, size_t i, size_t n)
{
	for (; i + 4 <= n; i += 4)
		if ((map[i] | map[i + 1] | map[i + 2] | map[i + 3]) != 0)
			break;
	for (; i < n; i++)
		if (map[i] != 0)
			return i;
	return n;
}

static size_t scalar_rskip_zeros(const uint64_t *map, size_t n)
{
	for (; n >= 4; n -= 4)
		if ((map[n - 1] | map[n - 2] | map[n - 3] | map[n - 4]) != 0)
			break;
	for (; n > 0; n--)
		if (map[n - 1] != 0)
			return n;
	return 0;
}

static uint64_t scalar_popcount(const uint64_t *map, size_t n)
{
	uint64_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += pop64(map[i]);
	return c;
}

static const struct bitmap_ops scalar_ops = {
	.name = "scalar",
	.skip_ones = scalar_skip_ones,
	.skip_zeros = scalar_skip_zeros,
	.rskip_zeros = scalar_rskip_zeros,
	.popcount = scalar_popcount,
};

/* ------------------------------------------------------------------ */
#ifdef BGA_HAVE_AVX2_IMPL
/*
 * AVX2 bulk scans: 16 words (two cache lines) per branch, then 4, then
 * single words.  Single words are taken first up to a 32-byte boundary:
 * the scan starts one word past the caller's position, and with loads
 * left at that offset half of them would split a cache line
 * (BENCHMARKS.md#bit-search).
 */
#define AVX2_FN __attribute__((target("avx2")))

AVX2_FN static inline __m256i ld(const uint64_t *p)
{
	return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

AVX2_FN static size_t avx2_skip_ones(const uint64_t *map, size_t i, size_t n)
{
	const __m256i ones = _mm256_set1_epi64x(-1);

	for (; i < n && ((uintptr_t)(map + i) & 31); i++)
		if (map[i] != ALL_ONES)
			return i;
	for (; i + 16 <= n; i += 16) {
		__m256i a = _mm256_and_si256(ld(map + i), ld(map + i + 4));
		__m256i b = _mm256_and_si256(ld(map + i + 8), ld(map + i + 12));

		if (!_mm256_testc_si256(_mm256_and_si256(a, b), ones))
			break;
	}
	for (; i + 4 <= n; i += 4)
		if (!_mm256_testc_si256(ld(map + i), ones))
			break;
	for (; i < n; i++)
		if (map[i] != ALL_ONES)
			return i;
	return n;
}

AVX2_FN static size_t avx2_skip_zeros(const uint64_t *map, size_t i, size_t n)
{
	for (; i < n && ((uintptr_t)(map + i) & 31); i++)
		if (map[i] != 0)
			return i;
	for (; i + 16 <= n; i += 16) {
		__m256i a = _mm256_or_si256(ld(map + i), ld(map + i + 4));
		__m256i b = _mm256_or_si256(ld(map + i + 8), ld(map + i + 12));
		__m256i v = _mm256_or_si256(a, b);

		if (!_mm256_testz_si256(v, v))
			break;
	}
	for (; i + 4 <= n; i += 4) {
		__m256i v = ld(map + i);

		if (!_mm256_testz_si256(v, v))
			break;
	}
	for (; i < n; i++)
		if (map[i] != 0)
			return i;
	return n;
}

AVX2_FN static size_t avx2_rskip_zeros(const uint64_t *map, size_t n)
{
	for (; n > 0 && ((uintptr_t)(map + n) & 31); n--)
		if (map[n - 1] != 0)
			return n;
	for (; n >= 16; n -= 16) {
		__m256i a = _mm256_or_si256(ld(map + n - 4), ld(map + n - 8));
		__m256i b = _mm256_or_si256(ld(map + n - 12), ld(map + n - 16));
		__m256i v = _mm256_or_si256(a, b);

		if (!_mm256_testz_si256(v, v))
			break;
	}
	for (; n >= 4; n -= 4) {
		__m256i v = ld(map + n - 4);

		if (!_mm256_testz_si256(v, v))
			break;
	}
	for (; n > 0; n--)
		if (map[n - 1] != 0)
			return n;
	return 0;
}

/*
 * Nibble-table popcount (vpshufb, then vpsadbw into 64-bit lanes): it needs
 * no popcnt instruction and counts 4 words per step where a popcnt loop
 * counts one.
 */
AVX2_FN static uint64_t avx2_popcount(const uint64_t *map, size_t n)
{
	const __m256i table = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
					       0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
	const __m256i nib = _mm256_set1_epi8(0x0f);
	__m256i acc = _mm256_setzero_si256();
	uint64_t c = 0;
	size_t i = 0;

	for (; i < n && ((uintptr_t)(map + i) & 31); i++)
		c += pop64(map[i]);
	for (; i + 4 <= n; i += 4) {
		__m256i v = ld(map + i);
		__m256i lo = _mm256_shuffle_epi8(table, _mm256_and_si256(v, nib));
		__m256i hi = _mm256_shuffle_epi8(table,
						 _mm256_and_si256(_mm256_srli_epi16(v, 4), nib));

		acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_add_epi8(lo, hi),
							    _mm256_setzero_si256()));
	}
	c += (uint64_t)_mm256_extract_epi64(acc, 0) + (uint64_t)_mm256_extract_epi64(acc, 1) +
	    (uint64_t)_mm256_extract_epi64(acc, 2) + (uint64_t)_mm256_extract_epi64(acc, 3);
	for (; i < n; i++)
		c += pop64(map[i]);
	return c;
}

static const struct bitmap_ops avx2_ops = {
	.name = "avx2",
	.skip_ones = avx2_skip_ones,
	.skip_zeros = avx2_skip_zeros,
	.rskip_zeros = avx2_rskip_zeros,
	.popcount = avx2_popcount,
};

static bool cpu_has_avx2(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2");
}
#endif /* BGA_HAVE_AVX2_IMPL */

/* ------------------------------------------------------------------ */
/*
 * The choice, made on first use.  A NULL pointer means "not chosen yet";
 * two threads racing to choose store the same table.
 *
 * AVX2 is chosen whenever the CPU has it, on a measurement of both over
 * whole groups (BENCHMARKS.md#bit-search); a search answered in its
 * first word never reaches the table.
 * "scalar" is the best the compiler gives for plain C: gcc 12 does not
 * vectorise a loop with an early exit, so it stays one 4-word AND chain per
 * branch; the intrinsics loop tests 16 words per branch.
 */
static _Atomic(const struct bitmap_ops *) cur_ops;

static const struct bitmap_ops *ops_best(void)
{
#ifdef BGA_HAVE_AVX2_IMPL
	if (cpu_has_avx2())
		return &avx2_ops;
#endif
	return &scalar_ops;
}

__attribute__((noinline, cold)) static const struct bitmap_ops *ops_resolve(void)
{
	const struct bitmap_ops *o = ops_best();

	atomic_store_explicit(&cur_ops, o, memory_order_relaxed);
	return o;
}

static inline const struct bitmap_ops *ops(void)
{
	const struct bitmap_ops *o = atomic_load_explicit(&cur_ops, memory_order_relaxed);

	if (bga_unlikely(!o))
		o = ops_resolve();
	return o;
}

int bga__bitmap_use_impl(const char *name)
{
	const struct bitmap_ops *o;

	if (!name) {
		o = ops_best();
	} else if (!strcmp(name, "scalar")) {
		o = &scalar_ops;
	} else if (!strcmp(name, "avx2")) {
#ifdef BGA_HAVE_AVX2_IMPL
		if (!cpu_has_avx2())
			return -ENOTSUP;
		o = &avx2_ops;
#else
		return -ENOTSUP;
#endif
	} else {
		return -EINVAL;
	}
	atomic_store_explicit(&cur_ops, o, memory_order_relaxed);
	return 0;
}

const char *bga_bitmap_impl(void)
{
	return ops()->name;
}

/* ------------------------------------------------------------------ */
/* Searches.  Results in the last word can land at or past nbits when the
 * tail holds garbage; they are clamped to nbits ("none"). */

static inline uint64_t next_zero(const uint64_t *map, uint64_t nbits, uint64_t from)
{
	size_t i, nw;
	uint64_t w, r;

	if (from >= nbits)
		return nbits;
	i = from / 64;
	w = ~map[i] & (ALL_ONES << (from % 64));
	if (bga_likely(w))
		goto found;
	nw = BGA_BITMAP_WORDS(nbits);
	i = ops()->skip_ones(map, i + 1, nw);
	if (i == nw)
		return nbits;
	w = ~map[i];
found:
	r = (uint64_t)i * 64 + (unsigned)__builtin_ctzll(w);
	return r < nbits ? r : nbits;
}

static inline uint64_t next_set(const uint64_t *map, uint64_t nbits, uint64_t from)
{
	size_t i, nw;
	uint64_t w, r;

	if (from >= nbits)
		return nbits;
	i = from / 64;
	w = map[i] & (ALL_ONES << (from % 64));
	if (bga_likely(w))
		goto found;
	nw = BGA_BITMAP_WORDS(nbits);
	i = ops()->skip_zeros(map, i + 1, nw);
	if (i == nw)
		return nbits;
	w = map[i];
found:
	r = (uint64_t)i * 64 + (unsigned)__builtin_ctzll(w);
	return r < nbits ? r : nbits;
}

/* Last set bit below `pos`, or UINT64_MAX when [0, pos) is all clear. */
static inline uint64_t prev_set(const uint64_t *map, uint64_t pos)
{
	size_t i;
	uint64_t w;

	if (pos == 0)
		return UINT64_MAX;
	i = (pos - 1) / 64;
	w = map[i] & low_mask((unsigned)((pos - 1) % 64) + 1);
	if (bga_likely(w))
		goto found;
	i = ops()->rskip_zeros(map, i);
	if (i == 0)
		return UINT64_MAX;
	i--;
	w = map[i];
found:
	return (uint64_t)i * 64 + 63 - (unsigned)__builtin_clzll(w);
}

uint64_t bga_bitmap_next_zero(const uint64_t *map, uint64_t nbits, uint64_t from)
{
	BGA_ASSERT(map || nbits == 0);
	return next_zero(map, nbits, from);
}

uint64_t bga_bitmap_next_set(const uint64_t *map, uint64_t nbits, uint64_t from)
{
	BGA_ASSERT(map || nbits == 0);
	return next_set(map, nbits, from);
}

uint64_t bga_bitmap_find_zero_run(const uint64_t *map, uint64_t nbits, uint64_t from,
				  uint64_t min, uint64_t max, uint64_t *len)
{
	BGA_ASSERT(map || nbits == 0);
	BGA_ASSERT(len);
	if (bga_unlikely(min == 0 || min > max))
		return nbits;
	while (from < nbits) {
		uint64_t start = next_zero(map, nbits, from);
		uint64_t limit, end;

		if (start >= nbits || nbits - start < min)
			break;
		/* Searching for the end only up to start + max bounds the
		 * work by what the caller can take, not by the run. */
		limit = nbits - start > max ? start + max : nbits;
		end = next_set(map, limit, start);
		if (end - start >= min) {
			*len = end - start;
			return start;
		}
		from = end + 1;
	}
	return nbits;
}

uint64_t bga_bitmap_longest_zero_run(const uint64_t *map, uint64_t nbits)
{
	uint64_t best = 0, pos = 0;

	BGA_ASSERT(map || nbits == 0);
	/* Stop once no later run could beat the best one. */
	while (pos < nbits && nbits - pos > best) {
		uint64_t start = next_zero(map, nbits, pos), end;

		if (start >= nbits)
			break;
		end = next_set(map, nbits, start);
		if (end - start > best)
			best = end - start;
		pos = end + 1;
	}
	return best;
}

uint64_t bga_bitmap_zero_run_at(const uint64_t *map, uint64_t nbits, uint64_t pos,
				uint64_t *start)
{
	uint64_t s, e;

	BGA_ASSERT(map || nbits == 0);
	if (pos >= nbits || (map[pos / 64] >> (pos % 64) & 1))
		return 0;
	s = prev_set(map, pos) + 1; /* UINT64_MAX + 1 == 0: clear down to bit 0 */
	e = next_set(map, nbits, pos);
	if (start)
		*start = s;
	return e - s;
}

/* ------------------------------------------------------------------ */
/* Ranges [start, end): first word i, last word j, and the masks of the
 * range's bits in each. */

struct span {
	size_t i, j;
	uint64_t fm, lm;
};

static inline struct span span_of(uint64_t start, uint64_t end)
{
	struct span s = {
		.i = start / 64,
		.j = (end - 1) / 64,
		.fm = ALL_ONES << (start % 64),
		.lm = low_mask((unsigned)((end - 1) % 64) + 1),
	};

	if (s.i == s.j)
		s.fm &= s.lm;
	return s;
}

uint64_t bga_bitmap_popcount(const uint64_t *map, uint64_t from, uint64_t to)
{
	struct span s;
	uint64_t c;

	if (from >= to)
		return 0;
	BGA_ASSERT(map);
	s = span_of(from, to);
	c = pop64(map[s.i] & s.fm);
	if (s.i == s.j)
		return c;
	if (s.j - s.i > 1)
		c += ops()->popcount(map + s.i + 1, s.j - s.i - 1);
	return c + pop64(map[s.j] & s.lm);
}

bool bga_bitmap_range_is_clear(const uint64_t *map, uint64_t start, uint64_t len)
{
	struct span s;

	if (len == 0)
		return true;
	BGA_ASSERT(map && start + len > start);
	s = span_of(start, start + len);
	if (map[s.i] & s.fm)
		return false;
	if (s.i == s.j)
		return true;
	if (s.j - s.i > 1 && ops()->skip_zeros(map, s.i + 1, s.j) != s.j)
		return false;
	return !(map[s.j] & s.lm);
}

bool bga_bitmap_range_is_set(const uint64_t *map, uint64_t start, uint64_t len)
{
	struct span s;

	if (len == 0)
		return true;
	BGA_ASSERT(map && start + len > start);
	s = span_of(start, start + len);
	if (~map[s.i] & s.fm)
		return false;
	if (s.i == s.j)
		return true;
	if (s.j - s.i > 1 && ops()->skip_ones(map, s.i + 1, s.j) != s.j)
		return false;
	return !(~map[s.j] & s.lm);
}

/*
 * The range writes without their count: the allocator knows the range's
 * state already (it found the run free, or checked the blocks used), and
 * counting the flipped bits was a popcount of every whole word, a large
 * share of a long request's instructions (docs/HISTORY.md#engine-unit-rests-on
 * has the figure).
 */
void bga__bitmap_write_range(uint64_t *map, uint64_t start, uint64_t len, bool set)
{
	struct span s;
	uint64_t fill = set ? ALL_ONES : 0;

	if (len == 0)
		return;
	BGA_ASSERT(map && start + len > start);
	s = span_of(start, start + len);
	map[s.i] = (map[s.i] & ~s.fm) | (fill & s.fm);
	if (s.i == s.j)
		return;
	memset(map + s.i + 1, (int)(fill & 0xff), (s.j - s.i - 1) * sizeof(*map));
	map[s.j] = (map[s.j] & ~s.lm) | (fill & s.lm);
}

uint64_t bga_bitmap_set_range(uint64_t *map, uint64_t start, uint64_t len)
{
	struct span s;
	uint64_t flipped;
	size_t mid;

	if (len == 0)
		return 0;
	BGA_ASSERT(map && start + len > start);
	s = span_of(start, start + len);
	flipped = pop64(~map[s.i] & s.fm);
	map[s.i] |= s.fm;
	if (s.i == s.j)
		return flipped;
	mid = s.j - s.i - 1;
	if (mid) {
		flipped += (uint64_t)mid * 64 - ops()->popcount(map + s.i + 1, mid);
		memset(map + s.i + 1, 0xff, mid * sizeof(*map));
	}
	flipped += pop64(~map[s.j] & s.lm);
	map[s.j] |= s.lm;
	return flipped;
}

uint64_t bga_bitmap_clear_range(uint64_t *map, uint64_t start, uint64_t len)
{
	struct span s;
	uint64_t flipped;
	size_t mid;

	if (len == 0)
		return 0;
	BGA_ASSERT(map && start + len > start);
	s = span_of(start, start + len);
	flipped = pop64(map[s.i] & s.fm);
	map[s.i] &= ~s.fm;
	if (s.i == s.j)
		return flipped;
	mid = s.j - s.i - 1;
	if (mid) {
		flipped += ops()->popcount(map + s.i + 1, mid);
		memset(map + s.i + 1, 0, mid * sizeof(*map));
	}
	flipped += pop64(map[s.j] & s.lm);
	map[s.j] &= ~s.lm;
	return flipped;
}
