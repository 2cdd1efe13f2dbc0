// File: api/crd.cc

#include "api/crd.h"

#include <algorithm>

namespace caphv::api {
namespace {

Json Column(std::string_view name, std::string_view type, std::string_view path,
            std::string_view description, int priority = 0) {
  Json c = {{"name", name}, {"type", type}, {"jsonPath", path}, {"description", description}};
  if (priority != 0) c["priority"] = priority;
  return c;
}

const char kClusterNameColumn[] = R"(.metadata.labels['cluster\.x-k8s\.io/cluster-name'])";

Json PrinterColumns(Kind kind) {
  Json age =
      Column("Age", "date", ".metadata.creationTimestamp", "Time since the object was created");
  switch (kind) {
    case Kind::kHarvesterCluster:
      return Json::array({
          Column("Cluster", "string", kClusterNameColumn, "Cluster this object belongs to"),
          Column("TargetNamespace", "string", ".spec.targetNamespace",
                 "Harvester namespace of the VMs"),
          Column("Ready", "boolean", ".status.ready", "Infrastructure ready"),
          Column("Endpoint", "string", ".spec.controlPlaneEndpoint.host",
                 "Control plane endpoint host"),
          age,
      });
    case Kind::kHarvesterMachine:
      return Json::array({
          Column("Cluster", "string", kClusterNameColumn, "Cluster this object belongs to"),
          Column("Machine", "string", R"(.metadata.ownerReferences[?(@.kind=="Machine")].name)",
                 "Machine owning this object"),
          Column("Ready", "boolean", ".status.ready", "VM running and addressed"),
          Column("IP", "string", ".status.addresses[0].address", "First address of the VM"),
          Column("ProviderID", "string", ".spec.providerID", "Provider ID of the VM"),
          age,
      });
    case Kind::kHarvesterClusterTemplate:
    case Kind::kHarvesterMachineTemplate:
      return Json::array({age});
  }
  return Json::array({age});
}

std::string_view KindDescription(Kind kind) {
  switch (kind) {
    case Kind::kHarvesterCluster:
      return "HarvesterCluster is the Cluster API infrastructure cluster of a Kubernetes "
             "cluster on Harvester HCI: identity, target namespace, load balancer and VM "
             "networking.";
    case Kind::kHarvesterMachine:
      return "HarvesterMachine is the Cluster API infrastructure machine backed by one "
             "Harvester VM.";
    case Kind::kHarvesterClusterTemplate:
      return "HarvesterClusterTemplate stamps HarvesterClusters (ClusterClass).";
    case Kind::kHarvesterMachineTemplate:
      return "HarvesterMachineTemplate stamps HarvesterMachines.";
  }
  return "";
}

Json RawSchema(Kind kind) {
  switch (kind) {
    case Kind::kHarvesterCluster:
      return SchemaOf<HarvesterCluster>();
    case Kind::kHarvesterMachine:
      return SchemaOf<HarvesterMachine>();
    case Kind::kHarvesterClusterTemplate:
      return SchemaOf<HarvesterClusterTemplate>();
    case Kind::kHarvesterMachineTemplate:
      return SchemaOf<HarvesterMachineTemplate>();
  }
  return {};
}

// Removes the OptionalInTemplates() markers; in a template schema also drops
// those fields from `required` and relaxes every facet an unset value (empty
// string or list, zero) would fail: ClusterClass patches fill such values, as
// the Go provider's own ClusterClass expects (`networks: []`, `volumes: []`,
// `sshKeyPair: ''`). Values that are set keep their pattern and enum.
void Finish(Json& s, bool relax) {
  if (!s.is_object()) return;
  if (s.contains("properties")) {
    for (auto& [name, sub] : s["properties"].items()) {
      if (sub.is_object() && sub.contains(kOptionalInTemplatesMarker)) {
        sub.erase(std::string(kOptionalInTemplatesMarker));
        if (relax && s.contains("required")) {
          auto& req = s["required"];
          req.erase(std::remove(req.begin(), req.end(), Json(name)), req.end());
        }
      }
      Finish(sub, relax);
    }
  }
  if (s.contains("items")) Finish(s["items"], relax);
  if (s.contains("additionalProperties")) Finish(s["additionalProperties"], relax);
  if (!relax) return;
  s.erase("minItems");
  s.erase("minLength");
  if (s.contains("minimum") && s["minimum"].get<int64_t>() > 0) s["minimum"] = 0;
  if (s.contains("enum") &&
      std::find(s["enum"].begin(), s["enum"].end(), Json("")) == s["enum"].end()) {
    s["enum"].insert(s["enum"].begin(), "");
  }
  if (s.contains("pattern")) s["pattern"] = "^$|" + s["pattern"].get<std::string>();
}

bool IsTemplate(Kind kind) {
  return kind == Kind::kHarvesterClusterTemplate || kind == Kind::kHarvesterMachineTemplate;
}

}  // namespace

Json BuildSchema(Kind kind) {
  Json s = RawSchema(kind);
  if (IsTemplate(kind)) {
    // Only the stamped spec is relaxed; like the Go provider's template CRDs,
    // an object may even come without spec.
    Json& inner = s["properties"]["spec"]["properties"]["template"]["properties"]["spec"];
    Finish(inner, /*relax=*/true);
    Finish(s, /*relax=*/false);
    s.erase("required");
    s["properties"]["spec"].erase("required");
  } else {
    Finish(s, /*relax=*/false);
  }
  s["description"] = KindDescription(kind);
  auto& p = s["properties"];
  p["apiVersion"]["description"] =
      "APIVersion defines the versioned schema of this representation of an object.";
  p["kind"]["description"] = "Kind is a string value representing the REST resource.";
  return s;
}

Json BuildCrd(Kind kind) {
  const KindInfo& info = InfoOf(kind);
  const Json schema = BuildSchema(kind);
  Json versions = Json::array();
  for (std::string_view name : kServedVersions) {
    Json version = {
        {"name", name},
        {"served", true},
        {"storage", name == kVersion},
        {"schema", {{"openAPIV3Schema", schema}}},
        {"additionalPrinterColumns", PrinterColumns(kind)},
    };
    if (info.has_status) version["subresources"] = {{"status", Json::object()}};
    versions.push_back(std::move(version));
  }
  std::string contract;
  for (std::string_view name : kServedVersions) {
    contract += (contract.empty() ? "" : "_") + std::string(name);
  }
  return {
      {"apiVersion", "apiextensions.k8s.io/v1"},
      {"kind", "CustomResourceDefinition"},
      {"metadata",
       {{"name", CrdName(kind)},
        {"labels",
         {{"cluster.x-k8s.io/provider", "infrastructure-harvester"},
          {"cluster.x-k8s.io/v1beta1", contract},
          {"cluster.x-k8s.io/v1beta2", contract}}}}},
      {"spec",
       {{"group", kGroup},
        {"names",
         {{"kind", info.name},
          {"listKind", info.list_kind},
          {"plural", info.plural},
          {"singular", info.singular},
          {"categories", Json::array({"cluster-api"})}}},
        {"scope", "Namespaced"},
        {"versions", std::move(versions)}}},
  };
}

std::string CrdFileName(Kind kind) {
  return std::string(kGroup) + "_" + std::string(InfoOf(kind).plural) + ".yaml";
}

}  // namespace caphv::api
