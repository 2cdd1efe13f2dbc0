// File: cmd/caphv/backup_command.h
//
// `caphv backup` (docs/cli.md): saves what a new management cluster needs to
// take the clusters of this one over — the Cluster API and CAPHV objects,
// the Secrets and ConfigMaps they use and, when Harvester answers, a record
// of the clusters' IPPool entries — to a directory or a .tar.gz, one YAML
// file per kind plus a manifest. What it selects and keeps is decided in
// backup/backup.h; this reads the management cluster (and Harvester) and
// writes the files. One progress line per kind on stderr.

#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <string>

namespace caphv::cli {

struct BackupFlags {
  std::string kubeconfig;            // management cluster; "" = the default chain
  std::string ns;                    // -n; "" = the kubeconfig's namespace
  bool all_namespaces = false;       // -A
  std::string cluster;               // --cluster: only that Cluster's objects
  std::string output;                // -o DIR or FILE.tar.gz
  std::string harvester_kubeconfig;  // else the HarvesterClusters' identity Secrets
};

CLI::App* AddBackupCommand(CLI::App& app, BackupFlags& flags);

// 0 when written; 2 on a bad flag or an -o that cannot be used (one line on
// `err`); 1 on any other failure (the management cluster unreachable or
// refusing a read, the files not written).
int RunBackup(const BackupFlags& flags, std::ostream& out, std::ostream& err);

}  // namespace caphv::cli
