// SPDX-License-Identifier: LGPL-2.1-or-later
// The C shim over Google Benchmark; see shim.h for the contract.
#include "shim.h"

#include <benchmark/benchmark.h>

#include <pthread.h>
#include <sched.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

struct bench_state {
	benchmark::State *gb;
	const bench_def *def;
};

namespace {

std::vector<bench_def> &registry()
{
	static std::vector<bench_def> defs;
	return defs;
}

// Per-run context, shared by every thread of the run.  Google Benchmark
// runs one (benchmark, args, threads) configuration at a time, so one slot
// per definition suffices.
std::vector<void *> &contexts()
{
	static std::vector<void *> ctx;
	return ctx;
}

// Google Benchmark's Setup/Teardown take a bare function pointer; these
// trampolines give each definition its own.
constexpr int kMaxDefs = 128;

template <int I> void setup_tramp(const benchmark::State &s)
{
	bench_def &d = registry()[I];
	bench_state st{const_cast<benchmark::State *>(&s), &d};
	if (d.setup)
		d.setup(&st);
}

template <int I> void teardown_tramp(const benchmark::State &s)
{
	bench_def &d = registry()[I];
	bench_state st{const_cast<benchmark::State *>(&s), &d};
	if (d.teardown)
		d.teardown(&st);
	contexts()[I] = nullptr;
}

using hook = void (*)(const benchmark::State &);

template <int... I> constexpr auto make_hooks(std::integer_sequence<int, I...>, bool setup)
{
	return setup ? std::array<hook, sizeof...(I)>{setup_tramp<I>...}
		     : std::array<hook, sizeof...(I)>{teardown_tramp<I>...};
}

} // namespace

extern "C" {

void bench_register(const bench_def *def)
{
	registry().push_back(*def);
	contexts().push_back(nullptr);
}

bool bench_keep_running_batch(bench_state *st, uint64_t batch)
{
	return st->gb->KeepRunningBatch((benchmark::IterationCount)batch);
}

int bench_thread_index(const bench_state *st) { return st->gb->thread_index(); }
int bench_threads(const bench_state *st) { return st->gb->threads(); }

int64_t bench_arg(const bench_state *st)
{
	return st->def->nargs > 0 ? st->gb->range(0) : 0;
}

void *bench_ctx(const bench_state *st)
{
	return contexts()[(size_t)(st->def - registry().data())];
}

void bench_set_ctx(bench_state *st, void *ctx)
{
	contexts()[(size_t)(st->def - registry().data())] = ctx;
}

void bench_set_items(bench_state *st, int64_t items) { st->gb->SetItemsProcessed(items); }

void bench_set_counter(bench_state *st, const char *name, double value)
{
	st->gb->counters[name] = benchmark::Counter(value, benchmark::Counter::kAvgThreads);
}

void bench_skip(bench_state *st, const char *msg) { st->gb->SkipWithError(msg); }

void bench_set_label(bench_state *st, const char *label) { st->gb->SetLabel(label); }

// Filled from constructors, before benchmark::Initialize: handed over in
// bench_main.
static std::vector<std::pair<std::string, std::string>> &context_kv()
{
	static std::vector<std::pair<std::string, std::string>> kv;
	return kv;
}

void bench_add_context(const char *key, const char *value) { context_kv().emplace_back(key, value); }

/*
 * The CPUs the process may use, read once before any thread is bound.
 * Read later, the main thread's own mask would answer: it runs thread 0
 * and was bound to one CPU by the first benchmark, and the threads Google
 * Benchmark starts inherit that mask, so every later multi-threaded run
 * would have been bound to that single CPU.
 */
static cpu_set_t allowed_cpus;
static int nallowed_cpus;

void bench_pin(const bench_state *st)
{
	cpu_set_t one;
	if (nallowed_cpus == 0)
		return;
	int want = st->gb->thread_index() % nallowed_cpus;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed_cpus) || want-- > 0)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
		return;
	}
}

// Google Benchmark's numeric flags that it CHECKs (abort, SIGABRT) or
// takes as "no limit" when out of range: refused here with a message and
// status 2, before anything runs.
static bool flags_ok(int argc, char **argv)
{
	static const struct {
		const char *name;
		double lo;
		bool whole;
	} nums[] = {
		{"--benchmark_repetitions=", 1, true},
		{"--benchmark_min_time=", 0, false},
		{"--benchmark_min_warmup_time=", 0, false},
	};
	for (int i = 1; i < argc; i++)
		for (const auto &n : nums) {
			size_t len = strlen(n.name);
			if (strncmp(argv[i], n.name, len) != 0)
				continue;
			const char *v = argv[i] + len;
			char *end;
			errno = 0;
			double d = strtod(v, &end);
			if (end == v || (*end != '\0' && strcmp(end, "s") != 0) || errno || !(d >= n.lo) || d > 1e6 ||
			    (n.whole && d != (double)(long)d)) {
				fprintf(stderr, "%s: %.*s must be %s %g, not '%s'\n", argv[0], (int)len - 1, n.name,
					n.whole ? "a whole number of at least" : "a number of at least", n.lo, v);
				return false;
			}
		}
	return true;
}

int bench_main(int argc, char **argv)
{
	if (!flags_ok(argc, argv))
		return 2;
	static const auto setups = make_hooks(std::make_integer_sequence<int, kMaxDefs>{}, true);
	static const auto teardowns = make_hooks(std::make_integer_sequence<int, kMaxDefs>{}, false);
	std::vector<bench_def> &defs = registry();
	if (sched_getaffinity(0, sizeof(allowed_cpus), &allowed_cpus) == 0)
		nallowed_cpus = CPU_COUNT(&allowed_cpus);
	if (defs.size() > (size_t)kMaxDefs) {
		fprintf(stderr, "bench shim: more than %d benchmarks registered\n", kMaxDefs);
		return 2;
	}
	for (size_t i = 0; i < defs.size(); i++) {
		const bench_def *d = &defs[i];
		auto *b = benchmark::RegisterBenchmark(d->name, [d](benchmark::State &s) {
			bench_state st{&s, d};
			d->fn(&st);
		});
		b->UseRealTime()->Setup(setups[i])->Teardown(teardowns[i]);
		for (int a = 0; a < d->nargs; a++)
			b->Arg(d->args[a]);
		bool any = false;
		for (int t = 0; t < BENCH_MAX_THREADS_LIST && d->threads[t] > 0; t++) {
			b->Threads(d->threads[t]);
			any = true;
		}
		if (!any)
			b->Threads(1);
	}
	benchmark::Initialize(&argc, argv);
	if (benchmark::ReportUnrecognizedArguments(argc, argv))
		return 1;
	for (const auto &kv : context_kv())
		benchmark::AddCustomContext(kv.first, kv.second);
	benchmark::RunSpecifiedBenchmarks();
	benchmark::Shutdown();
	return 0;
}

} // extern "C"

int main(int argc, char **argv) { return bench_main(argc, argv); }
