/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz_mt's reset check (its header has the contract) can fail, and
 * passes when nothing is left behind.  Two halves:
 *  - the accessors (bga__thread_idle, lib/base/thread.h, and
 *    bga__locktab_thread_idle), on a thread of the test's own: each kind
 *    of per-thread state the library keeps is left behind in turn (a
 *    lockdep record, a lock counted past the record, MCS queue nodes, an
 *    urcu-bp read-side section, out-of-range CPU-id caches), must be
 *    reported by name, then released, and the thread reported idle;
 *  - the harness end to end (this program is linked with fuzz_mt.c), each
 *    case in a child whose stderr is read: two inputs on one pool run
 *    clean and the child exits 0; a lockdep record left on the calling
 *    thread, and a lockdep record or an MCS node left on a pool thread
 *    between two inputs, each make the next input abort, naming it.  State
 *    is left on a pool thread by a signal handler: the caller blocks the
 *    signal, so only a pool thread (idle between inputs) can take it.
 * BGA_DEBUG builds only: the accessors exist there only.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bgalloc.h>
#include <bgalloc/locktab.h>

#include "check.h"
#include "cpu.h"
#include "fuzz_input.h"
#include "lockdep.h"
#include "locktab_impl.h"
#include "rcu.h"
#include "thread.h"

#define CHECK(cond, ...) do { if (CHECK_FAILED("thread_idle_test", cond, __VA_ARGS__)) exit(1); } while (0)

/* What fuzz_mt's check_idle asks. */
static bool idle(char *why, size_t n)
{
	return bga__thread_idle(why, n) && bga__locktab_thread_idle(why, n);
}

static void expect_idle(const char *when)
{
	char why[192] = "";

	CHECK(idle(why, sizeof(why)), "idle expected %s, reported: %s", when, why);
}

static void expect_left(const char *what, const char *needle)
{
	char why[192] = "";

	CHECK(!idle(why, sizeof(why)), "%s left behind, reported idle", what);
	CHECK(strstr(why, needle), "%s: the report \"%s\" lacks \"%s\"", what, why, needle);
	printf("  left %s: %s\n", what, why);
}

static void *accessors(void *arg)
{
	struct bga_locktab *tab;
	struct bga_cpu_reuse saved;
	unsigned i;

	(void)arg;
	expect_idle("on a fresh thread");

	bga__lockdep_acquire(BGA_LOCKDEP_GROW, 7, true);
	expect_left("a lockdep record", "1 locks held (innermost recorded: grow_lock 7)");
	bga__lockdep_release(BGA_LOCKDEP_GROW, 7);
	expect_idle("after the lockdep release");

	/* 65 group locks: one past the record (lockdep.c's LOCKDEP_DEPTH, 64),
	 * which is only counted; the recorded ones released first leave it. */
	for (i = 0; i <= 64; i++)
		bga__lockdep_acquire(BGA_LOCKDEP_GROUP, i, true);
	expect_left("65 group locks", "65 locks held (innermost recorded: group lock slot 63)");
	for (i = 0; i < 64; i++)
		bga__lockdep_release(BGA_LOCKDEP_GROUP, i);
	expect_left("a group lock past the record", "1 group locks held, past its record");
	bga__lockdep_release(BGA_LOCKDEP_GROUP, 64);
	expect_idle("after the group lock releases");

	CHECK(bga_locktab_create(&tab, 16, BGA_LOCK_MCS) == 0, "locktab_create");
	bga_locktab_lock(tab, 3);
	expect_left("an MCS slot held", "locktab: 1 MCS queue nodes");
	CHECK(bga_locktab_trylock(tab, 5), "trylock of a free MCS slot");
	expect_left("two MCS slots held", "locktab: 2 MCS queue nodes");
	bga_locktab_unlock(tab, 3);
	expect_left("one MCS slot still held", "locktab: 1 MCS queue nodes");
	bga_locktab_unlock(tab, 5);
	expect_idle("after the MCS unlocks");
	bga_locktab_destroy(tab);

	urcu_bp_read_lock();
	expect_left("an RCU read-side section", "rcu: inside a read-side critical section (nesting 1)");
	urcu_bp_read_lock();
	expect_left("two nested RCU read-side sections", "(nesting 2)");
	urcu_bp_read_unlock();
	urcu_bp_read_unlock();
	expect_idle("after the RCU read unlocks");

	/* The caches filled by lookups are in range; corrupted ones are not. */
	for (i = 0; i < 3 * BGA_CPU_FALLBACK_REUSE; i++)
		(void)bga__cpu_fallback();
	expect_idle("after CPU-id lookups");
	saved = bga__cpu_reuse;
	bga__cpu_reuse.cpu = bga__cpu_count();
	expect_left("a reused CPU id out of range", "cpu: reused answer");
	bga__cpu_reuse = saved;
	bga__cpu_reuse.left = BGA_CPU_FALLBACK_REUSE;
	expect_left("a reuse count out of range", "cpu: reused answer");
	bga__cpu_reuse = saved;
	expect_idle("after the CPU-id cache is restored");
	return NULL;
}

/*
 * fuzz_mt inputs: 64 blocks in groups of 64, nothing reserved, then the
 * thread byte (2: four threads, so every pool thread runs); `four_empty`
 * has no streams, `four_busy` 48 bytes of stream per thread.
 */
static const uint8_t four_empty[8] = {0, 0, 0, 0, 0, 0, 0, 2};
static uint8_t four_busy[8 + 4 * 48];

static struct bga_locktab *mcs_tab;
static atomic_int leave_what; /* 1: a lockdep record, 2: an MCS node */
static atomic_int left;

static void on_usr1(int sig)
{
	(void)sig;
	if (atomic_load(&leave_what) == 1)
		bga__lockdep_acquire(BGA_LOCKDEP_GROW, 9, true);
	else
		bga_locktab_lock(mcs_tab, 1);
	atomic_store(&left, 1);
}

/* After one input has made the pool: leave `what` on one pool thread. */
static void leave_on_pool_thread(int what)
{
	struct sigaction sa;
	sigset_t usr1;
	struct timespec nap = {0, 1000000};
	int waited;

	if (what == 2)
		CHECK(bga_locktab_create(&mcs_tab, 4, BGA_LOCK_MCS) == 0, "locktab_create");
	atomic_store(&leave_what, what);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	CHECK(pthread_sigmask(SIG_BLOCK, &usr1, NULL) == 0, "sigmask");
	CHECK(kill(getpid(), SIGUSR1) == 0, "kill");
	for (waited = 0; !atomic_load(&left); waited++) {
		CHECK(waited < 10000, "no pool thread took the signal in 10 s");
		nanosleep(&nap, NULL);
	}
}

enum harness_case { CLEAN, CALLER_LOCKDEP, POOL_LOCKDEP, POOL_MCS };

static void run_child(enum harness_case c)
{
	switch (c) {
	case CLEAN:
		LLVMFuzzerTestOneInput(four_busy, sizeof(four_busy));
		LLVMFuzzerTestOneInput(four_empty, sizeof(four_empty));
		LLVMFuzzerTestOneInput(four_busy, sizeof(four_busy));
		break;
	case CALLER_LOCKDEP:
		bga__lockdep_acquire(BGA_LOCKDEP_STORE, 1, true);
		LLVMFuzzerTestOneInput(four_empty, sizeof(four_empty));
		break;
	case POOL_LOCKDEP:
	case POOL_MCS:
		LLVMFuzzerTestOneInput(four_busy, sizeof(four_busy));
		leave_on_pool_thread(c == POOL_LOCKDEP ? 1 : 2);
		LLVMFuzzerTestOneInput(four_empty, sizeof(four_empty));
		break;
	}
	fflush(NULL);
	_exit(0);
}

/* Run a case in a child; true if it aborted, with its stderr in out. */
static bool harness(enum harness_case c, char *out, size_t n)
{
	int fd[2], st;
	size_t len = 0;
	ssize_t r;
	pid_t pid;

	CHECK(pipe(fd) == 0, "pipe");
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		close(fd[0]);
		dup2(fd[1], 2);
		close(fd[1]);
		run_child(c);
	}
	close(fd[1]);
	while (len + 1 < n && ((r = read(fd[0], out + len, n - 1 - len)) > 0 || (r < 0 && errno == EINTR)))
		if (r > 0)
			len += (size_t)r;
	out[len] = 0;
	close(fd[0]);
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return false;
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "case %d: the child neither exited 0 nor aborted (%#x): %s",
	      (int)c, st, out);
	return true;
}

static void expect_abort(enum harness_case c, const char *what, const char *who, const char *needle)
{
	char out[4096];

	CHECK(harness(c, out, sizeof(out)), "%s: the harness did not abort: %s", what, out);
	CHECK(strstr(out, who) && strstr(out, needle), "%s: the harness's report lacks \"%s\" or \"%s\": %s", what,
	      who, needle, out);
	printf("  %s: %s", what, out);
}

int main(void)
{
	char out[4096];
	pthread_t th;
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("accessors, on a thread of their own:\n");
	CHECK(pthread_create(&th, NULL, accessors, NULL) == 0 && pthread_join(th, NULL) == 0, "thread");

	memcpy(four_busy, four_empty, sizeof(four_empty));
	for (i = sizeof(four_empty); i < sizeof(four_busy); i++)
		four_busy[i] = (uint8_t)(i * 37 + 11);
	printf("fuzz_mt, end to end:\n");
	CHECK(!harness(CLEAN, out, sizeof(out)), "three inputs on one pool, nothing left: aborted: %s", out);
	printf("  three inputs on one pool, nothing left behind: exit 0\n");
	expect_abort(CALLER_LOCKDEP, "a lockdep record on the caller", "fuzz_mt: the calling thread ",
		     "at the start of an input: library state left behind: "
		     "lockdep: 1 locks held (innermost recorded: the store lock 1)");
	expect_abort(POOL_LOCKDEP, "a lockdep record on a pool thread", "fuzz_mt: pool thread ",
		     "before its stream: library state left behind: lockdep: 1 locks held (innermost recorded: "
		     "grow_lock 9)");
	expect_abort(POOL_MCS, "an MCS node on a pool thread", "fuzz_mt: pool thread ",
		     "before its stream: library state left behind: locktab: 1 MCS queue nodes");
	printf("thread_idle_test: ok\n");
	return 0;
}
