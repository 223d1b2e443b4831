/* SPDX-License-Identifier: LGPL-2.1-or-later */
#define _GNU_SOURCE
#include "backend.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef BGA_REPLAY_EXT2
#include "peer_ext2.h"
#endif
#include "breaks.h"
#include "oracle.h"
#include "refalloc.h"

struct pending {
	uint64_t start, len, txn;
};

struct backend {
	char label[96];
	struct bga_volume *vol; /* bgalloc */
	int windows;
	/* sized=life: each handle's window size at its open, from the
	 * blocks its file gets over the trace (by handle id), up to rsv_max */
	uint64_t *life;
	size_t nlife;
	uint32_t rsv_max;
	const struct trace *t;
	size_t at; /* the record being replayed (backend_at) */
	uint64_t nblocks;
	uint32_t group;
	struct refalloc *ref; /* a reference allocator (refalloc.h) */
	struct oracle *oracle; /* the clairvoyant one (oracle.h) */
#ifdef BGA_REPLAY_EXT2
	struct peer_ext2 *peer;
#endif
	struct pending *pend; /* the peer's and the references' deferred frees */
	struct blame *blame;  /* BGA_REPLAY_BLAME (freemap.h) */
	size_t npend, cpend;
	struct breaks *breaks; /* BGA_REPLAY_BREAKS (breaks.h) */
};

/* The reference allocators by name (refalloc.h). */
static const struct {
	const char *name;
	enum ref_policy policy;
} refs[] = {{"firstfit", REF_FIRSTFIT}, {"bestfit", REF_BESTFIT}, {"mballoc", REF_MBALLOC}};

static int ref_policy_of(const char *spec)
{
	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++)
		if (!strcmp(spec, refs[i].name))
			return (int)refs[i].policy;
	return -1;
}

static int parse_opt(const char *spec, const char *kv, struct bga_config *cfg, int *windows, int *sized)
{
	const char *eq = strchr(kv, '=');
	if (!eq)
		goto bad;
	size_t kl = (size_t)(eq - kv);
	const char *v = eq + 1;
	if (kl == 5 && !strncmp(kv, "group", 5)) {
		char *end;
		unsigned long g = strtoul(v, &end, 0);
		if (*end || !*v || g > UINT32_MAX)
			goto bad;
		cfg->blocks_per_group = (uint32_t)g;
	} else if (kl == 7 && !strncmp(kv, "rsv_max", 7)) {
		char *end;
		unsigned long m = strtoul(v, &end, 0);
		if (*end || !*v || !m || m > UINT32_MAX)
			goto bad;
		cfg->rsv_max = (uint32_t)m; /* bga_create judges it */
	} else if (kl == 5 && !strncmp(kv, "sized", 5) && !strcmp(v, "life")) {
		*sized = 1;
	} else if (kl == 7 && !strncmp(kv, "windows", 7) && (!strcmp(v, "on") || !strcmp(v, "off"))) {
		*windows = !strcmp(v, "on");
	} else if (kl == 8 && !strncmp(kv, "counters", 8) && (!strcmp(v, "atomic") || !strcmp(v, "percpu"))) {
		cfg->flags = !strcmp(v, "atomic") ? cfg->flags | BGA_ATOMIC_COUNTERS : cfg->flags & ~BGA_ATOMIC_COUNTERS;
	} else if (kl == 4 && !strncmp(kv, "lock", 4) && (!strcmp(v, "global") || !strcmp(v, "groups"))) {
		cfg->flags = !strcmp(v, "global") ? cfg->flags | BGA_GLOBAL_LOCK : cfg->flags & ~BGA_GLOBAL_LOCK;
	} else {
		goto bad;
	}
	return 0;
bad:
	fprintf(stderr,
	        "bga-replay: allocator '%s': '%s' is not one of group=N, rsv_max=N, sized=life, windows=on|off, "
	        "counters=atomic|percpu, lock=global|groups\n",
	        spec, kv);
	return -1;
}

/* The blocks each handle's allocations got in the recording, by handle id:
 * a file's size over its life, for sized=life. */
static int life_sizes(struct backend *b, const struct trace *t)
{
	uint64_t max = 0;
	for (size_t i = 0; i < t->nrec; i++)
		if (t->rec[i].op == BGT_RSV_OPEN && t->rec[i].args[0] > max)
			max = t->rec[i].args[0];
	if (!(b->life = calloc(max + 1, sizeof(*b->life))))
		return -1;
	b->nlife = max + 1;
	for (size_t i = 0; i < t->nrec; i++) {
		const struct trace_rec *r = &t->rec[i];
		if ((r->op != BGT_ALLOC && r->op != BGT_ALLOC_VEC) || r->rc || r->args[0] > max)
			continue;
		const struct bga_extent *e = trace_ext(t, r);
		for (uint32_t k = 0; k < r->next; k++)
			b->life[r->args[0]] += e[k].len;
	}
	b->t = t;
	return 0;
}

static int open_bgalloc(struct backend *b, const char *spec, const struct trace *t, uint64_t fdb,
                        const struct bga_extent *fr, size_t n)
{
	struct bga_config cfg;
	bga_config_init(&cfg, b->nblocks);
	cfg.blocks_per_group = b->group;
	cfg.first_data_block = fdb;
	cfg.flags |= BGA_START_FULL;
	b->windows = 1;
	int sized = 0;
	char *opts = strdup(spec), *save = NULL;
	if (!opts)
		return -1;
	strtok_r(opts, ",", &save); /* "bgalloc" */
	for (char *kv = strtok_r(NULL, ",", &save); kv; kv = strtok_r(NULL, ",", &save))
		if (parse_opt(spec, kv, &cfg, &b->windows, &sized)) {
			free(opts);
			return -1;
		}
	free(opts);
	if (!b->windows)
		cfg.rsv_default = cfg.rsv_max = 0;
	b->rsv_max = cfg.rsv_max < cfg.blocks_per_group ? cfg.rsv_max : cfg.blocks_per_group;
	if (sized && b->windows && t && life_sizes(b, t)) {
		fprintf(stderr, "bga-replay: allocator '%s': out of memory\n", spec);
		return -1;
	}
	int rc = bga_create(&cfg, &b->vol);
	for (size_t i = 0; i < n && !rc; i++)
		rc = bga_free(b->vol, fr[i].start, fr[i].len);
	if (!rc && breaks_open(b->label, t, b->nblocks, b->group, fr, n, &b->breaks))
		rc = -ENOMEM;
	if (rc) {
		fprintf(stderr, "bga-replay: allocator '%s': %s\n", spec, bga_strerror(rc));
		return -1;
	}
	return 0;
}

#ifdef BGA_REPLAY_EXT2
/* Free runs of the peer's bitmap inside [from, to), in order. */
static int ext2_next_free(ext2_filsys fs, uint64_t from, uint64_t to, uint64_t *s, uint64_t *e)
{
	blk64_t z, u;
	if (from >= to || ext2fs_find_first_zero_block_bitmap2(fs->block_map, from, to - 1, &z))
		return 0;
	if (ext2fs_find_first_set_block_bitmap2(fs->block_map, z, to - 1, &u))
		u = to;
	*s = z;
	*e = u;
	return 1;
}

/* Mark allocated every free block of [from, to), up to `limit` blocks. */
static uint64_t ext2_fill(ext2_filsys fs, uint64_t from, uint64_t to, uint64_t limit)
{
	uint64_t s, e, done = 0;
	while (done < limit && ext2_next_free(fs, from, to, &s, &e)) {
		if (e - s > limit - done)
			e = s + (limit - done);
		ext2fs_block_alloc_stats_range(fs, s, (blk_t)(e - s), +1);
		done += e - s;
		from = e;
	}
	return done;
}

/*
 * The peer holds the trace's blocks at the same numbers: mke2fs's image is
 * made larger than the trace's volume, every block the trace starts with
 * in use is marked in use, and of the blocks past the trace's end only as
 * many stay free as ext2's own metadata took from the trace's free space,
 * so both allocators start with the same number of free blocks.
 */
static int open_ext2(struct backend *b, const struct bga_extent *fr, size_t n)
{
	uint64_t size = b->nblocks + b->nblocks / 8 + 32768;
	int rc = peer_ext2_create(NULL, size, &b->peer);
	if (rc) {
		fprintf(stderr, "bga-replay: the libext2fs peer (mke2fs of %" PRIu64 " blocks): %s\n", size,
		        bga_strerror(rc));
		return -1;
	}
	ext2_filsys fs = peer_ext2_fs(b->peer);
	size = peer_ext2_nblocks(b->peer);
	if (size < b->nblocks) {
		fprintf(stderr, "bga-replay: the libext2fs peer is smaller than the trace's volume\n");
		return -1;
	}
	uint64_t at = 0, want = 0;
	for (size_t i = 0; i <= n; i++) {
		uint64_t s = i < n ? fr[i].start : b->nblocks;
		ext2_fill(fs, at, s, UINT64_MAX);
		if (i < n) {
			at = fr[i].start + fr[i].len;
			want += fr[i].len;
		}
	}
	uint64_t have = 0, s, e;
	for (uint64_t from = 0; ext2_next_free(fs, from, b->nblocks, &s, &e); from = e)
		have += e - s;
	uint64_t beyond = 0;
	for (uint64_t from = b->nblocks; ext2_next_free(fs, from, size, &s, &e); from = e)
		beyond += e - s;
	uint64_t keep = want > have ? want - have : 0;
	if (keep > beyond) {
		fprintf(stderr, "bga-replay: the libext2fs peer has %" PRIu64 " free blocks fewer than the trace\n",
		        keep - beyond);
		keep = beyond;
	}
	ext2_fill(fs, b->nblocks, size, beyond - keep);
	return 0;
}

static int ext2_alloc_one(struct backend *b, uint64_t goal, uint64_t min, uint64_t max, uint64_t align,
                          struct bga_extent *out)
{
	uint64_t size = peer_ext2_nblocks(b->peer), len = max, s;
	if (goal >= size)
		goal = 0;
	for (;;) {
		int rc = peer_ext2_alloc_range(b->peer, goal, len, &s);
		if (!rc) {
			*out = (struct bga_extent){s, len};
			return 0;
		}
		if (rc != -ENOSPC || len <= min)
			return rc;
		len /= 2;
		if (align > 1)
			len -= len % align;
		if (len < min)
			len = min;
	}
}

/*
 * bga_alloc_vec for the peer: pieces of max_len (halved down to min_len
 * when no run that long is free), each from the end of the one before.
 */
static int ext2_alloc(struct backend *b, const struct bga_request *req, uint64_t want, struct bga_extent *out,
                      size_t max_out, size_t *n)
{
	uint64_t goal = req->goal == BGA_NO_GOAL ? 0 : req->goal, align = req->align > 1 ? req->align : 1;
	*n = 0;
	if (!want) {
		int rc = ext2_alloc_one(b, goal, req->min_len, req->max_len, align, out);
		*n = !rc;
		return rc;
	}
	uint64_t rest = want;
	int rc = 0;
	while (rest >= req->min_len && *n < max_out) {
		uint64_t piece = rest < req->max_len ? rest : req->max_len;
		struct bga_extent e;
		if ((rc = ext2_alloc_one(b, goal, req->min_len, piece, align, &e)))
			break;
		if (*n && out[*n - 1].start + out[*n - 1].len == e.start)
			out[*n - 1].len += e.len;
		else
			out[(*n)++] = e;
		rest -= e.len;
		goal = e.start + e.len;
	}
	if (*n && (!(req->flags & BGA_ALL_OR_NOTHING) || rest == 0))
		return 0;
	for (size_t i = 0; i < *n; i++)
		peer_ext2_free(b->peer, out[i].start, out[i].len);
	*n = 0;
	return rc ? rc : -ENOSPC;
}
#endif

static int is_oracle(const char *spec)
{
	return !strcmp(spec, "oracle") || !strncmp(spec, "oracle,", 7);
}

int backend_check(const char *spec, uint64_t nblocks, uint32_t group, uint64_t fdb)
{
	struct backend *b;
#ifdef BGA_REPLAY_EXT2
	if (!strcmp(spec, "ext2"))
		return 0;
#endif
	if (ref_policy_of(spec) >= 0)
		return 0;
	unsigned opts;
	if (is_oracle(spec))
		return oracle_parse(spec, &opts);
	/* bgalloc's volume, started full, is made in a moment: made and
	 * destroyed, it checks the options against the volume */
	if (backend_open(spec, NULL, nblocks, group, fdb, NULL, 0, &b))
		return -1;
	backend_close(b);
	return 0;
}

int backend_open(const char *spec, const struct trace *t, uint64_t nblocks, uint32_t group, uint64_t fdb,
                 const struct bga_extent *fr, size_t n, struct backend **out)
{
	struct backend *b = calloc(1, sizeof(*b));
	if (!b)
		return -1;
	snprintf(b->label, sizeof(b->label), "%s", spec);
	b->nblocks = nblocks;
	b->group = group;
	int rc;
	if (!strcmp(spec, "bgalloc") || !strncmp(spec, "bgalloc,", 8)) {
		rc = open_bgalloc(b, spec, t, fdb, fr, n);
	} else if (!strcmp(spec, "ext2")) {
#ifdef BGA_REPLAY_EXT2
		rc = open_ext2(b, fr, n);
#else
		fprintf(stderr, "bga-replay: built without libext2fs (Debian: libext2fs-dev): no ext2 peer\n");
		rc = -1;
#endif
	} else if (ref_policy_of(spec) >= 0) {
		rc = ref_create((enum ref_policy)ref_policy_of(spec), nblocks, fdb, fr, n, &b->ref);
		if (rc)
			fprintf(stderr, "bga-replay: allocator '%s': %s\n", spec, bga_strerror(rc));
	} else if (is_oracle(spec)) {
		unsigned opts;
		rc = oracle_parse(spec, &opts);
		if (!rc && !t) {
			fprintf(stderr, "bga-replay: allocator '%s': the oracle plays a trace it has read\n", spec);
			rc = -1;
		} else if (!rc && (rc = oracle_create(opts, t, nblocks, fdb, fr, n, &b->oracle))) {
			fprintf(stderr, "bga-replay: allocator '%s': %s\n", spec, bga_strerror(rc));
		}
	} else {
		fprintf(stderr,
		        "bga-replay: unknown allocator '%s' (bgalloc[,OPTIONS], ext2, firstfit, bestfit, mballoc or "
		        "oracle[,OPTIONS])\n",
		        spec);
		rc = -1;
	}
	if (rc) {
		backend_close(b);
		return -1;
	}
	b->t = t;
	b->blame = blame_open(spec, t, nblocks, fr, n);
	*out = b;
	return 0;
}

void backend_close(struct backend *b)
{
	if (!b)
		return;
	blame_close(b->blame, 0);
	bga_destroy(b->vol);
	ref_destroy(b->ref);
	oracle_destroy(b->oracle);
#ifdef BGA_REPLAY_EXT2
	if (b->peer)
		peer_ext2_destroy(b->peer);
#endif
	breaks_close(b->breaks);
	free(b->pend);
	free(b->life);
	free(b);
}

void backend_at(struct backend *b, size_t i)
{
	b->at = i;
	if (b->blame && b->t && i < b->t->nrec && b->t->rec[i].op == BGT_END) {
		blame_close(b->blame, 1);
		b->blame = NULL;
	}
	breaks_at(b->breaks, i);
	if (b->oracle)
		oracle_at(b->oracle, i);
}

const char *backend_label(const struct backend *b)
{
	return b->label;
}

struct bga_volume *backend_volume(const struct backend *b)
{
	return b->vol;
}

static int alloc_one(struct backend *b, struct bga_rsv *rsv, const struct bga_request *req, uint64_t want,
                  struct bga_extent *out, size_t max_out, size_t *n)
{
	struct bga_request r = *req;
	r.rsv = rsv;
	if (b->vol) {
		struct bga_extent w = {0, 0};
		if (b->breaks && rsv)
			bga_rsv_window(rsv, &w);
		int rc;
		if (!want) {
			rc = bga_alloc(b->vol, &r, out);
			*n = !rc;
		} else {
			rc = bga_alloc_vec(b->vol, &r, want, out, max_out, n);
		}
		if (b->breaks && !rc)
			breaks_alloc(b->breaks, rsv, &r, w.len, out, *n);
		return rc;
	}
	if (b->ref)
		return ref_alloc(b->ref, (struct ref_file *)rsv, req, want, out, max_out, n);
	if (b->oracle)
		return oracle_alloc(b->oracle, (struct oracle_file *)rsv, req, want, out, max_out, n);
#ifdef BGA_REPLAY_EXT2
	return ext2_alloc(b, &r, want, out, max_out, n);
#else
	return -ENOSYS;
#endif
}

int backend_alloc(struct backend *b, struct bga_rsv *rsv, const struct bga_request *req, uint64_t want,
                  struct bga_extent *out, size_t max_out, size_t *n)
{
	int rc = alloc_one(b, rsv, req, want, out, max_out, n);
	if (!rc)
		blame_alloc(b->blame, b->at, out, *n);
	return rc;
}

int backend_free(struct backend *b, const struct bga_extent *e, size_t n)
{
	blame_free(b->blame, b->at, e, n);
	if (b->vol) {
		breaks_free(b->breaks, e, n);
		return n == 1 ? bga_free(b->vol, e[0].start, e[0].len) : bga_free_vec(b->vol, e, n);
	}
	for (size_t i = 0; i < n && (b->ref || b->oracle); i++) {
		int rc = b->ref ? ref_free(b->ref, e[i].start, e[i].len) : oracle_free(b->oracle, e[i].start, e[i].len);
		if (rc)
			return rc;
	}
	if (b->ref || b->oracle)
		return 0;
#ifdef BGA_REPLAY_EXT2
	for (size_t i = 0; i < n; i++) {
		int rc = peer_ext2_free(b->peer, e[i].start, e[i].len);
		if (rc)
			return rc;
	}
	return 0;
#else
	return -ENOSYS;
#endif
}

int backend_free_deferred(struct backend *b, const struct bga_extent *e, size_t n, uint64_t txn)
{
	blame_free(b->blame, b->at, e, n);
	breaks_defer(b->breaks, e, n, txn);
	if (b->vol)
		return n == 1 ? bga_free_deferred(b->vol, e[0].start, e[0].len, txn)
		              : bga_free_deferred_vec(b->vol, e, n, txn);
	/* the others keep no deferred frees: held here until the commit */
	for (size_t i = 0; i < n; i++) {
		if (b->npend == b->cpend) {
			struct pending *np = realloc(b->pend, (b->cpend = b->cpend ? 2 * b->cpend : 64) * sizeof(*np));
			if (!np)
				return -ENOMEM;
			b->pend = np;
		}
		b->pend[b->npend++] = (struct pending){e[i].start, e[i].len, txn};
	}
	return 0;
}

int backend_commit(struct backend *b, uint64_t txn)
{
	breaks_commit(b->breaks, txn);
	if (b->vol)
		return bga_commit(b->vol, txn);
	size_t k = 0;
	int rc = 0;
	for (size_t i = 0; i < b->npend; i++) {
		if (b->pend[i].txn <= txn) {
			struct bga_extent e = {b->pend[i].start, b->pend[i].len};
			int r = backend_free(b, &e, 1);
			rc = rc ? rc : r;
		} else {
			b->pend[k++] = b->pend[i];
		}
	}
	b->npend = k;
	return rc;
}

int backend_claim(struct backend *b, uint64_t start, uint64_t len)
{
	breaks_claim(b->breaks, start, len);
	if (b->vol)
		return bga_claim(b->vol, start, len);
	if (b->ref)
		return ref_claim(b->ref, start, len);
	if (b->oracle)
		return oracle_claim(b->oracle, start, len);
#ifdef BGA_REPLAY_EXT2
	ext2_filsys fs = peer_ext2_fs(b->peer);
	if (!len || start >= peer_ext2_nblocks(b->peer) || len > peer_ext2_nblocks(b->peer) - start)
		return -EINVAL;
	if (!ext2fs_test_block_bitmap_range2(fs->block_map, start, (unsigned)len))
		return -EBUSY;
	ext2fs_block_alloc_stats_range(fs, start, (blk_t)len, +1);
	return 0;
#else
	return -ENOSYS;
#endif
}

int backend_reserve(struct backend *b, uint64_t n, int give_back)
{
	/* the peer has no reservations: fuse2fs keeps none */
	if (!b->vol)
		return 0;
	return give_back ? bga_unreserve(b->vol, n) : bga_reserve(b->vol, n);
}

int backend_rsv_open(struct backend *b, struct bga_rsv **out)
{
	*out = NULL;
	if (b->ref)
		return ref_file_open(b->ref, (struct ref_file **)out);
	if (b->oracle)
		return oracle_file_open(b->oracle, (struct oracle_file **)out);
	if (!b->vol)
		return 0;
	int rc = bga_rsv_open(b->vol, out);
	if (!rc)
		breaks_rsv_open(b->breaks, *out);
	/* sized=life: as a caller that knew the file's size would size it
	 * (bga_rsv_set_size, XFS's extent size hint) */
	const struct trace_rec *r = b->t && b->at < b->t->nrec ? &b->t->rec[b->at] : NULL;
	if (!rc && r && r->op == BGT_RSV_OPEN && r->args[0] < b->nlife && b->life[r->args[0]])
		rc = bga_rsv_set_size(*out, (uint32_t)(b->life[r->args[0]] < b->rsv_max ? b->life[r->args[0]]
		                                                                          : b->rsv_max));
	return rc;
}

void backend_rsv_close(struct backend *b, struct bga_rsv *rsv)
{
	breaks_rsv_close(b->breaks, rsv);
	if (b->vol)
		bga_rsv_close(rsv);
	else if (b->ref)
		ref_file_close(b->ref, (struct ref_file *)rsv);
	else if (b->oracle)
		oracle_file_close(b->oracle, (struct oracle_file *)rsv);
}

int backend_rsv_set_size(struct backend *b, struct bga_rsv *rsv, uint32_t blocks)
{
	if (!b->vol || !b->windows)
		return 0;
	return bga_rsv_set_size(rsv, blocks);
}

int backend_freemap(struct backend *b, uint64_t unit, struct freemap *m)
{
	if (b->vol)
		return freemap_of_volume(b->vol, unit, b->group, m);
	if (b->ref)
		return ref_freemap(b->ref, b->group, unit, m);
	if (b->oracle)
		return oracle_freemap(b->oracle, b->group, unit, m);
#ifdef BGA_REPLAY_EXT2
	ext2_filsys fs = peer_ext2_fs(b->peer);
	uint64_t size = peer_ext2_nblocks(b->peer), s, e;
	freemap_init(m, b->group, unit);
	for (uint64_t from = 0; ext2_next_free(fs, from, size, &s, &e); from = e)
		freemap_add(m, s, e - s);
	freemap_finish(m);
	return 0;
#else
	return -ENOSYS;
#endif
}
