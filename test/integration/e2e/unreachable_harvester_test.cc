// End-to-end: a Harvester that never answers stalls nobody. Cluster A's
// identity points, for the whole test, at a loopback address that accepts
// TCP connections and never sends a byte. Cluster B, healthy, is created
// afterwards and becomes ready while A's connection attempts keep failing.
// A reports HarvesterConnectionReady=False (reason HarvesterConnectionFailed,
// message naming the endpoint) and a Warning event; once its identity Secret
// is rewritten with the real Harvester kubeconfig, A becomes ready by itself.
//
// And an identity kubeconfig that names a file of the manager's filesystem
// (certificate-authority, client-certificate, client-key, tokenFile) or a
// plugin (exec, auth-provider), its server a listener of the test: each is
// refused with HarvesterConnectionReady=False, reason MalformedIdentitySecret,
// the message naming the field, and a Warning event; the listener never sees
// a connection (no token, no file's content, no request leaves the manager).

#include "e2e_fixture.h"
#include "support/silent_server.h"

namespace caphv::e2e {
namespace {

class UnreachableHarvesterTest : public E2ETest {
 protected:
  Object HarvesterClusterNamed(const std::string& name) const {
    auto got = mgmt_->Get(kHarvesterClusters, ns(), name);
    return got.ok() ? *got : Object::object();
  }

  static bool Ready(const Object& hc) {
    return hc.value("status", Object::object()).value("ready", false) &&
           !Str(hc, "/spec/controlPlaneEndpoint/host").empty();
  }

  // Deletes Cluster `name` and waits until it and its HarvesterCluster are gone.
  void DeleteNamedCluster(const std::string& name) {
    mgmt_->Delete(kClusters, ns(), name).IgnoreError();
    EXPECT_TRUE(Eventually(
        [&] {
          return mgmt_->Get(kClusters, ns(), name).status().IsNotFound() &&
                 mgmt_->Get(kHarvesterClusters, ns(), name).status().IsNotFound();
        },
        kWait, std::chrono::seconds(1)))
        << "Cluster " << name << " not deleted";
  }

  void SetIdentity(const std::string& name, const std::string& kubeconfig) {
    const Object patch = {{"data", {{"kubeconfig", kube::Base64Encode(kubeconfig)}}}};
    auto r = mgmt_->Patch(kube::resources::kSecrets, ns(), name, kube::PatchType::kMerge, patch);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
};

TEST_F(UnreachableHarvesterTest, SilentHarvesterStallsNoOtherClusterAndRecoversWhenFixed) {
  caphv::testing::SilentServer silent;
  ASSERT_GT(silent.port(), 0);
  const std::string harvester_kubeconfig =
      ReadWholeFile(Testbed::Get().KubeconfigPath(caphv::testing::kHarvester));
  CreateSecret("hv-silent", {},
               {{"kubeconfig", caphv::testing::WithServer(harvester_kubeconfig, silent.url())}},
               "Opaque");

  // Cluster A: its Harvester never answers.
  Object spec_a = HarvesterClusterSpec();
  spec_a["identitySecret"]["name"] = "hv-silent";
  CreateCluster(spec_a);
  ASSERT_TRUE(Eventually([&] { return silent.connections() > 0; }, kWait, kPoll))
      << "the manager never tried to reach A's Harvester";

  // Cluster B, healthy, created while A's attempt hangs, becomes ready.
  const std::string cluster_b = UniqueName("e2e-b");
  const std::string target_b = UniqueName("e2e-hv-b");
  Object spec_b = HarvesterClusterSpec();
  spec_b["targetNamespace"] = target_b;
  const auto b_created = std::chrono::steady_clock::now();
  CreateCluster(spec_b, cluster_b);
  Object hc_b;
  EXPECT_TRUE(Eventually(
      [&] {
        hc_b = HarvesterClusterNamed(cluster_b);
        return Ready(hc_b);
      },
      kWait, kPoll))
      << hc_b.dump(2);
  const auto b_ready_after = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - b_created);
  RecordProperty("cluster_b_ready_ms", static_cast<int>(b_ready_after.count()));
  std::cout << "cluster B ready " << b_ready_after.count() << " ms after its creation\n";
  EXPECT_TRUE(ConditionTrue(hc_b, "HarvesterConnectionReady"))
      << ConditionOf(hc_b, "HarvesterConnectionReady").dump();
  // ... while A is still not connected and still being retried.
  EXPECT_FALSE(Ready(HarvesterClusterObject()));
  const int attempts_when_b_ready = silent.connections();

  // A reports why, naming the endpoint, and warns.
  Object c;
  EXPECT_TRUE(Eventually(
      [&] {
        c = ConditionOf(HarvesterClusterObject(), "HarvesterConnectionReady");
        return c.value("reason", "") == "HarvesterConnectionFailed";
      },
      kWait, kPoll))
      << c.dump();
  EXPECT_EQ(c.value("status", ""), "False") << c.dump();
  EXPECT_NE(c.value("message", "").find("127.0.0.1:" + std::to_string(silent.port())),
            std::string::npos)
      << c.dump();
  EXPECT_TRUE(
      Eventually([&] { return HasWarning(cluster_, "HarvesterConnectionFailed"); }, kWait, kPoll));
  EXPECT_FALSE(HarvesterClusterObject()["status"].value("ready", false));
  // The attempts go on (with backoff) after B was ready.
  EXPECT_TRUE(
      Eventually([&] { return silent.connections() > attempts_when_b_ready; }, kWait, kPoll));
  // Nothing was made for A on Harvester.
  EXPECT_TRUE(harvester_->Get(kube::resources::kNamespaces, "", target_ns_).status().IsNotFound());

  // The user fixes A's identity: A becomes ready by itself.
  SetIdentity("hv-silent", harvester_kubeconfig);
  const Object hc_a = WaitForClusterReady();
  EXPECT_TRUE(ConditionTrue(hc_a, "HarvesterConnectionReady"))
      << ConditionOf(hc_a, "HarvesterConnectionReady").dump();

  DeleteNamedCluster(cluster_b);
  harvester_->Delete(kube::resources::kNamespaces, "", target_b).IgnoreError();
}

TEST_F(UnreachableHarvesterTest, IdentityKubeconfigFilesAndPluginsAreRefusedAndNothingIsSent) {
  caphv::testing::SilentServer listener;
  ASSERT_GT(listener.port(), 0);
  const std::string cluster_part =
      "apiVersion: v1\nkind: Config\nclusters:\n- name: h\n  cluster:\n    server: " +
      listener.url() + "\n";
  const std::string context_part =
      "contexts:\n- name: h\n  context:\n    cluster: h\n    user: u\ncurrent-context: h\n";
  struct Variant {
    std::string field;
    std::string cluster_extra;  // under `cluster:`
    std::string user;           // under `user:`
  };
  const std::string sa = "/var/run/secrets/kubernetes.io/serviceaccount/";
  const std::vector<Variant> variants = {
      {"certificate-authority", "    certificate-authority: " + sa + "ca.crt\n", "    token: t\n"},
      {"client-certificate", "", "    client-certificate: /etc/ssl/certs/x.pem\n"},
      {"client-key", "", "    client-key: /etc/ssl/private/x.key\n"},
      {"tokenFile", "", "    tokenFile: " + sa + "token\n"},
      {"exec", "",
       "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
       "      command: /bin/sh\n      args: [-c, 'cat " +
           sa + "token']\n"},
      {"auth-provider", "", "    auth-provider:\n      name: oidc\n"},
  };
  auto kubeconfig = [&](const Variant& v) {
    return cluster_part + v.cluster_extra + "users:\n- name: u\n  user:\n" + v.user + context_part;
  };
  CreateSecret("hv-files", {}, {{"kubeconfig", kubeconfig(variants.front())}}, "Opaque");
  Object spec = HarvesterClusterSpec();
  spec["identitySecret"]["name"] = "hv-files";
  CreateCluster(spec);
  for (const auto& v : variants) {
    SCOPED_TRACE(v.field);
    SetIdentity("hv-files", kubeconfig(v));
    Object condition;
    EXPECT_TRUE(Eventually(
        [&] {
          condition = ConditionOf(HarvesterClusterNamed(cluster_), "HarvesterConnectionReady");
          return condition.value("reason", "") == "MalformedIdentitySecret" &&
                 condition.value("message", "").find("`" + v.field + "`") != std::string::npos;
        },
        kWait, kPoll))
        << condition.dump();
    EXPECT_EQ(condition.value("status", ""), "False");
  }
  EXPECT_TRUE(HasWarning(cluster_, "MalformedIdentitySecret"));
  EXPECT_EQ(listener.connections(), 0) << "the manager connected to the kubeconfig's server";
}

}  // namespace
}  // namespace caphv::e2e
