/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Plug-ins (bga_lab_plugin.h): the registry of counters and locks that
 * shared objects bring, --plugin's loader, and the variants that run them.
 * The loops are the lab's, as for the built-in variants, so that what
 * differs between a plug-in's variant and the library's is the calls.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bga_lab_plugin.h"
#include "lab.h"

#define MAX_PLUGGED 16
#define COUNTER_CHUNK 1024u
#define LOCK_CHUNK 64u

static const struct bga_lab_counter_ops *counters[MAX_PLUGGED];
static const struct bga_lab_lock_ops *locks[MAX_PLUGGED];
static unsigned ncounters, nlocks;
static char names[2][256]; /* for --help and errors: "a, b" */

static bool name_ok(const char *n)
{
	if (!n || !*n || strlen(n) > 40)
		return false;
	for (const char *c = n; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-' ||
		      *c == '_'))
			return false;
	return true;
}

static void add_name(char *list, const char *name)
{
	size_t len = strlen(list);
	snprintf(list + len, sizeof(names[0]) - len, "%s%s", len ? ", " : "", name);
}

static int add_counter(const struct bga_lab_counter_ops *o)
{
	struct lab_variant v;
	if (!o || !name_ok(o->name) || !o->create || !o->add || !o->sum || !o->destroy)
		return -EINVAL;
	if (lab_counter_variant(o->name, &v) != -EINVAL)
		return -EEXIST; /* a built-in name, or one registered already */
	if (ncounters == MAX_PLUGGED)
		return -ENOSPC;
	counters[ncounters++] = o;
	add_name(names[0], o->name);
	return 0;
}

static int add_lock(const struct bga_lab_lock_ops *o)
{
	struct lab_variant v;
	if (!o || !name_ok(o->name) || !o->create || !o->lock || !o->unlock || !o->destroy)
		return -EINVAL;
	if (lab_lock_variant(o->name, &v) != -EINVAL)
		return -EEXIST;
	if (nlocks == MAX_PLUGGED)
		return -ENOSPC;
	locks[nlocks++] = o;
	add_name(names[1], o->name);
	return 0;
}

int lab_plugin_load(const char *path)
{
	static const struct bga_lab_host host = {BGA_LAB_PLUGIN_VERSION, add_counter, add_lock};
	/* "x.so" alone would be searched on the library path, not here */
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "bga-lab: --plugin %s: %s\n", path, dlerror());
		return -ENOENT;
	}
	int (*init)(const struct bga_lab_host *) = (int (*)(const struct bga_lab_host *))dlsym(h, "bga_lab_plugin_init");
	if (!init) {
		fprintf(stderr, "bga-lab: --plugin %s: no bga_lab_plugin_init (bga_lab_plugin.h)\n", path);
		dlclose(h);
		return -EINVAL;
	}
	unsigned before = ncounters + nlocks;
	int rc = init(&host);
	if (rc || ncounters + nlocks == before) {
		fprintf(stderr, "bga-lab: --plugin %s: %s\n", path,
			rc ? strerror(rc < 0 ? -rc : rc) : "it registered no counter and no lock");
		return rc ? rc : -EINVAL;
	}
	return 0; /* never closed: its functions run until the end */
}

const char *lab_plugin_names(bool counter)
{
	return names[counter ? 0 : 1];
}

/* A counter of a plug-in: the ops and the object. */
struct pcounter {
	const struct bga_lab_counter_ops *o;
	void *c;
};

static void *pc_setup(const struct lab_variant *v, unsigned nthreads)
{
	struct pcounter *p = malloc(sizeof(*p));
	if (!p)
		return NULL;
	p->o = counters[v->arg];
	p->c = p->o->create(nthreads);
	if (!p->c) {
		fprintf(stderr, "bga-lab: %s: create(%u) failed\n", v->name, nthreads);
		free(p);
		return NULL;
	}
	return p;
}

static uint64_t pc_work(void *obj, unsigned tid, uint64_t ops, const volatile int *stop)
{
	struct pcounter *p = obj;
	void (*add)(void *, unsigned, int64_t) = p->o->add;
	void *c = p->c;
	return LAB_WORK(ops, stop, COUNTER_CHUNK, add(c, tid, 1));
}

static int pc_finish(void *obj, uint64_t total, char *desc, size_t desclen)
{
	struct pcounter *p = obj;
	int64_t sum = p->o->sum(p->c);
	snprintf(desc, desclen, "plug-in %s", p->o->name);
	int rc = lab_check_sum(p->o->name, sum, total);
	p->o->destroy(p->c);
	free(p);
	return rc;
}

/* A lock of a plug-in, with the count each slot protects. */
struct plock {
	const struct bga_lab_lock_ops *o;
	void *l;
	uint32_t nslots;
	uint64_t spread, hold, think;
	struct {
		uint64_t n;
	} __attribute__((aligned(LAB_CACHELINE))) data[];
};

static void *pl_setup(const struct lab_variant *v, unsigned nthreads)
{
	uint32_t n = lab_cur->slots ? lab_cur->slots : 64;
	struct plock *p = lab_alloc_lines(sizeof(struct plock) + (size_t)n * LAB_CACHELINE);
	if (!p)
		return NULL;
	p->o = locks[v->arg];
	p->nslots = n;
	p->spread = lab_cur->spread ? lab_cur->spread : 1;
	p->hold = lab_cur->hold_ns;
	p->think = lab_cur->think_ns;
	p->l = p->o->create(nthreads, n);
	if (!p->l) {
		fprintf(stderr, "bga-lab: %s: create(%u threads, %u slots) failed\n", v->name, nthreads, n);
		free(p);
		return NULL;
	}
	return p;
}

static uint64_t pl_work(void *obj, unsigned tid, uint64_t ops, const volatile int *stop)
{
	struct plock *p = obj;
	uint64_t x = 0x9e3779b97f4a7c15ull * (tid + 1);
	return LAB_WORK(ops, stop, LOCK_CHUNK, {
		lab_xorshift(&x);
		uint32_t slot = (uint32_t)((p->spread > 1 ? x % p->spread : 0) % p->nslots);
		p->o->lock(p->l, tid, slot);
		p->data[slot].n++; /* plain: only the lock makes it exact */
		lab_spin_ns(p->hold);
		p->o->unlock(p->l, tid, slot);
		lab_spin_ns(p->think);
	});
}

static int pl_finish(void *obj, uint64_t total, char *desc, size_t desclen)
{
	struct plock *p = obj;
	uint64_t sum = 0;
	for (uint32_t i = 0; i < p->nslots; i++)
		sum += p->data[i].n;
	snprintf(desc, desclen, "plug-in %s, %u slots", p->o->name, p->nslots);
	int rc = 0;
	if (sum != total) {
		fprintf(stderr, "bga-lab: %s: %llu increments under the lock after %llu operations: mutual exclusion failed\n",
			p->o->name, (unsigned long long)sum, (unsigned long long)total);
		rc = -1;
	}
	p->o->destroy(p->l);
	free(p);
	return rc;
}

int lab_plugin_variant(const char *name, bool counter, struct lab_variant *v)
{
	unsigned n = counter ? ncounters : nlocks;
	for (unsigned i = 0; i < n; i++)
		if (!strcmp(name, counter ? counters[i]->name : locks[i]->name)) {
			memset(v, 0, sizeof(*v));
			v->name = name;
			v->where = "plug-in";
			v->setup = counter ? pc_setup : pl_setup;
			v->work = counter ? pc_work : pl_work;
			v->finish = counter ? pc_finish : pl_finish;
			v->arg = (int)i;
			/* --limited: the plug-in interface has no limited add */
			return counter && lab_cur && lab_cur->limited ? -ENOTSUP : 0;
		}
	return -EINVAL;
}
