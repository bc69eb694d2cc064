# The commands a newcomer needs. `make demo` and `make test` work on a fresh Debian bookworm.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CTEST_FLAGS ?=
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Every Debian package the build, the tests, the demo and the reference workers need (the
# PyTorch job and the Python SDK's tests run on Debian's /usr/bin/python3 with these).
DEB_PACKAGES := build-essential cmake ninja-build pkg-config git \
  libboost-dev libboost-system-dev libssl-dev openssl \
  nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev libfmt-dev libcli11-dev libeigen3-dev \
  libgtest-dev libgmock-dev googletest libbenchmark-dev \
  libgoogle-perftools-dev dataset-fashion-mnist zlib1g-dev ccache \
  python3 python3-torch python3-numpy python3-pytest python3-yaml
# What only runs needs (the PyTorch job and the SDK's tests, the Fashion-MNIST files). make demo
# and make test install these in the background while the build compiles (build_with_run_deps).
RUN_PACKAGES := dataset-fashion-mnist python3-torch python3-numpy python3-pytest python3-yaml
BUILD_PACKAGES := $(filter-out $(RUN_PACKAGES),$(DEB_PACKAGES))

# The fuzz build (make fuzz, docs/fuzzing.md): Debian's clang and its libFuzzer runtime.
FUZZ_PACKAGES := clang-14 libclang-rt-14-dev
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?= $(notdir $(wildcard fuzz/corpus/*))

.PHONY: all deps fuzz-deps build demo-build test test-sanitize test-sanitize-fast test-tsan fuzz demo demo-reference demo-quickstart bench reference-docs clean format help

all: build

help:
	@echo "make demo   - build, start the embedded dev cluster and train the PyTorch Fashion-MNIST job"
	@echo "make demo-reference - the same with the C++ reference worker's job"
	@echo "make demo-quickstart - the same with the quickstart job and simulated workers"
	@echo "make test   - install dependencies, build, run every test suite"
	@echo "make deps   - install the Debian packages the project needs (apt-get)"
	@echo "make build  - Release build into $(BUILD)/ (binaries in $(BUILD)/bin)"
	@echo "make bench  - build and run the solver benchmark"
	@echo "make reference-docs - write docs/reference.md from the CRD"
	@echo "make test-sanitize - the whole suite under ASan + UBSan (build-asan-fast/)"
	@echo "make test-sanitize-fast - the fast unit suites under ASan + UBSan (what CI adds)"
	@echo "make test-tsan     - the runtime's concurrency tests under TSan (build-tsan/)"
	@echo "make fuzz          - every libFuzzer target for FUZZ_SECONDS each (build-fuzz/)"

# Sets the shell variable `missing` to the Debian packages of $(1) that are not installed.
define apt_missing
missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done
endef

# Installs the Debian packages of $(1) that are missing; quiet when all are there.
define apt_install_missing
	@$(call apt_missing,$(1)); \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

# Builds the targets $(1) while the missing RUN_PACKAGES install: the build's own packages first,
# then apt in the background of the compile (its output in $(BUILD)/run-deps.log; sudo asks for
# its password before, never in the background). Waits for both; a failed install fails the
# target and shows the end of that log. On a fresh machine python3-torch and what it pulls in are
# most of the install's time; docs/benchmarks.md ("Building") has the measurement.
define build_with_run_deps
	$(call apt_install_missing,$(BUILD_PACKAGES))
	@[ -f $(BUILD)/build.ninja ] || $(CONFIGURE)
	@$(call apt_missing,$(RUN_PACKAGES)); log=$(BUILD)/run-deps.log; : > $$log; installer=""; \
	if [ -n "$$missing" ]; then \
	  $(if $(SUDO),$(SUDO) -v || exit 1;) \
	  echo "installing in the background of the build:$$missing (log: $$log)"; \
	  { $(SUDO) $(if $(SUDO),-n) apt-get -o DPkg::Lock::Timeout=300 update -qq && \
	    DEBIAN_FRONTEND=noninteractive $(SUDO) $(if $(SUDO),-n) apt-get -o DPkg::Lock::Timeout=300 \
	      install -y -qq --no-install-recommends $$missing; } > $$log 2>&1 & installer=$$!; \
	fi; \
	cmake --build $(BUILD) -j $(JOBS) $(1); built=$$?; \
	if [ -n "$$installer" ]; then \
	  if ! wait $$installer; then \
	    tail -n 20 $$log; \
	    echo "installing$$missing failed (the log: $$log); the build's packages are in place, run make deps to retry"; \
	    exit 1; \
	  fi; \
	  echo "installed:$$missing"; \
	fi; \
	exit $$built
endef

deps:
	$(call apt_install_missing,$(DEB_PACKAGES))
	@command -v kubectl >/dev/null || echo "note: kubectl is not installed; tests that drive the dev cluster with kubectl will be skipped"

fuzz-deps:
	$(call apt_install_missing,$(FUZZ_PACKAGES))

CONFIGURE = cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)
$(BUILD)/build.ninja:
	$(CONFIGURE)

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

test:
	$(call build_with_run_deps)
	@command -v kubectl >/dev/null || echo "note: kubectl is not installed; tests that drive the dev cluster with kubectl will be skipped"
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer. Built at -O1 with minimal
# debug info (-g1) and assertions on (the trainer at -O2, see worker/CMakeLists.txt), in its own
# directory, which test-sanitize-fast shares: building every target and running the suite took
# about 30 min on 2 shared cores.
SANITIZE_CONFIGURE := cmake -S . -B $(BUILD)-asan-fast -G Ninja -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -g1" -DDEPL_SANITIZE=address,undefined -DDEPL_BUILD_BENCH=OFF \
  $(CMAKE_FLAGS)
test-sanitize: deps
	$(SANITIZE_CONFIGURE)
	cmake --build $(BUILD)-asan-fast -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir $(BUILD)-asan-fast --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

# The fast unit suites under ASan + UBSan (what CI runs after make test; the whole suite does
# not fit in CI's time): parsers, solver, Kubernetes client and runtime, controller logic, the
# dev cluster's API semantics, the worker, and the fuzz regressions (build and run took 18 min
# on 2 shared cores).
SANITIZE_FAST_TESTS := common_tests solver_tests kube_client_tests kube_transport_tests \
  kube_runtime_tests controller_tests devcluster_core_tests worker_tests fuzz_replay_tests
test-sanitize-fast: deps
	$(SANITIZE_CONFIGURE)
	cmake --build $(BUILD)-asan-fast -j $(JOBS) --target $(SANITIZE_FAST_TESTS)
	@failed=""; for t in $(SANITIZE_FAST_TESTS); do \
	  echo "== $$t (ASan + UBSan)"; \
	  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    $(BUILD)-asan-fast/tests/$$t --gtest_brief=1 || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "test-sanitize-fast: FAILED:$$failed"; exit 1; fi; \
	echo "test-sanitize-fast: every suite passed, no sanitizer report"

# ThreadSanitizer on the concurrency of the Kubernetes runtime (work queue, store, informers,
# leader election) and of the dev cluster's store (writes computed outside its lock, watches).
TSAN_DEVCLUSTER_FILTER := ConcurrentWriteTest.*:StoreTest.*
test-tsan: deps
	cmake -S . -B $(BUILD)-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDEPL_SANITIZE=thread -DDEPL_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build $(BUILD)-tsan -j $(JOBS) --target kube_runtime_tests devcluster_core_tests
	TSAN_OPTIONS=halt_on_error=1 $(BUILD)-tsan/tests/kube_runtime_tests
	TSAN_OPTIONS=halt_on_error=1 $(BUILD)-tsan/tests/devcluster_core_tests --gtest_filter='$(TSAN_DEVCLUSTER_FILTER)'

# libFuzzer on every parser of outside input, one target after the other, each for
# FUZZ_SECONDS on a working copy of its seeds in $(FUZZ_BUILD)/corpus/ (new inputs never go into
# the repo; fuzz/regressions/ is read as extra seeds). Fails when any target finds a crash, leak,
# UBSan report or a hang (> 10 s); the input is then in $(FUZZ_BUILD)/artifacts/<target>/.
fuzz: deps fuzz-deps
	CC=clang-14 CXX=clang++-14 cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g" -DDEPL_FUZZ=ON -DDEPL_BUILD_TESTS=OFF \
	  -DDEPL_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target depl_fuzzers
	@failed=""; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/artifacts/$$t $(FUZZ_BUILD)/logs && \
	  cp -r fuzz/corpus/$$t/. $(FUZZ_BUILD)/corpus/$$t/ && \
	  echo "fuzz_$$t: $(FUZZ_SECONDS) s (log: $(FUZZ_BUILD)/logs/$$t.log)"; \
	  dict=""; [ -f fuzz/dict/$$t.dict ] && dict="-dict=fuzz/dict/$$t.dict"; \
	  seeds=""; [ -d fuzz/regressions/$$t ] && seeds="fuzz/regressions/$$t"; \
	  if UBSAN_OPTIONS=print_stacktrace=1 $(FUZZ_BUILD)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) \
	      -timeout=10 -print_final_stats=1 $$dict -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t/ \
	      $(FUZZ_BUILD)/corpus/$$t $$seeds > $(FUZZ_BUILD)/logs/$$t.log 2>&1; then \
	    grep -E "^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)" $(FUZZ_BUILD)/logs/$$t.log; \
	  else \
	    tail -n 40 $(FUZZ_BUILD)/logs/$$t.log; failed="$$failed $$t"; \
	  fi; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: FAILED:$$failed (inputs in $(FUZZ_BUILD)/artifacts/)"; exit 1; fi; \
	echo "fuzz: no findings"

# What the demos run, and only that (not the tests and benchmarks): kubectl-depl hosts the dev
# cluster and the controller; pods run the PyTorch job (Python, nothing to build),
# depl-reference-worker or depl-sim-worker. docs/benchmarks.md ("Building") has the times from a
# clone.
DEMO_TARGETS := kubectl-depl depl-reference-worker depl-sim-worker
demo-build: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target $(DEMO_TARGETS)

# The main demo trains Fashion-MNIST for real with the PyTorch reference job (examples/pytorch:
# a CNN through the depl SDK; its deadline makes the plan run the `full` phase as two
# data-parallel pods joined by torch.distributed) on pools that describe this machine;
# demo-reference runs the C++ reference worker's job the same way (no torch needed);
# demo-quickstart runs the quickstart with simulated workers on GPU pools.
demo:
	$(call build_with_run_deps,--target $(DEMO_TARGETS))
	$(BUILD)/bin/kubectl-depl demo --job examples/pytorch/job.yaml \
	  --pools examples/pytorch/pools.yaml --keep-running

demo-reference:
	$(call build_with_run_deps,--target $(DEMO_TARGETS))
	$(BUILD)/bin/kubectl-depl demo --job examples/fashion-mnist/job.yaml \
	  --pools examples/fashion-mnist/pools.yaml --keep-running

demo-quickstart:
	$(call build_with_run_deps,--target $(DEMO_TARGETS))
	$(BUILD)/bin/kubectl-depl demo --keep-running

bench: deps build
	$(BUILD)/bin/depl-bench

# docs/reference.md, generated from the CRD's schema (tests/controller/docs_reference_test.cpp
# fails when it is stale).
reference-docs: $(BUILD)/build.ninja
	cmake --build $(BUILD) --target depl-crd-reference
	$(BUILD)/bin/depl-crd-reference crds/depl.dev_dependabletrainingjobs.yaml > docs/reference.md.tmp
	mv docs/reference.md.tmp docs/reference.md

format:
	git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
