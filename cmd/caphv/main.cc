// File: cmd/caphv/main.cc
//
// caphv: the command-line tool of CAPHV (docs/cli.md).
//   caphv generate --name N --image I --ssh-keypair K --network NET --gateway G
//       --subnet-mask M --ip-pool P --harvester-kubeconfig F [flags] [-o FILE] [--apply]
//       prints (or applies) every object of a Cluster of the ClusterClass harvester-rke2.
//   caphv doctor --harvester-kubeconfig F [--kubeconfig MGMT] [--image I] [--ssh-keypair K]
//       [--network NET] [--ip-pool P,...] [--replicas N] [-o json]
//       checks what such a Cluster needs; the exit code is the number of failures.
// A bad flag prints one line and exits 2.

#include <CLI/CLI.hpp>
#include <iostream>

#include "doctor_command.h"
#include "generate_command.h"
#include "kube/log.h"

int main(int argc, char** argv) {
  CLI::App app{"caphv: clusters of the ClusterClass harvester-rke2 on Harvester", "caphv"};
  app.require_subcommand(1);
  caphv::cli::GenerateFlags generate;
  CLI::App* generate_cmd = caphv::cli::AddGenerateCommand(app, generate);
  caphv::cli::DoctorFlags doctor;
  CLI::App* doctor_cmd = caphv::cli::AddDoctorCommand(app, doctor);
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
  return 2;
}
