/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_SNAPSHOT_H
#define BGA_SNAPSHOT_H

/*
 * A byte image of a volume's whole allocation state, for tests that assert
 * "state unchanged" after a rejected call: every initialised group's
 * bitmap, free count and summary, the group index bits, the exact free
 * counter, reservations, windows and pending deferred frees, and the last
 * committed txn.  Two snapshots of the same state compare equal with
 * memcmp(); lock statistics and hit counters are left out.
 *
 * Call on a quiescent volume.  *buf is malloc()ed; the caller frees it.
 * Returns 0, -EINVAL (NULL argument) or -ENOMEM.
 */

#include <stddef.h>

struct bga_volume;

int bga__snapshot(struct bga_volume *vol, void **buf, size_t *len);

#endif
