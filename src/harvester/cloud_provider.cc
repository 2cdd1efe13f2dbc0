// File: harvester/cloud_provider.cc

#include "harvester/cloud_provider.h"

#include <yaml-cpp/yaml.h>

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

}  // namespace caphv::harvester
