/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reading and writing traces (bga_trace.h) in both forms. */
#define _GNU_SOURCE
#include "trace.h"

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#ifdef BGA_REPLAY_XZ
#include <lzma.h>
#endif

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 256;
	while (ncap < need)
		ncap *= 2;
	void *np = realloc(*p, ncap * size);
	if (!np)
		return -1;
	*p = np;
	*cap = ncap;
	return 0;
}

struct builder {
	struct trace *t;
	size_t rcap, ecap;
};

static struct trace_rec *add_rec(struct builder *b, uint32_t next)
{
	struct trace *t = b->t;
	if (grow((void **)&t->rec, &b->rcap, t->nrec + 1, sizeof(*t->rec)) ||
	    grow((void **)&t->ext, &b->ecap, t->next + next, sizeof(*t->ext)))
		return NULL;
	struct trace_rec *r = &t->rec[t->nrec++];
	memset(r, 0, sizeof(*r));
	r->ext = t->next;
	r->next = next;
	t->next += next;
	return r;
}

/* By seq; an allocation and its goal_from share one, the allocation first. */
static int by_seq(const void *a, const void *b)
{
	const struct trace_rec *x = a, *y = b;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return (x->op == BGT_GOAL_FROM) - (y->op == BGT_GOAL_FROM);
}

static int is_alloc(const struct trace_rec *r)
{
	return r->op == BGT_ALLOC || r->op == BGT_ALLOC_VEC;
}

/* Sorted by seq, each goal_from folded into its allocation. */
static int finish(struct trace *t, const char *path)
{
	qsort(t->rec, t->nrec, sizeof(*t->rec), by_seq);
	size_t w = 0;
	for (size_t i = 0; i < t->nrec; i++) {
		struct trace_rec *r = &t->rec[i], *prev = w ? &t->rec[w - 1] : NULL;
		if (r->op == BGT_GOAL_FROM) {
			if (!prev || prev->seq != r->seq || !is_alloc(prev) || prev->anchored) {
				fprintf(stderr, "%s: goal_from with seq %" PRIu64 " qualifies no allocation of its own\n",
				        path, r->seq);
				return -1;
			}
			prev->anchor = r->args[0];
			prev->distance = (int64_t)r->args[1];
			prev->anchored = 1;
			continue;
		}
		if (prev && r->seq == prev->seq) {
			fprintf(stderr, "%s: two records with seq %" PRIu64 "\n", path, r->seq);
			return -1;
		}
		t->rec[w++] = *r;
	}
	t->nrec = w;
	return 0;
}

static int read_binary(const char *path, const unsigned char *d, size_t n, struct trace *t)
{
	struct builder b = {t, 0, 0};
	if (n < 16 || bgt_get_u32(d + 8) != BGT_VERSION) {
		fprintf(stderr, "%s: trace version %u, this reader knows %u\n", path, n < 16 ? 0 : bgt_get_u32(d + 8),
		        BGT_VERSION);
		return -1;
	}
	uint32_t hsize = bgt_get_u32(d + 12);
	if (hsize < BGT_HEADER_SIZE || hsize > n) {
		fprintf(stderr, "%s: byte 12: header size %u is not possible\n", path, hsize);
		return -1;
	}
	t->h.version = BGT_VERSION;
	t->h.nblocks = bgt_get_u64(d + 16);
	t->h.blocks_per_group = bgt_get_u32(d + 24);
	t->h.flags = bgt_get_u32(d + 28);
	t->h.first_data_block = bgt_get_u64(d + 32);
	t->h.block_size = bgt_get_u32(d + 40);
	t->h.stripe = bgt_get_u32(d + 44);
	memcpy(t->h.source, d + 48, BGT_SOURCE_LEN);
	t->h.source[BGT_SOURCE_LEN - 1] = 0;
	for (size_t off = hsize; off < n;) {
		if (n - off < BGT_REC_SIZE) {
			fprintf(stderr, "%s: byte %zu: a record cut short (%zu bytes left)\n", path, off, n - off);
			return -1;
		}
		const unsigned char *p = d + off;
		uint32_t size = bgt_get_u32(p), next = bgt_get_u32(p + 12);
		unsigned op = p[4], nargs = p[5];
		if (size < BGT_REC_SIZE || size > n - off) {
			fprintf(stderr, "%s: byte %zu: record size %u is not possible\n", path, off, size);
			return -1;
		}
		if (!bgt_op_name(op)) {
			t->skipped++;
			off += size;
			continue;
		}
		if (nargs != bgt_op_nargs(op) || (uint64_t)BGT_REC_SIZE + 8u * nargs + 16u * (uint64_t)next != size) {
			fprintf(stderr, "%s: byte %zu: %s record of %u bytes with %u arguments and %u extents\n", path,
			        off, bgt_op_name(op), size, nargs, next);
			return -1;
		}
		struct trace_rec *r = add_rec(&b, next);
		if (!r) {
			fprintf(stderr, "%s: out of memory\n", path);
			return -1;
		}
		r->op = (uint8_t)op;
		memcpy(&r->thread, p + 6, 2);
		r->thread = le16toh(r->thread);
		r->rc = (int32_t)bgt_get_u32(p + 8);
		r->seq = bgt_get_u64(p + 16);
		r->ns = bgt_get_u64(p + 24);
		const unsigned char *q = p + BGT_REC_SIZE;
		for (unsigned i = 0; i < nargs; i++, q += 8)
			r->args[i] = bgt_get_u64(q);
		struct bga_extent *e = t->ext + r->ext;
		for (uint32_t i = 0; i < next; i++, q += 16)
			e[i] = (struct bga_extent){bgt_get_u64(q), bgt_get_u64(q + 8)};
		off += size;
	}
	return finish(t, path);
}

/* ---- the text form ---- */

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	if (!*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 0);
	if (errno || *end)
		return -1;
	*v = x;
	return 0;
}

static int text_fail(const char *path, size_t line, const char *what, const char *tok)
{
	fprintf(stderr, "%s: line %zu: %s%s%s%s\n", path, line, what, tok ? " '" : "", tok ? tok : "", tok ? "'" : "");
	return -1;
}

static int read_text(const char *path, char *d, struct trace *t)
{
	struct builder b = {t, 0, 0};
	size_t line = 0;
	int have_version = 0;
	for (char *ln = d, *nl; ln; ln = nl) {
		if ((nl = strchr(ln, '\n')))
			*nl++ = 0;
		line++;
		char *hash = strchr(ln, '#');
		if (hash)
			*hash = 0;
		char *tok[16 + 1], *save = NULL, *colon = strchr(ln, ':');
		if (colon)
			*colon = 0;
		int nt = 0;
		for (char *s = strtok_r(ln, " \t\r", &save); s; s = strtok_r(NULL, " \t\r", &save)) {
			if (nt == 16)
				return text_fail(path, line, "too many fields", NULL);
			tok[nt++] = s;
		}
		if (!nt) {
			if (colon)
				return text_fail(path, line, "extents with no record", NULL);
			continue;
		}
		uint64_t v;
		if (!have_version) {
			if (nt != 2 || strcmp(tok[0], "bgatrace") || parse_u64(tok[1], &v))
				return text_fail(path, line, "expected 'bgatrace VERSION' first", NULL);
			if (v != BGT_VERSION)
				return text_fail(path, line, "unknown trace version", tok[1]);
			t->h.version = BGT_VERSION;
			have_version = 1;
			continue;
		}
		if (nt == 2 && !colon && (tok[0][0] < '0' || tok[0][0] > '9')) {
			if (!strcmp(tok[0], "source")) {
				snprintf(t->h.source, sizeof(t->h.source), "%s", tok[1]);
				continue;
			}
			if (parse_u64(tok[1], &v))
				return text_fail(path, line, "not a number", tok[1]);
			if (!strcmp(tok[0], "nblocks"))
				t->h.nblocks = v;
			else if (!strcmp(tok[0], "first_data_block"))
				t->h.first_data_block = v;
			else if (!strcmp(tok[0], "blocks_per_group") && v <= UINT32_MAX)
				t->h.blocks_per_group = (uint32_t)v;
			else if (!strcmp(tok[0], "flags") && v <= UINT32_MAX)
				t->h.flags = (uint32_t)v;
			else if (!strcmp(tok[0], "block_size") && v <= UINT32_MAX)
				t->h.block_size = (uint32_t)v;
			else if (!strcmp(tok[0], "stripe") && v <= UINT32_MAX)
				t->h.stripe = (uint32_t)v;
			else
				return text_fail(path, line, "unknown header field or value too large", tok[0]);
			continue;
		}
		/* seq thread ns op rc args... [: start+len ...] */
		if (nt < 5)
			return text_fail(path, line, "a record needs seq, thread, ns, op and rc", NULL);
		unsigned op = 0;
		for (unsigned o = 1; o <= BGT_OP_MAX; o++)
			if (bgt_op_name(o) && !strcmp(bgt_op_name(o), tok[3]))
				op = o;
		if (!op)
			return text_fail(path, line, "unknown op", tok[3]);
		if ((unsigned)nt != 5 + bgt_op_nargs(op))
			return text_fail(path, line, "wrong number of arguments for", tok[3]);
		uint32_t next = 0;
		char *es = colon ? colon + 1 : NULL, *esave = NULL;
		if (es) {
			for (const char *c = es; *c; c++)
				next += *c == '+';
		}
		struct trace_rec *r = add_rec(&b, next);
		if (!r)
			return text_fail(path, line, "out of memory", NULL);
		uint64_t th;
		if (parse_u64(tok[0], &r->seq) || parse_u64(tok[1], &th) || th > UINT16_MAX ||
		    parse_u64(tok[2], &r->ns))
			return text_fail(path, line, "malformed seq, thread or ns", NULL);
		char *rcend;
		errno = 0;
		long lrc = strtol(tok[4], &rcend, 10);
		if (errno || *rcend || lrc < INT32_MIN || lrc > INT32_MAX)
			return text_fail(path, line, "malformed rc", tok[4]);
		r->rc = (int32_t)lrc;
		r->thread = (uint16_t)th;
		r->op = (uint8_t)op;
		for (unsigned i = 0; i < bgt_op_nargs(op); i++)
			if (parse_u64(tok[5 + i], &r->args[i]))
				return text_fail(path, line, "malformed argument", tok[5 + i]);
		struct bga_extent *e = t->ext + r->ext;
		uint32_t k = 0;
		if (es)
			for (char *s = strtok_r(es, " \t\r", &esave); s; s = strtok_r(NULL, " \t\r", &esave)) {
				char *plus = strchr(s, '+');
				if (!plus || k == next)
					return text_fail(path, line, "malformed extent (START+LEN)", s);
				*plus = 0;
				if (parse_u64(s, &e[k].start) || parse_u64(plus + 1, &e[k].len))
					return text_fail(path, line, "malformed extent number", s);
				k++;
			}
		if (k != next)
			return text_fail(path, line, "malformed extent list", NULL);
	}
	if (!have_version)
		return text_fail(path, line, "no 'bgatrace VERSION' line", NULL);
	return finish(t, path);
}

/* Append the whole of file f to d[0..*n) (capacity *cap); 0, or -1 with
 * the reason printed under name. */
static int append_file(FILE *f, const char *name, char **d, size_t *n, size_t *cap)
{
	for (;;) {
		if (grow((void **)d, cap, *n + 65536 + 1, 1)) {
			fprintf(stderr, "%s: out of memory\n", name);
			return -1;
		}
		size_t got = fread(*d + *n, 1, 65536, f);
		*n += got;
		if (got < 65536)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "%s: read error\n", name);
		return -1;
	}
	return 0;
}

char *read_whole(const char *path, size_t *len)
{
	char *d = NULL;
	size_t n = 0, cap = 0;
	FILE *f = fopen(path, "rb");
	if (f) {
		int rc = append_file(f, path, &d, &n, &cap);
		fclose(f);
		if (rc) {
			free(d);
			return NULL;
		}
	} else {
		/* PATH.00, PATH.01, ...: the file kept in parts (a byte split,
		 * trace.h), read back as one */
		int err = errno;
		unsigned k = 0;
		for (; k < 100; k++) {
			char part[4096];
			snprintf(part, sizeof(part), "%s.%02u", path, k);
			FILE *p = fopen(part, "rb");
			if (!p)
				break;
			int rc = append_file(p, part, &d, &n, &cap);
			fclose(p);
			if (rc) {
				free(d);
				return NULL;
			}
		}
		if (k == 0) {
			fprintf(stderr, "%s: %s\n", path, strerror(err));
			return NULL;
		}
	}
	if (!d && grow((void **)&d, &cap, 1, 1)) {
		fprintf(stderr, "%s: out of memory\n", path);
		return NULL;
	}
	d[n] = 0;
	*len = n;
	return d;
}

struct deferred {
	uint64_t txn, blocks;
};

int trace_fill(const struct trace *t, unsigned pct, struct trace_fill *out)
{
	uint64_t cap = t->h.nblocks > t->h.first_data_block ? t->h.nblocks - t->h.first_data_block : 0, used = cap;
	struct deferred *d = NULL;
	size_t nd = 0, cd = 0;
	*out = (struct trace_fill){.capacity = cap, .first_at = SIZE_MAX, .peak_at = SIZE_MAX};
	for (size_t i = 0; i < t->nrec; i++) {
		const struct trace_rec *r = &t->rec[i];
		const struct bga_extent *e = trace_ext(t, r);
		uint64_t sum = 0;
		for (uint32_t k = 0; k < r->next; k++)
			sum += e[k].len;
		if (r->rc && r->op != BGT_INIT_FREE)
			continue;
		switch (r->op) {
		case BGT_INIT_FREE: used -= sum < used ? sum : used; break;
		case BGT_ALLOC:
		case BGT_ALLOC_VEC: used += sum; break;
		case BGT_CLAIM: used += r->args[1]; break;
		case BGT_FREE: used -= r->args[1] < used ? r->args[1] : used; break;
		case BGT_FREE_VEC: used -= sum < used ? sum : used; break;
		case BGT_FREE_DEFERRED:
		case BGT_FREE_DEFERRED_VEC:
			if (grow((void **)&d, &cd, nd + 1, sizeof(*d))) {
				free(d);
				return -1;
			}
			d[nd++] = r->op == BGT_FREE_DEFERRED ? (struct deferred){r->args[2], r->args[1]}
			                                     : (struct deferred){r->args[0], sum};
			break;
		case BGT_COMMIT:
			for (size_t k = 0; k < nd;)
				if (d[k].txn <= r->args[0]) {
					used -= d[k].blocks < used ? d[k].blocks : used;
					d[k] = d[--nd];
				} else {
					k++;
				}
			break;
		default: continue;
		}
		if (used > out->peak || out->peak_at == SIZE_MAX) {
			out->peak = used;
			out->peak_at = i;
		}
		if (out->first_at == SIZE_MAX && cap && used * 100 >= (uint64_t)pct * cap)
			out->first_at = i;
	}
	free(d);
	return 0;
}

static const unsigned char xz_magic[6] = {0xfd, '7', 'z', 'X', 'Z', 0};

/* The xz stream d[0..*n) decompressed, NUL-terminated (*n its length), or
 * NULL with the reason printed.  d is freed either way.  Long histories
 * are kept compressed (tests/data/traces/, the .trace.xz files). */
static char *unxz(const char *path, char *d, size_t *n)
{
#ifdef BGA_REPLAY_XZ
	lzma_stream s = LZMA_STREAM_INIT;
	char *o = NULL;
	size_t cap = 0;
	lzma_ret r = lzma_stream_decoder(&s, UINT64_MAX, 0);
	s.next_in = (const uint8_t *)d;
	s.avail_in = *n;
	while (r == LZMA_OK) {
		if (grow((void **)&o, &cap, s.total_out + (1u << 20) + 1, 1)) {
			r = LZMA_MEM_ERROR;
			break;
		}
		s.next_out = (uint8_t *)o + s.total_out;
		s.avail_out = cap - 1 - s.total_out;
		r = lzma_code(&s, LZMA_FINISH);
	}
	size_t len = s.total_out;
	lzma_end(&s);
	free(d);
	if (r != LZMA_STREAM_END) {
		free(o);
		fprintf(stderr, "%s: xz: %s\n", path,
		        r == LZMA_MEM_ERROR ? "out of memory" : r == LZMA_BUF_ERROR ? "truncated" : "corrupt data");
		return NULL;
	}
	o[len] = 0;
	*n = len;
	return o;
#else
	(void)n;
	free(d);
	fprintf(stderr, "%s: xz-compressed, and this bga-replay was built without liblzma (Debian: liblzma-dev)\n",
	        path);
	return NULL;
#endif
}

int trace_read(const char *path, struct trace *t)
{
	memset(t, 0, sizeof(*t));
	size_t n;
	char *d = read_whole(path, &n);
	if (d && n >= sizeof(xz_magic) && !memcmp(d, xz_magic, sizeof(xz_magic)))
		d = unxz(path, d, &n);
	if (!d)
		return -1;
	int rc;
	if (n >= 8 && !memcmp(d, BGT_MAGIC, 8))
		rc = read_binary(path, (unsigned char *)d, n, t);
	else if (memchr(d, 0, n))
		rc = (fprintf(stderr, "%s: neither a binary trace (no BGATRACE magic) nor text\n", path), -1);
	else
		rc = read_text(path, d, t);
	free(d);
	if (rc)
		trace_free(t);
	return rc;
}

void trace_free(struct trace *t)
{
	free(t->rec);
	free(t->ext);
	memset(t, 0, sizeof(*t));
}

/* The goal_from record an anchored allocation r was read from, in *g. */
static const struct trace_rec *goal_from_of(const struct trace_rec *r, struct trace_rec *g)
{
	*g = (struct trace_rec){.seq = r->seq, .ns = r->ns, .args = {r->anchor, (uint64_t)r->distance},
	                        .thread = r->thread, .op = BGT_GOAL_FROM};
	return g;
}

/* One record in the text form, then its goal_from when anchored. */
static void write_text_rec(const struct trace *t, const struct trace_rec *r, FILE *f)
{
	fprintf(f, "%" PRIu64 " %u %" PRIu64 " %s %d", r->seq, r->thread, r->ns, bgt_op_name(r->op), r->rc);
	for (unsigned a = 0; a < bgt_op_nargs(r->op); a++)
		fprintf(f, " %" PRIu64, r->args[a]);
	if (r->next)
		fputs(" :", f);
	const struct bga_extent *e = trace_ext(t, r);
	for (uint32_t k = 0; k < r->next; k++)
		fprintf(f, " %" PRIu64 "+%" PRIu64, e[k].start, e[k].len);
	fputc('\n', f);
	struct trace_rec g;
	if (r->anchored)
		write_text_rec(t, goal_from_of(r, &g), f);
}

int trace_write_text(const struct trace *t, FILE *f)
{
	fprintf(f, "bgatrace %u\nnblocks %" PRIu64 "\nblocks_per_group %u\nflags %u\nfirst_data_block %" PRIu64
	           "\nblock_size %u\nstripe %u\n",
	        BGT_VERSION, t->h.nblocks, t->h.blocks_per_group, t->h.flags, t->h.first_data_block, t->h.block_size,
	        t->h.stripe);
	if (t->h.source[0])
		fprintf(f, "source %s\n", t->h.source);
	fputs("# seq thread ns op rc args... : start+len ...\n", f);
	for (size_t i = 0; i < t->nrec; i++)
		write_text_rec(t, &t->rec[i], f);
	return ferror(f) ? -1 : 0;
}

/* One record in the binary form, then its goal_from when anchored. */
static void write_binary_rec(const struct trace *t, const struct trace_rec *r, FILE *f)
{
	unsigned nargs = bgt_op_nargs(r->op);
	unsigned char p[BGT_REC_SIZE + 64];
	bgt_put_u32(p, BGT_REC_SIZE + 8 * nargs + 16 * r->next);
	p[4] = r->op;
	p[5] = (unsigned char)nargs;
	uint16_t th = htole16(r->thread);
	memcpy(p + 6, &th, 2);
	bgt_put_u32(p + 8, (uint32_t)r->rc);
	bgt_put_u32(p + 12, r->next);
	bgt_put_u64(p + 16, r->seq);
	bgt_put_u64(p + 24, r->ns);
	for (unsigned a = 0; a < nargs; a++)
		bgt_put_u64(p + BGT_REC_SIZE + 8 * a, r->args[a]);
	fwrite(p, 1, BGT_REC_SIZE + 8 * nargs, f);
	const struct bga_extent *e = trace_ext(t, r);
	for (uint32_t k = 0; k < r->next; k++) {
		unsigned char x[16];
		bgt_put_u64(x, e[k].start);
		bgt_put_u64(x + 8, e[k].len);
		fwrite(x, 1, 16, f);
	}
	struct trace_rec g;
	if (r->anchored)
		write_binary_rec(t, goal_from_of(r, &g), f);
}

int trace_write_binary(const struct trace *t, FILE *f)
{
	unsigned char h[BGT_HEADER_SIZE] = {0};
	memcpy(h, BGT_MAGIC, 8);
	bgt_put_u32(h + 8, BGT_VERSION);
	bgt_put_u32(h + 12, BGT_HEADER_SIZE);
	bgt_put_u64(h + 16, t->h.nblocks);
	bgt_put_u32(h + 24, t->h.blocks_per_group);
	bgt_put_u32(h + 28, t->h.flags);
	bgt_put_u64(h + 32, t->h.first_data_block);
	bgt_put_u32(h + 40, t->h.block_size);
	bgt_put_u32(h + 44, t->h.stripe);
	memcpy(h + 48, t->h.source, BGT_SOURCE_LEN);
	fwrite(h, 1, sizeof(h), f);
	for (size_t i = 0; i < t->nrec; i++)
		write_binary_rec(t, &t->rec[i], f);
	return ferror(f) ? -1 : 0;
}
