/*
 * Looking at a volume: its free extents, its allocated ones, the figures
 * bga_stats keeps, the invariant checker, and a trim that discards free
 * runs while others may allocate.  bga_foreach_free(3),
 * bga_foreach_used(3), bga_stats(3), bga_check(3), bga_trim(3).
 */
#include <stdio.h>
#include <bgalloc.h>

static int show_free(void *ctx, uint64_t start, uint64_t len)
{
	(void)ctx;
	printf("free %llu+%llu\n", (unsigned long long)start, (unsigned long long)len);
	return 0;
}

static int show_used(void *ctx, uint64_t start, uint64_t len, uint32_t flags)
{
	(void)ctx;
	printf("used %llu+%llu%s\n", (unsigned long long)start, (unsigned long long)len,
	       flags & BGA_USED_DEFERRED ? " (freed at the next commit)" : "");
	return 0;
}

static int discard(void *ctx, uint64_t start, uint64_t len)
{
	(void)start;
	*(uint64_t *)ctx += len; /* a real one would issue BLKDISCARD here */
	return 0;
}

int main(void)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	struct bga_extent e;
	struct bga_stats st;
	struct bga_check_report rep;
	uint64_t discarded = 0, trimmed = 0;
	bga_config_init(&cfg, 4096);
	cfg.blocks_per_group = 1024;
	int rc = bga_create(&cfg, &vol);
	struct bga_request req = {.goal = 1000, .min_len = 100, .max_len = 100};
	if (rc || (rc = bga_alloc(vol, &req, &e)) || (rc = bga_free_deferred(vol, e.start + 90, 10, 1)))
		return fprintf(stderr, "setup: %s\n", bga_strerror(rc)), 1;
	bga_foreach_free(vol, 0, 4096, 1, show_free, NULL);
	bga_foreach_used(vol, 0, 4096, show_used, NULL);
	if ((rc = bga_stats(vol, &st)) || (rc = bga_check(vol, &rep)))
		return fprintf(stderr, "stats/check: %s %s\n", bga_strerror(rc), rep.message), 1;
	printf("%llu free in %llu extents, fragmentation %.3f; check clean\n",
	       (unsigned long long)st.free_blocks, (unsigned long long)st.free_extents, st.frag_score);
	if ((rc = bga_trim(vol, 0, 4096, 64, discard, &discarded, &trimmed)))
		return fprintf(stderr, "trim: %s\n", bga_strerror(rc)), 1;
	printf("trimmed %llu blocks\n", (unsigned long long)trimmed);
	bga_destroy(vol);
	return 0;
}
