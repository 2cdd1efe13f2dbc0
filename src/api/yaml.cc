// File: api/yaml.cc

#include "api/yaml.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

namespace caphv::api {
namespace {

bool IsNullWord(std::string_view s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

std::optional<bool> BoolWord(std::string_view s) {
  static const char* const kTrue[] = {"true", "True", "TRUE", "yes", "Yes",
                                      "YES",  "on",   "On",   "ON"};
  static const char* const kFalse[] = {"false", "False", "FALSE", "no", "No",
                                       "NO",    "off",   "Off",   "OFF"};
  for (const char* t : kTrue) {
    if (s == t) return true;
  }
  for (const char* f : kFalse) {
    if (s == f) return false;
  }
  return std::nullopt;
}

const std::regex& IntRegex() {
  static const std::regex re(R"(^[-+]?(0|[1-9][0-9]*)$)");
  return re;
}
const std::regex& FloatRegex() {
  static const std::regex re(
      R"(^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$|^[-+]?\.(inf|Inf|INF)$|^\.(nan|NaN|NAN)$)");
  return re;
}

// Value of a plain (unquoted, untagged) scalar.
Json ResolvePlain(const std::string& s) {
  if (IsNullWord(s)) return nullptr;
  if (auto b = BoolWord(s)) return *b;
  // Every number of the two patterns below starts so; most scalars (names,
  // words) do not, and need no regular expression.
  if (std::string_view("+-.0123456789").find(s.front()) == std::string_view::npos) return s;
  if (std::regex_match(s, IntRegex())) {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno == 0 && end && *end == '\0') return static_cast<int64_t>(v);
  }
  if (std::regex_match(s, FloatRegex())) {
    if (s.find("inf") != std::string::npos || s.find("Inf") != std::string::npos ||
        s.find("INF") != std::string::npos || s.find("nan") != std::string::npos ||
        s.find("NaN") != std::string::npos || s.find("NAN") != std::string::npos) {
      return s;  // JSON has no infinities or NaN; keep the text
    }
    return std::strtod(s.c_str(), nullptr);
  }
  return s;
}

// A parsed document is a graph: an alias may refer to its own ancestor (a
// cycle) or be repeated into an exponential tree ("billion laughs"). The
// walk is bounded in depth and in nodes visited.
constexpr int kMaxYamlDepth = 256;
constexpr size_t kMaxYamlNodes = 1000000;

kube::StatusOr<Json> NodeToJson(const YAML::Node& node, int depth, size_t* nodes) {
  if (depth > kMaxYamlDepth || ++*nodes > kMaxYamlNodes) {
    return kube::Status(kube::StatusCode::kInvalidArgument,
                        "YAML nests deeper than " + std::to_string(kMaxYamlDepth) +
                            " levels or expands to more than " + std::to_string(kMaxYamlNodes) +
                            " nodes (an alias that refers to itself or is repeated into a huge "
                            "tree)");
  }
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return Json(nullptr);
    case YAML::NodeType::Scalar: {
      const std::string& tag = node.Tag();
      const std::string& s = node.Scalar();
      if (tag == "!" || tag == "tag:yaml.org,2002:str") return Json(s);
      if (tag == "?" || tag.empty()) return ResolvePlain(s);
      if (tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float" ||
          tag == "tag:yaml.org,2002:bool" || tag == "tag:yaml.org,2002:null") {
        return ResolvePlain(s);
      }
      return Json(s);
    }
    case YAML::NodeType::Sequence: {
      Json arr = Json::array();
      for (const auto& item : node) {
        auto v = NodeToJson(item, depth + 1, nodes);
        if (!v.ok()) return v.status();
        arr.push_back(std::move(*v));
      }
      return arr;
    }
    case YAML::NodeType::Map: {
      Json obj = Json::object();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          return kube::Status(kube::StatusCode::kInvalidArgument, "non-scalar YAML map key");
        }
        auto v = NodeToJson(kv.second, depth + 1, nodes);
        if (!v.ok()) return v.status();
        obj[kv.first.Scalar()] = std::move(*v);
      }
      return obj;
    }
  }
  return Json(nullptr);
}

void Emit(YAML::Emitter& out, const Json& j) {
  switch (j.type()) {
    case Json::value_t::object:
      if (j.empty()) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        return;
      }
      out << YAML::BeginMap;
      for (const auto& [k, v] : j.items()) {
        out << YAML::Key;
        if (ResolvePlain(k).is_string()) {
          out << k;
        } else {
          out << YAML::DoubleQuoted << k;
        }
        out << YAML::Value;
        Emit(out, v);
      }
      out << YAML::EndMap;
      return;
    case Json::value_t::array:
      if (j.empty()) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        return;
      }
      out << YAML::BeginSeq;
      for (const auto& v : j) Emit(out, v);
      out << YAML::EndSeq;
      return;
    case Json::value_t::string: {
      const std::string& s = j.get_ref<const std::string&>();
      // A literal block keeps exactly one final line break ("|"): other
      // multi-line strings are double-quoted, so that they read back as given.
      const bool one_final_break = s.ends_with('\n') && (s.size() < 2 || s[s.size() - 2] != '\n');
      if (s.find('\n') != std::string::npos && one_final_break) {
        out << YAML::Literal << s;
      } else if (s.find('\n') != std::string::npos) {
        out << YAML::DoubleQuoted << s;
      } else if (!ResolvePlain(s).is_string()) {
        out << YAML::DoubleQuoted << s;
      } else {
        out << s;
      }
      return;
    }
    case Json::value_t::boolean:
      out << j.get<bool>();
      return;
    case Json::value_t::null:
      out << YAML::Null;
      return;
    default:  // numbers
      out << j.dump();
      return;
  }
}

}  // namespace

kube::StatusOr<std::vector<Json>> ParseYaml(std::string_view text) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    return kube::Status(kube::StatusCode::kInvalidArgument, std::string("YAML: ") + e.what());
  }
  std::vector<Json> out;
  for (const auto& doc : docs) {
    size_t nodes = 0;
    auto j = NodeToJson(doc, 0, &nodes);
    if (!j.ok()) return j.status();
    if (!j->is_null()) out.push_back(std::move(*j));
  }
  return out;
}

std::string ToYaml(const Json& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  out.SetBoolFormat(YAML::TrueFalseBool);
  out.SetBoolFormat(YAML::LowerCase);
  Emit(out, value);
  return std::string(out.c_str()) + "\n";
}

kube::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return kube::Status(kube::StatusCode::kNotFound, "cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace caphv::api
