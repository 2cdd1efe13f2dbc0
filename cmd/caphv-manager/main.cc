// File: cmd/caphv-manager/main.cc
//
// caphv-manager: the controller manager of the Cluster API infrastructure
// provider for Harvester. Parses flags, configures logging, loads the
// Kubernetes client configuration and runs the Manager until SIGTERM/SIGINT
// (a second signal exits 1 at once).
//
// Exit codes: 0 clean stop, 1 runtime failure (start-up, a cache that does
// not sync, a failed runnable, a lost lease: at once), 2 bad flags.

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "controllers/setup.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/heap.h"
#include "kube/log.h"
#include "kube/signals.h"
#include "manager.h"
#include "options.h"
#include "version.h"

namespace {

using caphv::manager::Options;
namespace log = caphv::kube::log;

// The Lease namespace: the flag, else the pod's namespace (service-account
// file or $POD_NAMESPACE).
std::string LeaderElectionNamespace(const Options& o) {
  if (!o.leader_election_namespace.empty()) return o.leader_election_namespace;
  std::ifstream in("/var/run/secrets/kubernetes.io/serviceaccount/namespace");
  std::string ns;
  if (in && std::getline(in, ns) && !ns.empty()) return ns;
  if (const char* env = std::getenv("POD_NAMESPACE"); env != nullptr) return env;
  return {};
}

int Main(int argc, char** argv) {
  std::stop_token stop = caphv::kube::SetupSignalHandler();

  const char* tmpdir = std::getenv("TMPDIR");
  auto parsed = caphv::manager::ParseOptions(argc, argv, tmpdir != nullptr ? tmpdir : "");
  if (!parsed.ok()) {
    std::cerr << "caphv-manager: " << parsed.status().message() << " (see caphv-manager --help)\n";
    return 2;
  }
  Options options = std::move(parsed).value();
  if (options.show_help) {
    std::cout << options.help_text;
    return 0;
  }
  if (options.show_version) {
    std::cout << caphv::manager::VersionLine() << "\n";
    return 0;
  }

  log::Configure(options.log.verbosity, options.log.format, nullptr, options.log.time);
  auto logger = log::Root().WithName("setup");
  const caphv::manager::BuildInfo& build = caphv::manager::Build();
  logger.Info("Starting caphv-manager",
              {{"version", build.version},
               {"commit", build.commit},
               {"buildDate", build.date},
               {"metricsBindAddress", options.metrics_bind_address},
               {"metricsSecure", options.metrics_secure},
               {"healthProbeBindAddress", options.health_probe_bind_address},
               {"leaderElect", options.leader_elect},
               {"enableWebhooks", options.enable_webhooks},
               {"webhookPort", options.webhook_port},
               {"concurrency", options.concurrency},
               {"syncPeriod", caphv::manager::FormatDuration(options.sync_period)},
               {"namespace", options.watch_namespace},
               {"watchFilter", options.watch_filter}});

  if (options.leader_elect) {
    options.leader_election_namespace = LeaderElectionNamespace(options);
    if (options.leader_election_namespace.empty()) {
      logger.Error("not running in-cluster", "Unable to find the leader election namespace",
                   {{"hint", "set --leader-election-namespace"}});
      return 1;
    }
  }

  auto config = caphv::kube::LoadDefaultConfig(options.kubeconfig);
  if (!config.ok()) {
    logger.Error(config.status(), "Unable to load the Kubernetes client configuration");
    return 1;
  }
  logger.V(1).Info("Loaded the Kubernetes client configuration", {{"server", config->server}});
  config->user_agent = "caphv-manager/" + std::string(build.version);
  auto client = caphv::kube::Client::New(std::move(config).value());
  if (!client.ok()) {
    logger.Error(client.status(), "Unable to create the Kubernetes client");
    return 1;
  }

  caphv::controllers::ControllerOptions controller_options;
  controller_options.watch_namespace = options.watch_namespace;
  controller_options.watch_filter = options.watch_filter;
  controller_options.concurrency = options.concurrency;
  controller_options.sync_period = options.sync_period;
  controller_options.cache_sync_timeout = options.cache_sync_timeout;
  std::shared_ptr<caphv::kube::Client> mgmt = *client;

  auto controllers = caphv::controllers::Controllers::New(mgmt, controller_options);
  if (!controllers.ok()) {
    logger.Error(controllers.status(), "Unable to set up the controllers");
    return 1;
  }
  std::shared_ptr<caphv::controllers::Controllers> ctrl = std::move(controllers).value();
  caphv::controllers::Controllers* c = ctrl.get();
  caphv::manager::Manager manager(std::move(options), mgmt);
  // The management-cluster caches run on every replica, from before leader
  // election; stopping them (destroying the controllers) comes after the
  // reconcilers returned.
  manager.AddCache(
      "controllers", [c](std::stop_token s) { return c->StartCaches(s); },
      [&ctrl] { ctrl.reset(); });
  // The HarvesterCluster and HarvesterMachine reconcilers run while this
  // process leads.
  manager.AddLeaderRunnable("controllers", [c](std::stop_token s) { return c->Run(s); });
  return manager.Run(stop);
}

}  // namespace

int main(int argc, char** argv) {
  // glibc's per-thread caches keep freed memory no trim gives back; they are
  // off unless GLIBC_TUNABLES sets them (kube/heap.h). Returns when the
  // process already runs that way.
  caphv::kube::ExecWithoutThreadCaches(argv);
  // Before the caches fill and threads start: the LIST bodies of a start-up
  // must not fragment the heap, and two arenas reuse each other's holes
  // (kube/heap.h).
  caphv::kube::KeepLargeBlocksMapped();
  caphv::kube::LimitArenas();
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    caphv::kube::log::Root().Error(e.what(), "Fatal error");
    return 1;
  } catch (...) {
    caphv::kube::log::Root().Error("unknown exception", "Fatal error");
    return 1;
  }
}
