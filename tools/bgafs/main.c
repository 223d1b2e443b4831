/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bgafs mkfs [-f] IMAGE SIZE
 * bgafs mount [-f] [-o FUSE options] IMAGE MOUNTPOINT
 * bgafs fsck IMAGE
 * bgafs map IMAGE INODE
 * bgafs --help | --version
 *
 * bgafs(1) is the manual.  mkfs and fsck parse their arguments with
 * getopt_long, mount with libfuse's option parser (fuse_opt_parse), so -o
 * takes what mount.fuse3 takes.  Mount options of bgafs's own, beside
 * libfuse's: writeback_cache (the kernel gathers writes in its page cache
 * and sends them in pages; off by default, as in fuse2fs, so the two
 * compare alike), goal=past|distance (where a write into a hole aims),
 * window=shown|doubling (a file written out of order, past a hole, has its
 * window sized by the size it has shown: the blocks still to fill up to
 * its logical end, up to a group, place.c window_by_shown_size; the
 * default, or every window doubles as the library's do), and the atime
 * options relatime (the default),
 * strictatime, noatime and nodiratime, which bgafs applies itself: FUSE
 * leaves atime to the file system.
 *
 * mount loads the image before it answers: errors reach the terminal and
 * the exit status even in the background (the parent waits on a pipe for
 * the daemon's word).  fusermount3 -u ends the FUSE loop; the daemon then
 * commits, stores the allocator and marks the image clean before it exits.
 *
 * Exit status: 0 success (fsck: clean), 1 the command failed (fsck: not
 * clean, or the image is in use), 2 a usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bgafs.h"

static const char usage_text[] =
	"usage: bgafs mkfs [-f] IMAGE SIZE        (SIZE in bytes, K/M/G/T suffixes)\n"
	"       bgafs mount [-f] [-o OPTIONS] IMAGE MOUNTPOINT\n"
	"       bgafs fsck IMAGE\n"
	"       bgafs map IMAGE INODE\n"
	"       bgafs --help | --version\n"
	"\n"
	"A FUSE file system whose data blocks all come from bgalloc.\n"
	"  mkfs   make a file system; -f (--force) overwrites one already in IMAGE\n"
	"  mount  mount IMAGE at MOUNTPOINT, in the background; -f (--foreground) stays in front;\n"
	"         -o takes mount.fuse3 options, writeback_cache, trace=FILE (record every\n"
	"         allocator call to FILE for bga-replay(1)) and goal=past|distance (where a\n"
	"         write into a hole aims: past the file's block before it, the default, or at\n"
	"         its logical distance from the nearest) and window=shown|doubling (a file\n"
	"         written out of order has its window sized by its size, the default, or\n"
	"         every window doubles); fusermount3 -u unmounts\n"
	"  fsck   check IMAGE (refused while it is mounted)\n"
	"  map    list the extents of file INODE (stat -c %i) in IMAGE, as filefrag -v would\n"
	"Exit status: 0 success or clean, 1 failure or not clean, 2 usage error.  See bgafs(1).\n";

static int usage(void)
{
	fputs(usage_text, stderr);
	return 2;
}

static int help(void)
{
	fputs(usage_text, stdout);
	return 0;
}

static int version(void)
{
	printf("bgafs (bgalloc) %s\nlibbgalloc %s, libfuse %s\n", BGA_VERSION_STRING, bga_version(),
	       fuse_pkgversion());
	return 0;
}

/* getopt_long for the subcommands: -h/--help, and -f with its long name
 * (NULL: none).  Returns the option seen ('f'), 0 at the end, 'h' for
 * help, or '?' after an unknown option (already reported). */
static int sub_opt(int argc, char **argv, const char *long_f)
{
	const struct option longopts[] = {
		{long_f ? long_f : "help", no_argument, NULL, long_f ? 'f' : 'h'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	opterr = 0; /* the message below says it once */
	int c = getopt_long(argc, argv, long_f ? "+fh" : "+h", longopts, NULL);
	if (c == -1)
		return 0;
	if (c == '?')
		fprintf(stderr, "bgafs %s: unknown option %s\n", argv[0], argv[optind - 1]);
	return c;
}
static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fs *fs = userdata;
	if (fs->writeback_cache && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/* POSIX ACLs (perm.c): the kernel enforces them; bgafs stores them,
	 * keeps them and the mode in step, applies default ACLs at create,
	 * and so applies the umask itself (DONT_MASK). */
	if ((conn->capable & FUSE_CAP_POSIX_ACL) && (conn->capable & FUSE_CAP_DONT_MASK)) {
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
		fs->acl = 1;
	}
	/* The kernel clears set-ID bits on a write or truncate by an
	 * unprivileged caller (it knows the caller's capabilities); bgafs adds
	 * what its rule for FUSE leaves out (perm_kill_suidgid). */
	conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
	/* Enough requests in flight for four writers and the readahead. */
	conn->max_background = 64;
	conn->congestion_threshold = 48;
}

static int cmd_fsck(int argc, char **argv)
{
	int c;
	while ((c = sub_opt(argc, argv, NULL)))
		if (c == 'h')
			return help();
		else
			return usage();
	if (argc - optind != 1)
		return usage();
	const char *path = argv[optind];
	struct fs *fs;
	if (fs_open(path, 0, &fs))
		return 1;
	if (!fs->sb.clean)
		fprintf(stderr, "bgafs fsck: %s was not unmounted cleanly: blocks taken after its last commit "
				"show as leaked until a mount reconciles them\n", path);
	int problems = fs_check(fs, 0, 1);
	uint64_t total = fs->sb.nblocks - fs->sb.first_data_block, freeb = bga_free_exact(fs->vol);
	/* "sequence", not "generation": that word is the allocator's store
	 * generation, as bga-inspect prints it. */
	printf("bgafs fsck: %s: %s, %llu inodes, %llu of %llu data blocks in use, superblock sequence %llu\n", path,
	       problems ? "NOT CLEAN" : "clean", (unsigned long long)fs->itab.count,
	       (unsigned long long)(total - freeb), (unsigned long long)total, (unsigned long long)fs->sb.gen);
	fs_close(fs);
	return problems ? 1 : 0;
}

/* The extent map of one inode, read from an unmounted image: a line per
 * extent (logical block, physical block, length, written or unwritten),
 * then the count.  FUSE has no FIEMAP, so this is how a test or a
 * benchmark sees what a write or an fallocate made of a file. */
static int cmd_map(int argc, char **argv)
{
	int c;
	while ((c = sub_opt(argc, argv, NULL)))
		return c == 'h' ? help() : usage();
	char *endp;
	if (argc - optind != 2)
		return usage();
	errno = 0;
	unsigned long long ino = strtoull(argv[optind + 1], &endp, 10);
	if (errno || *endp || endp == argv[optind + 1]) {
		fprintf(stderr, "bgafs map: bad inode number '%s'\n", argv[optind + 1]);
		return usage();
	}
	struct fs *fs;
	if (fs_open(argv[optind], 0, &fs))
		return 1;
	struct inode *ip = itab_get(&fs->itab, ino);
	if (!ip) {
		fprintf(stderr, "bgafs map: %s: no inode %llu\n", argv[optind], ino);
		fs_close(fs);
		return 1;
	}
	for (uint32_t i = 0; i < ip->map.n; i++) {
		const struct extent *e = &ip->map.v[i];
		printf("%llu %llu %u %s\n", (unsigned long long)e->lblk, (unsigned long long)e->pblk, e->len,
		       (e->flags & EXT_UNWRITTEN) ? "unwritten" : "written");
	}
	printf("bgafs map: inode %llu: %u extents, %llu blocks, size %llu\n", ino, ip->map.n,
	       (unsigned long long)ip->map.blocks, (unsigned long long)ip->size);
	fs_close(fs);
	return 0;
}

static int cmd_mkfs(int argc, char **argv)
{
	int c, force = 0;
	while ((c = sub_opt(argc, argv, "force")))
		if (c == 'f')
			force = 1;
		else if (c == 'h')
			return help();
		else
			return usage();
	uint64_t bytes;
	if (argc - optind != 2)
		return usage();
	if (parse_size(argv[optind + 1], &bytes)) {
		fprintf(stderr, "bgafs mkfs: bad size '%s'\n", argv[optind + 1]);
		return usage();
	}
	const char *path = argv[optind];
	if (fs_mkfs(path, bytes, force))
		return 1;
	printf("bgafs: made %s, %llu blocks of %u bytes\n", path, (unsigned long long)(bytes / BGAFS_BLOCK),
	       BGAFS_BLOCK);
	return 0;
}

/* mount's arguments, through libfuse's parser: the image and mount point
 * are its non-options, -f and bgafs's own -o options are taken here, and
 * every other option goes on to fuse_session_new. */
struct mount_args {
	char *image, *mnt;
	int fg, writeback_cache, help;
	char *trace, *goal, *window;
	unsigned atime; /* ATIME_* */
};

enum { MOUNT_KEY_HELP = 1, MOUNT_KEY_ATIME, MOUNT_KEY_NOATIME, MOUNT_KEY_NODIRATIME, MOUNT_KEY_STRICTATIME,
       MOUNT_KEY_RELATIME };

static const struct fuse_opt mount_spec[] = {
	{"-f", offsetof(struct mount_args, fg), 1},
	{"--foreground", offsetof(struct mount_args, fg), 1},
	{"writeback_cache", offsetof(struct mount_args, writeback_cache), 1},
	{"trace=%s", offsetof(struct mount_args, trace), 0},
	{"goal=%s", offsetof(struct mount_args, goal), 0},
	{"window=%s", offsetof(struct mount_args, window), 0},
	/* atime options: bgafs moves atime itself (inode_atime_due) */
	FUSE_OPT_KEY("atime", MOUNT_KEY_ATIME),
	FUSE_OPT_KEY("noatime", MOUNT_KEY_NOATIME),
	FUSE_OPT_KEY("nodiratime", MOUNT_KEY_NODIRATIME),
	FUSE_OPT_KEY("strictatime", MOUNT_KEY_STRICTATIME),
	FUSE_OPT_KEY("relatime", MOUNT_KEY_RELATIME),
	FUSE_OPT_KEY("-h", MOUNT_KEY_HELP),
	FUSE_OPT_KEY("--help", MOUNT_KEY_HELP),
	FUSE_OPT_END,
};

static int mount_arg(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	(void)outargs;
	struct mount_args *m = data;
	switch (key) {
	case MOUNT_KEY_HELP:
		m->help = 1;
		return 0;
	/* The last of atime, noatime, strictatime and relatime wins, as for
	 * mount(8); atime and noatime go on to libfuse too (MS_NOATIME). */
	case MOUNT_KEY_ATIME:
	case MOUNT_KEY_RELATIME:
		m->atime &= ~(ATIME_NOATIME | ATIME_STRICT);
		return key == MOUNT_KEY_ATIME;
	case MOUNT_KEY_NOATIME:
		m->atime = (m->atime & ~ATIME_STRICT) | ATIME_NOATIME;
		return 1;
	case MOUNT_KEY_STRICTATIME:
		m->atime = (m->atime & ~ATIME_NOATIME) | ATIME_STRICT;
		return 0;
	case MOUNT_KEY_NODIRATIME:
		m->atime |= ATIME_NODIRATIME;
		return 0;
	}
	if (key == FUSE_OPT_KEY_NONOPT) {
		char **slot = !m->image ? &m->image : !m->mnt ? &m->mnt : NULL;
		if (!slot) {
			fprintf(stderr, "bgafs mount: one argument too many: %s\n", arg);
			return -1;
		}
		*slot = strdup(arg);
		return *slot ? 0 : -1;
	}
	return 1; /* libfuse's */
}

static int cmd_mount(int argc, char **argv)
{
	struct mount_args m = {0};
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	int rc = 1;
	if (fuse_opt_parse(&args, &m, mount_spec, mount_arg)) {
		fuse_opt_free_args(&args);
		return usage();
	}
	if (m.help) {
		fuse_opt_free_args(&args);
		return help();
	}
	int bad_goal = m.goal && strcmp(m.goal, "past") && strcmp(m.goal, "distance");
	if (bad_goal)
		fprintf(stderr, "bgafs mount: goal=%s: past or distance\n", m.goal);
	int bad_window = m.window && strcmp(m.window, "shown") && strcmp(m.window, "doubling");
	if (bad_window)
		fprintf(stderr, "bgafs mount: window=%s: shown or doubling\n", m.window);
	if (!m.image || !m.mnt || bad_goal || bad_window) {
		free(m.image);
		free(m.mnt);
		free(m.trace);
		free(m.goal);
		free(m.window);
		fuse_opt_free_args(&args);
		return usage();
	}
	const char *image = m.image, *mnt = m.mnt;
	int fg = m.fg;
	char *abs = realpath(image, NULL), *fsname = NULL;
	if (!abs) {
		fprintf(stderr, "bgafs: %s: %s\n", image, strerror(errno));
		goto out_args;
	}
	/* fsname is what /proc/self/mountinfo shows and what fs_open looks
	 * for; a comma or backslash in the path is escaped for -o. */
	size_t fsname_len = strlen("fsname=") + strlen(abs) + 1;
	if (!(fsname = malloc(fsname_len)))
		goto out_args;
	snprintf(fsname, fsname_len, "fsname=%s", abs);
	char *ours = NULL;
	if (fuse_opt_add_opt_escaped(&ours, fsname) || fuse_opt_add_opt(&ours, "subtype=bgafs") ||
	    fuse_opt_add_opt(&ours, "default_permissions") || fuse_opt_add_arg(&args, "-o") ||
	    fuse_opt_add_arg(&args, ours)) {
		free(ours);
		goto out_args;
	}
	free(ours);

	int pfd[2] = {-1, -1};
	if (!fg) {
		if (pipe(pfd)) {
			perror("bgafs: pipe");
			goto out_args;
		}
		pid_t pid = fork();
		if (pid < 0) {
			perror("bgafs: fork");
			goto out_args;
		}
		if (pid > 0) { /* the parent reports the daemon's start */
			close(pfd[1]);
			char status = 1;
			if (read(pfd[0], &status, 1) != 1)
				status = 1;
			rc = status;
			goto out_args;
		}
		close(pfd[0]);
		setsid();
	}

	struct fs *fs;
	if (fs_open(abs, 1, &fs))
		goto out_args;
	fs->writeback_cache = m.writeback_cache;
	fs->goal_distance = m.goal && !strcmp(m.goal, "distance");
	fs->window_shown = !m.window || !strcmp(m.window, "shown");
	struct bga_config vcfg;
	fs->group_blocks = bga_volume_config(fs->vol, &vcfg) ? 0 : vcfg.blocks_per_group;
	fs->rsv_max = fs->group_blocks ? vcfg.rsv_max : 0;
	if (m.trace && (rc = bga_rec_open(fs->vol, m.trace, "bgafs", BGAFS_BLOCK, &fs->rec))) {
		fprintf(stderr, "bgafs: trace=%s: %s\n", m.trace, bga_strerror(rc));
		rc = 1;
		goto out_fs;
	}
	fs->atime = m.atime;
	struct fuse_lowlevel_ops ops = {.init = op_init};
	bgafs_ops_dir(&ops);
	bgafs_ops_readdir(&ops);
	bgafs_ops_file(&ops);
	bgafs_ops_xattr(&ops);
	struct fuse_session *se = fuse_session_new(&args, &ops, sizeof(ops), fs);
	if (!se)
		goto out_fs;
	fs->se = se;
	if (fuse_set_signal_handlers(se))
		goto out_se;
	if (fuse_session_mount(se, mnt))
		goto out_sig;
	if (txn_start(fs)) {
		fprintf(stderr, "bgafs: cannot start the commit thread\n");
		goto out_mount;
	}
	if (!fg) {
		char ok = 0;
		if (write(pfd[1], &ok, 1) != 1) { /* the parent is gone: carry on */
		}
		close(pfd[1]);
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			/* stderr stays: commit errors are worth seeing */
			if (nul > 2)
				close(nul);
		}
		if (chdir("/")) { /* nothing to do about it */
		}
	}
	struct fuse_loop_config *lc = fuse_loop_cfg_create();
	fuse_loop_cfg_set_max_threads(lc, 64);
	fuse_loop_cfg_set_idle_threads(lc, 16);
	rc = fuse_session_loop_mt(se, lc) ? 1 : 0;
	fuse_loop_cfg_destroy(lc);
	int urc = txn_unmount(fs);
	if (urc) {
		fprintf(stderr, "bgafs: %s: final commit failed: %s\n", abs, bga_strerror(urc));
		rc = 1;
	}
out_mount:
	txn_stop(fs);
	fuse_session_unmount(se);
out_sig:
	fuse_remove_signal_handlers(se);
out_se:
	fuse_session_destroy(se);
out_fs:
	fs_close(fs);
out_args:
	fuse_opt_free_args(&args);
	free(fsname);
	free(abs);
	free(m.image);
	free(m.mnt);
	free(m.trace);
	free(m.goal);
	free(m.window);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return help();
	if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")))
		return version();
	if (argc < 2)
		return usage();
	/* The subcommand is argv[0] of its own argument list. */
	optind = 1;
	if (!strcmp(argv[1], "mkfs"))
		return cmd_mkfs(argc - 1, argv + 1);
	if (!strcmp(argv[1], "fsck"))
		return cmd_fsck(argc - 1, argv + 1);
	if (!strcmp(argv[1], "map"))
		return cmd_map(argc - 1, argv + 1);
	if (!strcmp(argv[1], "mount"))
		return cmd_mount(argc - 1, argv + 1);
	fprintf(stderr, "bgafs: unknown command '%s'\n", argv[1]);
	return usage();
}
