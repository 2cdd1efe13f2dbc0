#!/usr/bin/env bash
# Runs the test suites of both build trees: build/ (every test) and
# build-asan/ (ASan+UBSan; not the `nosan` ones). Each tree has its own test
# bed, so by default both run at the same time: the end-to-end scenarios
# spend most of their time waiting on controllers, not on the CPU. Output
# lines carry the tree's name; each tree's full log is in
# <tree>/Testing/run-tests.log. Exits non-zero when either tree fails.
#
#   hack/run-tests.sh            both trees at once
#   CAPHV_TESTS_SERIAL=1 hack/run-tests.sh   one after the other
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# run_tree NAME DIR ARGS...: ctest in DIR, every line prefixed with NAME.
run_tree() {
  local name=$1 dir=$2
  shift 2
  mkdir -p "$dir/Testing"
  (cd "$dir" && ctest --output-on-failure "$@") 2>&1 | tee "$dir/Testing/run-tests.log" |
    sed -u "s/^/[$name] /"
  return "${PIPESTATUS[0]}"
}

start=$(date +%s)
rc_regular=0 rc_asan=0
if [ "${CAPHV_TESTS_SERIAL:-0}" = 1 ]; then
  run_tree regular build --timeout 900 -j 1 || rc_regular=$?
  run_tree asan build-asan --timeout 1200 -j 1 -LE nosan || rc_asan=$?
else
  run_tree regular build --timeout 900 -j 1 &
  regular=$!
  run_tree asan build-asan --timeout 1200 -j 1 -LE nosan &
  asan=$!
  wait "$regular" || rc_regular=$?
  wait "$asan" || rc_asan=$?
fi
echo "tests: regular exit $rc_regular, asan exit $rc_asan, $(($(date +%s) - start)) s" \
  "(logs: build/Testing/run-tests.log, build-asan/Testing/run-tests.log)"
[ "$rc_regular" -eq 0 ] && [ "$rc_asan" -eq 0 ]
