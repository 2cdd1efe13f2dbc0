#!/usr/bin/env bash
# Runs the test suites of both build trees: build/ (every test) and
# build-asan/ (ASan+UBSan; not the `nosan` ones), each on its own bed of the
# Cluster API generation CAPHV_CAPI_REGULAR / CAPHV_CAPI_ASAN names (hack/testbed's
# CAPHV_CAPI): the regular tree on 1.14 (Cluster API v1.14.2, the RKE2 providers
# v0.25.0, contract v1beta2: every scenario, Cluster API's own specs on framework
# v1.13.7, clusterctl init of the release), the ASan tree on 1.10 (v1.10.10 and
# v0.21.1: the seeds' pair, v1.10's specs) when hack/build-testbins.sh built
# v1.14 (it skips it with a message under a Go older than 1.26; both trees then
# run on 1.10). Then four more jobs: the regular tree's two upgrade lanes
# (labels `upgrade_go` and `upgrade_caphv`: the upgrade scenarios, each on a
# bed of its own moved from v1.10 to v1.14, see test/CMakeLists.txt), the
# ThreadSanitizer tree's client-runtime tests (build-tsan/) and the fuzz
# tree's targets (build-fuzz/, clang + libFuzzer, each for 20 s).
#
# Two workers run the jobs with beds of the full stack: one starts with the
# regular tree, the other with the ASan tree, and whichever ends first takes
# the Go provider's upgrade lane (the longer: Cluster API's own specs run on
# its bed), the other the second lane when it ends. Which one ends first
# depends on the caches: warm, the ASan tree's tests (1150-1300 s) end before
# the regular tree's (1720-1930 s), and it takes both lanes; cold, the
# regular tree's tests end first (1622 s on 2026-12-08) and the ASan tree's
# build and tests after them (949 + 1089 s), so the Go provider's lane (591
# s with the specs' cold Go build) ran on the first worker and CAPHV's (231
# s) on the second, to 2270 s; as one lane they would have ended at about
# 2444 s. Two such jobs at a time, each with at most one bed: the
# end-to-end scenarios spend most of their time waiting on controllers, not
# on the CPU (the two cores were 50 % busy on average from 60 to 560 s of a
# warm run on 2026-12-07, 54 % after the third worker's jobs had ended in
# the next), but a third bed at once made every test about 1.6-2x slower,
# longer in all. A third worker runs the TSan tree and then the fuzz tree,
# builds included, on the cycles the other two leave: they used to run after
# both, about 120 s at the end of a warm run with the cores full. The TSan
# tree's build and the fuzz tree run at the lowest CPU priority (nice 19):
# the fuzz targets' 20 s each are wall-clock bounds that a busy machine only
# thins (their slowest input takes well under a second, their time-out is
# 10 s). (12 CPU-minutes of compiles at nice 19 beside the tests of a warm run
# left the ASan tree's tests at 1234 s, against 1296 s in the run before
# without them.) Output lines carry the job's name; each job's full log is
# in <tree>/Testing/run-tests[-upgrade_go|-upgrade_caphv].log; the run ends with the slowest
# scenarios of every tree (hack/slowest-scenarios.sh).
# Exits non-zero when any job fails.
#
# With --build-asan, the ASan tree is built (make build-asan) first, while
# the regular tree's tests already run: on a cold cache the compiler and the
# test beds share the two cores instead of waiting for each other (warm, the
# build is a ccache hit of seconds).
#
#   hack/run-tests.sh [--build-asan]                        three workers
#   CAPHV_TESTS_SERIAL=1 hack/run-tests.sh [--build-asan]   one job after the other
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# run_tree NAME DIR ARGS...: ctest in DIR, every line prefixed with NAME;
# its log in DIR/Testing/run-tests.log (run-tests-NAME.log for an upgrade
# lane, which runs in build/ beside the rest of the regular tree).
run_tree() {
  local name=$1 dir=$2 log=run-tests.log
  shift 2
  case $name in upgrade_*) log=run-tests-$name.log ;; esac
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

# The fuzz tree (clang, libFuzzer): built, then every fuzz target for its
# bounded time (fuzz/CMakeLists.txt).
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
  nice -n 19 make --no-print-directory build-tsan 2>&1 | sed -u "s/^/[tsan-build] /"
  [ "${PIPESTATUS[0]}" -eq 0 ] || return 1
  echo "[tsan-build] built in $((SECONDS - t0)) s"
  run_tree tsan build-tsan --timeout 2700 -j 1 -R '^(unit_kube|integration_kube)$'
}

regular_tree() {
  CAPHV_CAPI=$CAPHV_CAPI_REGULAR run_tree regular build --timeout 2700 -j 1 -LE upgrade
}
upgrade_lane() { run_tree "$1" build --timeout 2700 -j 1 -L "^$1\$"; }

# run_job NAME: one job; its result in $jobs_dir/NAME.rc.
run_job() {
  local rc=0
  case $1 in
  regular) regular_tree || rc=$? ;;
  asan) asan_tree || rc=$? ;;
  upgrade_go | upgrade_caphv) upgrade_lane "$1" || rc=$? ;;
  tsan) tsan_tree || rc=$? ;;
  fuzz) fuzz_tree || rc=$? ;;
  esac
  echo "$rc" >"$jobs_dir/$1.rc"
  echo "tests: job $1 ended (exit $rc) at $(($(date +%s) - start)) s"
}

# The jobs nobody has started, one per line, taken under a lock.
next_job() {
  (
    flock 9
    head -n 1 "$jobs_dir/queue"
    sed -i 1d "$jobs_dir/queue"
  ) 9>"$jobs_dir/lock"
}

worker() {
  local job=$1
  while [ -n "$job" ]; do
    run_job "$job"
    job=$(next_job)
  done
}

# The third worker: the TSan tree, built at nice 19 (cold, beside the ASan
# tree's build, which the ASan worker waits for) and tested at the usual
# priority (its leader-election tests renew 3 s leases, which a starved
# process could miss), then the fuzz tree at nice 19 (every process it
# starts inherits it).
side_worker() {
  run_job tsan
  renice -n 19 -p "$BASHPID" >/dev/null
  run_job fuzz
}

# Each tree's scenario reports (hack/slowest-scenarios.sh) are this run's alone.
rm -rf build/Testing/scenarios build-asan/Testing/scenarios build-tsan/Testing/scenarios
start=$(date +%s)
jobs_dir=$(mktemp -d)
trap 'rm -rf "$jobs_dir"' EXIT
# Taken once a worker's first job ends; the third worker runs tsan, fuzz.
later_jobs=(upgrade_go upgrade_caphv)
all_jobs=(regular asan "${later_jobs[@]}" tsan fuzz)
if [ "${CAPHV_TESTS_SERIAL:-0}" = 1 ]; then
  printf '%s\n' "${later_jobs[@]}" asan tsan fuzz >"$jobs_dir/queue"
  worker regular
else
  printf '%s\n' "${later_jobs[@]}" >"$jobs_dir/queue"
  worker regular &
  first=$!
  worker asan &
  second=$!
  side_worker &
  third=$!
  wait "$first" "$second" "$third" || true
fi
summary="" failed=0
for job in "${all_jobs[@]}"; do
  rc=$(cat "$jobs_dir/$job.rc" 2>/dev/null || echo "not run")
  summary+=" $job $rc,"
  [ "$rc" = 0 ] || failed=1
done
echo "tests: exit codes:${summary%,}; $(($(date +%s) - start)) s" \
  "(logs: build/Testing/run-tests.log, build/Testing/run-tests-upgrade_{go,caphv}.log," \
  "build-asan/Testing/run-tests.log," \
  "build-fuzz/Testing/run-tests.log, build-tsan/Testing/run-tests.log)"
echo "tests: the slowest scenarios (seconds, tree, binary, scenario):"
hack/slowest-scenarios.sh build build-asan build-tsan | sed "s/^/tests: /" || true
[ "$failed" = 0 ]
