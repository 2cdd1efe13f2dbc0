#!/usr/bin/env bash
# Prints the slowest integration scenarios of the given build trees, from the
# GoogleTest XML reports their integration binaries write to
# <tree>/Testing/scenarios/ (test/CMakeLists.txt): one line each, slowest
# first, with the tree and the binary. Where the warm `make test` spends its
# time, so that a lane that outgrows its budget shows which scenario grew.
#
#   hack/slowest-scenarios.sh [-n COUNT] TREE...      (COUNT defaults to 15)
set -euo pipefail
count=15
if [ "${1:-}" = -n ]; then
  count=$2
  shift 2
fi
for tree in "$@"; do
  for report in "$tree"/Testing/scenarios/*.xml; do
    [ -f "$report" ] || continue
    binary=$(basename "$report" .xml)
    grep -o '<testcase [^>]*>' "$report" |
      sed -n 's/.* name="\([^"]*\)".* time="\([0-9.]*\)".* classname="\([^"]*\)".*/\2 \3.\1/p' |
      while read -r seconds scenario; do
        printf '%8.1f s  %-10s %-24s %s\n' "$seconds" "$(basename "$tree")" "$binary" "$scenario"
      done
  done
done | sort -rn | awk -v n="$count" 'NR <= n'
