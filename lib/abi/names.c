/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Clearer names, from 0.3.0 (<bgalloc.h>, "Clearer names for calls whose
 * names mislead"): each is the call it names, so it shares that call's
 * contract, and the old names stay exported as they were.  Plain calls,
 * not symbol aliases: both names then exist in the static library as in
 * the shared one, each with its own symbol version, and the cost is one
 * jump (the compiler makes each a tail call).
 */
#include <bgalloc.h>

uint64_t bga_free_blocks_read(const struct bga_volume *vol)
{
	return bga_free_estimate(vol);
}

uint64_t bga_free_blocks_sum(struct bga_volume *vol)
{
	return bga_free_exact(vol);
}

int bga_window_open(struct bga_volume *vol, struct bga_rsv **out)
{
	return bga_rsv_open(vol, out);
}

void bga_window_close(struct bga_rsv *rsv)
{
	bga_rsv_close(rsv);
}

int bga_window_set_size(struct bga_rsv *rsv, uint32_t blocks)
{
	return bga_rsv_set_size(rsv, blocks);
}

int bga_window_get(const struct bga_rsv *rsv, struct bga_extent *out)
{
	return bga_rsv_window(rsv, out);
}
