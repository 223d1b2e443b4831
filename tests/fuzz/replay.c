/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Corpus replay: runs every file named on the command line, or found in a
 * directory named there, through the harness's LLVMFuzzerTestOneInput().
 * Built by the normal (gcc) build so ctest replays the seed corpus and
 * every saved crash on each `make test`; the harness aborts on a finding.
 *
 * After one pass over every input it goes on for BGA_STRESS_SECONDS
 * (stress_time.h; a short default), alternating a replay of an input as
 * it is (the concurrency harness meets new interleavings each time) with
 * a mutated copy (a few bytes flipped, replaced, cut or added, from a
 * fixed seed per pass).  The input running when the harness aborts is
 * written to replay-crash-<pid>.bin in the working directory.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_input.h"
#include "stress_time.h"
#include "testutil.h"

/* The input being run, for the abort handler. */
static const uint8_t *volatile cur_buf;
static volatile size_t cur_len;

static void on_abort(int sig)
{
	char name[64];
	int n = snprintf(name, sizeof(name), "replay-crash-%ld.bin", (long)getpid());
	int fd = n > 0 ? open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644) : -1;
	if (fd >= 0 && cur_buf) {
		ssize_t w = write(fd, (const void *)cur_buf, cur_len);
		(void)w;
		close(fd);
		static const char msg[] = "replay: the failing input is in replay-crash-<pid>.bin\n";
		w = write(2, msg, sizeof(msg) - 1);
		(void)w;
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void run_buf(const uint8_t *buf, size_t len)
{
	cur_buf = buf;
	cur_len = len;
	LLVMFuzzerTestOneInput(buf, len);
	cur_buf = NULL;
}

/* Every input of the first pass, kept for the timed passes. */
static struct input {
	uint8_t *buf;
	size_t len;
} *inputs;
static size_t ninputs, cap_inputs;

static int run_file(const char *path)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *buf = NULL;
	long len;

	if (!fp || fseek(fp, 0, SEEK_END) || (len = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET)) {
		perror(path);
		if (fp)
			fclose(fp);
		return -1;
	}
	/* An exact-size heap copy, so ASan sees reads past the end. */
	buf = malloc(len ? (size_t)len : 1);
	if (!buf || fread(buf, 1, (size_t)len, fp) != (size_t)len) {
		perror(path);
		fclose(fp);
		free(buf);
		return -1;
	}
	fclose(fp);
	run_buf(buf, (size_t)len);
	if (ninputs == cap_inputs) {
		struct input *p = realloc(inputs, (cap_inputs = cap_inputs ? 2 * cap_inputs : 64) * sizeof(*p));
		if (!p)
			abort();
		inputs = p;
	}
	inputs[ninputs++] = (struct input){buf, (size_t)len};
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files of a directory in name order, so runs are repeatable. */
static int run_dir(const char *dir, unsigned *count)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL, path[4096];
	size_t n = 0, cap = 0, i;
	struct stat st;
	int rc = 0;

	if (!d) {
		perror(dir);
		return -1;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **p = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof(*p));

			if (!p)
				abort();
			names = p;
		}
		names[n] = strdup(de->d_name);
		if (!names[n])
			abort();
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			if (run_file(path))
				rc = -1;
			else
				(*count)++;
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

/* A copy of in with a few random edits, in *out (malloc'd). */
static size_t mutate(struct rng *r, const struct input *in, uint8_t **out)
{
	size_t len = in->len, cap = len + 16;
	uint8_t *b = malloc(cap);
	if (!b)
		abort();
	if (len)
		memcpy(b, in->buf, len);
	for (int edits = 1 + (int)below(r, 4); edits > 0; edits--) {
		switch (below(r, 5)) {
		case 0: /* flip a bit */
			if (len)
				b[below(r, len)] ^= (uint8_t)(1u << below(r, 8));
			break;
		case 1: /* a random byte */
		case 2:
			if (len)
				b[below(r, len)] = (uint8_t)rnd(r);
			break;
		case 3: /* cut the tail */
			if (len)
				len = below(r, len + 1);
			break;
		default: /* add a byte */
			if (len < cap)
				b[len++] = (uint8_t)rnd(r);
			break;
		}
	}
	*out = b;
	return len;
}

int main(int argc, char **argv)
{
	unsigned count = 0;
	struct stat st;
	int i, rc = 0;
	uint64_t deadline = stress_deadline(stress_seconds(BGA_STRESS_DEFAULT_SECONDS));

	signal(SIGABRT, on_abort);
	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st)) {
			perror(argv[i]);
			rc = 1;
		} else if (S_ISDIR(st.st_mode)) {
			if (run_dir(argv[i], &count))
				rc = 1;
		} else if (run_file(argv[i])) {
			rc = 1;
		} else {
			count++;
		}
	}
	printf("replayed %u inputs\n", count);
	uint64_t rounds = 0, mutated = 0;
	struct rng r = {0x9e3779b97f4a7c15ull};
	while (ninputs && !rc && !stress_expired(deadline)) {
		const struct input *in = &inputs[rounds % ninputs];
		if (rounds++ & 1) {
			uint8_t *b;
			size_t len = mutate(&r, in, &b);
			run_buf(b, len);
			free(b);
			mutated++;
		} else {
			run_buf(in->buf, in->len);
		}
	}
	if (rounds)
		printf("then %llu timed runs (%llu mutated)\n", (unsigned long long)rounds,
		       (unsigned long long)mutated);
	for (size_t k = 0; k < ninputs; k++)
		free(inputs[k].buf);
	free(inputs);
	return rc;
}
