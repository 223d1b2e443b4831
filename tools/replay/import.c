/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-replay import: a Ceph BlueStore free-dump (`ceph daemon osd.N
 * bluestore allocator dump block`) or a plain extent list, made into a
 * stored bgalloc volume.
 *
 * Ceph's dump is one JSON object: capacity and alloc_unit (numbers, bytes),
 * alloc_type and alloc_name (strings), extents (an array of objects whose
 * offset and length are hex strings, "0x1000", in bytes).  The parser
 * below keeps the line of every value so that a bad one is named.
 */
#define _GNU_SOURCE
#include "replay.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "freemap.h"
#include "trace.h"

/* ---- a small JSON reader that remembers lines ---- */

enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	int type;
	size_t line;
	char *s; /* string's bytes, or a number's text */
	size_t n;
	char **keys;
	struct jv **vals;
};

struct jp {
	const char *p, *path;
	size_t line;
	int depth;
};

static void jv_free(struct jv *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		if (v->keys)
			free(v->keys[i]);
		jv_free(v->vals[i]);
	}
	free(v->keys);
	free(v->vals);
	free(v->s);
	free(v);
}

static int jfail(struct jp *j, const char *what)
{
	fprintf(stderr, "%s: line %zu: %s\n", j->path, j->line, what);
	return -1;
}

static void jskip(struct jp *j)
{
	for (; *j->p == ' ' || *j->p == '\t' || *j->p == '\r' || *j->p == '\n'; j->p++)
		if (*j->p == '\n')
			j->line++;
}

static int jstring(struct jp *j, char **out)
{
	size_t cap = 16, n = 0;
	char *s = malloc(cap);
	if (!s)
		return jfail(j, "out of memory");
	for (j->p++;; j->p++) {
		char c = *j->p;
		if (!c || c == '\n') {
			free(s);
			return jfail(j, "unterminated string");
		}
		if (c == '"')
			break;
		if (c == '\\') {
			c = *++j->p;
			if (c == 'u') { /* kept as '?': no name or number here needs it */
				for (int i = 0; i < 4; i++)
					if (!isxdigit((unsigned char)*++j->p)) {
						free(s);
						return jfail(j, "malformed \\u escape");
					}
				c = '?';
			} else if (c == 'n')
				c = '\n';
			else if (c == 't')
				c = '\t';
			else if (!strchr("\"\\/bfr", c) || !c) {
				free(s);
				return jfail(j, "malformed escape in a string");
			}
		}
		if (n + 2 > cap) {
			char *ns = realloc(s, cap *= 2);
			if (!ns) {
				free(s);
				return jfail(j, "out of memory");
			}
			s = ns;
		}
		s[n++] = c;
	}
	j->p++;
	s[n] = 0;
	*out = s;
	return 0;
}

static int jvalue(struct jp *j, struct jv **out);

static int jpush(struct jp *j, struct jv *v, char *key, struct jv *val)
{
	char **nk = v->type == J_OBJ ? realloc(v->keys, (v->n + 1) * sizeof(*nk)) : NULL;
	if (v->type == J_OBJ && !nk)
		goto oom;
	if (nk)
		v->keys = nk;
	struct jv **nv = realloc(v->vals, (v->n + 1) * sizeof(*nv));
	if (!nv)
		goto oom;
	v->vals = nv;
	if (v->keys)
		v->keys[v->n] = key;
	v->vals[v->n++] = val;
	return 0;
oom:
	free(key);
	jv_free(val);
	return jfail(j, "out of memory");
}

static int jcontainer(struct jp *j, struct jv *v)
{
	char close = v->type == J_OBJ ? '}' : ']';
	j->p++;
	jskip(j);
	if (*j->p == close) {
		j->p++;
		return 0;
	}
	for (;;) {
		char *key = NULL;
		struct jv *val;
		jskip(j);
		if (v->type == J_OBJ) {
			if (*j->p != '"')
				return jfail(j, "expected a key (a string)");
			if (jstring(j, &key))
				return -1;
			jskip(j);
			if (*j->p != ':') {
				free(key);
				return jfail(j, "expected ':' after a key");
			}
			j->p++;
		}
		if (jvalue(j, &val)) {
			free(key);
			return -1;
		}
		if (jpush(j, v, key, val))
			return -1;
		jskip(j);
		if (*j->p == ',') {
			j->p++;
			continue;
		}
		if (*j->p == close) {
			j->p++;
			return 0;
		}
		return jfail(j, v->type == J_OBJ ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static int jvalue(struct jp *j, struct jv **out)
{
	jskip(j);
	struct jv *v = calloc(1, sizeof(*v));
	if (!v)
		return jfail(j, "out of memory");
	v->line = j->line;
	int rc = 0;
	char c = *j->p;
	if (c == '{' || c == '[') {
		if (++j->depth > 64)
			rc = jfail(j, "nested too deeply");
		else {
			v->type = c == '{' ? J_OBJ : J_ARR;
			rc = jcontainer(j, v);
		}
		j->depth--;
	} else if (c == '"') {
		v->type = J_STR;
		rc = jstring(j, &v->s);
	} else if (c == '-' || isdigit((unsigned char)c)) {
		const char *s = j->p;
		while (*j->p && strchr("+-0123456789.eE", *j->p))
			j->p++;
		v->type = J_NUM;
		if (!(v->s = strndup(s, (size_t)(j->p - s))))
			rc = jfail(j, "out of memory");
	} else if (!strncmp(j->p, "true", 4) || !strncmp(j->p, "null", 4)) {
		v->type = c == 't' ? J_BOOL : J_NULL;
		j->p += 4;
	} else if (!strncmp(j->p, "false", 5)) {
		v->type = J_BOOL;
		j->p += 5;
	} else {
		rc = jfail(j, *j->p ? "not a JSON value" : "the file ends inside a value");
	}
	if (rc) {
		jv_free(v);
		return -1;
	}
	*out = v;
	return 0;
}

static struct jv *jget(const struct jv *o, const char *key)
{
	for (size_t i = 0; o->type == J_OBJ && i < o->n; i++)
		if (!strcmp(o->keys[i], key))
			return o->vals[i];
	return NULL;
}

/*
 * A number: a JSON number (decimal), or a string holding one: in hex,
 * with or without "0x", when hex is set (Ceph's offsets and lengths, which
 * its own replay tool reads with strtol(s, 16)), else as C writes it.
 */
static int jnum(const char *path, const struct jv *v, const char *what, int hex, uint64_t *out)
{
	if (!v || (v->type != J_NUM && v->type != J_STR)) {
		fprintf(stderr, "%s: line %zu: %s: expected a number or a hex string\n", path, v ? v->line : 0, what);
		return -1;
	}
	char *end;
	const char *s = v->s;
	errno = 0;
	int base = v->type == J_STR && hex ? 16 : v->type == J_STR ? 0 : 10;
	unsigned long long x = (*s == '-' || *s == '+' || !*s) ? (errno = EINVAL, 0) : strtoull(s, &end, base);
	if (!errno && end == s + 2 && base == 16 && (s[1] == 'x' || s[1] == 'X'))
		errno = EINVAL; /* "0x" alone */
	if (errno || *end) {
		fprintf(stderr, "%s: line %zu: %s: malformed number \"%s\"\n", path, v->line, what, s);
		return -1;
	}
	*out = x;
	return 0;
}

/* ---- the volume ---- */

static int by_start(const void *a, const void *b)
{
	const struct src_extent *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * Check the extents (in blocks) against the volume and each other, naming
 * the line of a bad one: none empty, none past nblocks, none overlapping.
 */
/* "line L" of an extent, with the line its JSON object opens on when
 * that is another one. */
static const char *where(const struct src_extent *e, char *buf, size_t len)
{
	if (e->obj_line && e->obj_line != e->line)
		snprintf(buf, len, "line %zu (the extent opening on line %zu)", e->line, e->obj_line);
	else
		snprintf(buf, len, "line %zu", e->line);
	return buf;
}

static int check_extents(const char *path, struct src_extent *e, size_t n, uint64_t nblocks, const char *unit)
{
	char w[96], w2[96];
	for (size_t i = 0; i < n; i++)
		if (!e[i].len || e[i].start >= nblocks || e[i].len > nblocks - e[i].start) {
			fprintf(stderr, "%s: %s: extent %" PRIu64 "+%" PRIu64 " %s: the volume has %" PRIu64 " %s\n", path,
			        where(&e[i], w, sizeof(w)), e[i].start, e[i].len, e[i].len ? "passes its end" : "is empty",
			        nblocks, unit);
			return -1;
		}
	qsort(e, n, sizeof(*e), by_start);
	for (size_t i = 1; i < n; i++)
		if (e[i].start < e[i - 1].start + e[i - 1].len) {
			const struct src_extent *a = e[i - 1].line < e[i].line ? &e[i - 1] : &e[i];
			const struct src_extent *b = a == &e[i] ? &e[i - 1] : &e[i];
			fprintf(stderr, "%s: %s: extent %" PRIu64 "+%" PRIu64 " %s overlaps extent %" PRIu64 "+%" PRIu64 " of %s\n",
			        path, where(b, w, sizeof(w)), b->start, b->len, unit, a->start, a->len, where(a, w2, sizeof(w2)));
			return -1;
		}
	return 0;
}

int make_volume(const struct import_opts *o, uint64_t nblocks, struct src_extent *e, size_t n, int used,
                struct bga_volume **out)
{
	struct bga_config cfg;
	bga_config_init(&cfg, nblocks);
	if (o->group)
		cfg.blocks_per_group = o->group;
	if (!used)
		cfg.flags |= BGA_START_FULL;
	int rc = bga_create(&cfg, out);
	if (rc) {
		fprintf(stderr, "bga-replay: a volume of %" PRIu64 " blocks: %s\n", nblocks, bga_strerror(rc));
		return -1;
	}
	for (size_t i = 0; i < n && !rc; i++)
		rc = used ? bga_claim(*out, e[i].start, e[i].len) : bga_free(*out, e[i].start, e[i].len);
	if (rc) {
		fprintf(stderr, "bga-replay: %s: %s\n", used ? "bga_claim" : "bga_free", bga_strerror(rc));
		bga_destroy(*out);
		return -1;
	}
	return 0;
}

/* Store vol to path through a temporary name, so a failure leaves none. */
static int store_image(struct bga_volume *vol, const char *path)
{
	size_t len = strlen(path) + 16;
	char *tmp = malloc(len);
	struct bga_io io;
	int rc;
	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, len, "%s.tmp%d", path, (int)getpid());
	unlink(tmp);
	if (!(rc = bga_io_file_open(tmp, 0, 1, &io))) {
		rc = bga_store(vol, &io);
		bga_io_file_close(&io);
	}
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc) {
		unlink(tmp);
		fprintf(stderr, "bga-replay: %s: %s\n", path, bga_strerror(rc));
	}
	free(tmp);
	return rc;
}

static int finish_import(const struct import_opts *o, uint64_t nblocks, uint64_t unit, struct src_extent *e, size_t n,
                         int used)
{
	struct bga_volume *vol;
	if (make_volume(o, nblocks, e, n, used, &vol))
		return 1;
	struct freemap m;
	int rc = freemap_of_volume(vol, unit, 0, &m);
	struct bga_stats st;
	if (!rc)
		rc = bga_stats(vol, &st);
	if (!rc)
		rc = store_image(vol, o->out);
	if (!rc) {
		struct bga_config cfg;
		bga_volume_config(vol, &cfg);
		printf("image: %s (%" PRIu64 " blocks of %" PRIu64 " bytes, %u blocks a group)\n", o->out, nblocks, unit,
		       cfg.blocks_per_group);
		freemap_print(stdout, &m);
		printf("bgalloc score (bga_stats): %.6f\n", st.frag_score);
	}
	bga_destroy(vol);
	return rc ? 1 : 0;
}

static char *slurp(const char *path)
{
	size_t n;
	char *d = read_whole(path, &n);
	if (d && memchr(d, 0, n)) {
		fprintf(stderr, "%s: not a text file\n", path);
		free(d);
		return NULL;
	}
	return d;
}

int image_open(const char *path, uint64_t base, struct bga_io *io, struct bga_volume **vol)
{
	int rc = bga_io_file_open(path, base, 0, io);
	if (!rc && (rc = bga_load(io, NULL, vol)))
		bga_io_file_close(io);
	if (rc)
		fprintf(stderr, "%s: %s\n", path, bga_strerror(rc));
	return rc;
}

int import_ceph(const struct import_opts *o, const char *path)
{
	char *d = slurp(path);
	if (!d)
		return 2;
	struct jp j = {d, path, 1, 0};
	struct jv *root = NULL, *top;
	struct src_extent *e = NULL;
	int rc = 1;
	if (jvalue(&j, &root))
		goto out;
	jskip(&j);
	if (*j.p) {
		jfail(&j, "more after the dump's object");
		goto out;
	}
	top = root;
	/* the formatter's section name, when a tool printed it */
	if (top->type == J_OBJ && top->n == 1 && !strcmp(top->keys[0], "allocator_dump"))
		top = top->vals[0];
	if (top->type != J_OBJ) {
		fprintf(stderr, "%s: line %zu: expected the dump's object\n", path, top->line);
		goto out;
	}
	uint64_t capacity, unit;
	struct jv *ext = jget(top, "extents"), *name = jget(top, "alloc_name"), *type = jget(top, "alloc_type");
	if (!jget(top, "capacity") || !jget(top, "alloc_unit") || !ext) {
		fprintf(stderr, "%s: line %zu: the dump needs capacity, alloc_unit and extents\n", path, top->line);
		goto out;
	}
	if (jnum(path, jget(top, "capacity"), "capacity", 0, &capacity) ||
	    jnum(path, jget(top, "alloc_unit"), "alloc_unit", 0, &unit))
		goto out;
	if (!unit || capacity / unit == 0) {
		fprintf(stderr, "%s: line %zu: alloc_unit %" PRIu64 " and capacity %" PRIu64 " make no block\n", path,
		        jget(top, "alloc_unit")->line, unit, capacity);
		goto out;
	}
	if (ext->type != J_ARR) {
		fprintf(stderr, "%s: line %zu: extents: expected an array\n", path, ext->line);
		goto out;
	}
	uint64_t nblocks = capacity / unit;
	if (nblocks > BGA_MAX_BLOCKS) {
		fprintf(stderr, "%s: capacity / alloc_unit = %" PRIu64 " blocks, past bgalloc's %" PRIu64 "\n", path,
		        nblocks, BGA_MAX_BLOCKS);
		goto out;
	}
	if (ext->n && !(e = calloc(ext->n, sizeof(*e)))) {
		fprintf(stderr, "%s: out of memory\n", path);
		goto out;
	}
	for (size_t i = 0; i < ext->n; i++) {
		struct jv *x = ext->vals[i];
		uint64_t off, len;
		if (x->type != J_OBJ || !jget(x, "offset") || !jget(x, "length")) {
			fprintf(stderr, "%s: line %zu: an extent needs offset and length\n", path, x->line);
			goto out;
		}
		if (jnum(path, jget(x, "offset"), "offset", 1, &off) || jnum(path, jget(x, "length"), "length", 1, &len))
			goto out;
		struct src_extent here = {off / unit, len / unit, jget(x, "offset")->line, x->line};
		char w[96];
		if (off % unit || len % unit) {
			here.line = jget(x, off % unit ? "offset" : "length")->line;
			fprintf(stderr,
			        "%s: %s: extent 0x%" PRIx64 "~0x%" PRIx64 ": alloc_unit 0x%" PRIx64 " does not divide its %s\n",
			        path, where(&here, w, sizeof(w)), off, len, unit, off % unit ? "offset" : "length");
			goto out;
		}
		if (!len || off >= capacity || len > capacity - off) {
			fprintf(stderr, "%s: %s: extent 0x%" PRIx64 "~0x%" PRIx64 " %s capacity 0x%" PRIx64 "\n", path,
			        where(&here, w, sizeof(w)), off, len, len ? "passes" : "is empty, within", capacity);
			goto out;
		}
		e[i] = here;
	}
	if (check_extents(path, e, ext->n, nblocks, "units"))
		goto out;
	printf("ceph dump: %s, alloc_type %s, capacity %" PRIu64 " bytes, alloc_unit %" PRIu64 ", %zu extents\n",
	       name && name->type == J_STR ? name->s : "?", type && type->type == J_STR ? type->s : "?", capacity, unit,
	       ext->n);
	rc = finish_import(o, nblocks, unit, e, ext->n, 0);
out:
	jv_free(root);
	free(e);
	free(d);
	return rc;
}

/*
 * The plain list: "nblocks N" (required), "block_size BYTES" and
 * "kind free|used" (default free) lines, then one "START LEN" (blocks,
 * decimal or 0x hex) a line; '#' starts a comment.
 */
int import_extents(const struct import_opts *o, const char *path)
{
	char *d = slurp(path);
	if (!d)
		return 2;
	struct src_extent *e = NULL;
	size_t n = 0, cap = 0, line = 0;
	uint64_t nblocks = 0, bsize = 4096;
	int used = 0, rc = 1;
	for (char *ln = d, *nl; ln; ln = nl) {
		if ((nl = strchr(ln, '\n')))
			*nl++ = 0;
		line++;
		char *hash = strchr(ln, '#'), *save = NULL, *tok[3];
		if (hash)
			*hash = 0;
		int nt = 0;
		for (char *s = strtok_r(ln, " \t\r", &save); s && nt < 3; s = strtok_r(NULL, " \t\r", &save))
			tok[nt++] = s;
		if (!nt)
			continue;
		if (nt != 2) {
			fprintf(stderr, "%s: line %zu: expected two fields (START LEN, or a header NAME VALUE)\n", path, line);
			goto out;
		}
		if (!strcmp(tok[0], "kind")) {
			if (strcmp(tok[1], "free") && strcmp(tok[1], "used")) {
				fprintf(stderr, "%s: line %zu: kind is free or used, not '%s'\n", path, line, tok[1]);
				goto out;
			}
			if (n) {
				fprintf(stderr, "%s: line %zu: kind after the first extent\n", path, line);
				goto out;
			}
			used = !strcmp(tok[1], "used");
			continue;
		}
		uint64_t a, b = 0;
		struct jv va = {.type = J_STR, .line = line, .s = tok[0]}, vb = {.type = J_STR, .line = line, .s = tok[1]};
		int hdr = !strcmp(tok[0], "nblocks") || !strcmp(tok[0], "block_size");
		if ((!hdr && jnum(path, &va, "start", 0, &a)) || jnum(path, &vb, hdr ? tok[0] : "length", 0, &b))
			goto out;
		if (hdr) {
			if (n || !b) {
				fprintf(stderr, "%s: line %zu: %s %s\n", path, line, tok[0], n ? "after the first extent" : "is 0");
				goto out;
			}
			*(!strcmp(tok[0], "nblocks") ? &nblocks : &bsize) = b;
			continue;
		}
		if (!nblocks) {
			fprintf(stderr, "%s: line %zu: an extent before the 'nblocks N' line\n", path, line);
			goto out;
		}
		if (n == cap) {
			struct src_extent *ne = realloc(e, (cap = cap ? 2 * cap : 256) * sizeof(*e));
			if (!ne) {
				fprintf(stderr, "%s: out of memory\n", path);
				goto out;
			}
			e = ne;
		}
		e[n++] = (struct src_extent){a, b, line, line};
	}
	if (!nblocks) {
		fprintf(stderr, "%s: no 'nblocks N' line\n", path);
		goto out;
	}
	if (nblocks > BGA_MAX_BLOCKS) {
		fprintf(stderr, "%s: nblocks %" PRIu64 " is past bgalloc's %" PRIu64 "\n", path, nblocks, BGA_MAX_BLOCKS);
		goto out;
	}
	if (check_extents(path, e, n, nblocks, "blocks"))
		goto out;
	printf("extent list: %zu %s extents, %" PRIu64 " blocks of %" PRIu64 " bytes\n", n, used ? "used" : "free",
	       nblocks, bsize);
	rc = finish_import(o, nblocks, bsize, e, n, used);
out:
	free(e);
	free(d);
	return rc;
}
