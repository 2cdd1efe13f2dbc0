// File: test/unit/kube/secret_pool_test.cc
//
// PoolSecretFields(): the Secret informer behind a SecretPool keeps a
// Secret's key and resourceVersion, which is all the pool and its users read
// (KeyOf, ResourceVersionOf), and nothing of its content.

#include "kube/secret_pool.h"

#include <gtest/gtest.h>

namespace caphv::kube {
namespace {

TEST(CompactPoolSecretTest, KeepsTheKeyAndVersionAndNothingOfTheContent) {
  Object secret = Object::parse(R"({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
    "metadata": {"name": "c1-kubeconfig", "namespace": "ns", "uid": "u1",
      "resourceVersion": "42", "labels": {"cluster.x-k8s.io/cluster-name": "c1"},
      "annotations": {"a": "b"}, "ownerReferences": [{"kind": "Cluster", "name": "c1"}]},
    "data": {"value": "c2VjcmV0"}, "stringData": {"x": "y"}})");
  const std::string key = KeyOf(secret);
  PoolSecretFields().Apply(secret);
  EXPECT_EQ(KeyOf(secret), key);
  EXPECT_EQ(ResourceVersionOf(secret), "42");
  EXPECT_EQ(UidOf(secret), "u1");
  EXPECT_FALSE(secret.contains("data"));
  EXPECT_FALSE(secret.contains("stringData"));
  EXPECT_FALSE(secret["metadata"].contains("labels"));
  EXPECT_FALSE(secret["metadata"].contains("annotations"));
  EXPECT_FALSE(secret["metadata"].contains("ownerReferences"));
}

}  // namespace
}  // namespace caphv::kube
