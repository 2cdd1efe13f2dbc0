// File: test/unit/controllers/harvester_connection_test.cc
//
// The informer transforms of a Harvester Connection: PVCs keep only the
// metadata CAPHV reads; managed Secrets lose their
// data unless they are service-account tokens. Connecting is covered against the test bed in
// test/integration/controllers/.

#include "controllers/harvester_connection.h"

#include <gtest/gtest.h>

namespace caphv::controllers {
namespace {

using kube::Object;

TEST(CompactPvcTest, KeepsOnlyTheMetadataRead) {
  Object pvc = {{"apiVersion", "v1"},
                {"kind", "PersistentVolumeClaim"},
                {"metadata",
                 {{"name", "vm-disk-0-abc"},
                  {"namespace", "hv"},
                  {"uid", "u1"},
                  {"resourceVersion", "7"},
                  {"labels", {{"l", "v"}}},
                  {"annotations", {{"a", "b"}}},
                  {"deletionTimestamp", "2025-01-01T00:00:00Z"},
                  {"finalizers", Object::array({"kubernetes.io/pvc-protection"})},
                  {"ownerReferences", Object::array({{{"name", "vm"}}})}}},
                {"spec", {{"storageClassName", "longhorn"}}},
                {"status", {{"phase", "Bound"}}}};
  PvcFields().Apply(pvc);
  const Object& m = pvc["metadata"];
  for (const char* k : {"name", "namespace", "uid", "resourceVersion", "labels", "annotations",
                        "deletionTimestamp"}) {
    EXPECT_TRUE(m.contains(k)) << k;
  }
  EXPECT_FALSE(m.contains("finalizers"));
  EXPECT_FALSE(m.contains("ownerReferences"));
  EXPECT_FALSE(pvc.contains("spec"));
  EXPECT_FALSE(pvc.contains("status"));
  EXPECT_EQ(pvc["kind"], "PersistentVolumeClaim");
  EXPECT_EQ(kube::KeyOf(pvc), "hv/vm-disk-0-abc");
}

TEST(CompactHostTest, KeepsTheNameAndZoneOnly) {
  kube::Object node = kube::Object::parse(R"({"apiVersion": "v1", "kind": "Node",
      "metadata": {"name": "h1", "resourceVersion": "7", "uid": "u",
        "labels": {"topology.kubernetes.io/zone": "zone-a", "kubernetes.io/os": "linux"},
        "annotations": {"a": "b"}},
      "spec": {"podCIDR": "10.52.0.0/24"}, "status": {"capacity": {"cpu": "64"}}})");
  HostFields().Apply(node);
  EXPECT_EQ(node, kube::Object::parse(R"({"apiVersion": "v1", "kind": "Node",
      "metadata": {"name": "h1", "resourceVersion": "7",
      "labels": {"topology.kubernetes.io/zone": "zone-a"}}})"));
}

TEST(CompactManagedSecretTest, DropsDataExceptForTokens) {
  Object cloud_init = {{"type", "Opaque"},
                       {"metadata", {{"name", "vm-cloud-init"}, {"namespace", "hv"}}},
                       {"data", {{"userdata", "c2VjcmV0"}}},
                       {"stringData", {{"x", "y"}}}};
  CompactManagedSecret(cloud_init);
  EXPECT_FALSE(cloud_init.contains("data"));
  EXPECT_FALSE(cloud_init.contains("stringData"));
  EXPECT_EQ(cloud_init["metadata"]["name"], "vm-cloud-init");

  Object token = {{"type", "kubernetes.io/service-account-token"},
                  {"metadata", {{"name", "sa-token"}, {"namespace", "hv"}}},
                  {"data", {{"token", "dA=="}, {"ca.crt", "Yw=="}}}};
  CompactManagedSecret(token);
  EXPECT_EQ(token["data"]["token"], "dA==");
  EXPECT_EQ(token["data"]["ca.crt"], "Yw==");
}

TEST(KubeconfigServerTest, ServerOrEmpty) {
  EXPECT_EQ(KubeconfigServer("apiVersion: v1\nkind: Config\ncurrent-context: m\n"
                             "clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:9\n"
                             "contexts:\n- name: m\n  context:\n    cluster: c\n    user: u\n"
                             "users:\n- name: u\n  user:\n    token: t\n"),
            "https://127.0.0.1:9");
  EXPECT_EQ(KubeconfigServer("garbage: ["), "");
}

}  // namespace
}  // namespace caphv::controllers
