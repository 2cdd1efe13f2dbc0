#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian bookworm machine: installs the Debian
# packages the build needs, then builds (once, cached outside the checkout) the
# Go test-bed binaries. Safe to run repeatedly; does nothing when all is there.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build ccache pkg-config clang-format clang-tidy
  libboost1.81-dev libcurl4-openssl-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev
  prometheus-cpp-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev prometheus
  openssl curl time procps yq
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

for tool in go kubectl; do
  command -v "$tool" >/dev/null || { echo "setup: '$tool' is required on PATH (see README)" >&2; exit 1; }
done

hack/build-testbins.sh
