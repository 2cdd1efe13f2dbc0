// File: test/integration/api/webhook_fixture.h
//
// The admission webhooks through the real kube-apiserver, for the API
// integration tests: SetUpTestSuite applies the CRDs of config/crd/bases,
// starts caphv-manager with --enable-webhooks on a test CA's certificate and
// registers its validating and mutating configurations scoped to a fresh
// namespace;
// TearDownTestSuite undoes it. Test suites derive from WebhookFixture (each
// suite gets its own manager and namespace).
//
// Thread safety: test-thread only.

#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "api/codec.h"
#include "api/yaml.h"
#include "kube/base64.h"
#include "manager_process.h"
#include "support/testbed.h"
#include "support/webhook_configs.h"
#include "webhooks/admission.h"

namespace caphv::testing {

namespace fs = std::filesystem;
using api::Json;

inline const kube::GroupVersionResource kWebhookConfigs{"admissionregistration.k8s.io", "v1",
                                                        "validatingwebhookconfigurations", false};

struct Manifest {
  std::string file;
  std::string expect;  // "# expect: <field path>"
  std::vector<Json> docs;
};

inline Manifest LoadManifest(const fs::path& p) {
  Manifest m;
  m.file = p.filename().string();
  auto text = api::ReadFile(p.string());
  if (!text.ok()) return m;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# expect: ", 0) == 0) m.expect = line.substr(10);
  }
  auto docs = api::ParseYaml(*text);
  if (docs.ok()) m.docs = *docs;
  return m;
}

inline std::vector<Manifest> LoadDir(const std::string& which) {
  std::vector<Manifest> out;
  for (const auto& e : fs::directory_iterator(SourcePath("test/data/manifests/" + which))) {
    out.push_back(LoadManifest(e.path()));
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.file < b.file; });
  return out;
}

class WebhookFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto& bed = Testbed::Get();
    kubeconfig_ = bed.KubeconfigPath(kMgmt);
    client_ = bed.Client(kMgmt);
    dir_ = fs::temp_directory_path() / UniqueName("caphv-webhook-test");
    fs::create_directories(dir_);

    // CRDs.
    std::string out;
    ASSERT_EQ(ApplyCrds(kubeconfig_, &out), 0) << out;

    // Manager with webhooks on a test certificate.
    ASSERT_TRUE(MakeServingCerts(dir_ / "certs", &out)) << out;
    webhook_port_ = FreePort();
    metrics_port_ = FreePort();
    probe_port_ = FreePort();
    manager_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{
            BuildPath("cmd/caphv-manager/caphv-manager"), "--kubeconfig", kubeconfig_,
            "--enable-webhooks", "--webhook-port", std::to_string(webhook_port_),
            "--webhook-cert-dir", (dir_ / "certs").string(),
            "--metrics-bind-address=127.0.0.1:" + std::to_string(metrics_port_),
            "--metrics-secure=false",
            "--health-probe-bind-address=127.0.0.1:" + std::to_string(probe_port_), "-v=4"},
        dir_ / "manager.log");
    ASSERT_TRUE(manager_->started());
    ASSERT_TRUE(Eventually([] { return HttpGet(ProbeUrl("/readyz"), nullptr) == 200; },
                           std::chrono::seconds(20)))
        << manager_->Log();

    // The webhook configuration, limited to this test's namespace.
    ns_ = std::make_unique<ScopedNamespace>(client_, "caphv-webhook");
    config_name_ = UniqueName("caphv-webhook-test");
    const std::string ca = ReadWholeFile(dir_ / "certs" / "ca.crt");
    for (const auto& config : WebhookConfigurations(config_name_, webhook_port_, ca, ns_->name())) {
      auto created = client_->Create(config.resource, "", config.object);
      ASSERT_TRUE(created.ok()) << created.status().ToString();
    }

    // The apiserver picks the configuration up asynchronously: wait until a
    // dry-run create reaches the webhook.
    auto probe = LoadDir("valid");
    ASSERT_FALSE(probe.empty());
    fs::path file = WriteDoc(probe.front().docs.front(), "probe");
    ASSERT_TRUE(Eventually(
        [&] {
          Kubectl("apply --dry-run=server -f " + file.string(), nullptr);
          std::string metrics;
          HttpGet(MetricsUrl(), &metrics);
          return metrics.find("controller_runtime_webhook_requests_total{") != std::string::npos;
        },
        std::chrono::seconds(30), std::chrono::milliseconds(500)))
        << manager_->Log();
  }

  static void TearDownTestSuite() {
    if (client_ && !config_name_.empty()) {
      client_->Delete(kWebhookConfigs, "", config_name_).IgnoreError();
      client_->Delete(kube::resources::kMutatingWebhookConfigurations, "", config_name_)
          .IgnoreError();
    }
    // The namespace goes while the manager still runs: the HarvesterMachines
    // the tests created carry its finalizer (the mutating webhook), which it
    // lifts as each is deleted. Those that name a provider ID but belong to no
    // HarvesterCluster (the manifests have none) it keeps, saying that the VM
    // cannot be deleted and that removing the finalizer abandons it: done
    // here as a user would, once it says so (waiting out a namespace that
    // cannot go cost a minute per suite).
    if (ns_) {
      const std::string name = ns_->name();
      ns_.reset();
      const auto machines = api::ResourceOf(api::Kind::kHarvesterMachine);
      Eventually(
          [&] {
            if (auto left = client_->List(machines, name); left.ok()) {
              for (const auto& hm : left->items) {
                for (const auto& c :
                     hm.value("status", Json::object()).value("conditions", Json::array())) {
                  if (c.value("reason", "") != "HarvesterClusterNotFound") continue;
                  client_
                      ->Patch(machines, name,
                              hm.value("metadata", Json::object()).value("name", ""),
                              kube::PatchType::kMerge, {{"metadata", {{"finalizers", nullptr}}}})
                      .status()
                      .IgnoreError();
                }
              }
            }
            return client_->Get(kube::resources::kNamespaces, "", name).status().IsNotFound();
          },
          std::chrono::seconds(60));
    }
    if (manager_) {
      manager_->Signal(SIGTERM);
      manager_->Wait(std::chrono::seconds(10));
      manager_.reset();
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static int Kubectl(const std::string& args, std::string* out) {
    return RunCommand("kubectl --kubeconfig '" + kubeconfig_ + "' " + args, out);
  }
  static std::string ProbeUrl(const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(probe_port_) + path;
  }
  static std::string MetricsUrl() {
    return "http://127.0.0.1:" + std::to_string(metrics_port_) + "/metrics";
  }
  // Writes `doc`, moved into the test namespace, as JSON; returns the path.
  static fs::path WriteDoc(Json doc, const std::string& stem) {
    doc["metadata"]["namespace"] = ns_->name();
    fs::path p = dir_ / (stem + ".json");
    std::ofstream(p) << doc.dump(2);
    return p;
  }

  // True when the manager logged a denial of <ns_>/<name>.
  static bool DeniedInLog(const std::string& name) {
    std::istringstream log(manager_->Log());
    const std::string key = "object=\"" + ns_->name() + "/" + name + "\"";
    for (std::string line; std::getline(log, line);) {
      if (line.find("\"Admission denied\"") != std::string::npos &&
          line.find(key) != std::string::npos) {
        return true;
      }
    }
    return false;
  }

  static inline std::string kubeconfig_;
  static inline std::shared_ptr<kube::Client> client_;
  static inline fs::path dir_;
  static inline int webhook_port_ = 0, metrics_port_ = 0, probe_port_ = 0;
  static inline std::unique_ptr<ChildProcess> manager_;
  static inline std::unique_ptr<ScopedNamespace> ns_;
  static inline std::string config_name_;
};

}  // namespace caphv::testing
