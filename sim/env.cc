// File: sim/env.cc

#include "sim/env.h"

#include <openssl/evp.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "api/yaml.h"
#include "kube/base64.h"
#include "sim/ipam.h"
#include "sim/manifests.h"
#include "sim/scheduling.h"

namespace caphv::sim {

using kube::Object;
using kube::Status;
using kube::StatusCode;

namespace {

std::optional<EnvRange> RangeFrom(const Object& j) {
  if (!j.is_object()) return std::nullopt;
  return EnvRange{j.value("subnet", ""), j.value("rangeStart", ""), j.value("rangeEnd", ""),
                  j.value("gateway", "")};
}

Status Missing(const std::string& what) {
  return Status(StatusCode::kInvalidArgument, "environment: " + what + " is required");
}

}  // namespace

kube::StatusOr<Environment> ParseEnvironment(const std::string& yaml) {
  CAPHV_ASSIGN_OR_RETURN(auto docs, api::ParseYaml(yaml));
  Environment env;
  if (docs.empty()) return env;
  const Object& d = docs.front();
  if (!d.is_object()) return Status(StatusCode::kInvalidArgument, "environment: not a mapping");
  try {
    for (const auto& i : d.value("images", Object::array())) {
      EnvImage im{i.value("namespace", "default"), i.value("name", ""),
                  i.value("displayName", ""),      i.value("url", ""),
                  i.value("size", int64_t{0}),     i.value("virtualSize", int64_t{0})};
      if (im.name.empty()) return Missing("images[].name");
      if (im.display_name.empty()) im.display_name = im.name;
      im.guest_agent = i.value("guestAgent", false);
      im.fips = i.value("fips", false);
      env.images.push_back(im);
    }
    for (const auto& k : d.value("keypairs", Object::array())) {
      EnvKeyPair kp{k.value("namespace", "default"), k.value("name", ""), k.value("publicKey", "")};
      if (kp.name.empty() || kp.public_key.empty()) return Missing("keypairs[].name/publicKey");
      env.keypairs.push_back(kp);
    }
    for (const auto& n : d.value("networks", Object::array())) {
      EnvNetwork net;
      net.ns = n.value("namespace", "default");
      net.name = n.value("name", "");
      net.cluster_network = n.value("clusterNetwork", "mgmt");
      net.vlan = n.value("vlan", 0);
      net.cidr = n.value("cidr", "");
      net.gateway = n.value("gateway", "");
      if (n.contains("dhcp")) net.dhcp = RangeFrom(n["dhcp"]);
      if (net.name.empty()) return Missing("networks[].name");
      env.networks.push_back(net);
    }
    for (const auto& p : d.value("ippools", Object::array())) {
      EnvPool pool{p.value("name", ""), p.value("labels", Object::object()),
                   p.value("spec", Object::object())};
      if (pool.name.empty()) return Missing("ippools[].name");
      env.pools.push_back(pool);
    }
    if (!d.contains("hosts")) env.hosts.push_back({kDefaultHostName, "", Object::object()});
    for (const auto& h : d.value("hosts", Object::array())) {
      EnvHost host{h.value("name", ""), h.value("zone", ""), h.value("labels", Object::object())};
      if (host.name.empty()) return Missing("hosts[].name");
      env.hosts.push_back(host);
    }
    if (d.contains("lbDhcp")) env.lb_dhcp = RangeFrom(d["lbDhcp"]);
    env.vip = d.value("vip", "");
  } catch (const nlohmann::json::exception& e) {
    return Status(StatusCode::kInvalidArgument, std::string("environment: ") + e.what());
  }
  return env;
}

kube::StatusOr<Environment> LoadEnvironment(const std::string& path) {
  if (path.empty()) {
    CAPHV_ASSIGN_OR_RETURN(auto text, FindManifest("env/default.yaml"));
    return ParseEnvironment(std::string(text));
  }
  std::ifstream in(path);
  if (!in) return Status(StatusCode::kNotFound, "cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseEnvironment(ss.str());
}

kube::StatusOr<kube::GroupVersionResource> GvrOf(const Object& o) {
  static const std::map<std::pair<std::string, std::string>, kube::GroupVersionResource> kKinds = {
      {{"v1", "Namespace"}, gvr::kNamespaces},
      {{"v1", "Node"}, kube::resources::kNodes},
      {{"v1", "Service"}, kube::resources::kServices},
      {{"apps/v1", "Deployment"}, kube::resources::kDeployments},
      {{"rbac.authorization.k8s.io/v1", "ClusterRole"}, kube::resources::kClusterRoles},
      {{"apiextensions.k8s.io/v1", "CustomResourceDefinition"},
       kube::resources::kCustomResourceDefinitions},
      {{"storage.k8s.io/v1", "StorageClass"}, gvr::kStorageClasses},
      {{"harvesterhci.io/v1beta1", "Setting"}, gvr::kSettings},
      {{"harvesterhci.io/v1beta1", "VirtualMachineImage"}, gvr::kImages},
      {{"harvesterhci.io/v1beta1", "KeyPair"}, gvr::kKeyPairs},
      {{"k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition"}, gvr::kNads},
      {{"loadbalancer.harvesterhci.io/v1beta1", "IPPool"}, gvr::kIPPools},
      {{"loadbalancer.harvesterhci.io/v1beta1", "LoadBalancer"}, gvr::kLoadBalancers},
  };
  auto it = kKinds.find({o.value("apiVersion", ""), o.value("kind", "")});
  if (it == kKinds.end()) {
    return Status(StatusCode::kNotFound,
                  "no resource for " + o.value("apiVersion", "") + " " + o.value("kind", ""));
  }
  return it->second;
}

std::string ImageStorageClassName(const std::string& image_name) {
  return "longhorn-" + image_name;
}

kube::StatusOr<std::string> KeyFingerprint(const std::string& public_key) {
  std::istringstream in(public_key);
  std::string type, blob;
  in >> type >> blob;
  auto raw = kube::Base64Decode(blob);
  if (type.empty() || !raw || raw->empty()) {
    return Status(StatusCode::kInvalidArgument, "public key is not in OpenSSH format");
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(raw->data(), raw->size(), md, &len, EVP_md5(), nullptr) != 1) {
    return Status(StatusCode::kInternal, "MD5 unavailable");
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    if (i) out += ':';
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

Object ImageObject(const EnvImage& im) {
  Object conds = Object::array();
  for (const char* t : {"Initialized", "Imported"}) {
    conds.push_back({{"type", t}, {"status", "True"}});
  }
  Object status = {{"progress", 100},
                   {"size", im.size},
                   {"storageClassName", ImageStorageClassName(im.name)},
                   {"appliedUrl", im.url},
                   {"conditions", conds}};
  if (im.virtual_size > 0) status["virtualSize"] = im.virtual_size;
  return {{"apiVersion", "harvesterhci.io/v1beta1"},
          {"kind", "VirtualMachineImage"},
          {"metadata",
           {{"name", im.name},
            {"namespace", im.ns},
            {"annotations", {{"harvesterhci.io/storageClassName", "harvester-longhorn"}}}}},
          {"spec",
           {{"displayName", im.display_name},
            {"sourceType", "download"},
            {"url", im.url},
            {"backend", "backingimage"},
            {"retry", 3}}},
          {"status", status}};
}

Object ImageStorageClass(const EnvImage& im) {
  return {{"apiVersion", "storage.k8s.io/v1"},
          {"kind", "StorageClass"},
          {"metadata",
           {{"name", ImageStorageClassName(im.name)},
            {"annotations", {{"harvesterhci.io/is-reserved-storageclass", "true"}}}}},
          {"provisioner", "driver.longhorn.io"},
          {"reclaimPolicy", "Delete"},
          {"volumeBindingMode", "Immediate"},
          {"allowVolumeExpansion", true},
          {"parameters",
           {{"backingImage", im.ns + "-" + im.name},
            {"numberOfReplicas", "3"},
            {"staleReplicaTimeout", "30"},
            {"migratable", "true"}}}};
}

Object KeyPairObject(const EnvKeyPair& kp) {
  Object status = Object::object();
  auto fp = KeyFingerprint(kp.public_key);
  if (fp.ok()) {
    status = {{"fingerPrint", *fp},
              {"conditions", Object::array({{{"type", "validated"}, {"status", "True"}}})}};
  } else {
    status = {{"conditions", Object::array({{{"type", "validated"},
                                             {"status", "False"},
                                             {"reason", "ParseFailed"},
                                             {"message", fp.status().message()}}})}};
  }
  return {{"apiVersion", "harvesterhci.io/v1beta1"},
          {"kind", "KeyPair"},
          {"metadata", {{"name", kp.name}, {"namespace", kp.ns}}},
          {"spec", {{"publicKey", kp.public_key}}},
          {"status", status}};
}

Object NadObject(const EnvNetwork& n) {
  Object config = {{"cniVersion", "0.3.1"},   {"name", n.name},
                   {"type", "bridge"},        {"bridge", n.cluster_network + "-br"},
                   {"promiscMode", true},     {"vlan", n.vlan},
                   {"ipam", Object::object()}};
  Object route = {{"mode", "auto"},
                  {"serverIPAddr", ""},
                  {"cidr", n.cidr},
                  {"gateway", n.gateway},
                  {"connectivity", "true"}};
  return {{"apiVersion", "k8s.cni.cncf.io/v1"},
          {"kind", "NetworkAttachmentDefinition"},
          {"metadata",
           {{"name", n.name},
            {"namespace", n.ns},
            {"labels",
             {{"network.harvesterhci.io/clusternetwork", n.cluster_network},
              {"network.harvesterhci.io/type", n.vlan == 0 ? "UntaggedNetwork" : "L2VlanNetwork"},
              {"network.harvesterhci.io/vlan-id", std::to_string(n.vlan)}}},
            {"annotations", {{"network.harvesterhci.io/route", route.dump()}}}}},
          {"spec", {{"config", config.dump()}}}};
}

kube::StatusOr<Object> PoolObject(const EnvPool& p) {
  Object pool = {{"apiVersion", "loadbalancer.harvesterhci.io/v1beta1"},
                 {"kind", "IPPool"},
                 {"metadata", {{"name", p.name}}},
                 {"spec", p.spec}};
  if (!p.labels.empty()) pool["metadata"]["labels"] = p.labels;
  CAPHV_ASSIGN_OR_RETURN(auto ranges, PoolRanges(pool));
  (void)ranges;
  return pool;
}

Object IngressExposeService(const std::string& vip) {
  auto port = [](const char* name, int number) {
    return Object{{"name", name}, {"port", number}, {"protocol", "TCP"}, {"targetPort", number}};
  };
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata",
           {{"name", "ingress-expose"},
            {"namespace", "kube-system"},
            {"annotations", {{"kube-vip.io/loadbalancerIPs", vip}}}}},
          {"spec",
           {{"type", "LoadBalancer"},
            {"ports", Object::array({port("https-internal", 443), port("http", 80)})},
            {"selector", {{"app.kubernetes.io/name", "rke2-ingress-nginx"}}}}}};
}

Object HostNode(const EnvHost& host, const std::set<std::string>& cluster_networks) {
  Object labels = {{"kubernetes.io/hostname", host.name},
                   {"kubernetes.io/os", "linux"},
                   {"kubernetes.io/arch", "amd64"},
                   {"node-role.kubernetes.io/control-plane", "true"},
                   {"harvesterhci.io/managed", "true"}};
  for (const auto& cn : cluster_networks) labels["network.harvesterhci.io/" + cn] = "true";
  if (!host.zone.empty()) labels["topology.kubernetes.io/zone"] = host.zone;
  for (const auto& [k, v] : host.labels.items()) labels[k] = v;
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", host.name}, {"labels", labels}}},
          {"status",
           {{"conditions", Object::array({{{"type", "Ready"},
                                           {"status", "True"},
                                           {"reason", "KubeletReady"},
                                           {"message", "kubelet is posting ready status"}}})},
            {"nodeInfo",
             {{"osImage", "Harvester v1.7.3"},
              {"kubeletVersion", "v1.33.5+rke2r1"},
              {"containerRuntimeVersion", "containerd://2.0.5-k3s1"},
              {"architecture", "amd64"},
              {"operatingSystem", "linux"}}}}}};
}

kube::StatusOr<std::vector<Object>> SeedObjects(const Environment& env) {
  std::vector<Object> out;
  std::set<std::string> namespaces;
  for (const auto& i : env.images) namespaces.insert(i.ns);
  for (const auto& k : env.keypairs) namespaces.insert(k.ns);
  for (const auto& n : env.networks) namespaces.insert(n.ns);
  for (const auto& ns : namespaces) {
    out.push_back({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  }
  for (const auto& i : env.images) {
    out.push_back(ImageStorageClass(i));
    out.push_back(ImageObject(i));
  }
  for (const auto& k : env.keypairs) out.push_back(KeyPairObject(k));
  for (const auto& n : env.networks) out.push_back(NadObject(n));
  for (const auto& p : env.pools) {
    CAPHV_ASSIGN_OR_RETURN(auto pool, PoolObject(p));
    out.push_back(std::move(pool));
  }
  if (!env.vip.empty()) out.push_back(IngressExposeService(env.vip));
  std::set<std::string> cluster_networks;
  for (const auto& n : env.networks) cluster_networks.insert(n.cluster_network);
  for (const auto& h : env.hosts) out.push_back(HostNode(h, cluster_networks));
  return out;
}

}  // namespace caphv::sim
