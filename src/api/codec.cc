// File: api/codec.cc

#include "api/codec.h"

#include <string>

namespace caphv::api {

const std::vector<KindInfo>& AllKinds() {
  static const std::vector<KindInfo> kKinds = {
      {Kind::kHarvesterCluster, "HarvesterCluster", "harvesterclusters", "harvestercluster",
       "HarvesterClusterList", true},
      {Kind::kHarvesterMachine, "HarvesterMachine", "harvestermachines", "harvestermachine",
       "HarvesterMachineList", true},
      {Kind::kHarvesterClusterTemplate, "HarvesterClusterTemplate", "harvesterclustertemplates",
       "harvesterclustertemplate", "HarvesterClusterTemplateList", false},
      {Kind::kHarvesterMachineTemplate, "HarvesterMachineTemplate", "harvestermachinetemplates",
       "harvestermachinetemplate", "HarvesterMachineTemplateList", false},
  };
  return kKinds;
}

const KindInfo& InfoOf(Kind kind) {
  for (const auto& k : AllKinds()) {
    if (k.kind == kind) return k;
  }
  return AllKinds().front();  // unreachable: every enumerator is listed
}

const KindInfo* FindKind(std::string_view name) {
  for (const auto& k : AllKinds()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::string CrdName(Kind kind) {
  return std::string(InfoOf(kind).plural) + "." + std::string(kGroup);
}

kube::GroupVersionResource ResourceOf(Kind kind) {
  const KindInfo& info = InfoOf(kind);
  return {std::string(kGroup), std::string(kVersion), std::string(info.plural), true,
          std::string(info.name)};
}

template <typename T>
kube::StatusOr<T> Decode(const Json& in, DecodeMode mode) {
  DecodeContext ctx;
  ctx.strict = mode == DecodeMode::kStrict;
  T out{};
  DecodeValue(in, out, ctx, "");
  for (const auto& f : ctx.unknown_fields) ctx.errors.push_back(f + ": unknown field");
  if (!ctx.errors.empty()) {
    std::string message;
    for (const auto& e : ctx.errors) message += (message.empty() ? "" : "; ") + e;
    return kube::Status(kube::StatusCode::kInvalidArgument, message);
  }
  return out;
}

template kube::StatusOr<HarvesterCluster> Decode<HarvesterCluster>(const Json&, DecodeMode);
template kube::StatusOr<HarvesterMachine> Decode<HarvesterMachine>(const Json&, DecodeMode);
template kube::StatusOr<HarvesterClusterTemplate> Decode<HarvesterClusterTemplate>(const Json&,
                                                                                   DecodeMode);
template kube::StatusOr<HarvesterMachineTemplate> Decode<HarvesterMachineTemplate>(const Json&,
                                                                                   DecodeMode);
template kube::StatusOr<HarvesterClusterSpec> Decode<HarvesterClusterSpec>(const Json&, DecodeMode);
template kube::StatusOr<HarvesterMachineSpec> Decode<HarvesterMachineSpec>(const Json&, DecodeMode);

}  // namespace caphv::api
