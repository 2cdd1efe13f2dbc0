// File: controllers/harvester_connections.cc

#include "controllers/harvester_connections.h"

#include <atomic>

#include "controllers/capi.h"
#include "kube/base64.h"
#include "kube/log.h"

namespace caphv::controllers {

namespace {

std::string WaiterId(const Waiter& w) {
  return (w.kind == Waiter::Kind::kCluster ? "cluster:" : "machine:") + w.request.Key();
}

kube::PoolOptions Options(kube::Clock* clock) {
  kube::PoolOptions o;
  o.name = "Harvester connection cache";
  o.clock = clock;
  o.connecting_message = [](const std::string& key) {
    return "connecting to Harvester with the identity Secret " + key;
  };
  return o;
}

// `callbacks`, silent until `synced` is true.
ConnectionCallbacks AfterSync(const ConnectionCallbacks& callbacks,
                              const std::shared_ptr<std::atomic<bool>>& synced) {
  auto gate = [synced](const std::function<void(const kube::Request&)>& f) {
    return f ? std::function<void(const kube::Request&)>([synced, f](const kube::Request& r) {
      if (synced->load()) f(r);
    })
             : f;
  };
  ConnectionCallbacks out;
  out.machine_event = gate(callbacks.machine_event);
  out.cluster_event = gate(callbacks.cluster_event);
  return out;
}

}  // namespace

HarvesterConnections::HarvesterConnections(std::shared_ptr<kube::Client> mgmt,
                                           std::shared_ptr<kube::Informer> secrets,
                                           ConnectionCallbacks callbacks, kube::Clock* clock)
    : mgmt_(std::move(mgmt)),
      callbacks_(std::move(callbacks)),
      // A change of an identity Secret in use starts the new attempt at once
      // (its waiters are woken when it ends), without waiting for a reconcile.
      pool_(
          std::move(secrets), [](const kube::Object& secret) { return kube::KeyOf(secret); },
          [this](const kube::BuildContext<Connection>& ctx) { return Build(ctx); },
          Options(clock)) {}

HarvesterConnections::~HarvesterConnections() { Stop(); }

void HarvesterConnections::Stop() { pool_.Stop(); }

ConnectionLookup HarvesterConnections::Get(const std::string& ns, const std::string& name,
                                           const Waiter& waiter) {
  kube::PoolWaiter w;
  w.id = WaiterId(waiter);
  w.notify = [callbacks = &callbacks_, waiter] {
    const auto& f =
        waiter.kind == Waiter::Kind::kCluster ? callbacks->cluster_event : callbacks->machine_event;
    if (f) f(waiter.request);
  };
  return pool_.Get(ns + "/" + name, ns, name, w);
}

void HarvesterConnections::Sweep(const std::function<bool(const std::string&)>& in_use) {
  pool_.Sweep(in_use);
}

kube::BuildResult<Connection> HarvesterConnections::Build(
    const kube::BuildContext<Connection>& ctx) {
  using Result = kube::BuildResult<Connection>;
  const auto slash = ctx.key.find('/');
  const std::string ns = ctx.key.substr(0, slash);
  const std::string name = slash == std::string::npos ? ctx.key : ctx.key.substr(slash + 1);
  const std::string identity = "identity Secret " + ctx.key;
  auto log = kube::log::Root().WithName("harvester");
  ctx.SetProgress("connecting to Harvester with the " + identity);

  auto secret = mgmt_->Get(kube::resources::kSecrets, ns, name);
  if (!secret.ok() && secret.status().IsNotFound() && ctx.previous) {
    // Deleting a namespace removes its Secrets at once while the clusters
    // and machines in it wait on their finalizers: keep using the last
    // known credentials so their Harvester objects can still be deleted.
    return Result::KeepPrevious();
  }
  if (!secret.ok()) {
    return Result::Failed("IdentitySecretUnavailable",
                          "cannot read the " + identity + ": " + secret.status().message());
  }
  const std::string encoded = Str(*secret, {"data", "kubeconfig"});
  auto kubeconfig = kube::Base64Decode(encoded);
  if (encoded.empty() || !kubeconfig) {
    return Result::Failed("MalformedIdentitySecret",
                          "the " + identity + " has no key `kubeconfig`");
  }
  if (ctx.previous && ctx.previous->kubeconfig() == *kubeconfig) return Result::KeepPrevious();

  const std::string server = KubeconfigServer(*kubeconfig);
  if (!server.empty()) {
    ctx.SetProgress("connecting to Harvester at " + server + " with the " + identity);
  }
  ConnectionError error;
  auto client = ConnectHarvester(*kubeconfig, &error);
  if (!client) {
    log.Info("Cannot connect to Harvester", {{"identity", ctx.key},
                                             {"server", server},
                                             {"reason", error.reason},
                                             {"error", error.status.message()}});
    return Result::Failed(error.reason, error.status.message() + " (" + identity + ")");
  }
  if (ctx.stop.stop_requested()) return Result::Failed("Stopped", "stopped");
  // A first connection's initial lists wake nobody: every object that asked
  // for it waits for it and is woken once when it is ready (the pool's
  // waiters), and would otherwise come again for each of its cached objects
  // (three more reconciles per machine at a restart). A connection that
  // replaces one (new credentials) announces its lists, as its objects may
  // differ from those its machines saw.
  auto synced = std::make_shared<std::atomic<bool>>(ctx.previous != nullptr);
  auto conn = std::make_shared<Connection>(client, *kubeconfig, AfterSync(callbacks_, synced));
  conn->set_identity_expiry(IdentityExpiry(*client));
  const kube::Status started = conn->Start(ctx.stop);
  synced->store(true);
  if (!started.ok()) {
    return Result::Failed("HarvesterConnectionFailed", "Harvester at " + client->config().server +
                                                           ": " + started.message() + " (" +
                                                           identity + ")");
  }
  log.Info("Connected to Harvester", {{"identity", ctx.key}, {"server", conn->server()}});
  return Result::Ready(std::move(conn));
}

ConnectionView ViewOfConnection(const ConnectionLookup& l) {
  ConnectionView v;
  v.ready = l.value != nullptr;
  v.reason = l.reason;
  v.message = l.message;
  v.retry_after = l.retry_after;
  if (l.value) {
    v.server = l.value->server();
    v.identity_expiry = l.value->identity_expiry();
  }
  return v;
}

}  // namespace caphv::controllers
