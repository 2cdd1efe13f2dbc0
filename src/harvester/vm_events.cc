// File: harvester/vm_events.cc

#include "harvester/vm_events.h"

#include "kube/json_path.h"

namespace caphv::harvester {

namespace {

bool Deleting(const kube::Object& o) {
  return !kube::StringAt(o, {"metadata", "deletionTimestamp"}).empty();
}

}  // namespace

bool VmUpdateMatters(const kube::Object& before, const kube::Object& now) {
  return !(Deleting(before) && Deleting(now));
}

bool VmiEventMatters(const kube::Object* vm) { return vm != nullptr && !Deleting(*vm); }

}  // namespace caphv::harvester
