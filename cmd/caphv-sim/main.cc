// File: cmd/caphv-sim/main.cc
//
// caphv-sim: the Harvester simulator the project is tested against.
//   caphv-sim install --kubeconfig H [--env FILE] [--kubevirt-crds DIR]
//       installs Harvester's CRDs, Deployment, settings and ClusterRoles into
//       the apiserver of H, seeds the environment and exits 0. With
//       --kubevirt-crds, the KubeVirt VM and VMI CRDs are those of DIR's *.yaml
//       (hack/build-testbins.sh kubevirt-crds), not the embedded subsets.
//   caphv-sim run --kubeconfig H --workload-kubeconfig W [--env FILE]
//       [--namespace NS] [--health-probe-bind-address 127.0.0.1:PORT]
//       [--webhook-bind-address 127.0.0.1:0] [--cert-dir DIR]
//       [--boot-delay 0s] [--ip-delay 0s] [--fault-rate 0] [--no-cloud-provider]
//       plays Harvester/KubeVirt on H and the guest cluster on W until SIGTERM.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <thread>

#include "kube/client.h"
#include "kube/config.h"
#include "kube/health.h"
#include "kube/http_server.h"
#include "kube/log.h"
#include "kube/signals.h"
#include "sim/env.h"
#include "sim/install.h"
#include "sim/kubelet_proxy.h"
#include "sim/simulator.h"
#include "sim/webhook.h"

namespace {

using caphv::kube::Status;
namespace kube = caphv::kube;
namespace sim = caphv::sim;

// "1.5s", "200ms", "2m", "0" -> milliseconds; throws CLI::ValidationError.
std::chrono::milliseconds ParseDuration(const std::string& s) {
  static const std::regex kRe(R"(^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)?$)");
  std::smatch m;
  if (!std::regex_match(s, m, kRe)) throw CLI::ValidationError("duration", "invalid: " + s);
  const double v = std::stod(m[1]);
  const std::string unit = m[2];
  const double ms = unit == "ms"  ? v
                    : unit == "m" ? v * 60000
                    : unit == "h" ? v * 3600000
                                  : v * 1000;
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

std::shared_ptr<kube::Client> ClientFor(const std::string& kubeconfig) {
  auto config = kube::LoadKubeconfigFile(kubeconfig);
  if (!config.ok()) throw std::runtime_error(config.status().ToString());
  config->user_agent = "caphv-sim";
  auto client = kube::Client::New(*config);
  if (!client.ok()) throw std::runtime_error(client.status().ToString());
  return *client;
}

sim::Environment EnvFrom(const std::string& path) {
  auto env = sim::LoadEnvironment(path);
  if (!env.ok()) throw std::runtime_error(env.status().ToString());
  return *env;
}

int Install(const std::string& kubeconfig, const std::string& env_path,
            const std::string& kubevirt_crds) {
  auto client = ClientFor(kubeconfig);
  Status s = sim::Install(*client, EnvFrom(env_path), kubevirt_crds);
  if (!s.ok()) {
    kube::log::Root().Error(s, "Install failed");
    return 1;
  }
  kube::log::Root().Info("Installed the simulated Harvester",
                         {{"kubevirtCrds", kubevirt_crds.empty() ? "embedded" : kubevirt_crds}});
  return 0;
}

struct RunFlags {
  std::string kubeconfig, workload_kubeconfig, env, ns, probe_addr, webhook_addr = "127.0.0.1:0",
                                                                    cert_dir;
  std::string boot_delay = "0s", ip_delay = "0s";
  double fault_rate = 0;
  bool no_cloud_provider = false;
  std::string etcd_binary, etcd_dir, kubelet_socket, kubelet_address;
};

int Run(const RunFlags& f, std::stop_token stop) {
  auto log = kube::log::Root().WithName("caphv-sim");
  sim::SimOptions opt;
  opt.boot_delay = ParseDuration(f.boot_delay);
  opt.ip_delay = ParseDuration(f.ip_delay);
  opt.fault_rate = f.fault_rate;
  opt.cloud_provider = !f.no_cloud_provider;
  opt.ns = f.ns;
  opt.env = EnvFrom(f.env);
  opt.etcd = {.binary = f.etcd_binary, .root = f.etcd_dir};
  auto h = ClientFor(f.kubeconfig);
  auto w = ClientFor(f.workload_kubeconfig);
  sim::MarkDeploymentAvailable(*h).IgnoreError();
  sim::Simulator simulator(h, w, opt);

  // The guests' kubelets, reached by the workload apiserver through its
  // egress selector.
  std::unique_ptr<sim::KubeletProxy> kubelet_proxy;
  if (!f.kubelet_socket.empty()) {
    const size_t colon = f.kubelet_address.rfind(':');
    if (colon == std::string::npos) {
      throw std::runtime_error("--kubelet-address must be HOST:PORT (got '" + f.kubelet_address +
                               "')");
    }
    kubelet_proxy = std::make_unique<sim::KubeletProxy>(sim::KubeletProxyOptions{
        .socket_path = f.kubelet_socket,
        .kubelet_host = f.kubelet_address.substr(0, colon),
        .kubelet_port = std::stoi(f.kubelet_address.substr(colon + 1)),
        .allow = [&simulator](const std::string& host) { return simulator.KubeletReachable(host); },
    });
    if (Status s = kubelet_proxy->Start(); !s.ok()) throw std::runtime_error(s.ToString());
  }

  // Webhook: a certificate from --cert-dir, or a fresh self-signed one.
  std::string cert_dir = f.cert_dir;
  if (cert_dir.empty()) {
    cert_dir =
        (std::filesystem::temp_directory_path() / ("caphv-sim-" + std::to_string(::getpid())))
            .string();
    auto cert = sim::GenerateServingCert("127.0.0.1");
    if (!cert.ok()) throw std::runtime_error(cert.status().ToString());
    if (Status s = sim::WriteCert(*cert, cert_dir); !s.ok()) throw std::runtime_error(s.ToString());
  }
  std::string ca;
  {
    std::ifstream in(cert_dir + "/ca.crt");
    if (!in) in.open(cert_dir + "/tls.crt");
    ca.assign(std::istreambuf_iterator<char>(in), {});
  }
  kube::HttpServer webhook({.name = "webhook",
                            .bind_address = f.webhook_addr,
                            .body_limit = 7 << 20,
                            .cert_dir = cert_dir});
  webhook.Handle(sim::kWebhookPath, [&simulator](const kube::HttpRequest& r) {
    kube::HttpResponse resp;
    resp.content_type = "application/json";
    resp.body = sim::ReviewVm(r.body, [&](const kube::Object& vm) { return simulator.Admit(vm); });
    return resp;
  });
  webhook.Handle(sim::kMutateVmPath, [&simulator](const kube::HttpRequest& r) {
    kube::HttpResponse resp;
    resp.content_type = "application/json";
    resp.body = sim::ReviewVmMutation(
        r.body, [&](const kube::Object& vm) { return simulator.MutateVm(vm); });
    return resp;
  });
  webhook.Handle(sim::kLbWebhookPath, [&simulator](const kube::HttpRequest& r) {
    kube::HttpResponse resp;
    resp.content_type = "application/json";
    resp.body = sim::Review(
        r.body,
        [&](const std::string& op, const kube::Object& o,
            const kube::Object* old) -> std::vector<std::string> {
          if (o.value("kind", "") == "IPPool") return simulator.AdmitPool(op, o);
          if (op != "CREATE" && op != "UPDATE") return {};
          return simulator.AdmitLb(o, old);
        },
        sim::kLoadBalancerRefusal);
    return resp;
  });
  if (Status s = webhook.Start(); !s.ok()) throw std::runtime_error(s.ToString());
  const std::string webhook_name = f.ns.empty() ? "caphv-sim" : "caphv-sim-" + f.ns;
  const std::string url = "https://127.0.0.1:" + std::to_string(webhook.port());

  std::unique_ptr<kube::HttpServer> probes_server;
  kube::health::Probes probes;
  if (!f.probe_addr.empty()) {
    probes.AddReadyzCheck("caches", [&simulator] {
      return simulator.Synced() ? Status() : Status(kube::StatusCode::kUnavailable, "syncing");
    });
    probes_server = std::make_unique<kube::HttpServer>(
        kube::HttpServerOptions{.name = "probes", .bind_address = f.probe_addr});
    probes.Register(*probes_server);
    if (Status s = probes_server->Start(); !s.ok()) throw std::runtime_error(s.ToString());
  }

  std::jthread registrar([&](std::stop_token st) {
    // Register the webhook once the caches can answer, so early requests are
    // not judged against empty caches.
    while (!st.stop_requested() && !simulator.Synced()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (st.stop_requested()) return;
    try {  // a thread top: nothing may escape
      // The mutator first: once the validating configuration exists (what
      // tests wait for), both answer.
      auto mutating = sim::MutatingWebhookConfiguration(webhook_name, url, ca, f.ns);
      auto m = h->Apply(kube::resources::kMutatingWebhookConfigurations, "", mutating,
                        {.field_manager = "caphv-sim", .force = true});
      if (!m.ok()) log.Error(m.status(), "Cannot register the mutating webhook");
      // IPPools are cluster-scoped: only the simulator of every namespace judges them.
      auto cfg = sim::WebhookConfiguration(webhook_name, url, ca, f.ns, f.ns.empty());
      auto applied = h->Apply(kube::resources::kValidatingWebhookConfigurations, "", cfg,
                              {.field_manager = "caphv-sim", .force = true});
      if (!applied.ok()) {
        log.Error(applied.status(), "Cannot register the validating webhook");
      } else {
        log.Info("Registered the validating webhook", {{"url", url}});
      }
    } catch (const std::exception& e) {
      log.Error(e.what(), "Cannot register the validating webhook");
    }
  });
  log.Info("Running", {{"namespace", f.ns.empty() ? "*" : f.ns},
                       {"bootDelay", f.boot_delay},
                       {"ipDelay", f.ip_delay},
                       {"faultRate", f.fault_rate},
                       {"cloudProvider", opt.cloud_provider}});
  Status s = simulator.Run(stop);
  if (kubelet_proxy) kubelet_proxy->Stop();
  registrar.request_stop();
  registrar.join();
  probes.SetShuttingDown();
  h->Delete(kube::resources::kValidatingWebhookConfigurations, "", webhook_name).IgnoreError();
  h->Delete(kube::resources::kMutatingWebhookConfigurations, "", webhook_name).IgnoreError();
  webhook.Shutdown(std::chrono::seconds(5)).IgnoreError();
  if (probes_server) probes_server->Shutdown(std::chrono::seconds(5)).IgnoreError();
  if (f.cert_dir.empty()) std::filesystem::remove_all(cert_dir);
  if (!s.ok()) {
    log.Error(s, "Simulator failed");
    return 1;
  }
  log.Info("Stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::stop_token stop = kube::SetupSignalHandler();
  CLI::App app{"caphv-sim: a Harvester v1.7 simulator at the API level"};
  app.require_subcommand(1);
  int verbosity = 0;
  app.add_option("-v,--v", verbosity, "log verbosity");

  std::string install_kubeconfig, install_env, install_kubevirt_crds;
  auto* install = app.add_subcommand("install", "install Harvester's API surface and seed it");
  install->add_option("--kubeconfig", install_kubeconfig, "Harvester kubeconfig")->required();
  install->add_option("--env", install_env, "environment YAML (default: built-in demo)");
  install->add_option("--kubevirt-crds", install_kubevirt_crds,
                      "directory with KubeVirt's VirtualMachine and VirtualMachineInstance CRDs "
                      "(default: the built-in structural subsets)");

  RunFlags f;
  auto* run = app.add_subcommand("run", "simulate Harvester and the guest cluster");
  run->add_option("--kubeconfig", f.kubeconfig, "Harvester kubeconfig")->required();
  run->add_option("--workload-kubeconfig", f.workload_kubeconfig, "guest cluster kubeconfig")
      ->required();
  run->add_option("--env", f.env, "environment YAML (default: built-in demo)");
  run->add_option("--namespace", f.ns, "only handle this namespace");
  run->add_option("--health-probe-bind-address", f.probe_addr, "serve /healthz and /readyz");
  run->add_option("--webhook-bind-address", f.webhook_addr, "validating webhook address");
  run->add_option("--cert-dir", f.cert_dir, "webhook tls.crt/tls.key (and ca.crt) directory");
  run->add_option("--boot-delay", f.boot_delay, "time from start to a running VMI");
  run->add_option("--ip-delay", f.ip_delay, "time from a running VMI to reported IPs");
  run->add_option("--fault-rate", f.fault_rate, "probability that a simulator write fails")
      ->check(CLI::Range(0.0, 1.0));
  run->add_option("--etcd-binary", f.etcd_binary,
                  "etcd executable: RKE2 servers run one real etcd member each");
  run->add_option("--etcd-dir", f.etcd_dir, "data directory of the etcd members");
  run->add_option("--kubelet-socket", f.kubelet_socket,
                  "serve the workload apiserver's egress (HTTP CONNECT) on this Unix socket");
  run->add_option("--kubelet-address", f.kubelet_address,
                  "HOST:PORT of the kubelet server behind every live guest");
  run->add_flag("--no-cloud-provider", f.no_cloud_provider,
                "guest without cloud provider: Nodes keep the uninitialized taint");
  CLI11_PARSE(app, argc, argv);
  kube::log::Configure(verbosity, kube::log::Format::kText);
  try {
    if (*install) return Install(install_kubeconfig, install_env, install_kubevirt_crds);
    return Run(f, stop);
  } catch (const std::exception& e) {
    kube::log::Root().Error(e.what(), "Fatal");
    return 1;
  }
}
