// File: test/integration/api/go_install_support.h
//
// The fixture of go_install_test.cc (installing CAPHV over the Go provider
// v0.2.9's install with `kubectl apply`; that file says what is checked): the
// names of the install, small JSON helpers and GoInstallTest, whose suite
// set-up reads both installs and brings cert-manager's CRDs, whose test
// set-up and tear-down leave the bed as it was, and whose steps install and
// check. Member bodies: go_install_support.cc (set-up, kubectl, installing)
// and go_install_checks.cc (the checks of the result and the operations
// guide's commands).
//
// Thread safety: test-thread only.

#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "api/fields.h"

namespace caphv::testing::go_install {

namespace fs = std::filesystem;
using api::Json;

inline constexpr char kNamespace[] = "caphv-system";
inline constexpr char kDeployment[] = "caphv-controller-manager";
inline constexpr char kWebhookService[] = "caphv-webhook-service";
inline constexpr char kMetricsService[] = "caphv-controller-manager-metrics-service";
inline constexpr char kWebhookConfig[] = "caphv-validating-webhook-configuration";
// CAPHV's own (the Go provider has no mutating webhook).
inline constexpr char kMutatingWebhookConfig[] = "caphv-mutating-webhook-configuration";
inline constexpr char kCertificate[] = "caphv-serving-cert";
inline constexpr char kWebhookSecret[] = "caphv-webhook-tls";  // the operations guide's name
inline constexpr char kProviderLabel[] = "cluster.x-k8s.io/provider";
inline constexpr char kProvider[] = "infrastructure-harvester";

// The Deployment selector of the Go provider's install (immutable).
inline const std::map<std::string, std::string> kGoSelector = {
    {"cluster.x-k8s.io/provider", "infrastructure-harvester"},
    {"cluster.x-k8s.io/v1alpha2", "v1alpha1"},
    {"cluster.x-k8s.io/v1alpha3", "v1alpha1"},
    {"cluster.x-k8s.io/v1beta1", "v1alpha1"},
    {"control-plane", "controller-manager"},
};

inline const std::vector<std::string> kCaphvCrds = {
    "harvesterclusters.infrastructure.cluster.x-k8s.io",
    "harvestermachines.infrastructure.cluster.x-k8s.io",
    "harvesterclustertemplates.infrastructure.cluster.x-k8s.io",
    "harvestermachinetemplates.infrastructure.cluster.x-k8s.io",
};

// The kinds the installs use, from cert-manager's CRD files.
inline const std::map<std::string, std::string> kCertManagerCrds = {
    {"certificates.cert-manager.io", "crd-certificates.yaml"},
    {"issuers.cert-manager.io", "crd-issuers.yaml"},
};

// "<kind>/<name>" of a manifest.
inline std::string Key(const Json& o) {
  return o.value("kind", "") + "/" + o["metadata"].value("name", "");
}

// The string map at `pointer` (labels, annotations, a selector); empty when
// absent.
inline std::map<std::string, std::string> Labels(const Json& o, const char* pointer) {
  std::map<std::string, std::string> out;
  const Json::json_pointer p(pointer);
  if (o.contains(p) && o[p].is_object()) {
    for (const auto& [k, v] : o[p].items()) out[k] = v.is_string() ? v.get<std::string>() : "";
  }
  return out;
}

// Whether a non-empty `selector` matches `labels`.
inline bool Selects(const std::map<std::string, std::string>& selector,
                    const std::map<std::string, std::string>& labels) {
  if (selector.empty()) return false;
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

// The port of a bind address (":8080", "0.0.0.0:8080", "127.0.0.1:8080").
inline int PortOf(const std::string& address) {
  auto colon = address.rfind(':');
  return colon == std::string::npos ? 0 : std::atoi(address.c_str() + colon + 1);
}

class GoInstallTest : public ::testing::Test {
 protected:
  // Parses both installs (skipped when the Go provider's source is absent)
  // and applies cert-manager's CRDs unless the bed has them.
  static void SetUpTestSuite();
  // Deletes the cert-manager CRDs it applied and the work folder.
  static void TearDownTestSuite();
  // Notes which CAPHV CRDs the bed has and removes what an interrupted run
  // may have left.
  void SetUp() override;
  // Removes the install and puts the CAPHV CRDs back as they were.
  void TearDown() override;

  // kubectl on the management apiserver with `args`; its exit code.
  static int Kubectl(const std::string& args, std::string* out);

  // `kubectl get <what> -o json`; null when it fails.
  static Json Get(const std::string& what);

  // The install's cluster-scoped objects and its namespace (everything but
  // the CRDs); waits until the namespace is gone.
  static void RemoveInstall();

  // `docs` as a v1 List in the work folder, <stem>.json; its path.
  static fs::path WriteJson(const std::vector<Json>& docs, const std::string& stem);

  // The Go provider's install without kubectl's last-applied annotation:
  // created, and its CRDs replaced where they exist already.
  static void CreateGoInstallWithoutAnnotation();

  // `kubectl kustomize config/default | kubectl apply -f -`: succeeds, and
  // says nothing about immutable or invalid fields.
  static void ApplyCaphv();

  // Everything the install must be once CAPHV's manifests are applied.
  static void CheckInstall(const std::string& go_deployment_uid);

  // The operations guide's verification and troubleshooting commands.
  static void RunTroubleshootingCommands();

  // The operations guide's migration step for an install made from raw
  // manifests: each command succeeds and leaves the CRDs; applying CAPHV's
  // install again restores what they deleted.
  static void RunMigrationCommands();

  // The uid of the Go provider's Deployment, checked to be the Go provider's.
  static std::string GoDeploymentUid();

  static inline std::string kubeconfig_;
  static inline fs::path dir_;
  static inline std::string looked_at_;
  static inline fs::path go_file_;
  static inline std::vector<Json> go_docs_;
  static inline std::vector<Json> our_docs_;
  static inline std::vector<std::string> installed_cert_manager_crds_;
  static inline bool ready_ = false;
  std::set<std::string> crds_before_;
};

}  // namespace caphv::testing::go_install
