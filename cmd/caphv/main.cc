// File: cmd/caphv/main.cc
//
// caphv: the command-line tool of CAPHV (docs/cli.md).
//   caphv generate --name N --image I --ssh-keypair K --network NET --gateway G
//       --subnet-mask M --ip-pool P --harvester-kubeconfig F [flags] [-o FILE] [--apply]
//       prints (or applies) every object of a Cluster of the ClusterClass harvester-rke2.
//   caphv doctor --harvester-kubeconfig F [--kubeconfig MGMT] [--image I] [--ssh-keypair K]
//       [--network NET] [--ip-pool P,...] [--replicas N] [-o json]
//       checks what such a Cluster needs; the exit code is the number of failures.
//   caphv backup [--kubeconfig MGMT] [-n NS | -A] [--cluster NAME] -o DIR|FILE.tar.gz
//       saves the Cluster API and CAPHV objects of the management cluster.
//   caphv restore [--kubeconfig MGMT] -f DIR|FILE.tar.gz [--dry-run] [--force]
//       re-applies them, in dependency order, onto a (new) management cluster.
// A bad flag prints one line and exits 2.

#include <CLI/CLI.hpp>
#include <iostream>

#include "backup_command.h"
#include "doctor_command.h"
#include "generate_command.h"
#include "kube/log.h"
#include "restore_command.h"

int main(int argc, char** argv) {
  CLI::App app{"caphv: clusters of the ClusterClass harvester-rke2 on Harvester", "caphv"};
  app.require_subcommand(1);
  caphv::cli::GenerateFlags generate;
  CLI::App* generate_cmd = caphv::cli::AddGenerateCommand(app, generate);
  caphv::cli::DoctorFlags doctor;
  CLI::App* doctor_cmd = caphv::cli::AddDoctorCommand(app, doctor);
  caphv::cli::BackupFlags backup;
  CLI::App* backup_cmd = caphv::cli::AddBackupCommand(app, backup);
  caphv::cli::RestoreFlags restore;
  CLI::App* restore_cmd = caphv::cli::AddRestoreCommand(app, restore);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "caphv: " << e.what() << "\n";
    return 2;
  }
  caphv::kube::log::Configure(0, caphv::kube::log::Format::kText);
  if (generate_cmd->parsed()) return caphv::cli::RunGenerate(generate, std::cout, std::cerr);
  if (doctor_cmd->parsed()) return caphv::cli::RunDoctor(doctor, std::cout, std::cerr);
  if (backup_cmd->parsed()) return caphv::cli::RunBackup(backup, std::cout, std::cerr);
  if (restore_cmd->parsed()) return caphv::cli::RunRestore(restore, std::cout, std::cerr);
  return 2;
}
