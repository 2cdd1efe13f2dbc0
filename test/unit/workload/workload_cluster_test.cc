// File: test/unit/workload/workload_cluster_test.cc
//
// The pure parts of the workload layer: the Node transform, reading the
// `<cluster>-kubeconfig` Secret, the client config; and WorkloadClusters
// while the kubeconfig Secret does not exist (nothing is built: the waiter
// is woken when the Secret appears), driven through the Secret informer's
// entry points without any apiserver. Building and the Node watch are
// covered against the test bed in test/integration/workload/.

#include "workload/workload_cluster.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kube/base64.h"
#include "workload/etcd_member.h"
#include "workload/node_init.h"

namespace caphv::workload {
namespace {

using kube::Object;

constexpr char kKubeconfig[] =
    "apiVersion: v1\nkind: Config\ncurrent-context: main\n"
    "clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n"
    "contexts:\n- name: main\n  context:\n    cluster: c\n    user: u\n"
    "users:\n- name: u\n  user:\n    token: abc\n";

Object Secret(const std::string& ns, const std::string& name, const std::string& rv) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", {{"namespace", ns}, {"name", name}, {"resourceVersion", rv}}}};
}

kube::WatchEvent Added(Object o) {
  kube::WatchEvent e;
  e.type = kube::WatchEvent::Type::kAdded;
  e.object = std::move(o);
  return e;
}

TEST(CompactNodeTest, KeepsWhatNodeInitAndEtcdMembershipRead) {
  Object node = Object::parse(R"({"apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "n1", "uid": "u1", "resourceVersion": "7",
      "creationTimestamp": "2026-11-28T23:59:00Z",
      "deletionTimestamp": "2026-11-29T00:00:00Z",
      "finalizers": ["harvester.infrastructure.cluster.x-k8s.io/etcd-member"],
      "labels": {"node-role.kubernetes.io/etcd": "true", "kubernetes.io/hostname": "n1"},
      "annotations": {"etcd.rke2.cattle.io/node-name": "n1-abc",
        "etcd.rke2.cattle.io/remove": "true", "etcd.rke2.cattle.io/removed-node-name": "n1-abc",
        "rke2.io/node-args": "[\"server\"]", "node.alpha.kubernetes.io/ttl": "0"}},
    "spec": {"providerID": "harvester://uid", "podCIDR": "10.52.0.0/24",
      "taints": [{"key": "node.cloudprovider.kubernetes.io/uninitialized", "effect": "NoSchedule"}]},
    "status": {"conditions": [{"type": "Ready", "status": "True"}],
      "nodeInfo": {"kubeletVersion": "v1.33.0"},
      "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
      "images": [{"names": ["big:1"], "sizeBytes": 1}]}})");
  const NodeView before = ViewOfNode(node);
  const EtcdNodeView etcd_before = ViewOfEtcdNode(node);
  NodeFields().Apply(node);
  // What the readers see is unchanged.
  const NodeView after = ViewOfNode(node);
  EXPECT_EQ(after.name, before.name);
  EXPECT_EQ(after.resource_version, before.resource_version);
  EXPECT_EQ(after.provider_id, before.provider_id);
  EXPECT_EQ(after.taints, before.taints);
  EXPECT_TRUE(after.uninitialized);
  ASSERT_TRUE(after.created.has_value());  // the cloud provider's grace counts from it
  EXPECT_EQ(after.created, before.created);
  const EtcdNodeView etcd_after = ViewOfEtcdNode(node);
  EXPECT_TRUE(etcd_after.etcd);
  EXPECT_EQ(etcd_after.member, etcd_before.member);
  EXPECT_EQ(etcd_after.removal_requested, etcd_before.removal_requested);
  EXPECT_EQ(etcd_after.removed_member, etcd_before.removed_member);
  EXPECT_EQ(etcd_after.has_finalizer, etcd_before.has_finalizer);
  EXPECT_EQ(kube::UidOf(node), "u1");
  EXPECT_TRUE(node["metadata"].contains("deletionTimestamp"));
  // The rest is dropped.
  EXPECT_FALSE(node.contains("status"));
  EXPECT_FALSE(node["spec"].contains("podCIDR"));
  EXPECT_FALSE(node["metadata"]["labels"].contains("kubernetes.io/hostname"));
  EXPECT_FALSE(node["metadata"]["annotations"].contains("rke2.io/node-args"));
  EXPECT_EQ(node["kind"], "Node");
}

TEST(CompactNodeTest, NodeWithoutStatusStaysWithoutStatus) {
  Object node = {{"metadata", {{"name", "n1"}}}, {"spec", Object::object()}};
  NodeFields().Apply(node);
  EXPECT_FALSE(node.contains("status"));
  EXPECT_EQ(node["metadata"]["name"], "n1");
}

TEST(KubeconfigOfTest, DecodesValue) {
  Object s = Secret("ns", "c-kubeconfig", "1");
  s["data"] = {{"value", kube::Base64Encode(kKubeconfig)}};
  auto k = KubeconfigOf(s);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(*k, kKubeconfig);
}

TEST(KubeconfigOfTest, MissingOrUndecodableValueIsInvalid) {
  Object s = Secret("ns", "c-kubeconfig", "1");
  EXPECT_EQ(KubeconfigOf(s).status().code(), kube::StatusCode::kInvalidArgument);
  s["data"] = {{"other", kube::Base64Encode("x")}};
  EXPECT_NE(KubeconfigOf(s).status().message().find("`value`"), std::string::npos);
  s["data"] = {{"value", "!!!not base64"}};
  EXPECT_EQ(KubeconfigOf(s).status().code(), kube::StatusCode::kInvalidArgument);
}

TEST(WorkloadConfigTest, ShortTimeoutsForBackgroundUse) {
  auto c = WorkloadConfig(kKubeconfig);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server, "https://127.0.0.1:6443");
  EXPECT_EQ(c->connect_timeout, kWorkloadConnectTimeout);
  EXPECT_EQ(c->request_timeout, kWorkloadRequestTimeout);
  EXPECT_EQ(c->user_agent, "caphv-manager");
  EXPECT_FALSE(WorkloadConfig("not: [a kubeconfig").ok());
}

TEST(WorkloadClustersTest, MissingSecretBuildsNothingAndWakesTheWaiterWhenItAppears) {
  kube::InformerOptions o;
  o.gvr = kube::resources::kSecrets;
  auto secrets = std::make_shared<kube::Informer>(nullptr, o);
  secrets->Replace({Secret("ns", "unrelated", "1")}, "1");
  std::vector<std::string> woken;
  WorkloadCallbacks cb;
  cb.wake = [&](const kube::Request& r) { woken.push_back(r.Key()); };
  // No management client: nothing may be read while the Secret is absent.
  WorkloadClusters clusters(nullptr, secrets, cb);

  auto l = clusters.Get("ns", "c1", {"ns", "m1"});
  EXPECT_EQ(l.value, nullptr);
  EXPECT_EQ(l.reason, "KubeconfigSecretUnavailable");
  EXPECT_NE(l.message.find("ns/c1-kubeconfig"), std::string::npos) << l.message;
  EXPECT_EQ(l.retry_after, std::chrono::milliseconds(0));
  clusters.Get("ns", "c1", {"ns", "m2"});
  clusters.Get("ns", "c1", {"ns", "m1"});
  clusters.Get("ns", "c2", {"ns", "m3"});

  // Other Secrets wake nobody.
  secrets->Apply(Added(Secret("ns", "c3-kubeconfig", "2")));
  secrets->Apply(Added(Secret("other", "c1-kubeconfig", "3")));
  EXPECT_TRUE(woken.empty());
  secrets->Apply(Added(Secret("ns", "c1-kubeconfig", "4")));
  EXPECT_EQ(woken, (std::vector<std::string>{"ns/m1", "ns/m2"}));

  // Swept keys forget their waiters.
  clusters.Sweep([](const std::string&) { return false; });
  secrets->Apply(Added(Secret("ns", "c2-kubeconfig", "5")));
  EXPECT_EQ(woken.size(), 2u);

  clusters.Stop();
  auto stopped = clusters.Get("ns", "c1", {"ns", "m1"});
  EXPECT_EQ(stopped.reason, "Stopped");
  EXPECT_EQ(stopped.value, nullptr);
}

}  // namespace
}  // namespace caphv::workload
