#include "kube/config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kube/base64.h"

namespace caphv::kube {

namespace {

namespace fs = std::filesystem;

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kInvalidArgument, "cannot read file " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Resolve(const std::string& path, const std::string& base_dir) {
  if (path.empty() || fs::path(path).is_absolute() || base_dir.empty()) return path;
  return (fs::path(base_dir) / path).string();
}

std::string Str(const YAML::Node& n, const char* key) {
  if (!n || !n.IsMap() || !n[key] || !n[key].IsScalar()) return {};
  return n[key].as<std::string>();
}

// Finds the entry named `name` in a kubeconfig list (clusters, users, contexts)
// and returns its inner map (e.g. the value of "cluster").
YAML::Node FindNamed(const YAML::Node& list, const std::string& name, const char* inner) {
  if (!list || !list.IsSequence()) return {};
  for (const auto& item : list) {
    // A missing key of a const node is an invalid node that throws when
    // used: an entry without its inner map is "not found".
    if (Str(item, "name") == name) return item[inner].IsDefined() ? item[inner] : YAML::Node();
  }
  return {};
}

// Data from `<key>-data` (base64) or from the file named by `<key>`.
StatusOr<std::string> DataOrFile(const YAML::Node& n, const std::string& key,
                                 const std::string& base_dir) {
  std::string data = Str(n, (key + "-data").c_str());
  if (!data.empty()) {
    auto decoded = Base64Decode(data);
    if (!decoded) return Status(StatusCode::kInvalidArgument, key + "-data is not valid base64");
    return *decoded;
  }
  std::string file = Str(n, key.c_str());
  if (file.empty()) return std::string();
  return ReadFile(Resolve(file, base_dir));
}

}  // namespace

StatusOr<std::string> TokenFile::Token() {
  std::lock_guard lock(mu_);
  auto now = std::chrono::steady_clock::now();
  if (!token_.empty() && now - read_at_ < std::chrono::minutes(1)) return token_;
  auto content = ReadFile(path_);
  if (!content.ok()) {
    if (!token_.empty()) return token_;  // keep the last good token
    return content.status();
  }
  std::string t = *content;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  token_ = t;
  read_at_ = now;
  return token_;
}

StatusOr<std::string> RestConfig::BearerToken() const {
  if (token_file) return token_file->Token();
  return token;
}

namespace {

StatusOr<RestConfig> LoadKubeconfig(const std::string& yaml, const std::string& base_dir,
                                    const std::string& context, bool inline_only);

}  // namespace

StatusOr<RestConfig> LoadKubeconfigString(const std::string& yaml, const std::string& base_dir,
                                          const std::string& context) {
  return LoadKubeconfig(yaml, base_dir, context, /*inline_only=*/false);
}

StatusOr<RestConfig> LoadInlineKubeconfig(const std::string& yaml) {
  return LoadKubeconfig(yaml, "/nonexistent", {}, /*inline_only=*/true);
}

namespace {

StatusOr<RestConfig> LoadKubeconfigUnguarded(const std::string& yaml, const std::string& base_dir,
                                             const std::string& context, bool inline_only);

// A kubeconfig may come from a tenant's Secret: whatever yaml-cpp throws on
// a document of an unexpected shape is an invalid kubeconfig, never an
// exception out of the manager's reconcile.
StatusOr<RestConfig> LoadKubeconfig(const std::string& yaml, const std::string& base_dir,
                                    const std::string& context, bool inline_only) {
  try {
    return LoadKubeconfigUnguarded(yaml, base_dir, context, inline_only);
  } catch (const YAML::Exception& e) {
    return Status(StatusCode::kInvalidArgument,
                  std::string("kubeconfig is not valid: ") + e.what());
  }
}

StatusOr<RestConfig> LoadKubeconfigUnguarded(const std::string& yaml, const std::string& base_dir,
                                             const std::string& context, bool inline_only) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return Status(StatusCode::kInvalidArgument,
                  std::string("kubeconfig is not valid YAML: ") + e.what());
  }
  if (!root.IsMap()) return Status(StatusCode::kInvalidArgument, "kubeconfig is not a YAML map");
  std::string ctx_name = context.empty() ? Str(root, "current-context") : context;
  if (ctx_name.empty())
    return Status(StatusCode::kInvalidArgument, "kubeconfig has no current-context");
  YAML::Node ctx = FindNamed(root["contexts"], ctx_name, "context");
  if (!ctx.IsMap())
    return Status(StatusCode::kInvalidArgument, "kubeconfig has no context \"" + ctx_name + "\"");
  std::string cluster_name = Str(ctx, "cluster");
  std::string user_name = Str(ctx, "user");
  YAML::Node cluster = FindNamed(root["clusters"], cluster_name, "cluster");
  if (!cluster.IsMap()) {
    return Status(StatusCode::kInvalidArgument,
                  "kubeconfig has no cluster \"" + cluster_name + "\"");
  }
  YAML::Node user = FindNamed(root["users"], user_name, "user");

  if (inline_only) {
    // Checked before anything is read.
    auto refuse = [](const std::string& where, const std::string& field, const char* why) {
      return Status(StatusCode::kInvalidArgument,
                    "kubeconfig " + where + " sets `" + field + "`: " + why +
                        "; a kubeconfig in a Secret must carry its credentials inline");
    };
    const char* kFile = "it names a file on the manager's filesystem, which is never read";
    if (!Str(cluster, "certificate-authority").empty()) {
      return refuse("cluster \"" + cluster_name + "\"", "certificate-authority", kFile);
    }
    if (user.IsMap()) {
      const std::string where = "user \"" + user_name + "\"";
      for (const char* field : {"client-certificate", "client-key", "tokenFile"}) {
        if (!Str(user, field).empty()) return refuse(where, field, kFile);
      }
      for (const char* field : {"exec", "auth-provider"}) {
        if (user[field]) {
          return refuse(where, field, "it runs a program or plugin, which is never started");
        }
      }
    }
  }

  RestConfig c;
  c.server = Str(cluster, "server");
  while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();
  if (c.server.empty())
    return Status(StatusCode::kInvalidArgument, "kubeconfig cluster has no server");
  c.insecure_skip_tls_verify = Str(cluster, "insecure-skip-tls-verify") == "true";
  c.tls_server_name = Str(cluster, "tls-server-name");
  CAPHV_ASSIGN_OR_RETURN(c.ca_pem, DataOrFile(cluster, "certificate-authority", base_dir));
  if (c.insecure_skip_tls_verify && !c.ca_pem.empty()) {
    // client-go's rule (rest.Config validation).
    return Status(StatusCode::kInvalidArgument,
                  "kubeconfig cluster \"" + cluster_name +
                      "\": specifying a root certificates file with the insecure flag is not "
                      "allowed");
  }
  if (user.IsMap()) {
    CAPHV_ASSIGN_OR_RETURN(c.client_cert_pem, DataOrFile(user, "client-certificate", base_dir));
    CAPHV_ASSIGN_OR_RETURN(c.client_key_pem, DataOrFile(user, "client-key", base_dir));
    c.token = Str(user, "token");
    std::string token_file = Str(user, "tokenFile");
    if (!token_file.empty())
      c.token_file = std::make_shared<TokenFile>(Resolve(token_file, base_dir));
    if (user["exec"] || user["auth-provider"]) {
      return Status(StatusCode::kInvalidArgument,
                    "kubeconfig user \"" + user_name +
                        "\" uses an exec or auth-provider plugin, which is not supported; use a "
                        "token or client certificate");
    }
  }
  if (std::string ns = Str(ctx, "namespace"); !ns.empty()) c.default_namespace = ns;
  return c;
}

}  // namespace

StatusOr<RestConfig> LoadKubeconfigFile(const std::string& path, const std::string& context) {
  // KUBECONFIG may be a colon-separated list: take the first file that exists.
  std::stringstream ss(path);
  std::string item;
  while (std::getline(ss, item, ':')) {
    if (item.empty() || !fs::exists(item)) continue;
    CAPHV_ASSIGN_OR_RETURN(std::string content, ReadFile(item));
    auto cfg = LoadKubeconfigString(content, fs::path(item).parent_path().string(), context);
    if (!cfg.ok()) return cfg.status().WithContext(item);
    return cfg;
  }
  return Status(StatusCode::kInvalidArgument, "kubeconfig file not found: " + path);
}

StatusOr<RestConfig> InClusterConfig(const std::string& root) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0') {
    return Status(StatusCode::kInvalidArgument,
                  "not running in a cluster: KUBERNETES_SERVICE_HOST is not set");
  }
  std::string dir = (fs::path(root) / "var/run/secrets/kubernetes.io/serviceaccount").string();
  RestConfig c;
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6 literal
  c.server = "https://" + h + ":" + port;
  CAPHV_ASSIGN_OR_RETURN(c.ca_pem, ReadFile(dir + "/ca.crt"));
  c.token_file = std::make_shared<TokenFile>(dir + "/token");
  CAPHV_RETURN_IF_ERROR(c.token_file->Token().status());
  if (auto ns = ReadFile(dir + "/namespace"); ns.ok() && !ns->empty()) c.default_namespace = *ns;
  return c;
}

StatusOr<RestConfig> LoadDefaultConfig(const std::string& flag_path, const std::string& context) {
  if (!flag_path.empty()) return LoadKubeconfigFile(flag_path, context);
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    return LoadKubeconfigFile(env, context);
  }
  if (std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) return InClusterConfig();
  if (const char* home = std::getenv("HOME"); home != nullptr) {
    std::string p = std::string(home) + "/.kube/config";
    if (fs::exists(p)) return LoadKubeconfigFile(p, context);
  }
  return Status(StatusCode::kInvalidArgument,
                "no kubeconfig: pass --kubeconfig, set KUBECONFIG, or run in a cluster");
}

}  // namespace caphv::kube
