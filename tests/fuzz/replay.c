/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Corpus replay: runs every file named on the command line, or found in a
 * directory named there, through the harness's LLVMFuzzerTestOneInput().
 * Built by the normal (gcc) build so ctest replays the seed corpus and
 * every saved crash on each `make test`; the harness aborts on a finding.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_input.h"

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
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	free(buf);
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

int main(int argc, char **argv)
{
	unsigned count = 0;
	struct stat st;
	int i, rc = 0;

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
	return rc;
}
