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

int RunBackup(const BackupFlags& f, std::ostream& /*out*/, std::ostream& err) {
  if (f.all_namespaces && !f.ns.empty()) {
    err << kMe << "-n and -A exclude each other\n";
    return 2;
  }
  if (f.output.empty()) {
    err << kMe << "-o: required (a directory, or a file ending in .tar.gz)\n";
    return 2;
  }
  {
    std::error_code ec;
    if (!backup::IsTarball(f.output) && std::filesystem::exists(f.output, ec) &&
        (!std::filesystem::is_directory(f.output, ec) ||
         !std::filesystem::is_empty(f.output, ec))) {
      err << kMe << "-o: " << f.output
          << " exists and is not an empty directory (name a new one, or a .tar.gz file)\n";
      return 2;
    }
  }
  auto config = kube::LoadDefaultConfig(f.kubeconfig);
  if (!config.ok()) {
    err << kMe << "--kubeconfig: " << config.status().message() << "\n";
    return 2;
  }
  auto client_or = kube::Client::New(*config);
  if (!client_or.ok()) {
    err << kMe << client_or.status().message() << "\n";
    return 1;
  }
  kube::Client& client = **client_or;
  const std::string scope =
      f.all_namespaces ? "" : (f.ns.empty() ? config->default_namespace : f.ns);

  backup::Manifest manifest;
  manifest.caphv_version = CAPHV_CLI_VERSION;
  manifest.created = NowRfc3339();
  manifest.server = config->server;
  manifest.all_namespaces = f.all_namespaces;
  if (!f.all_namespaces) manifest.scope = {scope};
  manifest.cluster = f.cluster;
  auto kube_system = client.Get(kube::resources::kNamespaces, "", "kube-system");
  if (!kube_system.ok()) {
    err << kMe << "reading the management cluster " << config->server << ": "
        << kube_system.status().message() << "\n";
    return 1;
  }
  manifest.management_cluster_id = kube::UidOf(*kube_system);

  // Every object of the listed kinds in scope.
  Discovery discovery(client);
  std::vector<Object> listed;
  std::vector<const backup::Kind*> served;
  for (const auto& kind : backup::Kinds()) {
    auto gvr = discovery.Find(kind.group, kind.resource);
    if (!gvr.ok()) {
      err << kMe << "discovering " << kind.Name() << ": " << gvr.status().message() << "\n";
      return 1;
    }
    if (!gvr->has_value()) {
      manifest.skipped[kind.Name()] = "not served by the management cluster";
      continue;
    }
    auto list = client.ListAll(**gvr, scope);
    if (!list.ok()) {
      err << kMe << "listing " << kind.Name() << ": " << list.status().message() << "\n";
      return 1;
    }
    for (auto& o : list->items) {
      SetType(o, **gvr, kind.kind);
      listed.push_back(std::move(o));
    }
    served.push_back(&kind);
  }
  backup::Selection selection = backup::Select(listed, f.cluster);
  const std::string where = scope.empty() ? "in any namespace" : "in namespace " + scope;
  if (!f.cluster.empty() &&
      std::none_of(selection.objects.begin(), selection.objects.end(), [&](const Object& o) {
        const backup::ObjectRef r = backup::RefOf(o);
        return r.kind == "Cluster" && r.name == f.cluster;
      })) {
    err << kMe << "--cluster: no Cluster " << f.cluster << " " << where << "\n";
    return 1;
  }

  // The Secrets labelled with a cluster name, and those the objects name.
  std::vector<Object> secrets;
  std::vector<Object> config_maps;
  std::vector<std::string> notes;
  std::set<backup::ObjectRef> have;
  kube::ListOptions labelled;
  labelled.label_selector =
      std::string(backup::kClusterNameLabel) + (f.cluster.empty() ? "" : "=" + f.cluster);
  auto labelled_secrets = client.ListAll(kube::resources::kSecrets, scope, labelled);
  if (!labelled_secrets.ok()) {
    err << kMe << "listing secrets: " << labelled_secrets.status().message() << "\n";
    return 1;
  }
  for (auto& s : labelled_secrets->items) {
    SetType(s, kube::resources::kSecrets, "Secret");
    have.insert(backup::RefOf(s));
    secrets.push_back(std::move(s));
  }
  for (const auto& [refs, gvr, kind, into] :
       {std::tuple{&selection.secrets, &kube::resources::kSecrets, "Secret", &secrets},
        std::tuple{&selection.config_maps, &kube::resources::kConfigMaps, "ConfigMap",
                   &config_maps}}) {
    for (const auto& ref : *refs) {
      if (have.contains(ref)) continue;
      auto got = client.Get(*gvr, ref.ns, ref.name);
      if (got.status().IsNotFound()) {
        notes.push_back(ref.String() + ", which the objects name, does not exist");
        continue;
      }
      if (!got.ok()) {
        err << kMe << "reading " << ref.String() << ": " << got.status().message() << "\n";
        return 1;
      }
      SetType(*got, *gvr, kind);
      have.insert(ref);
      into->push_back(std::move(*got));
    }
  }

  // The files, one per kind.
  std::map<std::string, std::string> files;
  std::set<std::string> namespaces;
  size_t total = 0;
  auto add_kind = [&](const std::string& name, std::vector<Object> items) {
    manifest.counts[name] = static_cast<int64_t>(items.size());
    err << name << ": " << items.size() << "\n";
    total += items.size();
    if (items.empty()) return;
    for (auto& o : items) {
      if (!kube::NamespaceOf(o).empty()) namespaces.insert(kube::NamespaceOf(o));
      o = backup::StripForBackup(std::move(o));
    }
    files[name + ".yaml"] = backup::RenderList(std::move(items));
  };
  add_kind(backup::kSecretKind.Name(), secrets);
  add_kind(backup::kConfigMapKind.Name(), config_maps);
  for (const auto& kind : backup::Kinds()) {
    if (manifest.skipped.contains(kind.Name())) {
      err << kind.Name() << ": skipped, not served by the management cluster\n";
      continue;
    }
    std::vector<Object> items;
    for (const auto& o : selection.objects) {
      const backup::ObjectRef r = backup::RefOf(o);
      if (r.group == kind.group && r.kind == kind.kind) items.push_back(o);
    }
    add_kind(kind.Name(), std::move(items));
  }

  // The IPPool entries of the clusters, as a record.
  std::map<std::string, std::string> harvesters;  // server -> kubeconfig text ("" = the flag's)
  std::string why_none;
  if (!f.harvester_kubeconfig.empty()) {
    harvesters[""] = "";
  } else {
    for (const auto& o : selection.objects) {
      const backup::ObjectRef r = backup::RefOf(o);
      if (r.kind != "HarvesterCluster") continue;
      for (const auto& ref : backup::ReferencesOf(o)) {
        if (ref.kind != "Secret") continue;
        if (auto kc = IdentityKubeconfig(secrets, ref)) {
          harvesters[ref.ns + "/" + ref.name] = *kc;
        } else {
          notes.push_back("identity " + ref.String() + " holds no kubeconfig");
        }
      }
    }
    if (harvesters.empty()) why_none = "no HarvesterCluster with a readable identity Secret";
  }
  std::map<std::string, std::vector<backup::PoolEntry>> allocations;
  std::set<std::string> servers_done;
  size_t entries = 0;
  for (const auto& [identity, kubeconfig] : harvesters) {
    auto hv_config = identity.empty() ? kube::LoadKubeconfigFile(f.harvester_kubeconfig)
                                      : kube::LoadKubeconfigString(kubeconfig, "/nonexistent");
    if (!hv_config.ok()) {
      notes.push_back("ip pools: " + (identity.empty() ? "--harvester-kubeconfig" : identity) +
                      ": " + hv_config.status().message());
      continue;
    }
    if (!servers_done.insert(hv_config->server).second) continue;
    hv_config->request_timeout = std::chrono::seconds(20);
    auto hv = kube::Client::New(*hv_config);
    kube::StatusOr<kube::ObjectList> pools = hv.ok()
                                                 ? (*hv)->ListAll(harvester::kIPPools, "")
                                                 : kube::StatusOr<kube::ObjectList>(hv.status());
    if (!pools.ok()) {
      notes.push_back("ip pools of " + hv_config->server + ": " + pools.status().message());
      continue;
    }
    auto found = backup::AllocationsOf(pools->items, selection.objects);
    entries += found.size();
    allocations[hv_config->server] = std::move(found);
  }
  if (!allocations.empty()) {
    files[backup::kAllocationsFile] = backup::RenderAllocations(allocations);
    manifest.allocations = std::to_string(entries) + " entries from " +
                           std::to_string(allocations.size()) + " Harvester";
    err << "ip pool allocations: " << entries << " entries\n";
  } else {
    manifest.allocations =
        "not recorded: " + (why_none.empty() ? std::string("Harvester did not answer") : why_none);
    err << "ip pool allocations: " << manifest.allocations << "\n";
  }
  for (const auto& n : notes) err << "note: " << n << "\n";

  if (total == 0) {
    err << kMe << "nothing to back up " << where << "; nothing was written\n";
    return 1;
  }
  manifest.namespaces.assign(namespaces.begin(), namespaces.end());
  files[backup::kManifestFile] = backup::RenderManifest(manifest);
  if (kube::Status s = backup::WriteArchive(f.output, files); !s.ok()) {
    err << kMe << "-o: " << s.message() << "\n";
    return 1;
  }
  err << "backup of " << total << (total == 1 ? " object" : " objects") << " in "
      << namespaces.size() << (namespaces.size() == 1 ? " namespace" : " namespaces")
      << " written to " << f.output << "\n";
  return 0;
}

}  // namespace caphv::cli
