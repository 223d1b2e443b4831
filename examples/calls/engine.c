/*
 * A storage engine's calls: the engine keeps its own free list, so the
 * volume starts full and is handed that list; objects come as several
 * extents at a 16-block allocation unit, all or nothing; a range the
 * engine's journal says is in use is claimed; an object is freed whole.
 * bga_alloc_vec(3), bga_free_vec(3), bga_claim(3).
 */
#include <stdio.h>
#include <bgalloc.h>

#define MAX_EXT 16

int main(void)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	bga_config_init(&cfg, 1u << 16);
	cfg.flags = BGA_START_FULL; /* every block in use until the engine says */
	int rc = bga_create(&cfg, &vol);
	if (rc)
		return fprintf(stderr, "create: %s\n", bga_strerror(rc)), 1;
	/* the engine's free list: two runs */
	struct bga_extent free_list[] = {{4096, 8192}, {32768, 16384}};
	if ((rc = bga_free_vec(vol, free_list, 2)) || (rc = bga_claim(vol, 4096, 64)))
		return fprintf(stderr, "seed: %s\n", bga_strerror(rc)), 1;
	/* a 4 MiB object of 4 KiB blocks, in whole 64 KiB units */
	struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = 16, .max_len = 1024, .align = 16,
				  .flags = BGA_ALL_OR_NOTHING};
	struct bga_extent obj[MAX_EXT];
	size_t n;
	if ((rc = bga_alloc_vec(vol, &req, 1024, obj, MAX_EXT, &n)))
		return fprintf(stderr, "alloc_vec: %s\n", bga_strerror(rc)), 1;
	for (size_t i = 0; i < n; i++)
		printf("object extent %zu: %llu+%llu\n", i, (unsigned long long)obj[i].start,
		       (unsigned long long)obj[i].len);
	if ((rc = bga_free_vec(vol, obj, n)))
		return fprintf(stderr, "free_vec: %s\n", bga_strerror(rc)), 1;
	printf("free: %llu blocks\n", (unsigned long long)bga_free_exact(vol));
	bga_destroy(vol);
	return 0;
}
