/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bga-lab plug-ins: bring your own counter or lock, and bga-lab measures it
 * beside the library's own (bga-lab(1), PLUG-INS).
 *
 * A plug-in is a shared object that defines
 *
 *     int bga_lab_plugin_init(const struct bga_lab_host *host);
 *
 * `bga-lab --plugin ./x.so` opens it (dlopen) before the variant lists are
 * read, and calls it once; it registers each of its variants with
 * host->add_counter() or host->add_lock() and returns 0 (or a negative
 * errno, and bga-lab stops with status 2).  Its names are then used like
 * the built-in ones: --modes atomic,mine or --kinds fas,ck-clh.  Nothing
 * in the plug-in links against bga-lab: the host hands it the functions.
 *
 * bga-lab runs the loop (the same one for every variant, so a variant's
 * cost is its calls, one indirect call each): a counter gets add(c, tid,
 * 1) per operation and, at the end, sum(c), which must equal the number
 * of adds; a lock gets lock(l, tid, slot) and unlock(l, tid, slot) around
 * an increment of a count bga-lab keeps per slot, which must come out
 * exact.  A variant that fails these checks makes the run's verdicts
 * "inconclusive (a check failed)" and bga-lab exit 1.
 *
 * The structs are read once, at registration: they and the name strings
 * must live as long as the plug-in stays loaded (static storage).
 */
#ifndef BGA_LAB_PLUGIN_H
#define BGA_LAB_PLUGIN_H

#include <stdint.h>

#define BGA_LAB_PLUGIN_VERSION 1

struct bga_lab_counter_ops {
	const char *name;  /* a name for --modes: letters, digits, '-' */
	/* A fresh counter for nthreads threads (tid 0 .. nthreads-1);
	 * NULL on failure. */
	void *(*create)(unsigned nthreads);
	/* Add delta, from thread tid. */
	void (*add)(void *c, unsigned tid, int64_t delta);
	/* The exact sum, with every adder stopped. */
	int64_t (*sum)(void *c);
	void (*destroy)(void *c);
};

struct bga_lab_lock_ops {
	const char *name;  /* a name for --kinds */
	/* nslots independent locks (bga-lab maps a key to key % nslots) for
	 * nthreads threads; NULL on failure. */
	void *(*create)(unsigned nthreads, uint32_t nslots);
	void (*lock)(void *l, unsigned tid, uint32_t slot);
	void (*unlock)(void *l, unsigned tid, uint32_t slot);
	void (*destroy)(void *l);
};

struct bga_lab_host {
	int version; /* BGA_LAB_PLUGIN_VERSION */
	/* Register a variant: 0, -EINVAL (a NULL member, a bad name),
	 * -EEXIST (the name is taken) or -ENOSPC (too many). */
	int (*add_counter)(const struct bga_lab_counter_ops *ops);
	int (*add_lock)(const struct bga_lab_lock_ops *ops);
};

/* exported even from a build with -fvisibility=hidden */
__attribute__((visibility("default"))) int bga_lab_plugin_init(const struct bga_lab_host *host);

#endif
