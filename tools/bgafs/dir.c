/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A directory's entries: a chained hash table by name (FNV-1a), doubled
 * when it holds more entries than buckets. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bgafs.h"

static uint32_t hash_name(const char *s, size_t len)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

struct dentry *dir_find(const struct dirtab *d, const char *name, size_t len)
{
	if (!d->nb)
		return NULL;
	uint32_t h = hash_name(name, len);
	for (struct dentry *e = d->b[h & (d->nb - 1)]; e; e = e->next)
		if (e->hash == h && e->len == len && !memcmp(e->name, name, len))
			return e;
	return NULL;
}

static int grow(struct dirtab *d)
{
	uint32_t nb = d->nb ? d->nb * 2 : 8;
	struct dentry **b = calloc(nb, sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (uint32_t i = 0; i < d->nb; i++) {
		struct dentry *e = d->b[i], *next;
		for (; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	}
	free(d->b);
	d->b = b;
	d->nb = nb;
	return 0;
}

int dir_add(struct dirtab *d, const char *name, size_t len, uint64_t ino)
{
	if (d->count >= d->nb && grow(d))
		return -ENOMEM;
	struct dentry *e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return -ENOMEM;
	e->ino = ino;
	e->hash = hash_name(name, len);
	e->len = (uint16_t)len;
	memcpy(e->name, name, len);
	e->name[len] = 0;
	e->next = d->b[e->hash & (d->nb - 1)];
	d->b[e->hash & (d->nb - 1)] = e;
	d->count++;
	return 0;
}

int dir_remove(struct dirtab *d, const char *name, size_t len)
{
	if (!d->nb)
		return -ENOENT;
	uint32_t h = hash_name(name, len);
	for (struct dentry **pp = &d->b[h & (d->nb - 1)]; *pp; pp = &(*pp)->next) {
		struct dentry *e = *pp;
		if (e->hash == h && e->len == len && !memcmp(e->name, name, len)) {
			*pp = e->next;
			free(e);
			d->count--;
			return 0;
		}
	}
	return -ENOENT;
}

int dir_foreach(const struct dirtab *d, dir_fn fn, void *ctx)
{
	for (uint32_t i = 0; i < d->nb; i++)
		for (struct dentry *e = d->b[i]; e; e = e->next) {
			int rc = fn(ctx, e);
			if (rc)
				return rc;
		}
	return 0;
}

void dir_destroy(struct dirtab *d)
{
	for (uint32_t i = 0; i < d->nb; i++) {
		struct dentry *e = d->b[i], *next;
		for (; e; e = next) {
			next = e->next;
			free(e);
		}
	}
	free(d->b);
	memset(d, 0, sizeof(*d));
}
