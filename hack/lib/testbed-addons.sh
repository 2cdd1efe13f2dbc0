# shellcheck shell=bash
# Optional parts of the test bed, sourced by hack/testbed:
#   tb_up_capi [NAME] Cluster API core CRDs + webhooks + manager against mgmt
#                     (or against the management cluster NAME of `add-cluster`)
#   tb_up_harvester   the Harvester simulator (caphv-sim) against harvester
# Both run after the clusters are ready and use the variables set by cmd_up
# or cmd_add_cluster (DIR, CACHE, TIMEOUT, ports, binaries).

# ---------------------------------------------------------------------------
# Cluster API core manager as a local process. Its webhooks are registered
# with clientConfig.url=https://127.0.0.1:<port><path> and the bed's CA, the
# way CAPI's own envtest does it.

# Rewrites CAPI's webhook configurations (YAML file $1) for a local server on
# port $2; prints a JSON List. Reads YAML with PyYAML when present, otherwise
# lets kubectl (kubeconfig $3) turn it into a stream of JSON objects.
tb_capi_webhooks_json() {
  local mode=json
  python3 -c 'import yaml' 2>/dev/null && mode=yaml
  {
    if [ "$mode" = yaml ]; then cat "$1"; else
      kubectl --kubeconfig "$3" create --dry-run=client -o json -f "$1"
    fi
  } | python3 -c '
import base64, json, sys
mode, port, ca_file = sys.argv[1:4]
ca = base64.b64encode(open(ca_file, "rb").read()).decode()
text = sys.stdin.read()
if mode == "yaml":
    import yaml
    docs = [d for d in yaml.safe_load_all(text) if d]
else:
    docs, dec, i = [], json.JSONDecoder(), 0
    while text[i:].strip():
        i += len(text[i:]) - len(text[i:].lstrip())
        obj, i = dec.raw_decode(text, i)
        docs.append(obj)
items = []
for doc in docs:
    items.extend(doc["items"] if doc.get("kind") == "List" else [doc])
for obj in items:
    meta = obj["metadata"]
    meta["name"] = "capi-" + meta["name"]
    meta.pop("annotations", None)
    for hook in obj.get("webhooks", []):
        svc = hook["clientConfig"].get("service", {})
        hook["clientConfig"] = {
            "url": "https://127.0.0.1:%s%s" % (port, svc.get("path", "/")),
            "caBundle": ca,
        }
if not items:
    sys.exit("no webhook configurations found")
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)
' "$mode" "$2" "$DIR/pki/ca.crt"
}

# tb_up_capi [NAME]: NAME is mgmt (default: the process `capi`, files in
# DIR/capi, env keys CAPI_*, ports $CAPI_*_PORT) or a management cluster added
# by `add-cluster` (process `capi-NAME`, DIR/capi-NAME, env keys NAME_CAPI_*,
# ports $NAME_CAPI_*_PORT).
tb_up_capi() {
  local name=${1:-mgmt} t0 config="$CACHE/bin/current/config" kc deadline comp cdir key
  local webhook_port health_port diag_port
  kc="$DIR/$name.kubeconfig"
  if [ "$name" = mgmt ]; then comp=capi key=CAPI; else comp=capi-$name key=${name^^}_CAPI; fi
  cdir="$DIR/$comp"
  webhook_port=${key}_WEBHOOK_PORT health_port=${key}_HEALTH_PORT diag_port=${key}_DIAGNOSTICS_PORT
  webhook_port=${!webhook_port} health_port=${!health_port} diag_port=${!diag_port}
  t0=$(tb_now_ms)
  if [ ! -d "$config/crd/bases" ] || [ ! -f "$config/webhook/manifests.yaml" ]; then
    tb_die "Cluster API manifests not found in $config; run hack/build-testbins.sh capi"
  fi
  mkdir -p "$cdir/certs"
  cp "$DIR/pki/serving.crt" "$cdir/certs/tls.crt"
  cp "$DIR/pki/serving.key" "$cdir/certs/tls.key"

  # CRDs straight from bases/: v1.10 serves only v1beta1, no conversion needed.
  # Server-side apply: some CRDs are too big for the last-applied annotation.
  kubectl --kubeconfig "$kc" apply --server-side -f "$config/crd/bases" >>"$DIR/logs/$comp-install.log" 2>&1 ||
    tb_fail_with_log "$comp-install" "applying Cluster API CRDs failed"
  kubectl --kubeconfig "$kc" wait --for=condition=Established --timeout="${TIMEOUT}s" \
    -f "$config/crd/bases" >>"$DIR/logs/$comp-install.log" 2>&1 ||
    tb_fail_with_log "$comp-install" "Cluster API CRDs not established"
  tb_capi_webhooks_json "$config/webhook/manifests.yaml" "$webhook_port" "$kc" >"$cdir/webhooks.json" \
    2>>"$DIR/logs/$comp-install.log" ||
    tb_fail_with_log "$comp-install" "rewriting $config/webhook/manifests.yaml failed"
  kubectl --kubeconfig "$kc" apply --server-side -f "$cdir/webhooks.json" >>"$DIR/logs/$comp-install.log" 2>&1 ||
    tb_fail_with_log "$comp-install" "registering Cluster API webhooks failed"

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
  deadline=$(($(date +%s) + TIMEOUT))
  until tb_http_ok "http://127.0.0.1:$health_port/readyz" &&
    kubectl --kubeconfig "$kc" create --dry-run=server -o name -f - >/dev/null 2>&1 <<'EOF'; do
apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata:
  name: testbed-probe
  namespace: default
spec: {}
EOF
    tb_alive "$comp" || tb_fail_with_log "$comp" "Cluster API manager exited"
    [ "$(date +%s)" -lt "$deadline" ] || tb_fail_with_log "$comp" "Cluster API manager not ready after ${TIMEOUT}s"
    sleep 0.5
  done
  tb_log "Cluster API ready on '$name' in $((($(tb_now_ms) - t0) / 1000))s"
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
  local t0 deadline env_args=()
  t0=$(tb_now_ms)
  # CAPHV_SIM_ENV: an environment YAML for the simulator (default: built-in).
  [ -n "${CAPHV_SIM_ENV:-}" ] && env_args=(--env "$CAPHV_SIM_ENV")
  if ! timeout "$TIMEOUT" "$SIM_BIN" install --kubeconfig "$DIR/harvester.kubeconfig" "${env_args[@]}" \
    </dev/null >>"$DIR/logs/caphv-sim-install.log" 2>&1; then
    tb_fail_with_log caphv-sim-install "caphv-sim install failed"
  fi
  # Its validating webhook serves with the bed's certificate.
  mkdir -p "$DIR/sim/certs"
  cp "$DIR/pki/serving.crt" "$DIR/sim/certs/tls.crt"
  cp "$DIR/pki/serving.key" "$DIR/sim/certs/tls.key"
  cp "$DIR/pki/ca.crt" "$DIR/sim/certs/ca.crt"
  tb_start caphv-sim "$SIM_BIN" run --kubeconfig "$DIR/harvester.kubeconfig" \
    --workload-kubeconfig "$DIR/workload.kubeconfig" "${env_args[@]}" \
    --health-probe-bind-address "127.0.0.1:$SIM_HEALTH_PORT" \
    --webhook-bind-address "127.0.0.1:$SIM_WEBHOOK_PORT" --cert-dir "$DIR/sim/certs"
  tb_env_set SIM_PID "$(<"$DIR/run/caphv-sim.pid")"
  tb_env_set SIM_BIN "$SIM_BIN"
  tb_env_set SIM_HEALTH_PORT "$SIM_HEALTH_PORT"
  tb_env_set SIM_WEBHOOK_PORT "$SIM_WEBHOOK_PORT"
  deadline=$(($(date +%s) + TIMEOUT))
  until tb_http_ok "http://127.0.0.1:$SIM_HEALTH_PORT/readyz"; do
    tb_alive caphv-sim || tb_fail_with_log caphv-sim "caphv-sim exited"
    [ "$(date +%s)" -lt "$deadline" ] || tb_fail_with_log caphv-sim "caphv-sim not ready after ${TIMEOUT}s"
    sleep 0.5
  done
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
  local t0 config="$CACHE/bin/current/caphv-go-config" kc="$DIR/mgmt.kubeconfig" deadline ports bin
  t0=$(tb_now_ms)
  bin=$(tb_binary CAPHV_GO_PROVIDER caphv-go)
  [ -f "$config/crds.yaml" ] ||
    tb_die "the Go provider's CRDs not found in $config/crds.yaml; run hack/build-testbins.sh caphv-go"
  command -v kubectl >/dev/null || tb_die "'kubectl' is required on PATH"
  # Same field manager as every other `kubectl apply --server-side` of these
  # CRDs (the tests', the install's), so each apply replaces the previous one.
  # Applied even when the provider runs already: CAPHV's may have replaced them.
  kubectl --kubeconfig "$kc" apply --server-side --force-conflicts -f "$config/crds.yaml" \
    >>"$DIR/logs/caphv-go-install.log" 2>&1 ||
    tb_fail_with_log caphv-go-install "applying the Go provider's CRDs failed"
  kubectl --kubeconfig "$kc" wait --for=condition=Established --timeout="${TIMEOUT}s" \
    -f "$config/crds.yaml" >>"$DIR/logs/caphv-go-install.log" 2>&1 ||
    tb_fail_with_log caphv-go-install "the Go provider's CRDs not established"
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
  deadline=$(($(date +%s) + TIMEOUT))
  until tb_http_ok "http://127.0.0.1:$GO_PROVIDER_HEALTH_PORT/readyz"; do
    tb_alive caphv-go || tb_fail_with_log caphv-go "the Go provider exited"
    [ "$(date +%s)" -lt "$deadline" ] || tb_fail_with_log caphv-go "the Go provider not ready after ${TIMEOUT}s"
    sleep 0.5
  done
  tb_env_set WITH_GO_PROVIDER 1
  tb_log "Go provider ready in $((($(tb_now_ms) - t0) / 1000))s"
}

# Stops the Go provider (TERM, then KILL after the grace period); its CRDs and
# everything it made stay, as after `kubectl scale --replicas=0` of its Deployment.
tb_down_go_provider() {
  tb_stop caphv-go
  tb_env_set GO_PROVIDER_PID ""
  tb_env_set WITH_GO_PROVIDER 0
  tb_log "Go provider stopped"
}
