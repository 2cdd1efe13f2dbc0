#!/usr/bin/env bash
# The release's files as a user gets them, without a cluster: checksums, clusterctl's
# view of the provider, infrastructure-components.yaml = kubectl kustomize config/default
# (but for the image and the clusterctl variables), metadata, the Helm chart (lint and
# every value combination), the alerting rules (promtool) and the dashboard's metrics.
# shellcheck source=test/release/lib.sh
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The checks of the files' contents are jq programs; yq (Debian's: PyYAML's reading, YAML 1.2
# scalars, handed to jq) reads the YAML. Their helpers, in jq:
jq_defs=$(cat <<'JQ'
# Python's truth: null, false, 0, "" and empty lists and mappings are false.
def truthy: . != null and . != false and . != 0 and . != "" and . != [] and . != {};
# The documents of a file (a list) but the empty ones.
def nonempty: map(select(truthy));
# The document of a file that has at most one (null when it has none).
def single: if length <= 1 then .[0] else error("expected a single document, got \(length)") end;
# need(COND; SHOWN): . when COND holds; else the program stops printing SHOWN.
def need(cond; shown):
  if cond then . else "assertion failed: \(shown | if type == "string" then . else tojson end)\n" | halt_error(1) end;
# each(CHECKS): runs CHECKS (a stream of need(...)), then gives .
def each(checks): . as $in | [checks] | $in;
# at(KEY): the value of a mapping's key or a list's item; an error when it has none.
def at($k):
  if (type == "object" and has($k)) or (type == "array" and ($k | type) == "number" and $k < length and $k >= -length)
  then .[$k] else error("no \($k | tojson) in \(tojson | .[:300])") end;
def dig($path): reduce $path[] as $k (.; at($k));
# holds(X): the list . has the item X, the mapping . the key X, the text . the text X.
def holds($x):
  if type == "array" then any(.[]; . == $x)
  elif type == "object" then ($x | type) == "string" and has($x)
  elif type == "string" and ($x | type) == "string" then contains($x)
  else error("\(tojson | .[:300]) cannot hold \($x | tojson)") end;
# one(KIND; NAME): the one document of the list . of kind KIND (and name NAME, unless null).
def one($kind; $name):
  . as $all
  | [.[] | select(at("kind") == $kind and ($name == null or (at("metadata") | at("name")) == $name))]
  | if length == 1 then .[0]
    else error("not one \([$kind, $name] | tojson) in \($all | map([.kind, .metadata.name]) | tojson)") end;
JQ
)
# yjq [JQ-OPTION...] -- FILE...: runs the jq program on stdin (after $jq_defs) with $docs[i], the
# documents of the YAML file FILE i (a list); fails when a FILE is not YAML or the program stops.
yjq() {
  local opts=() json f
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  json=$(mktemp -p "$work") || return
  for f; do yq -s -c . "$f" >>"$json" || return; done
  jq -n "${opts[@]}" --slurpfile docs "$json" "$jq_defs"$'\n'"$(cat)"
}

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
components_match() {
  local rel=$REL/infrastructure-components.yaml names
  names=$(LC_ALL=C grep -oE '\$\{[A-Z_]+:=' "$rel" | sed 's/^..//; s/:=$//')
  [ "$(LC_ALL=C sort -u <<<"$names" | tr '\n' ' ')" = "CAPHV_CONCURRENCY CAPHV_LOG_LEVEL CAPHV_WATCH_FILTER " ] ||
    { echo "the variables: $(tr '\n' ' ' <<<"$names")" >&2; return 1; }
  # The variables as clusterctl substitutes them when unset: ${NAME:=default} -> default
  # (-z: a default may span lines).
  LC_ALL=C sed -zE 's/\$\{[A-Z_]+:=([^}]*)\}/\1/g' "$rel" >"$work/components.yaml" || return
  yjq --arg version "$VERSION" -- "$work/kustomize.yaml" "$work/components.yaml" <<'JQ'
# The objects by (kind, namespace, name), that as JSON text.
def load: nonempty | reduce .[] as $d ({};
  .[[($d | at("kind")), ($d | at("metadata") | if has("namespace") then .namespace else "" end),
     ($d | at("metadata") | at("name"))] | tojson] = $d);
($docs[0] | load) as $ours
| ($docs[1] | load) as $rel
| (["Deployment", "caphv-system", "caphv-controller-manager"] | tojson) as $dep
| ["spec", "template", "spec", "containers", 0] as $container
# The release sets the image and adds two flags (their defaults).
| ($rel | at($dep) | dig($container)) as $c
| need($c.image == "localhost/caphv-manager:" + $version; $c.image)
| ($c | at("args") | first(range(length) as $i | select(.[$i] == "--concurrency=10") | $i)
   // error("no --concurrency=10 in \($c.args | tojson)")) as $i
| need($c.args[$i:$i + 3] == ["--concurrency=10", "--watch-filter", ""]; $c.args)
| ($rel | setpath([$dep] + $container + ["image"]; $ours | at($dep) | dig($container) | at("image"))
   | setpath([$dep] + $container + ["args"]; $c.args[:$i] + $c.args[$i + 3:])) as $rel
| if ($ours | keys) != ($rel | keys) then
    ("objects only in config/default: \(($ours | keys) - ($rel | keys) | map(fromjson) | tojson)\n"
     + "objects only in the release: \(($rel | keys) - ($ours | keys) | map(fromjson) | tojson)\n") | halt_error(1)
  else
    [$ours | keys[] | select($ours[.] != $rel[.]) | fromjson]
    | if length > 0 then "objects that differ: \(tojson)\n" | halt_error(1) else empty end
  end
JQ
}
if components_match; then
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
    yjq --arg variant "$variant" -- "$work/mhc-$variant.yaml" <<'JQ'
($docs[0] | nonempty) as $d
| (if $variant == "defaults" then ["34%", "20m", "5m"] else [2, "3m", "45s"] end) as $want
| need([$d[] | [.kind, .metadata.name, .metadata.namespace]]
       == [["MachineHealthCheck", "c1-workers", "team-a"], ["MachineHealthCheck", "c1-control-plane", "team-a"]]; $d)
| each($d[] | .spec
       | need(.clusterName == "c1"; .)
       | need([.maxUnhealthy, .nodeStartupTimeout] == $want[:2]; .)
       | need(.unhealthyConditions == [{type: "Ready", status: "False", timeout: $want[2]},
                                       {type: "Ready", status: "Unknown", timeout: $want[2]}]; .))
# Workers: the Machines of every MachineDeployment of the topology; control plane: its Machines.
| need($d[0].spec.selector == {matchExpressions: [
         {key: "topology.cluster.x-k8s.io/deployment-name", operator: "Exists"}]}; $d[0].spec.selector)
| need($d[1].spec.selector == {matchLabels: {"cluster.x-k8s.io/control-plane": ""}}; $d[1].spec.selector)
| empty
JQ
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
  yjq --arg version "$VERSION" --rawfile go_text "$go_metadata" -- "$REL/metadata.yaml" "$go_metadata" <<'JQ'
# The series of a metadata.yaml: {"[major,minor]": contract}.
def series_of:
  single
  | need(.apiVersion == "clusterctl.cluster.x-k8s.io/v1alpha3" and .kind == "Metadata"; .)
  | reduce at("releaseSeries")[] as $s ({};
      .[[($s | at("major")), ($s | at("minor"))] | tojson] = ($s | at("contract")));
($docs[0] | series_of) as $series
| ($version[1:] | split(".")[:2] | map(tonumber)) as $ours
| need($ours | length == 2; $version)
| need($series[$ours | tojson] == "v1beta2"; ["the release's own series", $series])
| need($ours == ($series | keys | map(fromjson) | max); ["the release's series is not the newest", $series])
| need($series == ([[0, 11], (range(4; 11) | [0, .])] | map({key: tojson, value: "v1beta2"}) | from_entries)
                   + {"[0,3]": "v1beta1", "[0,2]": "v1beta1", "[0,1]": "v1beta1"}; $series)
| if $go_text | test("\\S") then
    ($docs[1] | series_of) as $upstream
    | [$upstream | to_entries[] | select(.key != "[0,3]" and $series[.key] != .value)
       | [(.key | fromjson), .value, $series[.key]]]
    | need(length == 0; ["series the Go provider declares otherwise", .])
  else . end
| empty
JQ

check "capiprovider-harvester.yaml: Turtles CAPIProvider of this release" \
  yjq --arg version "$VERSION" -- "$REL/capiprovider-harvester.yaml" <<'JQ'
$docs[0] | single
| need(.apiVersion == "turtles-capi.cattle.io/v1alpha1" and .kind == "CAPIProvider"; [.apiVersion, .kind])
| need(.metadata == {name: "harvester", namespace: "caphv-system"}; .metadata)
| .spec
| need(.name == "harvester" and .type == "infrastructure" and .version == $version; .)
| need(.fetchConfig.url | endswith("/" + $version + "/infrastructure-components.yaml"); .)
| empty
JQ

# --- The class for the RKE2 providers v0.22+: the same documents, every apiVersion (and ref) of
# the two RKE2 groups at v1beta2, nothing else changed.
check "clusterclass-harvester-rke2-v1beta2.yaml: the RKE2 groups at v1beta2, the rest as is" \
  yjq -- "$REL/clusterclass-harvester-rke2.yaml" "$REL/clusterclass-harvester-rke2-v1beta2.yaml" <<'JQ'
# moved(A; B): how many apiVersions of the RKE2 groups go from v1beta1 in A to v1beta2 in B;
# stops at anything else that differs.
def moved($a; $b):
  if ($a | type) == "object" then
    need(($b | type) == "object" and ($a | keys) == ($b | keys); [$a, $b])
    | [$a | keys_unsorted[] as $k
       | if $k == "apiVersion" and ($a[$k] | type) == "string"
            and ($a[$k] | startswith("controlplane.cluster.x-k8s.io/") or startswith("bootstrap.cluster.x-k8s.io/"))
         then need(($a[$k] | endswith("/v1beta1")) and $b[$k] == $a[$k][:-("v1beta1" | length)] + "v1beta2";
                   [$a[$k], $b[$k]]) | 1
         else moved($a[$k]; $b[$k]) end]
    | add // 0
  elif ($a | type) == "array" then
    need(($b | type) == "array" and ($a | length) == ($b | length); [$a, $b])
    | [range($a | length) as $i | moved($a[$i]; $b[$i])] | add // 0
  else need($a == $b; [$a, $b]) | 0 end;
($docs[0] | nonempty) as $old
| ($docs[1] | nonempty) as $new
| moved($old; $new) as $moved
| ([$new[] | select(.apiVersion | endswith("/v1beta2")) | .kind] | unique) as $kinds
| need($kinds == ["RKE2ConfigTemplate", "RKE2ControlPlaneTemplate"]; $kinds)
# The two templates, the class's refs to them, the patches' selectors.
| need($moved >= 4; $moved)
| empty
JQ

# The chart's class with clusterClass.rke2ApiVersion=v1beta2 is that file (but its namespace).
if "$HELM" template caphv "$REL/caphv-${VERSION#v}.tgz" -n team-a --set clusterClass.enabled=true \
  --set clusterClass.rke2ApiVersion=v1beta2 --show-only templates/clusterclass.yaml >"$work/cc2.yaml" 2>"$work/err"; then
  check "helm clusterClass.rke2ApiVersion=v1beta2: the release's v1beta2 class" \
    yjq -- "$work/cc2.yaml" "$REL/clusterclass-harvester-rke2-v1beta2.yaml" <<'JQ'
def key: [at("kind"), (at("metadata") | at("name"))];
def metadata(f): .metadata |= (if type == "object" then f else error("metadata: \(tojson)") end);
($docs[0] | nonempty | map(metadata(del(.labels)))) as $chart
| ($docs[1] | nonempty | map(metadata(.namespace = "team-a" | del(.labels)))) as $rel
| need(($chart | sort_by(key)) == ($rel | sort_by(key)); [$chart[] | key])
| empty
JQ
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
addons_match() {
  local class=$REL/clusterclass-harvester-rke2.yaml
  # The manifests the two ConfigMaps carry (YAML in a text of theirs), as files of their own:
  # the cloud provider's under the key the class names.
  yjq -j -- "$work/ccm.yaml" "$class" >"$work/ccm-objs.yaml" <<'JQ' || return
($docs[1] | nonempty | one("HarvesterClusterTemplate"; null)
 | dig(["spec", "template", "spec", "updateCloudProviderConfig", "manifestsConfigMapKey"])) as $key
| $docs[0] | nonempty | one("ConfigMap"; "cloud-config-addon-c1") | at("data") | at($key)
| need(type == "string"; .)
JQ
  yjq -j -- "$work/csi.yaml" >"$work/csi-objs.yaml" <<'JQ' || return
$docs[0] | nonempty | one("ConfigMap"; "harvester-csi-driver") | at("data") | at("harvester-csi-driver.yaml")
| need(type == "string"; .)
JQ
  yjq -- "$work/ccm.yaml" "$work/csi.yaml" "$class" "$work/ccm-objs.yaml" "$work/csi-objs.yaml" <<'JQ'
($docs[0] | nonempty) as $ccm | ($docs[1] | nonempty) as $csi | ($docs[2] | nonempty) as $cc
# The class points CAPHV at cloud-config-addon-<cluster>, key cloud-config.yaml, Secret cloud-config/cloud-config.
| ($cc | one("HarvesterClusterTemplate"; null) | dig(["spec", "template", "spec", "updateCloudProviderConfig"])) as $hct
| ($cc | one("ClusterClass"; null) | dig(["spec", "patches"])
   | first(.[] | select(at("name") == "cloudProviderManifests")) // error("no patch cloudProviderManifests")) as $patch
| ($patch | dig(["definitions", 0, "jsonPatches"])
   | map({key: (at("path") | need(type == "string" and contains("/"); .) | split("/") | last),
          value: dig(["valueFrom", "template"])})
   | from_entries) as $ops
| need(($ops | at("manifestsConfigMapName")) == "cloud-config-addon-{{ .builtin.cluster.name }}"; $ops)
| ($ccm | one("ConfigMap"; "cloud-config-addon-c1")) as $cm
| need($cm.metadata.namespace == "team-a"
       and ($cm | at("data") | keys_unsorted) == [$hct | at("manifestsConfigMapKey")]; $cm.metadata)
# What that ConfigMap carries (ccm-objs.yaml).
| ($docs[3] | nonempty) as $objs
| ($objs | one("Secret"; $hct | at("cloudConfigCredentialsSecretName"))) as $secret
| need($secret.metadata.namespace == "kube-system" and ($secret | has("data") | not); $secret)
| ($objs | one("Deployment"; "harvester-cloud-provider") | dig(["spec", "template", "spec"])) as $pod
| need($pod.hostNetwork == true; $pod)
| ($pod | dig(["containers", 0])) as $c
| need($c.image == "rancher/harvester-cloud-provider:v0.2.1"; $c.image)
| need($c.args == ["--cloud-config=/etc/kubernetes/" + ($hct | at("cloudConfigCredentialsSecretKey")),
                   "--cluster-name=c1"]; $c.args)
| need($pod.volumes == [{name: "cloud-config", secret: {secretName: "cloud-config"}}]; $pod.volumes)
| [$pod | at("tolerations")[] | [at("key"), .effect]] as $tolerated
| each(["node-role.kubernetes.io/control-plane", "NoSchedule"], ["node-role.kubernetes.io/etcd", "NoExecute"],
       ["node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule"], ["node.kubernetes.io/not-ready", "NoSchedule"]
       | . as $t | need($tolerated | holds($t); [$t, $tolerated]))
| ($pod | at("serviceAccountName")) as $sa
| ($objs | one("ClusterRoleBinding"; "harvester-cloud-controller-manager")) as $crb
| need($crb.subjects == [{kind: "ServiceAccount", name: $sa, namespace: "kube-system"}]; $crb)
| ($objs | one("ClusterRole"; $crb | dig(["roleRef", "name"])) | at("rules")) as $rules
| each(["nodes", "patch"], ["nodes/status", "patch"], ["services", "watch"], ["services/status", "patch"],
       ["leases", "update"], ["events", "create"]
       | . as [$res, $verb]
       | need([first($rules[] | select((at("resources") | holds($res)) and (at("verbs") | holds($verb))))] | length > 0;
              [$res, $verb]))
| ($ccm | one("ClusterResourceSet"; null)) as $crs
| need($crs.metadata == {name: "c1-harvester-cloud-provider", namespace: "team-a"}; $crs.metadata)
| need($crs.spec == {clusterSelector: {matchLabels: {"cluster.x-k8s.io/cluster-name": "c1"}},
                     resources: [{kind: "ConfigMap", name: "cloud-config-addon-c1"}], strategy: "Reconcile"}; $crs.spec)
# CSI: the driver reads the same Secret; every Cluster labelled csi: external. What its
# ConfigMap harvester-csi-driver carries: csi-objs.yaml.
| ($docs[4] | nonempty) as $objs
| ($objs | one("DaemonSet"; "harvester-csi-plugin") | dig(["spec", "template", "spec"])) as $ds
| ($ds | at("containers") | first(.[] | select(at("name") == "harvester-csi-plugin"))
   // error("no container harvester-csi-plugin")) as $plugin
| need($plugin.image == "rancher/harvester-csi-driver:v0.1.5"; $plugin.image)
| need($ds | at("volumes") | holds({name: "cloud-config", secret: {secretName: ($secret | dig(["metadata", "name"]))}});
       $ds.volumes)
| each($objs | one("Deployment"; "csi-controller"), one("CSIDriver"; "driver.harvesterhci.io"), one("StorageClass"; "harvester"))
| ($csi | one("ClusterResourceSet"; null)) as $crs
| need($crs.spec.clusterSelector == {matchLabels: {csi: "external"}} and $crs.spec.strategy == "Reconcile"; $crs)
| need($crs.spec.resources == [{kind: "ConfigMap", name: "harvester-csi-driver"}]; $crs)
| empty
JQ
}
if CLUSTER_NAME=c1 NAMESPACE=team-a "$CLUSTERCTL" generate yaml --from "$REL/clusterresourceset-harvester-cloud-provider.yaml" \
  >"$work/ccm.yaml" 2>"$work/err" && NAMESPACE=team-a HARVESTER_CSI_DRIVER_VERSION=v0.1.5 "$CLUSTERCTL" generate yaml \
  --from "$REL/clusterresourceset-harvester-csi-driver.yaml" >"$work/csi.yaml" 2>>"$work/err"; then
  check "addons: what they install, as the ClusterClass expects" addons_match
else
  fail "clusterctl generate yaml of the addons: $(cat "$work/err")"
fi

# --- The Helm chart.
chart=$REL/caphv-${VERSION#v}.tgz
check "helm lint" "$HELM" lint --strict "$chart"
check "chart version and appVersion" bash -c "'$HELM' show chart '$chart' | grep -qx 'version: ${VERSION#v}' &&
  '$HELM' show chart '$chart' | grep -qx 'appVersion: $VERSION'"
chart_values() {
  "$HELM" show values "$chart" >"$work/values.yaml" || return
  yjq -- "$work/values.yaml" <<'JQ'
$docs[0] | single
| need((.image.repository | truthy) and (.image | holds("tag")) and .image.pullPolicy == "IfNotPresent"; .image)
| need(.webhooks.enabled == false and .webhooks.certManager.enabled == false; .webhooks)
| need(.clusterClass.enabled == false; .clusterClass)
| empty
JQ
}
check "chart values have the guide's keys" chart_values
for wh in false true; do for cm in false true; do for ccl in false true; do
  name="webhooks=$wh certManager=$cm clusterClass=$ccl"
  if ! "$HELM" template caphv "$chart" -n caphv-system --set "webhooks.enabled=$wh" \
    --set "webhooks.certManager.enabled=$cm" --set "clusterClass.enabled=$ccl" >"$work/h.yaml" 2>"$work/err"; then
    fail "helm template $name: $(cat "$work/err")"; continue
  fi
  check "helm template $name: the objects that belong" yjq --arg wh "$wh" --arg cm "$cm" --arg ccl "$ccl" \
    --arg version "$VERSION" -- "$work/h.yaml" <<'JQ'
($docs[0] | nonempty) as $d
| ($wh == "true") as $wh | ($cm == "true") as $cm | ($ccl == "true") as $ccl
| [$d[] | [at("kind"), (at("metadata") | at("name"))]] as $kinds
| def present($kind; $name): $kinds | holds([$kind, $name]);
each(["Deployment", "caphv-controller-manager"], ["ServiceAccount", "caphv-controller-manager"],
     ["ClusterRole", "caphv-manager-role"], ["ClusterRole", "caphv-metrics-reader"], ["ClusterRole", "caphv-proxy-role"],
     ["ClusterRoleBinding", "caphv-manager-rolebinding"], ["ClusterRoleBinding", "caphv-proxy-rolebinding"],
     ["Role", "caphv-leader-election-role"], ["RoleBinding", "caphv-leader-election-rolebinding"],
     ["Service", "caphv-controller-manager-metrics-service"]
     | need(present(.[0]; .[1]); .))
| need(present("Service"; "caphv-webhook-service") == $wh; "Service caphv-webhook-service")
| need(present("ValidatingWebhookConfiguration"; "caphv-validating-webhook-configuration") == $wh;
       "ValidatingWebhookConfiguration caphv-validating-webhook-configuration")
| need(present("MutatingWebhookConfiguration"; "caphv-mutating-webhook-configuration") == $wh;
       "MutatingWebhookConfiguration caphv-mutating-webhook-configuration")
| need(present("Issuer"; "caphv-selfsigned-issuer") == ($wh and $cm); "Issuer caphv-selfsigned-issuer")
| need(present("Certificate"; "caphv-serving-cert") == ($wh and $cm); "Certificate caphv-serving-cert")
| need(present("ClusterClass"; "harvester-rke2") == $ccl; "ClusterClass harvester-rke2")
| need(present("ServiceMonitor"; "caphv-controller-manager-metrics-monitor") | not;
       "ServiceMonitor caphv-controller-manager-metrics-monitor")
| (first($d[] | select(.kind == "Deployment")) // error("no Deployment")) as $dep
| ($dep | dig(["spec", "template", "spec"])) as $pod
| ($pod | dig(["containers", 0])) as $c
| need($c | at("image") | endswith(":" + $version); $c.image)
| need(($c | at("args") | holds("--enable-webhooks")) == $wh; $c.args)
| need(($pod | holds("volumes")) == $wh; "volumes")
| each(if $wh then "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration" else empty end
       | . as $kind
       | (first($d[] | select(.kind == $kind)) // error("no \($kind)"))
       | (.metadata | if has("annotations") then .annotations else {} end) as $ann
       | need($ann | type == "object"; $ann)
       | need(($ann["cert-manager.io/inject-ca-from"] == "caphv-system/caphv-serving-cert") == $cm; [$kind, $ann]))
| each($d[]
       | select(.kind | IN("ClusterRole", "ClusterRoleBinding", "ValidatingWebhookConfiguration",
                           "MutatingWebhookConfiguration") | not)
       | need(.metadata.namespace == "caphv-system"; .metadata))
| empty
JQ
done; done; done

# --- Alerting rules: the guide's six and CAPHV's two identity alerts, each with a unit test that
# fires and one that does not.
check "promtool check rules" "$PROMTOOL" check rules "$REL/caphv-alerts.yaml"
cp "$REL/caphv-alerts.yaml" "$work/"
sed "s|^- ../../config/prometheus/caphv-alerts.yaml|- caphv-alerts.yaml|" "$ROOT/test/release/caphv-alerts-test.yaml" >"$work/alerts-test.yaml"
check "promtool test rules (the released rules)" "$PROMTOOL" test rules "$work/alerts-test.yaml"
check "eight alerts, each tested firing and not firing" yjq -- "$REL/caphv-alerts.yaml" "$work/alerts-test.yaml" <<'JQ'
($docs[0] | single | .groups[0].rules) as $rules
| [$rules[] | .alert] as $names
| need($names == ["CAPHVMachineCreateErrors", "CAPHVMachineNotReady", "CAPHVIPPoolAllocationErrors",
                  "CAPHVClusterNotReady", "CAPHVEtcdRemoveErrors", "CAPHVSlowMachineCreation",
                  "CAPHVIdentityTokenExpiringSoon", "CAPHVIdentityTokenExpired"]; $names)
| [$docs[1] | single | .tests[] | if has("alert_rule_test") then .alert_rule_test[] else empty end] as $tests
| ([$tests[] | select(.exp_alerts | truthy) | at("alertname")] | unique) as $fires
| ([$tests[] | select(.exp_alerts | truthy | not) | at("alertname")] | unique) as $quiet
| need($fires == ($names | unique) and $quiet == ($names | unique); [$fires, $quiet])
| empty
JQ

# --- The dashboard queries only the metrics the manager serves.
check "dashboard metrics are the manager's" yjq --rawfile src "$ROOT/src/controllers/metrics.cc" \
  --slurpfile dashboard "$REL/caphv-dashboard.json" -- <<'JQ'
([$src | scan("\"(caphv_[a-z_]+)\"") | .[0]] | unique) as $served
| need($served | length == 19; $served)
| ($dashboard | single) as $d
| ([$d | at("panels")[] | if has("targets") then .targets[] else empty end | at("expr")]
   + [$d | at("templating") | at("list")[] | select(.query | type == "object") | .query | at("query")]) as $exprs
| ([$exprs[] as $e | $e | scan("\\bcaphv_[a-z_]+") | sub("_(bucket|count|sum)$"; "") as $base
    | need($served | holds($base); "\(.) in \($e | tojson) is not served by the manager") | $base]
   | unique) as $used
| need($used == $served; "metrics without a panel: \($served - $used | tojson)")
| empty
JQ

finish
