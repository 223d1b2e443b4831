/* SPDX-License-Identifier: LGPL-2.1-or-later */
#define _GNU_SOURCE /* strerrorname_np, strerrordesc_np (glibc 2.32) */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc.h>

/*
 * Errnos the library only passes through (an io callback's, open's) are
 * named by glibc: "ENOENT: No such file or directory".  The joined string
 * is made once per errno and kept for the life of the process, so every
 * pointer bga_strerror returns stays valid and two calls in one printf
 * never share a buffer; a thread that loses the race to publish one
 * frees its copy.  At most one string per errno below BGA_ERRNO_NAMED.
 */
#define BGA_ERRNO_NAMED 4096
static _Atomic(char *) passed_names[BGA_ERRNO_NAMED];

static const char *passed_through(unsigned e)
{
	const char *name = e < BGA_ERRNO_NAMED ? strerrorname_np((int)e) : NULL;
	const char *desc = name ? strerrordesc_np((int)e) : NULL;
	if (name == NULL || desc == NULL)
		return "unknown error";
	char *s = atomic_load_explicit(&passed_names[e], memory_order_acquire);
	if (s)
		return s;
	size_t n = strlen(name) + 2 + strlen(desc) + 1;
	char *mine = malloc(n);
	if (mine == NULL)
		return desc;
	snprintf(mine, n, "%s: %s", name, desc);
	if (atomic_compare_exchange_strong_explicit(&passed_names[e], &s, mine, memory_order_acq_rel,
						    memory_order_acquire))
		return mine;
	free(mine);
	return s;
}

const char *bga_strerror(int err)
{
	/* Negated as unsigned: -INT_MIN does not fit an int. */
	unsigned e = err < 0 ? 0u - (unsigned)err : (unsigned)err;
	switch (e) {
	case 0: return "success";
	case EINVAL: return "EINVAL: invalid argument, or blocks not in the state the call needs";
	case ENOSPC: return "ENOSPC: no free run of the requested length, or free space is promised to reservations";
	case EAGAIN: return "EAGAIN: no space now, but there will be once pending deferred frees are committed";
	case ENOMEM: return "ENOMEM: out of memory";
	case EUCLEAN: return "EUCLEAN: the volume failed an invariant check, or its stored metadata is damaged";
	case ENODATA:
		return "ENODATA: no bgalloc superblock: an empty or never-stored area, other data, or the wrong offset";
	case EBUSY: return "EBUSY: busy";
	case EIO: return "EIO: I/O error";
	case EBADMSG: return "EBADMSG: checksum mismatch";
	default: return passed_through(e);
	}
}
