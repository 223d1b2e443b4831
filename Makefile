# SPDX-License-Identifier: LGPL-2.1-or-later
# A thin driver over CMake.  The two commands a new user needs:
#   make demo   installs missing Debian packages, builds Release, runs the main job
#   make test   builds with the tests and runs everything under ctest
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 60
CMAKE ?= cmake

.PHONY: all deps build demo test test-asan test-tsan soak coverage coverage-report bench micro fuzz fuzz-afl fuzz-merge install clean mutate

all: build

build:
	@scripts/deps.sh build
	$(CMAKE) -S . -B build/release -DCMAKE_BUILD_TYPE=Release
	$(CMAKE) --build build/release -j $(JOBS)

demo:
	@scripts/deps.sh demo
	$(CMAKE) -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DBGA_BENCH=ON
	$(CMAKE) --build build/release -j $(JOBS)
	bench/scale/demo.sh build/release $(DEMO_ARGS)

# The benchmarks are built too (BGA_BENCH): cli_badinput runs their bad
# inputs, so every program a user can call is checked by make test.
test:
	@scripts/deps.sh test bench
	$(CMAKE) -S . -B build/test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBGA_TESTS=ON -DBGA_DEBUG=ON -DBGA_WERROR=ON -DBGA_BENCH=ON
	$(CMAKE) --build build/test -j $(JOBS)
	cd build/test && ctest --output-on-failure -j 2

test-asan:
	@scripts/deps.sh test
	$(CMAKE) -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DBGA_TESTS=ON -DBGA_DEBUG=ON -DBGA_SANITIZE=ON
	$(CMAKE) --build build/asan -j $(JOBS)
	@# Criterion reports a test whose worker died in LeakSanitizer as passing, so
	@# every sanitizer report also goes to a log file, and any log fails the run.
	rm -rf build/asan/sanitizer-logs && mkdir -p build/asan/sanitizer-logs
	cd build/asan && rc=0; \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:log_path=$(CURDIR)/build/asan/sanitizer-logs/asan \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(CURDIR)/build/asan/sanitizer-logs/ubsan \
		ctest --output-on-failure -j 2 || rc=$$?; \
	if [ -n "$$(ls sanitizer-logs)" ]; then cat sanitizer-logs/*; \
		echo "test-asan: sanitizer reports above (build/asan/sanitizer-logs)"; rc=1; fi; \
	exit $$rc

test-tsan:
	@scripts/deps.sh test
	$(CMAKE) -S . -B build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBGA_TESTS=ON -DBGA_TSAN=ON
	$(CMAKE) --build build/tsan -j $(JOBS)
	cd build/tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -R '^(stress_|torture$$)'

# Line and branch coverage of lib/ over the whole ctest suite: gcc --coverage
# with atomic counters (threaded tests would corrupt plain ones), BGA_DEBUG
# on, -O0 so lines map to code, BGA_COVERAGE so that the lock-order death
# tests write their counters before abort() (lib/base/lockdep.c).  gcovr reads
# build/coverage only: other build trees may hold .gcno files of other
# versions.  The fastpath_calls test's -O3 copy of alloc.c and range.c
# (tests/CMakeLists.txt) is never run, yet --coverage, which the driver
# expands after the target's -fno-test-coverage, gives it .gcno files: read,
# they would count its every branch as missed (200 of them), so they go.
# The HTML report is build/coverage/index.html.  Three figures for lib/,
# the last lines printed: every branch gcc emits, the markers ignored (the
# outside measure, issue 34's); the same with the markers (GCOVR_MARKED),
# each GCOVR_EXCL_BR_LINE saying beside it why its branch cannot be taken;
# and the markers with --exclude-unreachable-branches (the HTML report's).
coverage_line = awk -v what='$(1)' '/^lines:/ {l = $$2 " " $$3 " " $$4 " " $$5 " " $$6 " " $$7} \
	/^branches:/ {b = $$2 " " $$3 " " $$4 " " $$5 " " $$6 " " $$7} END {print "coverage of lib/ (" what "): lines " l ", branches " b}' $(2)
# The markers' figure leaves out, besides GCOVR_EXCL_BR_LINE lines, the
# failing side of every BGA_ASSERT (an invariant broken: a bug if taken).
GCOVR_MARKED = --exclude-branches-by-pattern '.*\bBGA_ASSERT\('
GCOVR_LIB = gcovr --root . build/coverage --object-directory build/coverage --filter 'lib/' -j 2
coverage:
	@scripts/deps.sh test coverage
	$(CMAKE) -S . -B build/coverage -DCMAKE_BUILD_TYPE=Debug -DBGA_TESTS=ON -DBGA_DEBUG=ON \
		-DCMAKE_C_FLAGS="--coverage -fprofile-update=atomic -DBGA_COVERAGE" -DCMAKE_CXX_FLAGS="--coverage -fprofile-update=atomic" \
		-DCMAKE_EXE_LINKER_FLAGS=--coverage -DCMAKE_SHARED_LINKER_FLAGS=--coverage
	$(CMAKE) --build build/coverage -j $(JOBS)
	find build/coverage -name '*.gcda' -delete
	find build/coverage -path '*/bga_fastpath_obj.dir/*' -name '*.gcno' -delete
	cd build/coverage && ctest --output-on-failure -j 2 || echo "coverage: some tests failed (above); the report covers what ran"
	$(MAKE) --no-print-directory coverage-report

# The report of what the last `make coverage` ran (no rebuild, no rerun).
coverage-report:
	$(GCOVR_LIB) --no-markers --txt build/coverage/lib-coverage-all.txt --print-summary >build/coverage/summary-all.txt
	$(GCOVR_LIB) $(GCOVR_MARKED) --txt build/coverage/lib-coverage-marked.txt --print-summary >build/coverage/summary-marked.txt
	$(GCOVR_LIB) $(GCOVR_MARKED) --exclude-unreachable-branches --html-details build/coverage/index.html \
		--txt build/coverage/lib-coverage.txt --print-summary >build/coverage/summary.txt
	@$(call coverage_line,every branch: no exclusion,build/coverage/summary-all.txt)
	@$(call coverage_line,GCOVR_EXCL markers and BGA_ASSERT,build/coverage/summary-marked.txt)
	@$(call coverage_line,those and --exclude-unreachable-branches,build/coverage/summary.txt)
	@echo "per file: build/coverage/lib-coverage-all.txt; HTML: build/coverage/index.html"

# The stress programs and the fuzz replays, long: SOAK_SECONDS in all, split
# evenly, one program at a time (each gets both cores), through the one knob
# they all read, BGA_STRESS_SECONDS (tests/support/stress_time.h; `make test` leaves
# it unset: a few seconds each).  A share must stay under ctest's 600 s limit.
SOAK_SECONDS ?= 1800
soak:
	@scripts/deps.sh test
	$(CMAKE) -S . -B build/soak -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBGA_TESTS=ON -DBGA_DEBUG=ON
	$(CMAKE) --build build/soak -j $(JOBS)
	cd build/soak && n=$$(ctest -N -R '^(stress_|fuzz_replay_|torture$$)' | grep -c 'Test *#'); \
	share=$$(( $(SOAK_SECONDS) / n )); \
	if [ $$share -gt 540 ]; then echo "soak: $$share s a program is past ctest's limit; lower SOAK_SECONDS"; exit 2; fi; \
	echo "soak: $$n programs, $$share s each"; \
	BGA_STRESS_SECONDS=$$share ctest --output-on-failure -j 1 -R '^(stress_|fuzz_replay_|torture$$)'
	@# bgafs under SIGKILL: BGAFS_CRASH_ITERS rounds, every fsynced file verified (77: no FUSE here).
	BGAFS_CRASH_ITERS=$${BGAFS_CRASH_ITERS:-25} tools/bgafs/tests/bgafs_test.sh \
		build/soak/tools/bgafs/bgafs crashloop || [ $$? = 77 ]
	@# the data-integrity exerciser, long: BGAFS_EXER_OPS operations a process on a BGAFS_EXER_SIZE image, the crash after 30 s.
	BGAFS_EXER_OPS=$${BGAFS_EXER_OPS:-40000} BGAFS_EXER_SIZE=$${BGAFS_EXER_SIZE:-64M} BGAFS_EXER_CRASH_AFTER=30 \
		BGAFS_EXERCISER=build/soak/tools/bgafs/tests/bgafs_exerciser tools/bgafs/tests/bgafs_test.sh \
		build/soak/tools/bgafs/bgafs exerciser || [ $$? = 77 ]
	@# bgafs under stress-ng's filesystem class with --verify, BGAFS_STRESSNG_SECONDS a stressor (46 of them).
	BGAFS_STRESSNG_SECONDS=$${BGAFS_STRESSNG_SECONDS:-10} tools/bgafs/tests/bgafs_test.sh \
		build/soak/tools/bgafs/bgafs stressng || [ $$? = 77 ]

# Every "what it must show" ratio (primitives, volume, aging) in one go.
bench:
	@scripts/deps.sh bench
	$(CMAKE) -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DBGA_BENCH=ON
	$(CMAKE) --build build/release -j $(JOBS)
	bench/report/ratios.sh build/release

micro:
	@scripts/deps.sh bench
	$(CMAKE) -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DBGA_BENCH=ON
	$(CMAKE) --build build/release -j $(JOBS)
	@# every repetition goes into the JSON (the screen shows the aggregates), so that
	@# compare.py can run its U-test on two of them; MICRO_ARGS adds flags (--benchmark_filter=...).
	build/release/bench/bga-micro --benchmark_repetitions=$${MICRO_REPS:-9} --benchmark_display_aggregates_only=true \
		--benchmark_out=build/release/micro.json --benchmark_out_format=json $(MICRO_ARGS)

# make install [PREFIX=/usr/local] [DESTDIR=/staging]: the Release build,
# installed under DESTDIR/PREFIX (lib, include, bin, share/man, pkg-config
# and CMake package files; the programs find the library from any prefix).
PREFIX ?= /usr/local
install: build
	DESTDIR="$(DESTDIR)" $(CMAKE) --install build/release --prefix "$(PREFIX)"

clean:
	rm -rf build

# Fuzzing (tests/fuzz/, scripts/fuzz.sh): each harness for FUZZ_SECONDS;
# crashing inputs land in tests/fuzz/crashes/, one file per bug.
# FUZZ_HARNESSES picks harnesses; FUZZ_ARGS and AFL_ARGS go to libFuzzer
# and afl-fuzz (make fuzz FUZZ_ARGS='-jobs=2 -dict=my.dict').
fuzz:
	@scripts/deps.sh fuzz
	FUZZ_ARGS='$(FUZZ_ARGS)' scripts/fuzz.sh libfuzzer $(FUZZ_SECONDS) $(FUZZ_HARNESSES)

# Plant each bug of tests/mutants/*.patch in a clean copy (build/mutate),
# run the tests its header names, and print which tests killed it, the kill
# rate and the survivors (scripts/mutate.sh; tests/mutants/README.md).
# MUTATE_ALL_TESTS=1: every suite per mutant; MUTATE_FUZZ_SECONDS=N: also
# fuzz a mutant its tests missed.
mutate:
	@scripts/deps.sh test
	JOBS=$(JOBS) scripts/mutate.sh $(MUTANTS)

fuzz-afl:
	@scripts/deps.sh fuzz
	AFL_ARGS='$(AFL_ARGS)' scripts/fuzz.sh afl $(FUZZ_SECONDS) $(FUZZ_HARNESSES)

# HTML line and branch coverage of lib/ by the fuzz corpora (working corpus,
# seeds, regressions): build/fuzz-cov/html/index.html.
.PHONY: fuzz-cov
fuzz-cov:
	@scripts/deps.sh fuzz
	scripts/fuzz.sh cov $(FUZZ_HARNESSES)

# Minimise the working corpora (build/fuzz-libfuzzer/corpus) with -merge=1.
fuzz-merge:
	@scripts/deps.sh fuzz
	scripts/fuzz.sh merge

# The model of N cores (bench/model/model.c): lib/'s real code on 1..64
# modelled cores that take turns, every access counted by cache line;
# throughput by the model of bench/model/report.py, and its check against
# the same workloads measured here in 0.1 s slices, each beside its own
# line-transfer time and ceiling (bga-model-plain --measure; bga-scale's
# 1- and 2-thread figures printed beside it).  Writes model.txt,
# model.json and model.png beside the demo's report (build/demo).
.PHONY: model
model:
	@scripts/deps.sh demo model
	$(CMAKE) -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DBGA_BENCH=ON
	$(CMAKE) --build build/release -j $(JOBS) --target bga-scale
	$(CMAKE) -S . -B build/model -DCMAKE_BUILD_TYPE=Release -DBGA_MODEL=ON -DBGA_EXAMPLES=OFF
	$(CMAKE) --build build/model -j $(JOBS) --target bga-model bga-model-plain
	bench/model/model.sh build/model build/release
