#!/usr/bin/env bash
# `make demo`: a simulated Harvester, Cluster API and CAPHV on this machine.
#
#   hack/demo.sh          start (or restart) the demo and show it
#   hack/demo.sh down     stop everything the demo started
#
# It starts the test bed (etcd, three kube-apiservers: mgmt, harvester,
# workload; Cluster API's core manager; the Harvester simulator), installs the
# CAPHV CRDs and runs caphv-manager with its validating webhooks, shows a bad
# manifest being refused, then provisions a cluster the way a user would: one
# control-plane Machine and a MachineDeployment of two workers become VMs on
# the simulated Harvester, with addresses from an IP pool, and Nodes of the
# workload cluster. A live table follows the Machines until all are Running
# (at most CAPHV_DEMO_TIMEOUT seconds, default 300). Everything stays up for
# you to look around until `hack/demo.sh down`.
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

if [ "${1:-}" = down ]; then
  "$ROOT/hack/testbed" down --dir "$DIR"
  echo "demo: stopped and removed $DIR"
  exit 0
fi

say "Starting the test bed with Cluster API and the Harvester simulator ($DIR)"
"$ROOT/hack/testbed" up --dir "$DIR" --with-capi --with-harvester
MGMT="kubectl --kubeconfig $DIR/mgmt.kubeconfig"
HARV="kubectl --kubeconfig $DIR/harvester.kubeconfig"
WORK="kubectl --kubeconfig $DIR/workload.kubeconfig"

say "Installing the CAPHV CRDs"
$MGMT apply --server-side -f "$ROOT/config/crd/bases" >/dev/null
$MGMT wait --for condition=Established --timeout=60s -f "$ROOT/config/crd/bases" >/dev/null
$MGMT get crd -l cluster.x-k8s.io/v1beta1=v1alpha1

say "Starting caphv-manager with its validating webhooks"
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

say "What other providers would provide: identity, workload kubeconfig, bootstrap data"
# secret NAME TYPE [--from-literal/--from-file ...]: create or update a Secret in demo.
secret() {
  local name=$1 type=$2
  shift 2
  $MGMT -n demo create secret generic "$name" --type "$type" "$@" --dry-run=client -o yaml |
    $MGMT apply -f - >/dev/null
  echo "secret/$name ($type)"
}
# Access to Harvester, referenced by HarvesterCluster.spec.identitySecret.
secret hv-identity-secret Opaque --from-file=kubeconfig="$DIR/harvester.kubeconfig"
# What a control-plane provider writes: Cluster API reaches the workload cluster
# (the bed's third apiserver, where the simulator registers a Node per VM) with it.
secret demo-kubeconfig cluster.x-k8s.io/secret --from-file=value="$DIR/workload.kubeconfig"
$MGMT -n demo label secret demo-kubeconfig cluster.x-k8s.io/cluster-name=demo --overwrite >/dev/null
# What a bootstrap provider writes: the machines' cloud-config.
for role in control-plane worker; do
  secret "demo-bootstrap-$role" cluster.x-k8s.io/secret \
    --from-literal=value="$(printf '#cloud-config\nruncmd:\n- echo demo %s\n' "$role")" \
    --from-literal=format=cloud-config
done

say "Applying the cluster: 1 control-plane Machine, a MachineDeployment of 2 workers"
$MGMT apply -f "$ROOT/hack/demo/cluster.yaml"

say "Provisioning (refreshing every 2 s)"
# One line per Machine: phase, its HarvesterMachine's readiness and address,
# and the provider ID CAPHV gave it.
table() {
  {
    $MGMT -n demo get harvestermachines -o jsonpath='{range .items[*]}hm|{.metadata.name}|{.status.ready}|{.status.addresses[0].address}{"\n"}{end}' || true
    $MGMT -n demo get machines -o jsonpath='{range .items[*]}m|{.metadata.name}|{.status.phase}|{.spec.infrastructureRef.name}|{.spec.providerID}{"\n"}{end}' || true
  } 2>/dev/null | awk -F'|' '
    function dflt(v, d) { return v == "" ? d : v }
    $1 == "hm" { ready[$2] = dflt($3, "false"); ip[$2] = dflt($4, "-"); next }
    $1 == "m" { n++; name[n] = $2; phase[n] = dflt($3, "Pending"); infra[n] = $4; pid[n] = dflt($5, "-") }
    END {
      printf "%-40s %-13s %-9s %-15s %s\n", "MACHINE", "PHASE", "HM-READY", "IP", "PROVIDER-ID"
      for (i = 1; i <= n; i++) {
        printf "%-40s %-13s %-9s %-15s %s\n", name[i], phase[i], dflt(ready[infra[i]], "-"),
          dflt(ip[infra[i]], "-"), pid[i]
      }
    }'
}
want=3
timeout=${CAPHV_DEMO_TIMEOUT:-300}
start=$(date +%s)
while :; do
  out=$(table)
  running=$(printf '%s\n' "$out" | awk 'NR > 1 && $2 == "Running"' | wc -l)
  [ -t 1 ] && printf '\033[H\033[J'
  printf '%s\n\n%d of %d Machines Running after %ds\n' "$out" "$running" "$want" "$(($(date +%s) - start))"
  [ "$running" -ge "$want" ] && break
  if [ "$(($(date +%s) - start))" -ge "$timeout" ]; then
    echo "demo: error: not all Machines Running after ${timeout}s; last manager log lines:" >&2
    tail -20 "$DIR/logs/caphv-manager.log" >&2
    exit 1
  fi
  sleep 2
done

say "The cluster on the management cluster"
$MGMT -n demo get clusters.cluster.x-k8s.io,harvesterclusters,machinedeployments,machines,harvestermachines
say "Its VMs, disks and load balancer on the simulated Harvester (namespace demo)"
$HARV -n demo get virtualmachines,virtualmachineinstances,persistentvolumeclaims,loadbalancers.loadbalancer.harvesterhci.io
$HARV get ippools.loadbalancer.harvesterhci.io demo-vms -o jsonpath='{"IPPool demo-vms, allocated: "}{.status.allocated}{"\n"}'
say "Its Nodes in the workload cluster"
$WORK get nodes -o custom-columns=NAME:.metadata.name,PROVIDER-ID:.spec.providerID,IP:.status.addresses[0].address

# The kubectl of the commands below: the one used here, by its full path unless it is the
# user's own.
KUBECTL=$(command -v kubectl)
[ "$KUBECTL" = "$USER_KUBECTL" ] && KUBECTL=kubectl
cat <<MSG

Look around:
  $KUBECTL --kubeconfig $DIR/mgmt.kubeconfig -n demo get cluster,machines,harvestermachines   # management
  $KUBECTL --kubeconfig $DIR/mgmt.kubeconfig -n demo scale machinedeployment demo-workers --replicas 3
  $KUBECTL --kubeconfig $DIR/harvester.kubeconfig -n demo get vm,vmi,pvc,secrets              # Harvester
  $KUBECTL --kubeconfig $DIR/harvester.kubeconfig get ippools.loadbalancer.harvesterhci.io -o yaml
  $KUBECTL --kubeconfig $DIR/workload.kubeconfig get nodes                                    # workload
  curl -s http://127.0.0.1:$METRICS_PORT/metrics | grep ^caphv_
  less $DIR/logs/caphv-manager.log             # every process logs in $DIR/logs

Tear down:
  hack/demo.sh down
MSG
