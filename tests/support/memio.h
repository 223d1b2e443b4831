/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_MEMIO_H
#define BGA_MEMIO_H

/*
 * An in-memory metadata area for the persistence tests, the fuzz harness
 * and the stress program: a growable byte image behind a struct bga_io,
 * with an optional log of every write and flush (the crash simulation
 * replays subsets of it) and an injected write error.
 *
 * Reads past the end read zeros, like the file-backed io.  Not
 * thread-safe: bga_store serialises its own calls.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc.h>

struct memio_ev {
	uint64_t off;       /* a write at off of len bytes, or a flush (len 0, data NULL) */
	size_t len;
	unsigned char *data;
};

struct memio {
	unsigned char *buf;
	size_t size;            /* the area's size: the end of the furthest write */
	size_t cap;             /* bytes allocated (zeroed past size) */
	bool record;            /* keep the log */
	struct memio_ev *log;
	size_t nlog, caplog;
	long fail_write;        /* >= 0: the write with this index (counting from 0) fails with -EIO */
	long fail_flush;        /* >= 0: the flush with this index fails */
	long writes, flushes;   /* calls so far */
	uint64_t bytes_written;
};

/* Grow the area to `size` bytes; the allocation at least doubles, so an
 * area written unit by unit is not copied once per unit. */
static inline int memio_grow(struct memio *m, size_t size)
{
	if (size <= m->size)
		return 0;
	if (size > m->cap) {
		size_t cap = size > 2 * m->cap ? size : 2 * m->cap;
		unsigned char *b = realloc(m->buf, cap);
		if (b == NULL)
			return -ENOMEM;
		memset(b + m->cap, 0, cap - m->cap);
		m->buf = b;
		m->cap = cap;
	}
	m->size = size;
	return 0;
}

static inline int memio_log(struct memio *m, uint64_t off, const void *data, size_t len)
{
	if (!m->record)
		return 0;
	if (m->nlog == m->caplog) {
		size_t cap = m->caplog ? 2 * m->caplog : 256;
		struct memio_ev *l = realloc(m->log, cap * sizeof(*l));
		if (l == NULL)
			return -ENOMEM;
		m->log = l;
		m->caplog = cap;
	}
	struct memio_ev *e = &m->log[m->nlog];
	e->off = off;
	e->len = len;
	e->data = NULL;
	if (len) {
		e->data = malloc(len);
		if (e->data == NULL)
			return -ENOMEM;
		memcpy(e->data, data, len);
	}
	m->nlog++;
	return 0;
}

/* len bytes at off of an image of size bytes, zeros past its end: how
 * both ios read. */
static inline int memio_read_image(const unsigned char *img, size_t size, void *buf, size_t len, uint64_t off)
{
	size_t have = off < size ? size - (size_t)off : 0;
	size_t n = len < have ? len : have;
	if (n)
		memcpy(buf, img + off, n);
	memset((unsigned char *)buf + n, 0, len - n);
	return 0;
}

static inline int memio_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct memio *m = ctx;
	return memio_read_image(m->buf, m->size, buf, len, off);
}

static inline int memio_write(void *ctx, const void *buf, size_t len, uint64_t off)
{
	struct memio *m = ctx;
	if (m->fail_write >= 0 && m->writes++ == m->fail_write)
		return -EIO;
	if (m->fail_write < 0)
		m->writes++;
	if (memio_grow(m, (size_t)off + len))
		return -ENOMEM;
	memcpy(m->buf + off, buf, len);
	m->bytes_written += len;
	return memio_log(m, off, buf, len);
}

static inline int memio_flush(void *ctx)
{
	struct memio *m = ctx;
	if (m->fail_flush >= 0 && m->flushes == m->fail_flush) {
		m->flushes++;
		return -EIO;
	}
	m->flushes++;
	return memio_log(m, 0, NULL, 0);
}

static inline void memio_init(struct memio *m, struct bga_io *io)
{
	memset(m, 0, sizeof(*m));
	m->fail_write = -1;
	m->fail_flush = -1;
	io->ctx = m;
	io->read = memio_read;
	io->write = memio_write;
	io->flush = memio_flush;
}

static inline void memio_clear_log(struct memio *m)
{
	for (size_t i = 0; i < m->nlog; i++)
		free(m->log[i].data);
	m->nlog = 0;
}

static inline void memio_free(struct memio *m)
{
	memio_clear_log(m);
	free(m->log);
	free(m->buf);
	memset(m, 0, sizeof(*m));
}

/* A read-only io over a fixed byte string (the fuzz harness), reading
 * zeros past its end. */
struct constio {
	const unsigned char *data;
	size_t size;
};

static inline int constio_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	const struct constio *c = ctx;
	return memio_read_image(c->data, c->size, buf, len, off);
}

static inline int constio_write(void *ctx, const void *buf, size_t len, uint64_t off)
{
	(void)ctx;
	(void)buf;
	(void)len;
	(void)off;
	return -EROFS;
}

static inline int constio_flush(void *ctx)
{
	(void)ctx;
	return 0;
}

#endif
