/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-replay: allocation histories.  Import a Ceph BlueStore free-dump or
 * an extent list as a stored volume, try allocations on it, convert
 * traces between their two forms, and play a trace against allocators
 * side by side.  bga-replay(1) is the manual; docs/TRACE.md the format.
 *
 * Exit status: 0 done, 1 bad input (nothing written) or a check that
 * failed (--verify), 2 usage or I/O error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc.h>

#include "replay.h"
#include "trace.h"

static const char usage_text[] =
	"usage: bga-replay import ceph DUMP.json -o IMAGE [--group N]\n"
	"       bga-replay import extents FILE -o IMAGE [--group N]\n"
	"       bga-replay try IMAGE COUNT WANT UNIT [--block-size BYTES] [--offset BYTES] [-v]\n"
	"       bga-replay run TRACE... [-a ALLOCATOR]... [--verify] [--out DIR] [--samples N] [--reps N]\n"
	"                      [--full PCT] [--markdown] [--goals recorded|distance|past]\n"
	"       bga-replay text TRACE [-o OUT]      bga-replay binary TEXT -o TRACE\n"
	"       bga-replay hash|extents IMAGE [--offset BYTES]\n"
	"       bga-replay --help | --version\n"
	"\n"
	"Allocation histories for bgalloc.\n"
	"  import   make a stored volume (bga_store at offset 0 of IMAGE) from Ceph's\n"
	"           `bluestore allocator dump` JSON or a plain extent list; print its free map\n"
	"  try      COUNT bga_alloc_vec requests of WANT bytes at unit UNIT on IMAGE\n"
	"  run      play each TRACE against each ALLOCATOR: bgalloc[,group=N][,rsv_max=N][,windows=on|off]\n"
	"           [,counters=atomic|percpu][,lock=global|groups][,sized=life (each handle sized to its\n"
	"           file's blocks over the trace)], ext2 (the libext2fs peer), or\n"
	"           a reference: firstfit, bestfit, mballoc (ext4's preallocations over first fit),\n"
	"           or the clairvoyant oracle[,death][,files=off] (reads the trace first: a file's\n"
	"           life size booked at its first request; death: each extent placed by when its\n"
	"           blocks die; files=off: each request placed alone);\n"
	"           default bgalloc.  --verify applies the recorded results instead.  Per trace:\n"
	"           the table, the largest request placed whole, the free extents by length at\n"
	"           the end, the moment the volume first fills to PCT; then (several traces, or\n"
	"           --markdown) every history side by side\n"
	"  text     a trace in its text form;  binary  the text form back to binary\n"
	"  hash     the free-map hash of a stored volume;  extents  its free extents, as\n"
	"           `import extents` reads them\n"
	"  -o, --out PATH        the image (import), the output (text, binary), a directory (run;\n"
	"                        with several traces, a directory each under it, named by the trace)\n"
	"  -g, --group N         blocks per group of the imported volume\n"
	"  -b, --block-size B    bytes a block of IMAGE (try; default 4096)\n"
	"  -O, --offset BYTES    where the volume's area starts in IMAGE (a bgafs image: 8192)\n"
	"  -a, --alloc SPEC      an allocator to run (repeat for a side-by-side table)\n"
	"  -s, --samples N       score samples over the trace (default 100)\n"
	"  -r, --reps N          run each allocator N times: the median calls/s, and each run\n"
	"                        must end in the same free map\n"
	"      --verify          apply the trace's recorded results; check its end\n"
	"  -f, --full PCT        the fill moment reported (run): PCT percent in use, 1-100 (default 90)\n"
	"  -m, --markdown        the side-by-side table of run in Markdown\n"
	"      --goals AIM       run: where a request that names the file's block nearest its hole\n"
	"                        aims: recorded (as far from it as the recording's goal, the default),\n"
	"                        distance (the hole's logical distance from it), past (just past it)\n"
	"  -v, --verbose         list each request's extents (try)\n"
	"  -h, --help            this text;  -V, --version  the version\n"
	"Exit status: 0 done, 1 bad input or a failed check, 2 usage or I/O error.\n"
	"See bga-replay(1).\n";

static int usage(void)
{
	fputs(usage_text, stderr);
	return 2;
}

/* Bytes: decimal or 0x hex, with an optional K, M or G (powers of 1024). */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	if (!*s || *s == '-')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	int shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (errno || *end || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static int convert(const char *in, const char *out, int to_text)
{
	struct trace t;
	if (trace_read(in, &t))
		return 1;
	FILE *f = out ? fopen(out, to_text ? "w" : "wb") : stdout;
	if (!f) {
		fprintf(stderr, "%s: %s\n", out, strerror(errno));
		trace_free(&t);
		return 2;
	}
	int rc = to_text ? trace_write_text(&t, f) : trace_write_binary(&t, f);
	if (f != stdout && fclose(f))
		rc = -1;
	if (rc)
		fprintf(stderr, "bga-replay: writing %s failed\n", out ? out : "stdout");
	trace_free(&t);
	return rc ? 2 : 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"out", required_argument, NULL, 'o'},        {"group", required_argument, NULL, 'g'},
		{"block-size", required_argument, NULL, 'b'}, {"offset", required_argument, NULL, 'O'},
		{"alloc", required_argument, NULL, 'a'},      {"samples", required_argument, NULL, 's'},
		{"verify", no_argument, NULL, 1},             {"reps", required_argument, NULL, 'r'},             {"verbose", no_argument, NULL, 'v'},
		{"full", required_argument, NULL, 'f'},       {"markdown", no_argument, NULL, 'm'},
		{"goals", required_argument, NULL, 2},
		{"help", no_argument, NULL, 'h'},             {"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	struct run_opts run = {0};
	struct try_opts tr = {0};
	struct import_opts im = {0};
	const char *out = NULL;
	uint64_t v;
	int c;
	/* GNU getopt permutes: options may come before or after the command's
	 * arguments. */
	while ((c = getopt_long(argc, argv, "o:g:b:O:a:s:r:f:mvhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'g':
			if (parse_size(optarg, &v) || !v || v > UINT32_MAX)
				return usage();
			im.group = (uint32_t)v;
			break;
		case 'b':
			if (parse_size(optarg, &tr.block_size) || !tr.block_size)
				return usage();
			break;
		case 'O':
			if (parse_size(optarg, &tr.base))
				return usage();
			break;
		case 'a':
			if (run.nallocs == RUN_MAX_ALLOCS) {
				fprintf(stderr, "bga-replay: at most %d allocators\n", RUN_MAX_ALLOCS);
				return 2;
			}
			run.allocs[run.nallocs++] = optarg;
			break;
		case 's':
			if (parse_size(optarg, &v) || !v || v > 100000)
				return usage();
			run.samples = (unsigned)v;
			break;
		case 'r':
			if (parse_size(optarg, &v) || !v || v > 1000)
				return usage();
			run.reps = (unsigned)v;
			break;
		case 'f':
			if (parse_size(optarg, &v) || !v || v > 100) {
				fprintf(stderr, "bga-replay: --full '%s': a percent from 1 to 100\n", optarg);
				return usage();
			}
			run.full_pct = (unsigned)v;
			break;
		case 'm': run.markdown = 1; break;
		case 1: run.verify = 1; break;
		case 2:
			if (!strcmp(optarg, "recorded") || !strcmp(optarg, "distance") || !strcmp(optarg, "past")) {
				run.goals = optarg[0] == 'r' ? RUN_GOALS_RECORDED
				            : optarg[0] == 'd' ? RUN_GOALS_DISTANCE : RUN_GOALS_PAST;
				break;
			}
			fprintf(stderr, "bga-replay: --goals '%s': recorded, distance or past\n", optarg);
			return 2;
		case 'v': tr.verbose = 1; break;
		case 'h': fputs(usage_text, stdout); return 0;
		case 'V': printf("bga-replay (bgalloc) %s\n", bga_version()); return 0;
		default: return usage();
		}
	}
	char **pos = argv + optind;
	int npos = argc - optind;
	if (!npos)
		return usage();
	const char *cmd = pos[0];
	if (!strcmp(cmd, "import")) {
		if (npos != 3 || !out)
			return usage();
		im.out = out;
		if (!strcmp(pos[1], "ceph"))
			return import_ceph(&im, pos[2]);
		if (!strcmp(pos[1], "extents"))
			return import_extents(&im, pos[2]);
		return usage();
	}
	if (!strcmp(cmd, "try")) {
		if (npos != 5 || parse_size(pos[2], &tr.count) || parse_size(pos[3], &tr.want) ||
		    parse_size(pos[4], &tr.unit))
			return usage();
		tr.image = pos[1];
		return try_run(&tr);
	}
	if (!strcmp(cmd, "run")) {
		if (npos < 2 || (run.verify && run.nallocs))
			return usage();
		run.traces = (const char *const *)pos + 1;
		run.ntraces = npos - 1;
		run.out_dir = out;
		return run_main(&run);
	}
	if (!strcmp(cmd, "text") && npos == 2)
		return convert(pos[1], out, 1);
	if (!strcmp(cmd, "binary") && npos == 2 && out)
		return convert(pos[1], out, 0);
	if (!strcmp(cmd, "hash") && npos == 2)
		return hash_image(pos[1], tr.base);
	if (!strcmp(cmd, "extents") && npos == 2)
		return extents_image(pos[1], tr.base);
	return usage();
}
