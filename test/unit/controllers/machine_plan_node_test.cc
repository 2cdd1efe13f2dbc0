// File: test/unit/controllers/machine_plan_node_test.cc
//
// The HarvesterMachine planner's node initialisation, case by case: once the
// VM runs, the workload Node of the machine's name gets spec.providerID and
// loses the uninitialized taint in one write guarded by what it changes, unless the cloud
// provider did it, the Node is someone else's, or the machine is paused or
// being deleted.

#include <gtest/gtest.h>

#include "controllers/machine/machine_plan.h"
#include "machine_plan_fixtures.h"
#include "workload/node_init.h"

namespace caphv::controllers {
namespace {

using namespace machine_plan_test;  // NOLINT(google-build-using-namespace)
using kube::Object;

constexpr char kOurId[] = "harvester://vm-uid";

const Object kUninitialized = {{"key", "node.cloudprovider.kubernetes.io/uninitialized"},
                               {"value", "true"},
                               {"effect", "NoSchedule"}};
const Object kControlPlane = {{"key", "node-role.kubernetes.io/control-plane"},
                              {"effect", "NoSchedule"}};

// A Node as the workload informer caches it.
workload::NodeView Node(const std::string& provider_id, const Object& taints) {
  Object spec = {{"taints", taints}};
  if (!provider_id.empty()) spec["providerID"] = provider_id;
  return workload::ViewOfNode({{"apiVersion", "v1"},
                               {"kind", "Node"},
                               {"metadata", {{"name", "m-0"}, {"resourceVersion", "42"}}},
                               {"spec", spec}});
}

// A worker whose VM runs with an address, its workload cluster connected.
MachineObservation Running() {
  auto o = Base(false);
  o.vm = OurVm();
  o.vm->running = true;
  o.hm.spec.provider_id = kOurId;
  o.vmi = VmiView{"Running", {{"ExternalIP", "10.9.0.7"}}, "2025-01-01T00:00:00Z"};
  o.machine_has_node_ref = true;
  o.workload = {true, "", "", {}, "https://workload"};
  return o;
}

// The status a plan reports, as the next reconcile reads it.
void Reported(MachineObservation& o, const MachinePlan& p) { o.hm.status = p.status; }

TEST(MachinePlanNodeTest, WaitsForTheNodeToRegister) {
  auto o = Running();
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kNodeInitialized), "WaitingForNode");
  EXPECT_EQ(Cond(p, kNodeInitialized)->status, "False");
  EXPECT_EQ(p.wait.kind, Wait::Kind::kEvent);  // the Node's watch event brings it back
  EXPECT_TRUE(p.events.empty());
  EXPECT_TRUE(p.status.ready.value_or(false));  // not part of Ready
  EXPECT_EQ(Reason(p, api::kReadyCondition), "Ready");
}

TEST(MachinePlanNodeTest, WaitsForTheWorkloadClusterAtItsBackoff) {
  auto o = Running();
  o.workload = {false, "Connecting", "connecting to the workload cluster", {}, ""};
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kNodeInitialized), "WaitingForWorkloadCluster");
  EXPECT_EQ(p.wait.kind, Wait::Kind::kEvent);
  o.workload = {false, "KubeconfigSecretUnavailable", "cannot read", std::chrono::seconds(4), ""};
  p = PlanMachine(o);
  EXPECT_EQ(p.wait.kind, Wait::Kind::kRequeueAfter);
  EXPECT_EQ(p.wait.after, std::chrono::seconds(4));
}

TEST(MachinePlanNodeTest, NoProviderIdAndTheTaintAreFixedInOneGuardedWrite) {
  auto o = Running();
  o.node = Node("", Object::array({kControlPlane, kUninitialized}));
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kInitializeNode);
  EXPECT_EQ(p.action->name, "m-0");
  EXPECT_EQ(p.action->value, kOurId);
  // Guarded by what it changes only: the taint at its index, as read.
  const Object want =
      Object::array({{{"op", "add"}, {"path", "/spec/providerID"}, {"value", kOurId}},
                     {{"op", "test"}, {"path", "/spec/taints/1"}, {"value", kUninitialized}},
                     {{"op", "remove"}, {"path", "/spec/taints/1"}}});
  EXPECT_EQ(p.action->body, want);  // every other taint untouched
}

// The cloud provider gets kCloudProviderGrace from the Node's creation;
// then CAPHV writes. Waiting is said in the condition and comes back by
// itself when the grace ends.
TEST(MachinePlanNodeTest, ANewNodeIsLeftToTheCloudProviderForAFewSeconds) {
  auto o = Running();
  workload::NodeView young = Node("", Object::array({kUninitialized}));
  young.created = o.now - std::chrono::seconds(2);
  o.node = young;
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kNodeInitialized), "WaitingForCloudProvider");
  EXPECT_EQ(Cond(p, kNodeInitialized)->status, "False");
  EXPECT_EQ(p.wait.kind, Wait::Kind::kRequeueAfter);
  EXPECT_EQ(p.wait.after, std::chrono::seconds(3));

  // The grace over: CAPHV initialises it.
  young.created = o.now - workload::kCloudProviderGrace;
  o.node = young;
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kInitializeNode);

  // The cloud provider did it meanwhile: nothing to write.
  young.created = o.now - std::chrono::seconds(1);
  o.node = Node(kOurId, Object::array());
  o.node->created = young.created;
  p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kNodeInitialized), "NodeAlreadyInitialized");
}

TEST(MachinePlanNodeTest, ANodeFromAClockAheadIsNotWaitedFor) {
  auto o = Running();
  o.node = Node("", Object::array({kUninitialized}));
  o.node->created = o.now + std::chrono::minutes(5);
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kInitializeNode);
}

TEST(MachinePlanNodeTest, OurProviderIdWithTheTaintOnlyLiftsTheTaint) {
  auto o = Running();
  o.node = Node(kOurId, Object::array({kUninitialized}));
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kInitializeNode);
  const Object want =
      Object::array({{{"op", "test"}, {"path", "/spec/taints/0"}, {"value", kUninitialized}},
                     {{"op", "remove"}, {"path", "/spec/taints/0"}}});
  EXPECT_EQ(p.action->body, want);
}

TEST(MachinePlanNodeTest, OnlyAMissingProviderIdIsSet) {
  auto o = Running();
  o.node = Node("", Object::array({kControlPlane}));
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  const Object want =
      Object::array({{{"op", "add"}, {"path", "/spec/providerID"}, {"value", kOurId}}});
  EXPECT_EQ(p.action->body, want);  // taints not written at all
}

TEST(MachinePlanNodeTest, EveryUninitializedTaintGoesFromTheLastIndexDown) {
  auto o = Running();
  const Object again = {{"key", "node.cloudprovider.kubernetes.io/uninitialized"},
                        {"effect", "NoExecute"}};
  o.node = Node(kOurId, Object::array({kUninitialized, kControlPlane, again}));
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  const Object want =
      Object::array({{{"op", "test"}, {"path", "/spec/taints/2"}, {"value", again}},
                     {{"op", "remove"}, {"path", "/spec/taints/2"}},
                     {{"op", "test"}, {"path", "/spec/taints/0"}, {"value", kUninitialized}},
                     {{"op", "remove"}, {"path", "/spec/taints/0"}}});
  EXPECT_EQ(p.action->body, want);
}

// The apiserver's answers, as a kube-apiserver v1.33 gives them.
TEST(MachinePlanNodeTest, ANodeChangedSinceItWasReadIsDecidedAgainNotAnError) {
  using kube::Status;
  // A failed `test` (the taint list changed).
  EXPECT_TRUE(workload::IsNodeChanged(Status::FromHttp(
      422,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server )"
      R"(rejected our request due to an error in our request","reason":"Invalid","details":{},)"
      R"("code":422})")));
  // A providerID set by someone else meanwhile.
  EXPECT_TRUE(workload::IsNodeChanged(Status::FromHttp(
      422,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Node )"
      R"(\"m-0\" is invalid: spec.providerID: Forbidden: node updates may not change providerID )"
      R"(except from \"\" to valid","reason":"Invalid","details":{"name":"m-0","kind":"Node",)"
      R"("causes":[{"reason":"FieldValueForbidden","message":"Forbidden: node updates may not )"
      R"(change providerID except from \"\" to valid","field":"spec.providerID"}]},"code":422})")));
  // Anything else is an error.
  EXPECT_FALSE(workload::IsNodeChanged(Status::FromHttp(
      422,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Node )"
      R"(\"m-0\" is invalid: spec.taints[0].effect: Unsupported value","reason":"Invalid",)"
      R"("details":{"causes":[{"reason":"FieldValueNotSupported","field":"spec.taints[0].effect"}]},)"
      R"("code":422})")));
  // A 422 without causes is a change only with the generic message of a
  // JSON Patch that did not apply: not a validating webhook's denial given
  // code 422, nor a 422 without a Status body (a proxy's).
  EXPECT_FALSE(workload::IsNodeChanged(Status::FromHttp(
      422,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"admission )"
      R"(webhook \"nodes.example.com\" denied the request: taints are managed by the platform",)"
      R"("reason":"Invalid","code":422})")));
  EXPECT_FALSE(workload::IsNodeChanged(Status::FromHttp(422, "")));
  EXPECT_FALSE(workload::IsNodeChanged(Status::FromHttp(422, "unprocessable")));
  // The generic text under another code is no patch failure either.
  EXPECT_FALSE(workload::IsNodeChanged(Status::FromHttp(
      400,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server )"
      R"(rejected our request due to an error in our request","reason":"BadRequest","code":400})")));
  EXPECT_FALSE(workload::IsNodeChanged(Status::FromHttp(503, "")));
  EXPECT_FALSE(workload::IsNodeChanged(Status::FromHttp(
      403, R"({"kind":"Status","status":"Failure","reason":"Forbidden","code":403})")));
}

TEST(MachinePlanNodeTest, AfterTheWriteTheNodeIsInitializedAndNeverLookedAtAgain) {
  auto o = Running();
  o.node = Node("", Object::array({kUninitialized}));
  ASSERT_TRUE(PlanMachine(o).action);
  // The executor folds the patched Node in.
  o.node = Node(kOurId, Object::array());
  o.node_initialized_here = true;
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kNodeInitialized), "NodeInitialized");
  EXPECT_EQ(Cond(p, kNodeInitialized)->status, "True");
  // Later reconciles: done, whatever the cache shows (a lagging cache, or a
  // cloud provider re-tainting a migrated Node, is not CAPHV's to fight).
  Reported(o, p);
  o.node_initialized_here = false;
  o.node = Node("", Object::array({kUninitialized}));
  p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kNodeInitialized), "NodeInitialized");
  EXPECT_EQ(p.status, o.hm.status);  // no status write
}

TEST(MachinePlanNodeTest, TheCloudProviderAlreadyDidIt) {
  auto o = Running();
  o.node = Node(kOurId, Object::array({kControlPlane}));
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kNodeInitialized), "NodeAlreadyInitialized");
  EXPECT_EQ(Cond(p, kNodeInitialized)->status, "True");
  EXPECT_TRUE(p.events.empty());
}

TEST(MachinePlanNodeTest, AForeignProviderIdIsNeverTouchedAndWarnsOnce) {
  auto o = Running();
  o.node = Node("harvester://someone-else", Object::array({kUninitialized}));
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kNodeInitialized), "NodeProviderIDMismatch");
  EXPECT_EQ(Cond(p, kNodeInitialized)->status, "False");
  EXPECT_NE(Cond(p, kNodeInitialized)->message.find("harvester://someone-else"), std::string::npos);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_TRUE(p.events[0].warning);
  EXPECT_EQ(p.events[0].reason, "NodeProviderIDMismatch");
  EXPECT_EQ(p.wait.kind, Wait::Kind::kEvent);
  Reported(o, p);
  p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_TRUE(p.events.empty());  // the same finding: no second Warning
  // Without the taint it is still not ours.
  o.node = Node("harvester://someone-else", Object::array());
  EXPECT_EQ(Reason(PlanMachine(o), kNodeInitialized), "NodeProviderIDMismatch");
  EXPECT_FALSE(PlanMachine(o).action);
}

TEST(MachinePlanNodeTest, NothingBeforeTheVmRuns) {
  auto o = Running();
  o.node = Node("", Object::array({kUninitialized}));
  o.vmi = VmiView{"Scheduled", {}, ""};
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Cond(p, kNodeInitialized), nullptr);
  o.vmi = VmiView{"Running", {}, ""};  // running, no address yet
  EXPECT_FALSE(PlanMachine(o).action);
}

TEST(MachinePlanNodeTest, APausedMachineDoesNothing) {
  auto o = Running();
  o.node = Node("", Object::array({kUninitialized}));
  o.paused = true;
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Cond(p, kNodeInitialized), nullptr);
  EXPECT_EQ(Reason(p, "Paused"), "Paused");
}

TEST(MachinePlanNodeTest, ADeletingMachineDoesNotInitializeItsNode) {
  auto o = Running();
  o.node = Node("", Object::array({kUninitialized}));
  o.deleting = true;
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_NE(p.action->kind, ActionKind::kInitializeNode);
  EXPECT_EQ(Cond(p, kNodeInitialized), nullptr);
}

TEST(MachinePlanNodeTest, AControlPlaneMachineReportsBothNodeConditions) {
  auto o = Running();
  o.machine_has_node_ref = false;
  o.control_plane = true;
  o.node = Node("", Object::array({kUninitialized}));
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kInitializeNode);
  EXPECT_EQ(Reason(p, kNodeRegistered), "WaitingForNode");
  o.node = Node(kOurId, Object::array());
  o.node_initialized_here = true;
  p = PlanMachine(o);
  EXPECT_EQ(Reason(p, kNodeRegistered), "NodeRegistered");
  EXPECT_EQ(Reason(p, kNodeInitialized), "NodeInitialized");
}

}  // namespace
}  // namespace caphv::controllers
