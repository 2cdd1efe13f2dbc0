// File: backup/backup.cc

#include "backup/backup.h"

#include <algorithm>
#include <deque>

#include "api/yaml.h"
#include "harvester/load_balancer.h"
#include "kube/json_path.h"

namespace caphv::backup {
namespace {

using kube::LabelsOf;
using kube::Object;

constexpr std::string_view kCapiGroup = "cluster.x-k8s.io";
constexpr std::string_view kAddonsGroup = "addons.cluster.x-k8s.io";
constexpr std::string_view kInfraGroup = "infrastructure.cluster.x-k8s.io";

std::string StringAt(const Object& o, kube::FieldPath path) {
  return std::string(kube::StringAt(o, path));
}

// The object at `path` under `o`; an empty object when there is none.
Object ObjectAt(const Object& o, kube::FieldPath path) {
  const Object* v = kube::Find(o, path);
  return v != nullptr && v->is_object() ? *v : Object::object();
}

bool Is(const ObjectRef& r, std::string_view group, std::string_view kind) {
  return r.group == group && r.kind == kind;
}

// Every {kind, name} object under `node`.
void WalkRefs(const Object& node, const std::string& ns, std::vector<ObjectRef>& out) {
  if (node.is_array()) {
    for (const auto& v : node) WalkRefs(v, ns, out);
    return;
  }
  if (!node.is_object()) return;
  auto kind = node.find("kind");
  auto name = node.find("name");
  if (kind != node.end() && kind->is_string() && name != node.end() && name->is_string() &&
      !kind->get<std::string>().empty() && !name->get<std::string>().empty()) {
    auto api_version = node.find("apiVersion");
    auto ref_ns = node.find("namespace");
    out.push_back(
        {api_version != node.end() && api_version->is_string()
             ? GroupOf(api_version->get<std::string>())
             : std::string(),
         kind->get<std::string>(),
         ref_ns != node.end() && ref_ns->is_string() && !ref_ns->get<std::string>().empty()
             ? ref_ns->get<std::string>()
             : ns,
         name->get<std::string>()});
  }
  for (const auto& [key, v] : node.items()) {
    if (v.is_structured()) WalkRefs(v, ns, out);
  }
}

// Whether the reference `ref` (group possibly unknown) names `target`.
bool Names(const ObjectRef& ref, const ObjectRef& target) {
  return ref.kind == target.kind && ref.ns == target.ns && ref.name == target.name &&
         (ref.group.empty() || ref.group == target.group);
}

bool OwnedBy(const std::string& owner, const std::string& key) {
  return owner == key || (owner.size() > key.size() && owner.compare(0, key.size(), key) == 0 &&
                          owner[key.size()] == '@');
}

}  // namespace

Object StripForBackup(Object o) {
  if (!o.is_object()) return o;
  o.erase("status");
  auto md = o.find("metadata");
  if (md != o.end() && md->is_object()) {
    for (const char* key : {"resourceVersion", "generation", "managedFields", "selfLink"}) {
      md->erase(key);
    }
  }
  return o;
}

std::vector<ObjectRef> ReferencesOf(const Object& o) {
  std::vector<ObjectRef> out;
  if (!o.is_object()) return out;
  const ObjectRef self = RefOf(o);
  const std::string& ns = self.ns;
  auto spec = o.find("spec");
  if (spec == o.end() || !spec->is_object()) return out;
  WalkRefs(*spec, ns, out);
  if (Is(self, kInfraGroup, "HarvesterCluster")) {
    const std::string name = StringAt(*spec, {"identitySecret", "name"});
    const std::string secret_ns = StringAt(*spec, {"identitySecret", "namespace"});
    if (!name.empty()) out.push_back({"", "Secret", secret_ns.empty() ? ns : secret_ns, name});
  }
  // A Machine's, and a MachineSet's or MachineDeployment's template's,
  // bootstrap data.
  for (const auto& secret :
       {StringAt(*spec, {"bootstrap", "dataSecretName"}),
        StringAt(*spec, {"template", "spec", "bootstrap", "dataSecretName"})}) {
    if (!secret.empty() && self.group == kCapiGroup) out.push_back({"", "Secret", ns, secret});
  }
  if (Is(self, kCapiGroup, "Cluster")) {
    std::string cls = StringAt(*spec, {"topology", "class"});
    std::string cls_ns = StringAt(*spec, {"topology", "classNamespace"});
    if (cls.empty()) {  // v1beta2
      cls = StringAt(*spec, {"topology", "classRef", "name"});
      cls_ns = StringAt(*spec, {"topology", "classRef", "namespace"});
    }
    if (!cls.empty()) {
      out.push_back({std::string(kCapiGroup), "ClusterClass", cls_ns.empty() ? ns : cls_ns, cls});
    }
  }
  if (Is(self, kAddonsGroup, "ClusterResourceSetBinding")) {
    auto bindings = spec->find("bindings");
    if (bindings != spec->end() && bindings->is_array()) {
      for (const auto& b : *bindings) {
        const std::string crs = StringAt(b, {"clusterResourceSetName"});
        if (!crs.empty()) out.push_back({std::string(kAddonsGroup), "ClusterResourceSet", ns, crs});
      }
    }
  }
  return out;
}

bool SelectorMatches(const Object& selector, const std::map<std::string, std::string>& labels) {
  if (!selector.is_object()) return true;
  if (auto ml = selector.find("matchLabels"); ml != selector.end() && ml->is_object()) {
    for (const auto& [k, v] : ml->items()) {
      auto it = labels.find(k);
      if (it == labels.end() || !v.is_string() || it->second != v.get<std::string>()) return false;
    }
  }
  if (auto me = selector.find("matchExpressions"); me != selector.end() && me->is_array()) {
    for (const auto& e : *me) {
      const std::string key = StringAt(e, {"key"});
      const std::string op = StringAt(e, {"operator"});
      std::set<std::string> values;
      if (auto vs = e.find("values"); vs != e.end() && vs->is_array()) {
        for (const auto& v : *vs) {
          if (v.is_string()) values.insert(v.get<std::string>());
        }
      }
      auto it = labels.find(key);
      const bool has = it != labels.end();
      if (op == "In" && !(has && values.contains(it->second))) return false;
      if (op == "NotIn" && has && values.contains(it->second)) return false;
      if (op == "Exists" && !has) return false;
      if (op == "DoesNotExist" && has) return false;
      if (op != "In" && op != "NotIn" && op != "Exists" && op != "DoesNotExist") return false;
    }
  }
  return true;
}

Selection Select(const std::vector<Object>& objects, std::string_view cluster) {
  Selection out;
  std::vector<bool> chosen(objects.size(), cluster.empty());
  if (!cluster.empty()) {
    std::vector<ObjectRef> refs;
    std::map<std::string, std::vector<size_t>> children;  // owner uid -> objects
    refs.reserve(objects.size());
    for (size_t i = 0; i < objects.size(); ++i) {
      refs.push_back(RefOf(objects[i]));
      for (const auto& o : OwnerReferencesOf(objects[i])) {
        children[StringField(o, "uid")].push_back(i);
      }
    }
    std::deque<size_t> todo;
    auto choose = [&](size_t i) {
      if (chosen[i]) return;
      chosen[i] = true;
      todo.push_back(i);
    };
    // The Clusters of that name and what names them.
    for (size_t i = 0; i < objects.size(); ++i) {
      const Object& o = objects[i];
      const bool the_cluster = Is(refs[i], kCapiGroup, "Cluster") && refs[i].name == cluster;
      const auto labels = LabelsOf(o);
      const auto label = labels.find(kClusterNameLabel);
      const bool labelled = label != labels.end() && label->second == cluster;
      const bool named = StringAt(o, {"spec", "clusterName"}) == cluster;
      if (the_cluster || labelled || named) choose(i);
    }
    // The ClusterResourceSets whose selector matches one of those Clusters
    // (an empty selector selects no Cluster).
    for (size_t c = 0; c < objects.size(); ++c) {
      if (!chosen[c] || !Is(refs[c], kCapiGroup, "Cluster") || refs[c].name != cluster) continue;
      const auto labels = LabelsOf(objects[c]);
      for (size_t i = 0; i < objects.size(); ++i) {
        if (!Is(refs[i], kAddonsGroup, "ClusterResourceSet") || refs[i].ns != refs[c].ns) continue;
        const Object selector = ObjectAt(objects[i], {"spec", "clusterSelector"});
        if (selector.empty()) continue;
        if (SelectorMatches(selector, labels)) choose(i);
      }
    }
    // Then what they refer to and what they own.
    while (!todo.empty()) {
      const size_t i = todo.front();
      todo.pop_front();
      for (const auto& ref : ReferencesOf(objects[i])) {
        for (size_t j = 0; j < objects.size(); ++j) {
          if (!chosen[j] && Names(ref, refs[j])) choose(j);
        }
      }
      const std::string uid = kube::UidOf(objects[i]);
      if (auto it = children.find(uid); !uid.empty() && it != children.end()) {
        for (size_t j : it->second) choose(j);
      }
    }
  }
  for (size_t i = 0; i < objects.size(); ++i) {
    if (!chosen[i]) continue;
    out.objects.push_back(objects[i]);
    for (auto& ref : ReferencesOf(objects[i])) {
      if (ref.group.empty() && ref.kind == "Secret") out.secrets.insert(ref);
      if (ref.group.empty() && ref.kind == "ConfigMap") out.config_maps.insert(ref);
    }
  }
  return out;
}

std::string RenderList(std::vector<Object> items) {
  std::sort(items.begin(), items.end(), [](const Object& a, const Object& b) {
    const ObjectRef ra = RefOf(a);
    const ObjectRef rb = RefOf(b);
    return std::tie(ra.ns, ra.name, ra.kind, ra.group) <
           std::tie(rb.ns, rb.name, rb.kind, rb.group);
  });
  Object list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", Object::array()}};
  for (auto& item : items) list["items"].push_back(std::move(item));
  return api::ToYaml(list);
}

std::vector<PoolEntry> AllocationsOf(const std::vector<Object>& pools,
                                     const std::vector<Object>& objects) {
  std::vector<std::string> owners;
  for (const auto& o : objects) {
    const ObjectRef r = RefOf(o);
    if (Is(r, kInfraGroup, "HarvesterMachine")) owners.push_back(r.ns + "/" + r.name);
    if (Is(r, kInfraGroup, "HarvesterCluster")) {
      const std::string target = StringAt(o, {"spec", "targetNamespace"});
      if (!target.empty()) {
        owners.push_back(target + "/" + harvester::LoadBalancerName(r.ns, r.name));
      }
    }
  }
  std::vector<PoolEntry> out;
  for (const auto& pool : pools) {
    if (!pool.is_object()) continue;
    const Object allocated = ObjectAt(pool, {"status", "allocated"});
    for (const auto& [ip, owner] : allocated.items()) {
      if (!owner.is_string()) continue;
      const std::string who = owner.get<std::string>();
      if (std::any_of(owners.begin(), owners.end(),
                      [&](const std::string& key) { return OwnedBy(who, key); })) {
        out.push_back({kube::NameOf(pool), ip, who});
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string RenderAllocations(const std::map<std::string, std::vector<PoolEntry>>& by_server) {
  Object harvesters = Object::array();
  for (const auto& [server, entries] : by_server) {
    std::map<std::string, Object> pools;
    for (const auto& e : entries) {
      auto& pool = pools[e.pool];
      if (pool.is_null()) pool = Object::object();
      pool[e.ip] = e.owner;
    }
    Object list = Object::array();
    for (const auto& [name, allocated] : pools) {
      list.push_back({{"name", name}, {"allocated", allocated}});
    }
    harvesters.push_back({{"server", server}, {"pools", list}});
  }
  return api::ToYaml(Object{{"harvesters", harvesters}});
}

kube::StatusOr<std::map<std::string, std::vector<PoolEntry>>> ParseAllocations(
    std::string_view text) {
  const kube::Status bad(kube::StatusCode::kInvalidArgument,
                         std::string(kAllocationsFile) + ": not a record of IPPool entries");
  auto docs = api::ParseYaml(text);
  if (!docs.ok() || docs->size() != 1 || !(*docs)[0].is_object()) return bad;
  std::map<std::string, std::vector<PoolEntry>> out;
  const Object harvesters = (*docs)[0].value("harvesters", Object::array());
  if (!harvesters.is_array()) return bad;
  for (const auto& h : harvesters) {
    if (!h.is_object()) return bad;
    auto& entries = out[StringField(h, "server")];
    const Object pools = h.value("pools", Object::array());
    if (!pools.is_array()) return bad;
    for (const auto& p : pools) {
      if (!p.is_object()) return bad;
      const Object allocated = p.value("allocated", Object::object());
      if (!allocated.is_object()) return bad;
      for (const auto& [ip, owner] : allocated.items()) {
        if (!owner.is_string()) return bad;
        entries.push_back({StringField(p, "name"), ip, owner.get<std::string>()});
      }
    }
    std::sort(entries.begin(), entries.end());
  }
  return out;
}

std::string RenderManifest(const Manifest& m) {
  Object scope = {{"allNamespaces", m.all_namespaces}};
  if (!m.all_namespaces) scope["namespaces"] = m.scope;
  if (!m.cluster.empty()) scope["cluster"] = m.cluster;
  Object o = {{"kind", kManifestKind},
              {"formatVersion", m.format_version},
              {"caphvVersion", m.caphv_version},
              {"created", m.created},
              {"source", {{"server", m.server}, {"managementClusterId", m.management_cluster_id}}},
              {"scope", scope},
              {"namespaces", m.namespaces},
              {"counts", m.counts},
              {"skipped", m.skipped},
              {"ipPoolAllocations", m.allocations}};
  return api::ToYaml(o);
}

kube::StatusOr<Manifest> ParseManifest(std::string_view text) {
  auto docs = api::ParseYaml(text);
  if (!docs.ok() || docs->size() != 1 || !(*docs)[0].is_object() ||
      StringField((*docs)[0], "kind") != kManifestKind) {
    return kube::Status(kube::StatusCode::kInvalidArgument,
                        std::string(kManifestFile) + ": not the manifest of a caphv backup");
  }
  const Object& o = (*docs)[0];
  Manifest m;
  try {
    m.format_version = o.value("formatVersion", 0);
    if (m.format_version < 1 || m.format_version > kFormatVersion) {
      return kube::Status(kube::StatusCode::kInvalidArgument,
                          std::string(kManifestFile) + ": format version " +
                              std::to_string(m.format_version) + " (this caphv reads " +
                              std::to_string(kFormatVersion) + ")");
    }
    m.caphv_version = StringField(o, "caphvVersion");
    m.created = StringField(o, "created");
    const Object source = o.value("source", Object::object());
    m.server = StringField(source, "server");
    m.management_cluster_id = StringField(source, "managementClusterId");
    const Object scope = o.value("scope", Object::object());
    m.all_namespaces = scope.value("allNamespaces", false);
    m.scope = scope.value("namespaces", std::vector<std::string>());
    m.cluster = StringField(scope, "cluster");
    m.namespaces = o.value("namespaces", std::vector<std::string>());
    m.counts = o.value("counts", std::map<std::string, int64_t>());
    m.skipped = o.value("skipped", std::map<std::string, std::string>());
    m.allocations = StringField(o, "ipPoolAllocations");
  } catch (const std::exception&) {
    return kube::Status(kube::StatusCode::kInvalidArgument,
                        std::string(kManifestFile) + ": a field has the wrong type");
  }
  return m;
}

}  // namespace caphv::backup
