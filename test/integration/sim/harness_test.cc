// File: test/integration/sim/harness_test.cc
//
// The fixture of sim_fixture.h (it defines no tests itself).

#include <signal.h>

#include <iostream>

#include "kube/base64.h"
#include "sim/env.h"
#include "sim_fixture.h"

namespace caphv::sim::testing {

using caphv::testing::BuildPath;
using caphv::testing::Eventually;
using caphv::testing::Testbed;
using kube::Object;

SimProcess::SimProcess(const std::string& ns, const std::vector<std::string>& extra_args) {
  auto& bed = Testbed::Get();
  log_path_ = bed.dir() + "/logs/caphv-sim-test-" + ns + ".log";
  std::vector<std::string> args = {BuildPath("cmd/caphv-sim/caphv-sim"),
                                   "run",
                                   "--kubeconfig",
                                   bed.KubeconfigPath(caphv::testing::kHarvester),
                                   "--workload-kubeconfig",
                                   bed.KubeconfigPath(caphv::testing::kWorkload),
                                   "--namespace",
                                   ns};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  child_.emplace(std::move(args), log_path_);
}

std::optional<int> SimProcess::Stop() {
  if (!child_) return std::nullopt;
  auto code = child_->Stop(SIGTERM);
  child_.reset();
  return code;
}

SimProcess::~SimProcess() { Stop(); }

void SimTest::SetUpTestSuite() {
  auto& bed = Testbed::Get();
  std::string out;
  const int rc =
      caphv::testing::RunCommand(BuildPath("cmd/caphv-sim/caphv-sim") + " install --kubeconfig " +
                                     bed.KubeconfigPath(caphv::testing::kHarvester),
                                 &out);
  ASSERT_EQ(rc, 0) << out;
}

void SimTest::SetUp() {
  auto& bed = Testbed::Get();
  h_ = bed.Client(caphv::testing::kHarvester);
  w_ = bed.Client(caphv::testing::kWorkload);
  ns_ = std::make_unique<caphv::testing::ScopedNamespace>(h_, "sim");
  auto p = h_->Patch(gvr::kNamespaces, "", ns_->name(), kube::PatchType::kMerge,
                     {{"metadata", {{"labels", {{"sim.caphv.io/dedicated", "true"}}}}}});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
}

void SimTest::TearDown() {
  if (sim_ && sim_->running()) {
    // Let the simulator finalise this test's VMs (so no guest Node outlives
    // it) and load balancers (their addresses go back to the pools).
    for (const auto& gvr : {gvr::kVirtualMachines, gvr::kLoadBalancers}) {
      auto objects = h_->List(gvr, ns_->name());
      if (!objects.ok() || objects->items.empty()) continue;
      for (const auto& o : objects->items) {
        h_->Delete(gvr, ns_->name(), kube::NameOf(o)).IgnoreError();
      }
      Eventually(
          [&] {
            auto left = h_->List(gvr, ns_->name());
            return left.ok() && left->items.empty();
          },
          std::chrono::seconds(10));
    }
  }
  if (sim_) {
    if (HasFailure()) {
      std::string log;
      caphv::testing::RunCommand("tail -n 40 " + sim_->log_path(), &log);
      std::cerr << "--- simulator log (" << sim_->log_path() << ")\n" << log;
    }
    sim_.reset();
  }
}

void SimTest::StartSim(const std::vector<std::string>& extra_args) {
  sim_ = std::make_unique<SimProcess>(ns_->name(), extra_args);
  // The webhook is registered once the caches have synced.
  const bool up = Eventually(
      [&] {
        return h_
            ->Get(kube::resources::kValidatingWebhookConfigurations, "", "caphv-sim-" + ns_->name())
            .ok();
      },
      std::chrono::seconds(30), std::chrono::milliseconds(50));
  ASSERT_TRUE(up) << "simulator did not come up; log " << sim_->log_path();
}

Object SimTest::MakeCloudInit(const std::string& name, const std::string& static_ip) const {
  std::string network;
  if (!static_ip.empty()) {
    network =
        "version: 1\nconfig:\n- type: physical\n  name: eth0\n  subnets:\n"
        "  - type: static\n    address: " +
        static_ip + "\n    netmask: 255.255.255.0\n    gateway: 10.0.10.1\n";
  }
  Object data = {{"userdata", kube::Base64Encode("#cloud-config\npackages: [qemu-guest-agent]\n")}};
  if (!network.empty()) data["networkdata"] = kube::Base64Encode(network);
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", {{"name", name + "-cloud-init"}, {"namespace", ns_->name()}}},
          {"data", data}};
}

Object SimTest::MakeVm(const std::string& name, const std::string& static_ip) const {
  (void)static_ip;
  Object templates =
      Object::array({{{"metadata",
                       {{"name", name + "-disk-0-abc1d"},
                        {"annotations", {{"harvesterhci.io/imageId", "default/image-ubuntu"}}}}},
                      {"spec",
                       {{"accessModes", {"ReadWriteMany"}},
                        {"resources", {{"requests", {{"storage", "10Gi"}}}}},
                        {"volumeMode", "Block"},
                        {"storageClassName", "longhorn-image-ubuntu"}}}}});
  Object labels = {{"harvesterhci.io/creator", "harvester"}, {"harvesterhci.io/vmName", name}};
  return {
      {"apiVersion", "kubevirt.io/v1"},
      {"kind", "VirtualMachine"},
      {"metadata",
       {{"name", name},
        {"namespace", ns_->name()},
        {"labels", labels},
        {"annotations", {{"harvesterhci.io/volumeClaimTemplates", templates.dump()}}}}},
      {"spec",
       {{"runStrategy", "Always"},
        {"template",
         {{"metadata", {{"labels", labels}}},
          {"spec",
           {{"hostname", name},
            {"domain",
             {{"cpu", {{"cores", 2}, {"sockets", 1}, {"threads", 1}}},
              {"memory", {{"guest", "4Gi"}}},
              {"resources", {{"limits", {{"cpu", "2"}, {"memory", "4Gi"}}}}},
              {"devices",
               {{"disks",
                 Object::array({{{"name", "disk-0"}, {"disk", {{"bus", "virtio"}}}},
                                {{"name", "cloudinitdisk"}, {"disk", {{"bus", "virtio"}}}}})},
                {"interfaces",
                 Object::array(
                     {{{"name", "nic-1"}, {"model", "virtio"}, {"bridge", Object::object()}}})}}}}},
            {"networks", Object::array({{{"name", "nic-1"},
                                         {"multus", {{"networkName", "default/vlan100"}}}}})},
            {"volumes",
             Object::array(
                 {{{"name", "disk-0"},
                   {"persistentVolumeClaim", {{"claimName", name + "-disk-0-abc1d"}}}},
                  {{"name", "cloudinitdisk"},
                   {"cloudInitNoCloud",
                    {{"secretRef", {{"name", name + "-cloud-init"}}},
                     {"networkDataSecretRef", {{"name", name + "-cloud-init"}}}}}}})}}}}}}}};
}

kube::StatusOr<Object> SimTest::CreateVm(const std::string& name, const std::string& static_ip) {
  auto secret = h_->Create(kube::resources::kSecrets, ns_->name(), MakeCloudInit(name, static_ip));
  if (!secret.ok()) return secret.status();
  return h_->Create(gvr::kVirtualMachines, ns_->name(), MakeVm(name, static_ip));
}

kube::StatusOr<Object> SimTest::Get(const kube::GroupVersionResource& gvr,
                                    const std::string& name) const {
  return h_->Get(gvr, gvr.namespaced ? ns_->name() : "", name);
}

}  // namespace caphv::sim::testing
