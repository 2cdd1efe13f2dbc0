// End-to-end: what a user sees when an input is wrong. Each mistake gives a
// condition with a PascalCase reason and a message naming what to fix, plus
// a Warning event; fixing the input is enough for the cluster to proceed
// (watch-driven, nobody restarts anything); nothing is created on Harvester
// for input that cannot work, and such objects can still be deleted.

#include "e2e_fixture.h"

namespace caphv::e2e {
namespace {

class BadInputTest : public E2ETest {
 protected:
  // The HarvesterCluster's condition `type` once it has `reason`, or what it
  // was when the wait ended.
  Object WaitForClusterCondition(const std::string& type, const std::string& reason) {
    Object c;
    Eventually(
        [&] {
          c = ConditionOf(HarvesterClusterObject(), type);
          return c.value("reason", "") == reason;
        },
        kWait, kPoll);
    return c;
  }
};

TEST_F(BadInputTest, MissingIdentitySecretIsReportedUntilItAppears) {
  Object spec = HarvesterClusterSpec();
  spec["identitySecret"]["name"] = "hv-identity-later";
  CreateCluster(spec);

  const Object c = WaitForClusterCondition("HarvesterConnectionReady", "IdentitySecretUnavailable");
  ASSERT_EQ(c.value("reason", ""), "IdentitySecretUnavailable") << c.dump();
  EXPECT_EQ(c.value("status", ""), "False");
  EXPECT_NE(c.value("message", "").find("hv-identity-later"), std::string::npos) << c.dump();
  EXPECT_TRUE(
      Eventually([&] { return HasWarning(cluster_, "IdentitySecretUnavailable"); }, kWait, kPoll));
  EXPECT_FALSE(HarvesterClusterObject()["status"].value("ready", false));
  EXPECT_EQ(ConditionOf(HarvesterClusterObject(), "Ready").value("reason", ""),
            "IdentitySecretUnavailable");

  // The user creates the Secret: the cluster becomes ready on its own.
  CreateSecret(
      "hv-identity-later", {},
      {{"kubeconfig", ReadWholeFile(Testbed::Get().KubeconfigPath(caphv::testing::kHarvester))}},
      "Opaque");
  const Object hc = WaitForClusterReady();
  EXPECT_TRUE(ConditionTrue(hc, "HarvesterConnectionReady"))
      << ConditionOf(hc, "HarvesterConnectionReady").dump();
}

TEST_F(BadInputTest, IdentityOfAnotherClusterIsNotHarvesterAndDeletesCleanly) {
  // A kubeconfig that works, but for a cluster that is not Harvester.
  CreateSecret(
      "hv-not-harvester", {},
      {{"kubeconfig", ReadWholeFile(Testbed::Get().KubeconfigPath(caphv::testing::kWorkload))}},
      "Opaque");
  Object spec = HarvesterClusterSpec();
  spec["identitySecret"]["name"] = "hv-not-harvester";
  CreateCluster(spec);

  const Object c = WaitForClusterCondition("HarvesterConnectionReady", "NotHarvester");
  ASSERT_EQ(c.value("reason", ""), "NotHarvester") << c.dump();
  EXPECT_NE(c.value("message", "").find("is not a Harvester cluster"), std::string::npos)
      << c.dump();
  EXPECT_TRUE(Eventually([&] { return HasWarning(cluster_, "NotHarvester"); }, kWait, kPoll));
  EXPECT_FALSE(HarvesterClusterObject()["status"].value("ready", false));
  // Nothing was made anywhere: no target namespace on Harvester.
  EXPECT_TRUE(harvester_->Get(kube::resources::kNamespaces, "", target_ns_).status().IsNotFound());
  // The teardown deletes the Cluster and fails if it does not go away.
}

TEST_F(BadInputTest, UnknownKeyPairStopsBeforeAnythingIsCreated) {
  CreateCluster(HarvesterClusterSpec());
  Object spec = MachineSpec();
  spec["sshKeyPair"] = "default/no-such-key";
  const std::string name = cluster_ + "-cp-0";
  CreateMachine(name, true, spec);

  Object c;
  EXPECT_TRUE(Eventually(
      [&] {
        auto hm = HarvesterMachine(name);
        c = hm ? ConditionOf(*hm, "VMProvisioningReady") : Object::object();
        return c.value("reason", "") == "KeyPairNotFound";
      },
      kWait, kPoll))
      << c.dump();
  EXPECT_NE(c.value("message", "").find("default/no-such-key"), std::string::npos) << c.dump();
  EXPECT_NE(c.value("message", "").find("spec.sshKeyPair"), std::string::npos) << c.dump();
  EXPECT_TRUE(Eventually([&] { return HasWarning(name, "KeyPairNotFound"); }, kWait, kPoll));
  auto hm = HarvesterMachine(name);
  ASSERT_TRUE(hm.has_value());
  EXPECT_FALSE((*hm)["status"].value("ready", false));
  EXPECT_TRUE((*hm)["spec"].value("providerID", "").empty());
  EXPECT_TRUE(harvester_->Get(kVirtualMachines, target_ns_, name).status().IsNotFound());
  EXPECT_TRUE(harvester_->Get(kube::resources::kSecrets, target_ns_, name + "-cloud-init")
                  .status()
                  .IsNotFound());
}

}  // namespace
}  // namespace caphv::e2e
