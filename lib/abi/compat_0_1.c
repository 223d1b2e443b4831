/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The 0.1.0 ABI, kept: a program built against the 0.1.0 <bgalloc.h> runs
 * against this library (tests/abi/abi_compat_test.sh runs one).
 *
 * How (docs/ABI.md): the caller-allocated structs grow only at
 * their end, and each function that takes one has one ELF symbol version
 * per layout (lib/abi/bgalloc.map).  A program linked against this
 * library binds to the newest, bga_create@@BGA_0.2; a program linked
 * against 0.1.0, which had no versions, binds to the oldest, the
 * bga_create@BGA_0.1 defined here (the dynamic linker gives an unversioned
 * reference the first version a library defines).  These wrappers copy
 * between the caller's 0.1.0 layout and the current one, so the library
 * never reads or writes past the 0.1.0 layout for such a caller; the
 * fields 0.1.0 did not have take bga_config_init's defaults (for a
 * request: zero, which means what 0.1.0 did).
 *
 * Only the shared library has them: a static link is always against the
 * header it was compiled with.  Names here do not start with bga_, so the
 * version script's wildcard does not export them under their own names.
 */
#include <stddef.h>
#include <string.h>

#include <bgalloc.h>

/* The 0.1.0 layouts, as its header declared them (commit 8b4a5b1). */
struct config_0_1 {
	uint64_t nblocks;
	uint32_t blocks_per_group;
	uint64_t first_data_block;
	uint32_t lock_slots;
	int32_t counter_batch;
	uint32_t rsv_default;
	uint32_t rsv_max;
	uint32_t flags;
	uint32_t lock_kind;
};

struct request_0_1 {
	uint64_t goal, min_len, max_len;
	struct bga_rsv *rsv;
	uint32_t flags;
};

struct stats_0_1 {
	uint64_t nblocks, free_blocks, reserved_blocks;
	uint64_t groups, groups_initialised, groups_quarantined;
	uint64_t hist_count[49];
	uint64_t hist_blocks[49];
	uint64_t free_extents;
	double frag_score;
	uint64_t lock_acquisitions, lock_contended, lock_wait_ns;
	uint32_t lock_slots, busiest_slot;
	uint64_t busiest_slot_contended;
	uint64_t rsv_hits, rsv_allocs;
	double rsv_hit_ratio;
	uint64_t rsv_windows_open;
	uint64_t rsv_window_blocks;
	uint64_t deferred_blocks, deferred_extents;
	uint64_t last_committed_txn;
	uint64_t groups_repaired;
};

/* Each 0.1.0 layout is a prefix of the current one: a field that moved
 * would fail here, not in a user's program. */
#define SAME(now, f, old)                                                                                 \
	_Static_assert(offsetof(struct now, f) == offsetof(struct old, f) &&                                   \
			       sizeof(((struct now *)0)->f) == sizeof(((struct old *)0)->f),                    \
		       #now "." #f " moved since 0.1.0")
SAME(bga_config, nblocks, config_0_1);
SAME(bga_config, blocks_per_group, config_0_1);
SAME(bga_config, first_data_block, config_0_1);
SAME(bga_config, lock_slots, config_0_1);
SAME(bga_config, counter_batch, config_0_1);
SAME(bga_config, rsv_default, config_0_1);
SAME(bga_config, rsv_max, config_0_1);
SAME(bga_config, flags, config_0_1);
SAME(bga_config, lock_kind, config_0_1);
SAME(bga_request, goal, request_0_1);
SAME(bga_request, min_len, request_0_1);
SAME(bga_request, max_len, request_0_1);
SAME(bga_request, rsv, request_0_1);
SAME(bga_request, flags, request_0_1);
SAME(bga_stats, nblocks, stats_0_1);
SAME(bga_stats, groups_quarantined, stats_0_1);
SAME(bga_stats, hist_count, stats_0_1);
SAME(bga_stats, hist_blocks, stats_0_1);
SAME(bga_stats, free_extents, stats_0_1);
SAME(bga_stats, frag_score, stats_0_1);
SAME(bga_stats, lock_wait_ns, stats_0_1);
SAME(bga_stats, busiest_slot, stats_0_1);
SAME(bga_stats, busiest_slot_contended, stats_0_1);
SAME(bga_stats, rsv_hit_ratio, stats_0_1);
SAME(bga_stats, rsv_window_blocks, stats_0_1);
SAME(bga_stats, deferred_extents, stats_0_1);
SAME(bga_stats, last_committed_txn, stats_0_1);
SAME(bga_stats, groups_repaired, stats_0_1);
_Static_assert(sizeof(struct config_0_1) == 48 && sizeof(struct request_0_1) == 40 &&
		       sizeof(struct stats_0_1) == 960,
	       "the 0.1.0 sizes on x86-64 and other LP64 targets");

#define COMPAT(ret, name, args)                                                                           \
	__attribute__((visibility("default"), used)) ret compat_0_1_##name args;                             \
	__asm__(".symver compat_0_1_" #name ", " #name "@BGA_0.1");                                          \
	ret compat_0_1_##name args

/* A 0.1.0 config read into the current layout. */
static const struct bga_config *widen_config(const struct config_0_1 *old, struct bga_config *cfg)
{
	if (old == NULL)
		return NULL;
	bga_config_init(cfg, old->nblocks);
	memcpy(cfg, old, sizeof(*old));
	return cfg;
}

COMPAT(void, bga_config_init, (struct config_0_1 * cfg, uint64_t nblocks))
{
	struct bga_config now;
	bga_config_init(&now, nblocks);
	if (cfg)
		memcpy(cfg, &now, sizeof(*cfg));
}

COMPAT(int, bga_create, (const struct config_0_1 *cfg, struct bga_volume **out))
{
	struct bga_config now;
	return bga_create(widen_config(cfg, &now), out);
}

COMPAT(int, bga_metadata_size, (const struct config_0_1 *cfg, uint64_t *bytes))
{
	struct bga_config now;
	return bga_metadata_size(widen_config(cfg, &now), bytes);
}

COMPAT(int, bga_load, (const struct bga_io *io, const struct config_0_1 *cfg, struct bga_volume **out))
{
	struct bga_config now;
	return bga_load(io, widen_config(cfg, &now), out);
}

COMPAT(int, bga_load_ex,
       (const struct bga_io *io, const struct config_0_1 *cfg, uint32_t flags, struct bga_volume **out))
{
	struct bga_config now;
	return bga_load_ex(io, widen_config(cfg, &now), flags, out);
}

COMPAT(int, bga_volume_config, (const struct bga_volume *vol, struct config_0_1 *out))
{
	struct bga_config now;
	int rc = bga_volume_config(vol, out ? &now : NULL);
	if (rc == 0)
		memcpy(out, &now, sizeof(*out));
	return rc;
}

COMPAT(int, bga_alloc, (struct bga_volume * vol, const struct request_0_1 *req, struct bga_extent *out))
{
	if (req == NULL)
		return bga_alloc(vol, NULL, out);
	struct bga_request now;
	memset(&now, 0, sizeof(now));
	memcpy(&now, req, offsetof(struct request_0_1, flags) + sizeof(req->flags));
	return bga_alloc(vol, &now, out);
}

COMPAT(int, bga_stats, (struct bga_volume * vol, struct stats_0_1 *st))
{
	struct bga_stats now;
	int rc = bga_stats(vol, st ? &now : NULL);
	if (rc == 0)
		memcpy(st, &now, sizeof(*st));
	return rc;
}
