/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-lab: the command line.  `bga-lab counter ...` and `bga-lab lock ...`;
 * every parameter at run time; the man page is bga-lab.1 beside this file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lab.h"

void lab_model_verdict(const struct lab_params *p); /* lab_model.c */

#define LAB_API "public API of the shared library: <bgalloc/counter.h>, <bgalloc/locktab.h>, one call per operation"
#define LAB_NAME "bga-lab"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " LAB_NAME " counter [options]   atomic against per-CPU counters (and more)\n"
		"       " LAB_NAME " lock [options]      lock kinds of the hashed lock table\n"
		"       " LAB_NAME " compare A.json B.json  before/after: each cell of two runs' files,\n"
		"                                    Mann-Whitney p with Holm's correction\n"
		"\n"
		"Measures through the %s.\n"
		"\n"
		"counter options:\n"
		"  --modes LIST      comma list, the first is the baseline (default atomic,percpu):\n"
		"                    %s\n"
		"                    (percpu: rseq where the kernel and glibc offer it, else CAS;\n"
		"                    striped and tls-fold are the lab's own code, not the library's)\n"
		"  --batch N         the per-CPU batch (default 0: the library's auto rule)\n"
		"  --limited         bga_counter_add_limited far from the limit instead of bga_counter_add\n"
		"lock options:\n"
		"  --kinds LIST      comma list, the first is the baseline (default fas,mutex):\n"
		"                    %s\n"
		"  --hold NS         time the lock is held per operation (default 100)\n"
		"  --think NS        time between operations, lock free (default 0)\n"
		"  --slots N         lock-table slots, a power of two (default 0: auto)\n"
		"  --spread K        keys drawn uniformly from [0, K) (default 1: every thread on one lock)\n"
		"common options:\n"
		"  --threads LIST    thread counts, comma list (default 1,2 for counter, 2 for lock)\n"
		"  --reps N          repetitions (default 9; at least 5 for a significant verdict)\n"
		"  --seconds S       seconds per cell (default 0.1)\n"
		"  --ops N           operations per thread per cell instead of --seconds\n"
		"  --pin / --no-pin  pin thread i to allowed CPU i mod CPUs (default: no pin)\n"
		"  --no-ceiling      skip the ceiling measurement (the verdict then cannot check it)\n"
		"  --out DIR         write DIR/" LAB_NAME "-COMMAND-STAMP.json (every sample) and .png (default\n"
		"                    ./bga-lab-runs); --no-files writes nothing\n"
		"  --quiet           no progress line\n"
		"  --format F        text (default), json (the JSON file's content) or csv (a row per\n"
		"                    sample) on stdout\n"
		"  --plugin FILE.so  load counters and locks of your own (bga_lab_plugin.h); their\n"
		"                    names join --modes and --kinds (repeatable; before those lists)\n"
		"  --alpha A --share-min S --spread-max X --ceiling-min C --same-margin M\n"
		"                    the verdict's thresholds (defaults %.2f %.2f %.2f %.2f %.2f)\n"
		"  -h, --help        this text\n"
		"\n"
		"Method: repetitions interleave every variant and thread count, in rotating order;\n"
		"each cell prints its median ops/s and its CPU share = CPU time / (wall x min(threads,\n"
		"CPUs)); for more than one thread each repetition also runs the ceiling: that many\n"
		"processes of the first variant at 1 thread at once, over one alone.  One verdict line\n"
		"per thread count and variant against the first:\n"
		"  verdict threads=2 percpu/atomic=3.41x ci=3.10-3.72 p=0.0004 p_holm=0.0016 cpu_share=0.97: percpu faster\n"
		"  verdict-cpu threads=2 percpu/atomic=3.38x per CPU-second ci=3.05-3.70 p=0.0004 p_holm=0.0016: percpu faster\n"
		"ratio: median ops/s over median ops/s (verdict-cpu: ops per CPU-second); ci: 95%% paired\n"
		"bootstrap, n/a below %d repetitions; p: Mann-Whitney U, two-sided; p_holm: p after Holm's\n"
		"correction over every comparison of the run; cpu_share: the lower of the two cells'\n"
		"median shares.  The wall-clock verdict is \"inconclusive (REASON)\" when a check failed,\n"
		"cpu_share < S, the ceiling < C, or a variant's (q75-q25)/median > X; else \"X faster\"\n"
		"when p_holm < A and the ci excludes 1; \"no significant difference\" when p_holm >= A\n"
		"and the ci lies within 1-M..1+M; otherwise inconclusive.  The CPU-time verdict follows\n"
		"the same rules without the cpu_share and ceiling checks (its spread: that of the\n"
		"repetitions' ratios, allowed over X when the ci lies further from 1), and is given\n"
		"where CPU time\n"
		"stands for speed: at 1 thread (its CPU time is its work, whoever else runs), and at\n"
		"threads <= CPUs when cpu_share >= S; elsewhere it says \"not valid\".\n",
		LAB_API, lab_counter_modes(), lab_lock_kinds(), LAB_ALPHA, LAB_SHARE_MIN, LAB_SPREAD_MAX, LAB_CEILING_MIN,
		LAB_SAME_MARGIN, LAB_MIN_REPS);
}

static int bad(const char *what, const char *arg)
{
	fprintf(stderr, LAB_NAME ": bad %s '%s' (" LAB_NAME " --help)\n", what, arg);
	return 2;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

static int parse_threads(const char *s, struct lab_params *p)
{
	char buf[256], *save = NULL;
	size_t len = strlen(s);
	/* strtok_r would skip an empty item: "1,,2" and ",2" are typos, not lists */
	if (len == 0 || len >= sizeof(buf) || s[0] == ',' || s[len - 1] == ',' || strstr(s, ",,"))
		return -1;
	strcpy(buf, s);
	p->nthreads = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		if (parse_u64(t, &v) || v == 0 || v > 4096 || p->nthreads == LAB_MAX_THREADS_LIST)
			return -1;
		p->threads[p->nthreads++] = (unsigned)v;
	}
	return p->nthreads ? 0 : -1;
}

static int parse_variants(const char *s, struct lab_params *p, bool counter)
{
	static char buf[256];
	char *save = NULL;
	if (strlen(s) >= sizeof(buf))
		return bad(counter ? "--modes" : "--kinds", s);
	strcpy(buf, s);
	p->nvariants = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (p->nvariants == LAB_MAX_VARIANTS)
			return bad("variant list (too long)", s);
		for (unsigned i = 0; i < p->nvariants; i++)
			if (!strcmp(p->variants[i].name, t))
				return bad("variant list (a name twice)", t);
		int rc = counter ? lab_counter_variant(t, &p->variants[p->nvariants])
				 : lab_lock_variant(t, &p->variants[p->nvariants]);
		if (rc == -EINVAL)
			rc = lab_plugin_variant(t, counter, &p->variants[p->nvariants]);
		if (rc == -ENOTSUP) {
			fprintf(stderr, LAB_NAME ": %s has no exact limited add; --limited takes atomic, percpu, percpu-cas\n", t);
			return 2;
		}
		if (rc == -EINVAL && *lab_plugin_names(counter)) {
			fprintf(stderr, LAB_NAME ": bad %s '%s': not built in, nor a plug-in's (%s)\n",
				counter ? "mode" : "lock kind", t, lab_plugin_names(counter));
			return 2;
		}
		if (rc)
			return bad(counter ? "mode" : "lock kind", t);
		p->nvariants++;
	}
	return p->nvariants ? 0 : bad("variant list", s);
}

int main(int argc, char **argv)
{
	static struct lab_params p;
	const char *variants = NULL, *out = "bga-lab-runs";
	bool files = true;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "compare"))
		return lab_compare_main(argc - 2, argv + 2);
	p.command = argv[1];
	bool counter = !strcmp(p.command, "counter");
	if (!counter && strcmp(p.command, "lock")) {
		fprintf(stderr, LAB_NAME ": unknown command '%s': counter or lock (" LAB_NAME " --help)\n", p.command);
		return 2;
	}
	p.reps = 9;
	p.format = "text";
	p.th = (struct lab_thresholds){LAB_SHARE_MIN, LAB_SPREAD_MAX, LAB_CEILING_MIN, LAB_ALPHA, LAB_SAME_MARGIN};
	p.seconds = 0.1;
	p.ceiling = true;
	p.hold_ns = 100;
	p.spread = 1;
	p.api = LAB_API;
	p.quiet = !isatty(2);
	parse_threads(counter ? "1,2" : "2", &p);
	lab_cur = &p;

	enum { O_MODES = 256, O_KINDS, O_THREADS, O_BATCH, O_LIMITED, O_REPS, O_SECONDS, O_OPS, O_PIN, O_NOPIN,
	       O_NOCEIL, O_OUT, O_NOFILES, O_QUIET, O_HOLD, O_THINK, O_SLOTS, O_SPREAD, O_ALPHA, O_SHAREMIN,
	       O_SPREADMAX, O_CEILMIN, O_MARGIN, O_PLUGIN, O_FORMAT };
	static const struct option opts[] = {
		{"modes", required_argument, 0, O_MODES},     {"kinds", required_argument, 0, O_KINDS},
		{"threads", required_argument, 0, O_THREADS}, {"batch", required_argument, 0, O_BATCH},
		{"limited", no_argument, 0, O_LIMITED},       {"reps", required_argument, 0, O_REPS},
		{"seconds", required_argument, 0, O_SECONDS}, {"ops", required_argument, 0, O_OPS},
		{"pin", no_argument, 0, O_PIN},               {"no-pin", no_argument, 0, O_NOPIN},
		{"no-ceiling", no_argument, 0, O_NOCEIL},     {"out", required_argument, 0, O_OUT},
		{"no-files", no_argument, 0, O_NOFILES},      {"quiet", no_argument, 0, O_QUIET},
		{"hold", required_argument, 0, O_HOLD},       {"think", required_argument, 0, O_THINK},
		{"slots", required_argument, 0, O_SLOTS},     {"spread", required_argument, 0, O_SPREAD},
		{"alpha", required_argument, 0, O_ALPHA},     {"share-min", required_argument, 0, O_SHAREMIN},
		{"spread-max", required_argument, 0, O_SPREADMAX}, {"ceiling-min", required_argument, 0, O_CEILMIN},
		{"same-margin", required_argument, 0, O_MARGIN}, {"plugin", required_argument, 0, O_PLUGIN},
		{"format", required_argument, 0, O_FORMAT},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0}};
	optind = 2;
	int c;
	uint64_t v;
	char *end;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case O_MODES:
		case O_KINDS:
			if ((c == O_MODES) != counter)
				return bad(counter ? "option for counter" : "option for lock", c == O_MODES ? "--modes" : "--kinds");
			variants = optarg;
			break;
		case O_THREADS:
			if (parse_threads(optarg, &p))
				return bad("--threads", optarg);
			break;
		case O_BATCH:
			if (parse_u64(optarg, &v) || v > INT32_MAX)
				return bad("--batch", optarg);
			p.batch = (int32_t)v;
			break;
		case O_LIMITED:
			p.limited = true;
			break;
		case O_REPS:
			if (parse_u64(optarg, &v) || v < 1 || v > LAB_MAX_REPS)
				return bad("--reps", optarg);
			p.reps = (unsigned)v;
			break;
		case O_SECONDS:
			p.seconds = strtod(optarg, &end);
			if (*end || !(p.seconds > 0 && p.seconds <= 600))
				return bad("--seconds", optarg);
			break;
		case O_OPS:
			/* 2^40 per thread is hours; 2^64-1 would be "until stopped" in all but name */
			if (parse_u64(optarg, &p.ops) || p.ops == 0 || p.ops > (UINT64_C(1) << 40))
				return bad("--ops (1 to 2^40)", optarg);
			break;
		case O_PIN:
			p.pin = true;
			break;
		case O_NOPIN:
			p.pin = false;
			break;
		case O_NOCEIL:
			p.ceiling = false;
			break;
		case O_OUT:
			out = optarg;
			files = true;
			break;
		case O_NOFILES:
			files = false;
			break;
		case O_QUIET:
			p.quiet = true;
			break;
		case O_HOLD:
			if (parse_u64(optarg, &p.hold_ns) || p.hold_ns > 1000000000)
				return bad("--hold", optarg);
			break;
		case O_THINK:
			if (parse_u64(optarg, &p.think_ns) || p.think_ns > 1000000000)
				return bad("--think", optarg);
			break;
		case O_SLOTS:
			if (parse_u64(optarg, &v) || v > (1u << 20) || (v & (v - 1)))
				return bad("--slots (0 or a power of two up to 2^20)", optarg);
			p.slots = (uint32_t)v;
			break;
		case O_SPREAD:
			if (parse_u64(optarg, &p.spread) || p.spread == 0)
				return bad("--spread", optarg);
			break;
		case O_FORMAT:
			if (strcmp(optarg, "text") && strcmp(optarg, "json") && strcmp(optarg, "csv"))
				return bad("--format (text, json or csv)", optarg);
			p.format = optarg;
			break;
		case O_PLUGIN:
			if (lab_plugin_load(optarg))
				return 2;
			break;
		case O_ALPHA:
		case O_SHAREMIN:
		case O_SPREADMAX:
		case O_CEILMIN:
		case O_MARGIN: {
			static const double hi[] = {0.5, 1.0, 100, 64, 1.0};
			double *dst[] = {&p.th.alpha, &p.th.share_min, &p.th.spread_max, &p.th.ceiling_min,
					 &p.th.same_margin};
			double x = strtod(optarg, &end);
			if (*end || end == optarg || !(x > 0 && x <= hi[c - O_ALPHA]))
				return bad("threshold", optarg);
			*dst[c - O_ALPHA] = x;
			break;
		}
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		return bad("argument", argv[optind]);
	int rc = parse_variants(variants ? variants : counter ? "atomic,percpu" : "fas,mutex", &p, counter);
	if (rc)
		return rc;
	/* The output directory is made and checked now, not after the run. */
	if (files && ((mkdir(out, 0777) != 0 && errno != EEXIST) || access(out, W_OK | X_OK) != 0)) {
		fprintf(stderr, LAB_NAME ": --out %s: %s\n", out, strerror(errno));
		return 1;
	}
	if (!counter)
		lab_spin_calibrate();

	struct lab_result r;
	rc = lab_run(&p, &r);
	if (rc == -ENOMEM) {
		fprintf(stderr, LAB_NAME ": out of memory\n");
		return 1;
	}
	/* with --format json or csv, stdout is the data: file names go to stderr */
	bool text = !strcmp(p.format, "text");
	FILE *names = text ? stdout : stderr;
	if (text) {
		lab_print(&p, &r);
		lab_model_verdict(&p); /* lab_model.c: the same question counted on the model of N cores */
	} else if (!strcmp(p.format, "csv"))
		lab_print_csv(&p, &r);
	else if (lab_write_json(&p, &r, "-"))
		rc = 1;
	if (files) {
		char stem[512], path[600];
		time_t now = time(NULL);
		char stamp[32];
		strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", gmtime(&now));
		if (mkdir(out, 0777) != 0 && errno != EEXIST) {
			fprintf(stderr, LAB_NAME ": %s: %s\n", out, strerror(errno));
			return 1;
		}
		snprintf(stem, sizeof(stem), LAB_NAME "-%s-%s-%d", p.command, stamp, (int)getpid());
		snprintf(path, sizeof(path), "%s/%s.json", out, stem);
		if (lab_write_json(&p, &r, path) == 0)
			fprintf(names, "json: %s\n", path);
		else
			rc = 1;
		if (lab_write_png(&p, &r, out, stem) == 0)
			fprintf(names, "png: %s/%s.png\n", out, stem);
	}
	int failed = r.failed;
	lab_result_free(&r);
	return failed ? 1 : rc;
}
