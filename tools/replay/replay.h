/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_REPLAY_H
#define BGA_REPLAY_H

/* bga-replay's parts: import.c, try.c, run.c (with backend.c), main.c. */

#include <stddef.h>
#include <stdint.h>

#include <bgalloc.h>

struct import_opts {
	const char *out;    /* the image to write */
	uint32_t group;     /* blocks_per_group, 0: the default */
};

/* An extent of an input file, in blocks, with the line it came from. */
struct src_extent {
	uint64_t start, len;
	size_t line;     /* its start's line */
	size_t obj_line; /* the line its JSON object opens on (Ceph's dump), else line */
};

/* Exit status: 0 done, 1 bad input (nothing written), 2 I/O or usage. */
int import_ceph(const struct import_opts *o, const char *path);
int import_extents(const struct import_opts *o, const char *path);

/* A volume of nblocks started full with e[] freed, or free with e[] claimed
 * (used); 0 or -1 with the reason printed. */
int make_volume(const struct import_opts *o, uint64_t nblocks, struct src_extent *e, size_t n, int used,
                struct bga_volume **out);

struct try_opts {
	const char *image;
	uint64_t base, count, want, unit, block_size;
	int verbose, json;
};
int try_run(const struct try_opts *o);

#define RUN_MAX_ALLOCS 8
struct run_opts {
	const char *const *traces; /* the histories, played one after another */
	int ntraces;
	const char *allocs[RUN_MAX_ALLOCS];
	int nallocs;
	int verify;
	const char *out_dir; /* JSON and PNG go here when set */
	unsigned samples;    /* score samples over the trace */
	unsigned reps;       /* runs of each allocator (the median rate); 0: 1 */
	unsigned full_pct;   /* the fill moment reported: percent of the capacity in use; 0: 90 */
	int markdown;        /* the side-by-side table in Markdown */
	int goals;           /* an anchored goal's aim (--goals): enum run_goals */
	int quiet;
};
/* Where a replay aims an allocation that names an anchor (goal_from,
 * bga_trace.h): as far from its copy of the anchor as the recorded goal
 * lies from the anchor; at the hole's logical distance from it; or just
 * past it when the anchor lies before the hole (else no goal). */
enum run_goals { RUN_GOALS_RECORDED, RUN_GOALS_DISTANCE, RUN_GOALS_PAST };
int run_main(const struct run_opts *o);

/* Load the volume stored at base in path (io must outlive it, until
 * bga_destroy and bga_io_file_close); 0, or the error, printed. */
int image_open(const char *path, uint64_t base, struct bga_io *io, struct bga_volume **vol);

/* The free-map hash of a stored image, or its free extents (merged, in
 * the list `import extents` reads); 0 or 1 (error printed). */
int hash_image(const char *path, uint64_t base);
int extents_image(const char *path, uint64_t base);

#endif
