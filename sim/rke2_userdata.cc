// File: sim/rke2_userdata.cc
//
// Reading a guest's user data (cloud-config, Ignition, gzip) and the RKE2
// config and install command in it. Declarations in sim/rke2.h.

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <regex>

#include "api/yaml.h"
#include "kube/base64.h"
#include "sim/manifests.h"
#include "sim/rke2.h"

namespace caphv::sim {

using kube::Object;
using kube::Status;
using kube::StatusCode;

namespace {

Status Invalid(const std::string& msg) { return Status(StatusCode::kInvalidArgument, msg); }

std::optional<std::string> Base64Loose(std::string_view text) {
  std::string clean;
  clean.reserve(text.size());
  for (char c : text) {
    if (c != '\n' && c != '\r' && c != ' ' && c != '\t') clean.push_back(c);
  }
  return kube::Base64Decode(clean);
}

bool IsGzip(std::string_view d) {
  return d.size() >= 2 && static_cast<unsigned char>(d[0]) == 0x1f &&
         static_cast<unsigned char>(d[1]) == 0x8b;
}

std::string ScalarString(const Object& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

// A config value that RKE2 takes as a string slice: a list, or one string.
std::vector<std::string> StringList(const Object& config, const char* key) {
  std::vector<std::string> out;
  if (!config.contains(key)) return out;
  const Object& v = config[key];
  if (v.is_array()) {
    for (const auto& e : v) out.push_back(ScalarString(e));
  } else if (!v.is_null()) {
    out.push_back(ScalarString(v));
  }
  return out;
}

bool Truthy(const Object& config, const char* key) {
  if (!config.contains(key)) return false;
  const Object& v = config[key];
  return v.is_boolean() ? v.get<bool>() : ScalarString(v) == "true";
}

// write_files content by its cloud-init `encoding`.
kube::StatusOr<std::string> DecodeWriteFile(const std::string& content, const std::string& enc) {
  if (enc.empty() || enc == "text/plain") return content;
  std::string data = content;
  const bool b64 = enc.find("b64") != std::string::npos || enc.find("base64") != std::string::npos;
  const bool gz = enc.starts_with("gz");
  if (b64) {
    auto d = Base64Loose(data);
    if (!d) return Invalid("write_files content is not base64 (encoding " + enc + ")");
    data = *d;
  }
  if (gz) {
    auto d = Gunzip(data);
    if (!d) return Invalid("write_files content is not gzip (encoding " + enc + ")");
    data = *d;
  }
  if (!b64 && !gz) return Invalid("unknown write_files encoding " + enc);
  return data;
}

kube::StatusOr<GuestBoot> ParseCloudConfig(const std::string& text) {
  auto docs = api::ParseYaml(text);
  if (!docs.ok()) return Invalid("cloud-config is not YAML: " + docs.status().message());
  GuestBoot out;
  out.format = "cloud-config";
  if (docs->empty()) return out;
  const Object& cc = docs->front();
  if (!cc.is_object()) return Invalid("cloud-config is not a YAML mapping");
  for (const auto& f : cc.value("write_files", Object::array())) {
    if (!f.is_object()) continue;
    const std::string path = ScalarString(f.value("path", Object()));
    if (path.empty()) continue;
    auto content = DecodeWriteFile(ScalarString(f.value("content", Object(""))),
                                   ScalarString(f.value("encoding", Object(""))));
    if (!content.ok()) return content.status();
    if (f.value("append", false)) {
      out.files[path] += *content;
    } else {
      out.files[path] = *content;
    }
  }
  for (const auto& p : cc.value("packages", Object::array())) {
    // A package is a name, or [name, version].
    if (p.is_array() && !p.empty()) {
      out.packages.push_back(ScalarString(p[0]));
    } else {
      out.packages.push_back(ScalarString(p));
    }
  }
  for (const auto& c : cc.value("runcmd", Object::array())) {
    if (c.is_array()) {
      std::string line;
      for (const auto& a : c) line += (line.empty() ? "" : " ") + ScalarString(a);
      out.commands.push_back(line);
    } else {
      out.commands.push_back(ScalarString(c));
    }
  }
  return out;
}

Status MergeIgnition(const Object& ign, GuestBoot& out, int depth);

kube::StatusOr<std::string> IgnitionResource(const Object& res, const std::string& what) {
  const std::string source = ScalarString(res.value("source", Object("")));
  auto data = DecodeDataUrl(source);
  if (!data) return Invalid(what + ": source is not a data: URL");
  const std::string comp = ScalarString(res.value("compression", Object("")));
  if (comp == "gzip") {
    auto d = Gunzip(*data);
    if (!d) return Invalid(what + ": not gzip data");
    return *d;
  }
  if (!comp.empty()) return Invalid(what + ": unknown compression " + comp);
  return *data;
}

Status MergeIgnitionConfigRef(const Object& res, GuestBoot& out, int depth) {
  auto data = IgnitionResource(res, "ignition.config");
  if (!data.ok()) return data.status();
  auto inner = Object::parse(*data, nullptr, false);
  if (inner.is_discarded() || !inner.is_object()) return Invalid("ignition.config: not JSON");
  return MergeIgnition(inner, out, depth + 1);
}

Status MergeIgnition(const Object& ign, GuestBoot& out, int depth) {
  if (depth > 4) return Invalid("ignition: configs nested too deep");
  const Object& cfg = ign.value("ignition", Object::object()).value("config", Object::object());
  if (cfg.contains("replace") && cfg["replace"].is_object() && cfg["replace"].contains("source")) {
    return MergeIgnitionConfigRef(cfg["replace"], out, depth);  // the rest is ignored
  }
  for (const auto& m : cfg.value("merge", Object::array())) {
    if (Status s = MergeIgnitionConfigRef(m, out, depth); !s.ok()) return s;
  }
  for (const auto& f : ign.value("storage", Object::object()).value("files", Object::array())) {
    const std::string path = f.value("path", "");
    if (path.empty()) continue;
    const Object contents = f.value("contents", Object::object());
    std::string data;
    if (contents.contains("source") && !contents["source"].is_null()) {
      auto d = IgnitionResource(contents, "file " + path);
      if (!d.ok()) return d.status();
      data = *d;
    }
    out.files[path] = data;
  }
  return {};
}

std::string SubstituteJinja(const std::string& text, const std::string& hostname) {
  static const std::regex kHostVar(
      R"(\{\{\s*(ds\.meta_data\.(local_)?hostname|v1\.local_hostname|local_hostname)\s*\}\})");
  return std::regex_replace(text, kHostVar, hostname);
}

std::string Unquote(std::string v) {
  while (!v.empty() && (v.back() == '\'' || v.back() == '"' || v.back() == ';')) v.pop_back();
  while (!v.empty() && (v.front() == '\'' || v.front() == '"')) v.erase(0, 1);
  return v;
}

}  // namespace

std::optional<std::string> Gunzip(std::string_view data) {
  if (data.empty()) return std::nullopt;
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return std::nullopt;  // gzip or zlib header
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buf[16384];
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    out.append(buf, sizeof buf - zs.avail_out);
    if (out.size() > (64u << 20)) rc = Z_MEM_ERROR;  // no guest sends 64 MiB of user data
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) return std::nullopt;
  return out;
}

std::optional<std::string> DecodeDataUrl(std::string_view url) {
  if (!url.starts_with("data:")) return std::nullopt;
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos) return std::nullopt;
  const std::string_view meta = url.substr(5, comma - 5);
  const std::string_view payload = url.substr(comma + 1);
  if (meta.ends_with(";base64")) return Base64Loose(payload);
  std::string out;
  for (size_t i = 0; i < payload.size(); ++i) {
    if (payload[i] != '%') {
      out.push_back(payload[i]);
      continue;
    }
    if (i + 2 >= payload.size()) return std::nullopt;
    const std::string hex(payload.substr(i + 1, 2));
    if (!std::isxdigit(static_cast<unsigned char>(hex[0])) ||
        !std::isxdigit(static_cast<unsigned char>(hex[1]))) {
      return std::nullopt;
    }
    out.push_back(static_cast<char>(std::stoi(hex, nullptr, 16)));
    i += 2;
  }
  return out;
}

kube::StatusOr<GuestBoot> ParseUserData(const std::string& user_data) {
  if (IsGzip(user_data)) {
    auto d = Gunzip(user_data);
    if (!d) return Invalid("user data: broken gzip");
    return ParseUserData(*d);
  }
  const size_t first = user_data.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && user_data[first] == '{') {
    auto ign = Object::parse(user_data, nullptr, false);
    if (ign.is_discarded() || !ign.is_object()) return Invalid("user data: Ignition is not JSON");
    GuestBoot out;
    out.format = "ignition";
    if (Status s = MergeIgnition(ign, out, 0); !s.ok()) return s;
    return out;
  }
  // cloud-init: "#cloud-config" on the first line, or after "## template: jinja".
  std::string_view rest = user_data;
  for (int line = 0; line < 2 && !rest.empty(); ++line) {
    const std::string_view l = rest.substr(0, rest.find('\n'));
    if (l.starts_with("#cloud-config")) return ParseCloudConfig(user_data);
    if (!l.starts_with("## template:")) break;
    rest.remove_prefix(std::min(rest.size(), l.size() + 1));
  }
  return Invalid("user data is neither #cloud-config nor Ignition");
}

bool UserDataRunsGuestAgent(const std::string& user_data, const std::string& hostname) {
  static constexpr std::string_view kAgent = "qemu-guest-agent";
  static const std::regex kInstall(
      R"((apt-get|apt|yum|dnf|tdnf|zypper|apk)\s+(-\S+\s+)*(install|in|add)\b[^\n;&|]*\bqemu-guest-agent\b)");
  std::string data = user_data;
  if (IsGzip(data)) {
    auto d = Gunzip(data);
    if (!d) return false;
    data = *d;
  }
  if (data.starts_with("## template: jinja")) data = SubstituteJinja(data, hostname);
  auto boot = ParseUserData(data);
  if (!boot.ok()) {
    // A shell script (or anything else cloud-init runs as one).
    return data.starts_with("#!") && std::regex_search(data, kInstall);
  }
  for (const auto& p : boot->packages) {
    if (p == kAgent) return true;
  }
  for (const auto& c : boot->commands) {
    if (std::regex_search(c, kInstall)) return true;
  }
  return false;
}

kube::StatusOr<std::optional<Rke2Config>> Rke2FromUserData(const std::string& user_data,
                                                           const std::string& hostname) {
  std::string data = user_data;
  if (IsGzip(data)) {
    auto d = Gunzip(data);
    if (!d) return Invalid("user data: broken gzip");
    data = *d;
  }
  if (data.starts_with("## template: jinja")) data = SubstituteJinja(data, hostname);
  auto boot = ParseUserData(data);
  if (!boot.ok()) {
    // Another format (a script, MIME...) installs no RKE2 the simulator knows of.
    if (data.find(kRke2ConfigPath) == std::string::npos) return std::optional<Rke2Config>();
    return boot.status();
  }
  auto file = boot->files.find(kRke2ConfigPath);
  if (file == boot->files.end()) return std::optional<Rke2Config>();

  Rke2Config c;
  auto docs = api::ParseYaml(file->second);
  if (!docs.ok()) return Invalid(std::string(kRke2ConfigPath) + ": " + docs.status().message());
  if (!docs->empty()) c.config = docs->front();
  if (!c.config.is_object()) return Invalid(std::string(kRke2ConfigPath) + " is not a mapping");

  // The install command: cloud-config runcmd, or Ignition's install script.
  std::vector<std::string> lines = boot->commands;
  if (auto s = boot->files.find("/etc/rke2-install.sh"); s != boot->files.end()) {
    std::string_view text = s->second;
    while (!text.empty()) {
      const size_t nl = text.find('\n');
      lines.emplace_back(text.substr(0, nl));
      text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    }
  }
  static const std::regex kVersion(R"(INSTALL_RKE2_VERSION=["']?([^\s"';|]+))");
  static const std::regex kType(R"(INSTALL_RKE2_TYPE=["']?(server|agent)\b)");
  std::string type_hint;
  for (const auto& l : lines) {
    std::smatch m;
    if (std::regex_search(l, m, kVersion)) c.version = Unquote(m[1]);
    if (std::regex_search(l, m, kType)) c.role = m[1];
    if (l.find("get.rke2.io") != std::string::npos || l.find("install.sh") != std::string::npos) {
      if (c.role.empty() && l.find("sh -s - server") != std::string::npos) c.role = "server";
      if (type_hint.empty()) type_hint = "server";  // the installer's default type
    }
    if (l.find("rke2-server.service") != std::string::npos) type_hint = "server";
    if (l.find("rke2-agent.service") != std::string::npos) type_hint = "agent";
  }
  if (c.role.empty()) c.role = type_hint;
  static const std::regex kEcho(R"re(echo\s+"([^"]*)")re");
  for (const auto& l : lines) {
    if (l.find("INSTALL_RKE2_") != std::string::npos ||
        l.find("get.rke2.io") != std::string::npos || l.find("install.sh") != std::string::npos) {
      break;  // what comes after runs on an installed RKE2
    }
    if (l.find("/proc/sys/crypto/fips_enabled") != std::string::npos &&
        l.find("exit") != std::string::npos) {
      c.fips_gate = l;
      std::smatch m;
      if (std::regex_search(l, m, kEcho)) c.fips_gate_message = m[1];
      break;
    }
  }
  if (c.role.empty()) {
    return Invalid(std::string(kRke2ConfigPath) + " is written but no command installs RKE2");
  }

  const Object& cfg = c.config;
  c.token = ScalarString(cfg.value("token", Object("")));
  c.server = ScalarString(cfg.value("server", Object("")));
  c.node_name = ScalarString(cfg.value("node-name", Object("")));
  c.cloud_provider_name = ScalarString(cfg.value("cloud-provider-name", Object("")));
  c.disable_cloud_controller = Truthy(cfg, "disable-cloud-controller");
  c.node_labels = StringList(cfg, "node-label");
  c.node_taints = StringList(cfg, "node-taint");
  c.tls_san = StringList(cfg, "tls-san");
  if (auto ca = boot->files.find(kEtcdServerCaPath); ca != boot->files.end()) {
    c.etcd_server_ca = ca->second;
  }
  if (auto key = boot->files.find(kEtcdServerCaKeyPath); key != boot->files.end()) {
    c.etcd_server_ca_key = key->second;
  }
  if (c.role == "server") {
    c.etcd = !Truthy(cfg, "disable-etcd");
    c.control_plane = !Truthy(cfg, "disable-apiserver");
  }
  return std::optional<Rke2Config>(std::move(c));
}

}  // namespace caphv::sim
