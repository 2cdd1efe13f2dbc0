// File: test/helpers/lease_candidate.cc
//
// A leader-election candidate for integration tests. It runs the runtime's
// LeaderElector against a kubeconfig and prints its timeline on stdout, one
// line each, flushed at once:
//   <epoch ms> <identity> leading
//   <epoch ms> <identity> stopped leading
// SIGTERM/SIGINT end the election (releasing the lease) and exit 0; a lost
// lease exits 1; bad arguments exit 2.
//
//   lease_candidate --kubeconfig K --namespace N --name L --identity A
//     [--lease-duration 4] [--renew-deadline 3] [--retry-period 0.5] [-v 5]

#include <CLI/CLI.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>

#include "kube/client.h"
#include "kube/config.h"
#include "kube/leader_election.h"
#include "kube/log.h"
#include "kube/signals.h"

namespace {

std::mutex out_mu;

void Print(const std::string& identity, const char* what) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count();
  std::lock_guard lock(out_mu);
  std::printf("%lld %s %s\n", static_cast<long long>(ms), identity.c_str(), what);
  std::fflush(stdout);
}

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

}  // namespace

int main(int argc, char** argv) {
  std::stop_token stop = caphv::kube::SetupSignalHandler();

  CLI::App app{"Leader-election candidate for tests"};
  std::string kubeconfig, ns = "default", name = "lease-candidate", identity;
  double lease_duration = 15, renew_deadline = 10, retry_period = 2;
  int verbosity = 0;
  app.add_option("--kubeconfig", kubeconfig, "kubeconfig path")->required();
  app.add_option("--namespace", ns, "lease namespace");
  app.add_option("--name", name, "lease name");
  app.add_option("--identity", identity, "holder identity (default hostname_uuid)");
  app.add_option("--lease-duration", lease_duration, "seconds");
  app.add_option("--renew-deadline", renew_deadline, "seconds");
  app.add_option("--retry-period", retry_period, "seconds");
  app.add_option("-v,--v", verbosity, "log verbosity");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  caphv::kube::log::Configure(verbosity, caphv::kube::log::Format::kText, &std::cerr);
  auto logger = caphv::kube::log::Root().WithName("lease-candidate");

  auto config = caphv::kube::LoadKubeconfigFile(kubeconfig);
  if (!config.ok()) {
    logger.Error(config.status(), "Cannot load kubeconfig");
    return 2;
  }
  auto client = caphv::kube::Client::New(*config);
  if (!client.ok()) {
    logger.Error(client.status(), "Cannot create client");
    return 2;
  }
  auto elector = caphv::kube::LeaderElector::New(*client, {.lease_namespace = ns,
                                                           .lease_name = name,
                                                           .identity = identity,
                                                           .lease_duration = Millis(lease_duration),
                                                           .renew_deadline = Millis(renew_deadline),
                                                           .retry_period = Millis(retry_period)});
  if (!elector.ok()) {
    logger.Error(elector.status(), "Invalid leader election settings");
    return 2;
  }
  const std::string id = (*elector)->identity();
  caphv::kube::Status status =
      (*elector)->Run(stop, {.on_started_leading =
                                 [&](std::stop_token leading) {
                                   Print(id, "leading");
                                   std::mutex mu;
                                   std::condition_variable_any cv;
                                   std::unique_lock lock(mu);
                                   cv.wait(lock, leading, [] { return false; });
                                   Print(id, "stopped leading");
                                 },
                             .on_stopped_leading = [] {}});
  if (!status.ok()) {
    logger.Error(status, "Leader election lost");
    return 1;
  }
  return 0;
}
