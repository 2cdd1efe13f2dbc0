// File: cmd/caphv/restore_command.h
//
// `caphv restore` (docs/cli.md): re-applies a backup of `caphv backup` (or
// the files of the operations guide's backup script) onto a management
// cluster, in dependency order: the namespaces, Secrets and ConfigMaps,
// ClusterClasses and templates, HarvesterClusters, Clusters (paused), control
// planes, MachineDeployments, MachineSets, Machines, HarvesterMachines and
// bootstrap configs, ClusterResourceSetBindings and ClusterResourceSets,
// MachineHealthChecks; then the owner references of objects made before
// their owners, then the Clusters unpaused. Objects are created with
// server-side apply (field manager caphv); an object already there is never
// changed. The decisions are in backup/restore.h.

#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <iosfwd>
#include <string>

namespace caphv::cli {

struct RestoreFlags {
  std::string kubeconfig;  // management cluster; "" = the default chain
  std::string from;        // -f DIR or FILE.tar.gz
  bool dry_run = false;    // print the plan, write nothing
  bool force = false;      // restore around objects of the same names with other content
  // How long to wait for a ClusterClass to be reconciled before the
  // topology Clusters of it are created.
  std::chrono::seconds timeout{std::chrono::minutes(2)};
  std::chrono::milliseconds poll{std::chrono::milliseconds(500)};
};

CLI::App* AddRestoreCommand(CLI::App& app, RestoreFlags& flags);

// 0 when restored (or, with --dry-run, when it could be); 2 on a bad flag or
// a backup that cannot be read (one line on `err`, before the management
// cluster is contacted); 1 on any other failure:
// the management cluster unreachable, a kind it does not serve, objects
// in the way (without --force), a write refused.
int RunRestore(const RestoreFlags& flags, std::ostream& out, std::ostream& err);

}  // namespace caphv::cli
