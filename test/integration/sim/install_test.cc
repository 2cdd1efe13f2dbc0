// Integration tests: `caphv-sim install` against the test bed's harvester
// apiserver (CRDs, Deployment, ClusterRoles, seeded environment).

#include <gtest/gtest.h>

#include "sim/env.h"
#include "sim_fixture.h"

namespace caphv::sim::testing {
namespace {

using kube::Object;

bool HasCondition(const Object& o, const std::string& type, const std::string& status) {
  for (const auto& c : o.value("status", Object::object()).value("conditions", Object::array())) {
    if (c.value("type", "") == type && c.value("status", "") == status) return true;
  }
  return false;
}

TEST_F(SimTest, InstallsCrdsEstablished) {
  for (const char* name : {"virtualmachines.kubevirt.io", "virtualmachineinstances.kubevirt.io",
                           "virtualmachineimages.harvesterhci.io", "keypairs.harvesterhci.io",
                           "settings.harvesterhci.io", "ippools.loadbalancer.harvesterhci.io",
                           "loadbalancers.loadbalancer.harvesterhci.io",
                           "network-attachment-definitions.k8s.cni.cncf.io"}) {
    auto crd = h_->Get(kube::resources::kCustomResourceDefinitions, "", name);
    ASSERT_TRUE(crd.ok()) << name << ": " << crd.status().ToString();
    EXPECT_TRUE(HasCondition(*crd, "Established", "True")) << name;
  }
  // Only the VM has a status subresource: writing VMI status through /status fails.
  auto vm_crd =
      h_->Get(kube::resources::kCustomResourceDefinitions, "", "virtualmachines.kubevirt.io");
  ASSERT_TRUE(vm_crd.ok());
  EXPECT_TRUE((*vm_crd)["spec"]["versions"][0]["subresources"].contains("status"));
}

TEST_F(SimTest, InstallsDeploymentAndClusterRoles) {
  auto dep = h_->Get(kube::resources::kDeployments, "harvester-system", "harvester");
  ASSERT_TRUE(dep.ok()) << dep.status().ToString();
  EXPECT_TRUE(HasCondition(*dep, "Available", "True")) << dep->dump();
  EXPECT_EQ((*dep)["status"]["availableReplicas"], 1);
  for (const char* role : {"harvesterhci.io:cloudprovider", "harvesterhci.io:csi-driver"}) {
    EXPECT_TRUE(h_->Get(kube::resources::kClusterRoles, "", role).ok()) << role;
  }
  auto version = h_->Get(gvr::kSettings, "", "server-version");
  ASSERT_TRUE(version.ok());
  EXPECT_EQ((*version)["value"], "v1.7.3");
}

TEST_F(SimTest, SeedsTheDefaultEnvironment) {
  auto image = h_->Get(gvr::kImages, "default", "image-ubuntu");
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ((*image)["status"]["storageClassName"], "longhorn-image-ubuntu");
  EXPECT_TRUE(HasCondition(*image, "Imported", "True"));
  EXPECT_TRUE(h_->Get(gvr::kStorageClasses, "", "longhorn-image-ubuntu").ok());
  auto kp = h_->Get(gvr::kKeyPairs, "default", "demo-key");
  ASSERT_TRUE(kp.ok());
  EXPECT_TRUE(HasCondition(*kp, "validated", "True"));
  EXPECT_FALSE((*kp)["status"].value("fingerPrint", "").empty());
  auto nad = h_->Get(gvr::kNads, "default", "vlan100");
  ASSERT_TRUE(nad.ok());
  EXPECT_EQ((*nad)["metadata"]["labels"]["network.harvesterhci.io/vlan-id"], "100");
  EXPECT_TRUE(h_->Get(gvr::kIPPools, "", "capi-pool").ok());
}

TEST_F(SimTest, InstallIsIdempotent) {
  std::string out;
  const int rc = caphv::testing::RunCommand(
      caphv::testing::BuildPath("cmd/caphv-sim/caphv-sim") + " install --kubeconfig " +
          caphv::testing::Testbed::Get().KubeconfigPath(caphv::testing::kHarvester),
      &out);
  EXPECT_EQ(rc, 0) << out;
}

}  // namespace
}  // namespace caphv::sim::testing
