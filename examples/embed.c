/* Embedding bgalloc: a 4 GiB volume of 4 KiB blocks, one file's extents. */
#include <stdio.h>
#include <bgalloc.h>

int main(void)
{
	struct bga_config cfg;
	struct bga_volume *vol;
	struct bga_rsv *file;
	bga_config_init(&cfg, 1u << 20);                 /* 2^20 blocks */
	int rc = bga_create(&cfg, &vol);
	if (rc || (rc = bga_rsv_open(vol, &file)))       /* a per-file window */
		return fprintf(stderr, "%s\n", bga_strerror(rc)), 1;
	struct bga_request req = {.goal = BGA_NO_GOAL, .min_len = 1, .max_len = 64, .rsv = file};
	struct bga_extent ext;
	for (int i = 0; i < 4 && (rc = bga_alloc(vol, &req, &ext)) == 0; i++) {
		printf("extent %d: blocks %llu..%llu\n", i, (unsigned long long)ext.start,
		       (unsigned long long)(ext.start + ext.len - 1));
		req.goal = ext.start + ext.len;          /* keep the file contiguous */
	}
	bga_free_deferred(vol, ext.start, ext.len, 1); /* freed in journal txn 1 */
	bga_commit(vol, 1);                            /* reusable once txn 1 commits */
	printf("free: %llu of %llu blocks\n", (unsigned long long)bga_free_exact(vol), 1ull << 20);
	bga_rsv_close(file);
	bga_destroy(vol);
	return rc;
}
