#!/usr/bin/env bash
# Fails when a tracked C++ file is not formatted as .clang-format says.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h' 2>/dev/null || true)
[ "${#files[@]}" -eq 0 ] && exit 0
if ! clang-format --dry-run -Werror "${files[@]}" 2>/tmp/caphv-format.$$; then
  grep -oE '^[^:]+\.(cc|h)' /tmp/caphv-format.$$ | sort -u | sed 's/^/not formatted: /' >&2
  rm -f /tmp/caphv-format.$$
  echo "run 'make format' to fix" >&2
  exit 1
fi
rm -f /tmp/caphv-format.$$
