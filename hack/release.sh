#!/usr/bin/env bash
# Builds the release artifacts of CAPHV into out/<version>/ (make release):
#
#   infrastructure-components.yaml   config/default rendered (kubectl kustomize), the
#                                    manager image IMAGE_REPO:<version>, clusterctl variables
#                                    CAPHV_LOG_LEVEL, CAPHV_CONCURRENCY, CAPHV_WATCH_FILTER
#   metadata.yaml                    clusterctl's release series -> contract
#   cluster-template*.yaml           the clusterctl flavors (templates/)
#   clusterclass-harvester-rke2.yaml the ClusterClass (templates/), RKE2 providers up to v0.21
#   clusterclass-harvester-rke2-v1beta2.yaml
#                                    the same for the RKE2 providers v0.22+ (their API v1beta2)
#   clusterresourceset-*.yaml        the addons of the ClusterClass's clusters: the Harvester
#                                    cloud provider and CSI driver (templates/)
#   machinehealthcheck-harvester-rke2.yaml
#                                    the MachineHealthChecks of such a cluster (templates/)
#   capiprovider-harvester.yaml      a Rancher Turtles CAPIProvider for this release
#   caphv-<semver>.tgz               the Helm chart (chart/caphv), version = the release's
#   caphv-dashboard.json             the Grafana dashboard (config/grafana/)
#   caphv-alerts.yaml                the Prometheus alerting rules (config/prometheus/)
#   SHA256SUMS                       of all of the above
#
# Environment: VERSION (default v<project version of CMakeLists.txt>), IMAGE_REPO (default
# localhost/caphv-manager: clusterctl accepts only canonical image names), RELEASE_URL (where the release's files are downloaded from; default
# https://github.com/<org>/caphv/releases/download/<version>), OUT_DIR (default out),
# SKIP_IMAGE=1 (no image), KUBECTL and HELM (default: the test binaries of
# hack/build-testbins.sh in $CAPHV_CACHE_DIR/bin/current).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CAPHV_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/caphv}
kubectl=${KUBECTL:-$cache/bin/current/kubectl}
helm=${HELM:-$cache/bin/current/helm}
for tool in "$kubectl" "$helm"; do
  [ -x "$tool" ] || { echo "release: $tool not found; run hack/build-testbins.sh kube helm" >&2; exit 1; }
done

project_version=$(sed -n 's/^project(caphv .*VERSION \([0-9][0-9.]*\)).*/\1/p' "$root/CMakeLists.txt")
version=${VERSION:-v$project_version}
[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+([-+].*)?$ ]] || { echo "release: VERSION '$version' is not vX.Y.Z" >&2; exit 2; }
image_repo=${IMAGE_REPO:-localhost/caphv-manager}
release_url=${RELEASE_URL:-https://github.com/<org>/caphv/releases/download/$version}
out=${OUT_DIR:-$root/out}/$version
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$out"
mkdir -p "$out"

# --- infrastructure-components.yaml: config/default with the release's image.
mkdir -p "$work/overlay"
cat >"$work/overlay/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- $(realpath --relative-to="$work/overlay" "$root/config/default")
images:
- name: caphv-manager
  newName: $image_repo
  newTag: $version
YAML
"$kubectl" kustomize "$work/overlay" >"$work/components.yaml"

# clusterctl variables (${NAME:=default}) in the manager's arguments: its -v=N becomes
# -v=${CAPHV_LOG_LEVEL:=N}, followed by --concurrency and --watch-filter. The filter's value
# is a list item of its own: clusterctl reads an empty default (${NAME:=}) as no default,
# so the default is "", which YAML makes the empty string (every object is watched).
awk '
  /^kind: Deployment$/ { deployment = 1 }
  /^---$/ { deployment = 0 }
  deployment && /^ *- -v=[0-9]+$/ {
    indent = $0; sub(/- -v=.*/, "", indent)
    level = $0; sub(/.*-v=/, "", level)
    print indent "- -v=${CAPHV_LOG_LEVEL:=" level "}"
    print indent "- --concurrency=${CAPHV_CONCURRENCY:=10}"
    print indent "- --watch-filter"
    print indent "- ${CAPHV_WATCH_FILTER:=\"\"}"
    done++
    next
  }
  { print }
  END { if (done != 1) { print "release: expected one -v=N argument in the Deployment, found " done + 0 > "/dev/stderr"; exit 1 } }
' "$work/components.yaml" >"$out/infrastructure-components.yaml"

# --- clusterctl metadata, flavors, ClusterClass, its addons, MachineHealthChecks.
cp "$root/metadata.yaml" "$out/"
cp "$root"/templates/cluster-template*.yaml "$out/"
cp "$root/templates/clusterclass-harvester-rke2.yaml" "$out/"
# The same class for the RKE2 providers v0.22+ (Cluster API v1.11+): their two groups at
# v1beta2, everything else as is (what caphv generate --rke2-api-version v1beta2 does).
sed -E 's#^([[:space:]]*(- )?apiVersion: (controlplane|bootstrap)\.cluster\.x-k8s\.io)/v1beta1[[:space:]]*$#\1/v1beta2#' \
  "$root/templates/clusterclass-harvester-rke2.yaml" >"$out/clusterclass-harvester-rke2-v1beta2.yaml"
cp "$root"/templates/clusterresourceset-*.yaml "$out/"
cp "$root/templates/machinehealthcheck-harvester-rke2.yaml" "$out/"

# --- The Turtles CAPIProvider.
cat >"$out/capiprovider-harvester.yaml" <<YAML
# CAPHV $version through Rancher Turtles: kubectl create namespace caphv-system,
# then kubectl apply -f capiprovider-harvester.yaml. The Secret caphv-variables
# (optional) holds clusterctl variables: CAPHV_LOG_LEVEL, CAPHV_CONCURRENCY,
# CAPHV_WATCH_FILTER.
apiVersion: turtles-capi.cattle.io/v1alpha1
kind: CAPIProvider
metadata:
  name: harvester
  namespace: caphv-system
spec:
  name: harvester
  type: infrastructure
  version: $version
  fetchConfig:
    url: $release_url/infrastructure-components.yaml
  configSecret:
    name: caphv-variables
YAML

# --- The Helm chart, its symbolic links (config/, templates/) resolved.
cp -rL "$root/chart/caphv" "$work/chart"
sed -i -e "s/^version: .*/version: ${version#v}/" -e "s/^appVersion: .*/appVersion: $version/" "$work/chart/Chart.yaml"
sed -i "s|^  repository: .*|  repository: $image_repo|" "$work/chart/values.yaml"
"$helm" lint --quiet "$work/chart" >"$work/lint.log" 2>&1 || { cat "$work/lint.log" >&2; exit 1; }
"$helm" package "$work/chart" --destination "$out" >/dev/null

# --- Monitoring.
cp "$root/config/grafana/caphv-dashboard.json" "$root/config/prometheus/caphv-alerts.yaml" "$out/"

# --- The manager's OCI image: hack/image.sh VERSION OUTDIR writes it into OUTDIR.
# (Skipped while hack/image.sh does not exist, or with SKIP_IMAGE=1.)
if [ "${SKIP_IMAGE:-0}" != 1 ] && [ -x "$root/hack/image.sh" ]; then
  "$root/hack/image.sh" "$version" "$out"
else
  echo "release: no image (hack/image.sh absent or SKIP_IMAGE=1)" >&2
fi

(cd "$out" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)
echo "release: $version in $out"
