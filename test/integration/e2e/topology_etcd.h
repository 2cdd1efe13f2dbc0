// File: test/integration/e2e/topology_etcd.h
//
// The etcd of a topology cluster's servers, as the simulator runs it: one
// member per server, each reachable through a kwok PortForward
// kube-system/etcd-<node> of the workload cluster whose annotation
// `sim.caphv.io/etcd-http` gives the member's plain-http address. What the
// scenarios read of it: the members (learner or voter), and how many voters
// answer and are healthy, as the RKE2 control-plane provider's etcd
// remediation and a rolling upgrade must leave them.
//
// Header-only. Thread safety: test thread only.

#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "e2e_fixture.h"
#include "kube/transport.h"
#include "topology_addons.h"

namespace caphv::e2e::topology {

struct EtcdView {
  bool answered = false;                // some member answered member/list
  std::map<std::string, bool> members;  // name -> learner
  // Voters; those whose process answers (quorum counts them: a leader
  // election makes /health false for a second without losing quorum);
  // those whose /health is true.
  int voters = 0, live_voters = 0, healthy_voters = 0;
  std::string Describe() const {
    std::string out = answered ? "" : "(no member answered) ";
    for (const auto& [name, learner] : members) out += name + (learner ? "(learner) " : " ");
    return out + "voters " + std::to_string(voters) + ", live " + std::to_string(live_voters) +
           ", healthy " + std::to_string(healthy_voters);
  }
  bool Quorum() const { return answered && live_voters >= voters / 2 + 1; }
};

// One plain-http request to an etcd member's gateway; nullopt when it did
// not answer at all.
inline std::optional<kube::TransportResponse> EtcdRequest(const std::string& url,
                                                          const std::string& method,
                                                          const std::string& path,
                                                          const std::string& body = "") {
  kube::RestConfig rc;
  rc.server = url;
  rc.connect_timeout = std::chrono::seconds(1);
  kube::Transport t(rc);
  auto r = t.Do(method, path, body, "application/json", std::chrono::seconds(3));
  if (!r.ok()) return std::nullopt;
  return *std::move(r);
}

// The JSON body of a 200 answer; nullopt otherwise.
inline std::optional<Object> EtcdJson(const std::optional<kube::TransportResponse>& r) {
  if (!r || r->status != 200) return std::nullopt;
  Object o = Object::parse(r->body, nullptr, false);
  if (o.is_discarded()) return std::nullopt;
  return o;
}

// The etcd of `cluster`'s servers, read through `workload`'s PortForwards.
inline EtcdView ReadEtcd(kube::Client& workload, const std::string& cluster) {
  EtcdView v;
  auto pfs = workload.List(kPortForwards, "kube-system");
  if (!pfs.ok()) return v;
  const std::string prefix = "etcd-" + cluster + "-";
  const auto url_of = [](const Object& pf) {
    return pf["metadata"]["annotations"].value("sim.caphv.io/etcd-http", "");
  };
  std::map<std::string, bool> healthy_url, live_url;
  for (const auto& pf : pfs->items) {
    if (NameOf(pf).rfind(prefix, 0) != 0) continue;
    const std::string url = url_of(pf);
    const auto health = EtcdRequest(url, "GET", "/health");
    live_url[url] = health.has_value();
    const auto health_json = EtcdJson(health);
    healthy_url[url] =
        health_json && health_json->is_object() && health_json->value("health", "") == "true";
    if (v.answered || !live_url[url]) continue;
    const auto list = EtcdJson(EtcdRequest(url, "POST", "/v3/cluster/member/list", "{}"));
    if (!list) continue;
    v.answered = true;
    for (const auto& m : list->value("members", Object::array())) {
      const bool learner = m.value("isLearner", false);
      v.members[m.value("name", "")] = learner;
      if (!learner) ++v.voters;
    }
  }
  // A voter is healthy when its own process answers: map members to
  // PortForwards through the Node names (member = <node>-<suffix>).
  for (const auto& pf : pfs->items) {
    const std::string name = NameOf(pf);
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string node = name.substr(5);
    const std::string url = url_of(pf);
    for (const auto& [member, learner] : v.members) {
      if (learner || member.rfind(node + "-", 0) != 0) continue;
      if (live_url[url]) ++v.live_voters;
      if (healthy_url[url]) ++v.healthy_voters;
    }
  }
  return v;
}

}  // namespace caphv::e2e::topology
