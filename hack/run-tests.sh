#!/usr/bin/env bash
# Runs the test suites of both build trees: build/ (every test) and
# build-asan/ (ASan+UBSan; not the `nosan` ones), each on its own bed of the
# Cluster API generation CAPHV_CAPI_REGULAR / CAPHV_CAPI_ASAN names (hack/testbed's
# CAPHV_CAPI): the regular tree on 1.14 (Cluster API v1.14.2, the RKE2 providers
# v0.25.0, contract v1beta2: every scenario, Cluster API's own specs on framework
# v1.13.7, clusterctl init of the release), the ASan tree on 1.10 (v1.10.10 and
# v0.21.1: the seeds' pair, v1.10's specs) when hack/build-testbins.sh built
# v1.14 (it skips it with a message under a Go older than 1.26; both trees then
# run on 1.10). The regular tree's upgrade lane (label `upgrade`: the upgrade
# scenarios on beds of their own, each moved from v1.10 to v1.14, see
# test/CMakeLists.txt) runs after the ASan tree, then the fuzz tree's targets
# (build-fuzz/, clang + libFuzzer, each for 20 s); the rest of the regular
# tree, then the ThreadSanitizer tree's client-runtime tests (build-tsan/),
# beside them. Each tree has its own test
# bed, so by default both run at the same time: the end-to-end scenarios
# spend most of their time waiting on controllers, not on the CPU. (A third
# lane at once was tried: the two cores were 93 % busy and every test about
# 1.6-2x slower, longer in all.) Output lines carry the tree's name; each
# tree's full log is in <tree>/Testing/run-tests.log; the run ends with the
# slowest scenarios of every tree (hack/slowest-scenarios.sh). Exits
# non-zero when either tree fails.
#
# With --build-asan, the ASan tree is built (make build-asan) first, while
# the regular tree's tests already run: on a cold cache the compiler and the
# test beds share the two cores instead of waiting for each other (warm, the
# build is a ccache hit of seconds).
#
#   hack/run-tests.sh [--build-asan]                        both trees at once
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
rc_regular=0 rc_asan=0
if [ "${CAPHV_TESTS_SERIAL:-0}" = 1 ]; then
  CAPHV_CAPI=$CAPHV_CAPI_REGULAR run_tree regular build --timeout 2700 -j 1 -LE upgrade ||
    rc_regular=$?
  fuzz_tree || rc_regular=$?
  tsan_tree || rc_regular=$?
  asan_tree || rc_asan=$?
  run_tree upgrade build --timeout 2700 -j 1 -L upgrade || rc_asan=$?
else
  # Two branches of about equal length (measured warm: the regular tree's
  # tests 1830-1930 s, then TSan's 115 s; the ASan tree's about 1250 s, the
  # upgrade lane's about 570 s, fuzz 105 s): the regular tree's bed, then
  # TSan; the ASan tree, then the regular tree's upgrade lane (its own beds,
  # test/CMakeLists.txt), then fuzz. Two beds at a time: more overload two
  # cores.
  { rc=0; CAPHV_CAPI=$CAPHV_CAPI_REGULAR run_tree regular build --timeout 2700 -j 1 -LE upgrade ||
      rc=$?
    tsan_tree || rc=1; exit "$rc"; } &
  regular=$!
  { rc=0; asan_tree || rc=$?; run_tree upgrade build --timeout 2700 -j 1 -L upgrade || rc=1
    fuzz_tree || rc=1; exit "$rc"; } &
  asan=$!
  wait "$regular" || rc_regular=$?
  wait "$asan" || rc_asan=$?
fi
echo "tests: regular+tsan exit $rc_regular, asan+upgrade+fuzz exit $rc_asan, $(($(date +%s) - start)) s" \
  "(logs: build/Testing/run-tests.log, build/Testing/run-tests-upgrade.log," \
  "build-asan/Testing/run-tests.log," \
  "build-fuzz/Testing/run-tests.log, build-tsan/Testing/run-tests.log)"
echo "tests: the slowest scenarios (seconds, tree, binary, scenario):"
hack/slowest-scenarios.sh build build-asan build-tsan | sed "s/^/tests: /" || true
[ "$rc_regular" -eq 0 ] && [ "$rc_asan" -eq 0 ]
