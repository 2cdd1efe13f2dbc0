// File: cmd/caphv/restore_command.cc

#include "restore_command.h"

#include <algorithm>
#include <iostream>
#include <regex>
#include <set>
#include <thread>

#include "backup/archive.h"
#include "backup/restore.h"
#include "discovery.h"
#include "kube/client.h"
#include "kube/config.h"
#include "management_client.h"

namespace caphv::cli {
namespace {

using backup::Found;
using kube::Object;

constexpr char kMe[] = "caphv restore: ";
constexpr int kPatchAttempts = 5;

// "90s", "30m", "1h" -> seconds; throws CLI::ValidationError.
std::chrono::seconds ParseTimeout(const std::string& s) {
  static const std::regex re("([0-9]+)(s|m|h)");
  std::smatch m;
  if (!std::regex_match(s, m, re)) {
    throw CLI::ValidationError("--timeout", "\"" + s + "\" is not a duration (e.g. 2m)");
  }
  const long n = std::stol(m[1]);
  const std::string unit = m[2];
  return std::chrono::seconds(unit == "s" ? n : unit == "m" ? n * 60 : n * 3600);
}

// "1 object", "2 objects".
std::string Count(size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// One object of the backup and what the management cluster holds for it.
struct Item {
  Object backup;
  backup::ObjectRef ref;
  kube::GroupVersionResource gvr;
  std::string ns;  // "" for a cluster-scoped kind
  Found found = Found::kMissing;
  Object target;  // the object there (found != kMissing), or the one created
  bool skip = false;
  bool created = false;
};

bool ConditionTrue(const Object& o, std::string_view type) {
  const Object status = o.value("status", Object::object());
  if (!status.is_object()) return false;
  for (const auto& c : status.value("conditions", Object::array())) {
    if (c.is_object() && backup::StringField(c, "type") == type) {
      return backup::StringField(c, "status") == "True";
    }
  }
  return false;
}

// What Cluster API's webhook wants of a ClusterClass before it validates a
// topology Cluster against it.
bool ClassReconciled(const Object& cc) {
  const Object status = cc.value("status", Object::object());
  const Object md = cc.value("metadata", Object::object());
  return status.is_object() && md.is_object() &&
         status.value("observedGeneration", int64_t{0}) == md.value("generation", int64_t{-1}) &&
         ConditionTrue(cc, "VariablesReconciled");
}

std::string Why(Found f) {
  switch (f) {
    case Found::kSame:
      return "the same object";
    case Found::kRestored:
      return "restored before";
    case Found::kEqual:
      return "the same content";
    case Found::kConflict:
      return "other content, kept with --force";
    case Found::kMissing:
      break;
  }
  return "";
}

// Prints "<kind>: N created, M kept" for each kind, in restore order.
class KindLines {
 public:
  explicit KindLines(std::ostream& err) : err_(err) {}
  void Add(const std::string& kind, bool created) {
    if (kind != kind_) Flush();
    kind_ = kind;
    (created ? created_ : kept_)++;
  }
  void Flush() {
    if (kind_.empty()) return;
    err_ << kind_ << ": " << created_ << " created";
    if (kept_ > 0) err_ << ", " << kept_ << " already there";
    err_ << "\n";
    kind_.clear();
    created_ = kept_ = 0;
  }

 private:
  std::ostream& err_;
  std::string kind_;
  size_t created_ = 0;
  size_t kept_ = 0;
};

// Waits (bounded) until the ClusterClass a topology Cluster names is
// reconciled; a note when it is not.
void WaitForClass(kube::Client& client, Discovery& discovery, const Item& cluster,
                  const RestoreFlags& f, std::ostream& err) {
  std::optional<backup::ObjectRef> cls;
  for (const auto& ref : backup::ReferencesOf(cluster.backup)) {
    if (ref.kind == "ClusterClass") cls = ref;
  }
  if (!cls) return;
  auto gvr = discovery.Find(cls->group, "clusterclasses");
  if (!gvr.ok() || !gvr->has_value()) return;
  const auto deadline = std::chrono::steady_clock::now() + f.timeout;
  bool said = false;
  while (true) {
    auto cc = client.Get(**gvr, cls->ns, cls->name);
    if (cc.ok() && ClassReconciled(*cc)) return;
    if (std::chrono::steady_clock::now() > deadline) {
      err << "note: " << cls->String() << " is not reconciled after " << f.timeout.count()
          << " s; Cluster API creates " << cluster.ref.String() << " without checking it\n";
      return;
    }
    if (!said) {
      err << "waiting for " << cls->String() << " to be reconciled\n";
      said = true;
    }
    std::this_thread::sleep_for(f.poll);
  }
}

// One restore: the steps of restore_command.h, in order. Each step returns
// false after writing its one-line failure to `err`.
class Restorer {
 public:
  Restorer(kube::Client& client, const RestoreFlags& f, std::ostream& out, std::ostream& err)
      : client_(client), discovery_(client), f_(f), out_(out), err_(err) {}

  int Run(backup::Backup& b, const std::string& default_ns) {
    if (!Resolve(b, default_ns) || !LookUp()) return 1;
    const bool refused = !conflicts_.empty() && !f_.force;
    if (f_.dry_run) PrintPlan();
    if (refused) {
      err_ << kMe << Count(conflicts_.size(), "object") << " with other content in the way"
           << "; nothing was written (--force keeps them as they are and restores the rest)\n";
      return 1;
    }
    if (f_.dry_run) {
      err_ << "dry run: " << Count(new_namespaces_.size(), "namespace") << " and "
           << Count(Tally(Found::kMissing), "object") << " to create, " << Kept()
           << " already there, " << Skipped() << " skipped; nothing was written\n";
      return 0;
    }
    if (!CreateNamespaces() || !CreateObjects() || !LinkOwners() || !Unpause()) return 1;
    err_ << "restored from " << f_.from << ": " << created_ << " created, " << Kept()
         << " already there";
    if (Skipped() > 0) err_ << ", " << Skipped() << " skipped";
    err_ << "\n";
    return 0;
  }

 private:
  bool Fail(const std::string& what, const kube::Status& s) {
    err_ << kMe << what << ": " << s.message() << "\n";
    return false;
  }

  // Where each object goes; every kind must be served.
  bool Resolve(backup::Backup& b, const std::string& default_ns) {
    std::set<std::string> unserved;
    for (auto& o : b.objects) {
      Item item;
      item.ref = backup::RefOf(o);
      const std::string api_version = backup::StringField(o, "apiVersion");
      auto gvr = discovery_.ForKind(api_version, item.ref.kind);
      if (!gvr.ok()) return Fail("discovering " + api_version, gvr.status());
      if (!gvr->has_value()) {
        unserved.insert(item.ref.kind + " (" + api_version + ")");
        continue;
      }
      item.gvr = **gvr;
      if (item.gvr.namespaced) {
        item.ns = item.ref.ns.empty() ? default_ns : item.ref.ns;
        o["metadata"]["namespace"] = item.ns;
      } else {
        o["metadata"].erase("namespace");
      }
      item.ref.ns = item.ns;
      item.backup = std::move(o);
      items_.push_back(std::move(item));
    }
    if (unserved.empty()) return true;
    std::string kinds;
    for (const auto& k : unserved) kinds += (kinds.empty() ? "" : ", ") + k;
    err_ << kMe << "the management cluster does not serve " << kinds
         << ": install their providers first; nothing was written\n";
    return false;
  }

  // What the management cluster holds under each name, and which
  // namespaces it lacks.
  bool LookUp() {
    std::vector<Object> all;
    all.reserve(items_.size());
    for (const auto& i : items_) all.push_back(i.backup);
    const std::set<backup::ObjectRef> deleting = backup::BeingDeleted(all);
    std::set<std::string> namespaces;
    for (auto& i : items_) {
      if (deleting.contains(i.ref)) {
        i.skip = true;
        continue;
      }
      auto got = client_.Get(i.gvr, i.ns, i.ref.name);
      if (got.ok()) {
        i.target = std::move(*got);
        i.found = backup::Compare(i.backup, &i.target);
        if (const std::string uid = kube::UidOf(i.backup); !uid.empty()) {
          new_uids_[uid] = kube::UidOf(i.target);
        }
      } else if (got.status().IsNotFound()) {
        i.found = Found::kMissing;
        if (!i.ns.empty()) namespaces.insert(i.ns);
      } else {
        return Fail("reading " + i.ref.String(), got.status());
      }
      if (i.found == Found::kConflict) {
        conflicts_.push_back(&i);
        err_ << (f_.force ? "note: " : "conflict: ") << i.ref.String()
             << " exists with other content (uid " << kube::UidOf(i.target) << ")"
             << (f_.force ? ", kept as it is" : "") << "\n";
      }
    }
    for (const auto& ns : namespaces) {
      auto got = client_.Get(kube::resources::kNamespaces, "", ns);
      if (got.status().IsNotFound()) {
        new_namespaces_.push_back(ns);
      } else if (!got.ok()) {
        return Fail("reading Namespace " + ns, got.status());
      }
    }
    return true;
  }

  void PrintPlan() const {
    for (const auto& ns : new_namespaces_) out_ << "create Namespace " << ns << "\n";
    for (const auto& i : items_) {
      if (i.skip) {
        out_ << "skip " << i.ref.String() << " (being deleted when backed up)\n";
      } else if (i.found == Found::kMissing) {
        out_ << "create " << i.ref.String() << "\n";
      } else if (i.found == Found::kConflict && !f_.force) {
        out_ << "conflict " << i.ref.String() << " (other content)\n";
      } else {
        out_ << "keep " << i.ref.String() << " (" << Why(i.found) << ")\n";
      }
    }
  }

  bool CreateNamespaces() {
    for (const auto& ns : new_namespaces_) {
      const Object object = {
          {"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}};
      auto r = client_.Create(kube::resources::kNamespaces, "", object);
      if (!r.ok() && !r.status().IsAlreadyExists())
        return Fail("creating Namespace " + ns, r.status());
    }
    if (!new_namespaces_.empty()) err_ << "namespaces: " << new_namespaces_.size() << " created\n";
    for (const auto& i : items_) {
      if (i.skip) err_ << "skipped " << i.ref.String() << ": it was being deleted when backed up\n";
    }
    return true;
  }

  // The missing objects, in order, with the owners that exist by then.
  bool CreateObjects() {
    kube::ApplyOptions apply;
    apply.field_manager = "caphv";
    apply.force = false;
    KindLines lines(err_);
    for (auto& i : items_) {
      if (i.skip) continue;
      if (i.found != Found::kMissing) {
        lines.Add(i.gvr.String(), false);
        continue;
      }
      if (i.ref.kind == "Cluster" &&
          i.backup.value("spec", Object::object()).contains("topology")) {
        lines.Flush();
        WaitForClass(client_, discovery_, i, f_, err_);
      }
      auto r = client_.Apply(i.gvr, i.ns, backup::ForRestore(i.backup, new_uids_), apply);
      if (!r.ok()) {
        lines.Flush();
        err_ << kMe << "creating " << i.ref.String() << ": " << r.status().message()
             << " (run the restore again to go on; what it made is kept)\n";
        return false;
      }
      i.target = std::move(*r);
      i.created = true;
      ++created_;
      if (const std::string uid = kube::UidOf(i.backup); !uid.empty()) {
        new_uids_[uid] = kube::UidOf(i.target);
      }
      lines.Add(i.gvr.String(), true);
    }
    lines.Flush();
    return true;
  }

  // The owner references of objects made before their owners (or by a
  // restore that stopped before this step).
  bool LinkOwners() {
    kube::PatchOptions options;
    options.field_manager = "caphv";
    size_t linked = 0;
    for (auto& i : items_) {
      if (!Ours(i)) continue;
      const auto desired = backup::RemapOwners(i.backup, new_uids_);
      if (desired.empty()) continue;
      for (int attempt = 1;; ++attempt) {
        const auto patch = backup::OwnerPatch(i.target, desired);
        if (!patch) break;
        auto r = client_.Patch(i.gvr, i.ns, i.ref.name, kube::PatchType::kMerge, *patch, options);
        if (r.ok()) {
          i.target = std::move(*r);
          ++linked;
          break;
        }
        if (!r.status().IsConflict() || attempt >= kPatchAttempts) {
          return Fail("setting the owners of " + i.ref.String(), r.status());
        }
        auto got = client_.Get(i.gvr, i.ns, i.ref.name);
        if (!got.ok()) return Fail("reading " + i.ref.String(), got.status());
        i.target = std::move(*got);
      }
    }
    if (linked > 0) err_ << "owner references: set on " << Count(linked, "object") << "\n";
    return true;
  }

  // Everything is there: the Clusters the restore paused go on.
  bool Unpause() {
    kube::PatchOptions options;
    options.field_manager = "caphv";
    for (auto& i : items_) {
      if (!Ours(i) || i.ref.kind != "Cluster" || i.ref.group != "cluster.x-k8s.io") continue;
      if (!backup::PausedByRestore(i.target)) continue;
      auto r = client_.Patch(i.gvr, i.ns, i.ref.name, kube::PatchType::kMerge,
                             backup::UnpausePatch(), options);
      if (!r.ok()) return Fail("unpausing " + i.ref.String(), r.status());
      err_ << "unpaused " << i.ref.String() << "\n";
    }
    return true;
  }

  // Made by this restore or an earlier run of it.
  static bool Ours(const Item& i) { return !i.skip && (i.created || i.found == Found::kRestored); }

  size_t Tally(Found found) const {
    return std::count_if(items_.begin(), items_.end(),
                         [&](const Item& i) { return !i.skip && i.found == found; });
  }
  size_t Kept() const {
    return std::count_if(items_.begin(), items_.end(),
                         [](const Item& i) { return !i.skip && i.found != Found::kMissing; });
  }
  size_t Skipped() const {
    return std::count_if(items_.begin(), items_.end(), [](const Item& i) { return i.skip; });
  }

  kube::Client& client_;
  Discovery discovery_;
  const RestoreFlags& f_;
  std::ostream& out_;
  std::ostream& err_;
  std::vector<Item> items_;
  std::vector<const Item*> conflicts_;
  std::vector<std::string> new_namespaces_;
  std::map<std::string, std::string> new_uids_;  // uid in the backup -> uid here
  size_t created_ = 0;
};

}  // namespace

CLI::App* AddRestoreCommand(CLI::App& app, RestoreFlags& f) {
  auto* cmd = app.add_subcommand(
      "restore", "Re-apply a backup of caphv backup onto a (new) management cluster");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->add_option(
      "--kubeconfig", f.kubeconfig,
      "Management cluster kubeconfig (default $KUBECONFIG, in-cluster, ~/.kube/config)");
  cmd->add_option("-f,--from", f.from, "The backup: a directory or a .tar.gz file")->required();
  cmd->add_flag("--dry-run", f.dry_run, "Print what would be created and kept; write nothing");
  cmd->add_flag("--force", f.force,
                "Restore even when objects of the same names with other content exist (they "
                "are kept as they are)");
  cmd->add_option_function<std::string>(
      "--timeout", [&f](const std::string& s) { f.timeout = ParseTimeout(s); },
      "How long to wait for a ClusterClass to be reconciled (default 2m)");
  return cmd;
}

int RunRestore(const RestoreFlags& f, std::ostream& out, std::ostream& err) {
  auto files = backup::ReadArchive(f.from);
  if (!files.ok()) {
    err << kMe << "-f: " << files.status().message() << "\n";
    return 2;
  }
  auto parsed = backup::ParseBackup(*files);
  if (!parsed.ok()) {
    err << kMe << f.from << ": " << parsed.status().message() << "\n";
    return 2;
  }
  int rc = 0;
  auto mgmt = ConnectManagement(f.kubeconfig, kMe, err, &rc);
  if (!mgmt) return rc;
  if (parsed->manifest) {
    const auto& m = *parsed->manifest;
    err << "backup of " << m.server << " (management cluster " << m.management_cluster_id
        << ") taken " << m.created << ": " << Count(parsed->objects.size(), "object") << "\n";
  } else {
    err << "no " << backup::kManifestFile << ": " << Count(parsed->objects.size(), "object")
        << " from the YAML files of " << f.from << "\n";
  }
  return Restorer(*mgmt->client, f, out, err).Run(*parsed, mgmt->config.default_namespace);
}

}  // namespace caphv::cli
