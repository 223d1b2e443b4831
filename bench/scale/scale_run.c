/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One repetition of a bga-scale cell: the allocator under test opened,
 * the workers made and bound to CPUs, released at once, stopped by the
 * timer thread, their figures summed; the harness itself is described at
 * the top of scale.c.
 *
 * The peer's image is made once per process and size (mke2fs on a sparse file) and
 * reset between repetitions by freeing everything the workload allocated;
 * its free count is checked against the pristine one, and a fresh image is
 * made if it ever differs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <bgalloc/locktab.h>

#include "scale_ctx.h"

/* ---- the allocators behind one face -------------------------------------- */

static uint64_t peer_pristine[2]; /* their free counts right after mke2fs */

/* The peer of nblocks blocks: its slot in scale.peers[], made if need be. */
static int peer_get(uint64_t nblocks, int *slot)
{
	int i = nblocks == scale.opt.nblocks ? 0 : 1;
	int rc;

	*slot = i;
	if (scale.peers[i])
		return 0;
	rc = peer_ext2_create(NULL, nblocks, &scale.peers[i]);
	if (rc) {
		fprintf(stderr, "bga-scale: cannot make the libext2fs image: %s\n", strerror(-rc));
		return rc;
	}
	peer_pristine[i] = peer_ext2_free_blocks(scale.peers[i]);
	return 0;
}

static int vol_open(struct vol *vl, enum variant v, uint64_t nblocks)
{
	memset(vl, 0, sizeof(*vl));
	if (v == V_EXT2) {
		int i, rc = peer_get(nblocks, &i);

		if (rc)
			return rc;
		vl->peer = scale.peers[i];
		vl->nblocks = peer_ext2_nblocks(scale.peers[i]);
		return 0;
	}
	return vol_open_bga(vl, nblocks, v == V_BASE);
}

/* The peer outlives the cell; it must come back exactly as it was. */
static void vol_close(struct vol *vl)
{
	int i = vl->peer == scale.peers[1];

	if (vl->bga)
		bga_destroy(vl->bga);
	if (vl->peer && peer_ext2_free_blocks(vl->peer) != peer_pristine[i]) {
		fprintf(stderr, "bga-scale: ext2 image not back to its pristine free count; making a fresh one\n");
		peer_ext2_destroy(scale.peers[i]);
		scale.peers[i] = NULL;
		scale.peer_rebuilds++;
	}
	memset(vl, 0, sizeof(*vl));
}

/* ---- one repetition -------------------------------------------------------- */

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct cell *c = wk->cell;

	if (wl_setup(wk))
		wk->errors++;
	pthread_barrier_wait(&c->start);
	wk->t_start = now_s();
	wl_loop(wk);
	wk->t_end = now_s();
	/* the last batch began before the stop and ended at or after it */
	int batch = c->w == W_COUNTER ? COUNTER_BATCH : BATCH;

	wk->ops_done = wk->ops;
	if (wk->ops >= (uint64_t)batch)
		wk->ops -= (uint64_t)batch / 2;
	/* nobody frees (untimed) while another thread is still measured */
	pthread_barrier_wait(&c->done);
	wl_teardown(wk);
	return NULL;
}


/* The CPUs this process may run on, in order: workers are bound to them
 * round-robin. */

void cpus_init(void)
{
	cpu_set_t set;

	scale.ncpus_allowed = 0;
	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set))
			scale.cpus[scale.ncpus_allowed++] = i;
}

/* Switch the calling (timer) thread to SCHED_FIFO 1 or back to normal. */
static bool timer_fifo(bool on)
{
	struct sched_param sp = {.sched_priority = on ? 1 : 0};

	if (on && !scale.timer_policy_fifo)
		return false;
	if (pthread_setschedparam(pthread_self(), on ? SCHED_FIFO : SCHED_OTHER, &sp)) {
		scale.timer_policy_fifo = false;
		return false;
	}
	return true;
}

/* Lock acquisitions and those that found the lock held, over every slot. */
static void lock_totals(struct bga_volume *vol, uint64_t *acq, uint64_t *cont)
{
	struct bga_config cfg;
	struct bga_lock_stats ls;

	*acq = *cont = 0;
	if (!vol || bga_volume_config(vol, &cfg))
		return;
	for (uint32_t s = 0; bga_lock_stats(vol, s, &ls) == 0; s++) {
		*acq += ls.acquisitions;
		*cont += ls.contended;
	}
}

int run_rep(enum wl_id w, enum variant v, int nthreads, int rep, struct result *res)
{
	struct cell *c;
	pthread_t *tids;
	pthread_attr_t attr;
	struct timespec until;
	double t0, t_stop, t_first = 0, t_end = 0;
	uint64_t acq0, cont0, acq1, cont1;
	struct rusage ru0, ru1;
	bool fifo;
	int rc = 0, started = 0;

	c = aligned_alloc(CACHELINE, (sizeof(*c) + CACHELINE - 1) / CACHELINE * CACHELINE);
	if (!c)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	c->w = w;
	c->v = v;
	c->nthreads = nthreads;
	c->rep = rep;
	atomic_init(&c->stop, 0);
	atomic_init(&c->txn, 1);
	atomic_init(&c->script_ops, 0);
	c->workers = aligned_alloc(CACHELINE, sizeof(struct worker) * (size_t)nthreads);
	tids = calloc((size_t)nthreads, sizeof(*tids));
	if (!c->workers || !tids) {
		rc = -ENOMEM;
		goto out_free;
	}
	memset(c->workers, 0, sizeof(struct worker) * (size_t)nthreads);
	if (w == W_COUNTER)
		rc = bga_counter_create(&c->counter, 0, 0,
					v == V_ATOMIC ? BGA_COUNTER_ATOMIC : BGA_COUNTER_PERCPU);
	else
		rc = vol_open(&c->vol, v, wl_nblocks(w));
	if (rc)
		goto out_free;

	pthread_barrier_init(&c->start, NULL, (unsigned)nthreads + 1);
	pthread_barrier_init(&c->done, NULL, (unsigned)nthreads + 1);
	/* 128 threads x 8 MiB default stacks is 1 GiB of address space for
	 * loops that need a few KiB */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	/* workers are ordinary threads, whatever the timer thread is */
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
	for (int i = 0; i < nthreads; i++) {
		struct worker *wk = &c->workers[i];

		/*
		 * Bound round-robin to the allowed CPUs, as will-it-scale binds
		 * its tasks.  Left to itself the scheduler was seen (kernel
		 * 6.18, 2 vCPUs) to keep both threads of a 2-thread cell on
		 * one CPU for a whole repetition (each got 50%), so the cell
		 * measured neither contention nor parallelism.
		 */
		if (!scale.opt.no_pin && scale.ncpus_allowed > 0) {
			cpu_set_t one;

			CPU_ZERO(&one);
			CPU_SET(scale.cpus[i % scale.ncpus_allowed], &one);
			pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
		}
		wk->cell = c;
		wk->idx = i;
		rng_seed(&wk->rng, scale.opt.seed + (uint64_t)rep * 1000003u + (uint64_t)i,
			 (uint64_t)w * 131 + (uint64_t)nthreads);
		if (pthread_create(&tids[i], &attr, worker_main, wk)) {
			fprintf(stderr, "bga-scale: pthread_create failed at thread %d\n", i);
			abort(); /* the barrier counts on every thread */
		}
		started++;
	}
	pthread_attr_destroy(&attr);

	/*
	 * The timer thread sleeps through the repetition.  At 128 threads on
	 * 2 CPUs an ordinary thread waking from that sleep can wait a whole
	 * scheduling round (tens to hundreds of ms under EEVDF) before it
	 * runs to raise `stop`; SCHED_FIFO wakes it at once.  Where that is
	 * not permitted the repetition just runs longer: the figures stay
	 * right, because time is measured up to the moment `stop` is raised.
	 */
	fifo = timer_fifo(true);
	pthread_barrier_wait(&c->start);
	t0 = now_s();
	getrusage(RUSAGE_SELF, &ru0);
	lock_totals(c->vol.bga, &acq0, &cont0);
	{
		double t = t0 + scale.opt.duration;

		until.tv_sec = (time_t)t;
		until.tv_nsec = (long)((t - (double)until.tv_sec) * 1e9);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
			;
	}
	getrusage(RUSAGE_SELF, &ru1);
	t_stop = now_s();
	lock_totals(c->vol.bga, &acq1, &cont1);
	atomic_store_explicit(&c->stop, 1, memory_order_relaxed);
	if (fifo)
		timer_fifo(false);
	pthread_barrier_wait(&c->done);

	for (int i = 0; i < started; i++)
		pthread_join(tids[i], NULL);

	/* summed after the joins: teardown (freeing what the workload holds)
	 * can fail too, and that counts as an error of the repetition */
	uint64_t extents = 0;

	memset(res, 0, sizeof(*res));
	for (int i = 0; i < nthreads; i++) {
		struct worker *wk = &c->workers[i];

		res->ops += wk->ops;
		res->errors += wk->errors;
		res->files += wk->files_done;
		extents += wk->file_extents;
		if (wk->t_end > t_end)
			t_end = wk->t_end;
		if (i == 0 || wk->t_start < t_first)
			t_first = wk->t_start;
	}
	/*
	 * From the first worker's start to the stop signal.  Not from t0: the
	 * workers may run before the main thread is back from the barrier.
	 * Not to the last worker's stop: under oversubscription a worker that
	 * was off the CPU when `stop` rose needs up to a scheduling round to
	 * see it, and that tail, which adds a few ops and much time, would
	 * read as a collapse that is not there.
	 */
	res->elapsed = t_stop - t_first;
	res->tail = t_end - t_stop;
	{
		double cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec + ru1.ru_stime.tv_sec -
				      ru0.ru_stime.tv_sec) +
			     (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec + ru1.ru_stime.tv_usec -
				      ru0.ru_stime.tv_usec) * 1e-6;
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		double lanes = (double)(nthreads < ncpu ? nthreads : ncpu);

		res->cpu_share = t_stop > t0 ? cpu / ((t_stop - t0) * lanes) : 0;
	}
	if (res->elapsed <= 0) {
		res->elapsed = 0;
		res->errors++;
	}
	res->ops_per_s = res->elapsed > 0 ? (double)res->ops / res->elapsed : 0;
	res->extents_per_file = res->files ? (double)extents / (double)res->files : 0;

	if (w == W_COUNTER) {
		/* the exact sum must account for every add */
		uint64_t done = 0;

		for (int i = 0; i < nthreads; i++)
			done += c->workers[i].ops_done;
		if ((uint64_t)bga_counter_sum(c->counter) != done)
			res->errors++;
		bga_counter_destroy(c->counter);
	} else {
		struct bga_stats st;

		res->lock_wait = acq1 > acq0 ? 100.0 * (double)(cont1 - cont0) / (double)(acq1 - acq0) : 0;
		if (c->vol.bga && bga_stats(c->vol.bga, &st) == 0)
			res->rsv_hit = 100.0 * st.rsv_hit_ratio;
		vol_close(&c->vol);
	}
	pthread_barrier_destroy(&c->start);
	pthread_barrier_destroy(&c->done);
out_free:
	free(tids);
	free(c->workers);
	free(c);
	return rc;
}
