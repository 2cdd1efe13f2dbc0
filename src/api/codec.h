// File: api/codec.h
//
// Entry points to decode and encode the CAPHV kinds, and the facts about each
// kind (names, resource) the CRDs, clients and webhooks share.
//
//   StatusOr<HarvesterMachine> m = Decode<HarvesterMachine>(json);
//   Json j = Encode(*m);
//
// Decode fails (kInvalidArgument, message listing every problem with its field
// path) on type errors; with DecodeMode::kStrict it also fails on fields the
// type does not know. Encode never fails.
//
// Thread safety: stateless; safe to call concurrently.

#pragma once

#include <string_view>
#include <vector>

#include "api/fields.h"
#include "api/harvester_cluster.h"
#include "api/harvester_machine.h"
#include "kube/resource.h"
#include "kube/status.h"

namespace caphv::api {

enum class Kind {
  kHarvesterCluster,
  kHarvesterMachine,
  kHarvesterClusterTemplate,
  kHarvesterMachineTemplate,
};

struct KindInfo {
  Kind kind;
  std::string_view name;       // HarvesterCluster
  std::string_view plural;     // harvesterclusters
  std::string_view singular;   // harvestercluster
  std::string_view list_kind;  // HarvesterClusterList
  bool has_status;
};

// The four kinds, in a stable order.
const std::vector<KindInfo>& AllKinds();
const KindInfo& InfoOf(Kind kind);
// Looks a kind up by name ("HarvesterMachine"); nullptr when unknown.
const KindInfo* FindKind(std::string_view name);

// "harvesterclusters.infrastructure.cluster.x-k8s.io", as Cluster API computes it.
std::string CrdName(Kind kind);
kube::GroupVersionResource ResourceOf(Kind kind);

enum class DecodeMode { kTolerant, kStrict };

template <typename T>
kube::StatusOr<T> Decode(const Json& in, DecodeMode mode = DecodeMode::kTolerant);

template <typename T>
Json Encode(const T& value) {
  return EncodeValue(value);
}

extern template kube::StatusOr<HarvesterCluster> Decode<HarvesterCluster>(const Json&, DecodeMode);
extern template kube::StatusOr<HarvesterMachine> Decode<HarvesterMachine>(const Json&, DecodeMode);
extern template kube::StatusOr<HarvesterClusterTemplate> Decode<HarvesterClusterTemplate>(
    const Json&, DecodeMode);
extern template kube::StatusOr<HarvesterMachineTemplate> Decode<HarvesterMachineTemplate>(
    const Json&, DecodeMode);
extern template kube::StatusOr<HarvesterClusterSpec> Decode<HarvesterClusterSpec>(const Json&,
                                                                                  DecodeMode);
extern template kube::StatusOr<HarvesterMachineSpec> Decode<HarvesterMachineSpec>(const Json&,
                                                                                  DecodeMode);

}  // namespace caphv::api
