/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bgafs's extended attribute store (xattr.c) alone, no FUSE: the flags
 * and errnos of set and remove, the list and its ERANGE, the per-inode
 * byte cap, and the record blob: a round trip, and every truncation or
 * corruption of it refused with -EUCLEAN, never a crash or a partial set
 * taken for a whole one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bgafs.h"

static int failures;

#define CHECK(cond, ...)                                             \
	do {                                                         \
		if (!(cond)) {                                       \
			fprintf(stderr, "test_xattr:%d: ", __LINE__); \
			fprintf(stderr, __VA_ARGS__);                \
			fputc('\n', stderr);                         \
			failures++;                                  \
		}                                                    \
	} while (0)

static int same(const struct xattrs *a, const struct xattrs *b)
{
	if (a->n != b->n || a->bytes != b->bytes)
		return 0;
	for (uint32_t i = 0; i < a->n; i++) {
		const struct xattr *e = xattr_find(b, a->v[i].name);
		if (!e || e->size != a->v[i].size || memcmp(e->value, a->v[i].value, e->size))
			return 0;
	}
	return 1;
}

int main(void)
{
	struct xattrs x = {0};
	char buf[256];
	CHECK(xattr_list(&x, NULL, 0) == 0, "empty list");
	CHECK(xattr_find(&x, "user.a") == NULL, "find in an empty set");
	CHECK(xattr_remove(&x, "user.a") == -ENODATA, "remove from an empty set");
	CHECK(xattr_set(&x, "user.a", "1", 1, XA_REPLACE) == -ENODATA, "REPLACE of an absent name");
	CHECK(x.n == 0 && x.bytes == 0, "a failed set changes nothing");
	CHECK(xattr_set(&x, "user.a", "1", 1, XA_CREATE) == 0, "CREATE");
	CHECK(xattr_set(&x, "user.a", "22", 2, XA_CREATE) == -EEXIST, "CREATE of a present name");
	CHECK(xattr_find(&x, "user.a")->size == 1, "a failed CREATE keeps the value");
	CHECK(xattr_set(&x, "user.a", "22", 2, XA_REPLACE) == 0, "REPLACE");
	CHECK(xattr_set(&x, "user.b", "", 0, 0) == 0, "an empty value");
	CHECK(xattr_set(&x, "user.c", "333", 3, 0) == 0, "a third");
	CHECK(x.bytes == 6 + 2 + 6 + 0 + 6 + 3, "bytes %u", x.bytes);
	long n = xattr_list(&x, NULL, 0);
	CHECK(n == 21, "list length %ld", n);
	CHECK(xattr_list(&x, buf, 20) == -ERANGE, "a list that does not fit");
	CHECK(xattr_list(&x, buf, sizeof(buf)) == 21 && !memcmp(buf, "user.a\0user.b\0user.c\0", 21), "list");
	CHECK(xattr_remove(&x, "user.a") == 0 && xattr_remove(&x, "user.a") == -ENODATA, "remove once");
	CHECK(x.n == 2 && x.bytes == 6 + 6 + 3, "after remove: %u entries, %u bytes", x.n, x.bytes);

	/* the caps: one value, names and values of one inode */
	char *big = calloc(1, BGAFS_XATTR_BYTES);
	CHECK(xattr_set(&x, "user.big", big, BGAFS_XATTR_VALUE + 1, 0) == -E2BIG, "a value past the value cap");
	CHECK(xattr_set(&x, "user.big", big, BGAFS_XATTR_VALUE, 0) == 0, "a value of the value cap");
	uint32_t room = BGAFS_XATTR_BYTES - x.bytes - 9; /* "user.big2" */
	CHECK(room < BGAFS_XATTR_VALUE, "the test's arithmetic: room %u", room);
	CHECK(xattr_set(&x, "user.big2", big, room + 1, 0) == -ENOSPC, "one byte past the cap");
	CHECK(xattr_set(&x, "user.big2", big, room, 0) == 0 && x.bytes == BGAFS_XATTR_BYTES, "exactly the cap");
	CHECK(xattr_set(&x, "user.d", "", 0, 0) == -ENOSPC, "a name past the cap");
	CHECK(xattr_remove(&x, "user.big2") == 0, "remove big2");
	CHECK(xattr_set(&x, "user.big", big, 10, 0) == 0, "a smaller value in place");
	CHECK(x.bytes == 6 + 6 + 3 + 8 + 10, "bytes after shrinking %u", x.bytes);
	/* the names' cap: listxattr's 64 KiB, whatever the values */
	struct xattrs l = {0};
	char nm[300];
	memset(nm, 'n', sizeof(nm));
	memcpy(nm, "user.", 5);
	uint32_t k = 0;
	for (; k < BGAFS_XATTR_LIST / 256; k++) { /* names of 255 bytes: 256 in the list each */
		snprintf(nm + 250, 6, "%05u", k);
		CHECK(xattr_set(&l, nm, "", 0, XA_CREATE) == 0, "name %u", k);
	}
	CHECK(l.list == BGAFS_XATTR_LIST && xattr_list(&l, NULL, 0) == BGAFS_XATTR_LIST, "list at its cap: %u", l.list);
	snprintf(nm, sizeof(nm), "user.x");
	CHECK(xattr_set(&l, nm, "", 0, 0) == -ENOSPC, "a name past the list cap");
	CHECK(xattr_set(&l, "user.nnnnn", "v", 1, XA_CREATE) == -ENOSPC && l.n == k, "nothing changed");
	xattr_destroy(&l);

	/* the blob: round trip */
	struct tbuf b = {0};
	CHECK(xattr_put(&x, &b) == 0 && b.len == xattr_blob_bytes(&x), "put: %zu bytes, said %zu", b.len,
	      xattr_blob_bytes(&x));
	struct xattrs y = {0};
	CHECK(xattr_parse(&y, b.p, b.len) == 0 && same(&x, &y), "round trip");
	xattr_destroy(&y);
	/* every truncation is refused */
	for (size_t cut = 1; cut < b.len; cut++) {
		struct xattrs z = {0};
		CHECK(xattr_parse(&z, b.p, cut) == -EUCLEAN, "a blob cut to %zu bytes parsed", cut);
		xattr_destroy(&z);
	}
	/* a byte too many, a name twice, an empty name, a NUL in a name */
	unsigned char *q = malloc(b.len + 1);
	memcpy(q, b.p, b.len);
	q[b.len] = 0;
	struct xattrs z = {0};
	CHECK(xattr_parse(&z, q, b.len + 1) == -EUCLEAN, "trailing byte");
	xattr_destroy(&z);
	struct xattrs two = {0};
	xattr_set(&two, "user.a", "1", 1, 0);
	xattr_set(&two, "user.b", "1", 1, 0);
	struct tbuf tb = {0};
	xattr_put(&two, &tb);
	/* entry 2 starts at 4 + 6 + 6 + 1: make its name "user.a" */
	tb.p[4 + 6 + 6 + 1 + 6 + 5] = 'a';
	CHECK(xattr_parse(&z, tb.p, tb.len) == -EUCLEAN, "a name twice");
	xattr_destroy(&z);
	tb.p[4 + 6 + 5] = 0;
	CHECK(xattr_parse(&z, tb.p, tb.len) == -EUCLEAN, "a NUL in a name");
	xattr_destroy(&z);
	uint16_t zero = 0;
	memcpy(tb.p + 4, &zero, 2);
	CHECK(xattr_parse(&z, tb.p, tb.len) == -EUCLEAN, "an empty name");
	xattr_destroy(&z);
	CHECK(xattr_parse(&z, NULL, 0) == 0 && z.n == 0, "no blob: no attributes");
	xattr_destroy(&two);
	free(tb.p);
	free(q);
	free(b.p);
	free(big);
	xattr_destroy(&x);
	if (failures)
		return 1;
	printf("test_xattr: flags, errnos, cap and blob agree\n");
	return 0;
}
