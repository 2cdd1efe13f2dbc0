# shellcheck shell=bash
# The tools the hack scripts need beyond Debian's packages, put first on PATH. Sourced, not run.
#
#   Go >= 1.26 (builds the test bed's binaries): the first that is new enough of `go` on PATH,
#     /usr/local/go/bin/go and $CAPHV_CACHE_DIR/go/go$CAPHV_GO_VERSION/bin/go, the toolchain
#     hack/setup.sh installs from the Go module proxy (module golang.org/toolchain) when there
#     is none (caphv_install_go).
#   kubectl: always $CAPHV_CACHE_DIR/bin/current/kubectl when it is there (hack/build-testbins.sh
#     builds it at the test bed's Kubernetes version), else the one on PATH.

CAPHV_TOOLCHAIN_CACHE=${CAPHV_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/caphv}
# The newest Go 1.26 the module proxy lists (`go list -m -versions golang.org/toolchain`); the
# test bed's wrapper modules (tools/testbins/*/go.mod) need go 1.24, Cluster API v1.14's
# (capi114) go 1.26: with an older Go the 1.14 beds, which make test's regular tree runs on,
# could not be built.
CAPHV_GO_VERSION=1.26.11
CAPHV_GO_MIN_MINOR=26

# caphv_go_ok GO: true when GO runs and is Go 1.CAPHV_GO_MIN_MINOR or newer.
caphv_go_ok() {
  local v minor
  v=$("$1" env GOVERSION 2>/dev/null) || return 1
  [[ $v =~ ^go1\.([0-9]+) ]] || return 1
  minor=${BASH_REMATCH[1]}
  [ "$minor" -ge "$CAPHV_GO_MIN_MINOR" ]
}

# caphv_use_go: puts a new enough go first on PATH; false when there is none.
caphv_use_go() {
  local g
  for g in "$(command -v go 2>/dev/null || true)" /usr/local/go/bin/go \
    "$CAPHV_TOOLCHAIN_CACHE/go/go$CAPHV_GO_VERSION/bin/go"; do
    if [ -n "$g" ] && [ -x "$g" ] && caphv_go_ok "$g"; then
      PATH=$(dirname "$g"):$PATH
      export PATH
      return 0
    fi
  done
  return 1
}

# caphv_use_kubectl: the test bed's kubectl first on PATH when it was built.
caphv_use_kubectl() {
  if [ -x "$CAPHV_TOOLCHAIN_CACHE/bin/current/kubectl" ]; then
    PATH=$CAPHV_TOOLCHAIN_CACHE/bin/current:$PATH
    export PATH
  fi
}

# caphv_install_go BOOTSTRAP_GO: Go $CAPHV_GO_VERSION into $CAPHV_TOOLCHAIN_CACHE/go/, from the
# module golang.org/toolchain (what GOTOOLCHAIN downloads) fetched by BOOTSTRAP_GO (any Go that
# has `go mod download`, e.g. Debian's 1.19). Module zips keep no file modes: bin/ and
# pkg/tool/ are made executable again.
caphv_install_go() {
  local boot=$1 arch dir mod work src
  case $(uname -m) in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; *) arch=$(uname -m) ;; esac
  dir=$CAPHV_TOOLCHAIN_CACHE/go/go$CAPHV_GO_VERSION
  mod=golang.org/toolchain@v0.0.1-go$CAPHV_GO_VERSION.linux-$arch
  [ -x "$dir/bin/go" ] && return 0
  mkdir -p "$CAPHV_TOOLCHAIN_CACHE/go"
  work=$(mktemp -d)
  src=$(cd "$work" && GO111MODULE=on GOFLAGS= GOTOOLCHAIN=local "$boot" mod download -json "$mod" |
    sed -n 's/.*"Dir": "\(.*\)".*/\1/p') || true
  rmdir "$work"
  [ -n "$src" ] && [ -f "$src/bin/go" ] || {
    echo "toolchain: downloading $mod with $boot failed" >&2
    return 1
  }
  rm -rf "$dir.tmp"
  cp -r "$src" "$dir.tmp"
  chmod -R u+w "$dir.tmp"
  chmod +x "$dir.tmp"/bin/* "$dir.tmp"/pkg/tool/*/*
  mv "$dir.tmp" "$dir"
  caphv_go_ok "$dir/bin/go" || {
    echo "toolchain: $dir/bin/go does not run" >&2
    return 1
  }
}
