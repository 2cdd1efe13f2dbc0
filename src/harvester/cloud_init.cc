// File: harvester/cloud_init.cc
//
// The user data of a CAPHV VM (the bootstrap's #cloud-config, plain or as a
// Jinja template, merged with the guest agent and the SSH user; see
// cloud_init.h) and the cloud-init Secret that carries it. The network data
// is in cloud_init_network.cc.

#include "harvester/cloud_init.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <optional>

#include "kube/base64.h"

namespace caphv::harvester {
namespace {

using kube::Status;
using kube::StatusCode;

constexpr std::string_view kGuestAgentPackage = "qemu-guest-agent";
const std::vector<std::string> kGuestAgentEnable = {"systemctl", "enable", "--now",
                                                    "qemu-guest-agent.service"};

Status Invalid(std::string msg) { return Status(StatusCode::kInvalidArgument, std::move(msg)); }

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// A string scalar we add: tagged "!" so that it is always emitted quoted.
YAML::Node Str(const std::string& s) {
  YAML::Node n(s);
  n.SetTag("!");
  return n;
}

YAML::Node StrSeq(const std::vector<std::string>& items) {
  YAML::Node n(YAML::NodeType::Sequence);
  for (const auto& s : items) n.push_back(Str(s));
  return n;
}

bool IsStringTag(const std::string& tag) { return tag == "!" || tag == "tag:yaml.org,2002:str"; }

// A parsed document is a graph: an alias may refer to its own ancestor (a
// cycle) or be repeated into an exponential tree ("billion laughs"). Every
// walk is bounded in depth and in nodes visited.
constexpr int kMaxYamlDepth = 256;
constexpr size_t kMaxYamlNodes = 100000;

// Emits a node keeping the meaning of every scalar: quoted scalars (and
// !!str) are written double-quoted, plain scalars plain, other explicit
// tags verbatim. yaml-cpp's own emitter forgets quoting ('0644' -> 0644).
// False when the walk passes its bounds (`*nodes` counts the nodes visited).
bool EmitNode(YAML::Emitter& out, const YAML::Node& n, int depth, size_t* nodes) {
  if (depth > kMaxYamlDepth || ++*nodes > kMaxYamlNodes) return false;
  switch (n.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      out << YAML::Null;
      return true;
    case YAML::NodeType::Scalar: {
      const std::string& tag = n.Tag();
      if (IsStringTag(tag)) {
        out << YAML::DoubleQuoted << n.Scalar();
      } else if (tag.empty() || tag == "?") {
        out << n.Scalar();
      } else {
        out << YAML::VerbatimTag(tag) << n.Scalar();
      }
      return true;
    }
    case YAML::NodeType::Sequence:
      out << YAML::BeginSeq;
      for (const auto& item : n) {
        if (!EmitNode(out, item, depth + 1, nodes)) return false;
      }
      out << YAML::EndSeq;
      return true;
    case YAML::NodeType::Map:
      out << YAML::BeginMap;
      for (const auto& kv : n) {
        out << YAML::Key;
        if (!EmitNode(out, kv.first, depth + 1, nodes)) return false;
        out << YAML::Value;
        if (!EmitNode(out, kv.second, depth + 1, nodes)) return false;
      }
      out << YAML::EndMap;
      return true;
  }
  return true;
}

bool ScalarIs(const YAML::Node& n, std::string_view value) {
  return n.IsScalar() && n.Scalar() == value;
}

// The sequence under `key`, created when absent or null.
kube::StatusOr<YAML::Node> Sequence(YAML::Node& root, const std::string& key) {
  YAML::Node n = root[key];
  if (!n.IsDefined() || n.IsNull()) {
    root[key] = YAML::Node(YAML::NodeType::Sequence);
    return root[key];
  }
  if (!n.IsSequence()) {
    return Invalid("bootstrap cloud-config: `" + key + "` is not a list");
  }
  return n;
}

bool SameCommand(const YAML::Node& n, const std::vector<std::string>& argv) {
  if (n.IsSequence()) {
    if (n.size() != argv.size()) return false;
    for (size_t i = 0; i < argv.size(); ++i) {
      if (!ScalarIs(n[i], argv[i])) return false;
    }
    return true;
  }
  if (n.IsScalar()) {
    std::string joined;
    for (const auto& a : argv) joined += (joined.empty() ? "" : " ") + a;
    return n.Scalar() == joined;
  }
  return false;
}

Status AddGuestAgent(YAML::Node& root) {
  CAPHV_ASSIGN_OR_RETURN(YAML::Node packages, Sequence(root, "packages"));
  bool has_package = std::any_of(packages.begin(), packages.end(), [](const YAML::Node& p) {
    return ScalarIs(p, kGuestAgentPackage) ||
           (p.IsSequence() && p.size() > 0 && ScalarIs(p[0], kGuestAgentPackage));
  });
  if (!has_package) packages.push_back(Str(std::string(kGuestAgentPackage)));

  // Enabling the agent goes first in runcmd: addresses are then reported
  // while the (possibly long) bootstrap commands still run.
  CAPHV_ASSIGN_OR_RETURN(YAML::Node runcmd, Sequence(root, "runcmd"));
  bool has_enable = std::any_of(runcmd.begin(), runcmd.end(), [](const YAML::Node& c) {
    return SameCommand(c, kGuestAgentEnable);
  });
  if (!has_enable) {
    YAML::Node merged(YAML::NodeType::Sequence);
    merged.push_back(StrSeq(kGuestAgentEnable));
    for (const auto& c : runcmd) merged.push_back(c);
    root["runcmd"] = merged;
  }
  return Status::Ok();
}

void AddUnique(YAML::Node seq, const std::string& value) {
  for (const auto& n : seq) {
    if (ScalarIs(n, value)) return;
  }
  seq.push_back(Str(value));
}

Status AddSsh(YAML::Node& root, const UserDataInputs& in) {
  if (!in.ssh_public_key.empty()) {
    CAPHV_ASSIGN_OR_RETURN(YAML::Node keys, Sequence(root, "ssh_authorized_keys"));
    AddUnique(keys, in.ssh_public_key);
  }
  if (in.ssh_user.empty()) return Status::Ok();
  YAML::Node users = root["users"];
  if (!users.IsDefined() || users.IsNull()) {
    // Without `users` cloud-init creates the image's default user; keep it.
    users = YAML::Node(YAML::NodeType::Sequence);
    users.push_back(Str("default"));
    root["users"] = users;
  } else if (!users.IsSequence()) {
    return Invalid("bootstrap cloud-config: `users` is not a list");
  }
  for (YAML::Node u : users) {
    if (u.IsMap() && ScalarIs(u["name"], in.ssh_user)) {
      if (!in.ssh_public_key.empty()) {
        YAML::Node keys = u["ssh_authorized_keys"];
        if (!keys.IsDefined() || keys.IsNull()) {
          u["ssh_authorized_keys"] = YAML::Node(YAML::NodeType::Sequence);
          keys = u["ssh_authorized_keys"];
        }
        if (!keys.IsSequence()) {
          return Invalid("bootstrap cloud-config: ssh_authorized_keys of user " + in.ssh_user +
                         " is not a list");
        }
        AddUnique(keys, in.ssh_public_key);
      }
      return Status::Ok();
    }
  }
  YAML::Node user(YAML::NodeType::Map);
  user["name"] = Str(in.ssh_user);
  user["sudo"] = Str("ALL=(ALL) NOPASSWD:ALL");
  user["shell"] = Str("/bin/bash");
  user["lock_passwd"] = true;
  if (!in.ssh_public_key.empty()) user["ssh_authorized_keys"] = StrSeq({in.ssh_public_key});
  users.push_back(user);
  return Status::Ok();
}

}  // namespace

std::string DetectUserDataFormat(std::string_view data) {
  size_t first = data.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return "empty";
  if (StartsWith(data, "\x1f\x8b")) return "gzip";
  if (StartsWith(data, "#cloud-config-archive")) return "cloud-config-archive";
  if (StartsWith(data, "#cloud-config")) return "cloud-config";
  if (StartsWith(data, "#!")) return "shellscript";
  if (StartsWith(data, "## template:")) return "jinja";
  if (StartsWith(data, "#include")) return "include";
  if (StartsWith(data, "#cloud-boothook")) return "boothook";
  if (StartsWith(data, "#part-handler")) return "part-handler";
  if (StartsWith(data, "Content-Type:") || StartsWith(data, "MIME-Version:")) {
    return "mime-multipart";
  }
  if (data[first] == '{') return "ignition";
  return "unknown";
}

namespace {

constexpr std::string_view kJinjaHeader = "## template: jinja";
constexpr std::string_view kJinjaMark = "caphv-jinja-expression-";

// A `## template: jinja` cloud-config with its Jinja expressions (`{{ ... }}`)
// replaced by marks, so that it can be merged as YAML; Restore puts them
// back. Statements (`{% ... %}`) and comments (`{# ... #}`) may change the
// YAML's structure, so such data is not masked (nullopt, with `why`).
struct MaskedJinja {
  std::string header;  // the first line, newline included
  std::string body;    // the cloud-config with marks
  std::vector<std::string> expressions;

  std::string Restore(std::string text) const {
    for (size_t i = expressions.size(); i-- > 0;) {
      const std::string mark = std::string(kJinjaMark) + std::to_string(i) + "-";
      for (size_t at = text.find(mark); at != std::string::npos; at = text.find(mark, at)) {
        text.replace(at, mark.size(), expressions[i]);
        at += expressions[i].size();
      }
    }
    return text;
  }
};

std::optional<MaskedJinja> MaskJinja(std::string_view data, std::string* why) {
  const size_t eol = data.find('\n');
  std::string_view first = data.substr(0, eol);
  while (!first.empty() && (first.back() == '\r' || first.back() == ' ' || first.back() == '\t')) {
    first.remove_suffix(1);
  }
  if (first != kJinjaHeader || eol == std::string_view::npos) {
    *why = "a Jinja template header other than `## template: jinja` on its own line";
    return std::nullopt;
  }
  std::string_view body = data.substr(eol + 1);
  if (DetectUserDataFormat(body) != "cloud-config") {
    *why = "a Jinja template of something other than #cloud-config";
    return std::nullopt;
  }
  if (body.find("{%") != std::string_view::npos || body.find("{#") != std::string_view::npos) {
    *why = "a Jinja template with statements or comments ({% %}, {# #}), which may change its YAML";
    return std::nullopt;
  }
  if (body.find(kJinjaMark) != std::string_view::npos) {
    *why = "a Jinja template that contains CAPHV's own marker text";
    return std::nullopt;
  }
  MaskedJinja m;
  m.header = std::string(data.substr(0, eol + 1));
  for (size_t pos = 0;;) {
    const size_t open = body.find("{{", pos);
    if (open == std::string_view::npos) {
      m.body.append(body.substr(pos));
      break;
    }
    const size_t close = body.find("}}", open + 2);
    if (close == std::string_view::npos) {
      *why = "a Jinja template with an unterminated {{ expression";
      return std::nullopt;
    }
    m.body.append(body.substr(pos, open - pos));
    m.body += std::string(kJinjaMark) + std::to_string(m.expressions.size()) + "-";
    m.expressions.emplace_back(body.substr(open, close + 2 - open));
    pos = close + 2;
  }
  return m;
}

}  // namespace

kube::StatusOr<UserData> MergeUserData(const UserDataInputs& in) {
  UserData out;
  out.format = in.bootstrap_format == "ignition" ? "ignition" : DetectUserDataFormat(in.bootstrap);
  std::optional<MaskedJinja> jinja;
  if (out.format == "jinja") {
    jinja = MaskJinja(in.bootstrap, &out.not_merged_because);
    if (!jinja) {
      out.text = in.bootstrap;
      return out;
    }
  } else if (out.format != "cloud-config" && out.format != "empty") {
    out.not_merged_because = "user data of format " + out.format + ", which is not #cloud-config";
    out.text = in.bootstrap;
    return out;
  }
  YAML::Node root;
  try {
    root = out.format == "empty" ? YAML::Node() : YAML::Load(jinja ? jinja->body : in.bootstrap);
  } catch (const YAML::Exception& e) {
    return Invalid(std::string("bootstrap cloud-config is not valid YAML: ") + e.what());
  }
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) return Invalid("bootstrap cloud-config is not a YAML mapping");
  if (in.install_guest_agent) CAPHV_RETURN_IF_ERROR(AddGuestAgent(root));
  CAPHV_RETURN_IF_ERROR(AddSsh(root, in));
  YAML::Emitter emitter;
  emitter.SetIndent(2);
  if (size_t nodes = 0; !EmitNode(emitter, root, 0, &nodes)) {
    return Invalid("bootstrap cloud-config nests deeper than " + std::to_string(kMaxYamlDepth) +
                   " levels or expands to more than " + std::to_string(kMaxYamlNodes) +
                   " nodes (an alias that refers to itself or is repeated into a huge tree)");
  }
  if (!emitter.good()) {
    return Status(StatusCode::kInternal, "emitting cloud-config: " + emitter.GetLastError());
  }
  out.text = "#cloud-config\n" + std::string(emitter.c_str()) + "\n";
  if (jinja) {
    out.text = jinja->header + jinja->Restore(std::move(out.text));
  } else {
    out.format = "cloud-config";
  }
  out.merged = true;
  return out;
}

kube::Object BuildCloudInitSecret(const CloudInitSecretInputs& in) {
  kube::Object secret = {
      {"apiVersion", "v1"},
      {"kind", "Secret"},
      {"metadata", {{"name", in.name}, {"namespace", in.namespace_}}},
      {"type", "Opaque"},
      {"data", {{"userdata", kube::Base64Encode(in.user_data)}}},
  };
  if (!in.labels.empty()) secret["metadata"]["labels"] = in.labels;
  if (in.network_data) secret["data"]["networkdata"] = kube::Base64Encode(*in.network_data);
  if (!in.owner_vm_uid.empty()) {
    secret["metadata"]["ownerReferences"] = kube::Object::array({{
        {"apiVersion", "kubevirt.io/v1"},
        {"kind", "VirtualMachine"},
        {"name", in.owner_vm_name},
        {"uid", in.owner_vm_uid},
    }});
  }
  return secret;
}

}  // namespace caphv::harvester
