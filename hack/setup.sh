#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian bookworm machine: installs the Debian
# packages the build needs; when no Go >= 1.26 is found (PATH, /usr/local/go),
# Debian's golang-go (1.19) and with it the Go toolchain from the Go module
# proxy into $CAPHV_CACHE_DIR/go/ (hack/lib/toolchain.sh); then builds (once,
# cached outside the checkout) the Go test-bed binaries, kubectl included.
# Safe to run repeatedly; does nothing when all is there.
#
#   hack/setup.sh                 all of it (`make test`)
#   hack/setup.sh --no-testbins   packages and Go only (`make demo`: hack/demo.sh
#                                 builds the few test-bed binaries it runs)
set -euo pipefail
cd "$(dirname "$0")/.."
testbins=yes
case "${1:-}" in
  "") ;;
  --no-testbins) testbins=no ;;
  *)
    echo "usage: hack/setup.sh [--no-testbins]" >&2
    exit 2
    ;;
esac

packages=(
  build-essential cmake ninja-build ccache pkg-config clang-format clang-tidy
  libboost1.81-dev libcurl4-openssl-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev zlib1g-dev
  prometheus-cpp-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev prometheus
  openssl curl time procps yq jq ca-certificates buildah tmux
  clang-16 libclang-rt-16-dev llvm
)
# shellcheck source=hack/lib/toolchain.sh
. hack/lib/toolchain.sh

# apt_install PACKAGE...: those not installed yet.
apt_install() {
  local missing=() p sudo_cmd=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  echo "setup: installing Debian packages: ${missing[*]}"
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
apt_install "${packages[@]}"

if ! caphv_use_go; then
  # Debian's Go is too old to build the test bed, but fetches the toolchain module.
  boot=$(command -v go 2>/dev/null || true)
  if [ -z "$boot" ]; then
    apt_install golang-go
    boot=/usr/lib/go/bin/go
  fi
  start=$(date +%s)
  echo "setup: installing Go $CAPHV_GO_VERSION from the Go module proxy (first time only)"
  caphv_install_go "$boot"
  caphv_use_go
  echo "setup: Go $CAPHV_GO_VERSION in $(dirname "$(command -v go)") in $(($(date +%s) - start))s"
fi

[ "$testbins" = yes ] && hack/build-testbins.sh
exit 0
