// The validating webhooks through the real kube-apiserver: caphv-manager runs
// as a process with --enable-webhooks and a test CA's certificate; a
// ValidatingWebhookConfiguration (scoped to this test's namespace) points the
// apiserver at it; then every manifest of test/data/manifests/invalid is
// rejected by `kubectl apply --dry-run=server` with its field path in the
// message, and every manifest of valid/ is accepted; a HarvesterMachine is
// created with CAPHV's finalizer (the mutating webhook).

#include <gtest/gtest.h>

#include <regex>

#include "api/harvester_machine.h"
#include "webhook_fixture.h"

namespace caphv::testing {
namespace {

class WebhookTest : public WebhookFixture {};

TEST_F(WebhookTest, EveryValidManifestIsAccepted) {
  int n = 0;
  for (const auto& m : LoadDir("valid")) {
    ASSERT_FALSE(m.docs.empty()) << m.file;
    for (size_t i = 0; i < m.docs.size(); ++i) {
      fs::path file = WriteDoc(m.docs[i], "valid-" + std::to_string(n++));
      std::string out;
      EXPECT_EQ(Kubectl("apply --dry-run=server -f " + file.string(), &out), 0)
          << m.file << " #" << i << ": " << out;
    }
  }
  EXPECT_GE(n, 10);
}

TEST_F(WebhookTest, EveryInvalidManifestIsRejectedWithItsFieldPath) {
  int by_webhook = 0, by_schema = 0;
  std::string summary;
  for (const auto& m : LoadDir("invalid")) {
    ASSERT_FALSE(m.expect.empty()) << m.file << " has no '# expect:' line";
    ASSERT_TRUE(m.docs.size() == 1 || m.docs.size() == 2) << m.file;
    std::string out;
    if (m.docs.size() == 2) {
      // An update: the first document exists, the second is applied over it.
      fs::path old_file = WriteDoc(m.docs[0], m.file + "-old");
      ASSERT_EQ(Kubectl("apply -f " + old_file.string(), &out), 0) << m.file << ": " << out;
    }
    fs::path file = WriteDoc(m.docs.back(), m.file);
    out.clear();
    int rc = Kubectl("apply --dry-run=server -f " + file.string(), &out);
    EXPECT_NE(rc, 0) << m.file << " was accepted: " << out;
    EXPECT_NE(out.find(m.expect), std::string::npos)
        << m.file << ": expected field path " << m.expect << " in: " << out;
    // kubectl prints an Invalid status the same way whether the CRD schema
    // or the webhook produced it; the manager's log tells them apart.
    // The manager writes its log line before it answers the apiserver.
    bool webhook = DeniedInLog(m.docs.back()["metadata"]["name"].get<std::string>());
    (webhook ? by_webhook : by_schema)++;
    summary += "  " + m.file + ": " + (webhook ? "webhook" : "schema") + "\n";
  }
  std::cout << "rejected by the webhook: " << by_webhook << ", by the CRD schema: " << by_schema
            << "\n"
            << summary;
  // The webhook is what this test is about: most rules only it enforces.
  EXPECT_GT(by_webhook, by_schema);
}

// The mutating webhook mharvestermachine.kb.io: a HarvesterMachine the
// manager reconciles is created with its finalizer (the controller's first
// write saved), and deleting one for which nothing was made on Harvester
// still completes: the controller lifts the finalizer.
TEST_F(WebhookTest, AMachineIsCreatedWithTheFinalizerAndStillDeleted) {
  Manifest m = LoadManifest(SourcePath("test/data/manifests/valid/harvestermachine-readme.yaml"));
  ASSERT_EQ(m.docs.size(), 1u);
  Json doc = m.docs[0];
  doc["metadata"]["namespace"] = ns_->name();
  doc["metadata"]["name"] = "finalizer-on-create";
  const auto resource = api::ResourceOf(api::Kind::kHarvesterMachine);
  auto created = client_->Create(resource, ns_->name(), doc);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ((*created)["metadata"].value("finalizers", Json::array()),
            Json::array({std::string(api::kMachineFinalizer)}))
      << created->dump();

  ASSERT_TRUE(client_->Delete(resource, ns_->name(), "finalizer-on-create").ok());
  EXPECT_TRUE(Eventually(
      [&] {
        return client_->Get(resource, ns_->name(), "finalizer-on-create").status().IsNotFound();
      },
      std::chrono::seconds(30)))
      << manager_->Log();
}

TEST_F(WebhookTest, DenialHasTheGoProvidersShape) {
  // Straight to the API (kubectl prints it unchanged: reason Forbidden).
  Manifest m =
      LoadManifest(SourcePath("test/data/manifests/invalid/machine-ssh-key-pair-invalid.yaml"));
  ASSERT_EQ(m.docs.size(), 1u);
  Json doc = m.docs[0];
  doc["metadata"]["namespace"] = ns_->name();
  const std::string name = doc["metadata"]["name"];
  auto created = client_->Create(api::ResourceOf(api::Kind::kHarvesterMachine), ns_->name(), doc,
                                 {.dry_run = true});
  ASSERT_FALSE(created.ok());
  const kube::Status& s = created.status();
  EXPECT_EQ(s.http_status(), 403) << s.ToString();
  EXPECT_EQ(s.reason(), "Forbidden");
  EXPECT_EQ(s.message().rfind("admission webhook \"vharvestermachine.kb.io\" denied the request: "
                              "validation failed for HarvesterMachine " +
                                  ns_->name() + "/" + name + ": " + m.expect + " ",
                              0),
            0u)
      << s.message();
  bool found = false;
  for (const auto& c : s.causes()) found |= c.field == m.expect && c.type == "FieldValueInvalid";
  EXPECT_TRUE(found) << s.ToString();
}

// The webhook checks of the Go provider's own end-to-end suite
// (test/e2e/run-e2e.sh of v0.2.9 and v0.10.1, read from their archives):
// each manifest it applies with `kubectl apply`, and the line it greps for in
// kubectl's output, or "created" for the manifest it expects accepted.
TEST_F(WebhookTest, TheGoProvidersOwnE2eWebhookChecksPass) {
  int checks = 0;
  for (const std::string version : {"v0.2.9", "v0.10.1"}) {
    const auto read = caphv::testing::ReadGoProviderFile(version, "test/e2e/run-e2e.sh");
    ASSERT_TRUE(read) << "cannot read run-e2e.sh from "
                      << caphv::testing::GoProviderArchive(version);
    const std::string& script = *read;
    // kubectl_rancher "apply -f - <<'YAML' 2>&1 || true
    // <manifest>
    // YAML")
    //
    //     if echo "$result" | grep -q "<expected>"; then
    static const std::regex kGrep(R"re(^\s*if echo "\$result" \| grep -q "([^"]*)")re");
    std::vector<std::pair<std::string, std::string>> found;  // manifest, expected
    for (size_t at = script.find("<<'YAML'"); at != std::string::npos;
         at = script.find("<<'YAML'", at + 1)) {
      const size_t begin = script.find('\n', at) + 1;
      const size_t close = script.find("\nYAML", begin);
      if (close == std::string::npos) break;
      if (script.compare(close, 7, "\nYAML\")") != 0) continue;
      size_t next = close + 7;
      while (next < script.size() && std::isspace(static_cast<unsigned char>(script[next]))) ++next;
      const std::string line = script.substr(next, script.find('\n', next) - next);
      std::smatch grep;
      if (!std::regex_search(line, grep, kGrep)) continue;
      found.emplace_back(script.substr(begin, close + 1 - begin), grep[1].str());
    }
    for (const auto& [raw, expected] : found) {
      std::string manifest = std::regex_replace(raw, std::regex(R"(\\")"), "\"");
      SCOPED_TRACE(version + ": " + expected);
      auto docs = api::ParseYaml(manifest);
      ASSERT_TRUE(docs.ok() && docs->size() == 1) << manifest;
      fs::path file = WriteDoc(docs->front(), "go-e2e-" + std::to_string(checks));
      std::string out;
      const int rc = Kubectl("apply --dry-run=server -f " + file.string(), &out);
      if (expected.find("created") != std::string::npos) {
        EXPECT_EQ(rc, 0) << out;
      } else {
        EXPECT_NE(rc, 0) << out;
        EXPECT_NE(out.find(expected), std::string::npos) << out;
      }
      ++checks;
    }
  }
  // Three refused machines, one accepted machine and one refused cluster, in
  // each release.
  EXPECT_EQ(checks, 10);
}

TEST_F(WebhookTest, TheWebhookSeesOnlyItsNamespace) {
  // The same bad object outside the selected namespace passes the webhook
  // (the configuration must not leak into other tests).
  ScopedNamespace other(client_, "caphv-webhook-other");
  Manifest m =
      LoadManifest(SourcePath("test/data/manifests/invalid/machine-ssh-key-pair-invalid.yaml"));
  Json doc = m.docs[0];
  doc["metadata"]["namespace"] = other.name();
  fs::path p = dir_ / "other.json";
  std::ofstream(p) << doc.dump();
  std::string out;
  EXPECT_EQ(Kubectl("apply --dry-run=server -f " + p.string(), &out), 0) << out;
}

// The mutating webhook: Cluster API's topology controller re-applying a
// ClusterClass template's placeholder endpoint (server-side apply, its field
// manager, forced) leaves the address CAPHV wrote; another real address
// still replaces it.
TEST_F(WebhookTest, APlaceholderNeverReplacesTheControlPlaneEndpoint) {
  const kube::GroupVersionResource hcs{"infrastructure.cluster.x-k8s.io", "v1alpha1",
                                       "harvesterclusters", true};
  const std::string ns = ns_->name();
  const std::string name = UniqueName("endpoint");
  auto endpoint = [](const std::string& host) { return Json{{"host", host}, {"port", 6443}}; };
  Json hc = {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
             {"kind", "HarvesterCluster"},
             {"metadata", {{"name", name}, {"namespace", ns}}},
             {"spec",
              {{"targetNamespace", "default"},
               {"identitySecret", {{"name", "hv-identity"}, {"namespace", ns}}},
               {"loadBalancerConfig", {{"ipamType", "dhcp"}}},
               {"controlPlaneEndpoint", endpoint("0.0.0.0")}}}};
  kube::ApplyOptions topology;
  topology.field_manager = "capi-topology";
  auto got = client_->Apply(hcs, ns, hc, topology);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  // Before any address, the placeholder is what the template says.
  EXPECT_EQ((*got)["spec"]["controlPlaneEndpoint"], endpoint("0.0.0.0"));

  // CAPHV writes the load balancer's address.
  auto written = client_->Patch(hcs, ns, name, kube::PatchType::kMerge,
                                Json{{"spec", {{"controlPlaneEndpoint", endpoint("10.0.0.10")}}}});
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  const int64_t generation = (*written)["metadata"].value("generation", int64_t{0});

  // A dry run (the topology controller's way of computing its diff) keeps
  // the address; waiting on it also waits for the apiserver to load the
  // mutating configuration, created with the validating one.
  kube::ApplyOptions dry = topology;
  dry.dry_run = true;
  Json dry_result;
  EXPECT_TRUE(Eventually(
      [&] {
        auto r = client_->Apply(hcs, ns, hc, dry);
        if (r.ok()) dry_result = *r;
        return r.ok() && dry_result["spec"]["controlPlaneEndpoint"] == endpoint("10.0.0.10");
      },
      std::chrono::seconds(20)))
      << dry_result.dump();

  // The topology controller applies its template again: the address stays,
  // the spec does not change, and the manager logged the patch.
  got = client_->Apply(hcs, ns, hc, topology);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ((*got)["spec"]["controlPlaneEndpoint"], endpoint("10.0.0.10")) << got->dump();
  EXPECT_EQ((*got)["metadata"].value("generation", int64_t{0}), generation);
  EXPECT_NE(manager_->Log().find("\"Admission patched\""), std::string::npos);

  // A real address replaces a real address.
  hc["spec"]["controlPlaneEndpoint"] = endpoint("10.0.0.11");
  got = client_->Apply(hcs, ns, hc, topology);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ((*got)["spec"]["controlPlaneEndpoint"], endpoint("10.0.0.11"));
}

}  // namespace
}  // namespace caphv::testing
