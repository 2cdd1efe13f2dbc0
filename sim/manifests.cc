// File: sim/manifests.cc
//
// YAML-to-JSON conversion for the embedded manifests and environment files.

#include "sim/manifests.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <regex>

namespace caphv::sim {
namespace {

kube::Object ScalarToJson(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  if (node.Tag() != "?") return s;  // quoted or explicitly tagged: a string
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  static const std::regex kInt("[-+]?[0-9]+");
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (std::regex_match(s, kInt)) {
    // Out of range of int64: kept as a string.
    int64_t n = 0;
    const char* first = s.data() + (s.front() == '+' ? 1 : 0);
    auto [end, ec] = std::from_chars(first, s.data() + s.size(), n);
    return ec == std::errc() && end == s.data() + s.size() ? kube::Object(n) : kube::Object(s);
  }
  if (std::regex_match(s, kFloat)) return std::strtod(s.c_str(), nullptr);  // never throws
  return s;
}

kube::Object ToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      return ScalarToJson(node);
    case YAML::NodeType::Sequence: {
      kube::Object out = kube::Object::array();
      for (const auto& item : node) out.push_back(ToJson(item));
      return out;
    }
    case YAML::NodeType::Map: {
      kube::Object out = kube::Object::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = ToJson(kv.second);
      return out;
    }
  }
  return nullptr;
}

}  // namespace

kube::StatusOr<std::string_view> FindManifest(std::string_view path) {
  for (const auto& f : EmbeddedFiles()) {
    if (f.path == path) return f.content;
  }
  return kube::Status(kube::StatusCode::kNotFound, "no embedded manifest " + std::string(path));
}

kube::StatusOr<std::vector<kube::Object>> ParseYamlDocuments(const std::string& text) {
  std::vector<kube::Object> out;
  try {
    for (const auto& doc : YAML::LoadAll(text)) {
      kube::Object j = ToJson(doc);
      if (!j.is_null()) out.push_back(std::move(j));
    }
  } catch (const YAML::Exception& e) {
    return kube::Status(kube::StatusCode::kInvalidArgument,
                        std::string("invalid YAML: ") + e.what());
  }
  return out;
}

kube::StatusOr<std::vector<kube::Object>> CrdManifests() {
  std::vector<kube::Object> out;
  for (const auto& f : EmbeddedFiles()) {
    if (!f.path.starts_with("crds/")) continue;
    CAPHV_ASSIGN_OR_RETURN(auto docs, ParseYamlDocuments(std::string(f.content)));
    for (auto& d : docs) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace caphv::sim
