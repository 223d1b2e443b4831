/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A program written and built against the 0.1.0 <bgalloc.h>
 * (tests/abi/include-0.1.0, commit 8b4a5b1), run against the library of
 * today by abi_compat_test.sh.  Every struct it hands the library is
 * followed by guard bytes: the library must neither write them (they
 * would be a 0.1.0 program's other variables) nor read them (they are
 * poison that no field accepts: a stripe or an align of 0xa5a5a5a5 is
 * -EINVAL).  Exit status 0 when everything held, 1 with a message when
 * not.
 */
#define _GNU_SOURCE /* dlvsym */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc.h>

#define GUARD 64
#define POISON 0xa5

static int failures;

#define CHECK(cond, ...)                                                                                  \
	do {                                                                                              \
		if (!(cond)) {                                                                            \
			fprintf(stderr, "consumer_0_1: " __VA_ARGS__);                                    \
			fputc('\n', stderr);                                                              \
			failures++;                                                                       \
		}                                                                                         \
	} while (0)

static int guard_intact(const unsigned char *g)
{
	for (int i = 0; i < GUARD; i++)
		if (g[i] != POISON)
			return 0;
	return 1;
}

struct mem {
	unsigned char *buf;
	size_t size;
};

static int mem_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct mem *m = ctx;
	memset(buf, 0, len);
	if (off < m->size)
		memcpy(buf, m->buf + off, m->size - off < len ? m->size - off : len);
	return 0;
}

static int mem_write(void *ctx, const void *buf, size_t len, uint64_t off)
{
	struct mem *m = ctx;
	if (off + len > m->size) {
		unsigned char *n = realloc(m->buf, off + len);
		if (n == NULL)
			return -ENOMEM;
		memset(n + m->size, 0, off + len - m->size);
		m->buf = n;
		m->size = off + len;
	}
	memcpy(m->buf + off, buf, len);
	return 0;
}

static int mem_flush(void *ctx)
{
	(void)ctx;
	return 0;
}

/* The check that the binding is the one the test means: this program's
 * bga_create (an unversioned reference, as in every 0.1.0 binary) is the
 * library's bga_create@BGA_0.1, and there is a newer default beside it. */
static void check_binding(void)
{
	void *lib = dlopen("libbgalloc.so.0", RTLD_NOW | RTLD_NOLOAD);
	CHECK(lib != NULL, "libbgalloc.so.0 is not loaded: %s", dlerror());
	if (lib == NULL)
		return;
	void *old = dlvsym(lib, "bga_create", "BGA_0.1"), *now = dlvsym(lib, "bga_create", "BGA_0.2");
	CHECK(old != NULL && now != NULL && old != now, "bga_create has no separate 0.1.0 form");
	CHECK((void *)bga_create == old, "bga_create bound to %p, not to bga_create@BGA_0.1 (%p)", (void *)bga_create,
	      old);
	CHECK((void *)bga_alloc == dlvsym(lib, "bga_alloc", "BGA_0.1"), "bga_alloc did not bind to its 0.1.0 form");
	CHECK((void *)bga_free == dlvsym(lib, "bga_free", "BGA_0.1"), "bga_free is not the BGA_0.1 symbol");
	dlclose(lib);
}

int main(void)
{
	const uint64_t nblocks = 1u << 20;
	check_binding();
	struct {
		struct bga_config cfg;
		unsigned char guard[GUARD];
	} c;
	memset(&c, POISON, sizeof(c));
	bga_config_init(&c.cfg, nblocks);
	CHECK(guard_intact(c.guard), "bga_config_init wrote past the 0.1.0 struct bga_config");
	CHECK(c.cfg.nblocks == nblocks && c.cfg.blocks_per_group == 32768 && c.cfg.rsv_default == 8 &&
		      c.cfg.rsv_max == 1027 && c.cfg.flags == 0 && c.cfg.lock_kind == 0,
	      "bga_config_init's defaults are not 0.1.0's");

	struct bga_volume *vol = NULL;
	int rc = bga_create(&c.cfg, &vol);
	CHECK(rc == 0, "bga_create: %s (it read past the 0.1.0 struct bga_config?)", bga_strerror(rc));
	if (rc)
		return 1;

	struct {
		struct bga_request req;
		unsigned char guard[GUARD];
	} r;
	memset(&r, POISON, sizeof(r));
	r.req.goal = 1000;
	r.req.min_len = 8;
	r.req.max_len = 8;
	r.req.rsv = NULL;
	r.req.flags = BGA_EXACT_GOAL;
	struct bga_extent e = {0, 0};
	rc = bga_alloc(vol, &r.req, &e);
	CHECK(rc == 0 && e.start == 1000 && e.len == 8,
	      "bga_alloc: %s, extent %llu+%llu (it read past the 0.1.0 struct bga_request?)", bga_strerror(rc),
	      (unsigned long long)e.start, (unsigned long long)e.len);
	r.req.flags = 0;
	r.req.goal = BGA_NO_GOAL;
	r.req.max_len = 64;
	rc = bga_alloc(vol, &r.req, &e);
	CHECK(rc == 0 && e.len >= 8 && e.len <= 64, "a plain bga_alloc: %s", bga_strerror(rc));
	CHECK(bga_free(vol, e.start, e.len) == 0, "bga_free of what bga_alloc gave");

	struct {
		struct bga_stats st;
		unsigned char guard[GUARD];
	} s;
	memset(&s, POISON, sizeof(s));
	rc = bga_stats(vol, &s.st);
	CHECK(rc == 0 && s.st.nblocks == nblocks && s.st.free_blocks == nblocks - 8,
	      "bga_stats: %s, %llu free", bga_strerror(rc), (unsigned long long)s.st.free_blocks);
	CHECK(guard_intact(s.guard), "bga_stats wrote past the 0.1.0 struct bga_stats");

	struct {
		struct bga_config cfg;
		unsigned char guard[GUARD];
	} v;
	memset(&v, POISON, sizeof(v));
	rc = bga_volume_config(vol, &v.cfg);
	CHECK(rc == 0 && v.cfg.nblocks == nblocks && v.cfg.blocks_per_group == 32768, "bga_volume_config: %s",
	      bga_strerror(rc));
	CHECK(guard_intact(v.guard), "bga_volume_config wrote past the 0.1.0 struct bga_config");

	uint64_t bytes = 0;
	rc = bga_metadata_size(&c.cfg, &bytes);
	CHECK(rc == 0 && bytes > 0, "bga_metadata_size: %s", bga_strerror(rc));

	struct mem m = {NULL, 0};
	struct bga_io io = {&m, mem_read, mem_write, mem_flush};
	rc = bga_store(vol, &io);
	CHECK(rc == 0, "bga_store: %s", bga_strerror(rc));
	struct bga_volume *back = NULL;
	rc = bga_load(&io, &c.cfg, &back);
	CHECK(rc == 0 && bga_free_exact(back) == nblocks - 8, "bga_load with a 0.1.0 config: %s",
	      bga_strerror(rc));
	bga_destroy(back);
	back = NULL;
	rc = bga_load_ex(&io, &c.cfg, BGA_LOAD_STRICT, &back);
	CHECK(rc == 0 && bga_free_exact(back) == nblocks - 8, "bga_load_ex with a 0.1.0 config: %s",
	      bga_strerror(rc));
	if (rc == 0) {
		struct bga_extent f = {0, 0};
		r.req.goal = 1000;
		r.req.min_len = 8;
		r.req.max_len = 8;
		r.req.flags = BGA_EXACT_GOAL;
		CHECK(bga_alloc(back, &r.req, &f) == -ENOSPC, "the loaded volume hands out block 1000 again");
		CHECK(bga_check(back, NULL) == 0, "bga_check of the loaded volume");
	}
	bga_destroy(back);
	back = NULL;
	rc = bga_load(&io, NULL, &back);
	CHECK(rc == 0, "bga_load with no config: %s", bga_strerror(rc));
	bga_destroy(back);

	CHECK(bga_create(NULL, &back) == -EINVAL, "bga_create(NULL) is not -EINVAL");
	/* the NULL forms of the 0.1.0 entry points: refused, and nothing
	 * written (bga_config_init ignores a NULL cfg, as today's does) */
	bga_config_init(NULL, nblocks);
	CHECK(bga_volume_config(vol, NULL) == -EINVAL, "bga_volume_config(vol, NULL) is not -EINVAL");
	memset(&v, POISON, sizeof(v));
	CHECK(bga_volume_config(NULL, &v.cfg) == -EINVAL, "bga_volume_config(NULL, cfg) is not -EINVAL");
	CHECK(guard_intact((const unsigned char *)&v.cfg) && guard_intact(v.guard),
	      "a refused bga_volume_config wrote its struct");
	CHECK(bga_alloc(vol, NULL, &e) == -EINVAL, "bga_alloc(NULL request) is not -EINVAL");
	CHECK(bga_stats(vol, NULL) == -EINVAL, "bga_stats(NULL) is not -EINVAL");
	CHECK(bga_free(vol, 1000, 8) == 0 && bga_free_exact(vol) == nblocks, "the last free");
	CHECK(bga_check(vol, NULL) == 0, "bga_check");
	bga_destroy(vol);
	free(m.buf);
	if (failures == 0)
		printf("consumer_0_1: a 0.1.0 program ran against this library\n");
	return failures ? 1 : 0;
}
