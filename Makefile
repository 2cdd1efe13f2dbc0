# CAPHV: the two user-facing targets are `make demo` and `make test`.
# Everything else is a building block they call.

SHELL := /bin/bash
export CAPHV_CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/caphv
export CCACHE_DIR ?= $(CAPHV_CACHE_DIR)/ccache
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all setup build build-asan build-fuzz build-tsan test test-unit test-integration demo format lint clean testbins release

all: build

setup:
	@hack/setup.sh

testbins:
	@hack/build-testbins.sh

# The release artifacts in out/<version>/ (docs/release.md). VERSION defaults to
# v<project version>; IMAGE_REPO and RELEASE_URL as hack/release.sh says.
release:
	@hack/build-testbins.sh kube helm
	@$(if $(VERSION),VERSION=$(VERSION)) $(if $(IMAGE_REPO),IMAGE_REPO=$(IMAGE_REPO)) $(if $(RELEASE_URL),RELEASE_URL='$(RELEASE_URL)') hack/release.sh

# TARGETS: only those (default: all).
build:
	@cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	@cmake --build build -j $(JOBS) $(if $(TARGETS),--target $(TARGETS))

# The ASan+UBSan tree: clang, as the TSan and fuzz trees (it compiles this
# code in about 60 % of GCC's time; GCC's warnings come from the regular tree).
build-asan:
	@cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++-16 -DCAPHV_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build build-asan -j $(JOBS)

# The fuzz tree: clang, libFuzzer, ASan+UBSan; only the libraries and fuzz/.
build-fuzz:
	@cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-16 -DCAPHV_FUZZ=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target fuzzers

# The ThreadSanitizer tree (clang 16): the client runtime's tests only.
build-tsan:
	@cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-16 -DCAPHV_TSAN=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build build-tsan -j $(JOBS) --target unit_kube integration_kube lease_candidate

# Everything CI checks: formatting, layering, the regular build, then both
# trees' unit + integration tests at the same time, each on its own test bed;
# the ASan+UBSan tree is built while the regular tree's tests run
# (hack/run-tests.sh --build-asan; CAPHV_TESTS_SERIAL=1: one after the other);
# then, on whichever of the two is free first, the two upgrade lanes; beside
# them the ThreadSanitizer tree's client-runtime tests and the fuzz tree (each
# fuzz target for 20 s from its committed corpus, fuzz/).
test: setup
	@hack/check-format.sh
	@hack/check-layers.sh
	@$(MAKE) --no-print-directory build
	@hack/run-tests.sh --build-asan

test-unit: build
	@cd build && ctest --output-on-failure -L unit

test-integration: build
	@cd build && ctest --output-on-failure -L integration

# The demo builds only what it runs: two binaries, and the test bed's Go
# families it starts (hack/demo.sh builds those it lacks).
demo:
	@hack/setup.sh --no-testbins
	@$(MAKE) --no-print-directory build TARGETS="caphv-manager caphv-sim"
	@hack/demo.sh

format:
	@git ls-files '*.cc' '*.h' | xargs clang-format -i

lint: build
	@git ls-files 'src/*.cc' 'cmd/*.cc' 'sim/*.cc' | xargs clang-tidy -p build --quiet

clean:
	rm -rf build build-asan build-fuzz build-tsan
