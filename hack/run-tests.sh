#!/usr/bin/env bash
# Runs the test suites of the build trees, three lanes at a time, each on test
# beds of its own:
#   regular   build/ (every test but the upgrade lane's) on a bed of the
#             Cluster API generation CAPHV_CAPI_REGULAR names (hack/testbed's
#             CAPHV_CAPI): 1.14 (Cluster API v1.14.2, the RKE2 providers
#             v0.25.0, contract v1beta2: every scenario, Cluster API's own
#             specs on framework v1.13.7, clusterctl init of the release);
#   asan      build-asan/ (ASan+UBSan; not the `nosan` tests) on a bed of
#             CAPHV_CAPI_ASAN: 1.10 (v1.10.10 and v0.21.1: the seeds' pair,
#             v1.10's specs), then the fuzz tree's targets (build-fuzz/,
#             clang + libFuzzer, each for 30 s);
#   upgrade   the ThreadSanitizer tree's client-runtime tests (build-tsan/),
#             then the regular tree's upgrade lane (label `upgrade`: the
#             upgrade scenarios on beds of their own, each moved from v1.10 to
#             v1.14, with the tests that need a bed but not its generation;
#             see test/CMakeLists.txt).
# When hack/build-testbins.sh did not build v1.14 (it skips it with a
# message under a Go older than 1.26) every bed runs 1.10. The end-to-end
# scenarios spend most of their time waiting on controllers, not on the CPU,
# so three lanes share two cores (hack/slowest-scenarios.sh prints where the
# time went). Output lines carry the lane's name; each tree's full log is in
# <tree>/Testing/run-tests.log. Exits non-zero when any lane fails.
#
# With --build-asan, the ASan tree is built (make build-asan) first, while
# the other lanes' tests already run: on a cold cache the compiler and the
# test beds share the two cores instead of waiting for each other (warm, the
# build is a ccache hit of seconds).
#
#   hack/run-tests.sh [--build-asan]                        three lanes at once
#   CAPHV_TESTS_SERIAL=1 hack/run-tests.sh [--build-asan]   one after the other
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# run_tree NAME DIR ARGS...: ctest in DIR, every line prefixed with NAME;
# its log in DIR/Testing/run-tests.log (run-tests-NAME.log for the upgrade
# lane, which runs in build/ beside the rest of the regular tree).
run_tree() {
  local name=$1 dir=$2 log=run-tests.log
  shift 2
  [ "$name" = upgrade ] && log=run-tests-upgrade.log
  mkdir -p "$dir/Testing"
  (cd "$dir" && ctest --output-on-failure "$@") 2>&1 | tee "$dir/Testing/$log" |
    sed -u "s/^/[$name] /"
  return "${PIPESTATUS[0]}"
}

build_asan=0
cache=${CAPHV_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/caphv}
if [ -z "${CAPHV_CAPI_REGULAR:-}" ]; then
  if [ -x "$cache/bin/capi-1.14/cluster-api" ] && [ -x "$cache/bin/capi-1.14/rke2-controlplane" ]; then
    CAPHV_CAPI_REGULAR=1.14
  else
    CAPHV_CAPI_REGULAR=1.10
    echo "tests: Cluster API v1.14 is not built (hack/build-testbins.sh capi114 rke2-025):" \
      "the regular tree's bed runs v1.10 too"
  fi
fi
CAPHV_CAPI_ASAN=${CAPHV_CAPI_ASAN:-1.10}
echo "tests: the regular tree on Cluster API $CAPHV_CAPI_REGULAR, the ASan tree on $CAPHV_CAPI_ASAN"
[ "${1:-}" = --build-asan ] && build_asan=1

# The ASan tree: built first when asked (its compiler output prefixed too).
asan_tree() {
  if [ "$build_asan" = 1 ]; then
    local t0=$SECONDS
    make --no-print-directory build-asan 2>&1 | sed -u "s/^/[asan-build] /"
    [ "${PIPESTATUS[0]}" -eq 0 ] || return 1
    echo "[asan-build] built in $((SECONDS - t0)) s"
  fi
  CAPHV_CAPI=$CAPHV_CAPI_ASAN run_tree asan build-asan --timeout 2700 -j 1 -LE nosan
}

# The fuzz tree (clang, libFuzzer): built after the upgrade lane, then
# every fuzz target for its bounded time (fuzz/CMakeLists.txt).
fuzz_tree() {
  local t0=$SECONDS
  make --no-print-directory build-fuzz 2>&1 | sed -u "s/^/[fuzz-build] /"
  [ "${PIPESTATUS[0]}" -eq 0 ] || return 1
  echo "[fuzz-build] built in $((SECONDS - t0)) s"
  run_tree fuzz build-fuzz --timeout 300 -j 1 -L fuzz
}

# The ThreadSanitizer tree: the client runtime's unit and integration tests
# (unit_kube, integration_kube; its bed is plain apiservers).
tsan_tree() {
  local t0=$SECONDS
  make --no-print-directory build-tsan 2>&1 | sed -u "s/^/[tsan-build] /"
  [ "${PIPESTATUS[0]}" -eq 0 ] || return 1
  echo "[tsan-build] built in $((SECONDS - t0)) s"
  run_tree tsan build-tsan --timeout 2700 -j 1 -R '^(unit_kube|integration_kube)$'
}

# Each tree's scenario reports (hack/slowest-scenarios.sh) are this run's alone.
rm -rf build/Testing/scenarios build-asan/Testing/scenarios build-tsan/Testing/scenarios
start=$(date +%s)
rc_regular=0 rc_asan=0 rc_upgrade=0
if [ "${CAPHV_TESTS_SERIAL:-0}" = 1 ]; then
  CAPHV_CAPI=$CAPHV_CAPI_REGULAR run_tree regular build --timeout 2700 -j 1 -LE upgrade ||
    rc_regular=$?
  asan_tree || rc_asan=$?
  fuzz_tree || rc_asan=$?
  tsan_tree || rc_upgrade=$?
  run_tree upgrade build --timeout 2700 -j 1 -L upgrade || rc_upgrade=$?
else
  # Measured warm (hack/slowest-scenarios.sh): the regular lane about 1600 s,
  # the ASan tree about 1300 s and the fuzz targets 160 s, the upgrade lane
  # about 1000 s after TSan's 120 s.
  { rc=0; CAPHV_CAPI=$CAPHV_CAPI_REGULAR run_tree regular build --timeout 2700 -j 1 -LE upgrade ||
      rc=$?
    exit "$rc"; } &
  regular=$!
  { rc=0; asan_tree || rc=$?; fuzz_tree || rc=1; exit "$rc"; } &
  asan=$!
  # hack/testbed picks free ports at random, and beds that start together
  # could both pick one before either binds it: this lane starts 45 s after
  # the regular tree's bed (up in about 15 s; the ASan tree's starts after
  # its build), with TSan's bed of plain apiservers, and the upgrade lane's
  # beds come after TSan's tests. The lane is the shortest of the three.
  { rc=0; sleep 45; tsan_tree || rc=$?
    run_tree upgrade build --timeout 2700 -j 1 -L upgrade || rc=1; exit "$rc"; } &
  upgrade=$!
  wait "$regular" || rc_regular=$?
  wait "$asan" || rc_asan=$?
  wait "$upgrade" || rc_upgrade=$?
fi
echo "tests: regular exit $rc_regular, asan+fuzz exit $rc_asan, tsan+upgrade exit $rc_upgrade," \
  "$(($(date +%s) - start)) s" \
  "(logs: build/Testing/run-tests.log, build/Testing/run-tests-upgrade.log," \
  "build-asan/Testing/run-tests.log," \
  "build-fuzz/Testing/run-tests.log, build-tsan/Testing/run-tests.log)"
echo "tests: the slowest scenarios (seconds, tree, binary, scenario):"
hack/slowest-scenarios.sh build build-asan build-tsan | sed "s/^/tests: /" || true
[ "$rc_regular" -eq 0 ] && [ "$rc_asan" -eq 0 ] && [ "$rc_upgrade" -eq 0 ]
