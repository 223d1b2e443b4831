/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bgafs_exerciser: the tree read back against the model (mounted, after a
 * remount, after a SIGKILL) and the model on disk.  exerciser.c says what
 * the rules are.
 */
#include "exerciser_check.h"

const char *const opname[NOPS] = {"write", "dwrite", "awrite", "mwrite", "truncate", "fallocate", "punch",
				   "zero-range", "fsync", "create", "rename", "link", "unlink", "mkdir",
				   "rmdir", "read", "dread"};

void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "exerciser: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		die("out of memory");
	return q;
}

void path_of(char *buf, size_t n, const char *rel)
{
	snprintf(buf, n, "%s/%s", base, rel);
}

const char *describe(uint32_t idx)
{
	static char s[160];
	if (!idx)
		return "none (never written by this run)";
	const struct oprec *o = &M.ops[idx - 1];
	snprintf(s, sizeof(s), "op #%u %s off=%llu len=%llu -> %s%s%llu", o->no, opname[o->kind],
		 (unsigned long long)o->off, (unsigned long long)o->len, o->err ? strerror(o->err) : "ok",
		 o->err ? ", " : " ", (unsigned long long)o->ret);
	return s;
}

void mismatch(const struct mfile *f, const char *name, uint64_t off, int want, int got, const char *how)
{
	uint64_t b = off / BLK;
	printf("MISMATCH proc %d file %s/%s offset %llu (block %llu): expected 0x%02x, found 0x%02x (%s); last touched "
	       "by %s\n",
	       M.id, base, name, (unsigned long long)off, (unsigned long long)b, want, got, how,
	       b < f->cap / BLK ? describe(f->lastop[b]) : "none");
	fflush(stdout);
}

/* ---- checking ---- */

int gone;
const char *mnt;
char base[4096];
int quiet, direct_ok = 1;
struct model M;

/* An errno that ends the run: the daemon is gone (the crash case). */
int fatal_errno(int e)
{
	if (e == ENOTCONN || e == ECONNABORTED) {
		gone = 1;
		return 1;
	}
	return 0;
}

/* Before a difference is reported: 0 when the file system went away
 * (a read cut short by the daemon's death may fail with EIO or come
 * back short rather than say ENOTCONN). */
int alive(void)
{
	struct statvfs sv;
	if (gone || (statvfs(mnt, &sv) && fatal_errno(errno)))
		return 0;
	return 1;
}

/* Compare bytes [from, size) of the file at name with want[] through a
 * buffered or an O_DIRECT read; blocks with skip[b] (NULL: none) are not
 * compared.  0 or 1. */
int check_bytes(const struct mfile *f, const char *name, const uint8_t *want, uint64_t from,
		       uint64_t size, const uint8_t *skip, int direct, const char *how)
{
	char p[4200];
	path_of(p, sizeof(p), name);
	int fd = open(p, O_RDONLY | (direct ? O_DIRECT : 0));
	if ((fd < 0 && direct && errno == EINVAL) || (fd < 0 && fatal_errno(errno)))
		return 0;
	if (fd < 0) {
		printf("MISMATCH proc %d file %s/%s: open: %s (%s)\n", M.id, base, name, strerror(errno), how);
		return 1;
	}
	uint8_t *buf;
	if (posix_memalign((void **)&buf, BLK, MAXIO))
		die("out of memory");
	int bad = 0;
	for (uint64_t off = direct ? from / BLK * BLK : from; off < size && !bad; off += MAXIO) {
		uint64_t n = size - off < MAXIO ? size - off : MAXIO;
		uint64_t rn = direct ? (n + BLK - 1) / BLK * BLK : n;
		ssize_t r = pread(fd, buf, rn, (off_t)off);
		if (r < 0 && (fatal_errno(errno) || !alive()))
			break;
		if (r < 0) {
			printf("MISMATCH proc %d file %s/%s: read at %llu: %s (%s)\n", M.id, base, name,
			       (unsigned long long)off, strerror(errno), how);
			bad = 1;
			break;
		}
		for (uint64_t i = 0; i < n; i++) {
			if (skip && skip[(off + i) / BLK])
				continue;
			int got = i < (uint64_t)r ? buf[i] : -1;
			if (got != want[off + i] && alive()) {
				mismatch(f, name, off + i, want[off + i], got < 0 ? 0 : got,
					 got < 0 ? "short read" : how);
				bad = 1;
				break;
			}
		}
	}
	free(buf);
	close(fd);
	return bad;
}

int check_file(const struct mfile *f, const char *when)
{
	char p[4200], how[96];
	struct stat st;
	for (int k = 0; k < f->nnames; k++) {
		path_of(p, sizeof(p), f->names[k]);
		if (lstat(p, &st) && (fatal_errno(errno) || !alive()))
			return 0;
		if (lstat(p, &st)) {
			printf("MISMATCH proc %d file %s/%s: %s (%s)\n", M.id, base, f->names[k], strerror(errno), when);
			return 1;
		}
		if (((uint64_t)st.st_size != f->size || st.st_nlink != (nlink_t)f->nnames || !S_ISREG(st.st_mode)) &&
		    alive()) {
			printf("MISMATCH proc %d file %s/%s: size %lld links %lu, expected size %llu links %d (%s); the "
			       "last op on it: %s\n",
			       M.id, base, f->names[k], (long long)st.st_size, (unsigned long)st.st_nlink,
			       (unsigned long long)f->size, f->nnames, when,
			       f->size ? describe(f->lastop[(f->size - 1) / BLK]) : "-");
			return 1;
		}
	}
	snprintf(how, sizeof(how), "buffered read, %s", when);
	if (check_bytes(f, f->names[0], f->d, 0, f->size, NULL, 0, how))
		return 1;
	snprintf(how, sizeof(how), "O_DIRECT read, %s", when);
	return direct_ok && check_bytes(f, f->names[0], f->d, 0, f->size, NULL, 1, how);
}

static int has_name(const char *rel)
{
	for (int i = 0; i < MAXF; i++)
		for (int k = 0; M.f[i].used && k < M.f[i].nnames; k++)
			if (!strcmp(M.f[i].names[k], rel))
				return 1;
	return 0;
}

/* Every name in the process's directories is the model's, and the other
 * way round (the model's are checked by check_file). */
static int check_names(const char *when)
{
	char p[4200], rel[300];
	for (int d = -1; d < NDIRS; d++) {
		if (d >= 0 && !(M.dirs >> d & 1))
			continue;
		if (d < 0)
			snprintf(p, sizeof(p), "%s", base);
		else
			snprintf(p, sizeof(p), "%s/d%d", base, d);
		DIR *dp = opendir(p);
		if (!dp) {
			printf("MISMATCH proc %d directory %s: %s (%s)\n", M.id, p, strerror(errno), when);
			return 1;
		}
		struct dirent *e;
		while ((e = readdir(dp))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			if (d < 0 && e->d_name[0] == 'd' && strlen(e->d_name) == 2 && (M.dirs >> (e->d_name[1] - '0') & 1))
				continue;
			if (d < 0)
				snprintf(rel, sizeof(rel), "%s", e->d_name);
			else
				snprintf(rel, sizeof(rel), "d%d/%s", d, e->d_name);
			if (!has_name(rel)) {
				printf("MISMATCH proc %d: %s/%s exists and the model has no such name (%s)\n", M.id,
				       base, rel, when);
				closedir(dp);
				return 1;
			}
		}
		closedir(dp);
	}
	return 0;
}

int check_all(const char *when)
{
	for (int i = 0; i < MAXF; i++)
		if (M.f[i].used && check_file(&M.f[i], when))
			return 1;
	return check_names(when);
}

/* After a SIGKILL: what was fsynced and not touched since. */
int check_crash(void)
{
	char p[4200];
	struct stat st;
	int checked = 0;
	for (int i = 0; i < MAXF; i++) {
		struct mfile *f = &M.f[i];
		if (!f->used || !f->synced)
			continue;
		path_of(p, sizeof(p), f->sname);
		if (lstat(p, &st)) {
			printf("MISMATCH proc %d file %s/%s: fsynced, now %s (after SIGKILL)\n", M.id, base, f->sname,
			       strerror(errno));
			return 1;
		}
		if (!f->size_dirty && (uint64_t)st.st_size != f->ssize) {
			printf("MISMATCH proc %d file %s/%s: size %lld, fsynced at %llu and not changed since (after "
			       "SIGKILL)\n",
			       M.id, base, f->sname, (long long)st.st_size, (unsigned long long)f->ssize);
			return 1;
		}
		uint64_t n = (uint64_t)st.st_size < f->ssize ? (uint64_t)st.st_size : f->ssize;
		if (check_bytes(f, f->sname, f->sd, 0, n, f->dirty, 0, "buffered read, after SIGKILL"))
			return 1;
		checked++;
	}
	if (!quiet)
		printf("proc %d: %d fsynced files intact after the crash\n", M.id, checked);
	return 0;
}

/* ---- the model on disk (STATEDIR/p<id>) ---- */

static void wr(FILE *fp, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, fp) != n)
		die("writing the state: %s", strerror(errno));
}
static void rd(FILE *fp, void *p, size_t n)
{
	if (n && fread(p, 1, n, fp) != n)
		die("reading the state: short file");
}

static FILE *state_file(const char *dir, const char *mode)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/p%d", dir, M.id);
	FILE *fp = fopen(p, mode);
	if (!fp)
		die("%s: %s", p, strerror(errno));
	return fp;
}

void state_save(const char *dir)
{
	FILE *fp = state_file(dir, "wb");
	wr(fp, &M, offsetof(struct model, f));
	wr(fp, &M.nops, sizeof(M.nops));
	wr(fp, M.ops, M.nops * sizeof(*M.ops));
	for (int i = 0; i < MAXF; i++) {
		struct mfile *f = &M.f[i];
		wr(fp, f, sizeof(*f));
		wr(fp, f->d, f->cap);
		wr(fp, f->lastop, f->cap / BLK * sizeof(*f->lastop));
		wr(fp, f->dirty, f->cap / BLK);
		if (f->synced)
			wr(fp, f->sd, f->ssize);
	}
	if (fclose(fp))
		die("%s/p%d: %s", dir, M.id, strerror(errno));
}

void state_load(const char *dir)
{
	FILE *fp = state_file(dir, "rb");
	rd(fp, &M, offsetof(struct model, f));
	rd(fp, &M.nops, sizeof(M.nops));
	M.capops = M.nops;
	M.ops = xrealloc(NULL, M.nops * sizeof(*M.ops));
	rd(fp, M.ops, M.nops * sizeof(*M.ops));
	for (int i = 0; i < MAXF; i++) {
		struct mfile *f = &M.f[i];
		rd(fp, f, sizeof(*f));
		f->d = xrealloc(NULL, f->cap);
		f->lastop = xrealloc(NULL, f->cap / BLK * sizeof(*f->lastop));
		f->dirty = xrealloc(NULL, f->cap / BLK);
		rd(fp, f->d, f->cap);
		rd(fp, f->lastop, f->cap / BLK * sizeof(*f->lastop));
		rd(fp, f->dirty, f->cap / BLK);
		f->sd = NULL;
		if (f->synced) {
			f->sd = xrealloc(NULL, f->ssize);
			rd(fp, f->sd, f->ssize);
		}
	}
	fclose(fp);
}
