# The two commands of README.md, and the few around them.
#   make run    install dependencies, build the daemon (no tests), start it on config.example.yaml
#   make test   install dependencies, build, run every test (unit, integration, interop,
#               the fuzz corpora replayed), then the same suite under ASan+UBSan and the
#               concurrency tests under TSan
#   make lint        clang-format check and clang-tidy (.clang-format, .clang-tidy), flake8 over
#                    the Python (.flake8); run by CI
#   make install     build, then install the binary, the systemd units and
#                    /etc/hookbox/config.yaml (from systemd/config.yaml, if absent) under the
#                    configured prefix (/usr/local); DESTDIR= stages it
#   make deb         the Debian package, build/deb/hookbox_<VERSION>_amd64.deb (debian/), with
#                    its build dependencies installed first; lintian must find no error or
#                    warning
#   make test-deb    the package in a throwaway Debian 12 root (mmdebstrap): install, the
#                    service's command line, upgrade, remove, purge (scripts/test-deb.sh).
#                    Not part of `make test`: two package builds and a bootstrap
#   make fuzz        each libFuzzer harness to FUZZ_RUNS executions (default 10^7), at most
#                    FUZZ_SECONDS (default 3600) each; FUZZ_FORK=N runs N worker processes
#                    (libFuzzer's -fork) that share one corpus and count toward one total
#   make crash-test  the crash test with CRASH_ROUNDS kills (default 100)
#   make soak        SOAK_MINUTES (default 30) of mixed traffic against the release daemon on
#                    loopback; fails if RSS, descriptors or threads grow (scripts/soak.py)
#   make bench       the benchmark (bench/bench.sh): ceiling, hookbox, adnanh/webhook
#   make bench-replicas  hookbox on PostgreSQL, 1 replica vs 2, each capped at half a core
#                    in its own cgroup (as root)
#   make bench-handlers  hookbox's exec/file/http handlers end to end, adnanh/webhook's;
#                    a fast handler's start latency beside a slow one's backlog
#   make bench-scale accept latency at 10 k vs 1 M rows, RSS, the purge of 1 M rows
#   make bench-console the console's pages with 1 M rows in the inbox, beside /healthz
#   make bench-search  the first page of `inbox list --where` at SEARCH_ROWS (default 1 M)
#   make bench-rate  a handler with rate: 100/s and a backlog, for a minute: the rate's error
#   make bench-bulk  `inbox retry --dead` of 100,000 dead jobs beside signed accepts (SQLite;
#                    BULK_ARGS="--backend postgres" on a throwaway PostgreSQL cluster)
#   make bench-finish  finishes/s of batches of 64 vs one by one, on SQLite and PostgreSQL
#   make bench-accept-cost  instructions per accept under valgrind's callgrind, repeatable on a
#                    busy machine (ACCEPT_COST_BUILDS="a/hookbox b/hookbox" compares builds)
BUILD ?= build
JOBS ?= $(shell nproc)

# `make fuzz` stops each harness at FUZZ_RUNS executions (libFuzzer's -runs) or after
# FUZZ_SECONDS, whichever comes first; the summary line says when the cap ended a harness
# before FUZZ_RUNS. A harness's rate falls as its corpus's inputs grow toward -max_len, and
# the slowest (config) takes hours for FUZZ_RUNS on one core (the measured rates are in
# docs/SECURITY.md); FUZZ_FORK=2 gives it two cores, in short jobs, whose inputs grow little
# past the seeds' length (a long single run reaches -max_len).
FUZZ_RUNS ?= 10000000
FUZZ_SECONDS ?= 3600
FUZZ_FORK ?= 1
CRASH_ROUNDS ?= 100
SOAK_MINUTES ?= 30
# The harnesses, from their one list (tests/fuzz/CMakeLists.txt's rows), in its order.
FUZZ_TARGETS = $(shell sed -n 's/^hookbox_fuzz_harness(\([a-z_]*\)[ )].*/\1/p' tests/fuzz/CMakeLists.txt)

.PHONY: all deps build daemon run test lint interop-deps install clean test-asan test-tsan fuzz \
        release-check asan-build asan-check tsan-build tsan-check \
        fuzz-smoke fuzz-build crash-test soak bench bench-replicas bench-handlers bench-scale bench-finish \
        bench-console bench-search bench-rate bench-bulk bench-accept-cost deb test-deb

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# The daemon only (its units are configured with it): the test binaries are left to
# `make test`, so `make run` and `make install` compile no test.
daemon: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j$(JOBS) --target hookbox

run: daemon
	@mkdir -p var
	./$(BUILD)/hookbox serve -c config.example.yaml

# The npm packages of the interop tests (the providers' official libraries) and of the
# browser tests (puppeteer-core), pinned in tests/{interop,browser}/package-lock.json.
interop-deps: deps
	@for d in tests/interop tests/browser; do \
	  (cd $$d && { [ -d node_modules ] && [ node_modules/.package-lock.json -nt package-lock.json ] || npm ci --no-audit --no-fund --loglevel=error; }) || exit 1; \
	done

# ctest runs TEST_JOBS tests at once: most of them wait on a daemon, a child, a socket or a
# clock (the release suite used 47 s of CPU in a 4 m 46 s serial run), and the integration
# tests are one ctest test per file (CMakeLists.txt, hookbox_tests SPLIT). Each test owns its
# ports (ephemeral), directories (mkdtemp) and PostgreSQL databases (named by pid), so they
# do not meet.
TEST_JOBS ?= $(shell echo $$(( $(JOBS) * 2 )))
# `make test` runs each suite while the next build compiles, under nice so that the tests
# come first: the suites mostly wait, and the compiles fill the time they leave. The TSan
# build goes beside the release suite and the ASan build beside the TSan suite, so the ASan
# suite, the one that spends the most CPU, runs last and alone. The build in the background
# writes its output to <dir>/make-test.log, shown when it fails. The measurements are in
# bench/RESULTS.md, "The time of make test".
test: build interop-deps
	@$(call while_building,build-tsan,tsan-build,release-check)
	@$(call while_building,build-asan,asan-build,tsan-check)
	@$(MAKE) --no-print-directory asan-check
# $(call while_building,DIR,BUILD_TARGET,CHECK_TARGET): BUILD_TARGET niced in the
# background (its output in DIR/make-test.log) while CHECK_TARGET runs; fails if either does.
define while_building
mkdir -p $(1); \
( nice -n 10 $(MAKE) --no-print-directory $(2) > $(1)/make-test.log 2>&1 ) & build=$$!; \
$(MAKE) --no-print-directory $(3); check=$$?; \
wait $$build; built=$$?; \
[ $$built -eq 0 ] || { tail -n 80 $(1)/make-test.log; echo "make $(2) failed: $(1)/make-test.log"; }; \
[ $$check -eq 0 ] && [ $$built -eq 0 ]
endef
release-check:
	@cd $(BUILD) && ctest --output-on-failure --timeout 600 -j$(TEST_JOBS)
# The sanitizer builds keep line tables only (-g1): a sanitizer's report needs file and line,
# not the variables' locations, and full debug info is a fifth of their compile time. TSan
# at -O1, as its documentation suggests, rather than the build type's -O2.
SANITIZE_FLAGS_DEBUG = -O0 -g1
SANITIZE_FLAGS_TSAN = -O1 -g1 -DNDEBUG
# The whole suite, the daemon included, under AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan: asan-build interop-deps
	@$(MAKE) --no-print-directory asan-check
asan-build: deps
	@cmake -S . -B build-asan -DHOOKBOX_SANITIZE=address -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS_DEBUG="$(SANITIZE_FLAGS_DEBUG)" >/dev/null
	@cmake --build build-asan -j$(JOBS)
asan-check:
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure --timeout 900 \
	  -j$(TEST_JOBS)
# The concurrency tests (storage, the dispatcher, handlers, the open-file limit, the daemon end
# to end) under TSan: the ctest tests of those five binaries, which in this build leave out
# the cases tagged [fork] (CMakeLists.txt, HOOKBOX_TEST_FILTER, says why).
TSAN_TESTS = test_inbox test_work test_handlers test_ops test_integration
test-tsan: tsan-build
	@$(MAKE) --no-print-directory tsan-check
tsan-build: deps
	@cmake -S . -B build-tsan -DHOOKBOX_SANITIZE=thread -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$(SANITIZE_FLAGS_TSAN)" >/dev/null
	@cmake --build build-tsan -j$(JOBS) --target hookbox $(TSAN_TESTS)
tsan-check:
	@cd build-tsan && TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/tests/tsan.supp" \
	  ctest --output-on-failure --timeout 900 -j$(TEST_JOBS) -R '^(inbox|work|handlers|ops|integration/.*)$$'
fuzz-build: deps
	@CC=clang CXX=clang++ cmake -S . -B build-fuzz -DHOOKBOX_FUZZ=ON \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build build-fuzz -j$(JOBS) --target $(addprefix fuzz_,$(FUZZ_TARGETS))

# Each harness from the committed seeds, to FUZZ_RUNS or FUZZ_SECONDS; new corpus entries go to
# build-fuzz/corpus/, crashes to build-fuzz/crashes/ (copy them to tests/fuzz/regressions/).
# The count of executions: under -fork the parent's "#N: cov: …" lines carry the running
# total (its own final stats count 0: the jobs ran the inputs); otherwise the final stats.
fuzz: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p build-fuzz/corpus/$$t build-fuzz/crashes/$$t; \
	  start=$$(date +%s); \
	  build-fuzz/tests/fuzz/fuzz_$$t -runs=$(FUZZ_RUNS) -max_total_time=$(FUZZ_SECONDS) \
	    $$([ $(FUZZ_FORK) -gt 1 ] && echo -fork=$(FUZZ_FORK)) \
	    -max_len=8192 -artifact_prefix=build-fuzz/crashes/$$t/ -print_final_stats=1 \
	    build-fuzz/corpus/$$t tests/fuzz/corpus/$$t > build-fuzz/fuzz_$$t.log 2>&1; rc=$$?; \
	  secs=$$(( $$(date +%s) - start )); [ $$secs -gt 0 ] || secs=1; \
	  n=$$(sed -n 's/^#\([0-9]*\): .*/\1/p' build-fuzz/fuzz_$$t.log | tail -1); \
	  [ -n "$$n" ] || n=$$(sed -n -e 's/^stat::number_of_executed_units: *//p' \
	    -e 's/^INFO: fuzzed for \([0-9]*\) iterations.*/\1/p' build-fuzz/fuzz_$$t.log | tail -1); \
	  printf 'fuzz_%s: %s executions in %s s (%s exec/s), exit %s%s\n' $$t "$$n" $$secs \
	    $$(( $${n:-0} / secs )) $$rc \
	    "$$([ "$${n:-0}" -lt $(FUZZ_RUNS) ] && echo ' (stopped by FUZZ_SECONDS before FUZZ_RUNS)')"; \
	  [ $$rc -eq 0 ] || { echo "fuzz_$$t failed: see build-fuzz/fuzz_$$t.log and build-fuzz/crashes/$$t"; exit 1; }; \
	done

# Each harness for 10 s. Not part of `make test`: the libFuzzer build is a fourth compile of
# the whole library (clang, ASan, coverage), about ten minutes of CI's 90 for ten seconds of
# fuzzing each; `make test` replays every seed and every past crash in the plain and the
# ASan builds instead (fuzz_replay_*), and the long runs are `make fuzz`.
fuzz-smoke:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=10

crash-test: build
	@cd $(BUILD) && HOOKBOX_CRASH_ROUNDS=$(CRASH_ROUNDS) ./test_integration "[crash]"

# Not part of `make test`: it runs for SOAK_MINUTES. The verdict's rule is in the script.
soak: build
	@python3 scripts/soak.py --binary $(BUILD)/hookbox --minutes $(SOAK_MINUTES)

# Release builds in build-bench/, deliveries in bench/out/; results into bench/RESULTS.md.
bench: deps
	@bench/bench.sh table

bench-replicas: deps
	@bench/bench.sh replicas

bench-handlers: deps
	@bench/bench.sh handlers

bench-scale: deps
	@bench/bench.sh scale

bench-console: deps
	@bench/bench.sh console

# SQLite only (bench/search.py says why); SEARCH_ROWS=10000 is a smoke run of seconds.
SEARCH_ROWS ?= 1000000
bench-search: build
	@python3 bench/search.py --binary $(BUILD)/hookbox --rows $(SEARCH_ROWS)

bench-rate: all
	@bench/rate.py --hookbox $(BUILD)/hookbox --seconds 60 --rate 100

# Standalone (bench/bulk.py): the build's hookbox; `BULK_JOBS=1000 make bench-bulk` to smoke it,
# `BULK_ARGS="--backend postgres" make bench-bulk` on a throwaway PostgreSQL cluster.
BULK_JOBS ?= 100000
BULK_ARGS ?=
bench-bulk: build
	@python3 bench/bulk.py --hookbox $(BUILD)/hookbox --jobs $(BULK_JOBS) $(BULK_ARGS)

# Standalone (bench/finish.py): bench/inbox/finish.cc in build-bench/, on SQLite and on a
# throwaway PostgreSQL cluster.
bench-finish: deps
	@cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DHOOKBOX_BENCH_INBOX=ON >/dev/null
	@cmake --build build-bench -j$(JOBS) --target bench_finish
	@python3 bench/finish.py

# Standalone (bench/accept_cost.py, needs Debian's valgrind): the build's hookbox, then each of
# ACCEPT_COST_BUILDS.
ACCEPT_COST_BUILDS ?=
bench-accept-cost: build
	@python3 bench/accept_cost.py --hookbox $(BUILD)/hookbox $(addprefix --hookbox ,$(ACCEPT_COST_BUILDS))

# The formatting of every C++ file (.clang-format) and the checks of .clang-tidy over every
# file the build compiles (the fuzz harnesses and bench tools, built by other compilers and
# builds, are only format-checked), and flake8 (.flake8: why not ruff) over every Python file
# git tracks (bench/, scripts/, tests/; node_modules is npm's). CI runs it after `make test`.
# clang-tidy reads the compile commands of a configure of its own (LINT_BUILD, nothing
# compiled), with HOOKBOX_FAST_BUILD off: one entry per file, each compiled alone, where the
# build's unity batches and gcc's precompiled headers would give clang neither.
LINT_FILES = git ls-files '*.cc' '*.h' | grep -v '^tests/interop/'
TIDY_FILES = git ls-files '*.cc' | grep -v -e '^tests/interop/' -e '^tests/fuzz/fuzz_' -e '^bench/'
PY_LINT_FILES = git ls-files '*.py' | grep -v '/node_modules/'
LINT_BUILD ?= build-lint
lint: deps
	@cmake -S . -B $(LINT_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOOKBOX_FAST_BUILD=OFF >/dev/null
	@$(LINT_FILES) | xargs clang-format --dry-run -Werror
	@$(PY_LINT_FILES) | xargs -r flake8
	@$(TIDY_FILES) | xargs -P$(JOBS) -n4 clang-tidy -p $(LINT_BUILD) --quiet
	@echo "lint: clean"

# The prefix is fixed at configure time (the units name the binary's path):
#   cmake -S . -B build -DCMAKE_INSTALL_PREFIX=/usr && make install
install: daemon
	@DESTDIR=$(DESTDIR) cmake --install $(BUILD)

# Under nice: the machine's cores are shared. DEB_DIR holds the .deb, the build tree
# (DEB_DIR/tree) and the package that `make test-deb` upgrades from (DEB_DIR/older). Each
# package is a file target over the tree's files (what git tracks, plus new files it does
# not ignore), so `make test-deb` after `make deb` builds no package again unless a file
# changed (the tests, the benchmarks, this Makefile and the package test do not go into it).
DEB_DIR ?= $(BUILD)/deb
DEB_VERSION := $(shell cat VERSION)
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
DEB_FILE = $(DEB_DIR)/hookbox_$(DEB_VERSION)_$(DEB_ARCH).deb
DEB_OLDER = $(DEB_DIR)/older/hookbox_$(DEB_VERSION)~older1_$(DEB_ARCH).deb
DEB_SOURCES := $(wildcard $(shell git ls-files --cached --others --exclude-standard 2>/dev/null | \
  grep -v -e '^tests/' -e '^bench/' -e '^Makefile$$' -e '^scripts/test-deb' | sed 's/ /\\ /g'))

deb: $(DEB_FILE)
$(DEB_FILE): $(DEB_SOURCES)
	@nice -n 5 scripts/build-deb.sh $(DEB_DIR)
$(DEB_OLDER): $(DEB_SOURCES)
	@nice -n 5 scripts/build-deb.sh $(DEB_DIR) --older

test-deb: $(DEB_FILE) $(DEB_OLDER)
	@nice -n 5 scripts/test-deb.sh $(DEB_FILE) $(DEB_OLDER)

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz $(LINT_BUILD)
