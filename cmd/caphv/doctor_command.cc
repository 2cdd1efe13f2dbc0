// File: cmd/caphv/doctor_command.cc
//
// `caphv doctor`'s flags, its run over the two families of checks
// (doctor_checks.h) and the report.

#include "doctor_command.h"

#include <regex>
#include <string>
#include <vector>

#include "doctor_checks.h"

namespace caphv::cli {

using api::Json;
using doctor::HarvesterChecks;
using doctor::ManagementChecks;

CLI::App* AddDoctorCommand(CLI::App& app, DoctorFlags& f) {
  auto* cmd = app.add_subcommand("doctor", "Check Harvester and the management cluster");
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->add_option("--harvester-kubeconfig", f.harvester_kubeconfig, "Harvester kubeconfig")
      ->required();
  cmd->add_option("--kubeconfig", f.kubeconfig, "Management cluster kubeconfig (optional)");
  cmd->add_option("--namespace", f.ns, "Namespace of the ClusterClass")->capture_default_str();
  cmd->add_option("--class", f.cls, "ClusterClass")->capture_default_str();
  cmd->add_option("--image", f.image, "VM image (namespace/name)");
  cmd->add_option("--ssh-keypair", f.ssh_keypair, "KeyPair (namespace/name)");
  cmd->add_option("--network", f.network, "VM network (namespace/name)");
  cmd->add_option("--ip-pool,--ip-pool-refs", f.ip_pools, "IPPools, comma-separated");
  cmd->add_option("--replicas", f.replicas, "Machines the pools must hold")->capture_default_str();
  cmd->add_option("-o,--output", f.output, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->add_option_function<std::string>(
      "--timeout",
      [&f](const std::string& s) {
        static const std::regex re("([0-9]+)(ms|s)");
        std::smatch m;
        if (!std::regex_match(s, m, re) || std::stol(m[1]) == 0) {
          throw CLI::ValidationError("--timeout", "\"" + s + "\" is not a duration (e.g. 5s)");
        }
        const long n = std::stol(m[1]);
        f.timeout = std::chrono::milliseconds(m[2] == "s" ? n * 1000 : n);
      },
      "Connect timeout per apiserver (default 5s)");
  return cmd;
}

std::string RenderChecks(const std::vector<Check>& checks, bool json) {
  if (json) {
    Json out = Json::array();
    for (const auto& c : checks) {
      Json j = {{"name", c.name}, {"ok", c.ok}, {"detail", c.detail}};
      if (!c.fix.empty()) j["fix"] = c.fix;
      if (c.warning) j["warning"] = true;
      out.push_back(j);
    }
    return out.dump(2) + "\n";
  }
  std::string out;
  for (const auto& c : checks) {
    out += std::string(c.ok ? (c.warning ? "! " : "✓ ") : "✗ ") + c.name + ": " + c.detail;
    if (!c.fix.empty()) out += "; fix: " + c.fix;
    out += "\n";
  }
  return out;
}

int RunDoctor(const DoctorFlags& f, std::ostream& out, std::ostream& /*err*/) {
  std::vector<Check> checks = HarvesterChecks(f);
  if (!f.kubeconfig.empty()) {
    for (auto& c : ManagementChecks(f)) checks.push_back(std::move(c));
  }
  out << RenderChecks(checks, f.output == "json");
  int failures = 0;
  for (const auto& c : checks) failures += c.ok ? 0 : 1;
  return failures;
}

}  // namespace caphv::cli
