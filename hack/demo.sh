#!/usr/bin/env bash
# `make demo`: a simulated Harvester, Cluster API and CAPHV on this machine.
#
#   hack/demo.sh          start (or restart) the demo and show it
#   hack/demo.sh down     stop everything the demo started
#
# It starts the test bed (etcd, three kube-apiservers: mgmt, harvester,
# workload; Cluster API's core manager; the Harvester simulator), installs the
# CAPHV CRDs and runs caphv-manager with its validating webhooks, applies a
# cluster the way a user would, shows a bad manifest being refused, and shows
# the simulated Harvester running a VM. Everything stays up for you to look
# around until `hack/demo.sh down`.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${CAPHV_DEMO_DIR:-${CAPHV_CACHE_DIR:-$HOME/.cache/caphv}/demo}
BUILD=${CAPHV_BUILD_DIR:-$ROOT/build}
export CAPHV_BUILD_DIR=$BUILD
# shellcheck source=hack/lib/testbed-common.sh
. "$ROOT/hack/lib/testbed-common.sh"

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
$HARV get ippools.loadbalancer.harvesterhci.io

say "Applying a cluster as a user would (Cluster, HarvesterCluster, HarvesterMachineTemplate)"
$MGMT create namespace demo --dry-run=client -o yaml | $MGMT apply -f - >/dev/null
$MGMT -n demo create secret generic hv-identity-secret --from-file=kubeconfig="$DIR/harvester.kubeconfig" \
  --dry-run=client -o yaml | $MGMT apply -f - >/dev/null
$MGMT apply -f "$ROOT/hack/demo/cluster.yaml"

say "A bad HarvesterMachine is refused by the webhook, with the field paths"
if $MGMT apply -f "$ROOT/hack/demo/bad-machine.yaml" 2>&1; then
  echo "demo: error: the bad manifest was accepted" >&2
  exit 1
fi

say "The simulator playing KubeVirt: a VirtualMachine with a static address"
$HARV apply -f "$ROOT/hack/demo/vm.yaml"
for _ in $(seq 1 60); do
  phase=$($HARV -n default get vmi demo-vm-0 -o jsonpath='{.status.phase}' 2>/dev/null || true)
  [ "$phase" = Running ] && break
  sleep 1
done
$HARV -n default get vm,vmi,pvc
echo
echo "The guest cluster (workload apiserver) registered the VM as a Node:"
for _ in $(seq 1 30); do
  pid=$($WORK get node demo-vm-0 -o jsonpath='{.spec.providerID}' 2>/dev/null || true)
  [ -n "$pid" ] && break
  sleep 1
done
$WORK get nodes -o custom-columns=NAME:.metadata.name,PROVIDER-ID:.spec.providerID,IP:.status.addresses[0].address

say "CAPHV objects on the management cluster"
$MGMT -n demo get clusters.cluster.x-k8s.io,harvesterclusters,harvestermachinetemplates

cat <<MSG

The reconcilers that turn HarvesterClusters and HarvesterMachines into VMs are
the next milestone; the objects above are stored and validated, and the
simulated Harvester is ready for them.

Look around:
  export KUBECONFIG=$DIR/mgmt.kubeconfig        # management cluster
  kubectl --kubeconfig $DIR/harvester.kubeconfig get vm,vmi,pvc -A
  kubectl --kubeconfig $DIR/workload.kubeconfig get nodes
  curl -s http://127.0.0.1:$METRICS_PORT/metrics | grep ^caphv_
  less $DIR/logs/caphv-manager.log             # every process logs in $DIR/logs

Tear down:
  hack/demo.sh down
MSG
