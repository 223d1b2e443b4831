/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* How many pieces a replayed file's extents make (runs.h). */

#include "runs.h"

#include <stdlib.h>

int runs_by_start(const void *a, const void *b)
{
	const struct bga_extent *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

size_t runs_physical(struct bga_extent *ext, size_t n)
{
	if (!n)
		return 0;
	qsort(ext, n, sizeof(*ext), runs_by_start);
	size_t k = 1;
	uint64_t end = ext[0].start + ext[0].len;
	for (size_t i = 1; i < n; i++) {
		if (ext[i].start > end)
			k++;
		if (ext[i].start + ext[i].len > end)
			end = ext[i].start + ext[i].len;
	}
	return k;
}

struct lext {
	int64_t l;
	uint64_t p, len;
};

/* by logical place, then by physical block (a place written twice) */
static int by_lblk(const void *a, const void *b)
{
	const struct lext *x = a, *y = b;
	return x->l < y->l ? -1 : x->l > y->l ? 1 : (x->p > y->p) - (x->p < y->p);
}

size_t runs_logical(const struct bga_extent *ext, const int64_t *lblk, size_t n)
{
	if (!n)
		return 0;
	struct lext *v = malloc(n * sizeof(*v));
	if (!v)
		return 0;
	for (size_t i = 0; i < n; i++)
		v[i] = (struct lext){lblk[i], ext[i].start, ext[i].len};
	qsort(v, n, sizeof(*v), by_lblk);
	size_t k = 1;
	for (size_t i = 1; i < n; i++)
		if (v[i].l != v[i - 1].l + (int64_t)v[i - 1].len || v[i].p != v[i - 1].p + v[i - 1].len)
			k++;
	free(v);
	return k;
}
