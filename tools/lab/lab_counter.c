/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The counter modes.  atomic, percpu and percpu-cas are the library's,
 * called through <bgalloc/counter.h> as any program calls them: one call
 * into libbgalloc per add.  striped and tls-fold are the lab's own code,
 * two designs users compare with, each add also one out-of-line call so
 * that the comparison charges every mode the same call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bgalloc/counter.h>

#include "lab.h"

#define CHUNK 1024u
/* add_limited's limit: far above anything a run reaches, so every add is
 * the "far from the limit" case the fast path serves. */
#define FAR_LIMIT (INT64_MAX / 4)

enum { M_ATOMIC, M_PERCPU, M_PERCPU_CAS, M_STRIPED, M_TLS_FOLD };

struct pub {
	struct bga_counter *c;
	bool limited;
};

static void *pub_setup(const struct lab_variant *v, unsigned nthreads)
{
	static const enum bga_counter_mode modes[] = {
		[M_ATOMIC] = BGA_COUNTER_ATOMIC, [M_PERCPU] = BGA_COUNTER_PERCPU, [M_PERCPU_CAS] = BGA_COUNTER_PERCPU_CAS};
	struct pub *p = calloc(1, sizeof(*p));
	(void)nthreads;
	if (!p)
		return NULL;
	int rc = bga_counter_create(&p->c, 0, lab_cur->batch, modes[v->arg]);
	if (rc) {
		fprintf(stderr, "bga-lab: bga_counter_create(%s, batch %d): %s\n", v->name, lab_cur->batch, strerror(-rc));
		free(p);
		return NULL;
	}
	p->limited = lab_cur->limited;
	return p;
}

static uint64_t pub_work(void *obj, unsigned tid, uint64_t ops, const volatile int *stop)
{
	struct pub *p = obj;
	(void)tid;
	/* add_limited cannot refuse below FAR_LIMIT: a refusal is a library bug */
	if (p->limited)
		return LAB_WORK(ops, stop, CHUNK, if (bga_counter_add_limited(p->c, 1, FAR_LIMIT) != 0) abort());
	return LAB_WORK(ops, stop, CHUNK, bga_counter_add(p->c, 1));
}

static int pub_finish(void *obj, uint64_t total, char *desc, size_t desclen)
{
	struct pub *p = obj;
	int64_t sum = bga_counter_sum(p->c);
	int rc = 0;
	snprintf(desc, desclen, "%s, batch %d", bga_counter_mode_name(p->c), bga_counter_batch(p->c));
	if (sum != (int64_t)total) {
		fprintf(stderr, "bga-lab: %s: exact sum %lld after %llu adds of 1\n", desc, (long long)sum,
			(unsigned long long)total);
		rc = -1;
	}
	bga_counter_destroy(p->c);
	free(p);
	return rc;
}

/* striped: one atomic per stripe, on its own line, thread i on stripe
 * i mod stripes (stripes: the CPUs rounded up to a power of two); a read
 * sums the stripes.  No batch, no bound to keep. */
struct striped {
	unsigned nstripes;
	struct {
		int64_t v;
	} __attribute__((aligned(LAB_CACHELINE))) s[];
};

static void *striped_setup(const struct lab_variant *v, unsigned nthreads)
{
	int cpus[1024];
	unsigned n = 1, ncpus = lab_cpus_allowed(cpus, 1024);
	(void)v;
	(void)nthreads;
	while (n < ncpus)
		n <<= 1;
	struct striped *st = aligned_alloc(LAB_CACHELINE, sizeof(*st) + n * sizeof(st->s[0]) + LAB_CACHELINE);
	if (!st)
		return NULL;
	memset(st, 0, sizeof(*st) + n * sizeof(st->s[0]));
	st->nstripes = n;
	return st;
}

__attribute__((noipa)) static void striped_add(struct striped *st, unsigned stripe, int64_t d)
{
	__atomic_fetch_add(&st->s[stripe].v, d, __ATOMIC_RELAXED);
}

static uint64_t striped_work(void *obj, unsigned tid, uint64_t ops, const volatile int *stop)
{
	struct striped *st = obj;
	unsigned stripe = tid & (st->nstripes - 1);
	return LAB_WORK(ops, stop, CHUNK, striped_add(st, stripe, 1));
}

static int striped_finish(void *obj, uint64_t total, char *desc, size_t desclen)
{
	struct striped *st = obj;
	int64_t sum = 0;
	for (unsigned i = 0; i < st->nstripes; i++)
		sum += st->s[i].v;
	snprintf(desc, desclen, "lab code, %u stripes", st->nstripes);
	int rc = lab_check_sum("striped", sum, total);
	free(st);
	return rc;
}

/* tls-fold: each thread counts in its own line and folds into one shared
 * atomic when its count reaches +-batch, as the per-CPU counter does per
 * CPU; the read is the shared total, off by up to threads x (batch-1). */
struct tls_fold {
	int64_t batch;
	unsigned nthreads;
	int64_t total __attribute__((aligned(LAB_CACHELINE)));
	struct {
		int64_t local;
	} __attribute__((aligned(LAB_CACHELINE))) t[];
};

static void *tls_setup(const struct lab_variant *v, unsigned nthreads)
{
	(void)v;
	struct tls_fold *f = lab_alloc_lines(sizeof(struct tls_fold) + nthreads * (size_t)LAB_CACHELINE);
	if (!f)
		return NULL;
	f->batch = lab_cur->batch > 0 ? lab_cur->batch : 32;
	f->nthreads = nthreads;
	return f;
}

__attribute__((noipa)) static void tls_add(struct tls_fold *f, int64_t *local, int64_t d)
{
	int64_t v = *local + d;
	if (v >= f->batch || v <= -f->batch) {
		__atomic_fetch_add(&f->total, v, __ATOMIC_RELAXED);
		v = 0;
	}
	*local = v;
}

static uint64_t tls_work(void *obj, unsigned tid, uint64_t ops, const volatile int *stop)
{
	struct tls_fold *f = obj;
	int64_t *local = &f->t[tid].local;
	return LAB_WORK(ops, stop, CHUNK, tls_add(f, local, 1));
}

static int tls_finish(void *obj, uint64_t total, char *desc, size_t desclen)
{
	struct tls_fold *f = obj;
	int64_t sum = f->total;
	for (unsigned i = 0; i < f->nthreads; i++)
		sum += f->t[i].local;
	snprintf(desc, desclen, "lab code, batch %lld", (long long)f->batch);
	int rc = lab_check_sum("tls-fold", sum, total);
	free(f);
	return rc;
}

const char *lab_counter_modes(void)
{
	return "atomic, percpu, percpu-cas, striped, tls-fold";
}

int lab_counter_variant(const char *name, struct lab_variant *v)
{
	static const struct {
		const char *name;
		int arg;
	} pubs[] = {{"atomic", M_ATOMIC}, {"percpu", M_PERCPU}, {"percpu-cas", M_PERCPU_CAS}};

	memset(v, 0, sizeof(*v));
	v->name = name;
	for (unsigned i = 0; i < sizeof(pubs) / sizeof(pubs[0]); i++)
		if (!strcmp(name, pubs[i].name)) {
			v->where = "public API";
			v->setup = pub_setup;
			v->work = pub_work;
			v->finish = pub_finish;
			v->arg = pubs[i].arg;
			return 0;
		}
	v->where = "lab code";
	if (!strcmp(name, "striped")) {
		v->setup = striped_setup;
		v->work = striped_work;
		v->finish = striped_finish;
		return lab_cur && lab_cur->limited ? -ENOTSUP : 0;
	}
	if (!strcmp(name, "tls-fold")) {
		v->setup = tls_setup;
		v->work = tls_work;
		v->finish = tls_finish;
		return lab_cur && lab_cur->limited ? -ENOTSUP : 0;
	}
	return -EINVAL;
}
