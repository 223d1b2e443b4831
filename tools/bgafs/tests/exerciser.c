/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bgafs_exerciser: a data-integrity exerciser for any mounted file system
 * (written for bgafs).  Run `bgafs_exerciser --help` for the command line.
 *
 * PROCS processes each own a directory under MOUNTPOINT/ex<SEED>/ and run
 * random operations on it from their own seed: buffered, O_DIRECT, AIO
 * O_DIRECT (with buffered reads racing it, as xfstests' generic/451) and
 * mmap writes; buffered and direct reads; truncate; fallocate, punch and
 * zero-range; create, rename, link, unlink, mkdir, rmdir; fsync.  Each
 * keeps an exact model of what it owns: every file's bytes, size and link
 * count, every directory's names.  Files are sized so that together they
 * want several times the free space: the image fills, and writes and
 * fallocates then fail with ENOSPC part way.  The rules checked:
 *   - a write that returns n kept exactly its first n bytes; one that
 *     fails, a truncate or fallocate that fails, changed nothing;
 *   - an mmap write whose msync fails may have kept any of its pages,
 *     each whole, but what a read sees right after is what stays;
 *   - every byte, size and name matches the model: while mounted
 *     (buffered and O_DIRECT reads), and with --verify after a clean
 *     unmount and remount;
 *   - with --verify-crash after a SIGKILL of the daemon: what was fsynced
 *     and not touched since is still there (a file is checked while the
 *     name it had at its fsync still names it).
 * The model goes to STATEDIR (one file per process) at the end of a run
 * or when the file system goes away under it (ENOTCONN: the crash case).
 * The first difference found is printed with the file, the offset, the
 * expected and found bytes and the operation that last touched that
 * block, and the program exits 1.  Exit 2: usage or setup error.
 * exerciser_check.c holds the model and reads the tree back
 * (exerciser_check.h).
 */
#include "exerciser_check.h"

static const char usage_text[] =
	"usage: bgafs_exerciser [options] MOUNTPOINT\n"
	"  -s, --seed N        seed (default 1); the same seed repeats each process's operations\n"
	"                      up to the first result that differs (which op meets ENOSPC\n"
	"                      depends on timing: commits, other processes)\n"
	"  -n, --ops N         operations per process (default 2000)\n"
	"  -t, --seconds S     stop after S seconds instead (whichever comes first)\n"
	"  -p, --procs N       processes (default 4)\n"
	"  -S, --state DIR     where the model is written (after a run) or read (verify)\n"
	"      --verify        check the tree against the model in DIR (after a remount)\n"
	"      --verify-crash  check only what was fsynced and not touched since (after a SIGKILL)\n"
	"  -q, --quiet         no progress lines\n"
	"Exit 0: every check passed; 1: a difference (the first one printed); 2: usage or setup.\n";

/* ---- random numbers (splitmix64) ---- */
static uint64_t rs;
static uint64_t rnd64(void)
{
	uint64_t z = (rs += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static uint64_t rnd(uint64_t n) { return n ? rnd64() % n : 0; }

static uint64_t maxfile;       /* largest file offset a process writes */
static int falloc_ok = 1;
static uint32_t opno;

static void grow(struct mfile *f, uint64_t bytes)
{
	if (bytes <= f->cap)
		return;
	uint64_t cap = f->cap ? f->cap : 16 * BLK;
	while (cap < bytes)
		cap *= 2;
	uint64_t ob = f->cap / BLK, nb = cap / BLK;
	f->d = xrealloc(f->d, cap);
	f->lastop = xrealloc(f->lastop, nb * sizeof(*f->lastop));
	f->dirty = xrealloc(f->dirty, nb);
	memset(f->d + f->cap, 0, cap - f->cap);
	memset(f->lastop + ob, 0, (nb - ob) * sizeof(*f->lastop));
	memset(f->dirty + ob, 0, nb - ob);
	f->cap = cap;
}

static struct oprec *op_log(int kind, uint64_t off, uint64_t len)
{
	if (M.nops == M.capops) {
		M.capops = M.capops ? 2 * M.capops : 1024;
		M.ops = xrealloc(M.ops, M.capops * sizeof(*M.ops));
	}
	struct oprec *o = &M.ops[M.nops++];
	*o = (struct oprec){.no = opno, .kind = (uint8_t)kind, .off = off, .len = len};
	return o;
}

/* Bytes [off, off+len) of f are being changed by the op just logged:
 * before the call, so a crash mid-call counts them touched. */
static void touch(struct mfile *f, uint64_t off, uint64_t len)
{
	if (!len)
		return;
	grow(f, off + len);
	for (uint64_t b = off / BLK; b <= (off + len - 1) / BLK; b++) {
		f->lastop[b] = M.nops;
		f->dirty[b] = 1;
	}
}

static void set_size(struct mfile *f, uint64_t size)
{
	grow(f, size);
	if (size < f->size)
		memset(f->d + size, 0, f->size - size);
	f->size = size;
}

/* ---- operations ---- */


static void unexpected(const char *what, const char *name, int e)
{
	if (fatal_errno(e) || !alive())
		return;
	printf("FAIL proc %d: %s %s/%s: %s (op #%u)\n", M.id, what, base, name, strerror(e), opno);
	fflush(stdout);
	exit(1);
}

static struct mfile *pick_file(void)
{
	for (int t = 0; t < 8; t++) {
		struct mfile *f = &M.f[rnd(MAXF)];
		if (f->used)
			return f;
	}
	return NULL;
}

static void fill_random(uint8_t *p, size_t n)
{
	uint64_t x = rnd64() | 1;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

static void new_name(char *out)
{
	int d = (int)rnd(NDIRS + 1) - 1;
	if (d >= 0 && (M.dirs >> d & 1))
		snprintf(out, NAMELEN, "d%d/f%llu", d, (unsigned long long)M.nameno++);
	else
		snprintf(out, NAMELEN, "f%llu", (unsigned long long)M.nameno++);
}

/* The name changed: a file fsynced under it is no longer checked after a
 * crash (the name may or may not have moved). */
static void name_changed(const char *rel)
{
	for (int i = 0; i < MAXF; i++)
		if (M.f[i].used && M.f[i].synced && !strcmp(M.f[i].sname, rel))
			M.f[i].synced = 0;
}

static void drop_name(struct mfile *f, int k)
{
	name_changed(f->names[k]);
	memmove(f->names[k], f->names[k + 1], (size_t)(f->nnames - k - 1) * NAMELEN);
	if (!--f->nnames) {
		free(f->d);
		free(f->lastop);
		free(f->dirty);
		free(f->sd);
		memset(f, 0, sizeof(*f));
	}
}

/* The file named rel, if any: its index and name slot. */
static struct mfile *lookup(const char *rel, int *slot)
{
	for (int i = 0; i < MAXF; i++)
		for (int k = 0; M.f[i].used && k < M.f[i].nnames; k++)
			if (!strcmp(M.f[i].names[k], rel)) {
				*slot = k;
				return &M.f[i];
			}
	return NULL;
}

static int open_file(struct mfile *f, int flags)
{
	char p[4200];
	path_of(p, sizeof(p), f->names[0]);
	int fd = open(p, flags);
	if (fd < 0)
		unexpected("open", f->names[0], errno);
	return fd;
}

/* A write's result into the model: n bytes of src kept at off. */
static void apply_write(struct mfile *f, const uint8_t *src, uint64_t off, uint64_t n)
{
	if (!n)
		return;
	grow(f, off + n);
	memcpy(f->d + off, src, n);
	if (off + n > f->size)
		f->size = off + n;
}

static void op_write(struct mfile *f, int kind)
{
	int direct = kind != OP_WRITE;
	uint64_t off, len;
	if (direct) {
		/* An AIO write stays within one FUSE request (64 KiB): the
		 * kernel answers a short reply to an async one with EIO, and
		 * a failed one of several with the error, whatever the others
		 * wrote, so only one request's result is exact. */
		off = rnd(maxfile / BLK) * BLK;
		len = (1 + rnd((kind == OP_AWRITE ? 65536 : MAXIO / 2) / BLK)) * BLK;
	} else {
		off = rnd(maxfile);
		len = 1 + (rnd(2) ? rnd(16384) : rnd(MAXIO));
	}
	uint8_t *buf;
	if (posix_memalign((void **)&buf, BLK, len))
		die("out of memory");
	fill_random(buf, len);
	struct oprec *o = op_log(kind, off, len);
	touch(f, off, len);
	if (off + len > f->size)
		f->size_dirty = 1;
	char p[4200];
	path_of(p, sizeof(p), f->names[0]);
	int fd = open(p, O_RDWR | (direct ? O_DIRECT : 0));
	if (fd < 0 && direct && errno == EINVAL) { /* no O_DIRECT here: buffered from now on */
		direct_ok = 0;
		fd = open(p, O_RDWR);
	}
	if (fd < 0) {
		unexpected("open", f->names[0], errno);
		free(buf);
		return;
	}
	ssize_t r;
	if (kind == OP_AWRITE) {
		/* AIO O_DIRECT with buffered reads of the range while it is in
		 * flight (generic/451): once it completes a buffered read must
		 * see it. */
		int rfd = open_file(f, O_RDONLY);
		uint8_t *rb = xrealloc(NULL, len);
		if (rfd >= 0 && pread(rfd, rb, len, (off_t)off) < 0)
			unexpected("read", f->names[0], errno);
		aio_context_t ctx = 0;
		if (syscall(SYS_io_setup, 1, &ctx))
			die("io_setup: %s", strerror(errno));
		struct iocb cb = {.aio_lio_opcode = IOCB_CMD_PWRITE, .aio_fildes = (uint32_t)fd,
				  .aio_buf = (uint64_t)(uintptr_t)buf, .aio_nbytes = len, .aio_offset = (int64_t)off};
		struct iocb *cbs[1] = {&cb};
		struct io_event ev;
		if (syscall(SYS_io_submit, ctx, 1, cbs) != 1) {
			r = -1;
		} else {
			for (int i = 0; i < 4 && rfd >= 0; i++)
				if (pread(rfd, rb, len, (off_t)off) < 0)
					break;
			while (syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1)
				if (errno != EINTR)
					die("io_getevents: %s", strerror(errno));
			r = ev.res;
			if (ev.res < 0) {
				errno = (int)-ev.res;
				r = -1;
			}
		}
		syscall(SYS_io_destroy, ctx);
		free(rb);
		if (rfd >= 0)
			close(rfd);
	} else {
		r = pwrite(fd, buf, len, (off_t)off);
	}
	if (r < 0) {
		o->err = errno;
		if (errno != ENOSPC)
			unexpected(opname[kind], f->names[0], errno);
	} else {
		o->ret = (uint64_t)r;
		apply_write(f, buf, off, (uint64_t)r);
	}
	close(fd);
	free(buf);
	/* The writer's own buffered read-back, as generic/451's. */
	if (!gone && kind == OP_AWRITE && r > 0) {
		char how[64];
		snprintf(how, sizeof(how), "buffered read right after op #%u", opno);
		uint64_t to = off + (uint64_t)r < f->size ? off + (uint64_t)r : f->size;
		if (check_bytes(f, f->names[0], f->d, off, to, NULL, 0, how))
			exit(1);
	}
}

static sigjmp_buf bus_jmp;
static void on_bus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

/* A write through a shared mapping inside the file, then msync.  When
 * msync fails, each page may hold the old or the new bytes; the model
 * takes what a read shows now (which the remount must then show too). */
static void op_mwrite(struct mfile *f)
{
	if (!f->size)
		return;
	uint64_t off = rnd(f->size), len = 1 + rnd(f->size - off < 65536 ? f->size - off : 65536);
	uint64_t moff = off / BLK * BLK, mlen = off + len - moff;
	uint8_t *buf = xrealloc(NULL, len), *old = xrealloc(NULL, len);
	fill_random(buf, len);
	memcpy(old, f->d + off, len);
	struct oprec *o = op_log(OP_MWRITE, off, len);
	touch(f, off, len);
	int fd = open_file(f, O_RDWR);
	if (fd < 0)
		goto out;
	uint8_t *m = mmap(NULL, mlen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)moff);
	if (m == MAP_FAILED)
		unexpected("mmap", f->names[0], errno);
	int err = 0;
	if (m != MAP_FAILED) {
		if (!sigsetjmp(bus_jmp, 1)) {
			memcpy(m + (off - moff), buf, len);
			if (msync(m, mlen, MS_SYNC))
				err = errno;
		} else {
			err = EFAULT; /* SIGBUS */
		}
		munmap(m, mlen);
	}
	o->err = err;
	if (!err) {
		memcpy(f->d + off, buf, len);
	} else if (!fatal_errno(err)) {
		uint8_t *now = xrealloc(NULL, len);
		ssize_t r = pread(fd, now, len, (off_t)off);
		if (r != (ssize_t)len)
			unexpected("read after a failed msync", f->names[0], r < 0 ? errno : EIO);
		for (uint64_t p = 0; r == (ssize_t)len && p < len;) {
			uint64_t n = BLK - (off + p) % BLK;
			if (n > len - p)
				n = len - p;
			if (memcmp(now + p, buf + p, n) && memcmp(now + p, old + p, n) && alive()) {
				mismatch(f, f->names[0], off + p, old[p], now[p],
					 "a page after a failed msync holds neither the old nor the new bytes");
				exit(1);
			}
			p += n;
		}
		memcpy(f->d + off, now, len);
		free(now);
	}
	close(fd);
out:
	free(buf);
	free(old);
}

static void op_trunc(struct mfile *f)
{
	uint64_t size = rnd(3) ? rnd(f->size + 1) : rnd(maxfile);
	struct oprec *o = op_log(OP_TRUNC, size, 0);
	uint64_t lo = size < f->size ? size : f->size, hi = size < f->size ? f->size : size;
	touch(f, lo, hi - lo);
	f->size_dirty = 1;
	char p[4200];
	path_of(p, sizeof(p), f->names[0]);
	if (truncate(p, (off_t)size)) {
		o->err = errno;
		unexpected("truncate", f->names[0], errno);
		return;
	}
	set_size(f, size);
}

static void op_falloc(struct mfile *f, int kind)
{
	uint64_t off = rnd(maxfile), len = 1 + rnd(MAXIO * 2);
	int keep = kind == OP_PUNCH || rnd(2), mode = keep ? FALLOC_FL_KEEP_SIZE : 0;
	if (kind == OP_PUNCH)
		mode |= FALLOC_FL_PUNCH_HOLE;
	if (kind == OP_ZERO)
		mode |= FALLOC_FL_ZERO_RANGE;
	struct oprec *o = op_log(kind, off, len);
	if (kind != OP_FALLOC)
		touch(f, off, len);
	if (!keep)
		f->size_dirty = 1;
	int fd = open_file(f, O_RDWR);
	if (fd < 0)
		return;
	if (fallocate(fd, mode, (off_t)off, (off_t)len)) {
		o->err = errno;
		if (errno == EOPNOTSUPP)
			falloc_ok = 0;
		else if (errno != ENOSPC)
			unexpected(opname[kind], f->names[0], errno);
	} else {
		uint64_t end = off + len;
		if (!keep && end > f->size)
			set_size(f, end);
		if (kind != OP_FALLOC && off < f->size)
			memset(f->d + off, 0, (end < f->size ? end : f->size) - off);
	}
	close(fd);
}

static void op_fsync(struct mfile *f)
{
	struct oprec *o = op_log(OP_FSYNC, 0, 0);
	int fd = open_file(f, O_RDONLY);
	if (fd < 0)
		return;
	if (fsync(fd)) {
		o->err = errno;
		if (!fatal_errno(errno) && errno != ENOSPC && errno != EIO)
			unexpected("fsync", f->names[0], errno);
		close(fd);
		return;
	}
	close(fd);
	f->sd = xrealloc(f->sd, f->size);
	memcpy(f->sd, f->d, f->size);
	f->ssize = f->size;
	memset(f->dirty, 0, f->cap / BLK);
	f->size_dirty = 0;
	memcpy(f->sname, f->names[0], NAMELEN);
	f->synced = 1;
}

static void op_create(void)
{
	struct mfile *f = NULL;
	for (int i = 0; i < MAXF && !f; i++)
		if (!M.f[i].used)
			f = &M.f[i];
	if (!f)
		return;
	char rel[NAMELEN], p[4200];
	new_name(rel);
	struct oprec *o = op_log(OP_CREATE, 0, 0);
	path_of(p, sizeof(p), rel);
	int fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
	if (fd < 0) {
		o->err = errno;
		if (errno != ENOSPC)
			unexpected("create", rel, errno);
		return;
	}
	close(fd);
	memset(f, 0, sizeof(*f));
	f->used = 1;
	f->nnames = 1;
	memcpy(f->names[0], rel, NAMELEN);
	grow(f, BLK);
}

static void op_namespace(int kind)
{
	struct mfile *f = pick_file();
	char rel[NAMELEN], p[4200], q[4200];
	int slot = 0;
	if (kind == OP_MKDIR || kind == OP_RMDIR) {
		int d = (int)rnd(NDIRS);
		snprintf(p, sizeof(p), "%s/d%d", base, d);
		int exists = M.dirs >> d & 1;
		if ((kind == OP_MKDIR) == exists)
			return;
		if (kind == OP_RMDIR) {
			char pre[8];
			snprintf(pre, sizeof(pre), "d%d/", d);
			for (int i = 0; i < MAXF; i++)
				for (int k = 0; M.f[i].used && k < M.f[i].nnames; k++)
					if (!strncmp(M.f[i].names[k], pre, strlen(pre)))
						return; /* not empty */
		}
		struct oprec *o = op_log(kind, (uint64_t)d, 0);
		if (kind == OP_MKDIR ? mkdir(p, 0755) : rmdir(p)) {
			o->err = errno;
			if (errno != ENOSPC)
				unexpected(opname[kind], p + strlen(base) + 1, errno);
			return;
		}
		M.dirs ^= 1ull << d;
		return;
	}
	if (!f)
		return;
	int k = (int)rnd((uint64_t)f->nnames);
	path_of(p, sizeof(p), f->names[k]);
	struct oprec *o = op_log(kind, (uint64_t)k, 0);
	if (kind == OP_UNLINK) {
		name_changed(f->names[k]);
		if (unlink(p)) {
			o->err = errno;
			unexpected("unlink", f->names[k], errno);
			return;
		}
		drop_name(f, k);
		return;
	}
	/* rename onto an existing name now and then (it replaces that file's name) */
	struct mfile *victim = NULL;
	if (kind == OP_RENAME && rnd(4) == 0) {
		struct mfile *g = pick_file();
		if (g && g != f) {
			victim = g;
			slot = (int)rnd((uint64_t)g->nnames);
			memcpy(rel, g->names[slot], NAMELEN);
		}
	}
	if (!victim)
		new_name(rel);
	if (kind == OP_LINK && f->nnames == MAXN)
		return;
	path_of(q, sizeof(q), rel);
	name_changed(f->names[k]);
	name_changed(rel);
	if (kind == OP_LINK ? link(p, q) : rename(p, q)) {
		o->err = errno;
		if (errno != ENOSPC)
			unexpected(opname[kind], f->names[k], errno);
		return;
	}
	if (victim) {
		int vs = 0;
		victim = lookup(rel, &vs);
		drop_name(victim, vs);
	}
	if (kind == OP_LINK) {
		memcpy(f->names[f->nnames++], rel, NAMELEN);
	} else {
		memcpy(f->names[k], rel, NAMELEN);
	}
}

static void op_read(struct mfile *f, int direct)
{
	char how[64];
	snprintf(how, sizeof(how), "%s read at op #%u", direct ? "O_DIRECT" : "buffered", opno);
	uint64_t from = rnd(f->size + 1), to = from + rnd(MAXIO);
	if (check_bytes(f, f->names[0], f->d, from, to < f->size ? to : f->size, NULL, direct && direct_ok, how))
		exit(1);
}

static void one_op(void)
{
	/* weights: data ops dominate; names churn enough to free space */
	static const uint8_t w[NOPS] = {[OP_WRITE] = 20, [OP_DWRITE] = 6, [OP_AWRITE] = 6, [OP_MWRITE] = 8,
					[OP_TRUNC] = 5, [OP_FALLOC] = 5, [OP_PUNCH] = 4, [OP_ZERO] = 4,
					[OP_FSYNC] = 4, [OP_CREATE] = 6, [OP_RENAME] = 3, [OP_LINK] = 2,
					[OP_UNLINK] = 4, [OP_MKDIR] = 1, [OP_RMDIR] = 1, [OP_READ] = 3,
					[OP_DREAD] = 2};
	unsigned total = 0;
	for (int i = 0; i < NOPS; i++)
		total += w[i];
	unsigned x = (unsigned)rnd(total);
	int kind = 0;
	while (x >= w[kind])
		x -= w[kind++];
	opno++;
	if (kind >= OP_CREATE && kind <= OP_RMDIR) {
		if (kind == OP_CREATE)
			op_create();
		else
			op_namespace(kind);
		return;
	}
	struct mfile *f = pick_file();
	if (!f) {
		op_create();
		return;
	}
	switch (kind) {
	case OP_WRITE:
	case OP_DWRITE:
	case OP_AWRITE:
		op_write(f, direct_ok ? kind : OP_WRITE);
		break;
	case OP_MWRITE:
		op_mwrite(f);
		break;
	case OP_TRUNC:
		op_trunc(f);
		break;
	case OP_FALLOC:
	case OP_PUNCH:
	case OP_ZERO:
		if (falloc_ok)
			op_falloc(f, kind);
		break;
	case OP_FSYNC:
		op_fsync(f);
		break;
	default:
		op_read(f, kind == OP_DREAD);
	}
}

static int child(int id, uint64_t seed, uint64_t nops, double seconds, const char *state, int mode)
{
	M.id = id;
	snprintf(base, sizeof(base), "%s/ex%llu/p%d", mnt, (unsigned long long)seed, id);
	if (mode) {
		state_load(state);
		int bad = mode == 1 ? check_all("after remount") : check_crash();
		if (!bad && !quiet && mode == 1)
			printf("proc %d: every file and name matches the model after the remount\n", id);
		return bad;
	}
	rs = seed * 1000003u + (uint64_t)id;
	if (mkdir(base, 0755) && errno != EEXIST)
		die("mkdir %s: %s", base, strerror(errno));
	struct sigaction sa = {.sa_handler = on_bus};
	sigaction(SIGBUS, &sa, NULL);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	uint64_t i;
	for (i = 0; i < nops && !gone; i++) {
		one_op();
		if (i % 256 == 255) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (seconds > 0 && (double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 > seconds)
				break;
			struct mfile *f = pick_file();
			if (f && check_file(f, "mounted, mid-run"))
				return 1;
		}
	}
	int bad = gone ? 0 : check_all("mounted, end of run");
	if (state)
		state_save(state);
	if (!quiet) {
		uint32_t nerr = 0;
		for (uint32_t k = 0; k < M.nops; k++)
			nerr += M.ops[k].err == ENOSPC;
		printf("proc %d: %llu ops, %u ENOSPC%s%s\n", id, (unsigned long long)i, nerr,
		       gone ? ", the file system went away" : "", bad ? ", MISMATCH" : ", all checks passed");
	}
	return bad;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {{"seed", 1, 0, 's'},   {"ops", 1, 0, 'n'},      {"seconds", 1, 0, 't'},
					   {"procs", 1, 0, 'p'},  {"state", 1, 0, 'S'},    {"verify", 0, 0, 'V'},
					   {"verify-crash", 0, 0, 'C'}, {"quiet", 0, 0, 'q'}, {"help", 0, 0, 'h'},
					   {0, 0, 0, 0}};
	uint64_t seed = 1, nops = 2000;
	double seconds = 0;
	int procs = 4, mode = 0, c;
	const char *state = NULL;
	while ((c = getopt_long(argc, argv, "s:n:t:p:S:qh", lo, NULL)) != -1) {
		switch (c) {
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'n': nops = strtoull(optarg, NULL, 0); break;
		case 't': seconds = atof(optarg); break;
		case 'p': procs = atoi(optarg); break;
		case 'S': state = optarg; break;
		case 'V': mode = 1; break;
		case 'C': mode = 2; break;
		case 'q': quiet = 1; break;
		case 'h': fputs(usage_text, stdout); return 0;
		default: fputs(usage_text, stderr); return 2;
		}
	}
	if (optind != argc - 1 || procs < 1 || procs > 64 || (mode && !state)) {
		fputs(usage_text, stderr);
		return 2;
	}
	mnt = argv[optind];
	char top[4200];
	snprintf(top, sizeof(top), "%s/ex%llu", mnt, (unsigned long long)seed);
	if (!mode) {
		struct statvfs sv;
		if (statvfs(mnt, &sv))
			die("%s: %s", mnt, strerror(errno));
		/* MAXF files a process, each up to maxfile: twice the space
		 * there is when the files fill, so the image fills. */
		uint64_t space = (uint64_t)sv.f_blocks * sv.f_frsize;
		maxfile = space * 2 / ((uint64_t)procs * MAXF / 2);
		maxfile = maxfile / BLK * BLK;
		if (maxfile < 16 * BLK)
			maxfile = 16 * BLK;
		if (maxfile > (1ull << 30))
			maxfile = 1ull << 30;
		if (mkdir(top, 0755) && errno != EEXIST)
			die("mkdir %s: %s", top, strerror(errno));
		if (state && mkdir(state, 0755) && errno != EEXIST)
			die("mkdir %s: %s", state, strerror(errno));
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < procs; i++) {
		pid_t pid = fork();
		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (!pid)
			_exit(child(i, seed, nops, seconds, state, mode));
	}
	int bad = 0, st;
	while (wait(&st) > 0)
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			bad = bad ? bad : (WIFEXITED(st) ? WEXITSTATUS(st) : 1);
	if (!quiet)
		printf("exerciser seed %llu: %s\n", (unsigned long long)seed, bad ? "FAILED" : "passed");
	return bad;
}
