// File: sim/guest_support.h
//
// What the guest files (guests.cc, guest_rke2.cc, guest_ccm.cc) share: the
// cluster a VM belongs to, its first address, the images its disks are made
// from. Internal to sim/.
//
// Thread safety: pure functions.

#pragma once

#include <string>
#include <vector>

#include "sim/env.h"
#include "sim/kubevirt.h"
#include "sim/object_util.h"

namespace caphv::sim::internal {

inline constexpr char kClusterIdLabel[] = "harvester.infrastructure.cluster.x-k8s.io/cluster-id";
inline constexpr char kGuestClusterLabel[] = "guestcluster.harvesterhci.io/name";

inline std::string Label(const Object& o, const char* key) {
  return o["metadata"].value("labels", Object::object()).value(key, "");
}

// The guest cluster a VM belongs to (its namespace and CAPHV's cluster labels).
inline std::string ClusterKey(const Object& vm) {
  std::string id = Label(vm, kClusterIdLabel);
  if (id.empty()) id = Label(vm, kGuestClusterLabel);
  return Ns(vm) + "/" + id;
}

inline std::string FirstIp(const std::vector<Nic>& nics) {
  for (const auto& n : nics) {
    if (!n.ip.empty()) return n.ip;
  }
  return "";
}

// The images of the environment that `vm`'s disks are made from.
inline std::vector<const EnvImage*> ImagesOf(const std::vector<EnvImage>& images,
                                             const Object& vm) {
  std::vector<const EnvImage*> out;
  auto claims = ClaimsFromVm(vm);
  if (!claims.ok()) return out;
  for (const auto& pvc : *claims) {
    const std::string image = StrAt(pvc, {"metadata", "annotations", kImageIdAnnotation});
    if (image.empty()) continue;
    const auto slash = image.find('/');
    const std::string ins = slash == std::string::npos ? Ns(vm) : image.substr(0, slash);
    const std::string iname = slash == std::string::npos ? image : image.substr(slash + 1);
    for (const auto& im : images) {
      if (im.ns == ins && im.name == iname) out.push_back(&im);
    }
  }
  return out;
}

}  // namespace caphv::sim::internal
