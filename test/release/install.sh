#!/usr/bin/env bash
# The release against the test bed's management apiserver, as users install and use it:
#   1. clusterctl init --infrastructure harvester:<version> from a local clusterctl repository
#      creates every object of the operations guide, with its names;
#   2. helm template (each value combination) passes kubectl apply --dry-run=server;
#   3. clusterctl generate cluster, every flavor, the ClusterClass, its addons and the
#      MachineHealthChecks (clusterctl generate yaml) pass kubectl apply --dry-run=server with
#      CAPHV's webhooks served (caphv-manager --enable-webhooks), Cluster API's, and the RKE2 and
#      kubeadm CRDs; a bad value is refused.
# The bed runs Cluster API without clusterctl: the test records it in clusterctl's inventory
# (a Provider cluster-api, whose metadata the local repository holds) so that init adds only
# CAPHV, and adds cert-manager's CRDs so that init finds cert-manager and fetches nothing.
# Everything it adds is removed at the end; CAPHV's CRDs go back to config/crd/bases.
# shellcheck source=test/release/lib.sh
. "$(dirname "$0")/lib.sh"
BED=${CAPHV_TESTBED:?the test bed (ctest fixture testbed)}
export KUBECONFIG=$BED/mgmt.kubeconfig
MANAGER=${CAPHV_BUILD_DIR:?}/cmd/caphv-manager/caphv-manager
# The bed's Cluster API generation (hack/testbed's CAPHV_CAPI): its core release, the
# clusterctl of that release (v1.10's takes only v1beta1-contract providers, so the
# release's series, 0.11 and v1beta2, is installed on a 1.14 bed) and the RKE2 providers'.
generation=$(sed -n 's/^CAPI_GENERATION=//p' "$BED/env")
case ${generation:-1.10} in
  1.10) CORE_VERSION=v1.10.10 capi_module=capi rke2_version=v0.21.1 ;;
  1.14) CORE_VERSION=v1.14.2 capi_module=capi114 rke2_version=v0.25.0 CLUSTERCTL=$CACHE/bin/capi-1.14/clusterctl ;;
  *) echo "install: the bed runs Cluster API v$generation, which this test does not know" >&2; exit 1 ;;
esac
CAPI_SRC=$(cd "$ROOT/tools/testbins/$capi_module" && GOFLAGS=-mod=readonly GOPROXY=off go mod download -json "sigs.k8s.io/cluster-api@$CORE_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
RKE2_TARBALL=${CAPHV_THIRD_PARTY:-$ROOT/../shared/third_party}/cluster-api-provider-rke2-$rke2_version.tar.gz
contract=$(awk -v minor="$(echo "$VERSION" | cut -d. -f2)" '/minor:/ {m = ($2 == minor)} m && /contract:/ {print $2; exit}' "$REL/metadata.yaml")
if [ "${generation:-1.10}" = 1.10 ] && [ "$contract" != v1beta1 ]; then
  echo "install: skipped: the release's series is contract $contract; clusterctl $CORE_VERSION installs only v1beta1 providers (run on a 1.14 bed: CAPHV_CAPI=1.14)"
  exit 77
fi
work=$(mktemp -d)
k() { "$KUBECTL" --cache-dir "$work/kcache" "$@"; }
# need(COND; SHOWN) for jq programs: stops with SHOWN when COND is false.
need_def='def need(cond; shown): if cond then . else "assertion failed: \(shown | tojson)\n" | halt_error(1) end;'
added_crds=()
manager_pid=
caphv_crds=(harvesterclusters harvestermachines harvesterclustertemplates harvestermachinetemplates)
had_caphv_crds=0
k get crd harvesterclusters.infrastructure.cluster.x-k8s.io >/dev/null 2>&1 && had_caphv_crds=1
cleanup() {
  [ -n "$manager_pid" ] && kill "$manager_pid" 2>/dev/null && wait "$manager_pid" 2>/dev/null
  k delete validatingwebhookconfiguration caphv-release-test caphv-validating-webhook-configuration --ignore-not-found >/dev/null 2>&1
  k delete mutatingwebhookconfiguration caphv-mutating-webhook-configuration --ignore-not-found >/dev/null 2>&1
  k delete ns caphv-system rel-default rel-rke2 rel-rke2-dhcp rel-rke2-stig rel-kubeadm rel-cc --ignore-not-found --wait=true --timeout=120s >/dev/null 2>&1
  k delete clusterrole,clusterrolebinding -l cluster.x-k8s.io/provider=infrastructure-harvester --ignore-not-found >/dev/null 2>&1
  k delete providers.clusterctl.cluster.x-k8s.io -n capi-system cluster-api --ignore-not-found >/dev/null 2>&1
  if [ "$had_caphv_crds" = 1 ]; then
    k replace -f "$ROOT/config/crd/bases" >/dev/null 2>&1
    k apply --server-side --force-conflicts -f "$ROOT/config/crd/bases" >/dev/null 2>&1
  else
    for c in "${caphv_crds[@]}"; do k delete crd "$c.infrastructure.cluster.x-k8s.io" --ignore-not-found >/dev/null 2>&1; done
  fi
  for c in "${added_crds[@]}"; do k delete crd "$c" --ignore-not-found --timeout=60s >/dev/null 2>&1; done
  rm -rf "$work"
}
trap cleanup EXIT

# apply_crds FILE...: applies the CRDs the bed lacks (removed at the end).
apply_crds() {
  local f name
  for f in "$@"; do
    name=$(awk '/^metadata:/{m=1} m && /^  name:/{print $2; exit}' "$f")
    k get crd "$name" >/dev/null 2>&1 && continue
    k apply --server-side -f "$f" >/dev/null || { fail "applying $f"; continue; }
    added_crds+=("$name")
    for _ in $(seq 100); do
      [ "$(k get crd "$name" -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null)" = True ] && break
      sleep 0.2
    done
  done
}

# --- Prerequisites: cert-manager's and the ServiceMonitor's CRDs, clusterctl's inventory.
apply_crds "$CACHE"/bin/current/cert-manager-crds/crd-{issuers,certificates}.yaml \
  "$CACHE"/bin/current/prometheus-operator-crds/monitoring.coreos.com_servicemonitors.yaml \
  "$CAPI_SRC/cmd/clusterctl/config/manifest/clusterctl-api.yaml"
k create ns capi-system --dry-run=client -o yaml | k apply -f - >/dev/null
k apply -f - >/dev/null <<YAML
apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3
kind: Provider
metadata:
  name: cluster-api
  namespace: capi-system
  labels: {clusterctl.cluster.x-k8s.io: "", cluster.x-k8s.io/provider: cluster-api}
type: CoreProvider
providerName: cluster-api
version: $CORE_VERSION
YAML
repo=$work/repo
mkdir -p "$repo/infrastructure-harvester/$VERSION" "$repo/cluster-api/$CORE_VERSION"
cp "$REL"/* "$repo/infrastructure-harvester/$VERSION/"
cp "$CAPI_SRC/metadata.yaml" "$repo/cluster-api/$CORE_VERSION/"
touch "$repo/cluster-api/$CORE_VERSION/core-components.yaml"
cat >"$work/clusterctl.yaml" <<YAML
providers:
- name: harvester
  type: InfrastructureProvider
  url: file://$repo/infrastructure-harvester/$VERSION/infrastructure-components.yaml
- name: cluster-api
  type: CoreProvider
  url: file://$repo/cluster-api/$CORE_VERSION/core-components.yaml
cert-manager:
  url: file://$repo/no-cert-manager/v0.0.0/cert-manager.yaml
YAML
cc=("$CLUSTERCTL" --config "$work/clusterctl.yaml" --kubeconfig "$KUBECONFIG")

# --- 1. clusterctl init.
start=$(date +%s)
if "${cc[@]}" init --infrastructure "harvester:$VERSION" >"$work/init.log" 2>&1; then
  pass "clusterctl init --infrastructure harvester:$VERSION ($(($(date +%s) - start)) s)"
else
  fail "clusterctl init"; cat "$work/init.log" >&2
fi
grep -q 'Installing cert-manager' "$work/init.log" && fail "clusterctl init installed cert-manager"
for obj in namespace/caphv-system \
  crd/harvesterclusters.infrastructure.cluster.x-k8s.io crd/harvestermachines.infrastructure.cluster.x-k8s.io \
  crd/harvesterclustertemplates.infrastructure.cluster.x-k8s.io crd/harvestermachinetemplates.infrastructure.cluster.x-k8s.io \
  -n\ caphv-system\ deployment/caphv-controller-manager -n\ caphv-system\ serviceaccount/caphv-controller-manager \
  -n\ caphv-system\ service/caphv-webhook-service -n\ caphv-system\ service/caphv-controller-manager-metrics-service \
  clusterrole/caphv-manager-role clusterrole/caphv-metrics-reader clusterrole/caphv-proxy-role \
  clusterrolebinding/caphv-manager-rolebinding clusterrolebinding/caphv-proxy-rolebinding \
  -n\ caphv-system\ role/caphv-leader-election-role -n\ caphv-system\ rolebinding/caphv-leader-election-rolebinding \
  validatingwebhookconfiguration/caphv-validating-webhook-configuration \
  mutatingwebhookconfiguration/caphv-mutating-webhook-configuration \
  -n\ caphv-system\ issuer.cert-manager.io/caphv-selfsigned-issuer -n\ caphv-system\ certificate.cert-manager.io/caphv-serving-cert \
  -n\ caphv-system\ servicemonitor.monitoring.coreos.com/caphv-controller-manager-metrics-monitor \
  -n\ caphv-system\ provider.clusterctl.cluster.x-k8s.io/infrastructure-harvester; do
  # shellcheck disable=SC2086  # "-n NS kind/name"
  k get $obj -o name >/dev/null 2>&1 || fail "clusterctl init did not create $obj"
done
# The Deployment clusterctl made: image, flags, probes, resources, security context.
deployment_as_released() {
  k get -n caphv-system deploy/caphv-controller-manager -o json |
    jq -e --arg image "localhost/caphv-manager:$VERSION" "$need_def"'
      .spec.template.spec as $pod | $pod.containers[0] as $c
      | need($c.image == $image; $c.image)
      | need((["--leader-elect", "--enable-webhooks", "-v=2", "--concurrency=10", "--watch-filter", ""]
              - $c.args) == []; $c.args)
      | need($c.livenessProbe.httpGet.path == "/healthz" and $c.readinessProbe.httpGet.path == "/readyz";
             [$c.livenessProbe, $c.readinessProbe])
      | need(($c.resources.limits // {} | length) > 0 and ($c.resources.requests // {} | length) > 0;
             $c.resources)
      | need($c.securityContext.allowPrivilegeEscalation == false and $pod.securityContext.runAsNonRoot == true;
             [$c.securityContext, $pod.securityContext])
      | true'
}
check "the Deployment: image, flags, probes, resources, security context" deployment_as_released
check "the webhook configurations: CA from cert-manager, four validating webhooks, one mutating" bash -c \
  "k() { '$KUBECTL' \"\$@\"; }; [ \"\$(k get validatingwebhookconfiguration caphv-validating-webhook-configuration -o jsonpath='{.metadata.annotations.cert-manager\\.io/inject-ca-from} {.webhooks[*].name}')\" = \
  'caphv-system/caphv-serving-cert vharvestercluster.kb.io vharvestermachine.kb.io vharvesterclustertemplate.kb.io vharvestermachinetemplate.kb.io' ] &&
  [ \"\$(k get mutatingwebhookconfiguration caphv-mutating-webhook-configuration -o jsonpath='{.metadata.annotations.cert-manager\\.io/inject-ca-from} {.webhooks[*].name}')\" = \
  'caphv-system/caphv-serving-cert mharvestercluster.kb.io mharvestermachine.kb.io' ] &&
  [ \"\$(k get -n caphv-system certificate caphv-serving-cert -o jsonpath='{.spec.secretName}')\" = caphv-webhook-tls ]"

# --- 2. The Helm chart's output, server-side.
chart=$REL/caphv-${VERSION#v}.tgz
for wh in false true; do for cm in false true; do
  "$HELM" template caphv "$chart" -n caphv-system --set "webhooks.enabled=$wh" --set "webhooks.certManager.enabled=$cm" \
    >"$work/helm.yaml"
  check "helm template webhooks=$wh certManager=$cm | kubectl apply --dry-run=server" k apply --dry-run=server -f "$work/helm.yaml"
done; done

# --- 3. Cluster templates through CAPHV's webhooks (a local caphv-manager) and Cluster API's.
# No pod serves them here.
k delete validatingwebhookconfiguration caphv-validating-webhook-configuration >/dev/null
k delete mutatingwebhookconfiguration caphv-mutating-webhook-configuration >/dev/null
mkdir -p "$work/certs"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=caphv-test-ca -keyout "$work/certs/ca.key" -out "$work/certs/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$work/certs/tls.key" -out "$work/certs/tls.csr" 2>/dev/null
openssl x509 -req -in "$work/certs/tls.csr" -CA "$work/certs/ca.crt" -CAkey "$work/certs/ca.key" -CAcreateserial -days 1 \
  -extfile <(printf 'subjectAltName=IP:127.0.0.1') -out "$work/certs/tls.crt" 2>/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
probe=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$MANAGER" --kubeconfig "$KUBECONFIG" --enable-webhooks --webhook-port "$port" --webhook-cert-dir "$work/certs" \
  --metrics-bind-address=127.0.0.1:0 --health-probe-bind-address="127.0.0.1:$probe" >"$work/manager.log" 2>&1 &
manager_pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$probe/readyz" >/dev/null && break; sleep 0.2; done
ca=$(base64 -w0 "$work/certs/ca.crt")
# CAPHV's four validating webhooks, served by the local manager, for the test's namespaces.
jq -n --arg port "$port" --arg ca "$ca" '
  {apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingWebhookConfiguration",
   metadata: {name: "caphv-release-test"},
   webhooks: [("harvestercluster", "harvestermachine", "harvesterclustertemplate", "harvestermachinetemplate") as $kind
     | {name: "v\($kind).kb.io", admissionReviewVersions: ["v1"], sideEffects: "None", failurePolicy: "Fail",
        clientConfig: {url: "https://127.0.0.1:\($port)/validate-infrastructure-cluster-x-k8s-io-v1alpha1-\($kind)",
                       caBundle: $ca},
        namespaceSelector: {matchExpressions: [{key: "kubernetes.io/metadata.name", operator: "In",
          values: ["rel-default", "rel-rke2", "rel-rke2-dhcp", "rel-rke2-stig", "rel-kubeadm", "rel-cc"]}]},
        rules: [{apiGroups: ["infrastructure.cluster.x-k8s.io"], apiVersions: ["v1alpha1"],
                 operations: ["CREATE", "UPDATE"], resources: ["\($kind)s"]}]}]}' >"$work/vwc.json"
k apply -f "$work/vwc.json" >/dev/null
mkdir -p "$work/rke2"
tar -xzf "$RKE2_TARBALL" -C "$work/rke2" --strip-components=1 --wildcards '*/config/crd/bases/*.yaml' ||
  fail "no RKE2 CRDs from $RKE2_TARBALL"
apply_crds "$work"/rke2/*/config/crd/bases/*.yaml "$CAPI_SRC"/bootstrap/kubeadm/config/crd/bases/*.yaml \
  "$CAPI_SRC"/controlplane/kubeadm/config/crd/bases/*.yaml
# The kubeadm CRDs as their kustomization labels them: v1.14's conversion of a v1beta1
# Cluster resolves the control plane's version through the contract label.
if [ "${generation:-1.10}" = 1.14 ]; then
  for c in kubeadmconfigs.bootstrap kubeadmconfigtemplates.bootstrap kubeadmcontrolplanes.controlplane \
    kubeadmcontrolplanetemplates.controlplane; do
    k label --overwrite crd "$c.cluster.x-k8s.io" cluster.x-k8s.io/v1beta2=v1beta2 >/dev/null ||
      fail "labelling crd/$c.cluster.x-k8s.io"
  done
fi
export HARVESTER_KUBECONFIG_B64=$(base64 -w0 <<<"apiVersion: v1") TARGET_HARVESTER_NAMESPACE=default \
  VM_IMAGE_NAME=default/ubuntu-22.04 VM_NETWORK=default/vm-net SSH_KEYPAIR=default/capi-key IP_POOL_NAME=capi-pool \
  VM_GATEWAY=10.0.0.1 VM_SUBNET_MASK=255.255.255.0
sleep 2  # the webhook configuration reaches the apiserver's cache
for flavor in default rke2 rke2-dhcp rke2-stig kubeadm; do
  ns=rel-$flavor
  fl=(); [ "$flavor" = default ] || fl=(--flavor "$flavor")
  k create ns "$ns" >/dev/null
  if "${cc[@]}" generate cluster "c-$flavor" "${fl[@]}" --infrastructure "harvester:$VERSION" --target-namespace "$ns" \
    --kubernetes-version v1.32.4 --control-plane-machine-count 3 --worker-machine-count 2 >"$work/$flavor.yaml" 2>"$work/err"; then
    check "flavor $flavor: kubectl apply --dry-run=server ($(grep -c '^kind:' "$work/$flavor.yaml") objects)" \
      k apply --dry-run=server -f "$work/$flavor.yaml"
  else
    fail "clusterctl generate cluster --flavor $flavor: $(cat "$work/err")"
  fi
done
# A value only CAPHV's webhook refuses (a gateway that is no IP address) is refused.
VM_GATEWAY=10.0.0.999 "${cc[@]}" generate cluster c-bad --infrastructure "harvester:$VERSION" --target-namespace rel-default \
  --kubernetes-version v1.32.4 >"$work/bad.yaml"
if k apply --dry-run=server -f "$work/bad.yaml" >"$work/bad.log" 2>&1; then
  fail "a HarvesterCluster with gateway 10.0.0.999 was accepted"
elif grep -q 'validation failed for HarvesterCluster [^:]*: spec.vmNetworkConfig.gateway "10.0.0.999" is not a valid IP address' "$work/bad.log"; then
  pass "CAPHV's webhook refuses a bad template"
else
  fail "the bad template failed otherwise: $(cat "$work/bad.log")"
fi
k create ns rel-cc >/dev/null
if [ "${generation:-1.10}" = 1.10 ]; then
  check "ClusterClass harvester-rke2: kubectl apply --dry-run=server" k apply --dry-run=server -n rel-cc -f "$REL/clusterclass-harvester-rke2.yaml"
else
  check "ClusterClass harvester-rke2 for the RKE2 providers v0.22+: kubectl apply --dry-run=server" \
    k apply --dry-run=server -n rel-cc -f "$REL/clusterclass-harvester-rke2-v1beta2.yaml"
fi
for addon in harvester-cloud-provider harvester-csi-driver; do
  if CLUSTER_NAME=c-cc NAMESPACE=rel-cc "$CLUSTERCTL" generate yaml --from "$REL/clusterresourceset-$addon.yaml" \
    >"$work/$addon.yaml" 2>"$work/err"; then
    check "addon $addon: kubectl apply --dry-run=server ($(grep -c '^kind:' "$work/$addon.yaml") objects)" \
      k apply --dry-run=server -f "$work/$addon.yaml"
  else
    fail "clusterctl generate yaml --from clusterresourceset-$addon.yaml: $(cat "$work/err")"
  fi
done
# The MachineHealthChecks as clusterctl renders them (generate yaml takes no --kubeconfig).
gen_mhc() {
  env NAMESPACE=rel-cc CLUSTER_NAME=c-cc CLUSTERCTL_DISABLE_VERSIONCHECK=true "$@" "$CLUSTERCTL" \
    --config "$work/clusterctl.yaml" generate yaml --from "$REL/machinehealthcheck-harvester-rke2.yaml"
}
if gen_mhc >"$work/mhc.yaml" 2>"$work/err"; then
  check "MachineHealthChecks: kubectl apply --dry-run=server (Cluster API's webhooks)" k apply --dry-run=server -f "$work/mhc.yaml"
else
  fail "clusterctl generate yaml --from machinehealthcheck-harvester-rke2.yaml: $(cat "$work/err")"
fi
# Cluster API's webhook judges the values: a maxUnhealthy that is no number or percentage
# (v1.11+ names the field as v1beta2 has it: spec.remediation.triggerIf.unhealthyLessThanOrEqualTo).
if ! gen_mhc MHC_MAX_UNHEALTHY=most >"$work/mhc-bad.yaml" 2>"$work/err"; then
  fail "clusterctl generate yaml (MHC_MAX_UNHEALTHY=most): $(cat "$work/err")"
elif k apply --dry-run=server -f "$work/mhc-bad.yaml" >"$work/mhc-bad.log" 2>&1; then
  fail "a MachineHealthCheck with maxUnhealthy 'most' was accepted"
elif grep -Eq 'spec.(maxUnhealthy|remediation.triggerIf.unhealthyLessThanOrEqualTo): Invalid value' "$work/mhc-bad.log"; then
  pass "a MachineHealthCheck with a bad maxUnhealthy is refused"
else
  fail "the MachineHealthCheck with maxUnhealthy 'most' failed otherwise: $(cat "$work/mhc-bad.log")"
fi
"$HELM" template caphv "$chart" -n rel-cc --set clusterClass.enabled=true --show-only templates/clusterclass.yaml >"$work/cc.yaml"
check "helm template clusterClass.enabled=true: the ClusterClass, --dry-run=server" k apply --dry-run=server -f "$work/cc.yaml"

finish
