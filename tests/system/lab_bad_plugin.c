/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A bga-lab plug-in whose counter loses its adds (sum is always 0), and a
 * second registration of a name that is taken: what lab_plugin_test.sh
 * checks bga-lab catches.
 */
#include <errno.h>
#include <stdlib.h>

#include "bga_lab_plugin.h"

static void *create(unsigned nthreads)
{
	(void)nthreads;
	return malloc(1);
}

static void add(void *c, unsigned tid, int64_t d)
{
	(void)c, (void)tid, (void)d;
}

static int64_t sum(void *c)
{
	(void)c;
	return 0;
}

int bga_lab_plugin_init(const struct bga_lab_host *host)
{
	static const struct bga_lab_counter_ops lossy = {"lossy", create, add, sum, free};
	static const struct bga_lab_counter_ops taken = {"atomic", create, add, sum, free};
	if (host->add_counter(&taken) != -EEXIST)
		return -EPROTO; /* a built-in name must be refused */
	return host->add_counter(&lossy);
}
