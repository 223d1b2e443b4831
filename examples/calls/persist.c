/*
 * Persistence: the allocation state stored beside the engine's journal
 * and loaded back, in the order docs/PERSISTENCE.md (bgalloc(7)) gives:
 * close transaction 1, store with its tag, commit it in the journal, then
 * bga_commit.  bga_store_tagged(3), bga_load(3), bga_volume_tag(3).
 *   persist FILE
 */
#include <stdio.h>
#include <bgalloc.h>

int main(int argc, char **argv)
{
	if (argc != 2)
		return fprintf(stderr, "usage: %s FILE\n", argv[0]), 2;
	struct bga_config cfg;
	struct bga_volume *vol, *back;
	struct bga_io io;
	struct bga_extent e;
	uint64_t tag = 0;
	bga_config_init(&cfg, 1u << 16);
	int rc = bga_create(&cfg, &vol);
	struct bga_request req = {.goal = 100, .min_len = 8, .max_len = 8};
	if (rc || (rc = bga_alloc(vol, &req, &e)) || (rc = bga_free_deferred(vol, e.start, 4, 1)))
		return fprintf(stderr, "setup: %s\n", bga_strerror(rc)), 1;
	if ((rc = bga_io_file_open(argv[1], 0, 1, &io)) || (rc = bga_store_tagged(vol, &io, 1)))
		return fprintf(stderr, "store: %s\n", bga_strerror(rc)), 1;
	/* ... the journal commits transaction 1 here, durably ... */
	if ((rc = bga_commit(vol, 1)) || (rc = bga_store(vol, &io))) /* a clean close */
		return fprintf(stderr, "commit: %s\n", bga_strerror(rc)), 1;
	bga_destroy(vol);
	if ((rc = bga_load(&io, NULL, &back)) || (rc = bga_volume_tag(back, &tag)))
		return fprintf(stderr, "load: %s\n", bga_strerror(rc)), 1;
	printf("loaded: tag %llu, %llu blocks free\n", (unsigned long long)tag,
	       (unsigned long long)bga_free_exact(back));
	bga_destroy(back);
	bga_io_file_close(&io);
	return 0;
}
