/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_FUZZ_INPUT_H
#define BGA_FUZZ_INPUT_H

/*
 * Decoding fuzzer input bytes into numbers.  Reads past the end yield
 * zeros, so every input, however short, decodes into a valid run.
 */

#include <stddef.h>
#include <stdint.h>

/*
 * A harness's own bookkeeping that checks the library (an ownership map,
 * a per-block loop): left out of libFuzzer's coverage instrumentation,
 * as the reference model is (scripts/fuzz.sh), so its loops pay no
 * callback per compare and its branches count as no feature.  The
 * sanitizers still see it.  noinline: an inlined body would take its
 * caller's instrumentation.
 */
#if defined(__clang__)
#define FZ_ORACLE __attribute__((no_sanitize("coverage"), noinline))
#else
#define FZ_ORACLE
#endif

struct fz_in {
	const uint8_t *p;
	size_t len, pos;
};

static inline int fz_more(const struct fz_in *in)
{
	return in->pos < in->len;
}

static inline uint8_t fz_u8(struct fz_in *in)
{
	return in->pos < in->len ? in->p[in->pos++] : 0;
}

static inline uint16_t fz_u16(struct fz_in *in)
{
	uint16_t lo = fz_u8(in);

	return (uint16_t)(lo | (uint16_t)fz_u8(in) << 8);
}

static inline uint32_t fz_u32(struct fz_in *in)
{
	uint32_t lo = fz_u16(in);

	return lo | (uint32_t)fz_u16(in) << 16;
}

static inline uint64_t fz_u64(struct fz_in *in)
{
	uint64_t lo = fz_u32(in);

	return lo | (uint64_t)fz_u32(in) << 32;
}

/* A value in [0, n); 0 when n is 0. */
static inline uint64_t fz_below(struct fz_in *in, uint64_t n)
{
	if (n == 0)
		return 0;
	if (n <= 256)
		return fz_u8(in) % n;
	if (n <= 65536)
		return fz_u16(in) % n;
	return fz_u32(in) % n;
}

/* The libFuzzer entry point every harness defines. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
