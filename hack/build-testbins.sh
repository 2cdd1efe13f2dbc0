#!/usr/bin/env bash
# Builds the test bed's Go binaries from the Go module proxy, once, into
# $CAPHV_CACHE_DIR/bin/<family>-<version>-<go.sum digest>/. The wrapper modules
# live in tools/testbins/<family>/ (go.mod + go.sum only; kubevirt-crds also has its generator,
# main.go).
#
#   kube: kube-apiserver, kube-controller-manager  (k8s.io/kubernetes)
#         and kubectl, same version, from its own wrapper module tools/testbins/kubectl/ so
#         that adding it did not change the servers' cache key
#   helm: helm                                      (helm.sh/helm/v3)
#   etcd: etcd                                      (go.etcd.io/etcd/server/v3)
#   capi: cluster-api (core manager), clusterctl    (sigs.k8s.io/cluster-api)
#   capi114: cluster-api, clusterctl of Cluster API CAPI_114_VERSION (v1.14, contract v1beta2;
#         the manager is the package .../core, its manifests core/config/{crd,webhook} in
#         config/), linked from $CAPHV_CACHE_DIR/bin/capi-1.14/{cluster-api,clusterctl,config}.
#         In the defaults; skipped with a message there when the Go found is older than 1.26.
#   caphv-go: caphv-go, the Go provider CAPHV replaces (cluster-api-provider-harvester),
#         built from its release tarball in $CAPHV_THIRD_PARTY (default: ../shared/third_party
#         next to the checkout) into $CAPHV_CACHE_DIR/bin/caphv-go-<version>-<tarball digest>/,
#         with config/{crd/bases,infrastructure-components.yaml,crds.yaml}. Skipped, with one
#         message, when the tarball is absent.
#   rke2: rke2-bootstrap, rke2-controlplane, the RKE2 bootstrap and control-plane providers
#         (cluster-api-provider-rke2), built from the release tarball in $CAPHV_THIRD_PARTY into
#         $CAPHV_CACHE_DIR/bin/rke2-<version>-<tarball digest>/, with their kustomize trees in
#         config/{bootstrap,controlplane}. Skipped, with one message, when the tarball is absent
#         (the test bed's `up --with-rke2=if-built` then starts without them).
#   rke2-025: the same for RKE2_025_VERSION (v0.25, built on Cluster API v1.13, contract
#         v1beta2; with the replace of third_party/README.md), into rke2-<version>-<digest>/,
#         linked from $CAPHV_CACHE_DIR/bin/capi-1.14/{rke2-bootstrap,rke2-controlplane,rke2-config}.
#         In the defaults; skipped with a message there when the Go found is older than 1.25.
#   cert-manager: no binary; cert-manager's CRDs (deploy/crds/ of the module
#         github.com/cert-manager/cert-manager, rendered as its static install renders them) in
#         crds/, for the install test that applies the Go provider's Issuer and Certificate.
#   capi-e2e: capi-e2e.test, the compiled Go suite of test/capi-e2e/ (Cluster API's own e2e
#         specs, module sigs.k8s.io/cluster-api/test at CAPI_VERSION, run against the bed by
#         hack/capi-e2e.sh), `go test -c` into $CAPHV_CACHE_DIR/bin/capi-e2e-<version>-<digest>/,
#         the digest over the suite's go.mod, go.sum and *.go (its data/ and config/ are read
#         from the checkout at run time). Not in the default families: the ctest test capi_e2e
#         builds it on its first run (hack/capi-e2e.sh).
#   capi-e2e-v1beta2: the same for the suite of the 1.14 beds, test/capi-e2e/v1beta2/ (the
#         framework CAPI_E2E_V1BETA2_VERSION, v1.13.7, contract v1beta2; it shares the suite's
#         setup and specs through symbolic links), linked from
#         $CAPHV_CACHE_DIR/bin/capi-1.14/capi-e2e.test. Needs Go >= 1.25.
#   prometheus-operator: no binary; the ServiceMonitor and PrometheusRule CRDs (module
#         github.com/prometheus-operator/prometheus-operator, example/prometheus-operator-crd/)
#         in crds/, so that the test bed accepts the release's ServiceMonitor.
#   kubevirt-crds: no binary; KubeVirt's VirtualMachine and VirtualMachineInstance CRDs as
#         virt-operator registers them, their schemas from the module kubevirt.io/kubevirt
#         (CRDsValidation of pkg/virt-operator/resource/generate/components/
#         validations_generated.go), written by tools/testbins/kubevirt-crds/main.go into
#         $CAPHV_CACHE_DIR/bin/kubevirt-crds-<version>-<digest of go.mod, go.sum, main.go>/crds/;
#         the test bed's `caphv-sim install --kubevirt-crds` applies them instead of the
#         simulator's embedded structural subsets.
#
# Go: the first Go >= 1.26 of hack/lib/toolchain.sh (PATH, /usr/local/go, the toolchain
# hack/setup.sh installs into $CAPHV_CACHE_DIR/go/). capi114 needs Go >= 1.26, rke2-025
# Go >= 1.25.10 (their modules' go lines; GOTOOLCHAIN=local).
#
# Prints nothing when everything is cached. Usage: build-testbins.sh [family...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CAPHV_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/caphv}
mkdir -p "$cache/bin"
# shellcheck source=hack/lib/toolchain.sh
. "$root/hack/lib/toolchain.sh"
have_go=1
caphv_use_go || have_go=0
# require_go: before anything that runs go (nothing does when everything is cached).
require_go() {
  [ "$have_go" = 1 ] && return 0
  echo "testbins: no Go >= 1.$CAPHV_GO_MIN_MINOR (on PATH, in /usr/local/go or $cache/go); run hack/setup.sh" >&2
  exit 1
}
# go_at_least MINOR FAMILY: true when the Go found is 1.MINOR or newer (or when nothing needs
# building: the family's binaries are cached). Otherwise a family of the defaults is skipped
# with one message (the ASan tree's bed then stays on Cluster API v1.10, hack/run-tests.sh),
# and a family asked for by name fails.
go_at_least() {
  local v minor
  v=$(go env GOVERSION 2>/dev/null) || v=none
  [[ $v =~ ^go1\.([0-9]+) ]] && minor=${BASH_REMATCH[1]} || minor=0
  [ "$minor" -ge "$1" ] && return 0
  echo "testbins: $2 needs Go >= 1.$1 (found $v)" >&2
  [ "$defaults" = 1 ] && return 1
  exit 1
}
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly

KUBE_VERSION=v1.33.13
ETCD_VERSION=v3.5.21
CAPI_VERSION=v1.10.10
CAPI_114_VERSION=v1.14.2
# Cluster API's e2e framework for the 1.14 beds: the module proxy serves no v1.14.x of
# sigs.k8s.io/cluster-api/test (its packages are missing), and v1.13.7 (on core v1.13.2).
CAPI_E2E_V1BETA2_VERSION=v1.13.7
CAPHV_GO_VERSION=v0.2.9
CERT_MANAGER_VERSION=v1.18.2
HELM_VERSION=v3.19.5
PROMETHEUS_OPERATOR_VERSION=v0.85.0
KWOK_VERSION=v0.7.0
KUBEVIRT_VERSION=v1.6.0
third_party=${CAPHV_THIRD_PARTY:-$root/../shared/third_party}
caphv_go_tarball=$third_party/cluster-api-provider-harvester-$CAPHV_GO_VERSION.tar.gz
RKE2_VERSION=v0.21.1
RKE2_025_VERSION=v0.25.0

# bin_dir FAMILY VERSION -> cache folder keyed by version and go.sum content.
bin_dir() {
  local digest
  digest=$(cat "$root/tools/testbins/$1/go.mod" "$root/tools/testbins/$1/go.sum" | sha256sum | cut -c1-12)
  echo "$cache/bin/$1-$2-$digest"
}

# capi_e2e_dir SUITE VERSION -> cache folder keyed by the framework's version and the suite's
# module and sources (SUITE: test/capi-e2e or test/capi-e2e/v1beta2).
capi_e2e_dir() {
  local digest
  digest=$(cd "$root/$1" && LC_ALL=C && cat go.mod go.sum ./*.go | sha256sum | cut -c1-12)
  echo "$cache/bin/capi-e2e-$2-$digest"
}

# build_capi_e2e SUITE VERSION: the suite's module must require the framework release named
# (the specs are that release's).
build_capi_e2e() {
  local suite=$1 version=$2 dir start
  dir=$(capi_e2e_dir "$suite" "$version")
  [ -x "$dir/capi-e2e.test" ] && return 0
  grep -q "sigs.k8s.io/cluster-api/test $version\$" "$root/$suite/go.mod" || {
    echo "testbins: $suite/go.mod does not require sigs.k8s.io/cluster-api/test $version" >&2
    exit 1
  }
  require_go
  mkdir -p "$dir"
  (
    flock 9
    [ -x "$dir/capi-e2e.test" ] && exit 0
    start=$(date +%s)
    echo "testbins: building capi-e2e.test $version (first time only; cached in $dir)" >&2
    if ! (cd "$root/$suite" &&
      go test -c -trimpath -ldflags "-s -w" -o "$dir/capi-e2e.test.tmp" .) >"$dir/capi-e2e.build.log" 2>&1; then
      echo "testbins: building capi-e2e.test failed; see $dir/capi-e2e.build.log" >&2
      tail -n 20 "$dir/capi-e2e.build.log" >&2
      exit 1
    fi
    mv "$dir/capi-e2e.test.tmp" "$dir/capi-e2e.test"
    echo "testbins: built capi-e2e.test $version in $(( $(date +%s) - start ))s" >&2
  ) 9>"$dir/.lock"
}

# caphv_go_dir -> cache folder keyed by version and the tarball's content.
caphv_go_dir() {
  echo "$cache/bin/caphv-go-$CAPHV_GO_VERSION-$(sha256sum "$caphv_go_tarball" | cut -c1-12)"
}

# Unpacks the Go provider's tarball and builds it with the replace of third_party/README.md:
# the proxy serves no zip of harvester-load-balancer v1.5.1; v1.5.0's pkg/apis is the same.
# Next to the binary: config/crd/bases (upstream's CRDs as generated), the rendered
# config/infrastructure-components.yaml, and config/crds.yaml, the CRDs of that file (with
# the Cluster API contract labels a clusterctl install carries), which the test bed applies.
build_caphv_go() {
  local dir start src top="cluster-api-provider-harvester-$CAPHV_GO_VERSION"
  dir=$(caphv_go_dir)
  [ -x "$dir/caphv-go" ] && [ -f "$dir/config/crds.yaml" ] && return 0
  require_go
  mkdir -p "$dir"
  (
    flock 9
    if [ ! -f "$dir/config/crds.yaml" ]; then
      rm -rf "$dir/config.tmp"
      mkdir -p "$dir/config.tmp"
      tar -xzf "$caphv_go_tarball" -C "$dir/config.tmp" --strip-components=1 \
        "$top/config/crd/bases" "$top/infrastructure-components.yaml"
      mv "$dir/config.tmp/config/crd" "$dir/config.tmp/crd"
      rmdir "$dir/config.tmp/config"
      awk 'BEGIN { RS = "\n---\n" } /(^|\n)kind: CustomResourceDefinition\n/ { printf "---\n%s\n", $0 }' \
        "$dir/config.tmp/infrastructure-components.yaml" >"$dir/config.tmp/crds.yaml"
      [ "$(grep -c '^kind: CustomResourceDefinition' "$dir/config.tmp/crds.yaml")" -eq 4 ] || {
        echo "testbins: caphv-go: expected 4 CRDs in infrastructure-components.yaml" >&2
        exit 1
      }
      rm -rf "$dir/config"
      mv "$dir/config.tmp" "$dir/config"
    fi
    [ -x "$dir/caphv-go" ] && exit 0
    start=$(date +%s)
    echo "testbins: building caphv-go $CAPHV_GO_VERSION (first time only; cached in $dir)" >&2
    src=$dir/src
    rm -rf "$src"
    mkdir -p "$src"
    tar -xzf "$caphv_go_tarball" -C "$src" --strip-components=1
    if ! (
      cd "$src"
      go mod edit -replace github.com/harvester/harvester-load-balancer=github.com/harvester/harvester-load-balancer@v1.5.0
      GONOSUMDB=github.com/harvester/harvester-load-balancer GOFLAGS=-mod=mod \
        go build -trimpath -ldflags "-s -w" -o "$dir/caphv-go.tmp" ./cmd
    ) >"$dir/caphv-go.build.log" 2>&1; then
      echo "testbins: building caphv-go failed; see $dir/caphv-go.build.log" >&2
      tail -n 20 "$dir/caphv-go.build.log" >&2
      exit 1
    fi
    mv "$dir/caphv-go.tmp" "$dir/caphv-go"
    rm -rf "$src"
    echo "testbins: built caphv-go in $(( $(date +%s) - start ))s" >&2
  ) 9>"$dir/.lock"
}

# rke2_tarball VERSION -> the RKE2 providers' release tarball in $CAPHV_THIRD_PARTY.
rke2_tarball() {
  echo "$third_party/cluster-api-provider-rke2-$1.tar.gz"
}

# rke2_dir VERSION -> cache folder keyed by version and the tarball's content.
rke2_dir() {
  echo "$cache/bin/rke2-$1-$(sha256sum "$(rke2_tarball "$1")" | cut -c1-12)"
}

# build_rke2 VERSION [MODULE=REPLACEMENT...]: unpacks the RKE2 providers' tarball, applies the
# replaces (`go mod edit -replace`; v0.21.1 needs none), and builds both managers, their
# dependencies from the module proxy. Next to the binaries: config/bootstrap and
# config/controlplane, the projects' kustomize trees (CRDs, RBAC, webhooks).
build_rke2() {
  local version=$1 dir start src r tarball
  shift
  tarball=$(rke2_tarball "$version")
  dir=$(rke2_dir "$version")
  [ -x "$dir/rke2-bootstrap" ] && [ -x "$dir/rke2-controlplane" ] && [ -d "$dir/config" ] && return 0
  require_go
  mkdir -p "$dir"
  (
    flock 9
    [ -x "$dir/rke2-bootstrap" ] && [ -x "$dir/rke2-controlplane" ] && [ -d "$dir/config" ] && exit 0
    start=$(date +%s)
    echo "testbins: building the RKE2 providers $version (first time only; cached in $dir)" >&2
    src=$dir/src
    rm -rf "$src" "$dir/config.tmp"
    mkdir -p "$src" "$dir/config.tmp"
    tar -xzf "$tarball" -C "$src" --strip-components=1
    if ! (
      cd "$src"
      for r in "$@"; do go mod edit -replace "$r"; done
      GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$dir/rke2-bootstrap.tmp" ./bootstrap
      GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$dir/rke2-controlplane.tmp" ./controlplane
    ) >"$dir/rke2.build.log" 2>&1; then
      echo "testbins: building the RKE2 providers failed; see $dir/rke2.build.log" >&2
      tail -n 20 "$dir/rke2.build.log" >&2
      exit 1
    fi
    cp -r "$src/bootstrap/config" "$dir/config.tmp/bootstrap"
    cp -r "$src/controlplane/config" "$dir/config.tmp/controlplane"
    mv "$dir/rke2-bootstrap.tmp" "$dir/rke2-bootstrap"
    mv "$dir/rke2-controlplane.tmp" "$dir/rke2-controlplane"
    rm -rf "$dir/config"
    mv "$dir/config.tmp" "$dir/config"
    rm -rf "$src"
    echo "testbins: built the RKE2 providers in $(( $(date +%s) - start ))s" >&2
  ) 9>"$dir/.lock"
}

# rke2_family FAMILY VERSION LINKS [MODULE=REPLACEMENT...]: build_rke2, then the stable links
# LINKS/{rke2-bootstrap,rke2-controlplane,rke2-config}; one message when the tarball is absent.
rke2_family() {
  local family=$1 version=$2 links=$3 dir
  shift 3
  if [ ! -f "$(rke2_tarball "$version")" ]; then
    echo "testbins: skipping $family: $(rke2_tarball "$version") not found (set CAPHV_THIRD_PARTY)" >&2
    return 0
  fi
  build_rke2 "$version" "$@"
  dir=$(rke2_dir "$version")
  mkdir -p "$links"
  ln -sfn "$dir/rke2-bootstrap" "$links/rke2-bootstrap"
  ln -sfn "$dir/rke2-controlplane" "$links/rke2-controlplane"
  ln -sfn "$dir/config" "$links/rke2-config"
}

# cert-manager's CRDs from its module's deploy/crds/, verified against the wrapper module's
# go.sum. Those files are the Helm chart's CRD templates: the template expressions sit in YAML
# comments, except three label values, which get the values of cert-manager's static install
# (release and chart name "cert-manager"); anything else left of a template fails the build.
fetch_cert_manager_crds() {
  local dir src f out
  dir=$(bin_dir cert-manager "$CERT_MANAGER_VERSION")
  [ -d "$dir/crds" ] && return 0
  require_go
  mkdir -p "$dir"
  (
    flock 9
    [ -d "$dir/crds" ] && exit 0
    src=$(cd "$root/tools/testbins/cert-manager" &&
      go mod download -json "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION" |
      sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    [ -d "$src/deploy/crds" ] || {
      echo "testbins: cert-manager $CERT_MANAGER_VERSION: no deploy/crds in the module" >&2
      exit 1
    }
    rm -rf "$dir/crds.tmp"
    mkdir -p "$dir/crds.tmp"
    for f in "$src"/deploy/crds/crd-*.yaml; do
      out="$dir/crds.tmp/$(basename "$f")"
      sed -e "s/'{{ template \"cert-manager.name\" . }}'/cert-manager/" \
        -e "s/'{{ .Release.Name }}'/cert-manager/" "$f" >"$out"
      if grep -v '^ *#' "$out" | grep -q '{{'; then
        echo "testbins: cert-manager $CERT_MANAGER_VERSION: unrendered template in $(basename "$f")" >&2
        exit 1
      fi
    done
    mv "$dir/crds.tmp" "$dir/crds"
  ) 9>"$dir/.lock"
}

# The prometheus-operator CRDs the release's manifests use, verified against the wrapper
# module's go.sum.
fetch_prometheus_operator_crds() {
  local dir src kind
  dir=$(bin_dir prometheus-operator "$PROMETHEUS_OPERATOR_VERSION")
  [ -d "$dir/crds" ] && return 0
  require_go
  mkdir -p "$dir"
  (
    flock 9
    [ -d "$dir/crds" ] && exit 0
    src=$(cd "$root/tools/testbins/prometheus-operator" &&
      go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION" |
      sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    rm -rf "$dir/crds.tmp"
    mkdir -p "$dir/crds.tmp"
    for kind in servicemonitors prometheusrules; do
      cp "$src/example/prometheus-operator-crd/monitoring.coreos.com_$kind.yaml" "$dir/crds.tmp/"
    done
    chmod -R u+w "$dir/crds.tmp"
    mv "$dir/crds.tmp" "$dir/crds"
  ) 9>"$dir/.lock"
}

# kubevirt_crds_dir -> cache folder keyed by the KubeVirt version and the generator's module and
# source.
kubevirt_crds_dir() {
  local digest
  digest=$(cd "$root/tools/testbins/kubevirt-crds" && cat go.mod go.sum main.go | sha256sum | cut -c1-12)
  echo "$cache/bin/kubevirt-crds-$KUBEVIRT_VERSION-$digest"
}

# KubeVirt publishes no CRD YAML: virt-operator builds the CRDs in code and takes their schemas
# from raw YAML strings in its source. tools/testbins/kubevirt-crds/main.go reads those of the
# module (downloaded and verified against the wrapper module's go.sum; nothing of it is built)
# and writes the VirtualMachine and VirtualMachineInstance CRDs.
fetch_kubevirt_crds() {
  local dir src
  dir=$(kubevirt_crds_dir)
  [ -d "$dir/crds" ] && return 0
  grep -q "kubevirt.io/kubevirt $KUBEVIRT_VERSION\$" "$root/tools/testbins/kubevirt-crds/go.mod" || {
    echo "testbins: tools/testbins/kubevirt-crds/go.mod does not require kubevirt.io/kubevirt $KUBEVIRT_VERSION" >&2
    exit 1
  }
  require_go
  mkdir -p "$dir"
  (
    flock 9
    [ -d "$dir/crds" ] && exit 0
    cd "$root/tools/testbins/kubevirt-crds"
    src=$(go mod download -json "kubevirt.io/kubevirt@$KUBEVIRT_VERSION" |
      sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    [ -n "$src" ] && [ -d "$src" ] || {
      echo "testbins: kubevirt-crds: downloading kubevirt.io/kubevirt $KUBEVIRT_VERSION failed" >&2
      exit 1
    }
    rm -rf "$dir/crds.tmp"
    mkdir -p "$dir/crds.tmp"
    if ! go run -trimpath . "$src" "$dir/crds.tmp" >"$dir/kubevirt-crds.log" 2>&1; then
      echo "testbins: kubevirt-crds $KUBEVIRT_VERSION: writing the CRDs failed; see $dir/kubevirt-crds.log" >&2
      tail -n 20 "$dir/kubevirt-crds.log" >&2
      exit 1
    fi
    mv "$dir/crds.tmp" "$dir/crds"
  ) 9>"$dir/.lock"
}

# build FAMILY VERSION LDFLAGS TAGS "out=package ..." (FAMILY names the wrapper module)
build() {
  local family=$1 version=$2 ldflags=$3 tags=$4 targets=$5 dir out pkg t start
  dir=$(bin_dir "$family" "$version")
  local todo=()
  for t in $targets; do [ -x "$dir/${t%%=*}" ] || todo+=("$t"); done
  [ "${#todo[@]}" -eq 0 ] && return 0
  require_go
  mkdir -p "$dir"
  (
    flock 9
    cd "$root/tools/testbins/$family"
    for t in "${todo[@]}"; do
      out=${t%%=*}; pkg=${t#*=}
      [ -x "$dir/$out" ] && continue
      start=$(date +%s)
      echo "testbins: building $out $version (first time only; cached in $dir)" >&2
      if ! go build -trimpath ${tags:+-tags "$tags"} -ldflags "$ldflags" -o "$dir/$out.tmp" "$pkg" >"$dir/$out.build.log" 2>&1; then
        echo "testbins: building $out failed; see $dir/$out.build.log" >&2
        tail -n 20 "$dir/$out.build.log" >&2
        exit 1
      fi
      mv "$dir/$out.tmp" "$dir/$out"
      echo "testbins: built $out in $(( $(date +%s) - start ))s" >&2
    done
  ) 9>"$dir/.lock"
}

families=("$@")
defaults=0
if [ "${#families[@]}" -eq 0 ]; then
  defaults=1
  families=(kube etcd capi caphv-go rke2 cert-manager helm prometheus-operator kwok kubevirt-crds
    capi114 rke2-025)
fi

for f in "${families[@]}"; do
  case $f in
    kube)
      ld="-s -w"
      for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ld="$ld -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=33"
        ld="$ld -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
      done
      build kube "$KUBE_VERSION" "$ld" "selinux,notest,grpcnotrace" \
        "kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager"
      build kubectl "$KUBE_VERSION" "$ld" "" "kubectl=k8s.io/kubernetes/cmd/kubectl"
      ;;
    etcd)
      # Not fatal when Debian's etcd 3.4 is there: hack/testbed falls back to it.
      if ! build etcd "$ETCD_VERSION" "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$ETCD_VERSION" "" \
        "etcd=go.etcd.io/etcd/server/v3"; then
        [ -x /usr/bin/etcd ] || exit 1
        echo "testbins: etcd $ETCD_VERSION failed to build; the test bed will use /usr/bin/etcd" >&2
      fi
      ;;
    capi)
      ld="-s -w"
      for k in gitVersion=$CAPI_VERSION gitMajor=1 gitMinor=10 gitTreeState=clean buildDate=1970-01-01T00:00:00Z; do
        ld="$ld -X sigs.k8s.io/cluster-api/version.$k"
      done
      build capi "$CAPI_VERSION" "$ld" "" \
        "cluster-api=sigs.k8s.io/cluster-api clusterctl=sigs.k8s.io/cluster-api/cmd/clusterctl"
      # The CAPI module's manifests (CRDs, webhooks) come with its source zip.
      dir=$(bin_dir capi "$CAPI_VERSION")
      if [ ! -d "$dir/config" ]; then
        require_go
        src=$(cd "$root/tools/testbins/capi" && go mod download -json "sigs.k8s.io/cluster-api@$CAPI_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
        mkdir -p "$dir/config.tmp"
        cp -r "$src/config/crd" "$src/config/webhook" "$dir/config.tmp/"
        chmod -R u+w "$dir/config.tmp"
        mv "$dir/config.tmp" "$dir/config"
      fi
      ;;
    capi114)
      # Since v1.14 the core manager is the package .../core and its manifests are core/config/.
      [ -x "$cache/bin/capi-1.14/cluster-api" ] || go_at_least 26 capi114 || continue
      ld="-s -w"
      for k in gitVersion=$CAPI_114_VERSION gitMajor=1 gitMinor=14 gitTreeState=clean buildDate=1970-01-01T00:00:00Z; do
        ld="$ld -X sigs.k8s.io/cluster-api/version.$k"
      done
      build capi114 "$CAPI_114_VERSION" "$ld" "" \
        "cluster-api=sigs.k8s.io/cluster-api/core clusterctl=sigs.k8s.io/cluster-api/cmd/clusterctl"
      dir=$(bin_dir capi114 "$CAPI_114_VERSION")
      if [ ! -d "$dir/config" ]; then
        require_go
        src=$(cd "$root/tools/testbins/capi114" && go mod download -json "sigs.k8s.io/cluster-api@$CAPI_114_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
        [ -n "$src" ] && [ -d "$src/core/config/crd" ] || {
          echo "testbins: capi114: no core/config/crd in sigs.k8s.io/cluster-api $CAPI_114_VERSION" >&2
          exit 1
        }
        rm -rf "$dir/config.tmp"
        mkdir -p "$dir/config.tmp"
        cp -r "$src/core/config/crd" "$src/core/config/webhook" "$dir/config.tmp/"
        chmod -R u+w "$dir/config.tmp"
        mv "$dir/config.tmp" "$dir/config"
      fi
      mkdir -p "$cache/bin/capi-1.14"
      for b in cluster-api clusterctl config; do ln -sfn "$dir/$b" "$cache/bin/capi-1.14/$b"; done
      ;;
    caphv-go)
      if [ ! -f "$caphv_go_tarball" ]; then
        echo "testbins: skipping caphv-go: $caphv_go_tarball not found (set CAPHV_THIRD_PARTY)" >&2
        continue
      fi
      build_caphv_go
      # Stable paths: current/caphv-go and current/caphv-go-config.
      mkdir -p "$cache/bin/current"
      ln -sfn "$(caphv_go_dir)/caphv-go" "$cache/bin/current/caphv-go"
      ln -sfn "$(caphv_go_dir)/config" "$cache/bin/current/caphv-go-config"
      ;;
    rke2)
      rke2_family rke2 "$RKE2_VERSION" "$cache/bin/current"
      ;;
    rke2-025)
      [ -x "$cache/bin/capi-1.14/rke2-controlplane" ] || go_at_least 25 rke2-025 || continue
      # Its go.mod requires sigs.k8s.io/cluster-api/test v1.13.2, which the module proxy refuses;
      # only its e2e tests import it (third_party/README.md).
      rke2_family rke2-025 "$RKE2_025_VERSION" "$cache/bin/capi-1.14" \
        sigs.k8s.io/cluster-api/test=sigs.k8s.io/cluster-api/test@v1.13.7
      ;;
    cert-manager)
      fetch_cert_manager_crds
      mkdir -p "$cache/bin/current"
      ln -sfn "$(bin_dir cert-manager "$CERT_MANAGER_VERSION")/crds" "$cache/bin/current/cert-manager-crds"
      ;;
    helm)
      ld="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
      ld="$ld -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
      build helm "$HELM_VERSION" "$ld" "" "helm=helm.sh/helm/v3/cmd/helm"
      ;;
    capi-e2e)
      build_capi_e2e test/capi-e2e "$CAPI_VERSION"
      mkdir -p "$cache/bin/current"
      ln -sfn "$(capi_e2e_dir test/capi-e2e "$CAPI_VERSION")/capi-e2e.test" "$cache/bin/current/capi-e2e.test"
      ;;
    capi-e2e-v1beta2)
      go_at_least 25 capi-e2e-v1beta2
      build_capi_e2e test/capi-e2e/v1beta2 "$CAPI_E2E_V1BETA2_VERSION"
      mkdir -p "$cache/bin/capi-1.14"
      ln -sfn "$(capi_e2e_dir test/capi-e2e/v1beta2 "$CAPI_E2E_V1BETA2_VERSION")/capi-e2e.test" \
        "$cache/bin/capi-1.14/capi-e2e.test"
      ;;
    prometheus-operator)
      fetch_prometheus_operator_crds
      mkdir -p "$cache/bin/current"
      ln -sfn "$(bin_dir prometheus-operator "$PROMETHEUS_OPERATOR_VERSION")/crds" "$cache/bin/current/prometheus-operator-crds"
      ;;
    kubevirt-crds)
      fetch_kubevirt_crds
      mkdir -p "$cache/bin/current"
      ln -sfn "$(kubevirt_crds_dir)/crds" "$cache/bin/current/kubevirt-crds"
      ;;
    kwok)
      # kwok's kubelet server plays the simulated nodes' kubelet API (pod
      # port-forward to the simulator's etcd members); its PortForward CRD too.
      build kwok "$KWOK_VERSION" "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" "" \
        "kwok=sigs.k8s.io/kwok/cmd/kwok"
      dir=$(bin_dir kwok "$KWOK_VERSION")
      if [ ! -d "$dir/crds" ]; then
        require_go
        src=$(cd "$root/tools/testbins/kwok" && go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" |
          sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
        mkdir -p "$dir/crds.tmp"
        cp "$src/kustomize/crd/bases/kwok.x-k8s.io_portforwards.yaml" "$dir/crds.tmp/"
        chmod -R u+w "$dir/crds.tmp"
        mv "$dir/crds.tmp" "$dir/crds"
      fi
      mkdir -p "$cache/bin/current"
      ln -sfn "$dir/kwok" "$cache/bin/current/kwok"
      ln -sfn "$dir/crds" "$cache/bin/current/kwok-crds"
      ;;
    *) echo "testbins: unknown family '$f'" >&2; exit 2 ;;
  esac
done

# Stable paths for the test bed: $cache/bin/current/<binary>.
mkdir -p "$cache/bin/current"
for spec in "kube $KUBE_VERSION kube-apiserver" "kube $KUBE_VERSION kube-controller-manager" \
            "etcd $ETCD_VERSION etcd" "capi $CAPI_VERSION cluster-api" "capi $CAPI_VERSION clusterctl" \
            "kubectl $KUBE_VERSION kubectl" "helm $HELM_VERSION helm" \
            "capi $CAPI_VERSION config"; do
  # shellcheck disable=SC2086  # split "family version binary"
  set -- $spec
  target="$(bin_dir "$1" "$2")/$3"
  [ -e "$target" ] && ln -sfn "$target" "$cache/bin/current/$3"
done
exit 0
