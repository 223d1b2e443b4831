/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* An inode's extended attributes: an array searched by name.  Files carry
 * a handful (security labels, user tags, ACLs), so a linear scan beats
 * any index.  The caps: one value up to the kernel's XATTR_SIZE_MAX, the
 * names' list within its XATTR_LIST_MAX, and 128 KiB in all, so that one
 * full-size value fits beside the others (xfstests' generic/020). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bgafs.h"

static struct xattr *find(const struct xattrs *x, const char *name, size_t len)
{
	for (uint32_t i = 0; i < x->n; i++)
		if (x->v[i].namelen == len && !memcmp(x->v[i].name, name, len))
			return &x->v[i];
	return NULL;
}

const struct xattr *xattr_find(const struct xattrs *x, const char *name)
{
	return find(x, name, strlen(name));
}

int xattr_set(struct xattrs *x, const char *name, const void *value, uint32_t size, int flags)
{
	size_t len = strlen(name);
	struct xattr *e = find(x, name, len);
	if (e && (flags & XA_CREATE))
		return -EEXIST;
	if (!e && (flags & XA_REPLACE))
		return -ENODATA;
	if (size > BGAFS_XATTR_VALUE)
		return -E2BIG;
	uint64_t bytes = (uint64_t)x->bytes + size + (e ? 0 : len) - (e ? e->size : 0);
	uint64_t list = x->list + (e ? 0 : len + 1);
	if (bytes > BGAFS_XATTR_BYTES || list > BGAFS_XATTR_LIST)
		return -ENOSPC;
	void *v = malloc(size ? size : 1);
	if (!v)
		return -ENOMEM;
	memcpy(v, value, size);
	if (!e) {
		if (x->n == x->cap) {
			uint32_t cap = x->cap ? x->cap * 2 : 4;
			struct xattr *nv = realloc(x->v, cap * sizeof(*nv));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			x->v = nv;
			x->cap = cap;
		}
		char *n = malloc(len + 1);
		if (!n) {
			free(v);
			return -ENOMEM;
		}
		memcpy(n, name, len + 1);
		e = &x->v[x->n++];
		*e = (struct xattr){.name = n, .namelen = (uint32_t)len};
	} else {
		free(e->value);
	}
	e->value = v;
	e->size = size;
	x->bytes = (uint32_t)bytes;
	x->list = (uint32_t)list;
	return 0;
}

int xattr_remove(struct xattrs *x, const char *name)
{
	struct xattr *e = find(x, name, strlen(name));
	if (!e)
		return -ENODATA;
	x->bytes -= e->namelen + e->size;
	x->list -= e->namelen + 1;
	free(e->name);
	free(e->value);
	*e = x->v[--x->n]; /* order carries no meaning */
	return 0;
}

long xattr_list(const struct xattrs *x, char *buf, size_t size)
{
	size_t need = 0;
	for (uint32_t i = 0; i < x->n; i++)
		need += x->v[i].namelen + 1;
	if (!size)
		return (long)need;
	if (need > size)
		return -ERANGE;
	for (uint32_t i = 0; i < x->n; i++) {
		memcpy(buf, x->v[i].name, x->v[i].namelen + 1);
		buf += x->v[i].namelen + 1;
	}
	return (long)need;
}

void xattr_destroy(struct xattrs *x)
{
	for (uint32_t i = 0; i < x->n; i++) {
		free(x->v[i].name);
		free(x->v[i].value);
	}
	free(x->v);
	memset(x, 0, sizeof(*x));
}

/* The blob in an inode record (table.c):
 *   u32 count, then count times: u16 namelen, u32 size, name, value
 * and nothing at all (0 bytes) for an inode without attributes. */
size_t xattr_blob_bytes(const struct xattrs *x)
{
	return x->n ? 4 + (size_t)x->n * 6 + x->bytes : 0;
}

int xattr_put(const struct xattrs *x, struct tbuf *b)
{
	if (!x->n)
		return 0;
	uint32_t n = x->n;
	if (tbuf_put(b, &n, sizeof(n)))
		return -ENOMEM;
	for (uint32_t i = 0; i < x->n; i++) {
		const struct xattr *e = &x->v[i];
		uint16_t nl = (uint16_t)e->namelen;
		if (tbuf_put(b, &nl, sizeof(nl)) || tbuf_put(b, &e->size, sizeof(e->size)) ||
		    tbuf_put(b, e->name, e->namelen) || tbuf_put(b, e->value, e->size))
			return -ENOMEM;
	}
	return 0;
}

int xattr_parse(struct xattrs *x, const unsigned char *p, size_t len)
{
	if (!len)
		return 0;
	uint32_t n;
	size_t off = sizeof(n);
	if (len < off)
		return -EUCLEAN;
	memcpy(&n, p, sizeof(n));
	for (uint32_t i = 0; i < n; i++) {
		uint16_t nl;
		uint32_t size;
		if (len - off < sizeof(nl) + sizeof(size))
			return -EUCLEAN;
		memcpy(&nl, p + off, sizeof(nl));
		memcpy(&size, p + off + sizeof(nl), sizeof(size));
		off += sizeof(nl) + sizeof(size);
		if (!nl || nl > 255 || len - off < nl || len - off - nl < size || memchr(p + off, 0, nl))
			return -EUCLEAN;
		char name[256];
		memcpy(name, p + off, nl);
		name[nl] = 0;
		/* A name twice or more than an inode may hold: not ours. */
		int rc = xattr_set(x, name, p + off + nl, size, XA_CREATE);
		if (rc)
			return rc == -ENOMEM ? rc : -EUCLEAN;
		off += nl + (size_t)size;
	}
	return off == len ? 0 : -EUCLEAN;
}
