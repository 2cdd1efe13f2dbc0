// File: cmd/caphv/backup_command.cc

#include "backup_command.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <set>

#include "backup/archive.h"
#include "backup/backup.h"
#include "discovery.h"
#include "harvester/resources.h"
#include "kube/base64.h"
#include "kube/client.h"
#include "kube/config.h"
#include "management_client.h"

#ifndef CAPHV_CLI_VERSION
#define CAPHV_CLI_VERSION "unknown"
#endif

namespace caphv::cli {
namespace {

using kube::Object;

constexpr char kMe[] = "caphv backup: ";

std::string NowRfc3339() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The apiVersion and kind items of a typed list lack.
void SetType(Object& o, const kube::GroupVersionResource& gvr, std::string_view kind) {
  o["apiVersion"] = gvr.ApiVersion();
  o["kind"] = kind;
}

// The Harvester kubeconfig of an identity Secret among `secrets`.
std::optional<std::string> IdentityKubeconfig(const std::vector<Object>& secrets,
                                              const backup::ObjectRef& ref) {
  for (const auto& s : secrets) {
    if (kube::NamespaceOf(s) != ref.ns || kube::NameOf(s) != ref.name) continue;
    const Object data = s.value("data", Object::object());
    if (!data.is_object() || !data.contains("kubeconfig") || !data["kubeconfig"].is_string()) {
      return std::nullopt;
    }
    return kube::Base64Decode(data["kubeconfig"].get<std::string>());
  }
  return std::nullopt;
}

}  // namespace

CLI::App* AddBackupCommand(CLI::App& app, BackupFlags& f) {
  auto* cmd = app.add_subcommand(
      "backup",
      "Save the Cluster API and CAPHV objects of the management cluster to a directory or "
      ".tar.gz");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->add_option(
      "--kubeconfig", f.kubeconfig,
      "Management cluster kubeconfig (default $KUBECONFIG, in-cluster, ~/.kube/config)");
  cmd->add_option("-n,--namespace", f.ns, "Namespace (default: the kubeconfig's)");
  cmd->add_flag("-A,--all-namespaces", f.all_namespaces, "Every namespace");
  cmd->add_option("--cluster", f.cluster, "Only this Cluster's objects");
  cmd->add_option("-o,--output", f.output, "Directory, or a file ending in .tar.gz")->required();
  cmd->add_option("--harvester-kubeconfig", f.harvester_kubeconfig,
                  "Harvester kubeconfig for the IPPool record (default: the identity Secrets)");
  return cmd;
}

namespace {

// One backup, step by step. Each step returns false after writing its
// one-line failure to `err`.
class Backuper {
 public:
  Backuper(kube::Client& client, const kube::RestConfig& config, const BackupFlags& f,
           std::ostream& err)
      : client_(client),
        discovery_(client),
        f_(f),
        err_(err),
        scope_(f.all_namespaces ? "" : (f.ns.empty() ? config.default_namespace : f.ns)),
        where_(scope_.empty() ? "in any namespace" : "in namespace " + scope_) {
    manifest_.caphv_version = CAPHV_CLI_VERSION;
    manifest_.created = NowRfc3339();
    manifest_.server = config.server;
    manifest_.all_namespaces = f.all_namespaces;
    if (!f.all_namespaces) manifest_.scope = {scope_};
    manifest_.cluster = f.cluster;
  }

  int Run() {
    if (!Source() || !List() || !Gather()) return 1;
    Files();
    Allocations();
    for (const auto& n : notes_) err_ << "note: " << n << "\n";
    if (total_ == 0) {
      err_ << kMe << "nothing to back up " << where_ << "; nothing was written\n";
      return 1;
    }
    manifest_.namespaces.assign(namespaces_.begin(), namespaces_.end());
    files_[backup::kManifestFile] = backup::RenderManifest(manifest_);
    if (kube::Status s = backup::WriteArchive(f_.output, files_); !s.ok()) {
      err_ << kMe << "-o: " << s.message() << "\n";
      return 1;
    }
    err_ << "backup of " << total_ << (total_ == 1 ? " object" : " objects") << " in "
         << namespaces_.size() << (namespaces_.size() == 1 ? " namespace" : " namespaces")
         << " written to " << f_.output << "\n";
    return 0;
  }

 private:
  bool Fail(const std::string& what, const kube::Status& s) {
    err_ << kMe << what << ": " << s.message() << "\n";
    return false;
  }

  // The management cluster's id: its kube-system namespace's uid.
  bool Source() {
    auto kube_system = client_.Get(kube::resources::kNamespaces, "", "kube-system");
    if (!kube_system.ok()) {
      return Fail("reading the management cluster " + manifest_.server, kube_system.status());
    }
    manifest_.management_cluster_id = kube::UidOf(*kube_system);
    return true;
  }

  // Every object of the listed kinds in scope, then the backup's among them.
  bool List() {
    std::vector<Object> listed;
    for (const auto& kind : backup::Kinds()) {
      auto gvr = discovery_.Find(kind.group, kind.resource);
      if (!gvr.ok()) return Fail("discovering " + kind.Name(), gvr.status());
      if (!gvr->has_value()) {
        manifest_.skipped[kind.Name()] = "not served by the management cluster";
        continue;
      }
      auto list = client_.ListAll(**gvr, scope_);
      if (!list.ok()) return Fail("listing " + kind.Name(), list.status());
      for (auto& o : list->items) {
        SetType(o, **gvr, kind.kind);
        listed.push_back(std::move(o));
      }
    }
    selection_ = backup::Select(listed, f_.cluster);
    if (!f_.cluster.empty() &&
        std::none_of(selection_.objects.begin(), selection_.objects.end(), [&](const Object& o) {
          const backup::ObjectRef r = backup::RefOf(o);
          return r.kind == "Cluster" && r.name == f_.cluster;
        })) {
      err_ << kMe << "--cluster: no Cluster " << f_.cluster << " " << where_ << "\n";
      return false;
    }
    return true;
  }

  // The Secrets labelled with a cluster name, and the Secrets and
  // ConfigMaps the objects name.
  bool Gather() {
    std::set<backup::ObjectRef> have;
    kube::ListOptions labelled;
    labelled.label_selector =
        std::string(backup::kClusterNameLabel) + (f_.cluster.empty() ? "" : "=" + f_.cluster);
    auto labelled_secrets = client_.ListAll(kube::resources::kSecrets, scope_, labelled);
    if (!labelled_secrets.ok()) return Fail("listing secrets", labelled_secrets.status());
    for (auto& s : labelled_secrets->items) {
      SetType(s, kube::resources::kSecrets, "Secret");
      have.insert(backup::RefOf(s));
      secrets_.push_back(std::move(s));
    }
    for (const auto& [refs, gvr, kind, into] :
         {std::tuple{&selection_.secrets, &kube::resources::kSecrets, "Secret", &secrets_},
          std::tuple{&selection_.config_maps, &kube::resources::kConfigMaps, "ConfigMap",
                     &config_maps_}}) {
      for (const auto& ref : *refs) {
        if (have.contains(ref)) continue;
        auto got = client_.Get(*gvr, ref.ns, ref.name);
        if (got.status().IsNotFound()) {
          notes_.push_back(ref.String() + ", which the objects name, does not exist");
          continue;
        }
        if (!got.ok()) return Fail("reading " + ref.String(), got.status());
        SetType(*got, *gvr, kind);
        have.insert(ref);
        into->push_back(std::move(*got));
      }
    }
    return true;
  }

  // One file per kind, a line per kind.
  void Files() {
    AddKind(backup::kSecretKind.Name(), secrets_);
    AddKind(backup::kConfigMapKind.Name(), config_maps_);
    for (const auto& kind : backup::Kinds()) {
      if (manifest_.skipped.contains(kind.Name())) {
        err_ << kind.Name() << ": skipped, not served by the management cluster\n";
        continue;
      }
      std::vector<Object> items;
      for (const auto& o : selection_.objects) {
        const backup::ObjectRef r = backup::RefOf(o);
        if (r.group == kind.group && r.kind == kind.kind) items.push_back(o);
      }
      AddKind(kind.Name(), std::move(items));
    }
  }

  void AddKind(const std::string& name, std::vector<Object> items) {
    manifest_.counts[name] = static_cast<int64_t>(items.size());
    err_ << name << ": " << items.size() << "\n";
    total_ += items.size();
    if (items.empty()) return;
    for (auto& o : items) {
      if (!kube::NamespaceOf(o).empty()) namespaces_.insert(kube::NamespaceOf(o));
      o = backup::StripForBackup(std::move(o));
    }
    files_[name + ".yaml"] = backup::RenderList(std::move(items));
  }

  // The clusters' IPPool entries, as a record: from each Harvester the
  // identity Secrets (or --harvester-kubeconfig) reach. Never a failure.
  void Allocations() {
    std::map<std::string, std::string> harvesters;  // identity -> kubeconfig ("" = the flag's)
    std::string why_none = "Harvester did not answer";
    if (!f_.harvester_kubeconfig.empty()) {
      harvesters[""] = "";
    } else {
      for (const auto& o : selection_.objects) {
        if (backup::RefOf(o).kind != "HarvesterCluster") continue;
        for (const auto& ref : backup::ReferencesOf(o)) {
          if (ref.kind != "Secret") continue;
          if (auto kubeconfig = IdentityKubeconfig(secrets_, ref)) {
            harvesters[ref.ns + "/" + ref.name] = *kubeconfig;
          } else {
            notes_.push_back("identity " + ref.String() + " holds no kubeconfig");
          }
        }
      }
      if (harvesters.empty()) why_none = "no HarvesterCluster with a readable identity Secret";
    }
    std::map<std::string, std::vector<backup::PoolEntry>> by_server;
    size_t entries = 0;
    for (const auto& [identity, kubeconfig] : harvesters) {
      auto config = identity.empty() ? kube::LoadKubeconfigFile(f_.harvester_kubeconfig)
                                     : kube::LoadKubeconfigString(kubeconfig, "/nonexistent");
      if (!config.ok()) {
        notes_.push_back("ip pools: " + (identity.empty() ? "--harvester-kubeconfig" : identity) +
                         ": " + config.status().message());
        continue;
      }
      if (by_server.contains(config->server)) continue;
      config->request_timeout = std::chrono::seconds(20);
      auto hv = kube::Client::New(*config);
      kube::StatusOr<kube::ObjectList> pools = hv.ok()
                                                   ? (*hv)->ListAll(harvester::kIPPools, "")
                                                   : kube::StatusOr<kube::ObjectList>(hv.status());
      if (!pools.ok()) {
        notes_.push_back("ip pools of " + config->server + ": " + pools.status().message());
        continue;
      }
      auto found = backup::AllocationsOf(pools->items, selection_.objects);
      entries += found.size();
      by_server[config->server] = std::move(found);
    }
    if (by_server.empty()) {
      manifest_.allocations = "not recorded: " + why_none;
      err_ << "ip pool allocations: " << manifest_.allocations << "\n";
      return;
    }
    files_[backup::kAllocationsFile] = backup::RenderAllocations(by_server);
    manifest_.allocations = std::to_string(entries) + " entries from " +
                            std::to_string(by_server.size()) + " Harvester";
    err_ << "ip pool allocations: " << entries << " entries\n";
  }

  kube::Client& client_;
  Discovery discovery_;
  const BackupFlags& f_;
  std::ostream& err_;
  const std::string scope_;  // "" = every namespace
  const std::string where_;  // for messages
  backup::Manifest manifest_;
  backup::Selection selection_;
  std::vector<Object> secrets_;
  std::vector<Object> config_maps_;
  std::vector<std::string> notes_;
  std::map<std::string, std::string> files_;
  std::set<std::string> namespaces_;
  size_t total_ = 0;
};

}  // namespace

int RunBackup(const BackupFlags& f, std::ostream& /*out*/, std::ostream& err) {
  if (f.all_namespaces && !f.ns.empty()) {
    err << kMe << "-n and -A exclude each other\n";
    return 2;
  }
  if (f.output.empty()) {
    err << kMe << "-o: required (a directory, or a file ending in .tar.gz)\n";
    return 2;
  }
  std::error_code ec;
  if (!backup::IsTarball(f.output) && std::filesystem::exists(f.output, ec) &&
      (!std::filesystem::is_directory(f.output, ec) || !std::filesystem::is_empty(f.output, ec))) {
    err << kMe << "-o: " << f.output
        << " exists and is not an empty directory (name a new one, or a .tar.gz file)\n";
    return 2;
  }
  int rc = 0;
  auto mgmt = ConnectManagement(f.kubeconfig, kMe, err, &rc);
  if (!mgmt) return rc;
  return Backuper(*mgmt->client, mgmt->config, f, err).Run();
}

}  // namespace caphv::cli
