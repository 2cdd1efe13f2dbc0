// File: cmd/caphv/doctor_management.cc
//
// `caphv doctor`'s checks against the management cluster (doctor_checks.h), and
// the selector and webhook matching they use (doctor_command.h).

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "doctor_checks.h"
#include "kube/object.h"
#include "kube/resource.h"

namespace caphv::cli::doctor {
namespace {

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

}  // namespace

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
    checks.push_back(
        {"management cluster", false,
         "cannot reach " + config->server + ": " + WhyUnreachable(ns.status(), f.timeout),
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

}  // namespace caphv::cli::doctor

namespace caphv::cli {

using api::Json;

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

}  // namespace caphv::cli
