// File: test/unit/sim/etcd_members_test.cc
//
// The simulator's etcd plumbing that needs no process: the JSON gateway's
// member lists, the --initial-cluster a joining member starts with, and the
// CONNECT heads of the kubelet proxy.

#include "sim/etcd_members.h"

#include <gtest/gtest.h>

#include "sim/kubelet_proxy.h"

namespace caphv::sim {
namespace {

using kube::Object;

// /v3/cluster/member/add as etcd 3.5 answers it: the new learner has no name
// yet; uint64 ids are strings.
const Object kAdded = Object::parse(R"({
  "header": {"cluster_id": "1", "member_id": "2"},
  "member": {"ID": "9", "peerURLs": ["http://127.0.0.1:3003"], "isLearner": true},
  "members": [
    {"ID": "2", "name": "cp-a-11111111", "peerURLs": ["http://127.0.0.1:3001"],
     "clientURLs": ["https://127.0.0.1:2001"]},
    {"ID": "5", "name": "cp-b-22222222", "peerURLs": ["http://127.0.0.1:3002"],
     "clientURLs": ["https://127.0.0.1:2002"]},
    {"ID": "9", "peerURLs": ["http://127.0.0.1:3003"], "isLearner": true}
  ]})");

TEST(EtcdMembersTest, MembersOfAGatewayAnswer) {
  auto m = ParseEtcdMembers(kAdded);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].id, "2");
  EXPECT_EQ(m[0].name, "cp-a-11111111");
  EXPECT_FALSE(m[0].learner);
  EXPECT_EQ(m[2].id, "9");
  EXPECT_TRUE(m[2].name.empty());
  EXPECT_TRUE(m[2].learner);
  EXPECT_TRUE(ParseEtcdMembers(Object::object()).empty());
}

TEST(EtcdMembersTest, AJoiningMemberStartsWithEveryPeerItselfNamed) {
  EXPECT_EQ(InitialCluster(kAdded, "http://127.0.0.1:3003", "cp-c-33333333"),
            "cp-a-11111111=http://127.0.0.1:3001,cp-b-22222222=http://127.0.0.1:3002,"
            "cp-c-33333333=http://127.0.0.1:3003");
  // Another member added and never started is no peer yet.
  EXPECT_EQ(InitialCluster(kAdded, "http://127.0.0.1:3004", "cp-d-44444444"),
            "cp-a-11111111=http://127.0.0.1:3001,cp-b-22222222=http://127.0.0.1:3002");
}

TEST(KubeletProxyTest, ConnectTargets) {
  std::string host, port;
  ASSERT_TRUE(ParseConnectTarget("cp-a:10250", &host, &port));
  EXPECT_EQ(host, "cp-a");
  EXPECT_EQ(port, "10250");
  ASSERT_TRUE(ParseConnectTarget("[fd00::5]:10250", &host, &port));
  EXPECT_EQ(host, "fd00::5");
  EXPECT_FALSE(ParseConnectTarget("/", &host, &port));
  EXPECT_FALSE(ParseConnectTarget("cp-a", &host, &port));
  EXPECT_FALSE(ParseConnectTarget("cp-a:", &host, &port));
  EXPECT_FALSE(ParseConnectTarget("cp-a:x", &host, &port));
  EXPECT_FALSE(ParseConnectTarget(":10250", &host, &port));
}

}  // namespace
}  // namespace caphv::sim
