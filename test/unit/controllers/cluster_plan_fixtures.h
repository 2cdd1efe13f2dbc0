// File: test/unit/controllers/cluster_plan_fixtures.h
//
// Observations and readers shared by the HarvesterCluster planner tests:
// a cluster that reached Harvester before (Base), with inline pools, with
// the cloud-provider option, and the objects Harvester would hold.
//
// Thread safety: test helpers over values.

#pragma once

#include <string>

#include "api/conditions.h"
#include "controllers/cluster/cluster_plan.h"
#include "kube/base64.h"

namespace caphv::controllers::cluster_plan_fixtures {

using kube::Object;
using std::chrono::seconds;

inline constexpr char kMgmtId[] = "mgmt-uid";
inline constexpr char kLb[] = "team-c1-lb";
inline constexpr char kLbPool[] = "team-c1-lb-ippool";
inline constexpr char kVmPool[] = "team-c1-vm-ippool";

inline api::Condition Cond(std::string type, std::string status, std::string reason) {
  api::Condition c;
  c.type = std::move(type);
  c.status = std::move(status);
  c.reason = std::move(reason);
  c.observed_generation = 1;
  return c;
}

inline std::string Reason(const ClusterPlan& p, std::string_view type) {
  const api::Condition* c = api::FindCondition(p.status.conditions, type);
  return c ? c->reason : "<none>";
}

// The reason of the Event the plan's action emits once it succeeded.
inline std::string ActionEvent(const ClusterPlan& p) {
  return p.action && p.action->event ? p.action->event->reason : "<none>";
}

inline bool HasEvent(const ClusterPlan& p, std::string_view reason, bool warning) {
  for (const auto& e : p.events) {
    if (e.reason == reason && e.warning == warning) return true;
  }
  return false;
}

inline ConnectionView Broken(kube::Clock::Duration retry = seconds(20)) {
  return {false, "IdentitySecretUnavailable", "cannot read the identity Secret team/id", retry, ""};
}

// A cluster with its owner, finalizer, a working connection and its
// namespace, that reached Harvester before: everything but the LoadBalancer.
inline ClusterObservation Base() {
  ClusterObservation o;
  o.hc.metadata.name = "c1";
  o.hc.metadata.namespace_ = "team";
  o.hc.metadata.uid = "hc-uid";
  o.hc.metadata.generation = 1;
  o.hc.spec.identity_secret = {"team", "id"};
  o.hc.spec.target_namespace = "guests";
  o.hc.spec.load_balancer_config.ipam_type = "dhcp";
  o.key = "team/c1";
  o.has_finalizer = true;
  o.identity_recorded = true;
  o.cluster_name = "c1";
  o.management_cluster_id = kMgmtId;
  o.ever_connected = true;
  o.harvester = {true, "", "", {}, "https://harvester:6443"};
  o.namespace_ready = true;
  return o;
}

inline api::IPPoolSpec PoolSpec(const std::string& subnet) {
  api::IPPoolSpec s;
  s.subnet = subnet;
  s.gateway = subnet.substr(0, subnet.rfind('.')) + ".1";
  return s;
}

// Inline pools for the load balancer and the VMs.
inline ClusterObservation WithPools() {
  auto o = Base();
  o.hc.spec.load_balancer_config.ipam_type = "pool";
  o.hc.spec.load_balancer_config.ip_pool = PoolSpec("10.8.0.0/24");
  api::VMNetworkConfig vnc;
  vnc.ip_pool = PoolSpec("10.9.0.0/24");
  vnc.gateway = "10.9.0.1";
  vnc.subnet_mask = "255.255.255.0";
  o.hc.spec.vm_network_config = vnc;
  return o;
}

inline ClusterObservation WithCloudProvider() {
  auto o = Base();
  o.hc.spec.update_cloud_provider_config =
      api::UpdateCloudProviderConfig{"team", "cpi", "manifests", "cloud-config", "cloud-config"};
  return o;
}

inline LoadBalancerView ReadyLb(std::string address = "10.8.0.5") {
  return {true, false, false, true, harvester::Endpoint{std::move(address), 6443}};
}

inline Object Filled(Object secret) {
  secret["data"] = {{"token", kube::Base64Encode("tok")},
                    {"ca.crt", kube::Base64Encode("-----BEGIN CERTIFICATE-----\nx\n")}};
  return secret;
}

inline Object ConfigMap(const std::string& manifests) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", "cpi"}, {"namespace", "team"}, {"resourceVersion", "1"}}},
          {"data", {{"manifests", manifests}}}};
}

}  // namespace caphv::controllers::cluster_plan_fixtures
