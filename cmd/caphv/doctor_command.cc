// File: cmd/caphv/doctor_command.cc

#include "doctor_command.h"

#include <iostream>
#include <sstream>

#include "harvester/identity_expiry.h"
#include "harvester/ipam.h"
#include "harvester/resources.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/credential_expiry.h"

namespace caphv::cli {
namespace {

using api::Json;
using kube::GroupVersionResource;

const GroupVersionResource kNetworks{"k8s.cni.cncf.io", "v1", "network-attachment-definitions",
                                     true};
const GroupVersionResource kCrds{"apiextensions.k8s.io", "v1", "customresourcedefinitions", false};
const GroupVersionResource kClusterRoles{"rbac.authorization.k8s.io", "v1", "clusterroles", false};
const GroupVersionResource kClusterClasses{"cluster.x-k8s.io", "v1beta1", "clusterclasses", true};

std::pair<std::string, std::string> Split(const std::string& ref) {
  const auto slash = ref.find('/');
  if (slash == std::string::npos) return {"default", ref};
  return {ref.substr(0, slash), ref.substr(slash + 1)};
}

bool ConditionTrue(const Json& o, std::string_view type) {
  if (!o.contains("status") || !o["status"].contains("conditions")) return false;
  for (const auto& c : o["status"]["conditions"]) {
    if (c.value("type", std::string()) == type) return c.value("status", std::string()) == "True";
  }
  return false;
}

Check Exists(kube::Client& client, const GroupVersionResource& gvr, const std::string& what,
             const std::string& ref, const std::string& fix) {
  const auto [ns, name] = Split(ref);
  auto got = client.Get(gvr, gvr.namespaced ? ns : "", name);
  if (got.ok()) return {what, true, ref + " exists", ""};
  if (got.status().IsNotFound()) return {what, false, ref + " not found", fix};
  return {what, false, ref + ": " + got.status().message(), fix};
}

std::vector<Check> HarvesterChecks(const DoctorFlags& f) {
  std::vector<Check> checks;
  auto config = kube::LoadKubeconfigFile(f.harvester_kubeconfig);
  if (!config.ok()) {
    checks.push_back({"harvester reachable", false, config.status().message(),
                      "give --harvester-kubeconfig a kubeconfig of Harvester"});
    return checks;
  }
  auto client_or = kube::Client::New(*config);
  if (!client_or.ok()) {
    checks.push_back({"harvester reachable", false, client_or.status().message(),
                      "give --harvester-kubeconfig a kubeconfig of Harvester"});
    return checks;
  }
  kube::Client& client = **client_or;
  kube::ListOptions one;
  one.limit = 1;
  auto images = client.List(harvester::kVirtualMachineImages, "", one);
  if (!images.ok()) {
    if (images.status().IsNotFound()) {
      checks.push_back({"harvester reachable", false,
                        "the apiserver serves no harvesterhci.io images: not Harvester",
                        "give --harvester-kubeconfig the kubeconfig of Harvester itself"});
    } else {
      checks.push_back({"harvester reachable", false, images.status().message(),
                        "check the server address and credentials of the kubeconfig"});
    }
    return checks;
  }
  checks.push_back({"harvester reachable", true, config->server + " serves Harvester's API", ""});

  if (!f.image.empty()) {
    const auto [ns, name] = Split(f.image);
    auto image = client.Get(harvester::kVirtualMachineImages, ns, name);
    const std::string fix =
        "upload the image in Harvester (Images) or give --image the namespace/name of an "
        "Active one";
    if (!image.ok()) {
      checks.push_back(
          {"image", false,
           f.image + (image.status().IsNotFound() ? " not found" : ": " + image.status().message()),
           fix});
    } else {
      const std::string sc = (*image)["status"].value("storageClassName", std::string());
      if (!ConditionTrue(*image, "Imported")) {
        checks.push_back({"image", false, f.image + " is not Active (not imported yet)",
                          "wait for the import to finish, or upload it again"});
      } else if (sc.empty()) {
        checks.push_back({"image", false, f.image + " is Active but has no StorageClass",
                          "re-create the image so Harvester makes its StorageClass"});
      } else {
        checks.push_back({"image", true, f.image + " is Active, StorageClass " + sc, ""});
      }
    }
  }
  if (!f.ssh_keypair.empty()) {
    checks.push_back(Exists(client, harvester::kKeyPairs, "key pair", f.ssh_keypair,
                            "create the KeyPair in Harvester (Advanced > SSH Keys)"));
  }
  if (!f.network.empty()) {
    checks.push_back(Exists(client, kNetworks, "network", f.network,
                            "create the VM network in Harvester (Networks > VM Networks)"));
  }
  if (!f.ip_pools.empty()) {
    int64_t free_total = 0;
    std::stringstream in(f.ip_pools);
    std::string name;
    while (std::getline(in, name, ',')) {
      auto pool = client.Get(harvester::kIPPools, "", name);
      if (!pool.ok()) {
        checks.push_back({"ip pool " + name, false,
                          pool.status().IsNotFound() ? "not found" : pool.status().message(),
                          "create the IPPool in Harvester (Networks > IP Pools)"});
        continue;
      }
      auto parsed = harvester::ParseIpPool(*pool);
      if (!parsed.ok()) {
        checks.push_back(
            {"ip pool " + name, false, parsed.status().message(), "fix the pool's ranges"});
        continue;
      }
      const int64_t free =
          harvester::TotalAddresses(*parsed) - static_cast<int64_t>(parsed->allocated.size());
      free_total += std::max<int64_t>(free, 0);
      checks.push_back({"ip pool " + name, true, std::to_string(free) + " free addresses", ""});
    }
    const bool enough = free_total >= f.replicas;
    checks.push_back(
        {"ip pools hold the machines", enough,
         std::to_string(free_total) + " free addresses for " + std::to_string(f.replicas) +
             " machines",
         enough ? "" : "add a range or a pool (--ip-pool-refs), or ask fewer replicas"});
  }
  checks.push_back(Exists(client, kClusterRoles, "cloud-provider ClusterRole",
                          "harvesterhci.io:cloudprovider",
                          "Harvester installs it: check Harvester's version and installation"));

  // The identity's expiry: a JWT's exp, a certificate's notAfter, or the
  // Rancher token's TTL.
  std::optional<kube::CredentialExpiry> expiry = kube::CredentialExpiryOf(*config);
  if (!expiry && !config->token.empty()) {
    const std::string token_name = kube::RancherTokenName(config->token);
    if (!token_name.empty()) {
      auto token = client.Get(harvester::kRancherTokens, "", token_name);
      if (token.ok()) {
        if (auto at = harvester::RancherTokenExpiry(*token)) {
          expiry = kube::CredentialExpiry{*at, "token"};
        }
      }
    }
  }
  if (!expiry) {
    checks.push_back({"identity expiry", true, "the credentials carry no expiry", ""});
  } else {
    const auto now = std::chrono::system_clock::now();
    const auto state = harvester::StateOf(*expiry, now);
    Check c{"identity expiry", state != harvester::ExpiryState::kExpired,
            harvester::DescribeExpiry(*expiry, now), ""};
    if (state != harvester::ExpiryState::kValid) {
      c.fix = "download a new kubeconfig from Harvester and update the identity Secret";
      c.warning = state == harvester::ExpiryState::kExpiringSoon;
    }
    checks.push_back(c);
  }
  return checks;
}

std::vector<Check> ManagementChecks(const DoctorFlags& f) {
  std::vector<Check> checks;
  auto config = kube::LoadKubeconfigFile(f.kubeconfig);
  auto client_or = config.ok() ? kube::Client::New(*config)
                               : kube::StatusOr<std::shared_ptr<kube::Client>>(config.status());
  if (!client_or.ok()) {
    checks.push_back({"management cluster", false, client_or.status().message(),
                      "give --kubeconfig the management cluster's kubeconfig"});
    return checks;
  }
  kube::Client& client = **client_or;
  struct Want {
    const char* name;
    const char* crd;
    const char* fix;
  };
  const Want wants[] = {
      {"Cluster API", "clusters.cluster.x-k8s.io", "clusterctl init"},
      {"RKE2 control-plane provider", "rke2controlplanes.controlplane.cluster.x-k8s.io",
       "clusterctl init --bootstrap rke2 --control-plane rke2"},
      {"RKE2 bootstrap provider", "rke2configs.bootstrap.cluster.x-k8s.io",
       "clusterctl init --bootstrap rke2 --control-plane rke2"},
      {"cert-manager", "certificates.cert-manager.io",
       "install cert-manager (clusterctl init does)"},
      {"CAPHV", "harvesterclusters.infrastructure.cluster.x-k8s.io",
       "clusterctl init --infrastructure harvester"},
  };
  for (const auto& w : wants) {
    auto got = client.Get(kCrds, "", w.crd);
    if (got.ok()) {
      checks.push_back({w.name, true, std::string(w.crd) + " installed", ""});
    } else {
      checks.push_back(
          {w.name, false,
           std::string(w.crd) +
               (got.status().IsNotFound() ? " not installed" : ": " + got.status().message()),
           w.fix});
    }
  }
  checks.push_back(Exists(client, kClusterClasses, "ClusterClass", f.ns + "/" + f.cls,
                          "kubectl apply -n " + f.ns +
                              " -f templates/clusterclass-harvester-rke2.yaml (caphv generate "
                              "--apply does)"));
  return checks;
}

}  // namespace

CLI::App* AddDoctorCommand(CLI::App& app, DoctorFlags& f) {
  auto* cmd = app.add_subcommand("doctor", "Check Harvester and the management cluster");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->add_option("--harvester-kubeconfig", f.harvester_kubeconfig, "Harvester kubeconfig")
      ->required();
  cmd->add_option("--kubeconfig", f.kubeconfig, "Management cluster kubeconfig (optional)");
  cmd->add_option("--namespace", f.ns, "Namespace of the ClusterClass")->capture_default_str();
  cmd->add_option("--class", f.cls, "ClusterClass")->capture_default_str();
  cmd->add_option("--image", f.image, "VM image (namespace/name)");
  cmd->add_option("--ssh-keypair", f.ssh_keypair, "KeyPair (namespace/name)");
  cmd->add_option("--network", f.network, "VM network (namespace/name)");
  cmd->add_option("--ip-pool,--ip-pool-refs", f.ip_pools, "IPPools, comma-separated");
  cmd->add_option("--replicas", f.replicas, "Machines the pools must hold")->capture_default_str();
  cmd->add_option("-o,--output", f.output, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  return cmd;
}

std::string RenderChecks(const std::vector<Check>& checks, bool json) {
  if (json) {
    Json out = Json::array();
    for (const auto& c : checks) {
      Json j = {{"name", c.name}, {"ok", c.ok}, {"detail", c.detail}};
      if (!c.fix.empty()) j["fix"] = c.fix;
      if (c.warning) j["warning"] = true;
      out.push_back(j);
    }
    return out.dump(2) + "\n";
  }
  std::string out;
  for (const auto& c : checks) {
    out += std::string(c.ok ? (c.warning ? "! " : "✓ ") : "✗ ") + c.name + ": " + c.detail;
    if (!c.fix.empty()) out += "; fix: " + c.fix;
    out += "\n";
  }
  return out;
}

int RunDoctor(const DoctorFlags& f, std::ostream& out, std::ostream& /*err*/) {
  std::vector<Check> checks = HarvesterChecks(f);
  if (!f.kubeconfig.empty()) {
    for (auto& c : ManagementChecks(f)) checks.push_back(std::move(c));
  }
  out << RenderChecks(checks, f.output == "json");
  int failures = 0;
  for (const auto& c : checks) failures += c.ok ? 0 : 1;
  return failures;
}

}  // namespace caphv::cli
