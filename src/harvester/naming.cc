// File: harvester/naming.cc

#include "harvester/naming.h"

#include <algorithm>
#include <cctype>

#include "kube/digest.h"

namespace caphv::harvester {

std::string HexHash(std::string_view data, size_t hex_chars) {
  std::string out = kube::Sha256Hex(data);
  out.resize(std::min(out.size(), hex_chars));
  return out;
}

std::string ClusterId(const ClusterIdentity& cluster) {
  // Length-prefixed fields: ("a", "b/c") and ("a/b", "c") hash differently.
  std::string key;
  for (const std::string* s :
       {&cluster.management_cluster_id, &cluster.namespace_, &cluster.name}) {
    key += std::to_string(s->size());
    key += ':';
    key += *s;
  }
  return HexHash(key, 20);
}

std::string ManagementClusterIdOf(const std::map<std::string, std::string>& annotations,
                                  const std::string& current) {
  auto it = annotations.find(std::string(kAnnotationManagementClusterId));
  return it != annotations.end() && !it->second.empty() ? it->second : current;
}

namespace {

std::string TrimDashes(std::string_view s) {
  size_t b = s.find_first_not_of('-');
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of('-');
  return std::string(s.substr(b, e - b + 1));
}

}  // namespace

std::string Rfc1035Name(const std::vector<std::string>& parts) {
  std::string joined;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) joined += '-';
    joined += parts[i];
  }
  for (char& c : joined) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) c = '-';
  }
  joined = TrimDashes(joined);
  if (joined.empty() || !(joined[0] >= 'a' && joined[0] <= 'z')) joined = "a-" + joined;
  if (joined.size() > 63) joined.resize(63);
  return TrimDashes(joined);
}

std::string NameWithHash(std::string_view base, std::string_view seed, size_t max_len) {
  std::string suffix = "-" + HexHash(seed, 5);
  std::string b(base);
  if (b.size() + suffix.size() > max_len) {
    b.resize(max_len > suffix.size() ? max_len - suffix.size() : 0);
    b = TrimDashes(b);
  }
  return b + suffix;
}

std::map<std::string, std::string> ClusterLabels(const ClusterIdentity& cluster) {
  return {
      {std::string(kLabelClusterName), cluster.name},
      {std::string(kLabelClusterId), ClusterId(cluster)},
      {std::string(kLabelManagedBy), std::string(kManagedByValue)},
  };
}

std::string ClusterSelector(const ClusterIdentity& cluster) {
  std::string out;
  for (const auto& [k, v] : ClusterLabels(cluster)) {
    if (!out.empty()) out += ',';
    out += k + "=" + v;
  }
  return out;
}

bool OwnedBy(const std::map<std::string, std::string>& labels, const ClusterIdentity& cluster) {
  auto it = labels.find(std::string(kLabelClusterId));
  return it != labels.end() && it->second == ClusterId(cluster);
}

std::string CloudInitSecretName(std::string_view vm_name) {
  return std::string(vm_name) + "-cloud-init";
}

std::pair<std::string, std::string> SplitQualifiedName(std::string_view ref,
                                                       std::string_view default_namespace) {
  size_t slash = ref.find('/');
  if (slash == std::string_view::npos) {
    return {std::string(default_namespace), std::string(ref)};
  }
  return {std::string(ref.substr(0, slash)), std::string(ref.substr(slash + 1))};
}

std::string QualifiedName(std::string_view ref, std::string_view default_namespace) {
  auto [ns, name] = SplitQualifiedName(ref, default_namespace);
  return ns + "/" + name;
}

bool IsDns1123Label(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s) {
    if (!alnum(c) && c != '-') return false;
  }
  return true;
}

bool IsDns1123Subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (!IsDns1123Label(label)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::string LbPoolName(const std::string& hc_namespace, const std::string& hc_name) {
  return Rfc1035Name({hc_namespace, hc_name, "lb-ippool"});
}

std::string LegacyLbPoolName(const std::string& hc_namespace, const std::string& hc_name) {
  return Rfc1035Name({hc_namespace, hc_name, "ippool"});
}

std::string VmPoolName(const std::string& hc_namespace, const std::string& hc_name) {
  return Rfc1035Name({hc_namespace, hc_name, "vm-ippool"});
}

}  // namespace caphv::harvester
