// File: harvester/cloud_provider.cc

#include "harvester/cloud_provider.h"

#include <yaml-cpp/yaml.h>

#include "api/yaml.h"
#include "kube/base64.h"

namespace caphv::harvester {
namespace {

using kube::Object;

kube::Status Invalid(std::string msg) {
  return kube::Status(kube::StatusCode::kInvalidArgument, std::move(msg));
}

Object Meta(const std::string& name, const std::string& ns, const ClusterIdentity& cluster) {
  Object meta = {{"name", name}, {"labels", ClusterLabels(cluster)}};
  if (!ns.empty()) meta["namespace"] = ns;
  return meta;
}

Object Binding(const char* kind, const std::string& name, const std::string& ns,
               std::string_view role, const CloudProviderNames& names,
               const std::string& target_namespace, const ClusterIdentity& cluster) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", kind},
          {"metadata", Meta(name, ns, cluster)},
          {"roleRef",
           {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", role}}},
          {"subjects",
           {{{"kind", "ServiceAccount"},
             {"name", names.service_account},
             {"namespace", target_namespace}}}}};
}

}  // namespace

CloudProviderNames CloudProviderNamesFor(const ClusterIdentity& cluster,
                                         const std::string& target_namespace) {
  CloudProviderNames n;
  // 63 - len("-token") leaves the token Secret a valid label-length name too.
  n.service_account = NameWithHash(Rfc1035Name({"caphv", cluster.name}), ClusterId(cluster), 57);
  n.token_secret = n.service_account + "-token";
  n.role_binding = target_namespace + "-" + n.service_account;
  n.cluster_role_binding = target_namespace + "-" + n.service_account;
  return n;
}

std::vector<Object> BuildCloudProviderObjects(const CloudProviderInputs& in) {
  const auto names = CloudProviderNamesFor(in.cluster, in.target_namespace);
  std::vector<Object> out;
  out.push_back({{"apiVersion", "v1"},
                 {"kind", "ServiceAccount"},
                 {"metadata", Meta(names.service_account, in.target_namespace, in.cluster)}});
  out.push_back(Binding("RoleBinding", names.role_binding, in.target_namespace,
                        kCloudProviderClusterRole, names, in.target_namespace, in.cluster));
  if (in.csi) {
    out.push_back(Binding("ClusterRoleBinding", names.cluster_role_binding, "",
                          kCsiDriverClusterRole, names, in.target_namespace, in.cluster));
  }
  Object secret = {{"apiVersion", "v1"},
                   {"kind", "Secret"},
                   {"metadata", Meta(names.token_secret, in.target_namespace, in.cluster)},
                   {"type", "kubernetes.io/service-account-token"}};
  secret["metadata"]["annotations"] = {
      {"kubernetes.io/service-account.name", names.service_account}};
  if (!in.service_account_uid.empty()) {
    secret["metadata"]["annotations"]["kubernetes.io/service-account.uid"] = in.service_account_uid;
    secret["metadata"]["ownerReferences"] = Object::array({{{"apiVersion", "v1"},
                                                            {"kind", "ServiceAccount"},
                                                            {"name", names.service_account},
                                                            {"uid", in.service_account_uid}}});
  }
  out.push_back(secret);
  return out;
}

kube::StatusOr<std::string> BuildCloudConfigKubeconfig(const std::string& token,
                                                       const std::string& ca_pem,
                                                       const std::string& server,
                                                       const std::string& target_namespace) {
  if (token.empty()) return Invalid("cloud-config: the token is empty");
  if (ca_pem.empty()) return Invalid("cloud-config: the CA certificate is empty");
  if (target_namespace.empty()) return Invalid("cloud-config: the namespace is empty");
  if (server.rfind("https://", 0) != 0 || server.size() <= 8) {
    return Invalid("cloud-config: server \"" + server + "\" is not an https:// URL");
  }
  YAML::Emitter out;
  out.SetIndent(2);
  auto q = [&](const std::string& s) -> YAML::Emitter& { return out << YAML::DoubleQuoted << s; };
  out << YAML::BeginMap;
  out << YAML::Key << "apiVersion" << YAML::Value << "v1";
  out << YAML::Key << "kind" << YAML::Value << "Config";
  out << YAML::Key << "clusters" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << "default";
  out << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "server" << YAML::Value;
  q(server);
  out << YAML::Key << "certificate-authority-data" << YAML::Value;
  q(kube::Base64Encode(ca_pem));
  out << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  out << YAML::Key << "contexts" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << "default";
  out << YAML::Key << "context" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "cluster" << YAML::Value << "default";
  out << YAML::Key << "namespace" << YAML::Value;
  q(target_namespace);
  out << YAML::Key << "user" << YAML::Value << "default";
  out << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  out << YAML::Key << "current-context" << YAML::Value << "default";
  out << YAML::Key << "users" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << "default";
  out << YAML::Key << "user" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "token" << YAML::Value;
  q(token);
  out << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

kube::StatusOr<std::string> CloudConfigFromTokenSecret(const Object& secret,
                                                       const std::string& server,
                                                       const std::string& target_namespace) {
  auto field = [&](const char* key) -> std::optional<std::string> {
    if (!secret.is_object() || !secret.contains("data") || !secret["data"].is_object()) {
      return std::nullopt;
    }
    const auto& data = secret["data"];
    if (!data.contains(key) || !data[key].is_string()) return std::nullopt;
    return kube::Base64Decode(data[key].get<std::string>());
  };
  auto token = field("token");
  auto ca = field("ca.crt");
  if (!token || token->empty() || !ca || ca->empty()) {
    return kube::Status(kube::StatusCode::kUnavailable,
                        "the service account token Secret has no token and ca.crt yet (filled "
                        "by the token controller of kube-controller-manager)");
  }
  return BuildCloudConfigKubeconfig(*token, *ca, server, target_namespace);
}

namespace {

// The documents of a YAML stream as exact substrings: the text between
// separator lines ("---", optionally followed by blanks or a comment). The
// newline before a separator belongs to the separator, so joining the
// pieces with "\n---\n" gives the stream back.
std::vector<std::string> SplitDocuments(const std::string& text) {
  std::vector<std::string> docs;
  size_t start = 0;  // start of the current document
  size_t line = 0;   // start of the current line
  while (line <= text.size()) {
    size_t eol = text.find('\n', line);
    if (eol == std::string::npos) eol = text.size();
    std::string_view l(text.data() + line, eol - line);
    bool separator = l.substr(0, 3) == "---";
    if (separator) {
      size_t rest = l.find_first_not_of(" \t\r", 3);
      separator = l.size() == 3 || (l.find_first_of(" \t\r", 3) == 3 &&
                                    (rest == std::string_view::npos || l[rest] == '#'));
    }
    if (separator) {
      docs.push_back(line > start ? text.substr(start, line - 1 - start) : std::string());
      start = eol + 1;
    }
    line = eol + 1;
  }
  docs.push_back(start < text.size() ? text.substr(start) : std::string());
  return docs;
}

bool IsBlank(std::string_view text) {
  return text.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

bool IsTargetSecret(const Object& doc, const std::string& name) {
  if (!doc.is_object() || doc.value("kind", Object()) != "Secret") return false;
  auto meta = doc.find("metadata");
  if (meta == doc.end() || !meta->is_object() || meta->value("name", Object()) != name) {
    return false;
  }
  Object ns = meta->value("namespace", Object());
  return ns.is_null() || ns == "" || ns == "kube-system";
}

std::string WithoutTrailingNewline(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

}  // namespace

kube::StatusOr<std::string> InjectCloudConfig(const std::string& manifests,
                                              const std::string& secret_name,
                                              const std::string& secret_key,
                                              const std::string& cloud_config) {
  const std::string encoded = kube::Base64Encode(cloud_config);
  std::vector<std::string> docs;
  bool found = false;
  int index = 0;
  for (std::string& text : SplitDocuments(manifests)) {
    if (IsBlank(text)) continue;
    ++index;
    auto parsed = api::ParseYaml(text);
    if (!parsed.ok()) {
      return Invalid("manifests document " + std::to_string(index) +
                     " is not valid YAML: " + parsed.status().message());
    }
    if (parsed->size() != 1 || !IsTargetSecret(parsed->front(), secret_name)) {
      docs.push_back(std::move(text));
      continue;
    }
    found = true;
    Object secret = std::move(parsed->front());
    if (!secret.contains("data") || !secret["data"].is_object()) secret["data"] = Object::object();
    secret["data"][secret_key] = encoded;
    if (secret.contains("stringData") && secret["stringData"].is_object()) {
      secret["stringData"].erase(secret_key);
      if (secret["stringData"].empty()) secret.erase("stringData");
    }
    docs.push_back(WithoutTrailingNewline(api::ToYaml(secret)));
  }
  if (!found) {
    Object secret = {{"apiVersion", "v1"},
                     {"kind", "Secret"},
                     {"metadata", {{"name", secret_name}, {"namespace", "kube-system"}}},
                     {"type", "Opaque"},
                     {"data", {{secret_key, encoded}}}};
    // No blank line before the separator, unless the trailing newlines are
    // content (a block scalar with keep chomping).
    if (!docs.empty() && docs.back().find("|+") == std::string::npos &&
        docs.back().find(">+") == std::string::npos) {
      docs.back() = WithoutTrailingNewline(docs.back());
    }
    docs.push_back(WithoutTrailingNewline(api::ToYaml(secret)));
  }
  std::string out;
  for (size_t i = 0; i < docs.size(); ++i) out += (i ? "\n---\n" : "") + docs[i];
  if (out.back() != '\n' && (IsBlank(manifests) || manifests.back() == '\n')) out += '\n';
  return out;
}

}  // namespace caphv::harvester
