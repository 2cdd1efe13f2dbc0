// File: test/unit/harvester/vm_events_test.cc
//
// Which VM and VMI events wake a machine while KubeVirt deletes its VM.

#include "harvester/vm_events.h"

#include <gtest/gtest.h>

namespace caphv::harvester {
namespace {

kube::Object Vm(const char* status, bool deleting) {
  kube::Object vm = {{"metadata", {{"name", "m-0"}, {"namespace", "default"}}},
                     {"status", {{"printableStatus", status}}}};
  if (deleting) vm["metadata"]["deletionTimestamp"] = "2026-12-07T10:00:00Z";
  return vm;
}

TEST(VmEventsTest, UpdatesOfALivingVmMatter) {
  EXPECT_TRUE(VmUpdateMatters(Vm("Starting", false), Vm("Running", false)));
}

TEST(VmEventsTest, TheUpdateThatMarksAVmDeletingMatters) {
  // Its machine learns that the VM goes (someone else may have deleted it).
  EXPECT_TRUE(VmUpdateMatters(Vm("Running", false), Vm("Terminating", true)));
}

TEST(VmEventsTest, UpdatesOfAVmAlreadyDeletingDoNot) {
  EXPECT_FALSE(VmUpdateMatters(Vm("Terminating", true), Vm("Stopped", true)));
}

TEST(VmEventsTest, AVmDeletionTimestampOfAnotherShapeIsNotDeleting) {
  kube::Object odd = Vm("Running", false);
  odd["metadata"]["deletionTimestamp"] = 7;
  EXPECT_TRUE(VmUpdateMatters(odd, odd));
}

TEST(VmEventsTest, VmiEventsMatterOnlyBesideALivingVm) {
  const kube::Object living = Vm("Running", false);
  const kube::Object deleting = Vm("Terminating", true);
  EXPECT_TRUE(VmiEventMatters(&living));
  EXPECT_FALSE(VmiEventMatters(&deleting));
  EXPECT_FALSE(VmiEventMatters(nullptr)) << "no VM cached: no machine to wake";
}

}  // namespace
}  // namespace caphv::harvester
