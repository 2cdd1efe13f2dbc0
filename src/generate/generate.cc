// File: generate/generate.cc

#include "generate/generate.h"

#include <regex>
#include <sstream>

#include "api/quantity.h"
#include "api/yaml.h"
#include "generate/templates.h"
#include "harvester/ipv4.h"
#include "kube/base64.h"

namespace caphv::generate {
namespace {

using api::Json;
using kube::Status;
using kube::StatusCode;

Status Bad(std::string_view flag, const std::string& what) {
  return Status(StatusCode::kInvalidArgument, std::string(flag) + ": " + what);
}

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in{std::string(text)};
  while (std::getline(in, item, ',')) {
    const auto b = item.find_first_not_of(' ');
    const auto e = item.find_last_not_of(' ');
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

bool IsDnsLabel(std::string_view s) {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return !s.empty() && s.size() <= 63 && std::regex_match(s.begin(), s.end(), re);
}

// "namespace/name" or "name" of a Harvester object (image names may carry
// dots and underscores, as in sles15-sp7-minimal-vm.x86_64-cloud-qu2.qcow2).
bool IsHarvesterRef(std::string_view s) {
  static const std::regex re(
      "([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9._]*[A-Za-z0-9])?");
  return !s.empty() && s.size() <= 253 && std::regex_match(s.begin(), s.end(), re);
}

Status RequireRef(std::string_view flag, const std::string& value, std::string_view example) {
  if (value.empty()) return Bad(flag, "required (e.g. " + std::string(example) + ")");
  if (!IsHarvesterRef(value)) {
    return Bad(flag, Quote(value) + " is not a Harvester object (namespace/name, e.g. " +
                         std::string(example) + ")");
  }
  return Status::Ok();
}

Status PositiveQuantity(std::string_view flag, const std::string& value) {
  std::string error;
  auto q = api::Quantity::Parse(value, &error);
  if (!q) return Bad(flag, Quote(value) + " is not a quantity (e.g. 40Gi)");
  if (q->Sign() <= 0) return Bad(flag, Quote(value) + " must be more than zero");
  return Status::Ok();
}

// SIZE and storage class of --extra-disk (the class defaults to longhorn).
std::pair<std::string, std::string> ExtraDisk(const std::string& value) {
  const auto colon = value.find(':');
  if (colon == std::string::npos) return {value, "longhorn"};
  std::string sc = value.substr(colon + 1);
  return {value.substr(0, colon), sc.empty() ? "longhorn" : sc};
}

std::vector<Json> ParseTemplate(std::string_view name,
                                const std::map<std::string, std::string>& vars) {
  const auto text = Substitute(EmbeddedTemplate(name), vars);
  if (!text.ok()) return {};
  auto docs = api::ParseYaml(*text);
  return docs.ok() ? *docs : std::vector<Json>{};
}

std::string CniValues(const Options& o) {
  std::ostringstream v;
  if (o.cni == "calico") {
    v << "installation:\n"
      << "  calicoNetwork:\n"
      << "    mtu: " << o.cni_mtu << "\n"
      << "    bgp: " << o.cni_bgp << "\n"
      << "    ipPools:\n"
      << "    - cidr: " << o.pod_cidr << "\n"
      << "      encapsulation: " << o.cni_encapsulation << "\n";
  } else if (o.cni == "canal") {
    v << "calico:\n  vethuMTU: " << o.cni_mtu << "\n";
  } else {  // cilium
    v << "MTU: " << o.cni_mtu << "\n";
  }
  std::string values = v.str();
  values.pop_back();  // as valuesContent: |- of the Go script
  return values;
}

}  // namespace

std::string RkeVersion(std::string_view version) {
  std::string v(version);
  if (!v.empty() && v[0] != 'v') v = "v" + v;
  if (v.find('+') == std::string::npos) v += "+rke2r1";
  return v;
}

namespace {
// Calls fn(value, group) on every "apiVersion" string of an RKE2 provider's
// group ("controlplane.cluster.x-k8s.io/", "bootstrap.cluster.x-k8s.io/")
// in `node`, at any depth up to 64 (our own template: a few levels deep).
template <typename J, typename F>
void ForEachRke2ApiVersion(J& node, const F& fn, int depth = 0) {
  if (depth > 64) return;
  if (node.is_array()) {
    for (auto& item : node) ForEachRke2ApiVersion(item, fn, depth + 1);
    return;
  }
  if (!node.is_object()) return;
  for (auto& [key, value] : node.items()) {
    if (key == "apiVersion" && value.is_string()) {
      const std::string api_version = value.template get<std::string>();
      for (std::string_view group :
           {"controlplane.cluster.x-k8s.io/", "bootstrap.cluster.x-k8s.io/"}) {
        if (api_version.starts_with(group)) fn(value, group);
      }
    } else {
      ForEachRke2ApiVersion(value, fn, depth + 1);
    }
  }
}
}  // namespace

std::set<std::string> Rke2ApiVersionsIn(const Json& doc) {
  std::set<std::string> out;
  ForEachRke2ApiVersion(doc, [&out](const Json& value, std::string_view group) {
    out.insert(value.get<std::string>().substr(group.size()));
  });
  return out;
}

void UseRke2ApiVersion(std::vector<Json>& class_docs, std::string_view version) {
  for (auto& doc : class_docs) {
    ForEachRke2ApiVersion(doc, [version](Json& value, std::string_view group) {
      value = std::string(group) + std::string(version);
    });
  }
}

namespace {

// The RKE2 providers bootstrap no node whose profile does not fit its
// Kubernetes version (cis and cis-1.23 from 1.25 on, cis-1.5 and cis-1.6
// before it): said here, not later in an RKE2Config's status.
Status ValidateCisProfile(const Options& o) {
  if (o.cis_profile.empty()) return Status::Ok();
  const bool current = o.cis_profile == "cis" || o.cis_profile == "cis-1.23";
  if (!current && o.cis_profile != "cis-1.5" && o.cis_profile != "cis-1.6") {
    return Bad("--cis-profile",
               Quote(o.cis_profile) + " is not one of cis, cis-1.23, cis-1.5, cis-1.6");
  }
  static const std::regex version_re("v?([0-9]+)\\.([0-9]+)\\..*");
  std::smatch m;
  if (!std::regex_match(o.k8s_version, m, version_re)) return Status::Ok();
  const int major = std::stoi(m[1].str());
  const bool from_1_25 = major > 1 || (major == 1 && std::stoi(m[2].str()) >= 25);
  if (current != from_1_25) {
    return Bad("--cis-profile", Quote(o.cis_profile) + " is for Kubernetes " +
                                    (current ? "1.25 and later" : "before 1.25") + ", not " +
                                    o.k8s_version);
  }
  return Status::Ok();
}

}  // namespace

Status Validate(const Options& o) {
  if (o.name.empty()) return Bad("--name", "required");
  if (o.rke2_api_version != "v1beta1" && o.rke2_api_version != "v1beta2") {
    return Bad("--rke2-api-version",
               Quote(o.rke2_api_version) +
                   " is not an API version of the RKE2 providers (v1beta1: up to v0.21, with "
                   "Cluster API up to v1.10; v1beta2: v0.22 and later)");
  }
  if (!IsDnsLabel(o.name)) {
    return Bad("--name", Quote(o.name) +
                             " is not a valid cluster name (lower case letters, digits and '-', "
                             "at most 63)");
  }
  if (!o.ns.empty() && !IsDnsLabel(o.ns)) {
    return Bad("--namespace", Quote(o.ns) + " is not a valid namespace name");
  }
  if (!IsDnsLabel(o.cls)) return Bad("--class", Quote(o.cls) + " is not a valid ClusterClass name");
  if (auto s = RequireRef("--image", o.image, "default/ubuntu-22.04"); !s.ok()) return s;
  if (auto s = RequireRef("--ssh-keypair", o.ssh_keypair, "default/my-key"); !s.ok()) return s;
  if (auto s = RequireRef("--network", o.network, "default/vlan100"); !s.ok()) return s;
  static const std::regex user_re("[a-z_][a-z0-9_-]{0,31}");
  if (!std::regex_match(o.ssh_user, user_re)) {
    return Bad("--ssh-user", Quote(o.ssh_user) + " is not a user name");
  }
  if (o.gateway.empty()) return Bad("--gateway", "required (e.g. 172.16.0.1)");
  if (!harvester::ParseIpv4(o.gateway)) {
    return Bad("--gateway", Quote(o.gateway) + " is not an IPv4 address");
  }
  if (o.subnet_mask.empty()) return Bad("--subnet-mask", "required (e.g. 255.255.255.0)");
  if (!harvester::PrefixFromMask(o.subnet_mask)) {
    return Bad("--subnet-mask", Quote(o.subnet_mask) + " is not a subnet mask (e.g. 255.255.0.0)");
  }
  for (const auto& d : SplitList(o.dns)) {
    if (!harvester::ParseIpv4(d)) return Bad("--dns", Quote(d) + " is not an IPv4 address");
  }
  if (o.ip_pool.empty() && o.ip_pool_refs.empty()) {
    return Bad("--ip-pool", "required (or --ip-pool-refs)");
  }
  if (!o.ip_pool.empty() && !IsDnsLabel(o.ip_pool)) {
    return Bad("--ip-pool", Quote(o.ip_pool) + " is not an IPPool name");
  }
  if (!o.ip_pool_refs.empty()) {
    const auto pools = SplitList(o.ip_pool_refs);
    if (pools.empty()) return Bad("--ip-pool-refs", "names no pool");
    for (const auto& p : pools) {
      if (!IsDnsLabel(p)) return Bad("--ip-pool-refs", Quote(p) + " is not an IPPool name");
    }
  }
  if (!o.extra_disk.empty()) {
    const auto [size, sc] = ExtraDisk(o.extra_disk);
    if (auto s = PositiveQuantity("--extra-disk", size); !s.ok()) {
      return Bad("--extra-disk",
                 Quote(o.extra_disk) + " is not SIZE[:STORAGECLASS] (e.g. 10Gi:longhorn)");
    }
    if (!IsDnsLabel(sc)) return Bad("--extra-disk", Quote(sc) + " is not a StorageClass name");
  }
  if (o.harvester_kubeconfig.empty()) {
    return Bad("--harvester-kubeconfig", "required (the kubeconfig of Harvester)");
  }
  if (!IsDnsLabel(o.target_namespace)) {
    return Bad("--target-namespace", Quote(o.target_namespace) + " is not a namespace name");
  }
  if (o.cp_replicas < 1) return Bad("--cp-replicas", "must be at least 1");
  if (o.worker_replicas < 0) return Bad("--worker-replicas", "must not be negative");
  if (o.cpu < 1) return Bad("--cpu", "must be at least 1");
  if (auto s = PositiveQuantity("--memory", o.memory); !s.ok()) return s;
  if (auto s = PositiveQuantity("--disk-size", o.disk_size); !s.ok()) return s;
  static const std::regex version_re("v?[0-9]+\\.[0-9]+\\.[0-9]+(\\+rke2r[0-9]+)?");
  if (!std::regex_match(o.k8s_version, version_re)) {
    return Bad("--k8s-version", Quote(o.k8s_version) + " is not a version (e.g. v1.31.14)");
  }
  if (o.cni != "calico" && o.cni != "canal" && o.cni != "cilium" && o.cni != "none") {
    return Bad("--cni", Quote(o.cni) + " is not one of calico, canal, cilium, none");
  }
  if (o.cni_mtu < 576 || o.cni_mtu > 9000) {
    return Bad("--cni-mtu", std::to_string(o.cni_mtu) + " is not between 576 and 9000");
  }
  static const char* const kEncaps[] = {"VXLAN", "VXLANCrossSubnet", "IPIP", "IPIPCrossSubnet",
                                        "None"};
  if (std::find(std::begin(kEncaps), std::end(kEncaps), o.cni_encapsulation) == std::end(kEncaps)) {
    return Bad("--cni-encapsulation",
               Quote(o.cni_encapsulation) +
                   " is not one of VXLAN, VXLANCrossSubnet, IPIP, IPIPCrossSubnet, None");
  }
  if (o.cni_bgp != "Enabled" && o.cni_bgp != "Disabled") {
    return Bad("--cni-bgp", Quote(o.cni_bgp) + " is not Enabled or Disabled");
  }
  if (!harvester::ParseCidr(o.pod_cidr)) {
    return Bad("--pod-cidr", Quote(o.pod_cidr) + " is not a CIDR (e.g. 10.42.0.0/16)");
  }
  if (!o.fleet_addon_repo.empty()) {
    static const std::regex repo_re("(https?|ssh|git)://[^ ]+|git@[^ ]+:[^ ]+");
    if (!std::regex_match(o.fleet_addon_repo, repo_re)) {
      return Bad("--fleet-addon-repo", Quote(o.fleet_addon_repo) + " is not a git URL");
    }
  }
  if (o.fleet_addon_branch.empty()) return Bad("--fleet-addon-branch", "must not be empty");
  if (auto s = ValidateCisProfile(o); !s.ok()) return s;
  return Status::Ok();
}

kube::StatusOr<std::string> Substitute(std::string_view text,
                                       const std::map<std::string, std::string>& vars) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const auto start = text.find("${", i);
    if (start == std::string_view::npos) {
      out.append(text.substr(i));
      break;
    }
    out.append(text.substr(i, start - i));
    const auto end = text.find('}', start);
    if (end == std::string_view::npos) {
      return Status(StatusCode::kInvalidArgument, "unterminated ${ in a template");
    }
    const std::string_view body = text.substr(start + 2, end - start - 2);
    const auto def = body.find(":=");
    const std::string var(body.substr(0, def));
    if (auto it = vars.find(var); it != vars.end()) {
      out.append(it->second);
    } else if (def != std::string_view::npos) {
      out.append(body.substr(def + 2));
    } else {
      return Status(StatusCode::kInvalidArgument, "template variable " + var + " is not set");
    }
    i = end + 1;
  }
  return out;
}

kube::StatusOr<std::vector<Json>> Build(const Options& o, std::string_view kubeconfig) {
  if (auto s = Validate(o); !s.ok()) return s;
  const std::string ns = o.Namespace();
  const bool fleet = !o.fleet_addon_repo.empty();
  const std::map<std::string, std::string> vars = {{"CLUSTER_NAME", o.name}, {"NAMESPACE", ns}};
  std::vector<Json> objects;

  objects.push_back({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});

  if (o.with_class && o.cls == kDefaultClass) {
    auto docs = ParseTemplate(kClusterClassTemplate, vars);
    if (docs.empty()) return Status(StatusCode::kInternal, "the ClusterClass template is missing");
    UseRke2ApiVersion(docs, o.rke2_api_version);
    for (auto& d : docs) {
      d["metadata"]["namespace"] = ns;
      objects.push_back(std::move(d));
    }
  }

  objects.push_back({{"apiVersion", "v1"},
                     {"kind", "Secret"},
                     {"metadata", {{"name", kIdentitySecretName}, {"namespace", ns}}},
                     {"type", "Opaque"},
                     {"data", {{"kubeconfig", kube::Base64Encode(kubeconfig)}}}});

  // The Cluster.
  Json volumes = Json::array({{{"volumeType", "image"},
                               {"imageName", o.image},
                               {"volumeSize", o.disk_size},
                               {"bootOrder", 1}}});
  if (!o.extra_disk.empty()) {
    const auto [size, sc] = ExtraDisk(o.extra_disk);
    volumes.push_back({{"volumeType", "storageClass"},
                       {"storageClass", sc},
                       {"volumeSize", size},
                       {"bootOrder", 0}});
  }
  const auto pools = SplitList(o.ip_pool_refs);
  Json variables = Json::array({
      {{"name", "identitySecretName"}, {"value", kIdentitySecretName}},
      {{"name", "targetNamespace"}, {"value", o.target_namespace}},
      {{"name", "vmNetworks"}, {"value", Json::array({o.network})}},
      {{"name", "volumes"}, {"value", volumes}},
      {{"name", "cpuCount"}, {"value", o.cpu}},
      {{"name", "memorySize"}, {"value", o.memory}},
      {{"name", "sshKeyPair"}, {"value", o.ssh_keypair}},
      {{"name", "sshUser"}, {"value", o.ssh_user}},
      {{"name", "gateway"}, {"value", o.gateway}},
      {{"name", "subnetMask"}, {"value", o.subnet_mask}},
      {{"name", "ipPoolRef"}, {"value", pools.empty() ? o.ip_pool : ""}},
      {{"name", "ipPoolRefs"}, {"value", pools}},
      {{"name", "dnsServers"}, {"value", SplitList(o.dns)}},
      {{"name", "cni"}, {"value", o.cni}},
  });
  if (!o.cis_profile.empty())
    variables.push_back({{"name", "cisProfile"}, {"value", o.cis_profile}});
  if (o.fips_required) variables.push_back({{"name", "fipsRequired"}, {"value", true}});
  Json labels = {{"cluster.x-k8s.io/cluster-name", o.name}};
  if (!fleet) labels["csi"] = "external";
  Json metadata = {{"name", o.name}, {"namespace", ns}, {"labels", labels}};
  if (fleet) {
    metadata["annotations"] = {{"caphv.io/cni-mtu", std::to_string(o.cni_mtu)},
                               {"caphv.io/cni-encapsulation", o.cni_encapsulation},
                               {"caphv.io/cni-bgp", o.cni_bgp}};
  }
  objects.push_back(
      {{"apiVersion", "cluster.x-k8s.io/v1beta1"},
       {"kind", "Cluster"},
       {"metadata", metadata},
       {"spec",
        {{"clusterNetwork", {{"pods", {{"cidrBlocks", Json::array({o.pod_cidr})}}}}},
         {"topology",
          {{"class", o.cls},
           {"version", RkeVersion(o.k8s_version)},
           {"controlPlane", {{"replicas", o.cp_replicas}}},
           {"workers",
            {{"machineDeployments", Json::array({{{"class", "default-worker"},
                                                  {"name", "md-0"},
                                                  {"replicas", o.worker_replicas}}})}}},
           {"variables", variables}}}}}});

  // The cloud provider: always through its ClusterResourceSet (CAPHV writes
  // the credentials into its ConfigMap).
  for (auto& d : ParseTemplate(kCloudProviderTemplate, vars)) objects.push_back(std::move(d));

  if (!fleet) {
    for (auto& d : ParseTemplate(kCsiDriverTemplate, vars)) objects.push_back(std::move(d));
    if (o.cni != "none") {
      const std::string cm = "cni-addon-" + o.name;
      const std::string chart = "rke2-" + o.cni;
      const Json hcc = {{"apiVersion", "helm.cattle.io/v1"},
                        {"kind", "HelmChartConfig"},
                        {"metadata", {{"name", chart}, {"namespace", "kube-system"}}},
                        {"spec", {{"valuesContent", CniValues(o)}}}};
      objects.push_back({{"apiVersion", "v1"},
                         {"kind", "ConfigMap"},
                         {"metadata", {{"name", cm}, {"namespace", ns}}},
                         {"data", {{chart + "-config.yaml", api::ToYaml(hcc)}}}});
      objects.push_back(
          {{"apiVersion", "addons.cluster.x-k8s.io/v1beta1"},
           {"kind", "ClusterResourceSet"},
           {"metadata", {{"name", o.name + "-cni"}, {"namespace", ns}}},
           {"spec",
            {{"clusterSelector", {{"matchLabels", {{"cluster.x-k8s.io/cluster-name", o.name}}}}},
             {"resources", Json::array({{{"kind", "ConfigMap"}, {"name", cm}}})},
             {"strategy", "Reconcile"}}}});
    }
  } else {
    Json paths = Json::array({"/fleet/harvester-csi"});
    if (o.cni != "none") paths.push_back("/fleet/" + o.cni + "-config");
    objects.push_back(
        {{"apiVersion", "fleet.cattle.io/v1alpha1"},
         {"kind", "GitRepo"},
         {"metadata", {{"name", o.name + "-addons"}, {"namespace", "fleet-default"}}},
         {"spec",
          {{"repo", o.fleet_addon_repo},
           {"branch", o.fleet_addon_branch},
           {"paths", paths},
           {"targets",
            Json::array({{{"clusterSelector",
                           {{"matchLabels", {{"cluster.x-k8s.io/cluster-name", o.name}}}}}}})}}}});
  }

  for (auto& d : ParseTemplate(kHealthCheckTemplate, vars)) objects.push_back(std::move(d));
  return objects;
}

std::string ToYamlStream(const std::vector<Json>& objects) {
  std::string out;
  for (size_t i = 0; i < objects.size(); ++i) {
    if (i > 0) out += "---\n";
    out += api::ToYaml(objects[i]);
  }
  return out;
}

kube::StatusOr<kube::GroupVersionResource> ResourceOf(const Json& object) {
  static const std::map<std::string, kube::GroupVersionResource> kKinds = {
      {"v1/Namespace", {"", "v1", "namespaces", false}},
      {"v1/Secret", {"", "v1", "secrets", true}},
      {"v1/ConfigMap", {"", "v1", "configmaps", true}},
      {"cluster.x-k8s.io/v1beta1/Cluster", {"cluster.x-k8s.io", "v1beta1", "clusters", true}},
      {"cluster.x-k8s.io/v1beta1/ClusterClass",
       {"cluster.x-k8s.io", "v1beta1", "clusterclasses", true}},
      {"cluster.x-k8s.io/v1beta1/MachineHealthCheck",
       {"cluster.x-k8s.io", "v1beta1", "machinehealthchecks", true}},
      {"addons.cluster.x-k8s.io/v1beta1/ClusterResourceSet",
       {"addons.cluster.x-k8s.io", "v1beta1", "clusterresourcesets", true}},
      {"fleet.cattle.io/v1alpha1/GitRepo", {"fleet.cattle.io", "v1alpha1", "gitrepos", true}},
      {"infrastructure.cluster.x-k8s.io/v1alpha1/HarvesterClusterTemplate",
       {"infrastructure.cluster.x-k8s.io", "v1alpha1", "harvesterclustertemplates", true}},
      {"infrastructure.cluster.x-k8s.io/v1alpha1/HarvesterMachineTemplate",
       {"infrastructure.cluster.x-k8s.io", "v1alpha1", "harvestermachinetemplates", true}},
      {"infrastructure.cluster.x-k8s.io/v1beta1/HarvesterClusterTemplate",
       {"infrastructure.cluster.x-k8s.io", "v1beta1", "harvesterclustertemplates", true}},
      {"infrastructure.cluster.x-k8s.io/v1beta1/HarvesterMachineTemplate",
       {"infrastructure.cluster.x-k8s.io", "v1beta1", "harvestermachinetemplates", true}},
      {"controlplane.cluster.x-k8s.io/v1beta1/RKE2ControlPlaneTemplate",
       {"controlplane.cluster.x-k8s.io", "v1beta1", "rke2controlplanetemplates", true}},
      {"bootstrap.cluster.x-k8s.io/v1beta1/RKE2ConfigTemplate",
       {"bootstrap.cluster.x-k8s.io", "v1beta1", "rke2configtemplates", true}},
      {"controlplane.cluster.x-k8s.io/v1beta2/RKE2ControlPlaneTemplate",
       {"controlplane.cluster.x-k8s.io", "v1beta2", "rke2controlplanetemplates", true}},
      {"bootstrap.cluster.x-k8s.io/v1beta2/RKE2ConfigTemplate",
       {"bootstrap.cluster.x-k8s.io", "v1beta2", "rke2configtemplates", true}},
  };
  const std::string key =
      object.value("apiVersion", std::string()) + "/" + object.value("kind", std::string());
  if (auto it = kKinds.find(key); it != kKinds.end()) return it->second;
  return Status(StatusCode::kInvalidArgument, "no resource known for " + key);
}

}  // namespace caphv::generate
