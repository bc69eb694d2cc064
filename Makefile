# The commands a newcomer needs. `make demo` and `make test` work on a fresh Debian bookworm.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CTEST_FLAGS ?=
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Every Debian package the build, the tests, the demo and the reference worker need.
DEB_PACKAGES := build-essential cmake ninja-build pkg-config git \
  libboost-dev libboost-system-dev libssl-dev openssl \
  nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev libfmt-dev libcli11-dev libeigen3-dev \
  libgtest-dev libgmock-dev googletest libbenchmark-dev \
  dataset-fashion-mnist zlib1g-dev ccache

.PHONY: all deps build test test-sanitize test-tsan demo bench clean format help

all: build

help:
	@echo "make demo   - build, start the embedded dev cluster and run the quickstart job"
	@echo "make test   - install dependencies, build, run every test suite"
	@echo "make deps   - install the Debian packages the project needs (apt-get)"
	@echo "make build  - Release build into $(BUILD)/ (binaries in $(BUILD)/bin)"
	@echo "make bench  - build and run the solver benchmark"
	@echo "make test-sanitize - the whole suite under ASan + UBSan (build-asan/)"
	@echo "make test-tsan     - the runtime's concurrency tests under TSan (build-tsan/)"

deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@command -v kubectl >/dev/null || echo "note: kubectl is not installed; tests that drive the dev cluster with kubectl will be skipped"

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

test: deps build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer (own build directory).
test-sanitize: deps
	cmake -S . -B $(BUILD)-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDEPL_SANITIZE=address,undefined -DDEPL_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build $(BUILD)-asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir $(BUILD)-asan --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

# ThreadSanitizer on the concurrency of the Kubernetes runtime (work queue, store, informers,
# leader election).
test-tsan: deps
	cmake -S . -B $(BUILD)-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDEPL_SANITIZE=thread -DDEPL_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build $(BUILD)-tsan -j $(JOBS) --target kube_runtime_tests
	TSAN_OPTIONS=halt_on_error=1 $(BUILD)-tsan/tests/kube_runtime_tests

demo: deps build
	$(BUILD)/bin/kubectl-depl demo --keep-running

bench: deps build
	$(BUILD)/bin/depl-bench

format:
	git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
