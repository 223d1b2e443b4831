/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bgafs mkfs IMAGE SIZE
 * bgafs mount IMAGE MOUNTPOINT [-f] [-o FUSE options]
 * bgafs fsck IMAGE
 *
 * Mount options of bgafs's own, beside libfuse's: writeback_cache (the
 * kernel gathers writes in its page cache and sends them in pages; off by
 * default, as in fuse2fs, so the two compare alike).
 *
 * mount loads the image before it answers: errors reach the terminal and
 * the exit status even in the background (the parent waits on a pipe for
 * the daemon's word).  fusermount3 -u ends the FUSE loop; the daemon then
 * commits, stores the allocator and marks the image clean before it exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "bgafs.h"

static void usage(void)
{
	fprintf(stderr, "usage: bgafs mkfs IMAGE SIZE            (SIZE in bytes, K/M/G/T suffixes)\n"
			"       bgafs mount IMAGE MOUNTPOINT [-f] [-o FUSE options]\n"
			"       bgafs fsck IMAGE\n");
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fs *fs = userdata;
	if (fs->writeback_cache && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/* Enough requests in flight for four writers and the readahead. */
	conn->max_background = 64;
	conn->congestion_threshold = 48;
}

static int cmd_fsck(const char *path)
{
	struct fs *fs;
	if (fs_open(path, 0, &fs))
		return 1;
	if (!fs->sb.clean)
		fprintf(stderr, "bgafs fsck: %s was not unmounted cleanly: blocks taken after its last commit "
				"show as leaked until a mount reconciles them\n", path);
	int problems = fs_check(fs, 0, 1);
	uint64_t total = fs->sb.nblocks - fs->sb.first_data_block, freeb = bga_free_exact(fs->vol);
	printf("bgafs fsck: %s: %s, %llu inodes, %llu of %llu data blocks in use, generation %llu\n", path,
	       problems ? "NOT CLEAN" : "clean", (unsigned long long)fs->itab.count,
	       (unsigned long long)(total - freeb), (unsigned long long)total, (unsigned long long)fs->sb.gen);
	fs_close(fs);
	return problems ? 1 : 0;
}

static int cmd_mount(int argc, char **argv)
{
	const char *image = NULL, *mnt = NULL, *opts = NULL;
	int fg = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-f"))
			fg = 1;
		else if (!strcmp(argv[i], "-o") && i + 1 < argc)
			opts = argv[++i];
		else if (!strncmp(argv[i], "-o", 2) && argv[i][2])
			opts = argv[i] + 2;
		else if (!image)
			image = argv[i];
		else if (!mnt)
			mnt = argv[i];
		else {
			usage();
			return 2;
		}
	}
	if (!image || !mnt) {
		usage();
		return 2;
	}
	char *abs = realpath(image, NULL);
	if (!abs) {
		fprintf(stderr, "bgafs: %s: %s\n", image, strerror(errno));
		return 1;
	}

	int pfd[2] = {-1, -1};
	if (!fg) {
		if (pipe(pfd))
			return perror("bgafs: pipe"), 1;
		pid_t pid = fork();
		if (pid < 0)
			return perror("bgafs: fork"), 1;
		if (pid > 0) { /* the parent reports the daemon's start */
			close(pfd[1]);
			char status = 1;
			if (read(pfd[0], &status, 1) != 1)
				status = 1;
			free(abs);
			return status;
		}
		close(pfd[0]);
		setsid();
	}

	struct fs *fs;
	if (fs_open(abs, 1, &fs)) {
		free(abs);
		return 1;
	}
	/* bgafs's own options come out of the list; libfuse gets the rest. */
	char optbuf[4096], rest[2048] = "";
	if (opts) {
		char *copy = strdup(opts), *save = NULL;
		for (char *o = strtok_r(copy, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
			if (!strcmp(o, "writeback_cache"))
				fs->writeback_cache = 1;
			else
				snprintf(rest + strlen(rest), sizeof(rest) - strlen(rest), ",%s", o);
		}
		free(copy);
	}
	snprintf(optbuf, sizeof(optbuf), "fsname=%s,subtype=bgafs,default_permissions%s", abs, rest);
	char *fargv[] = {"bgafs", "-o", optbuf, NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	struct fuse_lowlevel_ops ops = {.init = op_init};
	bgafs_ops_dir(&ops);
	bgafs_ops_file(&ops);
	int rc = 1;
	struct fuse_session *se = fuse_session_new(&args, &ops, sizeof(ops), fs);
	if (!se)
		goto out_fs;
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
	fuse_opt_free_args(&args);
	free(abs);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		usage();
		return 2;
	}
	if (!strcmp(argv[1], "mkfs")) {
		uint64_t bytes;
		if (argc != 4 || parse_size(argv[3], &bytes)) {
			usage();
			return 2;
		}
		if (fs_mkfs(argv[2], bytes))
			return 1;
		printf("bgafs: made %s, %llu blocks of %u bytes\n", argv[2],
		       (unsigned long long)(bytes / BGAFS_BLOCK), BGAFS_BLOCK);
		return 0;
	}
	if (!strcmp(argv[1], "mount"))
		return cmd_mount(argc - 2, argv + 2);
	if (!strcmp(argv[1], "fsck") && argc == 3)
		return cmd_fsck(argv[2]);
	usage();
	return 2;
}
