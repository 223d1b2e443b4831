/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef BGA_REPLAY_REPORT_H
#define BGA_REPLAY_REPORT_H

/* What bga-replay run finds (filled by run.c) and how it is reported
 * (report.c, whose header this is). */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "freemap.h"
#include "trace.h"

struct sample {
	size_t rec;
	uint64_t free_blocks;
	double score_bga, score_ceph;
};

struct errcount {
	int err;
	uint64_t n;
};

/* The volume at one moment of a replay: its free map, and the largest
 * request (blocks, at most a group) the allocator placed whole there:
 * one extent, no goal, min_len = max_len (a probe, made once the replay
 * stops, each hit freed again). */
struct moment {
	struct freemap map;
	uint64_t whole;
};

struct result {
	char label[96];
	uint64_t calls, ns, replayed, recorded_failures;
	uint64_t failures, partial, short_blocks, extra_blocks, free_errors;
	struct errcount errs[8];
	uint64_t files, file_extents, objects, object_extents;
	uint64_t file_lextents; /* the files' logical runs (run.c, logical_runs) */
	struct sample *samples;
	size_t nsamples;
	struct freemap end;
	uint64_t end_whole;  /* the end's largest whole request (struct moment) */
	struct moment full;  /* at the fill moment (struct trace_fill's first_at), when there is one */
	int have_full;
	double rate;         /* calls a second, the median over the repetitions */
	uint64_t mismatches; /* --verify: recorded results that did not apply */
	int verify_end;      /* --verify: 1 the end hash matched the recording's, 0 not, -1 no end record */
};

/* One trace's replay, for the reports. */
struct history {
	const char *name; /* the trace's file name */
	const struct trace *t;
	struct trace_fill fill;
	unsigned full_pct;
	struct result *res;
	int n;
	unsigned reps;
};

double mean_score(const struct result *r);
static inline double per(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0;
}

/* The per-trace report: the allocators' table, their failures and
 * --verify's verdict (1 when it failed, else 0), the free-extent
 * histogram at the end, the fill moment. */
int report_trace(const struct history *h, int verify);
/* Every history side by side: one row an allocator of each; Markdown
 * with md. */
void report_histories(FILE *f, const struct history *h, size_t n, int md);
/* Per history, the best figure any allocator reached and which did:
 * extents per file, the end and mean scores, requests placed short, the
 * largest whole request at the end (what the history lets a placement
 * carry).  Printed after the side-by-side table when several allocators
 * ran. */
void report_best(FILE *f, const struct history *h, size_t n, int md);
/* DIR/replay.json and, with gnuplot, DIR/score.png; 0 or 2 (an I/O error). */
int report_files(const char *dir, const struct history *h, int cpu);

#endif
