// File: sim/rke2.cc
//
// RKE2's join decision and the objects RKE2 and its kubelet write into the
// workload cluster. Declarations in sim/rke2.h.

#include "sim/rke2.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <regex>

#include "kube/base64.h"

namespace caphv::sim {

using kube::Object;

namespace {

constexpr char kDefaultRke2Version[] = "v1.33.13+rke2r1";
constexpr char kUninitialized[] = "node.cloudprovider.kubernetes.io/uninitialized";

// FNV-1a: a stable short hash for names RKE2 derives from content.
std::string Hash8(std::string_view s) {
  uint32_t h = 2166136261u;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", h);
  return buf;
}

// The secret of a token: "K10<ca hash>::<user>:<secret>" -> "<secret>".
std::string TokenSecret(const std::string& token) {
  if (!token.starts_with("K10") || token.find("::") == std::string::npos) return token;
  return token.substr(token.rfind(':') + 1);
}

std::string Join(const std::set<std::string>& s) {
  std::string out;
  for (const auto& e : s) out += (out.empty() ? "" : ", ") + e;
  return out.empty() ? "none" : out;
}

const Object* NoCloud(const Object& vm) {
  const Object* cur = &vm;
  for (const char* k : {"spec", "template", "spec", "volumes"}) {
    if (!cur->is_object() || !cur->contains(k)) return nullptr;
    cur = &(*cur)[k];
  }
  if (!cur->is_array()) return nullptr;
  for (const auto& v : *cur) {
    if (v.is_object() && v.contains("cloudInitNoCloud")) return &v["cloudInitNoCloud"];
  }
  return nullptr;
}

}  // namespace

std::string InlineUserData(const Object& vm) {
  const Object* ci = NoCloud(vm);
  if (!ci) return "";
  if (ci->contains("userData") && (*ci)["userData"].is_string()) {
    return (*ci)["userData"].get<std::string>();
  }
  if (ci->contains("userDataBase64") && (*ci)["userDataBase64"].is_string()) {
    return kube::Base64Decode((*ci)["userDataBase64"].get<std::string>()).value_or("");
  }
  return "";
}

std::string UserDataSecretName(const Object& vm) {
  const Object* ci = NoCloud(vm);
  if (!ci) return "";
  for (const char* ref : {"secretRef", "userDataSecretRef"}) {
    if (ci->contains(ref) && (*ci)[ref].is_object()) return (*ci)[ref].value("name", "");
  }
  return "";
}

std::optional<std::string> UserDataFromSecret(const Object& secret) {
  for (const char* key : {"userdata", "userData"}) {
    if (secret.contains("data") && secret["data"].contains(key)) {
      return kube::Base64Decode(secret["data"][key].get<std::string>());
    }
    if (secret.contains("stringData") && secret["stringData"].contains(key)) {
      return secret["stringData"][key].get<std::string>();
    }
  }
  return std::nullopt;
}

std::string KubeletVersionFor(const std::string& rke2_version) {
  if (rke2_version.empty()) return kDefaultRke2Version;
  std::string v = rke2_version;
  if (!v.starts_with("v")) v = "v" + v;
  if (v.find('+') == std::string::npos) v += "+rke2r1";
  return v;
}

bool ExternalCloudProvider(const Rke2Config& c) {
  return (!c.cloud_provider_name.empty() && c.cloud_provider_name != "rke2") ||
         c.disable_cloud_controller;
}

JoinDecision DecideJoin(const Rke2Config& c, const Rke2Cluster& cluster, bool is_first) {
  JoinDecision d;
  if (c.server.empty()) {
    if (c.role != "server") {
      d.reason = "NoServerAddress";
      d.message = "the RKE2 agent's config has no `server:` to join";
      return d;
    }
    if (!is_first) {
      d.reason = "SeparateCluster";
      d.message =
          "a second RKE2 server without `server:` would start a cluster of its own; the "
          "cluster's first server is " +
          cluster.first_server;
      return d;
    }
    d.join = true;
    return d;
  }
  if (cluster.first_server.empty()) {
    d.reason = "WaitingForServer";
    d.message = "no RKE2 server is up yet to join at " + c.server;
    return d;
  }
  static const std::regex kUrl(R"(^https://(\[[0-9A-Fa-f:.]+\]|[^/:\[\]]+):([0-9]+)/?$)");
  std::smatch m;
  if (!std::regex_match(c.server, m, kUrl)) {
    d.reason = "InvalidServerAddress";
    d.message = "`server: " + c.server + "` is not https://<host>:<port>";
    return d;
  }
  std::string host = m[1];
  if (host.starts_with("[")) host = host.substr(1, host.size() - 2);
  if (m[2] != std::to_string(kRke2JoinPort)) {
    d.reason = "WrongServerPort";
    d.message = "`server: " + c.server + "`: RKE2 servers take joining nodes on port " +
                std::to_string(kRke2JoinPort) + ", not " + std::string(m[2]);
    return d;
  }
  if (!cluster.hosts.contains(host)) {
    d.reason = "UnknownServer";
    d.message = "`server: " + c.server + "`: no RKE2 server of this cluster answers at " + host +
                " (registration addresses: " + Join(cluster.hosts) + ")";
    return d;
  }
  if (c.token.empty() || TokenSecret(c.token) != TokenSecret(cluster.token)) {
    d.reason = "TokenMismatch";
    d.message = c.token.empty() ? "the config has no `token:`; the server refuses the node"
                                : "the server at " + c.server +
                                      " refuses the node's token: it is not the cluster's (set "
                                      "by the first server " +
                                      cluster.first_server + ")";
    return d;
  }
  d.join = true;
  return d;
}

Object BuildRke2Node(const std::string& node_name, const Rke2Config& c, const std::string& ip) {
  Object labels = {{"kubernetes.io/hostname", node_name},
                   {"kubernetes.io/os", "linux"},
                   {"kubernetes.io/arch", "amd64"},
                   {"beta.kubernetes.io/os", "linux"},
                   {"beta.kubernetes.io/arch", "amd64"}};
  if (c.control_plane) {
    labels["node-role.kubernetes.io/control-plane"] = "true";
    labels["node-role.kubernetes.io/master"] = "true";
  }
  if (c.etcd) labels["node-role.kubernetes.io/etcd"] = "true";
  for (const auto& l : c.node_labels) {
    const size_t eq = l.find('=');
    labels[l.substr(0, eq)] = eq == std::string::npos ? "" : l.substr(eq + 1);
  }
  Object taints = Object::array();
  for (const auto& t : c.node_taints) {  // key[=value]:Effect
    const size_t colon = t.rfind(':');
    const std::string kv = t.substr(0, colon);
    const size_t eq = kv.find('=');
    Object taint = {{"key", kv.substr(0, eq)},
                    {"effect", colon == std::string::npos ? "NoSchedule" : t.substr(colon + 1)}};
    if (eq != std::string::npos) taint["value"] = kv.substr(eq + 1);
    taints.push_back(taint);
  }
  Object spec = Object::object();
  if (ExternalCloudProvider(c)) {
    taints.push_back({{"key", kUninitialized}, {"value", "true"}, {"effect", "NoSchedule"}});
  } else {
    // RKE2's own cloud controller initialises the Node at once.
    labels["node.kubernetes.io/instance-type"] = "rke2";
    spec["providerID"] = "rke2://" + node_name;
  }
  if (!taints.empty()) spec["taints"] = taints;

  Object args = Object::array({c.role});
  for (auto it = c.config.begin(); it != c.config.end(); ++it) {
    const bool secret = it.key() == "token" || it.key() == "agent-token";
    const auto add = [&](const Object& v) {
      args.push_back("--" + it.key());
      args.push_back(secret ? "********" : (v.is_string() ? v.get<std::string>() : v.dump()));
    };
    if (it->is_array()) {
      for (const auto& v : *it) add(v);
    } else {
      add(*it);
    }
  }
  Object annotations = {{"rke2.io/hostname", node_name},
                        {"rke2.io/internal-ip", ip},
                        {"rke2.io/node-args", args.dump()},
                        {"rke2.io/node-config-hash", Hash8(c.config.dump()) + "===="},
                        {"rke2.io/node-env", "{}"},
                        {"node.alpha.kubernetes.io/ttl", "0"},
                        {"volumes.kubernetes.io/controller-managed-attach-detach", "true"}};
  if (c.etcd) {
    annotations[kEtcdNodeNameAnnotation] = node_name + "-" + Hash8(node_name + ip);
    annotations[kEtcdNodeAddressAnnotation] = ip;
  }
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", node_name}, {"labels", labels}, {"annotations", annotations}}},
          {"spec", spec}};
}

Object BuildNodeLease(const std::string& node_name, const std::string& node_uid,
                      const std::string& renew_time) {
  Object meta = {{"name", node_name}, {"namespace", kNodeLeaseNamespace}};
  if (!node_uid.empty()) {
    meta["ownerReferences"] = Object::array(
        {{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node_name}, {"uid", node_uid}}});
  }
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", meta},
          {"spec",
           {{"holderIdentity", node_name},
            {"leaseDurationSeconds", kLeaseDurationSeconds},
            {"renewTime", renew_time}}}};
}

std::vector<std::string> StaticPodComponents(const Rke2Config& c) {
  std::vector<std::string> out;
  if (c.role != "server") return out;
  if (c.etcd) out.emplace_back("etcd");
  if (c.control_plane) {
    out.emplace_back("kube-apiserver");
    if (!c.config.value("disable-controller-manager", false)) {
      out.emplace_back("kube-controller-manager");
    }
    if (!c.config.value("disable-scheduler", false)) out.emplace_back("kube-scheduler");
    if (!ExternalCloudProvider(c)) out.emplace_back("cloud-controller-manager");
  }
  return out;
}

Object BuildMirrorPod(const std::string& component, const std::string& node_name,
                      const std::string& node_uid, const std::string& ip, const Rke2Config& c) {
  std::string version = KubeletVersionFor(c.version);
  std::replace(version.begin(), version.end(), '+', '-');
  const std::string image =
      component == "etcd"
          ? "index.docker.io/rancher/hardened-etcd:v3.5.21-k3s1"
          : "index.docker.io/rancher/hardened-kubernetes:" + version + "-build20250101";
  const std::string hash = Hash8(component + node_name + c.config.dump()) + Hash8(node_name);
  Object meta = {{"name", component + "-" + node_name},
                 {"namespace", "kube-system"},
                 {"labels", {{"component", component}, {"tier", "control-plane"}}},
                 {"annotations",
                  {{"kubernetes.io/config.hash", hash},
                   {"kubernetes.io/config.mirror", hash},
                   {"kubernetes.io/config.source", "file"}}}};
  if (!node_uid.empty()) {
    meta["ownerReferences"] = Object::array({{{"apiVersion", "v1"},
                                              {"kind", "Node"},
                                              {"name", node_name},
                                              {"uid", node_uid},
                                              {"controller", true}}});
  }
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", meta},
      {"spec",
       {{"nodeName", node_name},
        {"hostNetwork", true},
        {"containers",
         Object::array(
             {{{"name", component}, {"image", image}, {"command", Object::array({component})}}})},
        {"tolerations", Object::array({{{"operator", "Exists"}, {"effect", "NoExecute"}}})}}},
      {"status", MirrorPodStatus(ip, MicroTimeNow().substr(0, 19) + "Z")}};
}

Object MirrorPodStatus(const std::string& ip, const std::string& now) {
  Object conditions = Object::array();
  for (const char* t : {"PodScheduled", "Initialized", "ContainersReady", "Ready"}) {
    conditions.push_back({{"type", t}, {"status", "True"}, {"lastTransitionTime", now}});
  }
  return {{"phase", "Running"}, {"hostIP", ip},
          {"podIP", ip},        {"podIPs", Object::array({{{"ip", ip}}})},
          {"startTime", now},   {"conditions", conditions}};
}

std::vector<std::string> ServingNames(const std::string& node_name, const std::string& ip,
                                      const Rke2Config& c) {
  std::vector<std::string> out;
  auto add = [&](const std::string& n) {
    if (!n.empty() && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  for (const char* n :
       {"kubernetes", "kubernetes.default", "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local", "localhost", "127.0.0.1", "10.43.0.1"}) {
    add(n);
  }
  add(node_name);
  add(ip);
  for (const auto& s : c.tls_san) add(s);
  return out;
}

namespace {

Object NodeOwner(const std::string& node_name, const std::string& node_uid) {
  return {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node_name}, {"uid", node_uid}};
}

}  // namespace

std::optional<Object> ServingSecretOwnersWith(const Object& secret, const std::string& node_name,
                                              const std::string& node_uid) {
  if (node_uid.empty()) return std::nullopt;
  Object owners = secret["metadata"].value("ownerReferences", Object::array());
  for (const auto& o : owners) {
    if (o.value("uid", "") == node_uid) return std::nullopt;
  }
  owners.push_back(NodeOwner(node_name, node_uid));
  return owners;
}

Object BuildServingSecret(const std::vector<std::string>& names, const std::string& cert_pem,
                          const std::string& key_pem, const std::string& node_name,
                          const std::string& node_uid) {
  Object annotations = Object::object();
  for (const auto& n : names) {
    std::string key = "cn-" + n;
    for (char& ch : key) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '.' && ch != '_') {
        ch = '_';
      }
    }
    annotations["listener.cattle.io/" + key.substr(0, 63)] = n;
  }
  Object meta = {
      {"name", kRke2ServingSecret}, {"namespace", "kube-system"}, {"annotations", annotations}};
  if (!node_uid.empty()) meta["ownerReferences"] = Object::array({NodeOwner(node_name, node_uid)});
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"type", "kubernetes.io/tls"},
          {"metadata", meta},
          {"data",
           {{"tls.crt", kube::Base64Encode(cert_pem)}, {"tls.key", kube::Base64Encode(key_pem)}}}};
}

std::string MicroTimeNow() {
  const auto now = std::chrono::system_clock::now();
  const auto t = std::chrono::system_clock::to_time_t(now);
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(us));
  return buf;
}

}  // namespace caphv::sim
