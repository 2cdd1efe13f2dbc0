// File: test/integration/controllers/invalid_spec_test.cc
//
// The reconcile head (controllers/reconcile.h, ReconcileHead) against the
// management apiserver of the test bed, with the CAPHV CRDs and no webhook: a
// HarvesterMachine whose spec.cpu the CRD schema admits (an integer) but
// CAPHV cannot read (beyond 32 bits) is reported to the user — a Warning
// Event InvalidSpec on the object and its Ready condition False, InvalidSpec,
// with the same message naming the field and what to do — while its other
// conditions stay; the reconcile ends Terminal, and reconciling it again
// writes nothing and records no second Event. Once deleted, the reconcile
// ends Done. (HarvesterCluster has no field the schema admits and the
// decoder refuses: every integer of it is bounded; the shared head reports
// it alike, covered by the unit tests of ReportInvalidSpec.)

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "api/codec.h"
#include "controllers/context.h"
#include "controllers/machine/machine_reconciler.h"
#include "kube/events.h"
#include "kube/informer.h"
#include "support/testbed.h"

namespace caphv::controllers {
namespace {

using caphv::testing::Eventually;
using caphv::testing::Testbed;
using kube::Object;
using std::chrono::seconds;

class InvalidSpecTest : public ::testing::Test {
 protected:
  // The CAPHV CRDs (idempotent: other suites apply them too).
  static void SetUpTestSuite() {
    std::string out;
    ASSERT_EQ(caphv::testing::ApplyCrds(Testbed::Get().KubeconfigPath(caphv::testing::kMgmt), &out),
              0)
        << out;
  }

  void SetUp() override {
    mgmt_ = Testbed::Get().Client(caphv::testing::kMgmt);
    ns_ = std::make_unique<caphv::testing::ScopedNamespace>(mgmt_, "invalid-spec");
    kube::InformerOptions o;
    o.gvr = api::ResourceOf(api::Kind::kHarvesterMachine);
    o.ns = ns();
    ctx_.mgmt = mgmt_;
    ctx_.harvester_machines = std::make_shared<kube::Informer>(mgmt_, std::move(o));
    ctx_.harvester_machines->Start();
    ASSERT_TRUE(ctx_.harvester_machines->WaitForSync(seconds(30)));
    ctx_.recorder = std::make_shared<kube::EventRecorder>(
        mgmt_, kube::EventRecorderOptions{.component = "caphv-controller-manager"});
  }

  void TearDown() override {
    ctx_.recorder->Shutdown(std::chrono::seconds(2));
    ctx_.harvester_machines->Stop();
    ns_.reset();
  }

  const std::string& ns() const { return ns_->name(); }

  // The Events of `reason` about HarvesterMachine `name`.
  std::vector<Object> EventsOf(const std::string& name, const std::string& reason) {
    std::vector<Object> out;
    auto events = mgmt_->List(kube::resources::kEvents, ns());
    EXPECT_TRUE(events.ok()) << events.status().ToString();
    if (!events.ok()) return out;
    for (const auto& e : events->items) {
      const Object& involved = e.value("involvedObject", Object::object());
      if (involved.value("kind", "") == "HarvesterMachine" && involved.value("name", "") == name &&
          e.value("reason", "") == reason) {
        out.push_back(e);
      }
    }
    return out;
  }

  // The condition `type` of `object`'s status, or null.
  static Object ConditionOf(const Object& object, const std::string& type) {
    for (const auto& c :
         object.value("status", Object::object()).value("conditions", Object::array())) {
      if (c.value("type", "") == type) return c;
    }
    return Object();
  }

  std::shared_ptr<kube::Client> mgmt_;
  std::unique_ptr<caphv::testing::ScopedNamespace> ns_;
  Context ctx_;
};

TEST_F(InvalidSpecTest, AnUnreadableMachineIsReportedOnItOnceAndNotReconciled) {
  const std::string name = "cpu-beyond-int32";
  const Object hm = {
      {"apiVersion", std::string(api::kApiVersion)},
      {"kind", "HarvesterMachine"},
      {"metadata", {{"name", name}, {"namespace", ns()}}},
      {"spec",
       {{"cpu", 4294967296},  // an integer to the schema; not an int32 to CAPHV
        {"memory", "4Gi"},
        {"sshUser", "ubuntu"},
        {"sshKeyPair", "default/key"},
        {"networks", {"default/net"}},
        {"volumes",
         {{{"volumeType", "image"}, {"imageName", "default/img"}, {"volumeSize", "40Gi"}}}}}},
  };
  const kube::GroupVersionResource gvr = api::ResourceOf(api::Kind::kHarvesterMachine);
  auto created = mgmt_->Create(gvr, ns(), hm);
  ASSERT_TRUE(created.ok()) << "the CRD schema should admit spec.cpu 4294967296: "
                            << created.status().ToString();
  ASSERT_FALSE(api::Decode<api::HarvesterMachine>(*created).ok());
  // A condition an earlier reconcile wrote: it stays.
  const Object provisioned = {{"type", "VMProvisioned"},
                              {"status", "True"},
                              {"reason", "VMRunning"},
                              {"message", ""},
                              {"lastTransitionTime", "2025-05-05T00:00:00Z"}};
  kube::PatchOptions po;
  po.subresource = "status";
  auto with_status = mgmt_->Patch(gvr, ns(), name, kube::PatchType::kMerge,
                                  {{"status", {{"conditions", Object::array({provisioned})}}}}, po);
  ASSERT_TRUE(with_status.ok()) << with_status.status().ToString();
  const std::string rv = kube::ResourceVersionOf(*with_status);
  ASSERT_TRUE(Eventually([&] {
    auto cached = ctx_.harvester_machines->store().Get(ns(), name);
    return cached && kube::ResourceVersionOf(*cached) == rv;
  }));

  HarvesterMachineReconciler reconciler(ctx_);
  const kube::Result result = reconciler.Reconcile({ns(), name});
  EXPECT_TRUE(result.terminal);
  EXPECT_FALSE(result.error.ok());
  EXPECT_NE(result.error.message().find("spec.cpu"), std::string::npos) << result.error.message();

  // The condition, in the status subresource.
  auto got = mgmt_->Get(gvr, ns(), name);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const Object ready = ConditionOf(*got, "Ready");
  ASSERT_TRUE(ready.is_object()) << got->dump();
  EXPECT_EQ(ready.value("status", ""), "False");
  EXPECT_EQ(ready.value("reason", ""), "InvalidSpec");
  const std::string message = ready.value("message", "");
  EXPECT_NE(message.find("cannot read HarvesterMachine " + ns() + "/" + name +
                         ": spec.cpu: expected an integer in range, got 4294967296"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("fix the field(s) named (kubectl -n " + ns() + " edit harvestermachine " +
                         name + ")"),
            std::string::npos)
      << message;
  EXPECT_EQ(ConditionOf(*got, "VMProvisioned"), provisioned) << got->dump();
  // The spec is left as it is.
  EXPECT_EQ((*got)["spec"]["cpu"], 4294967296);

  // The Warning Event, with the condition's message.
  ASSERT_TRUE(ctx_.recorder->Flush(seconds(10)));
  std::vector<Object> events;
  ASSERT_TRUE(Eventually([&] {
    events = EventsOf(name, "InvalidSpec");
    return !events.empty();
  }));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].value("type", ""), "Warning");
  EXPECT_EQ(events[0].value("message", ""), message);

  // Reconciled again (the write's own watch event): said already, nothing
  // written, no second Event.
  const std::string written_rv = kube::ResourceVersionOf(*got);
  ASSERT_TRUE(Eventually([&] {
    auto cached = ctx_.harvester_machines->store().Get(ns(), name);
    return cached && kube::ResourceVersionOf(*cached) == written_rv;
  }));
  EXPECT_TRUE(reconciler.Reconcile({ns(), name}).terminal);
  ASSERT_TRUE(ctx_.recorder->Flush(seconds(10)));
  auto again = mgmt_->Get(gvr, ns(), name);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(kube::ResourceVersionOf(*again), written_rv);
  events = EventsOf(name, "InvalidSpec");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].value("count", 0), 1) << events[0].dump();

  // Deleted (no finalizer: CAPHV never got to add one): the head ends Done.
  ASSERT_TRUE(mgmt_->Delete(gvr, ns(), name).ok());
  ASSERT_TRUE(Eventually([&] { return !ctx_.harvester_machines->store().Get(ns(), name); }));
  const kube::Result gone = reconciler.Reconcile({ns(), name});
  EXPECT_TRUE(gone.error.ok()) << gone.error.ToString();
  EXPECT_FALSE(gone.requeue);
  EXPECT_EQ(gone.requeue_after, kube::Clock::Duration::zero());
}

}  // namespace
}  // namespace caphv::controllers
