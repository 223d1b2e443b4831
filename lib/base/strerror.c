/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>

#include <bgalloc.h>

const char *bga_strerror(int err)
{
	/* Negated as unsigned: -INT_MIN does not fit an int. */
	switch (err < 0 ? 0u - (unsigned)err : (unsigned)err) {
	case 0: return "success";
	case EINVAL: return "EINVAL: invalid argument, or blocks not in the state the call needs";
	case ENOSPC: return "ENOSPC: no free run of the requested length, or free space is promised to reservations";
	case EAGAIN: return "EAGAIN: no space now, but there will be once pending deferred frees are committed";
	case ENOMEM: return "ENOMEM: out of memory";
	case EUCLEAN: return "EUCLEAN: the volume failed an invariant check";
	case EBUSY: return "EBUSY: busy";
	case EIO: return "EIO: I/O error";
	case EBADMSG: return "EBADMSG: checksum mismatch";
	default: return "unknown error";
	}
}
