// File: backup/restore.cc

#include "backup/restore.h"

#include <algorithm>

#include "api/yaml.h"

namespace caphv::backup {
namespace {

using kube::Object;
using kube::Status;
using kube::StatusCode;

constexpr std::string_view kCapiGroup = "cluster.x-k8s.io";

Status Bad(const std::string& what) { return Status(StatusCode::kInvalidArgument, what); }

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool NonEmptyString(const Object& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() && !it->get<std::string>().empty();
}

// The object without metadata and status: what two objects of the same
// name must share to be the same content.
Object Content(const Object& o) {
  Object c = o;
  for (const char* key : {"metadata", "status", "apiVersion", "kind"}) c.erase(key);
  return c;
}

std::string AnnotationOf(const Object& o, const char* key) {
  auto md = o.find("metadata");
  if (md == o.end() || !md->is_object()) return {};
  auto annotations = md->find("annotations");
  if (annotations == md->end() || !annotations->is_object()) return {};
  auto v = annotations->find(key);
  return v != annotations->end() && v->is_string() ? v->get<std::string>() : std::string();
}

bool IsDeleting(const Object& o) {
  auto md = o.find("metadata");
  return md != o.end() && md->is_object() && md->contains("deletionTimestamp") &&
         !(*md)["deletionTimestamp"].is_null();
}

bool IsCluster(const Object& o) {
  const ObjectRef r = RefOf(o);
  return r.group == kCapiGroup && r.kind == "Cluster";
}

size_t KindIndex(const ObjectRef& r) {
  const auto& kinds = Kinds();
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (kinds[i].group == r.group && kinds[i].kind == r.kind) return i;
  }
  if (r.group.empty() && r.kind == "Secret") return 0;
  return kinds.size();
}

// The owner (group, kind, name) a reference names.
std::tuple<std::string, std::string, std::string> OwnerKey(const Object& ref) {
  return {GroupOf(StringField(ref, "apiVersion")), StringField(ref, "kind"),
          StringField(ref, "name")};
}

}  // namespace

kube::StatusOr<Backup> ParseBackup(const std::map<std::string, std::string>& files) {
  Backup out;
  std::map<ObjectRef, std::pair<Object, std::string>> seen;  // -> (object, file)
  for (const auto& [name, content] : files) {
    if (name == kManifestFile) {
      auto m = ParseManifest(content);
      if (!m.ok()) return m.status();
      out.manifest = *m;
      continue;
    }
    if (name == kAllocationsFile) {
      auto record = ParseAllocations(content);
      if (!record.ok()) return record.status();
      for (const auto& [server, entries] : *record) out.allocations += entries.size();
      continue;
    }
    if (!EndsWith(name, ".yaml") && !EndsWith(name, ".yml") && !EndsWith(name, ".json")) continue;
    auto docs = api::ParseYaml(content);
    if (!docs.ok()) return Bad(name + ": not YAML: " + docs.status().message());
    std::vector<Object> items;
    for (size_t d = 0; d < docs->size(); ++d) {
      Object& doc = (*docs)[d];
      if (!doc.is_object()) {
        return Bad(name + ": document " + std::to_string(d + 1) + " is not an object");
      }
      auto list = doc.find("items");
      if (EndsWith(StringField(doc, "kind"), "List") && list != doc.end()) {
        if (list->is_null()) continue;
        if (!list->is_array()) return Bad(name + ": items is not a list");
        for (auto& item : *list) items.push_back(std::move(item));
      } else {
        items.push_back(std::move(doc));
      }
    }
    for (size_t i = 0; i < items.size(); ++i) {
      Object& o = items[i];
      const std::string where = name + ": item " + std::to_string(i + 1);
      if (!o.is_object()) return Bad(where + " is not an object");
      if (!NonEmptyString(o, "apiVersion")) return Bad(where + " has no apiVersion");
      if (!NonEmptyString(o, "kind")) return Bad(where + " has no kind");
      auto md = o.find("metadata");
      if (md == o.end() || !md->is_object() || !NonEmptyString(*md, "name")) {
        return Bad(where + " (" + o["kind"].get<std::string>() + ") has no metadata.name");
      }
      if (md->contains("namespace") && !(*md)["namespace"].is_string()) {
        return Bad(where + " has a metadata.namespace that is not a string");
      }
      if (md->contains("ownerReferences") && !(*md)["ownerReferences"].is_array()) {
        return Bad(where + " has metadata.ownerReferences that are not a list");
      }
      const ObjectRef ref = RefOf(o);
      auto [it, inserted] = seen.try_emplace(ref, o, name);
      if (!inserted) {
        if (StripForBackup(it->second.first) != StripForBackup(o)) {
          return Bad(ref.String() + " is in the backup twice, with different content (" +
                     it->second.second + ", " + name + ")");
        }
        continue;
      }
      out.objects.push_back(std::move(o));
    }
  }
  if (out.objects.empty()) return Bad("the backup holds no object");
  SortForRestore(out.objects);
  return out;
}

void SortForRestore(std::vector<Object>& objects) {
  std::stable_sort(objects.begin(), objects.end(), [](const Object& a, const Object& b) {
    const ObjectRef ra = RefOf(a);
    const ObjectRef rb = RefOf(b);
    const int pa = static_cast<int>(PhaseOf(ra.group, ra.kind));
    const int pb = static_cast<int>(PhaseOf(rb.group, rb.kind));
    const size_t ka = KindIndex(ra);
    const size_t kb = KindIndex(rb);
    return std::tie(pa, ka, ra.group, ra.kind, ra.ns, ra.name) <
           std::tie(pb, kb, rb.group, rb.kind, rb.ns, rb.name);
  });
}

std::set<ObjectRef> BeingDeleted(const std::vector<Object>& objects) {
  std::set<ObjectRef> out;
  std::set<std::string> deleted_uids;
  for (const auto& o : objects) {
    if (IsDeleting(o)) {
      out.insert(RefOf(o));
      deleted_uids.insert(kube::UidOf(o));
    }
  }
  // Owners first is not guaranteed: repeat until nothing is added.
  for (bool added = true; added;) {
    added = false;
    for (const auto& o : objects) {
      const ObjectRef r = RefOf(o);
      if (out.contains(r)) continue;
      for (const auto& owner : OwnerReferencesOf(o)) {
        const std::string uid = StringField(owner, "uid");
        if (!uid.empty() && deleted_uids.contains(uid)) {
          out.insert(r);
          const std::string own_uid = kube::UidOf(o);
          if (!own_uid.empty()) deleted_uids.insert(own_uid);
          added = true;
          break;
        }
      }
    }
  }
  return out;
}

Found Compare(const Object& backup, const Object* target) {
  if (target == nullptr) return Found::kMissing;
  const std::string uid = kube::UidOf(backup);
  if (!uid.empty() && kube::UidOf(*target) == uid) return Found::kSame;
  if (!uid.empty() && AnnotationOf(*target, kRestoredUidAnnotation) == uid) {
    return Found::kRestored;
  }
  if (Content(backup) == Content(*target)) return Found::kEqual;
  return Found::kConflict;
}

std::vector<Object> RemapOwners(const Object& backup,
                                const std::map<std::string, std::string>& new_uids) {
  std::vector<Object> out;
  for (Object ref : OwnerReferencesOf(backup)) {
    auto it = new_uids.find(StringField(ref, "uid"));
    if (it == new_uids.end() || it->second.empty()) continue;
    ref["uid"] = it->second;
    out.push_back(std::move(ref));
  }
  return out;
}

Object ForRestore(const Object& backup, const std::map<std::string, std::string>& new_uids) {
  Object o = backup;
  o.erase("status");
  Object& md = o["metadata"];
  for (const char* key : {"uid", "resourceVersion", "generation", "creationTimestamp",
                          "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields",
                          "selfLink", "generateName", "ownerReferences"}) {
    md.erase(key);
  }
  const auto owners = RemapOwners(backup, new_uids);
  if (!owners.empty()) md["ownerReferences"] = owners;
  const std::string uid = kube::UidOf(backup);
  if (!uid.empty()) {
    if (!md.contains("annotations") || !md["annotations"].is_object()) {
      md["annotations"] = Object::object();
    }
    md["annotations"][kRestoredUidAnnotation] = uid;
  }
  if (IsCluster(o)) {
    if (!o.contains("spec") || !o["spec"].is_object()) o["spec"] = Object::object();
    const auto paused = o["spec"].find("paused");
    if (paused == o["spec"].end() || !paused->is_boolean() || !paused->get<bool>()) {
      o["spec"]["paused"] = true;
      if (!md.contains("annotations") || !md["annotations"].is_object()) {
        md["annotations"] = Object::object();
      }
      md["annotations"][kRestorePausedAnnotation] = "true";
    }
  }
  return o;
}

std::optional<Object> OwnerPatch(const Object& current, const std::vector<Object>& desired) {
  std::vector<Object> refs = OwnerReferencesOf(current);
  bool changed = false;
  for (const auto& want : desired) {
    const auto [group, kind, name] = OwnerKey(want);
    const std::string uid = StringField(want, "uid");
    bool satisfied = false;
    bool reparented = false;
    for (auto& have : refs) {
      const auto [g, k, n] = OwnerKey(have);
      if (g != group || k != kind) continue;
      if (n != name) {
        reparented = true;
        continue;
      }
      if (StringField(have, "uid") != uid) {
        have = want;  // the same owner under its uid of the lost cluster
        changed = true;
      }
      satisfied = true;
    }
    if (!satisfied && !reparented) {
      refs.push_back(want);
      changed = true;
    }
  }
  if (!changed) return std::nullopt;
  return Object{
      {"metadata",
       {{"resourceVersion", kube::ResourceVersionOf(current)}, {"ownerReferences", refs}}}};
}

bool PausedByRestore(const Object& cluster) {
  return !AnnotationOf(cluster, kRestorePausedAnnotation).empty();
}

Object UnpausePatch() {
  return {{"metadata", {{"annotations", {{kRestorePausedAnnotation, nullptr}}}}},
          {"spec", {{"paused", false}}}};
}

}  // namespace caphv::backup
