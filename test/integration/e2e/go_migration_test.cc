// End-to-end: taking over a cluster the Go provider v0.2.9 made, as a user
// migrating does. The Go provider provisions a pool-mode cluster (one
// control plane, a MachineDeployment of two workers, an extra disk each);
// it is stopped, CAPHV's CRDs are applied over its own and caphv-manager
// starts. Then:
//   - takeover: no VM is created and none replaced (same uids), no second
//     address is taken, every VM, its VMI and cloud-init Secret carry the
//     cluster's id, the load balancer is adopted, and every status is
//     rewritten in CAPHV's shape (reasons everywhere, no Go-only condition);
//   - the workers are scaled 2 -> 3 -> 1: the new machine gets one VM and
//     one address, the removed ones leave nothing behind;
//   - the Cluster is deleted: nothing is left on Harvester, including what
//     the Go provider itself would have left (its placeholder Service, its
//     cloud-provider ServiceAccount and ClusterRoleBinding), and every pool
//     entry is released.
// See docs/adoption.md for the identity rule this exercises.

#include <set>

#include "go_provider_fixture.h"
#include "harvester/naming.h"

namespace caphv::e2e {
namespace {

const std::set<std::string> kMachineTypes = {
    "Ready",          "Paused",         "InfrastructureReady", "BootstrapDataReady",
    "VMIPAllocated",  "MachineCreated", "VMProvisioningReady", "NodeRegistered",
    "NodeInitialized"};
const std::set<std::string> kClusterTypes = {"Ready",
                                             "Paused",
                                             "HarvesterConnectionReady",
                                             "TargetNamespaceReady",
                                             "VMIPPoolReady",
                                             "LoadBalancerReady",
                                             "InfrastructureReady",
                                             "CloudProviderConfigReady"};

// Conditions a user would not expect from CAPHV: without a reason, or of a
// type CAPHV does not report; "" when all are in CAPHV's shape.
std::string ForeignConditions(const Object& o, const std::set<std::string>& types) {
  std::string bad;
  for (const auto& c : o.value("status", Object::object()).value("conditions", Object::array())) {
    const std::string type = c.value("type", "");
    if (c.value("reason", "").empty() || !types.contains(type)) bad += " " + type;
  }
  return bad;
}

std::string LabelOf(const Object& o, const std::string& key) {
  const Object labels = o.value("metadata", Object::object()).value("labels", Object::object());
  return labels.value(key, "");
}

class GoMigrationTest : public GoProviderTest {
 protected:
  // The cloud-init Secrets in the target namespace with `selector`.
  size_t CloudInitSecrets(const std::string& selector) const {
    size_t n = 0;
    for (const auto& s : OnHarvester(kSecretsGvr, selector)) {
      n += NameOf(s).ends_with("-cloud-init");
    }
    return n;
  }
};

TEST_F(GoMigrationTest, CaphvTakesOverAGoProviderClusterThenScalesAndDeletesIt) {
  // With the cloud provider's credentials, which the Go provider makes as a
  // ServiceAccount and a ClusterRoleBinding named after the Cluster.
  Object cm = {{"apiVersion", "v1"},
               {"kind", "ConfigMap"},
               {"metadata", {{"name", "cloud-config-addon"}, {"namespace", ns()}}},
               {"data",
                {{"cloud-config.yaml",
                  "apiVersion: v1\nkind: Namespace\nmetadata:\n  "
                  "name: addon\n"}}}};
  ASSERT_TRUE(mgmt_->Create(kube::resources::kConfigMaps, ns(), cm).ok());
  const GoCluster go = ProvisionWithGo({{"updateCloudProviderConfig",
                                         {{"manifestsConfigMapNamespace", ns()},
                                          {"manifestsConfigMapName", "cloud-config-addon"},
                                          {"manifestsConfigMapKey", "cloud-config.yaml"},
                                          {"cloudConfigCredentialsSecretName", "cloud-config"},
                                          {"cloudConfigCredentialsSecretKey", "cloud-config"}}}});
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(Eventually(
      [&] {
        return harvester_->Get(kube::resources::kServiceAccounts, target_ns_, cluster_).ok() &&
               harvester_->Get(kube::resources::kClusterRoleBindings, "", cluster_).ok();
      },
      kGoWait, kPoll))
      << "the Go provider made no cloud-provider ServiceAccount/ClusterRoleBinding";
  std::map<std::string, std::string> uid_of;  // VM name -> uid, as the Go provider made them
  for (const auto& vm : OnHarvester(kVirtualMachines)) uid_of[NameOf(vm)] = kube::UidOf(vm);
  ASSERT_EQ(uid_of.size(), 3u);
  const auto go_entries = Allocated(go.vm_pool.name);
  ASSERT_EQ(go_entries.size(), 3u);
  const std::string lb_name = ns() + "-" + cluster_ + "-lb";

  MigrateToCaphv();
  ASSERT_FALSE(HasFailure());

  // Takeover: every HarvesterMachine ready again in CAPHV's shape, every VM
  // labelled as this cluster's.
  const std::string id_label(harvester::kLabelClusterId);
  std::string why;
  ASSERT_TRUE(Eventually(
      [&] {
        why.clear();
        for (const auto& hm : HarvesterMachines()) {
          const std::string foreign = ForeignConditions(hm, kMachineTypes);
          if (!foreign.empty()) why += " " + NameOf(hm) + ":" + foreign;
          if (!ConditionTrue(hm, "VMProvisioningReady") || !ConditionTrue(hm, "Ready")) {
            why += " " + NameOf(hm) + " not ready";
          }
        }
        for (const auto& vm : OnHarvester(kVirtualMachines)) {
          if (LabelOf(vm, id_label).empty()) why += " VM " + NameOf(vm) + " unlabelled";
        }
        const std::string hc_foreign = ForeignConditions(HarvesterClusterObject(), kClusterTypes);
        if (!hc_foreign.empty()) why += " HarvesterCluster:" + hc_foreign;
        return why.empty();
      },
      kWait, kPoll))
      << why << MachinesSummary();

  // Nothing made again: the same VMs, the same three addresses, the
  // identity recorded, the load balancer and every VMI and Secret adopted.
  std::map<std::string, std::string> uids_now;
  for (const auto& vm : OnHarvester(kVirtualMachines)) {
    uids_now[NameOf(vm)] = kube::UidOf(vm);
    EXPECT_EQ(Str(vm, "/metadata/annotations/harvester.infrastructure.cluster.x-k8s.io~1adopted"),
              "true")
        << NameOf(vm);
  }
  EXPECT_EQ(uids_now, uid_of);
  EXPECT_EQ(Allocated(go.vm_pool.name), go_entries);
  const std::string cluster_id = LabelOf(OnHarvester(kVirtualMachines).front(), id_label);
  for (const auto& vmi : OnHarvester(kVirtualMachineInstances)) {
    EXPECT_EQ(LabelOf(vmi, id_label), cluster_id) << "VMI " << NameOf(vmi);
  }
  for (const auto& [name, uid] : uid_of) {
    auto secret = harvester_->Get(kSecretsGvr, target_ns_, name + "-cloud-init");
    ASSERT_TRUE(secret.ok()) << name << ": " << secret.status().ToString();
    EXPECT_EQ(LabelOf(*secret, id_label), cluster_id) << name;
    int adopted = 0;
    for (const auto& e : EventsOf(name)) adopted += e.value("reason", "") == "VMAdopted";
    EXPECT_EQ(adopted, 1) << name;
  }
  const Object hc = HarvesterClusterObject();
  EXPECT_FALSE(
      Str(hc,
          "/metadata/annotations/harvester.infrastructure.cluster.x-k8s.io~1management-cluster-id")
          .empty());
  auto lb = harvester_->Get(kLoadBalancers, target_ns_, lb_name);
  ASSERT_TRUE(lb.ok()) << lb.status().ToString();
  EXPECT_EQ(LabelOf(*lb, id_label), cluster_id);
  EXPECT_TRUE(ConditionTrue(hc, "LoadBalancerReady")) << hc.dump(2);

  // Scale the workers up: one new VM and one new address, nothing else.
  ScaleMachineDeployment(cluster_ + "-md", 3);
  WaitForRunningMachines(4);
  EXPECT_EQ(OnHarvester(kVirtualMachines).size(), 4u);
  EXPECT_EQ(Allocated(go.vm_pool.name).size(), 4u);
  for (const auto& [name, uid] : uid_of) {
    auto vm = harvester_->Get(kVirtualMachines, target_ns_, name);
    EXPECT_TRUE(vm.ok() && kube::UidOf(*vm) == uid) << name << " was replaced";
  }

  // ... and down to one: the removed machines leave no VM, disk, Secret or
  // address, whichever provider made them.
  ScaleMachineDeployment(cluster_ + "-md", 1);
  WaitForRunningMachines(2);
  EXPECT_TRUE(Eventually(
      [&] {
        return OnHarvester(kVirtualMachines).size() == 2 &&
               Allocated(go.vm_pool.name).size() == 2 &&
               OnHarvester(kPvcs).size() == 4 &&  // two disks each
               CloudInitSecrets(id_label + "=" + cluster_id) == 2;
      },
      kWait, kPoll))
      << "VMs " << ::testing::PrintToString(NamesOnHarvester(kVirtualMachines)) << " PVCs "
      << ::testing::PrintToString(NamesOnHarvester(kPvcs)) << " entries "
      << ::testing::PrintToString(Allocated(go.vm_pool.name));

  // Deleted: nothing of the cluster is left on Harvester.
  DeleteClusterAndWait();
  EXPECT_TRUE(Eventually(
      [&] {
        return OnHarvester(kVirtualMachines).empty() && OnHarvester(kPvcs).empty() &&
               OnHarvester(kLoadBalancers).empty() &&
               !harvester_->Get(kServices, target_ns_, lb_name).ok() &&
               !harvester_->Get(kube::resources::kServiceAccounts, target_ns_, cluster_).ok() &&
               !harvester_->Get(kube::resources::kClusterRoleBindings, "", cluster_).ok() &&
               Allocated(go.vm_pool.name).empty() && Allocated(go.lb_pool.name).empty();
      },
      kWait, kPoll))
      << "VMs " << ::testing::PrintToString(NamesOnHarvester(kVirtualMachines)) << " PVCs "
      << ::testing::PrintToString(NamesOnHarvester(kPvcs)) << " LBs "
      << ::testing::PrintToString(NamesOnHarvester(kLoadBalancers)) << " Services "
      << ::testing::PrintToString(NamesOnHarvester(kServices)) << " VM pool "
      << ::testing::PrintToString(Allocated(go.vm_pool.name)) << " LB pool "
      << ::testing::PrintToString(Allocated(go.lb_pool.name));
  for (const auto& s : OnHarvester(kSecretsGvr)) {
    EXPECT_EQ(NameOf(s).find("-cloud-init"), std::string::npos) << NameOf(s) << " left";
  }
}

}  // namespace
}  // namespace caphv::e2e
