# Front door: `make run` and `make test` do all the set-up on Debian/Ubuntu.
JOBS ?= 2
BUILD ?= build
ASAN_BUILD ?= build-asan

.PHONY: all deps build build-asan run test test-release test-asan soak bench clean

all: build

deps:
	@scripts/deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j$(JOBS)

build-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSS_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j$(JOBS)

run: build
	scripts/run-demo.sh $(BUILD)

test-release: build
	cd $(BUILD) && ctest --output-on-failure

test-asan: build-asan
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure

test: test-release test-asan

# The load suite (tests/load) with bigger counts and longer runs, same assertions.
soak: build
	SS_LOAD_SOAK=1 SS_BIN_DIR=$(CURDIR)/$(BUILD) SS_BENCH_DIR=$(CURDIR)/$(BUILD)/tests/bench \
		/usr/bin/python3 -m pytest -q -p no:cacheprovider -s tests/load

bench: build
	/usr/bin/python3 tests/bench/bench.py --ours $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
