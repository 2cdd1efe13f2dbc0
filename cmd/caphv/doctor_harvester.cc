// File: cmd/caphv/doctor_harvester.cc
//
// `caphv doctor`'s checks against Harvester (doctor_checks.h).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "doctor_checks.h"
#include "generate/interactive.h"
#include "harvester/identity_expiry.h"
#include "harvester/ipam.h"
#include "harvester/resources.h"
#include "kube/credential_expiry.h"
#include "kube/object.h"

namespace caphv::cli::doctor {

std::vector<Check> HarvesterChecks(const DoctorFlags& f) {
  std::vector<Check> checks;
  auto config = kube::LoadKubeconfigFile(f.harvester_kubeconfig);
  if (!config.ok()) {
    checks.push_back({"harvester reachable", false, config.status().message(),
                      "give --harvester-kubeconfig a kubeconfig of Harvester"});
    return checks;
  }
  ShortTimeouts(*config, f.timeout);
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
    } else if (Unreachable(images.status())) {
      checks.push_back(
          {"harvester reachable", false,
           "cannot reach " + config->server + ": " + WhyUnreachable(images.status(), f.timeout),
           "check the server address of the kubeconfig and that Harvester is up"});
    } else {
      checks.push_back({"harvester reachable", false,
                        config->server + ": " + FirstLine(images.status().message()),
                        "check the credentials of the kubeconfig"});
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
        checks.push_back({"image", false,
                          f.image + " is not Active (" + generate::ImageState(*image) + ")",
                          "wait for the import to finish, or upload the image again"});
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
      const int64_t total = harvester::TotalAddresses(*parsed);
      const int64_t free =
          std::max<int64_t>(total - static_cast<int64_t>(parsed->allocated.size()), 0);
      free_total += free;
      if (free == 0) {
        // Exhausted: a failure only when the pools together cannot hold the
        // machines (the next check), as later pools take over.
        Check c{"ip pool " + name, true,
                "0 free addresses: all " + std::to_string(total) + " allocated",
                "release addresses (kubectl get ippool " + name +
                    " -o yaml shows who holds them) or add a range"};
        c.warning = true;
        checks.push_back(c);
      } else {
        checks.push_back({"ip pool " + name, true, std::to_string(free) + " free addresses", ""});
      }
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

}  // namespace caphv::cli::doctor
