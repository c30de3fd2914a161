# SPDX-License-Identifier: MIT
# Front door: `make run` and `make test` build and test with what is
# installed; they install nothing. `sh scripts/deps.sh` (or `make deps`)
# installs what they need on Debian/Ubuntu.
JOBS ?= 2
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
TSAN_BUILD ?= build-tsan
DEB_BUILD ?= build-deb
# make fuzz: each target runs FUZZ_TIME seconds or FUZZ_RUNS inputs, whichever
# ends first, JOBS targets at once; findings go under FUZZ_DIR.
FUZZ_TIME ?= 3600
FUZZ_RUNS ?= 10000000
FUZZ_DIR ?= $(FUZZ_BUILD)/campaign
# an input that runs longer than this many seconds is reported as a hang
FUZZ_TIMEOUT ?= 10

.PHONY: all deps build build-asan build-tsan build-fuzz run test test-release test-asan \
	test-tsan test-fuzz test-matrix test-clang test-mbedtls3 test-minimal fuzz soak bench deb clean

all: build

deps:
	@scripts/deps.sh

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j$(JOBS)

build-asan:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSS_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j$(JOBS)

# The tests that run threads (ctest label "threads"), under ThreadSanitizer:
# the unit tests, and the programs for tests/integration/test_workers.py and
# test_manager*.py.
THREAD_TESTS = test_random test_tarena test_threads test_saltpool test_udp_sessions test_shared ss-server ss-local ss-tunnel ss-redir ss-manager
build-tsan:
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSS_TSAN=ON
	cmake --build $(TSAN_BUILD) -j$(JOBS) --target $(THREAD_TESTS)

# libFuzzer targets (tests/fuzz) with ASan and UBSan; clang only.
build-fuzz:
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSS_FUZZ=ON \
		-DSS_TESTS=OFF
	cmake --build $(FUZZ_BUILD) -j$(JOBS)

run: build
	scripts/run-demo.sh $(BUILD)

test-release: build
	cd $(BUILD) && ctest --output-on-failure

test-asan: build-asan
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure

test-tsan: build-tsan
	cd $(TSAN_BUILD) && TSAN_OPTIONS=halt_on_error=1 ctest -L threads --output-on-failure

# Each fuzz target for a short fixed time over a copy of its seeds.
test-fuzz: build-fuzz
	cd $(FUZZ_BUILD) && ctest -j$(JOBS) --output-on-failure

test: test-release test-asan test-tsan test-fuzz

# The build matrix CI runs after `make test` (scripts/ci-matrix.sh): clang
# with -Werror, Mbed TLS 3.6 from ../shared/vendor, every optional library
# off; each job in a build directory of its own.
test-matrix:
	JOBS=$(JOBS) scripts/ci-matrix.sh

test-clang test-mbedtls3 test-minimal:
	JOBS=$(JOBS) scripts/ci-matrix.sh $(@:test-%=%)

fuzz: build-fuzz
	FUZZ_TIMEOUT=$(FUZZ_TIMEOUT) scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_DIR) $(FUZZ_TIME) $(FUZZ_RUNS) $(JOBS)

# The load suite (tests/load) with bigger counts and longer runs, same assertions.
soak: build
	SS_LOAD_SOAK=1 SS_BIN_DIR=$(CURDIR)/$(BUILD) SS_BENCH_DIR=$(CURDIR)/$(BUILD)/tests/bench \
		/usr/bin/python3 -m pytest -q -p no:cacheprovider -s tests/load

bench: build
	/usr/bin/python3 tests/bench/bench.py --ours $(BUILD)

# The Debian packages (debian/README.md), built from a copy of the tree.
deb:
	scripts/build-deb.sh $(DEB_BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD) $(DEB_BUILD) \
		build-clang build-mbedtls3 build-minimal
