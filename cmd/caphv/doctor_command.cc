// File: cmd/caphv/doctor_command.cc

#include "doctor_command.h"

#include <algorithm>
#include <iostream>
#include <regex>
#include <sstream>

#include "generate/interactive.h"
#include "harvester/identity_expiry.h"
#include "harvester/ipam.h"
#include "harvester/resources.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/credential_expiry.h"
#include "kube/object.h"

namespace caphv::cli {
namespace {

using api::Json;
using kube::GroupVersionResource;

const GroupVersionResource kNetworks{"k8s.cni.cncf.io", "v1", "network-attachment-definitions",
                                     true};
const GroupVersionResource kCrds{"apiextensions.k8s.io", "v1", "customresourcedefinitions", false};
const GroupVersionResource kClusterRoles{"rbac.authorization.k8s.io", "v1", "clusterroles", false};
const GroupVersionResource kClusterClasses{"cluster.x-k8s.io", "v1beta1", "clusterclasses", true};

// Short timeouts: a Harvester (or management cluster) that does not answer is
// a failed check within seconds.
void ShortTimeouts(kube::RestConfig& config, std::chrono::milliseconds connect) {
  config.connect_timeout = connect;
  config.request_timeout = connect * 3;
}

// An error that is not the apiserver's answer (nothing listening, a timeout,
// TLS): the apiserver cannot be reached.
bool Unreachable(const kube::Status& s) { return s.http_status() == 0; }

// The first line of a client error, without the request it was about
// ("GET /apis/...: ").
std::string FirstLine(std::string_view s) {
  s = s.substr(0, s.find('\n'));
  for (std::string_view verb : {"GET /", "POST /"}) {
    if (s.starts_with(verb)) {
      if (const auto colon = s.find(": "); colon != std::string_view::npos)
        s.remove_prefix(colon + 2);
    }
  }
  return std::string(s);
}

std::pair<std::string, std::string> Split(const std::string& ref) {
  const auto slash = ref.find('/');
  if (slash == std::string::npos) return {"default", ref};
  return {ref.substr(0, slash), ref.substr(slash + 1)};
}

bool ConditionTrue(const Json& o, std::string_view type) {
  if (!o.contains("status") || !o["status"].contains("conditions")) return false;
  for (const auto& c : o["status"]["conditions"]) {
    if (c.value("type", std::string()) == type) return c.value("status", std::string()) == "True";
  }
  return false;
}

Check Exists(kube::Client& client, const GroupVersionResource& gvr, const std::string& what,
             const std::string& ref, const std::string& fix) {
  const auto [ns, name] = Split(ref);
  auto got = client.Get(gvr, gvr.namespaced ? ns : "", name);
  if (got.ok()) return {what, true, ref + " exists", ""};
  if (got.status().IsNotFound()) return {what, false, ref + " not found", fix};
  return {what, false, ref + ": " + got.status().message(), fix};
}

std::vector<Check> HarvesterChecks(const DoctorFlags& f) {
  std::vector<Check> checks;
  auto config = kube::LoadKubeconfigFile(f.harvester_kubeconfig);
  if (!config.ok()) {
    checks.push_back({"harvester reachable", false, config.status().message(),
                      "give --harvester-kubeconfig a kubeconfig of Harvester"});
    return checks;
  }
  ShortTimeouts(*config, f.timeout);
  auto client_or = kube::Client::New(*config);
  if (!client_or.ok()) {
    checks.push_back({"harvester reachable", false, client_or.status().message(),
                      "give --harvester-kubeconfig a kubeconfig of Harvester"});
    return checks;
  }
  kube::Client& client = **client_or;
  kube::ListOptions one;
  one.limit = 1;
  auto images = client.List(harvester::kVirtualMachineImages, "", one);
  if (!images.ok()) {
    if (images.status().IsNotFound()) {
      checks.push_back({"harvester reachable", false,
                        "the apiserver serves no harvesterhci.io images: not Harvester",
                        "give --harvester-kubeconfig the kubeconfig of Harvester itself"});
    } else if (Unreachable(images.status())) {
      checks.push_back(
          {"harvester reachable", false,
           "cannot reach " + config->server + ": " + FirstLine(images.status().message()),
           "check the server address of the kubeconfig and that Harvester is up"});
    } else {
      checks.push_back({"harvester reachable", false,
                        config->server + ": " + FirstLine(images.status().message()),
                        "check the credentials of the kubeconfig"});
    }
    return checks;
  }
  checks.push_back({"harvester reachable", true, config->server + " serves Harvester's API", ""});

  if (!f.image.empty()) {
    const auto [ns, name] = Split(f.image);
    auto image = client.Get(harvester::kVirtualMachineImages, ns, name);
    const std::string fix =
        "upload the image in Harvester (Images) or give --image the namespace/name of an "
        "Active one";
    if (!image.ok()) {
      checks.push_back(
          {"image", false,
           f.image + (image.status().IsNotFound() ? " not found" : ": " + image.status().message()),
           fix});
    } else {
      const std::string sc = (*image)["status"].value("storageClassName", std::string());
      if (!ConditionTrue(*image, "Imported")) {
        checks.push_back({"image", false,
                          f.image + " is not Active (" + generate::ImageState(*image) + ")",
                          "wait for the import to finish, or upload the image again"});
      } else if (sc.empty()) {
        checks.push_back({"image", false, f.image + " is Active but has no StorageClass",
                          "re-create the image so Harvester makes its StorageClass"});
      } else {
        checks.push_back({"image", true, f.image + " is Active, StorageClass " + sc, ""});
      }
    }
  }
  if (!f.ssh_keypair.empty()) {
    checks.push_back(Exists(client, harvester::kKeyPairs, "key pair", f.ssh_keypair,
                            "create the KeyPair in Harvester (Advanced > SSH Keys)"));
  }
  if (!f.network.empty()) {
    checks.push_back(Exists(client, kNetworks, "network", f.network,
                            "create the VM network in Harvester (Networks > VM Networks)"));
  }
  if (!f.ip_pools.empty()) {
    int64_t free_total = 0;
    std::stringstream in(f.ip_pools);
    std::string name;
    while (std::getline(in, name, ',')) {
      auto pool = client.Get(harvester::kIPPools, "", name);
      if (!pool.ok()) {
        checks.push_back({"ip pool " + name, false,
                          pool.status().IsNotFound() ? "not found" : pool.status().message(),
                          "create the IPPool in Harvester (Networks > IP Pools)"});
        continue;
      }
      auto parsed = harvester::ParseIpPool(*pool);
      if (!parsed.ok()) {
        checks.push_back(
            {"ip pool " + name, false, parsed.status().message(), "fix the pool's ranges"});
        continue;
      }
      const int64_t total = harvester::TotalAddresses(*parsed);
      const int64_t free =
          std::max<int64_t>(total - static_cast<int64_t>(parsed->allocated.size()), 0);
      free_total += free;
      if (free == 0) {
        // Exhausted: a failure only when the pools together cannot hold the
        // machines (the next check), as later pools take over.
        Check c{"ip pool " + name, true,
                "0 free addresses: all " + std::to_string(total) + " allocated",
                "release addresses (kubectl get ippool " + name +
                    " -o yaml shows who holds them) or add a range"};
        c.warning = true;
        checks.push_back(c);
      } else {
        checks.push_back({"ip pool " + name, true, std::to_string(free) + " free addresses", ""});
      }
    }
    const bool enough = free_total >= f.replicas;
    checks.push_back(
        {"ip pools hold the machines", enough,
         std::to_string(free_total) + " free addresses for " + std::to_string(f.replicas) +
             " machines",
         enough ? "" : "add a range or a pool (--ip-pool-refs), or ask fewer replicas"});
  }
  checks.push_back(Exists(client, kClusterRoles, "cloud-provider ClusterRole",
                          "harvesterhci.io:cloudprovider",
                          "Harvester installs it: check Harvester's version and installation"));

  // The identity's expiry: a JWT's exp, a certificate's notAfter, or the
  // Rancher token's TTL.
  std::optional<kube::CredentialExpiry> expiry = kube::CredentialExpiryOf(*config);
  if (!expiry && !config->token.empty()) {
    const std::string token_name = kube::RancherTokenName(config->token);
    if (!token_name.empty()) {
      auto token = client.Get(harvester::kRancherTokens, "", token_name);
      if (token.ok()) {
        if (auto at = harvester::RancherTokenExpiry(*token)) {
          expiry = kube::CredentialExpiry{*at, "token"};
        }
      }
    }
  }
  if (!expiry) {
    checks.push_back({"identity expiry", true, "the credentials carry no expiry", ""});
  } else {
    const auto now = std::chrono::system_clock::now();
    const auto state = harvester::StateOf(*expiry, now);
    Check c{"identity expiry", state != harvester::ExpiryState::kExpired,
            harvester::DescribeExpiry(*expiry, now), ""};
    if (state != harvester::ExpiryState::kValid) {
      c.fix = "download a new kubeconfig from Harvester and update the identity Secret";
      c.warning = state == harvester::ExpiryState::kExpiringSoon;
    }
    checks.push_back(c);
  }
  return checks;
}

// A provider: its CRD, and how to see that it runs -- a server-side dry-run
// create of a trivial object of one of its kinds through its webhooks, else
// the availability of its Deployments (by label).
struct Provider {
  const char* name;
  const char* crd;
  const char* install_fix;
  GroupVersionResource probe_resource;
  const char* probe_kind;
  const char* probe_spec;  // JSON
  const char* deployment_selector;
  const char* running_fix;
};

const Provider kProviders[] = {
    {"Cluster API",
     "clusters.cluster.x-k8s.io",
     "clusterctl init",
     {"cluster.x-k8s.io", "v1beta1", "clusters", true},
     "Cluster",
     // Cluster API v1.11+ wants a controlPlaneRef, infrastructureRef or topology.
     R"({"infrastructureRef":{"apiVersion":"infrastructure.cluster.x-k8s.io/v1alpha1",
         "kind":"HarvesterCluster","name":"caphv-doctor-probe"}})",
     "cluster.x-k8s.io/provider=cluster-api",
     "check the Cluster API controller (kubectl -n capi-system get pods; its logs)"},
    {"RKE2 control-plane provider",
     "rke2controlplanes.controlplane.cluster.x-k8s.io",
     "clusterctl init --bootstrap rke2 --control-plane rke2",
     {"controlplane.cluster.x-k8s.io", "v1beta1", "rke2controlplanes", true},
     "RKE2ControlPlane",
     R"({"machineTemplate":{"infrastructureRef":{"apiVersion":
         "infrastructure.cluster.x-k8s.io/v1alpha1","kind":"HarvesterMachineTemplate",
         "name":"caphv-doctor-probe"}},
         "rolloutStrategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}}})",
     "cluster.x-k8s.io/provider=control-plane-rke2",
     "check the RKE2 control-plane controller (kubectl -n rke2-control-plane-system get pods)"},
    {"RKE2 bootstrap provider",
     "rke2configs.bootstrap.cluster.x-k8s.io",
     "clusterctl init --bootstrap rke2 --control-plane rke2",
     {"bootstrap.cluster.x-k8s.io", "v1beta1", "rke2configs", true},
     "RKE2Config",
     "{}",
     "cluster.x-k8s.io/provider=bootstrap-rke2",
     "check the RKE2 bootstrap controller (kubectl -n rke2-bootstrap-system get pods)"},
    {"cert-manager",
     "certificates.cert-manager.io",
     "install cert-manager (clusterctl init does)",
     {"cert-manager.io", "v1", "issuers", true},
     "Issuer",
     R"({"selfSigned":{}})",
     "app.kubernetes.io/instance=cert-manager",
     "check cert-manager (kubectl -n cert-manager get pods)"},
    {"CAPHV",
     "harvesterclusters.infrastructure.cluster.x-k8s.io",
     "clusterctl init --infrastructure harvester",
     {"infrastructure.cluster.x-k8s.io", "v1alpha1", "harvesterclustertemplates", true},
     "HarvesterClusterTemplate",
     R"({"template":{"spec":{"targetNamespace":"default",
         "identitySecret":{"name":"hv-identity-secret","namespace":"default"},
         "loadBalancerConfig":{"ipamType":"dhcp"}}}})",
     "cluster.x-k8s.io/provider=infrastructure-harvester",
     "check the CAPHV controller (kubectl -n caphv-system get pods; its logs)"},
};

// "<Provider> running": its webhooks answer a dry-run create, else its
// Deployments are available; "!" when neither can be seen.
Check Running(kube::Client& client, const Provider& p, const std::string& ns, const Json& ns_labels,
              const std::vector<Json>& webhook_configs) {
  const std::string name = std::string(p.name) + " running";
  const std::string resource = p.probe_resource.resource;
  const auto hooks = WebhooksFor(webhook_configs, p.probe_resource.group, resource, ns_labels);
  if (!hooks.empty()) {
    Json probe = {{"apiVersion", p.probe_resource.ApiVersion()},
                  {"kind", p.probe_kind},
                  {"metadata", {{"name", "caphv-doctor-probe"}, {"namespace", ns}}},
                  {"spec", Json::parse(p.probe_spec)}};
    kube::WriteOptions dry_run;
    dry_run.dry_run = true;
    dry_run.field_manager = "caphv-doctor";
    auto r = client.Create(p.probe_resource, ns, probe, dry_run);
    const std::string what = "a dry-run " + std::string(p.probe_kind);
    if (r.ok()) {
      return {name, true,
              what + " passes its " +
                  (hooks.size() == 1 ? "webhook " + hooks.front()
                                     : std::to_string(hooks.size()) + " webhooks"),
              ""};
    }
    const std::string message = FirstLine(r.status().message());
    if (message.find("denied the request") != std::string::npos) {
      return {name, true, "its webhooks answer (" + what + " was denied: " + message + ")", ""};
    }
    if (message.find("failed calling webhook") != std::string::npos ||
        r.status().http_status() >= 500) {
      return {name, false, "its webhook does not answer: " + message, p.running_fix};
    }
    // Another refusal (RBAC, a schema): the Deployments tell.
  }
  kube::ListOptions by_label;
  by_label.label_selector = p.deployment_selector;
  auto deployments = client.List(kube::resources::kDeployments, "", by_label);
  if (deployments.ok() && !deployments->items.empty()) {
    std::string ready, not_ready;
    for (const auto& d : deployments->items) {
      const int64_t want = d["spec"].value("replicas", int64_t{1});
      const int64_t available =
          d.value("status", Json::object()).value("availableReplicas", int64_t{0});
      std::string line = kube::NamespaceOf(d) + "/" + kube::NameOf(d) + " " +
                         std::to_string(available) + "/" + std::to_string(want) + " available";
      std::string& list = available >= want && want > 0 ? ready : not_ready;
      list += (list.empty() ? "" : ", ") + line;
    }
    if (!not_ready.empty()) return {name, false, "Deployment " + not_ready, p.running_fix};
    return {name, true, "Deployment " + ready, ""};
  }
  Check c{name, true,
          "cannot be seen from the API: no webhook for " + resource +
              " and no Deployment labelled " + p.deployment_selector,
          "make sure its controller runs"};
  c.warning = true;
  return c;
}

std::vector<Check> ManagementChecks(const DoctorFlags& f) {
  std::vector<Check> checks;
  auto config = kube::LoadKubeconfigFile(f.kubeconfig);
  if (config.ok()) ShortTimeouts(*config, f.timeout);
  auto client_or = config.ok() ? kube::Client::New(*config)
                               : kube::StatusOr<std::shared_ptr<kube::Client>>(config.status());
  if (!client_or.ok()) {
    checks.push_back({"management cluster", false, client_or.status().message(),
                      "give --kubeconfig the management cluster's kubeconfig"});
    return checks;
  }
  kube::Client& client = **client_or;

  // Where the probes go: the namespace of the class, else default.
  std::string probe_ns = f.ns;
  Json ns_labels = Json::object();
  auto ns = client.Get(kube::resources::kNamespaces, "", f.ns);
  if (!ns.ok() && Unreachable(ns.status())) {
    checks.push_back({"management cluster", false,
                      "cannot reach " + config->server + ": " + FirstLine(ns.status().message()),
                      "check the server address of --kubeconfig and that the cluster is up"});
    return checks;
  }
  if (!ns.ok()) {
    probe_ns = "default";
    ns = client.Get(kube::resources::kNamespaces, "", probe_ns);
  }
  if (ns.ok()) ns_labels = (*ns)["metadata"].value("labels", Json::object());
  std::vector<Json> webhook_configs;
  for (const auto* gvr : {&kube::resources::kValidatingWebhookConfigurations,
                          &kube::resources::kMutatingWebhookConfigurations}) {
    if (auto l = client.List(*gvr, ""); l.ok()) {
      for (auto& c : l->items) webhook_configs.push_back(std::move(c));
    }
  }

  for (const auto& p : kProviders) {
    auto got = client.Get(kCrds, "", p.crd);
    if (got.ok()) {
      checks.push_back({p.name, true, std::string(p.crd) + " installed", ""});
      checks.push_back(Running(client, p, probe_ns, ns_labels, webhook_configs));
    } else {
      checks.push_back(
          {p.name, false,
           std::string(p.crd) +
               (got.status().IsNotFound() ? " not installed" : ": " + got.status().message()),
           p.install_fix});
    }
  }
  checks.push_back(Exists(client, kClusterClasses, "ClusterClass", f.ns + "/" + f.cls,
                          "kubectl apply -n " + f.ns +
                              " -f templates/clusterclass-harvester-rke2.yaml (caphv generate "
                              "--apply does)"));
  return checks;
}

}  // namespace

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

bool SelectorMatches(const Json& selector, const Json& labels) {
  if (!selector.is_object()) return true;
  auto label = [&](const std::string& key) -> std::optional<std::string> {
    if (!labels.is_object() || !labels.contains(key) || !labels[key].is_string()) {
      return std::nullopt;
    }
    return labels[key].get<std::string>();
  };
  const Json match_labels = selector.value("matchLabels", Json::object());
  for (const auto& [key, value] : match_labels.items()) {
    if (label(key) != value.get<std::string>()) return false;
  }
  const Json expressions = selector.value("matchExpressions", Json::array());
  for (const auto& e : expressions) {
    const auto have = label(e.value("key", std::string()));
    const std::string op = e.value("operator", std::string());
    const Json values = e.value("values", Json::array());
    const bool in = have && std::find(values.begin(), values.end(), *have) != values.end();
    if ((op == "In" && !in) || (op == "NotIn" && in) || (op == "Exists" && !have) ||
        (op == "DoesNotExist" && have)) {
      return false;
    }
  }
  return true;
}

std::vector<std::string> WebhooksFor(const std::vector<Json>& configs, std::string_view group,
                                     std::string_view resource, const Json& namespace_labels) {
  auto has = [](const Json& list, std::string_view want) {
    for (const auto& v : list) {
      if (!v.is_string()) continue;
      const std::string s = v.get<std::string>();
      if (s == "*" || s == want || s == std::string(want) + "/*") return true;
    }
    return false;
  };
  std::vector<std::string> out;
  for (const auto& config : configs) {
    const Json hooks = config.value("webhooks", Json::array());
    for (const auto& hook : hooks) {
      if (!SelectorMatches(hook.value("namespaceSelector", Json::object()), namespace_labels) ||
          !SelectorMatches(hook.value("objectSelector", Json::object()), Json::object())) {
        continue;
      }
      const Json rules = hook.value("rules", Json::array());
      for (const auto& rule : rules) {
        const std::string scope = rule.value("scope", std::string("*"));
        if (has(rule.value("apiGroups", Json::array()), group) &&
            has(rule.value("resources", Json::array()), resource) &&
            has(rule.value("operations", Json::array()), "CREATE") && scope != "Cluster") {
          out.push_back(hook.value("name", std::string()));
          break;
        }
      }
    }
  }
  return out;
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
