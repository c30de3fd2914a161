# Front door: `make run` and `make test` do all the set-up on Debian/Ubuntu.
JOBS ?= 2
BUILD ?= build
ASAN_BUILD ?= build-asan

.PHONY: all deps build build-asan run test test-release test-asan bench clean

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

bench: build
	/usr/bin/python3 tests/bench/bench.py --ours $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
