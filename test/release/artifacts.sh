#!/usr/bin/env bash
# The release's files as a user gets them, without a cluster: checksums, clusterctl's
# view of the provider, infrastructure-components.yaml = kubectl kustomize config/default
# (but for the image and the clusterctl variables), metadata, the Helm chart (lint and
# every value combination), the alerting rules (promtool) and the dashboard's metrics.
# shellcheck source=test/release/lib.sh
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

check "SHA256SUMS lists every file and matches" bash -c "cd '$REL' && sha256sum --quiet -c SHA256SUMS &&
  [ \"\$(ls | grep -vx SHA256SUMS | sort)\" = \"\$(awk '{print \$2}' SHA256SUMS | sort)\" ]"
for f in infrastructure-components.yaml metadata.yaml cluster-template.yaml cluster-template-rke2.yaml \
  cluster-template-rke2-dhcp.yaml cluster-template-rke2-stig.yaml cluster-template-kubeadm.yaml \
  clusterclass-harvester-rke2.yaml \
  clusterclass-harvester-rke2-v1beta2.yaml \
  clusterresourceset-harvester-cloud-provider.yaml clusterresourceset-harvester-csi-driver.yaml \
  machinehealthcheck-harvester-rke2.yaml capiprovider-harvester.yaml "caphv-${VERSION#v}.tgz" \
  caphv-dashboard.json caphv-alerts.yaml; do
  [ -s "$REL/$f" ] || fail "the release has no $f"
done

# --- clusterctl: a local repository (<dir>/infrastructure-harvester/<version>/).
repo=$work/repo/infrastructure-harvester/$VERSION
mkdir -p "$repo"
cp "$REL"/* "$repo/"
printf 'providers:\n- name: harvester\n  type: InfrastructureProvider\n  url: file://%s/infrastructure-components.yaml\n' "$repo" >"$work/clusterctl.yaml"
cc=("$CLUSTERCTL" --config "$work/clusterctl.yaml")
"${cc[@]}" generate provider --infrastructure "harvester:$VERSION" --describe >"$work/describe" 2>&1 || true
for want in "Version: *$VERSION" "TargetNamespace: *caphv-system" "- CAPHV_CONCURRENCY" "- CAPHV_LOG_LEVEL" \
  "- CAPHV_WATCH_FILTER" "- localhost/caphv-manager:$VERSION"; do
  grep -q -- "$want" "$work/describe" || { fail "clusterctl generate provider --describe lacks '$want'"; cat "$work/describe" >&2; }
done
"${cc[@]}" generate provider --infrastructure "harvester:$VERSION" >"$work/defaults.yaml" 2>"$work/err" ||
  fail "clusterctl generate provider (defaults): $(cat "$work/err")"
CAPHV_LOG_LEVEL=6 CAPHV_CONCURRENCY=3 CAPHV_WATCH_FILTER=team-a "${cc[@]}" generate provider \
  --infrastructure "harvester:$VERSION" >"$work/set.yaml" 2>"$work/err" || fail "clusterctl generate provider (set): $(cat "$work/err")"
grep -A3 -- '- -v=6$' "$work/set.yaml" | tr -d ' ' | tr '\n' ' ' | grep -q -- '--concurrency=3 ---watch-filter -team-a' ||
  fail "the variables do not reach the manager's arguments: $(grep -A3 -- '- -v=' "$work/set.yaml")"

# --- infrastructure-components.yaml is config/default, with the variables' defaults
# (as clusterctl renders it) and the image of the release.
"$KUBECTL" kustomize "$ROOT/config/default" >"$work/kustomize.yaml"
if python3 - "$work/kustomize.yaml" "$REL/infrastructure-components.yaml" "$VERSION" <<'PY'; then
import re, sys, yaml
def load(text):
    return {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d
            for d in yaml.safe_load_all(text) if d}
ours = load(open(sys.argv[1]).read())
# The variables as clusterctl substitutes them when unset: ${NAME:=default} -> default.
text = open(sys.argv[2]).read()
names = re.findall(r"\$\{([A-Z_]+):=", text)
assert sorted(set(names)) == ["CAPHV_CONCURRENCY", "CAPHV_LOG_LEVEL", "CAPHV_WATCH_FILTER"], names
rel = load(re.sub(r"\$\{[A-Z_]+:=([^}]*)\}", r"\1", text))
version = sys.argv[3]
# The release sets the image and adds two flags (their defaults).
dep = rel[("Deployment", "caphv-system", "caphv-controller-manager")]
c = dep["spec"]["template"]["spec"]["containers"][0]
assert c["image"] == "localhost/caphv-manager:" + version, c["image"]
c["image"] = ours[("Deployment", "caphv-system", "caphv-controller-manager")]["spec"]["template"]["spec"]["containers"][0]["image"]
extra = ["--concurrency=10", "--watch-filter", ""]
i = c["args"].index("--concurrency=10")
assert c["args"][i:i + 3] == extra, c["args"]
del c["args"][i:i + 3]
if set(ours) != set(rel):
    print("objects only in config/default:", sorted(set(ours) - set(rel)), file=sys.stderr)
    print("objects only in the release:", sorted(set(rel) - set(ours)), file=sys.stderr)
    sys.exit(1)
bad = [k for k in ours if ours[k] != rel[k]]
if bad:
    print("objects that differ:", bad, file=sys.stderr)
    sys.exit(1)
PY
  pass "infrastructure-components.yaml = kubectl kustomize config/default + image + variables"
else
  fail "infrastructure-components.yaml differs from kubectl kustomize config/default"
fi

# --- The MachineHealthChecks: clusterctl renders them; the defaults are the operations
# guide's settings, each variable reaches both checks.
mhc=$REL/machinehealthcheck-harvester-rke2.yaml
check "machinehealthcheck-harvester-rke2.yaml: clusterctl lists its variables" bash -c \
  "CLUSTERCTL_DISABLE_VERSIONCHECK=true '$CLUSTERCTL' --config '$work/clusterctl.yaml' generate yaml --from '$mhc' --list-variables |
   tr -d ' ' | grep -x -- '-[A-Z_]*' | tr '\n' ' ' | grep -qx -- '-CLUSTER_NAME -MHC_MAX_UNHEALTHY -MHC_NODE_STARTUP_TIMEOUT -MHC_UNHEALTHY_TIMEOUT -NAMESPACE '"
for variant in defaults set; do
  vars=(NAMESPACE=team-a CLUSTER_NAME=c1)
  [ "$variant" = set ] && vars+=(MHC_MAX_UNHEALTHY=2 MHC_NODE_STARTUP_TIMEOUT=3m MHC_UNHEALTHY_TIMEOUT=45s)
  if ! env CLUSTERCTL_DISABLE_VERSIONCHECK=true "${vars[@]}" "${cc[@]}" generate yaml --from "$mhc" \
    >"$work/mhc-$variant.yaml" 2>"$work/err"; then
    fail "clusterctl generate yaml --from machinehealthcheck-harvester-rke2.yaml ($variant): $(cat "$work/err")"; continue
  fi
  check "machinehealthcheck-harvester-rke2.yaml ($variant): workers and control plane of c1" \
    python3 - "$work/mhc-$variant.yaml" "$variant" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
want = ("34%", "20m", "5m") if sys.argv[2] == "defaults" else (2, "3m", "45s")
assert [(d["kind"], d["metadata"]["name"], d["metadata"]["namespace"]) for d in docs] == [
    ("MachineHealthCheck", "c1-workers", "team-a"), ("MachineHealthCheck", "c1-control-plane", "team-a")], docs
for d in docs:
    s = d["spec"]
    assert s["clusterName"] == "c1", s
    assert (s["maxUnhealthy"], s["nodeStartupTimeout"]) == want[:2], s
    assert s["unhealthyConditions"] == [{"type": "Ready", "status": "False", "timeout": want[2]},
                                        {"type": "Ready", "status": "Unknown", "timeout": want[2]}], s
# Workers: the Machines of every MachineDeployment of the topology; control plane: its Machines.
assert docs[0]["spec"]["selector"] == {"matchExpressions": [
    {"key": "topology.cluster.x-k8s.io/deployment-name", "operator": "Exists"}]}, docs[0]["spec"]["selector"]
assert docs[1]["spec"]["selector"] == {"matchLabels": {"cluster.x-k8s.io/control-plane": ""}}, docs[1]["spec"]["selector"]
PY
done

# The Go provider's own metadata (its newest release's), when its tarball is here: every series
# it declares is in ours with its contract (0.3 aside: CAPHV's first series said v1beta1).
go_metadata=$work/go-metadata.yaml
go_tarball=${CAPHV_THIRD_PARTY:-$ROOT/../shared/third_party}/cluster-api-provider-harvester-v0.10.1.tar.gz
if [ -f "$go_tarball" ]; then
  tar -xzOf "$go_tarball" --wildcards '*/metadata.yaml' >"$go_metadata" 2>/dev/null || : >"$go_metadata"
else
  : >"$go_metadata"
fi
check "metadata.yaml: this release's series v1beta2 and above the Go provider's; theirs as it declares them" \
  python3 - "$REL/metadata.yaml" "$VERSION" "$go_metadata" <<'PY'
import sys, yaml
def series_of(path):
    m = yaml.safe_load(open(path))
    assert m["apiVersion"] == "clusterctl.cluster.x-k8s.io/v1alpha3" and m["kind"] == "Metadata", m
    return {(s["major"], s["minor"]): s["contract"] for s in m["releaseSeries"]}
series = series_of(sys.argv[1])
major, minor = (int(x) for x in sys.argv[2][1:].split(".")[:2])
assert series.get((major, minor)) == "v1beta2", ("the release's own series", series)
assert (major, minor) == max(series), ("the release's series is not the newest", series)
assert series == {(0, 11): "v1beta2", **{(0, m): "v1beta2" for m in range(4, 11)},
                  (0, 3): "v1beta1", (0, 2): "v1beta1", (0, 1): "v1beta1"}, series
if open(sys.argv[3]).read().strip():
    upstream = series_of(sys.argv[3])
    differ = {k: (v, series.get(k)) for k, v in upstream.items() if k != (0, 3) and series.get(k) != v}
    assert not differ, ("series the Go provider declares otherwise", differ)
PY

check "capiprovider-harvester.yaml: Turtles CAPIProvider of this release" python3 - "$REL/capiprovider-harvester.yaml" "$VERSION" <<'PY'
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
assert p["apiVersion"] == "turtles-capi.cattle.io/v1alpha1" and p["kind"] == "CAPIProvider"
assert p["metadata"] == {"name": "harvester", "namespace": "caphv-system"}, p["metadata"]
s = p["spec"]
assert s["name"] == "harvester" and s["type"] == "infrastructure" and s["version"] == sys.argv[2], s
assert s["fetchConfig"]["url"].endswith("/" + sys.argv[2] + "/infrastructure-components.yaml"), s
PY

# --- The class for the RKE2 providers v0.22+: the same documents, every apiVersion (and ref) of
# the two RKE2 groups at v1beta2, nothing else changed.
check "clusterclass-harvester-rke2-v1beta2.yaml: the RKE2 groups at v1beta2, the rest as is" python3 - \
  "$REL/clusterclass-harvester-rke2.yaml" "$REL/clusterclass-harvester-rke2-v1beta2.yaml" <<'PY'
import sys, yaml
old, new = ([d for d in yaml.safe_load_all(open(f)) if d] for f in sys.argv[1:3])
groups = ("controlplane.cluster.x-k8s.io/", "bootstrap.cluster.x-k8s.io/")
moved = 0
def walk(a, b):
    global moved
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), (a, b)
        for k in a:
            if k == "apiVersion" and isinstance(a[k], str) and a[k].startswith(groups):
                assert a[k].endswith("/v1beta1") and b[k] == a[k][:-len("v1beta1")] + "v1beta2", (a[k], b[k])
                moved += 1
            else:
                walk(a[k], b[k])
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            walk(x, y)
    else:
        assert a == b, (a, b)
walk(old, new)
kinds = {d["kind"] for d in new if d["apiVersion"].endswith("/v1beta2")}
assert kinds == {"RKE2ControlPlaneTemplate", "RKE2ConfigTemplate"}, kinds
assert moved >= 4, moved  # the two templates, the class's refs to them, the patches' selectors
PY

# The chart's class with clusterClass.rke2ApiVersion=v1beta2 is that file (but its namespace).
if "$HELM" template caphv "$REL/caphv-${VERSION#v}.tgz" -n team-a --set clusterClass.enabled=true \
  --set clusterClass.rke2ApiVersion=v1beta2 --show-only templates/clusterclass.yaml >"$work/cc2.yaml" 2>"$work/err"; then
  check "helm clusterClass.rke2ApiVersion=v1beta2: the release's v1beta2 class" python3 - \
    "$work/cc2.yaml" "$REL/clusterclass-harvester-rke2-v1beta2.yaml" <<'PY'
import sys, yaml
chart, rel = ([d for d in yaml.safe_load_all(open(f)) if d] for f in sys.argv[1:3])
for d in rel:
    d["metadata"]["namespace"] = "team-a"
key = lambda d: (d["kind"], d["metadata"]["name"])
for d in chart:
    d["metadata"].pop("labels", None)
for d in rel:
    d["metadata"].pop("labels", None)
assert sorted(chart, key=key) == sorted(rel, key=key), [key(d) for d in chart]
PY
else
  fail "helm template clusterClass.rke2ApiVersion=v1beta2: $(cat "$work/err")"
fi
check "helm clusterClass.rke2ApiVersion=v1 is refused naming the value" bash -c "out=\$('$HELM' template caphv \
  '$REL/caphv-${VERSION#v}.tgz' --set clusterClass.enabled=true --set clusterClass.rke2ApiVersion=v1 2>&1 >/dev/null) &&
  exit 1; grep -q 'clusterClass.rke2ApiVersion: \"v1\" is not an API of the RKE2 providers' <<<\"\$out\""

# --- The ClusterClass's addons, rendered as the operations guide says (clusterctl generate
# yaml): their variables, and what they install, against what the ClusterClass tells CAPHV
# (the ConfigMap and key it writes the credentials into, the Secret it writes).
check "addons: clusterctl lists their variables" bash -c "
  [ \"\$('$CLUSTERCTL' generate yaml --from '$REL/clusterresourceset-harvester-cloud-provider.yaml' --list-variables | sed -n 's/^  - //p' | tr '\n' ' ')\" = 'CLUSTER_NAME HARVESTER_CLOUD_PROVIDER_VERSION NAMESPACE ' ] &&
  [ \"\$('$CLUSTERCTL' generate yaml --from '$REL/clusterresourceset-harvester-csi-driver.yaml' --list-variables | sed -n 's/^  - //p' | tr '\n' ' ')\" = 'HARVESTER_CSI_DRIVER_VERSION NAMESPACE ' ]"
if CLUSTER_NAME=c1 NAMESPACE=team-a "$CLUSTERCTL" generate yaml --from "$REL/clusterresourceset-harvester-cloud-provider.yaml" \
  >"$work/ccm.yaml" 2>"$work/err" && NAMESPACE=team-a HARVESTER_CSI_DRIVER_VERSION=v0.1.5 "$CLUSTERCTL" generate yaml \
  --from "$REL/clusterresourceset-harvester-csi-driver.yaml" >"$work/csi.yaml" 2>>"$work/err"; then
  check "addons: what they install, as the ClusterClass expects" python3 - "$work/ccm.yaml" "$work/csi.yaml" \
    "$REL/clusterclass-harvester-rke2.yaml" <<'PY'
import sys, yaml
ccm, csi, cc = ([d for d in yaml.safe_load_all(open(f)) if d] for f in sys.argv[1:4])
def one(docs, kind, name=None):
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, (kind, name, [(d["kind"], d["metadata"]["name"]) for d in docs])
    return found[0]
# The class points CAPHV at cloud-config-addon-<cluster>, key cloud-config.yaml, Secret cloud-config/cloud-config.
hct = one(cc, "HarvesterClusterTemplate")["spec"]["template"]["spec"]["updateCloudProviderConfig"]
patch = next(p for p in one(cc, "ClusterClass")["spec"]["patches"] if p["name"] == "cloudProviderManifests")
ops = {o["path"].rsplit("/", 1)[1]: o["valueFrom"]["template"] for o in patch["definitions"][0]["jsonPatches"]}
assert ops["manifestsConfigMapName"] == "cloud-config-addon-{{ .builtin.cluster.name }}", ops
cm = one(ccm, "ConfigMap", "cloud-config-addon-c1")
assert cm["metadata"]["namespace"] == "team-a" and list(cm["data"]) == [hct["manifestsConfigMapKey"]], cm["metadata"]
objs = [d for d in yaml.safe_load_all(cm["data"][hct["manifestsConfigMapKey"]]) if d]
secret = one(objs, "Secret", hct["cloudConfigCredentialsSecretName"])
assert secret["metadata"]["namespace"] == "kube-system" and "data" not in secret, secret
dep = one(objs, "Deployment", "harvester-cloud-provider")
pod = dep["spec"]["template"]["spec"]
assert pod["hostNetwork"] is True, pod
c = pod["containers"][0]
assert c["image"] == "rancher/harvester-cloud-provider:v0.2.1", c["image"]
assert c["args"] == ["--cloud-config=/etc/kubernetes/" + hct["cloudConfigCredentialsSecretKey"], "--cluster-name=c1"], c["args"]
assert pod["volumes"] == [{"name": "cloud-config", "secret": {"secretName": "cloud-config"}}], pod["volumes"]
tolerated = {(t["key"], t.get("effect")) for t in pod["tolerations"]}
for t in [("node-role.kubernetes.io/control-plane", "NoSchedule"), ("node-role.kubernetes.io/etcd", "NoExecute"),
          ("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule"), ("node.kubernetes.io/not-ready", "NoSchedule")]:
    assert t in tolerated, (t, tolerated)
sa = pod["serviceAccountName"]
crb = one(objs, "ClusterRoleBinding", "harvester-cloud-controller-manager")
assert crb["subjects"] == [{"kind": "ServiceAccount", "name": sa, "namespace": "kube-system"}], crb
rules = one(objs, "ClusterRole", crb["roleRef"]["name"])["rules"]
def allowed(res, verb): return any(res in r["resources"] and verb in r["verbs"] for r in rules)
for res, verb in [("nodes", "patch"), ("nodes/status", "patch"), ("services", "watch"), ("services/status", "patch"),
                  ("leases", "update"), ("events", "create")]:
    assert allowed(res, verb), (res, verb)
crs = one(ccm, "ClusterResourceSet")
assert crs["metadata"] == {"name": "c1-harvester-cloud-provider", "namespace": "team-a"}, crs["metadata"]
assert crs["spec"] == {"clusterSelector": {"matchLabels": {"cluster.x-k8s.io/cluster-name": "c1"}},
                       "resources": [{"kind": "ConfigMap", "name": "cloud-config-addon-c1"}], "strategy": "Reconcile"}, crs["spec"]
# CSI: the driver reads the same Secret; every Cluster labelled csi: external.
cm = one(csi, "ConfigMap", "harvester-csi-driver")
objs = [d for d in yaml.safe_load_all(cm["data"]["harvester-csi-driver.yaml"]) if d]
ds = one(objs, "DaemonSet", "harvester-csi-plugin")["spec"]["template"]["spec"]
plugin = next(c for c in ds["containers"] if c["name"] == "harvester-csi-plugin")
assert plugin["image"] == "rancher/harvester-csi-driver:v0.1.5", plugin["image"]
assert {"name": "cloud-config", "secret": {"secretName": secret["metadata"]["name"]}} in ds["volumes"], ds["volumes"]
one(objs, "Deployment", "csi-controller"); one(objs, "CSIDriver", "driver.harvesterhci.io"); one(objs, "StorageClass", "harvester")
crs = one(csi, "ClusterResourceSet")
assert crs["spec"]["clusterSelector"] == {"matchLabels": {"csi": "external"}} and crs["spec"]["strategy"] == "Reconcile", crs
assert crs["spec"]["resources"] == [{"kind": "ConfigMap", "name": "harvester-csi-driver"}], crs
PY
else
  fail "clusterctl generate yaml of the addons: $(cat "$work/err")"
fi

# --- The Helm chart.
chart=$REL/caphv-${VERSION#v}.tgz
check "helm lint" "$HELM" lint --strict "$chart"
check "chart version and appVersion" bash -c "'$HELM' show chart '$chart' | grep -qx 'version: ${VERSION#v}' &&
  '$HELM' show chart '$chart' | grep -qx 'appVersion: $VERSION'"
check "chart values have the guide's keys" python3 -c "
import sys, yaml, subprocess
v = yaml.safe_load(subprocess.run(['$HELM', 'show', 'values', '$chart'], capture_output=True, check=True).stdout)
assert v['image']['repository'] and 'tag' in v['image'] and v['image']['pullPolicy'] == 'IfNotPresent'
assert v['webhooks']['enabled'] is False and v['webhooks']['certManager']['enabled'] is False
assert v['clusterClass']['enabled'] is False"
for wh in false true; do for cm in false true; do for ccl in false true; do
  name="webhooks=$wh certManager=$cm clusterClass=$ccl"
  if ! "$HELM" template caphv "$chart" -n caphv-system --set "webhooks.enabled=$wh" \
    --set "webhooks.certManager.enabled=$cm" --set "clusterClass.enabled=$ccl" >"$work/h.yaml" 2>"$work/err"; then
    fail "helm template $name: $(cat "$work/err")"; continue
  fi
  check "helm template $name: the objects that belong" python3 - "$work/h.yaml" "$wh" "$cm" "$ccl" "$VERSION" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
wh, cm, ccl = (a == "true" for a in sys.argv[2:5])
kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
def has(k, n): return (k, n) in kinds
for k, n in [("Deployment", "caphv-controller-manager"), ("ServiceAccount", "caphv-controller-manager"),
             ("ClusterRole", "caphv-manager-role"), ("ClusterRole", "caphv-metrics-reader"), ("ClusterRole", "caphv-proxy-role"),
             ("ClusterRoleBinding", "caphv-manager-rolebinding"), ("ClusterRoleBinding", "caphv-proxy-rolebinding"),
             ("Role", "caphv-leader-election-role"), ("RoleBinding", "caphv-leader-election-rolebinding"),
             ("Service", "caphv-controller-manager-metrics-service")]:
    assert has(k, n), (k, n)
assert has("Service", "caphv-webhook-service") == wh
assert has("ValidatingWebhookConfiguration", "caphv-validating-webhook-configuration") == wh
assert has("MutatingWebhookConfiguration", "caphv-mutating-webhook-configuration") == wh
assert has("Issuer", "caphv-selfsigned-issuer") == (wh and cm)
assert has("Certificate", "caphv-serving-cert") == (wh and cm)
assert has("ClusterClass", "harvester-rke2") == ccl
assert not has("ServiceMonitor", "caphv-controller-manager-metrics-monitor")
dep = next(d for d in docs if d["kind"] == "Deployment")
c = dep["spec"]["template"]["spec"]["containers"][0]
assert c["image"].endswith(":" + sys.argv[5]), c["image"]
assert ("--enable-webhooks" in c["args"]) == wh, c["args"]
assert ("volumes" in dep["spec"]["template"]["spec"]) == wh
for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration") if wh else ():
    cfg = next(d for d in docs if d["kind"] == kind)
    ann = cfg["metadata"].get("annotations", {})
    assert (ann.get("cert-manager.io/inject-ca-from") == "caphv-system/caphv-serving-cert") == cm, (kind, ann)
for d in docs:
    if d["kind"] not in ("ClusterRole", "ClusterRoleBinding", "ValidatingWebhookConfiguration",
                         "MutatingWebhookConfiguration"):
        assert d["metadata"].get("namespace") == "caphv-system", d["metadata"]
PY
done; done; done

# --- Alerting rules: the guide's six and CAPHV's two identity alerts, each with a unit test that
# fires and one that does not.
check "promtool check rules" "$PROMTOOL" check rules "$REL/caphv-alerts.yaml"
cp "$REL/caphv-alerts.yaml" "$work/"
sed "s|^- ../../config/prometheus/caphv-alerts.yaml|- caphv-alerts.yaml|" "$ROOT/test/release/caphv-alerts-test.yaml" >"$work/alerts-test.yaml"
check "promtool test rules (the released rules)" "$PROMTOOL" test rules "$work/alerts-test.yaml"
check "eight alerts, each tested firing and not firing" python3 - "$REL/caphv-alerts.yaml" "$work/alerts-test.yaml" <<'PY'
import sys, yaml
rules = yaml.safe_load(open(sys.argv[1]))["groups"][0]["rules"]
names = [r["alert"] for r in rules]
assert names == ["CAPHVMachineCreateErrors", "CAPHVMachineNotReady", "CAPHVIPPoolAllocationErrors",
                 "CAPHVClusterNotReady", "CAPHVEtcdRemoveErrors", "CAPHVSlowMachineCreation",
                 "CAPHVIdentityTokenExpiringSoon", "CAPHVIdentityTokenExpired"], names
fires, quiet = set(), set()
for t in yaml.safe_load(open(sys.argv[2]))["tests"]:
    for a in t.get("alert_rule_test", []):
        (fires if a.get("exp_alerts") else quiet).add(a["alertname"])
assert fires == set(names) and quiet == set(names), (fires, quiet)
PY

# --- The dashboard queries only the metrics the manager serves.
check "dashboard metrics are the manager's" python3 - "$REL/caphv-dashboard.json" "$ROOT/src/controllers/metrics.cc" <<'PY'
import json, re, sys
served = set(re.findall(r'"(caphv_[a-z_]+)"', open(sys.argv[2]).read()))
assert len(served) == 19, served
d = json.load(open(sys.argv[1]))
exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
exprs += [v["query"]["query"] for v in d["templating"]["list"] if isinstance(v.get("query"), dict)]
used = set()
for e in exprs:
    for m in re.findall(r"\bcaphv_[a-z_]+", e):
        base = re.sub(r"_(bucket|count|sum)$", "", m)
        assert base in served, f"{m} in {e!r} is not served by the manager"
        used.add(base)
assert used == served, f"metrics without a panel: {sorted(served - used)}"
PY

finish
