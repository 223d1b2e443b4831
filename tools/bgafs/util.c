/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Small helpers: crc32c, size parsing, where an image is mounted, the clock. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <isa-l/crc.h>
#include "bgafs.h"

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint32_t c = ~crc;
	while (len > 0) { /* crc32_iscsi takes an int length */
		int n = len > (1u << 30) ? (1 << 30) : (int)len;
		c = crc32_iscsi((unsigned char *)(uintptr_t)p, n, c);
		p += n;
		len -= (size_t)n;
	}
	return ~c;
}

/* mountinfo writes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *o = s;
	for (; *s; s++, o++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
		    s[3] <= '7') {
			*o = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o = *s;
		}
	}
	*o = 0;
}

int fs_mounted_at(const char *path, char *mnt, size_t len)
{
	char *real = realpath(path, NULL);
	FILE *f = real ? fopen("/proc/self/mountinfo", "r") : NULL;
	char *line = NULL;
	size_t cap = 0;
	int found = 0;
	while (f && !found && getline(&line, &cap, f) > 0) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS...] - FSTYPE SOURCE SUPEROPTS */
		char *save = NULL, *point = NULL, *tok = strtok_r(line, " \n", &save);
		for (int i = 0; tok && i < 4; i++)
			point = tok = strtok_r(NULL, " \n", &save);
		while (tok && strcmp(tok, "-"))
			tok = strtok_r(NULL, " \n", &save);
		char *type = tok ? strtok_r(NULL, " \n", &save) : NULL;
		char *source = type ? strtok_r(NULL, " \n", &save) : NULL;
		if (!point || !source || strcmp(type, "fuse.bgafs"))
			continue;
		unescape(source);
		if (strcmp(source, real) == 0) {
			unescape(point);
			snprintf(mnt, len, "%s", point);
			found = 1;
		}
	}
	free(line);
	if (f)
		fclose(f);
	free(real);
	return found;
}

int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	int shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

void ts_now(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

void ts_clamp(struct timespec *ts)
{
	/* The table's signed 64-bit nanoseconds: 1677-09-21 to 2262-04-11. */
	const time_t lim = INT64_MAX / 1000000000 - 1;
	if (ts->tv_sec > lim)
		*ts = (struct timespec){.tv_sec = lim, .tv_nsec = 999999999};
	else if (ts->tv_sec < -lim)
		*ts = (struct timespec){.tv_sec = -lim, .tv_nsec = 0};
}

/* A growing byte buffer (struct tbuf, bgafs.h): the encodings of table.c,
 * log.c, txn.c and xattr.c write through it. */
int tbuf_put(struct tbuf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		while (cap < b->len + n)
			cap *= 2;
		unsigned char *q = realloc(b->p, cap);
		if (!q)
			return -ENOMEM;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

/* Whole reads and writes of the image file (a short count retried, EINTR
 * too; a read past the end gives zeros). */
int fs_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int fs_pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;
	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0) { /* past the end of the image: zeros */
			memset(p, 0, len);
			return 0;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}
