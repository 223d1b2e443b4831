/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Inodes and the ino -> inode table.  Inos are reused once their inode is
 * gone (the kernel has forgotten it), so the table stays dense. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "bgafs.h"

int itab_init(struct itab *t)
{
	memset(t, 0, sizeof(*t));
	t->next = BGAFS_ROOT;
	return -pthread_rwlock_init(&t->lock, NULL);
}

void itab_destroy(struct itab *t, struct bga_rec *rec)
{
	for (uint64_t i = 0; i < t->cap; i++)
		if (t->v[i])
			inode_free(rec, t->v[i]);
	free(t->v);
	free(t->freeino);
	pthread_rwlock_destroy(&t->lock);
	memset(t, 0, sizeof(*t));
}

struct inode *itab_get(struct itab *t, uint64_t ino)
{
	struct inode *ip = NULL;
	pthread_rwlock_rdlock(&t->lock);
	if (ino < t->cap)
		ip = t->v[ino];
	pthread_rwlock_unlock(&t->lock);
	return ip;
}

static int ensure_cap_locked(struct itab *t, uint64_t ino)
{
	if (ino < t->cap)
		return 0;
	uint64_t cap = t->cap ? t->cap : 1024;
	while (cap <= ino)
		cap *= 2;
	struct inode **v = realloc(t->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memset(v + t->cap, 0, (cap - t->cap) * sizeof(*v));
	t->v = v;
	t->cap = cap;
	return 0;
}

int itab_insert(struct itab *t, struct inode *ip)
{
	int rc = 0;
	pthread_rwlock_wrlock(&t->lock);
	if (!ip->ino) {
		if (t->nfree)
			ip->ino = t->freeino[--t->nfree];
		else
			ip->ino = t->next++;
	} else if (ip->ino >= t->next) {
		t->next = ip->ino + 1;
	}
	if ((rc = ensure_cap_locked(t, ip->ino)) == 0) {
		if (t->v[ip->ino])
			rc = -EEXIST;
		else {
			t->v[ip->ino] = ip;
			t->count++;
		}
	}
	pthread_rwlock_unlock(&t->lock);
	return rc;
}

uint64_t itab_count(struct itab *t)
{
	pthread_rwlock_rdlock(&t->lock);
	uint64_t n = t->count;
	pthread_rwlock_unlock(&t->lock);
	return n;
}

void itab_remove(struct itab *t, uint64_t ino)
{
	pthread_rwlock_wrlock(&t->lock);
	if (ino < t->cap && t->v[ino]) {
		t->v[ino] = NULL;
		t->count--;
		if (t->nfree == t->freecap) {
			size_t cap = t->freecap ? t->freecap * 2 : 256;
			uint64_t *f = realloc(t->freeino, cap * sizeof(*f));
			if (f) {
				t->freeino = f;
				t->freecap = cap;
			}
		}
		/* Without room the ino is simply not reused. */
		if (t->nfree < t->freecap)
			t->freeino[t->nfree++] = ino;
	}
	pthread_rwlock_unlock(&t->lock);
}

void itab_reset_free(struct itab *t)
{
	pthread_rwlock_wrlock(&t->lock);
	t->nfree = 0;
	for (uint64_t i = t->next; i-- > BGAFS_ROOT;) {
		if (i < t->cap && t->v[i])
			continue;
		if (t->nfree == t->freecap) {
			size_t cap = t->freecap ? t->freecap * 2 : 256;
			uint64_t *f = realloc(t->freeino, cap * sizeof(*f));
			if (!f)
				break; /* the rest is simply not reused */
			t->freeino = f;
			t->freecap = cap;
		}
		t->freeino[t->nfree++] = i;
	}
	pthread_rwlock_unlock(&t->lock);
}

struct inode *inode_new(uint32_t mode, uint32_t uid, uint32_t gid)
{
	struct inode *ip = calloc(1, sizeof(*ip));
	if (!ip)
		return NULL;
	if (pthread_rwlock_init(&ip->lock, NULL)) {
		free(ip);
		return NULL;
	}
	ip->mode = mode;
	ip->uid = uid;
	ip->gid = gid;
	ip->nlink = S_ISDIR(mode) ? 2 : 1;
	ts_now(&ip->mtime);
	ip->atime = ip->ctime = ip->mtime;
	return ip;
}

void dchange_free(struct inode *ip)
{
	struct dchange *c = ip->dchg, *next;
	for (; c; c = next) {
		next = c->next;
		free(c);
	}
	ip->dchg = NULL;
}

void inode_free(struct bga_rec *rec, struct inode *ip)
{
	if (!ip)
		return;
	if (ip->rsv)
		bga_rec_rsv_close(rec, ip->rsv);
	extmap_destroy(&ip->map);
	dir_destroy(&ip->dir);
	free(ip->link);
	dchange_free(ip);
	xattr_destroy(&ip->xattrs);
	pthread_rwlock_destroy(&ip->lock);
	free(ip);
}

static int ts_le(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec <= b->tv_nsec);
}

int inode_atime_due(const struct fs *fs, const struct inode *ip, const struct timespec *now)
{
	if ((fs->atime & ATIME_NOATIME) || ((fs->atime & ATIME_NODIRATIME) && S_ISDIR(ip->mode)))
		return 0;
	if (fs->atime & ATIME_STRICT)
		return 1;
	return ts_le(&ip->atime, &ip->mtime) || ts_le(&ip->atime, &ip->ctime) ||
	       now->tv_sec - ip->atime.tv_sec >= 24 * 60 * 60;
}
