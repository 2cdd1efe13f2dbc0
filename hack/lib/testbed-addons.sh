# shellcheck shell=bash
# Optional parts of the test bed, sourced by hack/testbed:
#   tb_up_capi [NAME] Cluster API core CRDs + webhooks + manager against mgmt
#                     (or against the management cluster NAME of `add-cluster`)
#   tb_up_rke2        the RKE2 bootstrap and control-plane providers against mgmt
#                     (CRDs, webhooks, two managers; after tb_up_capi)
#   tb_up_harvester   the Harvester simulator (caphv-sim) against harvester
# They run after the clusters are ready and use the variables set by cmd_up
# or cmd_add_cluster (DIR, CACHE, TIMEOUT, ports, binaries).

# ---------------------------------------------------------------------------
# Cluster API core manager as a local process. Its webhooks are registered
# with clientConfig.url=https://127.0.0.1:<port><path> and the bed's CA, the
# way CAPI's own envtest does it.

# Rewrites CAPI's webhook configurations (YAML file $1) for a local server on
# port $2; prints a JSON List (read with yq, rewritten with its jq program).
tb_capi_webhooks_json() { tb_local_webhooks_json "$1" "$2" capi-; }

# tb_local_webhooks_json FILE PORT PREFIX: the webhook
# configurations and CRDs of FILE (YAML) for a webhook server on
# 127.0.0.1:PORT; prints a JSON List. Webhook configurations get the name
# prefix PREFIX and every webhook clientConfig.url=https://127.0.0.1:PORT<path>
# with the bed's CA; CRDs with a conversion webhook get the same for it (and
# lose cert-manager's CA injection annotation); anything else is kept.
tb_local_webhooks_json() {
  local ca
  ca=$(base64 -w0 "$DIR/pki/ca.crt") || return 1
  yq -c -s --arg port "$2" --arg ca "$ca" --arg prefix "$3" '
    def local: {url: ("https://127.0.0.1:" + $port + (.service.path // "/")), caBundle: $ca};
    [.[] | select(. != null) | if .kind == "List" then .items[] else . end]
    | map(if .kind == "CustomResourceDefinition" then
            del(.metadata.annotations["cert-manager.io/inject-ca-from"])
            | if .spec.conversion.strategy == "Webhook"
              then .spec.conversion.webhook.clientConfig |= local else . end
          else
            .metadata.name = $prefix + .metadata.name
            | del(.metadata.annotations)
            | if .webhooks then .webhooks |= map(.clientConfig |= local) else . end
          end)
    | if length == 0 then error("no webhook configurations found")
      else {apiVersion: "v1", kind: "List", items: .} end' "$1"
}

# tb_up_capi [NAME]: NAME is mgmt (default: the process `capi`, files in
# DIR/capi, env keys CAPI_*, ports $CAPI_*_PORT) or a management cluster added
# by `add-cluster` (process `capi-NAME`, DIR/capi-NAME, env keys NAME_CAPI_*,
# ports $NAME_CAPI_*_PORT).
tb_up_capi() {
  local t0
  t0=$(tb_now_ms)
  tb_capi_install "${1:-mgmt}"
  tb_capi_start "${1:-mgmt}"
  tb_log "Cluster API ready on '${1:-mgmt}' in $((($(tb_now_ms) - t0) / 1000))s"
}

# tb_capi_vars NAME: sets kc, comp, cdir, key, webhook_port, health_port,
# diag_port (locals of the caller) for the Cluster API of cluster NAME.
tb_capi_vars() {
  kc="$DIR/$1.kubeconfig"
  if [ "$1" = mgmt ]; then comp=capi key=CAPI; else comp=capi-$1 key=${1^^}_CAPI; fi
  cdir="$DIR/$comp"
  webhook_port=${key}_WEBHOOK_PORT health_port=${key}_HEALTH_PORT diag_port=${key}_DIAGNOSTICS_PORT
  webhook_port=${!webhook_port} health_port=${!health_port} diag_port=${!diag_port}
}

# tb_capi_install NAME: the CRDs and webhook configurations of the bed's
# generation, applied (no manager started).
tb_capi_install() {
  local config="${CAPI_BIN_DIR:-$CACHE/bin/current}/config" kc comp cdir key
  local webhook_port health_port diag_port
  tb_capi_vars "$1"
  if [ ! -d "$config/crd/bases" ] || [ ! -f "$config/webhook/manifests.yaml" ]; then
    tb_die "Cluster API manifests not found in $config; run hack/build-testbins.sh capi"
  fi
  mkdir -p "$cdir/certs"
  cp "$DIR/pki/serving.crt" "$cdir/certs/tls.crt"
  cp "$DIR/pki/serving.key" "$cdir/certs/tls.key"

  # CRDs straight from bases/: v1.10 serves only v1beta1, no conversion needed.
  local crds="$config/crd/bases"
  if [ "${CAPI_GENERATION:-1.10}" != 1.10 ]; then
    # v1.14 serves v1beta1 and v1beta2 (storage): the CRDs come from the
    # kustomization of config/crd (its patches add the conversion webhook,
    # served at /convert by the core manager), pointed at the local process.
    crds="$cdir/crds.json"
    kubectl kustomize "$config/crd" >"$cdir/crds.yaml" 2>>"$DIR/logs/$comp-install.log" ||
      tb_fail_with_log "$comp-install" "rendering $config/crd failed"
    tb_local_webhooks_json "$cdir/crds.yaml" "$webhook_port" "" >"$crds" \
      2>>"$DIR/logs/$comp-install.log" || tb_fail_with_log "$comp-install" "rewriting the Cluster API CRDs failed"
  fi
  # Server-side apply: some CRDs are too big for the last-applied annotation.
  kubectl --kubeconfig "$kc" apply --server-side -f "$crds" >>"$DIR/logs/$comp-install.log" 2>&1 ||
    tb_fail_with_log "$comp-install" "applying Cluster API CRDs failed"
  kubectl --kubeconfig "$kc" wait --for=condition=Established --timeout="${TIMEOUT}s" \
    -f "$crds" >>"$DIR/logs/$comp-install.log" 2>&1 ||
    tb_fail_with_log "$comp-install" "Cluster API CRDs not established"
  tb_capi_webhooks_json "$config/webhook/manifests.yaml" "$webhook_port" >"$cdir/webhooks.json" \
    2>>"$DIR/logs/$comp-install.log" ||
    tb_fail_with_log "$comp-install" "rewriting $config/webhook/manifests.yaml failed"
  kubectl --kubeconfig "$kc" apply --server-side -f "$cdir/webhooks.json" >>"$DIR/logs/$comp-install.log" 2>&1 ||
    tb_fail_with_log "$comp-install" "registering Cluster API webhooks failed"
}

# tb_capi_start NAME: starts the core manager and waits until it is ready.
tb_capi_start() {
  local kc comp cdir key webhook_port health_port diag_port
  tb_capi_vars "$1"
  tb_start "$comp" "$CAPI_BIN" --kubeconfig="$kc" \
    --webhook-port="$webhook_port" --webhook-cert-dir="$cdir/certs" \
    --health-addr="127.0.0.1:$health_port" \
    --diagnostics-address="127.0.0.1:$diag_port" --insecure-diagnostics \
    --leader-elect=false --feature-gates=ClusterTopology=true
  tb_env_set "${key}_PID" "$(<"$DIR/run/$comp.pid")"
  tb_env_set "${key}_WEBHOOK_PORT" "$webhook_port"
  tb_env_set "${key}_HEALTH_PORT" "$health_port"
  tb_env_set "${key}_DIAGNOSTICS_PORT" "$diag_port"

  # Ready = health endpoint OK and a Cluster passes the webhooks (dry run).
  # v1.14: a v1beta2 Cluster (its validation wants one of controlPlaneRef,
  # infrastructureRef or topology; a v1beta1 one with a ref cannot be the
  # probe: converting it back needs the referenced kind's CRD) and a v1beta1
  # MachineDrainRule, which passes the conversion webhook.
  local probe="$cdir/probe.yaml"
  if [ "${CAPI_GENERATION:-1.10}" = 1.10 ]; then
    printf '%s\n' 'apiVersion: cluster.x-k8s.io/v1beta1' 'kind: Cluster' 'metadata:' \
      '  name: testbed-probe' '  namespace: default' 'spec: {}' >"$probe"
  else
    printf '%s\n' 'apiVersion: cluster.x-k8s.io/v1beta2' 'kind: Cluster' 'metadata:' \
      '  name: testbed-probe' '  namespace: default' 'spec:' '  infrastructureRef:' \
      '    apiGroup: infrastructure.cluster.x-k8s.io' '    kind: HarvesterCluster' \
      '    name: testbed-probe' '---' 'apiVersion: cluster.x-k8s.io/v1beta1' \
      'kind: MachineDrainRule' 'metadata:' '  name: testbed-probe' '  namespace: default' \
      'spec:' '  drain:' '    behavior: Skip' >"$probe"
  fi
  tb_wait_until "$comp" "Cluster API manager" tb_webhooks_ready "$health_port" "$kc" "$probe"
}

# tb_webhooks_ready HEALTH_PORT KUBECONFIG PROBE: a manager answers /readyz on
# HEALTH_PORT and PROBE passes its webhooks (a server-side dry-run create);
# else prints why not.
tb_webhooks_ready() {
  tb_http_ok "http://127.0.0.1:$1/readyz" || { echo "/readyz not OK"; return 1; }
  kubectl --kubeconfig "$2" create --dry-run=server -o name -f "$3"
}

# ---------------------------------------------------------------------------
# The RKE2 bootstrap and control-plane providers (cluster-api-provider-rke2,
# built by hack/build-testbins.sh rke2) as local processes against mgmt, the
# way the Cluster API core runs: their CRDs rendered from config/<part>/crd
# with kustomize (the Cluster API contract labels
# `cluster.x-k8s.io/v1beta1: v1alpha1_v1beta1` come from there, as in a
# clusterctl install) with the conversion webhook pointed at the local
# process, their webhook configurations (renamed rke2-<part>-…) pointed at
# https://127.0.0.1:<port>/… with the bed's CA, and the managers with the
# admin kubeconfig, no leader election, health and diagnostics on loopback.
# Parts: bootstrap (process rke2-bootstrap, env keys RKE2_BOOTSTRAP_*) and
# controlplane (rke2-controlplane, RKE2_CONTROLPLANE_*).

# tb_start_rke2_manager PART: starts (or starts again) one manager with the
# ports recorded in the env keys RKE2_<PART>_*.
tb_start_rke2_manager() {
  local part=$1 key bin webhook_port health_port diag_port gates=()
  key=RKE2_${part^^}
  bin=${key}_BIN webhook_port=${key}_WEBHOOK_PORT health_port=${key}_HEALTH_PORT
  diag_port=${key}_DIAGNOSTICS_PORT
  # MachinePool is on by default in Cluster API v1.10 (the core manager
  # serves MachinePools); said explicitly for the bootstrap provider, the only
  # one of the two with feature gates.
  [ "$part" = bootstrap ] && gates=(--feature-gates=MachinePool=true)
  tb_start "rke2-$part" "${!bin}" --kubeconfig="$DIR/mgmt.kubeconfig" --leader-elect=false \
    --webhook-port="${!webhook_port}" --webhook-cert-dir="$DIR/rke2/certs" \
    --health-addr="127.0.0.1:${!health_port}" \
    --diagnostics-address="127.0.0.1:${!diag_port}" --insecure-diagnostics "${gates[@]}"
  tb_env_set "${key}_PID" "$(<"$DIR/run/rke2-$part.pid")"
}

# tb_wait_rke2 PART...: until each manager answers /readyz and passes a
# server-side dry-run create through its webhooks.
tb_wait_rke2() {
  local part key
  for part in "$@"; do
    key=RKE2_${part^^}_HEALTH_PORT
    tb_wait_until "rke2-$part" "RKE2 $part provider" \
      tb_webhooks_ready "${!key}" "$DIR/mgmt.kubeconfig" "$DIR/rke2/probe-$part.yaml"
  done
}

# tb_up_rke2: the three steps below in a row. `up` runs tb_rke2_install in the
# background while the Cluster API core starts (they do not depend on each
# other), so the providers add only their own start to `up`.
tb_up_rke2() {
  tb_rke2_prepare
  tb_rke2_install
  tb_rke2_start
}

# tb_rke2_prepare: binaries, ports, certificates, env keys (writes DIR/env).
tb_rke2_prepare() {
  local config="${CAPI_BIN_DIR:-$CACHE/bin/current}/rke2-config" part key var ports i=0
  RKE2_T0=$(tb_now_ms)
  RKE2_BOOTSTRAP_BIN=$(tb_binary CAPHV_RKE2_BOOTSTRAP rke2-bootstrap)
  RKE2_CONTROLPLANE_BIN=$(tb_binary CAPHV_RKE2_CONTROLPLANE rke2-controlplane)
  for part in bootstrap controlplane; do
    [ -d "$config/$part/crd" ] && [ -f "$config/$part/webhook/manifests.yaml" ] ||
      tb_die "the RKE2 providers' manifests not found in $config; run hack/build-testbins.sh rke2"
  done
  mkdir -p "$DIR/rke2/certs"
  cp "$DIR/pki/serving.crt" "$DIR/rke2/certs/tls.crt"
  cp "$DIR/pki/serving.key" "$DIR/rke2/certs/tls.key"
  read -r -a ports <<<"$(tb_free_ports 6)"
  for part in bootstrap controlplane; do
    key=RKE2_${part^^}
    declare -g "${key}_WEBHOOK_PORT=${ports[i]}" "${key}_HEALTH_PORT=${ports[i + 1]}"
    declare -g "${key}_DIAGNOSTICS_PORT=${ports[i + 2]}"
    i=$((i + 3))
    for var in "${key}_BIN" "${key}_WEBHOOK_PORT" "${key}_HEALTH_PORT" "${key}_DIAGNOSTICS_PORT"; do
      tb_env_set "$var" "${!var}"
    done
  done
}

# tb_rke2_install: renders and applies the CRDs and webhook configurations
# (files in DIR/rke2, log in DIR/logs/rke2-install.log); no DIR/env writes,
# so it may run in a subshell.
tb_rke2_install() {
  local config="${CAPI_BIN_DIR:-$CACHE/bin/current}/rke2-config" kc="$DIR/mgmt.kubeconfig" part key
  # CRDs and webhook configurations of both parts in one apply each.
  for part in bootstrap controlplane; do
    key=RKE2_${part^^}_WEBHOOK_PORT
    kubectl kustomize "$config/$part/crd" >"$DIR/rke2/$part-crds.yaml" 2>>"$DIR/logs/rke2-install.log" ||
      tb_fail_with_log rke2-install "rendering $config/$part/crd failed"
    tb_local_webhooks_json "$DIR/rke2/$part-crds.yaml" "${!key}" "" >"$DIR/rke2/$part-crds.json" \
      2>>"$DIR/logs/rke2-install.log" || tb_fail_with_log rke2-install "rewriting the $part CRDs failed"
    tb_local_webhooks_json "$config/$part/webhook/manifests.yaml" "${!key}" "rke2-$part-" \
      >"$DIR/rke2/$part-webhooks.json" 2>>"$DIR/logs/rke2-install.log" ||
      tb_fail_with_log rke2-install "rewriting $config/$part/webhook/manifests.yaml failed"
  done
  kubectl --kubeconfig "$kc" apply --server-side --force-conflicts \
    -f "$DIR/rke2/bootstrap-crds.json" -f "$DIR/rke2/controlplane-crds.json" \
    >>"$DIR/logs/rke2-install.log" 2>&1 || tb_fail_with_log rke2-install "applying the RKE2 CRDs failed"
  kubectl --kubeconfig "$kc" apply --server-side --force-conflicts \
    -f "$DIR/rke2/bootstrap-webhooks.json" -f "$DIR/rke2/controlplane-webhooks.json" \
    >>"$DIR/logs/rke2-install.log" 2>&1 || tb_fail_with_log rke2-install "registering the RKE2 webhooks failed"
}

# tb_rke2_start: starts both managers and waits until they are ready.
tb_rke2_start() {
  local part
  for part in bootstrap controlplane; do tb_start_rke2_manager "$part"; done
  tb_rke2_ready
}

# tb_rke2_ready: until the CRDs are established and both managers (started)
# answer and pass their webhooks.
tb_rke2_ready() {
  local kc="$DIR/mgmt.kubeconfig"
  kubectl --kubeconfig "$kc" wait --for=condition=Established --timeout="${TIMEOUT}s" \
    -f "$DIR/rke2/bootstrap-crds.json" -f "$DIR/rke2/controlplane-crds.json" \
    >>"$DIR/logs/rke2-install.log" 2>&1 || tb_fail_with_log rke2-install "the RKE2 CRDs not established"
  # What the readiness check creates (dry run): one object per manager's webhooks.
  cat >"$DIR/rke2/probe-bootstrap.yaml" <<'YAML'
apiVersion: bootstrap.cluster.x-k8s.io/v1beta1
kind: RKE2Config
metadata:
  name: testbed-probe
  namespace: default
spec: {}
YAML
  if [ "${CAPI_GENERATION:-1.10}" != 1.10 ]; then
    # v0.25 stores v1beta2; a v1beta1 RKE2ControlPlane cannot be the probe:
    # converting its infrastructureRef needs the referenced kind's CRD. (The
    # bootstrap probe, v1beta1 without references, passes the conversion webhook.)
    cat >"$DIR/rke2/probe-controlplane.yaml" <<'YAML'
apiVersion: controlplane.cluster.x-k8s.io/v1beta2
kind: RKE2ControlPlane
metadata:
  name: testbed-probe
  namespace: default
spec:
  version: v1.33.1+rke2r1
  machineTemplate:
    spec:
      infrastructureRef:
        apiGroup: infrastructure.cluster.x-k8s.io
        kind: HarvesterMachineTemplate
        name: testbed-probe
  rolloutStrategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 1
YAML
  else
    cat >"$DIR/rke2/probe-controlplane.yaml" <<'YAML'
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: RKE2ControlPlane
metadata:
  name: testbed-probe
  namespace: default
spec:
  machineTemplate:
    infrastructureRef:
      apiVersion: infrastructure.cluster.x-k8s.io/v1alpha1
      kind: HarvesterMachineTemplate
      name: testbed-probe
  rolloutStrategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 1
YAML
  fi
  tb_wait_rke2 bootstrap controlplane
  tb_env_set WITH_RKE2 1
  tb_log "RKE2 providers ready in $((($(tb_now_ms) - RKE2_T0) / 1000))s"
}

# ---------------------------------------------------------------------------
# Harvester simulator.

tb_find_sim() {
  local c
  for c in "${CAPHV_SIM:-}" "${CAPHV_BUILD_DIR:+$CAPHV_BUILD_DIR/cmd/caphv-sim/caphv-sim}" \
    "$ROOT/build/cmd/caphv-sim/caphv-sim"; do
    if [ -n "$c" ] && [ -x "$c" ]; then
      echo "$c"
      return 0
    fi
  done
  tb_die "--with-harvester: caphv-sim not found (looked at \$CAPHV_SIM, \$CAPHV_BUILD_DIR/cmd/caphv-sim/caphv-sim, $ROOT/build/cmd/caphv-sim/caphv-sim); build it first"
}

tb_up_harvester() {
  local t0 env_args=() kubevirt_args=()
  local kubevirt_crds=${CAPHV_KUBEVIRT_CRDS:-$CACHE/bin/current/kubevirt-crds}
  t0=$(tb_now_ms)
  # CAPHV_SIM_ENV: an environment YAML for the simulator (default: built-in).
  [ -n "${CAPHV_SIM_ENV:-}" ] && env_args=(--env "$CAPHV_SIM_ENV")
  # KubeVirt's own VM and VMI CRDs (hack/build-testbins.sh kubevirt-crds; CAPHV_KUBEVIRT_CRDS
  # names another folder), else the simulator's embedded structural subsets.
  if [ -d "$kubevirt_crds" ]; then
    kubevirt_args=(--kubevirt-crds "$kubevirt_crds")
  else
    tb_log "KubeVirt's CRDs are not built (hack/build-testbins.sh kubevirt-crds): the simulator installs its embedded VM/VMI CRDs"
  fi
  if ! timeout "$TIMEOUT" "$SIM_BIN" install --kubeconfig "$DIR/harvester.kubeconfig" "${env_args[@]}" \
    "${kubevirt_args[@]}" </dev/null >>"$DIR/logs/caphv-sim-install.log" 2>&1; then
    tb_fail_with_log caphv-sim-install "caphv-sim install failed"
  fi
  # Its validating webhook serves with the bed's certificate.
  mkdir -p "$DIR/sim/certs"
  cp "$DIR/pki/serving.crt" "$DIR/sim/certs/tls.crt"
  cp "$DIR/pki/serving.key" "$DIR/sim/certs/tls.key"
  cp "$DIR/pki/ca.crt" "$DIR/sim/certs/ca.crt"
  # The guests' kubelet API (pod port-forward to their etcd members) is
  # kwok's kubelet server; the workload apiserver reaches it through its
  # egress selector, served by the simulator (docs/testbed.md).
  local kubelet_args=() kwok_bin=${CAPHV_KWOK:-$CACHE/bin/current/kwok}
  if [ -x "$kwok_bin" ] && [ -d "$CACHE/bin/current/kwok-crds" ]; then
    kubectl --kubeconfig "$DIR/workload.kubeconfig" apply --server-side --force-conflicts \
      -f "$CACHE/bin/current/kwok-crds/kwok.x-k8s.io_portforwards.yaml" >>"$DIR/logs/kwok.log" 2>&1 ||
      tb_fail_with_log kwok "installing kwok's PortForward CRD failed"
    KWOK_PORT=$(tb_free_ports 1)
    tb_start kwok "$kwok_bin" --kubeconfig "$DIR/workload.kubeconfig" \
      --server-address "127.0.0.1:$KWOK_PORT" --tls-cert-file "$DIR/pki/serving.crt" \
      --tls-private-key-file "$DIR/pki/serving.key" --enable-crds PortForward \
      --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake
    tb_env_set KWOK_PORT "$KWOK_PORT"
    mkdir -p "$DIR/sim/etcd"
    kubelet_args=(--kubelet-socket "$DIR/run/kubelet.sock" --kubelet-address "127.0.0.1:$KWOK_PORT"
      --etcd-binary "$ETCD_BIN" --etcd-dir "$DIR/sim/etcd")
  else
    tb_log "kwok is not built (hack/build-testbins.sh kwok): guests have no kubelet API and no etcd"
  fi
  tb_start caphv-sim "$SIM_BIN" run --kubeconfig "$DIR/harvester.kubeconfig" \
    --workload-kubeconfig "$DIR/workload.kubeconfig" "${env_args[@]}" "${kubelet_args[@]}" \
    --health-probe-bind-address "127.0.0.1:$SIM_HEALTH_PORT" \
    --webhook-bind-address "127.0.0.1:$SIM_WEBHOOK_PORT" --cert-dir "$DIR/sim/certs"
  tb_env_set SIM_PID "$(<"$DIR/run/caphv-sim.pid")"
  tb_env_set SIM_BIN "$SIM_BIN"
  tb_env_set SIM_HEALTH_PORT "$SIM_HEALTH_PORT"
  tb_env_set SIM_WEBHOOK_PORT "$SIM_WEBHOOK_PORT"
  tb_wait_until caphv-sim caphv-sim tb_http_ok "http://127.0.0.1:$SIM_HEALTH_PORT/readyz"
  tb_log "Harvester simulator ready in $((($(tb_now_ms) - t0) / 1000))s"
}

# ---------------------------------------------------------------------------
# The Go provider CAPHV replaces (cluster-api-provider-harvester v0.2.9, built
# by hack/build-testbins.sh caphv-go) as a local process against mgmt: its
# CRDs as its release's infrastructure-components.yaml has them (with the
# Cluster API contract labels; they replace CAPHV's when applied: same group,
# kinds and version), then `caphv-go` with no leader election and no
# webhooks, metrics and probes on loopback. It reconciles HarvesterClusters of every namespace, so a bed
# runs it only while a scenario wants the Go provider in charge.

tb_up_go_provider() {
  local t0 config="$CACHE/bin/current/caphv-go-config" kc="$DIR/mgmt.kubeconfig" ports bin
  t0=$(tb_now_ms)
  bin=$(tb_binary CAPHV_GO_PROVIDER caphv-go)
  [ -f "$config/crds.yaml" ] ||
    tb_die "the Go provider's CRDs not found in $config/crds.yaml; run hack/build-testbins.sh caphv-go"
  command -v kubectl >/dev/null || tb_die "'kubectl' is required on PATH"
  # Whether CAPHV's CRDs (which also serve v1beta1) are the ones applied now.
  local served
  served=$(kubectl --kubeconfig "$kc" get crd harvesterclusters.infrastructure.cluster.x-k8s.io \
    -o jsonpath='{.spec.versions[*].name}' 2>/dev/null || true)
  # Same field manager as every other `kubectl apply --server-side` of these
  # CRDs (the tests', the install's), so each apply replaces the previous one.
  # Applied even when the provider runs already: CAPHV's may have replaced them.
  kubectl --kubeconfig "$kc" apply --server-side --force-conflicts -f "$config/crds.yaml" \
    >>"$DIR/logs/caphv-go-install.log" 2>&1 ||
    tb_fail_with_log caphv-go-install "applying the Go provider's CRDs failed"
  kubectl --kubeconfig "$kc" wait --for=condition=Established --timeout="${TIMEOUT}s" \
    -f "$config/crds.yaml" >>"$DIR/logs/caphv-go-install.log" 2>&1 ||
    tb_fail_with_log caphv-go-install "the Go provider's CRDs not established"
  # Going back from CAPHV to the Go provider takes v1beta1 away, which no user
  # does (they move the other way, which adds it). Cluster API's managers keep
  # their v1beta1 informers: they fail (404) and back off, and when CAPHV's
  # CRDs come back, a cache that has not re-listed yet answers NotFound for a
  # HarvesterMachine that exists (Cluster API then fails the Machine: "deleted
  # after provisioning") and misses a HarvesterCluster's deletion (the Cluster
  # waits for it forever). So the managers restart here, as new Deployments
  # would after a rollback, and know only the Go provider's version.
  if [[ " $served " == *" v1beta1 "* ]] && [ "${WITH_CAPI:-0}" = 1 ]; then
    tb_restart_capi_managers
  fi
  if tb_alive caphv-go; then
    tb_log "the Go provider is running already (pid $(tb_pid caphv-go)); its CRDs are applied"
    return 0
  fi
  read -r -a ports <<<"$(tb_free_ports 2)"
  GO_PROVIDER_METRICS_PORT=${ports[0]} GO_PROVIDER_HEALTH_PORT=${ports[1]}
  tb_start caphv-go "$bin" --kubeconfig="$kc" --leader-elect=false \
    --metrics-bind-address="127.0.0.1:$GO_PROVIDER_METRICS_PORT" \
    --health-probe-bind-address="127.0.0.1:$GO_PROVIDER_HEALTH_PORT" --zap-devel=false
  tb_env_set GO_PROVIDER_PID "$(<"$DIR/run/caphv-go.pid")"
  tb_env_set GO_PROVIDER_BIN "$bin"
  tb_env_set GO_PROVIDER_METRICS_PORT "$GO_PROVIDER_METRICS_PORT"
  tb_env_set GO_PROVIDER_HEALTH_PORT "$GO_PROVIDER_HEALTH_PORT"
  tb_wait_until caphv-go "the Go provider" tb_http_ok "http://127.0.0.1:$GO_PROVIDER_HEALTH_PORT/readyz"
  tb_env_set WITH_GO_PROVIDER 1
  tb_log "Go provider ready in $((($(tb_now_ms) - t0) / 1000))s"
}

# tb_restart_capi_managers: the Cluster API core manager and, on a bed with
# them, both RKE2 managers stopped and started again with the same flags and
# ports; returns once they are ready.
tb_restart_capi_managers() {
  local t0 managers=(capi) part
  t0=$(tb_now_ms)
  tb_capi_generation "${CAPI_GENERATION:-1.10}"
  CAPI_BIN=$(tb_binary CAPHV_CLUSTER_API cluster-api)
  # shellcheck disable=SC2153  # WITH_RKE2 comes from DIR/env
  [ "${WITH_RKE2:-0}" = 1 ] && managers+=(rke2-bootstrap rke2-controlplane)
  tb_stop "${managers[@]}"
  if [ "${WITH_RKE2:-0}" = 1 ]; then
    for part in bootstrap controlplane; do tb_start_rke2_manager "$part"; done
  fi
  tb_capi_start mgmt
  [ "${WITH_RKE2:-0}" = 1 ] && tb_wait_rke2 bootstrap controlplane
  tb_log "${managers[*]} restarted in $((($(tb_now_ms) - t0) / 1000))s"
}

# Stops the Go provider (TERM, then KILL after the grace period); its CRDs and
# everything it made stay, as after `kubectl scale --replicas=0` of its Deployment.
tb_down_go_provider() {
  tb_stop caphv-go
  tb_env_set GO_PROVIDER_PID ""
  tb_env_set WITH_GO_PROVIDER 0
  tb_log "Go provider stopped"
}
