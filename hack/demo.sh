#!/usr/bin/env bash
# `make demo`: a simulated Harvester, Cluster API and CAPHV on this machine.
#
#   hack/demo.sh          start (or restart) the demo and show it
#   hack/demo.sh down     stop everything the demo started
#
# It builds the test bed's Go binaries it lacks (hack/build-testbins.sh: the
# RKE2 providers take about 13 minutes the first time), starts the test bed
# (etcd, three kube-apiservers: mgmt, harvester, workload; Cluster API's core
# manager, the RKE2 bootstrap and control-plane providers, the Harvester
# simulator), installs the CAPHV CRDs and runs caphv-manager with its
# validating webhooks, shows a bad manifest being refused, then provisions a
# cluster the way users do: the ClusterClass harvester-rke2
# (templates/clusterclass-harvester-rke2.yaml) and a Cluster of that class
# with one control-plane machine and a MachineDeployment of two workers
# (hack/demo/cluster.yaml). The machines become VMs on the simulated
# Harvester, with addresses from an IP pool, and Nodes of the workload
# cluster that CAPHV initialises. A live table follows the Machines until all
# are Running, then the demo waits for their Nodes to be Ready and the
# Cluster's control plane initialised (at most CAPHV_DEMO_TIMEOUT seconds in
# all, default 300) and shows the Nodes, the cluster's objects, its VMs and
# the pool's allocations. Everything stays up for you to look around until
# `hack/demo.sh down`.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${CAPHV_DEMO_DIR:-${CAPHV_CACHE_DIR:-$HOME/.cache/caphv}/demo}
BUILD=${CAPHV_BUILD_DIR:-$ROOT/build}
export CAPHV_BUILD_DIR=$BUILD
# shellcheck source=hack/lib/testbed-common.sh
. "$ROOT/hack/lib/testbed-common.sh"
# shellcheck source=hack/lib/toolchain.sh
. "$ROOT/hack/lib/toolchain.sh"
USER_KUBECTL=$(command -v kubectl 2>/dev/null || true)
caphv_use_kubectl  # the test bed's kubectl (hack/build-testbins.sh), else the one on PATH

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
die() {
  echo "demo: error: $*" >&2
  exit 1
}

if [ "${1:-}" = down ]; then
  "$ROOT/hack/testbed" down --dir "$DIR"
  echo "demo: stopped and removed $DIR"
  exit 0
fi

# The Go-built binaries the bed runs and the manifests it applies (config,
# rke2-config), by family of hack/build-testbins.sh. A fresh machine has none:
# they are built here (`make demo` installs only packages and Go before; the
# other families are `make test`'s).
# The RKE2 providers come from the third-party tarball: up to about 13 minutes
# the first time on 2 cores.
missing=() families=()
for spec in kube:kube-apiserver:CAPHV_KUBE_APISERVER \
  kube:kube-controller-manager:CAPHV_KUBE_CONTROLLER_MANAGER kube:kubectl: etcd:etcd:CAPHV_ETCD \
  capi:cluster-api:CAPHV_CLUSTER_API capi:config: rke2:rke2-bootstrap:CAPHV_RKE2_BOOTSTRAP \
  rke2:rke2-controlplane:CAPHV_RKE2_CONTROLPLANE rke2:rke2-config: kwok:kwok:CAPHV_KWOK \
  kwok:kwok-crds: kubevirt-crds:kubevirt-crds:CAPHV_KUBEVIRT_CRDS; do
  IFS=: read -r family bin override <<<"$spec"
  [ -n "$override" ] && [ -n "${!override:-}" ] && continue  # hack/testbed's override
  [ -x "$CAPHV_TOOLCHAIN_CACHE/bin/current/$bin" ] && continue
  missing+=("$bin")
  case " ${families[*]} " in *" $family "*) ;; *) families+=("$family") ;; esac
done
if [ "${#missing[@]}" -gt 0 ]; then
  say "Building what the test bed lacks: ${missing[*]} (first time only; the RKE2 providers take up to about 13 min)"
  "$ROOT/hack/build-testbins.sh" "${families[@]}"
  for b in "${missing[@]}"; do
    # hack/testbed falls back to /usr/bin/etcd, and starts without kwok (no
    # kubelet API for the guests) or KubeVirt's CRDs (the simulator's own).
    case $b in etcd | kwok | kwok-crds | kubevirt-crds) continue ;; esac
    [ -x "$CAPHV_TOOLCHAIN_CACHE/bin/current/$b" ] ||
      die "$b is not built (hack/build-testbins.sh ${families[*]}; the RKE2 providers need cluster-api-provider-rke2-v0.21.1.tar.gz in ${CAPHV_THIRD_PARTY:-$ROOT/../shared/third_party})"
  done
  caphv_use_kubectl
fi
[ -x "$BUILD/cmd/caphv-manager/caphv-manager" ] ||
  die "no $BUILD/cmd/caphv-manager/caphv-manager: build first (make build, or make demo)"

say "Starting the test bed with Cluster API, the RKE2 providers and the Harvester simulator ($DIR)"
"$ROOT/hack/testbed" up --dir "$DIR" --with-capi --with-rke2 --with-harvester
MGMT="kubectl --kubeconfig $DIR/mgmt.kubeconfig"
HARV="kubectl --kubeconfig $DIR/harvester.kubeconfig"
WORK="kubectl --kubeconfig $DIR/workload.kubeconfig"

say "Installing the CAPHV CRDs"
$MGMT apply --server-side -f "$ROOT/config/crd/bases" >/dev/null
$MGMT wait --for condition=Established --timeout=60s -f "$ROOT/config/crd/bases" >/dev/null
$MGMT get crd -l cluster.x-k8s.io/v1beta1=v1alpha1

say "Starting caphv-manager with its admission webhooks"
read -r WEBHOOK_PORT METRICS_PORT PROBE_PORT <<<"$(tb_free_ports 3)"
mkdir -p "$DIR/caphv/certs"
cp "$DIR/pki/serving.crt" "$DIR/caphv/certs/tls.crt"
cp "$DIR/pki/serving.key" "$DIR/caphv/certs/tls.key"
tb_start caphv-manager "$BUILD/cmd/caphv-manager/caphv-manager" \
  --kubeconfig "$DIR/mgmt.kubeconfig" --enable-webhooks --webhook-port "$WEBHOOK_PORT" \
  --webhook-cert-dir "$DIR/caphv/certs" --metrics-bind-address "127.0.0.1:$METRICS_PORT" \
  --metrics-secure=false \
  --health-probe-bind-address "127.0.0.1:$PROBE_PORT" --leader-elect \
  --leader-election-namespace default
deadline=$(($(date +%s) + 60))
until curl -fs -o /dev/null "http://127.0.0.1:$PROBE_PORT/readyz"; do
  [ "$(date +%s)" -lt "$deadline" ] || { tail -20 "$DIR/logs/caphv-manager.log"; exit 1; }
  sleep 0.5
done
# The webhooks of config/webhook/manifests.yaml, pointed at the local server.
CA=$(base64 -w0 <"$DIR/pki/ca.crt")
{
  echo "apiVersion: admissionregistration.k8s.io/v1"
  echo "kind: ValidatingWebhookConfiguration"
  echo "metadata: {name: caphv-validating-webhook-configuration}"
  echo "webhooks:"
  for kind in harvestercluster harvestermachine harvesterclustertemplate harvestermachinetemplate; do
    cat <<YAML
- name: v$kind.kb.io
  admissionReviewVersions: [v1]
  clientConfig:
    url: https://127.0.0.1:$WEBHOOK_PORT/validate-infrastructure-cluster-x-k8s-io-v1alpha1-$kind
    caBundle: $CA
  failurePolicy: Fail
  sideEffects: None
  rules:
  - {apiGroups: [infrastructure.cluster.x-k8s.io], apiVersions: [v1alpha1], operations: [CREATE, UPDATE], resources: [${kind}s]}
YAML
  done
  echo "---"
  echo "apiVersion: admissionregistration.k8s.io/v1"
  echo "kind: MutatingWebhookConfiguration"
  echo "metadata: {name: caphv-mutating-webhook-configuration}"
  echo "webhooks:"
  # kind:operation, as in config/webhook/manifests.yaml.
  for hook in harvestercluster:UPDATE harvestermachine:CREATE; do
    kind=${hook%%:*}
    cat <<YAML
- name: m$kind.kb.io
  admissionReviewVersions: [v1]
  clientConfig:
    url: https://127.0.0.1:$WEBHOOK_PORT/mutate-infrastructure-cluster-x-k8s-io-v1alpha1-$kind
    caBundle: $CA
  failurePolicy: Fail
  sideEffects: None
  reinvocationPolicy: Never
  rules:
  - {apiGroups: [infrastructure.cluster.x-k8s.io], apiVersions: [v1alpha1], operations: [${hook#*:}], resources: [${kind}s]}
YAML
  done
} >"$DIR/caphv/webhooks.yaml"
$MGMT apply -f "$DIR/caphv/webhooks.yaml" >/dev/null
echo "manager: metrics http://127.0.0.1:$METRICS_PORT/metrics, probes http://127.0.0.1:$PROBE_PORT/readyz"
echo "log: $DIR/logs/caphv-manager.log"

say "The simulated Harvester: images, key pairs, networks, IP pools"
$HARV get virtualmachineimages,keypairs,network-attachment-definitions -A
$HARV apply -f "$ROOT/hack/demo/ippool.yaml" >/dev/null
$HARV get ippools.loadbalancer.harvesterhci.io

say "A bad HarvesterMachine is refused by the webhook, with the field paths"
$MGMT create namespace demo --dry-run=client -o yaml | $MGMT apply -f - >/dev/null
if $MGMT apply -f "$ROOT/hack/demo/bad-machine.yaml" 2>&1; then
  echo "demo: error: the bad manifest was accepted" >&2
  exit 1
fi

say "The ClusterClass harvester-rke2, applied in namespace demo"
$MGMT -n demo apply -f "$ROOT/templates/clusterclass-harvester-rke2.yaml"
# The Cluster webhook checks a topology's variables against the reconciled class.
$MGMT -n demo wait --for condition=VariablesReconciled --timeout=60s clusterclass/harvester-rke2

say "What the Cluster needs first: Harvester access, the workload API, the cloud provider's addon"
# secret NAME TYPE [--from-file ...]: create or update a Secret in demo.
secret() {
  local name=$1 type=$2
  shift 2
  $MGMT -n demo create secret generic "$name" --type "$type" "$@" --dry-run=client -o yaml |
    $MGMT apply -f - >/dev/null
  echo "secret/$name ($type)"
}
# Access to Harvester: the class's variable identitySecretName names it.
secret hv-identity-secret Opaque --from-file=kubeconfig="$DIR/harvester.kubeconfig"
# The workload cluster's kubeconfig, brought before the Cluster exists, as users
# who bring their own do. The control-plane endpoint is an address of the
# simulated kube-vip that nothing here listens on, so the kubeconfig the RKE2
# control-plane provider would generate could not reach the workload cluster;
# it leaves this one alone. It points at the bed's third apiserver, where the
# simulator registers a Node per VM (docs/testbed.md, "The RKE2 providers and
# the workload API").
secret demo-kubeconfig cluster.x-k8s.io/secret --from-file=value="$DIR/workload.kubeconfig"
$MGMT -n demo label secret demo-kubeconfig cluster.x-k8s.io/cluster-name=demo --overwrite >/dev/null
$MGMT apply -f "$ROOT/hack/demo/cloud-config-addon.yaml"

say "Applying the Cluster: class harvester-rke2, 1 control-plane machine, a MachineDeployment of 2 workers"
$MGMT apply -f "$ROOT/hack/demo/cluster.yaml"

say "Provisioning (refreshing every 2 s)"
# One line per Machine: its role, phase, its HarvesterMachine's readiness and
# address, and the provider ID CAPHV gave it.
table() {
  {
    $MGMT -n demo get harvestermachines -o jsonpath='{range .items[*]}hm|{.metadata.name}|{.status.ready}|{.status.addresses[0].address}{"\n"}{end}' || true
    $MGMT -n demo get machines -o jsonpath='{range .items[*]}m|{.metadata.name}|{.status.phase}|{.spec.infrastructureRef.name}|{.spec.providerID}|{.metadata.labels.cluster\.x-k8s\.io/deployment-name}{"\n"}{end}' || true
  } 2>/dev/null | awk -F'|' '
    function dflt(v, d) { return v == "" ? d : v }
    $1 == "hm" { ready[$2] = dflt($3, "false"); ip[$2] = dflt($4, "-"); next }
    $1 == "m" {
      n++; name[n] = $2; phase[n] = dflt($3, "Pending"); infra[n] = $4; pid[n] = dflt($5, "-")
      role[n] = $6 == "" ? "control-plane" : "worker"  # workers: of a MachineDeployment
    }
    END {
      printf "%-36s %-13s %-13s %-9s %-15s %s\n", "MACHINE", "ROLE", "PHASE", "HM-READY", "IP", "PROVIDER-ID"
      for (i = 1; i <= n; i++) {
        printf "%-36s %-13s %-13s %-9s %-15s %s\n", name[i], role[i], phase[i],
          dflt(ready[infra[i]], "-"), dflt(ip[infra[i]], "-"), pid[i]
      }
    }'
}
want=3
timeout=${CAPHV_DEMO_TIMEOUT:-300}
start=$(date +%s)
# fail WHAT: the demo did not get there in time.
fail() {
  echo "demo: error: $* after ${timeout}s; last manager log lines:" >&2
  tail -20 "$DIR/logs/caphv-manager.log" >&2
  exit 1
}
while :; do
  out=$(table)
  running=$(printf '%s\n' "$out" | awk 'NR > 1 && $3 == "Running"' | wc -l)
  [ -t 1 ] && printf '\033[H\033[J'
  printf '%s\n\n%d of %d Machines Running after %ds\n' "$out" "$running" "$want" "$(($(date +%s) - start))"
  [ "$running" -ge "$want" ] && break
  [ "$(($(date +%s) - start))" -lt "$timeout" ] || fail "not all Machines Running"
  sleep 2
done
# Then every Node Ready and initialised by CAPHV: its providerID set, the
# cloud provider's uninitialized taint gone.
nodes_ready() {
  $WORK get nodes -o jsonpath='{range .items[*]}{.spec.providerID}|{.status.conditions[?(@.type=="Ready")].status}|{.spec.taints[*].key}{"\n"}{end}' 2>/dev/null |
    awk -F'|' '$1 ~ /^harvester:\/\// && $2 == "True" && $3 !~ /uninitialized/' | wc -l
}
until [ "$(nodes_ready)" -ge "$want" ]; do
  [ "$(($(date +%s) - start))" -lt "$timeout" ] || fail "not all Nodes Ready and initialised"
  sleep 1
done
echo "and their $want Nodes Ready and initialised after $(($(date +%s) - start))s"

say "Its Nodes in the workload cluster"
$WORK get nodes -o custom-columns='NAME:.metadata.name,READY:.status.conditions[?(@.type=="Ready")].status,CONTROL-PLANE:.metadata.labels.node-role\.kubernetes\.io/control-plane,VERSION:.status.nodeInfo.kubeletVersion,PROVIDER-ID:.spec.providerID,IP:.status.addresses[0].address'
say "The cluster on the management cluster"
left=$((timeout - ($(date +%s) - start)))
$MGMT -n demo wait --for condition=ControlPlaneInitialized --timeout="$((left > 1 ? left : 1))s" \
  clusters.cluster.x-k8s.io/demo >/dev/null || fail "ControlPlaneInitialized not True"
$MGMT -n demo get clusters.cluster.x-k8s.io demo -o go-template='{{range .status.conditions}}{{if eq .type "ControlPlaneInitialized"}}Cluster demo: ControlPlaneInitialized={{.status}} since {{.lastTransitionTime}}{{end}}{{end}}, endpoint {{.spec.controlPlaneEndpoint.host}}:{{.spec.controlPlaneEndpoint.port}}{{"\n"}}'
addon=$($MGMT -n demo get configmap cloud-config-addon-demo -o jsonpath='{.data.cloud-config\.yaml}')
if grep -q '^  name: cloud-config$' <<<"$addon"; then
  echo "ConfigMap cloud-config-addon-demo: CAPHV added the cloud provider's Harvester credentials (Secret kube-system/cloud-config)"
fi
$MGMT -n demo get clusters.cluster.x-k8s.io,rke2controlplanes,harvesterclusters,machinedeployments,machines,harvestermachines
say "Its VMs, disks and load balancer on the simulated Harvester (namespace demo)"
$HARV -n demo get virtualmachines,virtualmachineinstances,persistentvolumeclaims,loadbalancers.loadbalancer.harvesterhci.io
say "The IPPool demo-vms: address -> owner"
# shellcheck disable=SC2016  # a go-template, not shell
$HARV get ippools.loadbalancer.harvesterhci.io demo-vms -o go-template='{{range $ip, $owner := .status.allocated}}{{$ip}} -> {{$owner}}{{"\n"}}{{end}}'

# The kubectl of the commands below: the one used here, by its full path unless it is the
# user's own.
KUBECTL=$(command -v kubectl)
[ "$KUBECTL" = "$USER_KUBECTL" ] && KUBECTL=kubectl
cat <<MSG

Look around:
  $KUBECTL --kubeconfig $DIR/mgmt.kubeconfig -n demo get cluster,machines,harvestermachines   # management
  $KUBECTL --kubeconfig $DIR/mgmt.kubeconfig -n demo patch cluster demo --type json \\
    -p '[{"op": "replace", "path": "/spec/topology/workers/machineDeployments/0/replicas", "value": 3}]'
  $KUBECTL --kubeconfig $DIR/harvester.kubeconfig -n demo get vm,vmi,pvc,secrets              # Harvester
  $KUBECTL --kubeconfig $DIR/harvester.kubeconfig get ippools.loadbalancer.harvesterhci.io -o yaml
  $KUBECTL --kubeconfig $DIR/workload.kubeconfig get nodes -o wide                            # workload
  $KUBECTL --kubeconfig $DIR/mgmt.kubeconfig -n demo delete cluster demo     # VMs, disks, addresses go
  curl -s http://127.0.0.1:$METRICS_PORT/metrics | grep ^caphv_
  less $DIR/logs/caphv-manager.log             # every process logs in $DIR/logs

Tear down:
  hack/demo.sh down
MSG
