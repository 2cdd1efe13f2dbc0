// File: test/unit/controllers/machine_plan_fixtures.h
//
// Observations shared by the HarvesterMachine planner tests: a machine whose
// Cluster is ready, with its bootstrap data and a working Harvester
// connection, and the pools, inputs and VMs the cases vary.
//
// Header-only test support. Thread safety: test thread only.

#pragma once

#include <gtest/gtest.h>

#include "api/conditions.h"
#include "controllers/machine/machine_plan.h"
#include "kube/base64.h"

namespace caphv::controllers::machine_plan_test {

using kube::Object;
using std::chrono::seconds;

inline constexpr char kMgmtId[] = "mgmt-uid";

inline const api::Condition* Cond(const MachinePlan& p, std::string_view type) {
  return api::FindCondition(p.status.conditions, type);
}

inline std::string Reason(const MachinePlan& p, std::string_view type) {
  const api::Condition* c = Cond(p, type);
  return c ? c->reason : "<none>";
}

inline Object PoolObject(const std::string& name, const std::string& start,
                         const std::string& end) {
  return {{"apiVersion", "loadbalancer.harvesterhci.io/v1beta1"},
          {"kind", "IPPool"},
          {"metadata", {{"name", name}, {"resourceVersion", "1"}}},
          {"spec",
           {{"ranges", Object::array({{{"subnet", "10.9.0.0/24"},
                                       {"gateway", "10.9.0.1"},
                                       {"rangeStart", start},
                                       {"rangeEnd", end}}})}}}};
}

inline harvester::PoolCandidate Candidate(const Object& pool) {
  auto parsed = harvester::ParseIpPool(pool);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  return {kube::NameOf(pool), *parsed};
}

inline CreationInputs Inputs() {
  CreationInputs in;
  in.bootstrap_data = "#cloud-config\nruncmd: [echo hi]\n";
  in.bootstrap_format = "cloud-config";
  in.ssh_public_key = "ssh-ed25519 AAAA test";
  in.images["default/ubuntu"] = {"default", "image-abc", "longhorn-image-abc"};
  return in;
}

// A machine whose Cluster is ready, with its bootstrap data and a working
// Harvester connection: everything a first create needs but the VM.
inline MachineObservation Base(bool pool_mode) {
  MachineObservation o;
  o.hm.metadata.name = "m-0";
  o.hm.metadata.namespace_ = "team";
  o.hm.metadata.uid = "hm-uid";
  o.hm.metadata.generation = 1;
  o.hm.spec.cpu = 2;
  o.hm.spec.memory = "4Gi";
  o.hm.spec.ssh_user = "ubuntu";
  o.hm.spec.ssh_key_pair = "default/key";
  o.hm.spec.networks = {"default/vlan1"};
  o.hm.spec.volumes = {
      api::Volume{"image", "default/ubuntu", "", "40Gi", 1},
      api::Volume{"storageClass", "", "longhorn", "10Gi", 0},
  };
  o.key = "team/m-0";
  o.has_finalizer = true;
  o.machine_found = true;
  o.bootstrap_secret = "m-0-bootstrap";
  o.cluster_name = "c1";
  o.cluster_found = true;
  o.infrastructure_ready = true;
  api::HarvesterCluster hc;
  hc.metadata.name = "c1";
  hc.metadata.namespace_ = "team";
  hc.spec.target_namespace = "guests";
  if (pool_mode) {
    api::VMNetworkConfig vnc;
    vnc.ip_pool_refs = {"pool-a", "pool-b"};
    vnc.gateway = "10.9.0.1";
    vnc.subnet_mask = "255.255.255.0";
    hc.spec.vm_network_config = vnc;
  }
  o.hc = std::make_shared<const api::HarvesterCluster>(std::move(hc));
  o.management_cluster_id = kMgmtId;
  o.harvester = {true, "", "", {}, "https://harvester:6443"};
  return o;
}

inline VmView OurVm(bool deleting = false) {
  VmView vm;
  vm.uid = "vm-uid";
  vm.ours = true;
  vm.deleting = deleting;
  vm.remove_pvcs_patch = Object{{"metadata", {{"annotations", {{"x", "y"}}}}}};
  return vm;
}

}  // namespace caphv::controllers::machine_plan_test
