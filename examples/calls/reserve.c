/*
 * Delayed allocation: a write promises its blocks at once and places them
 * later, at writeback; the promise never overcommits, and the placing
 * draws on it.  bga_reserve(3), bga_unreserve(3), BGA_USE_RESERVED.
 */
#include <stdio.h>
#include <bgalloc.h>

int main(void)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	struct bga_extent e;
	bga_config_init(&cfg, 1024);
	int rc = bga_create(&cfg, &vol);
	if (rc || (rc = bga_reserve(vol, 1000)))             /* a write of 1000 blocks */
		return fprintf(stderr, "reserve: %s\n", bga_strerror(rc)), 1;
	printf("a second promise of 100: %s\n", bga_strerror(bga_reserve(vol, 100))); /* -ENOSPC */
	struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = 1, .max_len = 600, .flags = BGA_USE_RESERVED};
	if ((rc = bga_alloc(vol, &req, &e)))                 /* writeback places part of it */
		return fprintf(stderr, "writeback: %s\n", bga_strerror(rc)), 1;
	printf("placed %llu blocks at %llu, %llu still promised\n", (unsigned long long)e.len,
	       (unsigned long long)e.start, (unsigned long long)bga_reserved(vol));
	if ((rc = bga_unreserve(vol, bga_reserved(vol))))   /* the rest was truncated unwritten */
		return fprintf(stderr, "unreserve: %s\n", bga_strerror(rc)), 1;
	printf("%llu promised, %llu free\n", (unsigned long long)bga_reserved(vol),
	       (unsigned long long)bga_free_exact(vol));
	bga_destroy(vol);
	return 0;
}
