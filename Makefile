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

.PHONY: all deps build test demo bench clean format help

all: build

help:
	@echo "make demo   - build, start the embedded dev cluster and run the quickstart job"
	@echo "make test   - install dependencies, build, run every test suite"
	@echo "make deps   - install the Debian packages the project needs (apt-get)"
	@echo "make build  - Release build into $(BUILD)/ (binaries in $(BUILD)/bin)"
	@echo "make bench  - build and run the solver benchmark"

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

demo: deps build
	$(BUILD)/bin/kubectl-depl demo --keep-running

bench: deps build
	$(BUILD)/bin/depl-bench

format:
	git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
