// File: test/integration/api/upstream_sources.h
//
// The manifests the Go provider v0.2.9 ships, read from its source archive
// for the drop-in test (upstream_manifests_test.cc): the clusterctl flavors
// and ClusterClass files of templates/ (variables substituted by `clusterctl
// generate yaml`, as `clusterctl generate cluster` would), config/samples,
// examples/, the certification suite's topology template, the ClusterClass of
// the Helm chart (rendered) and the output of `bin/caphv-generate --dry-run`.
//
// Also the Go provider's own admission rules, restated from its webhooks
// (api/v1alpha1/*_webhook.go) and the rules table of its operations guide, so
// the test knows what the Go provider accepts: its CRD schemas answer through
// the apiserver, these rules through GoWebhookDenials().
//
// Thread safety: test-thread only.

#pragma once

#include <arpa/inet.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/codec.h"
#include "api/quantity.h"
#include "api/yaml.h"
#include "manager_process.h"
#include "support/testbed.h"

namespace caphv::testing::upstream {

namespace fs = std::filesystem;
using api::Json;

inline constexpr char kArchive[] = "cluster-api-provider-harvester-v0.2.9.tar.gz";
inline constexpr char kTopDir[] = "cluster-api-provider-harvester-v0.2.9";

// The Go provider's source tree, unpacked under `work` if needed.
// $CAPHV_GO_PROVIDER_SOURCE names the archive or an unpacked tree; else the
// archive is looked for in ../shared/third_party next to the checkout. Empty
// when absent; `looked_at` says where it looked.
inline std::optional<fs::path> SourceTree(const fs::path& work, std::string* looked_at) {
  fs::path where;
  if (const char* env = std::getenv("CAPHV_GO_PROVIDER_SOURCE"); env && *env) {
    where = env;
  } else {
    where = fs::path(SourcePath("")) / ".." / "shared" / "third_party" / kArchive;
  }
  *looked_at = where.string();
  if (fs::is_directory(where)) {
    if (fs::is_directory(where / kTopDir)) return where / kTopDir;
    return where;
  }
  if (!fs::is_regular_file(where)) return std::nullopt;
  fs::create_directories(work);
  std::string out;
  if (RunCommand("tar -xzf '" + where.string() + "' -C '" + work.string() + "'", &out) != 0) {
    *looked_at += " (cannot unpack: " + out + ")";
    return std::nullopt;
  }
  return work / kTopDir;
}

// One document of an upstream manifest, with where it came from.
struct Doc {
  std::string source;  // "templates/cluster-template-rke2.yaml", "caphv-generate --ip-pool"
  Json object;
};

inline void AddDocs(const std::string& source, const std::string& yaml, std::vector<Doc>* out,
                    std::string* problems) {
  auto docs = api::ParseYaml(yaml);
  if (!docs.ok()) {
    *problems += source + ": " + docs.status().ToString() + "\n";
    return;
  }
  for (auto& d : *docs) {
    if (d.is_object() && d.contains("kind")) out->push_back({source, std::move(d)});
  }
}

// Values for the flavors' variables: what a user of the Go provider's README
// would export. RANCHER_TURTLES_LABEL is a whole YAML line in two flavors.
inline std::map<std::string, std::string> FlavorVariables() {
  return {
      {"NAMESPACE", "caphv-upstream"},
      {"CLUSTER_NAME", "c1"},
      {"CLUSTER_CLASS_NAME", "harvester-rke2"},
      {"KUBERNETES_VERSION", "v1.31.6+rke2r1"},
      {"CONTROL_PLANE_MACHINE_COUNT", "3"},
      {"WORKER_MACHINE_COUNT", "2"},
      {"TARGET_HARVESTER_NAMESPACE", "default"},
      {"TARGET_NAMESPACE", "default"},
      {"HARVESTER_ENDPOINT", "https://10.0.0.2:6443"},
      {"HARVESTER_KUBECONFIG_B64", "YXBpVmVyc2lvbjogdjEK"},
      {"CLOUD_CONFIG_KUBECONFIG_B64", "YXBpVmVyc2lvbjogdjEK"},
      {"IDENTITY_SECRET_NAME", "hv-identity-secret"},
      {"SSH_KEYPAIR", "default/my-ssh-key"},
      {"SSH_USER", "sles"},
      {"VM_IMAGE_NAME", "default/sles15-sp7.qcow2"},
      {"VOLUME_IMAGE", "default/sles15-sp7.qcow2"},
      {"VM_NETWORK", "default/production"},
      {"VM_DISK_SIZE", "40Gi"},
      {"VM_VOLUME_SIZE", "40Gi"},
      {"VOLUME_SIZE", "40Gi"},
      {"VM_CPU_CORES", "2"},
      {"CPU_COUNT", "2"},
      {"VM_MEMORY_SIZE", "4Gi"},
      {"MEMORY_SIZE", "4Gi"},
      {"IP_POOL_NAME", "my-ip-pool"},
      {"IP_POOL_REF", "my-ip-pool"},
      {"GATEWAY", "10.0.0.1"},
      {"SUBNET_MASK", "255.255.255.0"},
      {"DNS_SERVERS", "10.0.0.53"},
      {"CONTROL_PLANE_ENDPOINT_HOST", "10.0.0.10"},
      {"CNI", "calico"},
      {"TALOS_VERSION", "v1.7.0"},
  };
}

inline std::string ShellQuote(const std::string& s) {
  std::string quoted = "'";
  for (char c : s) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Runs `command` with its stdout to `out_file`; true on success, with that
// output in `out`; else `out` is what it printed on stderr.
inline bool RunToFile(const std::string& command, const fs::path& out_file, std::string* out) {
  std::string err;
  // The subshell keeps stderr on the pipe RunCommand reads.
  if (RunCommand("( " + command + " > " + ShellQuote(out_file.string()) + " )", &err) != 0) {
    *out = err;
    return false;
  }
  *out = ReadWholeFile(out_file);
  return true;
}

// `clusterctl generate yaml --from file` with `vars` in its environment.
inline bool ClusterctlGenerate(const fs::path& clusterctl, const fs::path& file,
                               const std::map<std::string, std::string>& vars,
                               const fs::path& out_file, std::string* out) {
  std::string env = "CLUSTERCTL_DISABLE_VERSIONCHECK=true";
  for (const auto& [k, v] : vars) env += " " + k + "=" + ShellQuote(v);
  return RunToFile("env " + env + " " + ShellQuote(clusterctl.string()) + " generate yaml --from " +
                       ShellQuote(file.string()),
                   out_file, out);
}

// chart/caphv/templates/clusterclass.yaml as `helm template --set
// clusterClass.enabled=true -n <ns>` renders it: the if/end lines go, the
// release namespace is filled in and {{`...`}} escapes are unwrapped.
inline std::string RenderChartClusterClass(const std::string& text, const std::string& ns) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto first = line.find_first_not_of(' ');
    if (first != std::string::npos &&
        (line.compare(first, 6, "{{- if") == 0 || line.compare(first, 7, "{{- end") == 0)) {
      continue;
    }
    for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
             {"{{ .Release.Namespace }}", ns}, {"{{`", ""}, {"`}}", ""}}) {
      for (size_t at = line.find(from); at != std::string::npos; at = line.find(from, at)) {
        line.replace(at, from.size(), to);
        at += to.size();
      }
    }
    out += line + "\n";
  }
  return out;
}

// --- the Go provider's webhook rules ----------------------------------------

inline std::string Str(const Json& o, const std::string& pointer) {
  const Json::json_pointer p(pointer);
  if (!o.contains(p) || !o[p].is_string()) return "";
  return o[p].get<std::string>();
}

inline bool IsGoIP(const std::string& s) {  // net.ParseIP
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

// The reasons the Go provider's validating webhook denies `obj` (empty: it
// admits it). Only HarvesterMachine and HarvesterCluster have webhooks there.
inline std::vector<std::string> GoWebhookDenials(const Json& obj) {
  std::vector<std::string> why;
  const std::string kind = obj.value("kind", "");
  const Json spec = obj.contains("spec") && obj["spec"].is_object() ? obj["spec"] : Json::object();
  auto list = [&](const char* key) {
    return spec.contains(key) && spec[key].is_array() ? spec[key] : Json::array();
  };
  if (kind == "HarvesterMachine") {
    if (spec.value("cpu", 0) == 0) why.push_back("spec.cpu must be greater than 0");
    const std::string memory = spec.value("memory", "");
    if (memory.empty() || !api::Quantity::Parse(memory)) why.push_back("spec.memory");
    if (spec.value("sshUser", "").empty()) why.push_back("spec.sshUser is required");
    if (spec.value("sshKeyPair", "").empty()) why.push_back("spec.sshKeyPair is required");
    if (list("volumes").empty()) why.push_back("spec.volumes must contain at least one volume");
    for (const auto& v : list("volumes")) {
      const std::string type = v.value("volumeType", "");
      if (type != "image" && type != "storageClass") why.push_back("volumeType");
      if (type == "image" && v.value("imageName", "").empty()) why.push_back("imageName");
      if (type == "storageClass" && v.value("storageClass", "").empty()) {
        why.push_back("storageClass");
      }
    }
    if (list("networks").empty()) why.push_back("spec.networks must contain at least one");
    if (spec.contains("networkConfig") && spec["networkConfig"].is_object()) {
      if (Str(spec, "/networkConfig/address").empty()) why.push_back("networkConfig.address");
      if (!IsGoIP(Str(spec, "/networkConfig/gateway"))) why.push_back("networkConfig.gateway");
    }
  } else if (kind == "HarvesterCluster") {
    if (spec.value("targetNamespace", "").empty()) why.push_back("spec.targetNamespace");
    if (Str(spec, "/identitySecret/name").empty()) why.push_back("identitySecret.name");
    if (Str(spec, "/identitySecret/namespace").empty()) why.push_back("identitySecret.namespace");
    const std::string ipam = Str(spec, "/loadBalancerConfig/ipamType");
    if (ipam != "dhcp" && ipam != "pool") why.push_back("loadBalancerConfig.ipamType");
    if (spec.contains("vmNetworkConfig") && spec["vmNetworkConfig"].is_object()) {
      const Json& vm = spec["vmNetworkConfig"];
      if (vm.value("ipPoolRef", "").empty() &&
          !(vm.contains("ipPool") && !vm["ipPool"].is_null())) {
        why.push_back("vmNetworkConfig requires either ipPoolRef or ipPool");
      }
      if (!IsGoIP(vm.value("gateway", ""))) why.push_back("vmNetworkConfig.gateway");
      if (!IsGoIP(vm.value("subnetMask", ""))) why.push_back("vmNetworkConfig.subnetMask");
    }
  }
  return why;
}

}  // namespace caphv::testing::upstream
