// Installing CAPHV over the Go provider v0.2.9's install with `kubectl
// apply`, as the operations guide says users do:
//
//   kubectl apply -f infrastructure-components.yaml          (the Go provider)
//   kubectl kustomize config/default | kubectl apply -f -    (CAPHV, over it)
//
// against the test bed's management apiserver, in the namespace both installs
// use (caphv-system), with cert-manager's real CRDs (the installs carry an
// Issuer and a Certificate; the bed runs no cert-manager controller). Then:
// the apply succeeds, the Deployment keeps the Go provider's selector and is
// updated in place, every object of the Go install is taken over, no
// webhook (admission or CRD conversion) points at a Service or path the
// manager does not serve, the Deployment's flags parse with caphv-manager's
// own option parser and agree with its ports, Services and certificate, and
// the operations guide's troubleshooting and migration commands find every
// object they name.
//
// Twice: over a Go install made with `kubectl apply` (three-way merge), and
// over one without kubectl's last-applied annotation (clusterctl, an
// operator or `kubectl create` leave none; `kubectl apply` then merges).
//
// Inputs: the Go provider's source archive ($CAPHV_GO_PROVIDER_SOURCE, else
// ../shared/third_party next to the checkout; skipped, saying so, when
// absent) and cert-manager's CRDs from the cache hack/build-testbins.sh fills
// ($CAPHV_CERT_MANAGER_CRDS to use another folder). Everything the test
// creates is removed at the end; CAPHV's CRDs, when the bed had them before,
// are put back as config/crd/bases has them.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/yaml.h"
#include "manager_process.h"
#include "options.h"
#include "support/testbed.h"
#include "upstream_sources.h"
#include "webhooks/admission.h"

namespace caphv::testing {
namespace {

namespace fs = std::filesystem;
using api::Json;

constexpr char kNamespace[] = "caphv-system";
constexpr char kDeployment[] = "caphv-controller-manager";
constexpr char kWebhookService[] = "caphv-webhook-service";
constexpr char kMetricsService[] = "caphv-controller-manager-metrics-service";
constexpr char kWebhookConfig[] = "caphv-validating-webhook-configuration";
constexpr char kCertificate[] = "caphv-serving-cert";
constexpr char kWebhookSecret[] = "caphv-webhook-tls";  // the operations guide's name
constexpr char kProviderLabel[] = "cluster.x-k8s.io/provider";
constexpr char kProvider[] = "infrastructure-harvester";

// The Deployment selector of the Go provider's install (immutable).
const std::map<std::string, std::string> kGoSelector = {
    {"cluster.x-k8s.io/provider", "infrastructure-harvester"},
    {"cluster.x-k8s.io/v1alpha2", "v1alpha1"},
    {"cluster.x-k8s.io/v1alpha3", "v1alpha1"},
    {"cluster.x-k8s.io/v1beta1", "v1alpha1"},
    {"control-plane", "controller-manager"},
};

const std::vector<std::string> kCaphvCrds = {
    "harvesterclusters.infrastructure.cluster.x-k8s.io",
    "harvestermachines.infrastructure.cluster.x-k8s.io",
    "harvesterclustertemplates.infrastructure.cluster.x-k8s.io",
    "harvestermachinetemplates.infrastructure.cluster.x-k8s.io",
};

// The kinds the installs use, from cert-manager's CRD files.
const std::map<std::string, std::string> kCertManagerCrds = {
    {"certificates.cert-manager.io", "crd-certificates.yaml"},
    {"issuers.cert-manager.io", "crd-issuers.yaml"},
};

fs::path CertManagerCrdDir() {
  if (const char* env = std::getenv("CAPHV_CERT_MANAGER_CRDS"); env && *env) return env;
  std::string cache;
  if (const char* c = std::getenv("CAPHV_CACHE_DIR"); c && *c) {
    cache = c;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    cache = std::string(x) + "/caphv";
  } else {
    cache = std::string(std::getenv("HOME") ? std::getenv("HOME") : "") + "/.cache/caphv";
  }
  return fs::path(cache) / "bin" / "current" / "cert-manager-crds";
}

std::string Key(const Json& o) {
  return o.value("kind", "") + "/" + o["metadata"].value("name", "");
}

std::map<std::string, std::string> Labels(const Json& o, const char* pointer) {
  std::map<std::string, std::string> out;
  const Json::json_pointer p(pointer);
  if (o.contains(p) && o[p].is_object()) {
    for (const auto& [k, v] : o[p].items()) out[k] = v.is_string() ? v.get<std::string>() : "";
  }
  return out;
}

bool Selects(const std::map<std::string, std::string>& selector,
             const std::map<std::string, std::string>& labels) {
  if (selector.empty()) return false;
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

// The port of a bind address (":8080", "0.0.0.0:8080", "127.0.0.1:8080").
int PortOf(const std::string& address) {
  auto colon = address.rfind(':');
  return colon == std::string::npos ? 0 : std::atoi(address.c_str() + colon + 1);
}

class GoInstallTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    kubeconfig_ = Testbed::Get().KubeconfigPath(kMgmt);
    dir_ = fs::temp_directory_path() / UniqueName("caphv-go-install");
    fs::create_directories(dir_);
    std::string looked_at;
    auto tree = upstream::SourceTree(dir_ / "upstream", &looked_at);
    looked_at_ = looked_at;
    if (!tree) return;
    go_file_ = *tree / "infrastructure-components.yaml";
    ASSERT_TRUE(fs::is_regular_file(go_file_)) << go_file_;
    auto go = api::ParseYaml(ReadWholeFile(go_file_));
    ASSERT_TRUE(go.ok()) << go.status().ToString();
    for (auto& d : *go) {
      if (d.is_object() && d.contains("kind")) go_docs_.push_back(std::move(d));
    }

    // CAPHV's install, rendered as the operations guide renders it.
    std::string out;
    ASSERT_EQ(RunCommand("kubectl kustomize " + SourcePath("config/default") + " > " +
                             (dir_ / "caphv.yaml").string(),
                         &out),
              0)
        << out;
    auto ours = api::ParseYaml(ReadWholeFile(dir_ / "caphv.yaml"));
    ASSERT_TRUE(ours.ok()) << ours.status().ToString();
    for (auto& d : *ours) {
      if (d.is_object() && d.contains("kind")) our_docs_.push_back(std::move(d));
    }

    // cert-manager's CRDs, unless the bed has them.
    const fs::path crds = CertManagerCrdDir();
    for (const auto& [name, file] : kCertManagerCrds) {
      if (Kubectl("get crd " + name, nullptr) == 0) continue;
      ASSERT_TRUE(fs::is_regular_file(crds / file))
          << "cert-manager's CRDs are not at " << crds
          << ": run hack/build-testbins.sh cert-manager (make setup does), or set "
             "CAPHV_CERT_MANAGER_CRDS";
      ASSERT_EQ(Kubectl("apply -f " + (crds / file).string(), &out), 0) << out;
      installed_cert_manager_crds_.push_back(name);
    }
    for (const auto& name : installed_cert_manager_crds_) {
      ASSERT_EQ(Kubectl("wait --for condition=established --timeout=60s crd/" + name, &out), 0)
          << out;
    }
    ready_ = true;
  }

  static void TearDownTestSuite() {
    ready_ = false;
    for (const auto& name : installed_cert_manager_crds_) {
      Kubectl("delete crd " + name + " --ignore-not-found --timeout=60s", nullptr);
    }
    installed_cert_manager_crds_.clear();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void SetUp() override {
    if (go_docs_.empty()) {
      GTEST_SKIP() << "the Go provider's source (" << upstream::kArchive << ") is not at "
                   << looked_at_ << "; set CAPHV_GO_PROVIDER_SOURCE to run this test";
    }
    ASSERT_TRUE(ready_) << "the suite's set-up failed (see above)";
    crds_before_.clear();
    for (const auto& crd : kCaphvCrds) {
      if (Kubectl("get crd " + crd, nullptr) == 0) crds_before_.insert(crd);
    }
    RemoveInstall();  // what an interrupted run may have left
  }

  void TearDown() override {
    if (!ready_) return;
    RemoveInstall();
    // CRDs that were there go back to config/crd/bases exactly (a merge over
    // the Go provider's may have kept its labels), applied server-side as the
    // other tests apply them; the others go.
    std::string out;
    if (!crds_before_.empty()) {
      EXPECT_EQ(Kubectl("replace -f " + SourcePath("config/crd/bases"), &out), 0) << out;
      EXPECT_EQ(
          Kubectl("apply --server-side --force-conflicts -f " + SourcePath("config/crd/bases"),
                  &out),
          0)
          << out;
    }
    for (const auto& crd : kCaphvCrds) {
      if (!crds_before_.contains(crd)) {
        Kubectl("delete crd " + crd + " --ignore-not-found --timeout=60s", nullptr);
      }
    }
  }

  static int Kubectl(const std::string& args, std::string* out) {
    return RunCommand("kubectl --kubeconfig '" + kubeconfig_ + "' --cache-dir '" +
                          (dir_ / "kubectl-cache").string() + "' " + args,
                      out);
  }

  // `kubectl get <what> -o json`; null when it fails.
  static Json Get(const std::string& what) {
    std::string out;
    // Warnings on stderr would spoil the JSON.
    if (RunCommand("( kubectl --kubeconfig '" + kubeconfig_ + "' --cache-dir '" +
                       (dir_ / "kubectl-cache").string() + "' get " + what +
                       " -o json 2>/dev/null )",
                   &out) != 0) {
      return nullptr;
    }
    auto parsed = Json::parse(out, nullptr, /*allow_exceptions=*/false);
    return parsed.is_discarded() ? Json(nullptr) : parsed;
  }

  // The install's cluster-scoped objects and its namespace (everything but
  // the CRDs); waits until the namespace is gone.
  static void RemoveInstall() {
    Kubectl(std::string("delete validatingwebhookconfiguration ") + kWebhookConfig +
                " --ignore-not-found",
            nullptr);
    Kubectl(
        "delete clusterrolebinding caphv-manager-rolebinding caphv-proxy-rolebinding "
        "--ignore-not-found",
        nullptr);
    Kubectl(
        "delete clusterrole caphv-manager-role caphv-metrics-reader caphv-proxy-role "
        "--ignore-not-found",
        nullptr);
    std::string out;
    EXPECT_EQ(Kubectl(std::string("delete namespace ") + kNamespace +
                          " --ignore-not-found --wait --timeout=120s",
                      &out),
              0)
        << out;
  }

  static fs::path WriteJson(const std::vector<Json>& docs, const std::string& stem) {
    Json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", docs}};
    fs::path p = dir_ / (stem + ".json");
    std::ofstream(p) << list.dump();
    return p;
  }

  // The Go provider's install without kubectl's last-applied annotation:
  // created, and its CRDs replaced where they exist already.
  static void CreateGoInstallWithoutAnnotation() {
    std::vector<Json> crds, rest;
    for (const auto& d : go_docs_) {
      if (d["kind"] == "CustomResourceDefinition") {
        crds.push_back(d);
      } else {
        rest.push_back(d);
      }
    }
    std::string out;
    for (const auto& crd : crds) {
      const std::string verb = Kubectl("get crd " + crd["metadata"].value("name", ""), nullptr) == 0
                                   ? "replace"
                                   : "create";
      ASSERT_EQ(Kubectl(verb + " -f " + WriteJson({crd}, "go-crd").string(), &out), 0) << out;
    }
    ASSERT_EQ(Kubectl("create -f " + WriteJson(rest, "go-rest").string(), &out), 0) << out;
    for (const auto& crd : kCaphvCrds) {
      Json live = Get("crd " + crd);
      ASSERT_TRUE(live.is_object()) << crd;
      const Json::json_pointer last(
          "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration");
      EXPECT_FALSE(live.contains(last)) << crd;
    }
  }

  // `kubectl kustomize config/default | kubectl apply -f -`: succeeds, and
  // says nothing about immutable or invalid fields.
  static void ApplyCaphv() {
    std::string out;
    const int rc = RunCommand("kubectl kustomize " + SourcePath("config/default") +
                                  " | kubectl --kubeconfig '" + kubeconfig_ + "' --cache-dir '" +
                                  (dir_ / "kubectl-cache").string() + "' apply -f -",
                              &out);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_EQ(out.find("immutable"), std::string::npos) << out;
    EXPECT_EQ(out.find("is invalid"), std::string::npos) << out;
    EXPECT_EQ(out.find("Error"), std::string::npos) << out;
  }

  // Everything the install must be once CAPHV's manifests are applied.
  static void CheckInstall(const std::string& go_deployment_uid) {
    // Every object of both installs is there, labelled for clusterctl.
    std::set<std::string> ours;
    for (const auto& d : our_docs_) {
      ours.insert(Key(d));
      const std::string ns = d["metadata"].value("namespace", "");
      Json live = Get(d.value("kind", "") + " " + d["metadata"].value("name", "") +
                      (ns.empty() ? "" : " -n " + ns));
      ASSERT_TRUE(live.is_object()) << Key(d) << " is missing";
      EXPECT_EQ(Labels(live, "/metadata/labels")[kProviderLabel], kProvider) << Key(d);
      EXPECT_EQ(Labels(d, "/metadata/labels")[kProviderLabel], kProvider) << Key(d);
    }
    for (const auto& d : go_docs_) {
      EXPECT_TRUE(ours.contains(Key(d)))
          << Key(d) << " of the Go provider's install is not in CAPHV's: it would be left behind";
    }

    // The Deployment: Go's selector, updated in place.
    Json deploy = Get(std::string("deployment ") + kDeployment + " -n " + kNamespace);
    ASSERT_TRUE(deploy.is_object());
    EXPECT_EQ(deploy["metadata"].value("uid", ""), go_deployment_uid)
        << "the Deployment was recreated, not updated";
    EXPECT_EQ(Labels(deploy, "/spec/selector/matchLabels"), kGoSelector);
    EXPECT_FALSE(deploy["spec"]["selector"].contains("matchExpressions"));
    const auto pod_labels = Labels(deploy, "/spec/template/metadata/labels");
    EXPECT_TRUE(Selects(kGoSelector, pod_labels));
    const Json& pod = deploy["spec"]["template"]["spec"];
    ASSERT_TRUE(pod["containers"].is_array() && !pod["containers"].empty());
    const Json& container = pod["containers"][0];
    EXPECT_EQ(container.value("name", ""), "manager");  // `kubectl logs ... -c manager`
    Json rendered;
    for (const auto& d : our_docs_) {
      if (Key(d) == std::string("Deployment/") + kDeployment) rendered = d;
    }
    ASSERT_TRUE(rendered.is_object());
    const Json& want = rendered["spec"]["template"]["spec"]["containers"][0];
    EXPECT_EQ(container["image"], want["image"]);
    EXPECT_EQ(container["command"], want["command"]);
    EXPECT_EQ(container["args"], want["args"]);
    EXPECT_EQ(container.value(Json::json_pointer("/securityContext/privileged"), true), false);

    // The flags are caphv-manager's, and agree with the manifests.
    std::vector<std::string> argv;
    for (const auto& c : container["command"]) argv.push_back(c.get<std::string>());
    for (const auto& a : container["args"]) argv.push_back(a.get<std::string>());
    std::vector<const char*> cargv;
    for (const auto& a : argv) cargv.push_back(a.c_str());
    auto options = manager::ParseOptions(static_cast<int>(cargv.size()), cargv.data());
    ASSERT_TRUE(options.ok()) << options.status().ToString();
    EXPECT_TRUE(options->enable_webhooks);
    EXPECT_TRUE(options->leader_elect);
    EXPECT_EQ(options->leader_election_id, "1e1658d6.cluster.x-k8s.io");  // the Go provider's
    EXPECT_TRUE(options->leader_election_namespace.empty());  // the pod's: POD_NAMESPACE
    std::map<std::string, int> ports;
    for (const auto& p : container["ports"])
      ports[p.value("name", "")] = p.value("containerPort", 0);
    EXPECT_EQ(ports["webhook-server"], options->webhook_port);
    EXPECT_EQ(ports["healthz"], PortOf(options->health_probe_bind_address));
    EXPECT_EQ(options->metrics_bind_address.rfind("127.", 0), std::string::npos)
        << "metrics on loopback cannot be reached through the metrics Service";
    std::string cert_volume;
    for (const auto& m : container["volumeMounts"]) {
      if (m.value("mountPath", "") == options->webhook_cert_dir) cert_volume = m.value("name", "");
    }
    ASSERT_FALSE(cert_volume.empty()) << "nothing is mounted at " << options->webhook_cert_dir;
    std::string cert_secret;
    for (const auto& v : pod["volumes"]) {
      if (v.value("name", "") == cert_volume) {
        cert_secret = v.value(Json::json_pointer("/secret/secretName"), "");
      }
    }
    EXPECT_EQ(cert_secret, kWebhookSecret);

    // The certificate cert-manager issues is that Secret, for the webhook Service.
    Json cert = Get(std::string("certificate ") + kCertificate + " -n " + kNamespace);
    ASSERT_TRUE(cert.is_object());
    EXPECT_EQ(cert["spec"].value("secretName", ""), kWebhookSecret);
    const std::string svc_dns = std::string(kWebhookService) + "." + kNamespace + ".svc";
    EXPECT_NE(cert["spec"]["dnsNames"].dump().find("\"" + svc_dns + "\""), std::string::npos);
    const std::string issuer = cert["spec"]["issuerRef"].value("name", "");
    EXPECT_TRUE(Get("issuer " + issuer + " -n " + kNamespace).is_object()) << issuer;

    // Services select the manager's pods and reach its ports.
    auto target = [&](const Json& svc_port) {
      const Json& t = svc_port["targetPort"];
      return t.is_number() ? t.get<int>() : ports[t.get<std::string>()];
    };
    Json webhook_svc = Get(std::string("service ") + kWebhookService + " -n " + kNamespace);
    ASSERT_TRUE(webhook_svc.is_object());
    EXPECT_TRUE(Selects(Labels(webhook_svc, "/spec/selector"), pod_labels));
    ASSERT_EQ(webhook_svc["spec"]["ports"].size(), 1u);
    EXPECT_EQ(webhook_svc["spec"]["ports"][0].value("port", 0), 443);
    EXPECT_EQ(target(webhook_svc["spec"]["ports"][0]), options->webhook_port);
    Json metrics_svc = Get(std::string("service ") + kMetricsService + " -n " + kNamespace);
    ASSERT_TRUE(metrics_svc.is_object());
    EXPECT_TRUE(Selects(Labels(metrics_svc, "/spec/selector"), pod_labels));
    EXPECT_EQ(Labels(metrics_svc, "/metadata/labels")["control-plane"], "controller-manager");
    ASSERT_EQ(metrics_svc["spec"]["ports"].size(), 1u);
    EXPECT_EQ(metrics_svc["spec"]["ports"][0].value("port", 0), 8443);
    EXPECT_EQ(metrics_svc["spec"]["ports"][0].value("name", ""), "https");
    EXPECT_EQ(target(metrics_svc["spec"]["ports"][0]), PortOf(options->metrics_bind_address));

    // No webhook anywhere points into caphv-system at something the manager
    // does not serve; ours has exactly the manager's webhooks.
    std::set<std::string> served;
    for (const auto& h : webhooks::ValidatingWebhooks()) served.insert(h.path);
    for (const char* kind : {"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}) {
      Json list = Get(kind);
      ASSERT_TRUE(list.is_object()) << kind;
      for (const auto& item : list["items"]) {
        for (const auto& hook : item.value("webhooks", Json::array())) {
          const Json::json_pointer svc("/clientConfig/service");
          if (!hook.contains(svc) || hook[svc].value("namespace", "") != kNamespace) continue;
          const std::string where = std::string(kind) + "/" + item["metadata"].value("name", "") +
                                    " " + hook.value("name", "");
          EXPECT_EQ(std::string(kind), "validatingwebhookconfigurations") << where;
          EXPECT_EQ(hook[svc].value("name", ""), kWebhookService) << where;
          EXPECT_EQ(hook[svc].value("port", 443), 443) << where;
          EXPECT_TRUE(served.contains(hook[svc].value("path", ""))) << where;
        }
      }
    }
    Json config = Get(std::string("validatingwebhookconfiguration ") + kWebhookConfig);
    ASSERT_TRUE(config.is_object());
    std::map<std::string, std::string> hooks;
    for (const auto& hook : config["webhooks"]) {
      hooks[hook.value("name", "")] =
          hook.value(Json::json_pointer("/clientConfig/service/path"), "");
    }
    std::map<std::string, std::string> expected;
    for (const auto& h : webhooks::ValidatingWebhooks()) expected[h.name] = h.path;
    EXPECT_EQ(hooks, expected);
    EXPECT_EQ(Labels(config, "/metadata/annotations")["cert-manager.io/inject-ca-from"],
              std::string(kNamespace) + "/" + kCertificate);
    for (const auto& crd : kCaphvCrds) {
      Json live = Get("crd " + crd);
      ASSERT_TRUE(live.is_object()) << crd;
      EXPECT_EQ(live.value(Json::json_pointer("/spec/conversion/strategy"), ""), "None")
          << crd << " still converts through a webhook the manager does not serve";
      EXPECT_FALSE(live.contains(Json::json_pointer("/spec/conversion/webhook"))) << crd;
    }

    // The proxy role exists for the guide's commands and grants nothing.
    Json proxy = Get("clusterrole caphv-proxy-role");
    ASSERT_TRUE(proxy.is_object());
    EXPECT_TRUE(proxy.value("rules", Json::array()).empty()) << proxy["rules"].dump();
  }

  // The operations guide's verification and troubleshooting commands.
  static void RunTroubleshootingCommands() {
    std::string out;
    EXPECT_EQ(Kubectl(std::string("get pods -n ") + kNamespace, &out), 0) << out;
    out.clear();
    EXPECT_EQ(Kubectl("get crd", &out), 0) << out;
    for (const auto& crd : kCaphvCrds) EXPECT_NE(out.find(crd), std::string::npos) << crd;
    out.clear();
    EXPECT_EQ(Kubectl("get validatingwebhookconfigurations", &out), 0) << out;
    EXPECT_NE(out.find(kWebhookConfig), std::string::npos) << out;
    out.clear();
    EXPECT_EQ(
        Kubectl(std::string("get validatingwebhookconfigurations ") + kWebhookConfig + " -o yaml",
                &out),
        0)
        << out;
    out.clear();
    EXPECT_EQ(Kubectl(std::string("get certificate -n ") + kNamespace, &out), 0) << out;
    EXPECT_NE(out.find(kCertificate), std::string::npos) << out;
    out.clear();
    EXPECT_EQ(Kubectl(std::string("get deploy ") + kDeployment + " -n " + kNamespace +
                          " -o jsonpath='{.spec.template.spec.containers[0].image}'",
                      &out),
              0)
        << out;
    std::string image;
    for (const auto& d : our_docs_) {
      if (d["kind"] == "Deployment") {
        image = d["spec"]["template"]["spec"]["containers"][0].value("image", "");
      }
    }
    EXPECT_FALSE(image.empty());
    EXPECT_EQ(out, image);
    out.clear();
    EXPECT_EQ(
        Kubectl(std::string("get deploy ") + kDeployment + " -n " + kNamespace + " -o yaml", &out),
        0)
        << out;
    out.clear();
    EXPECT_EQ(Kubectl(std::string("get lease -n ") + kNamespace, &out), 0) << out;
    out.clear();
    EXPECT_EQ(Kubectl(std::string("get service ") + kWebhookService + " -n " + kNamespace, &out), 0)
        << out;
    out.clear();
    EXPECT_EQ(
        Kubectl(std::string("rollout restart deploy/") + kDeployment + " -n " + kNamespace, &out),
        0)
        << out;
  }

  // The operations guide's migration step for an install made from raw
  // manifests: each command succeeds and leaves the CRDs; applying CAPHV's
  // install again restores what they deleted.
  static void RunMigrationCommands() {
    const std::vector<std::string> commands = {
        std::string("delete deploy ") + kDeployment + " -n " + kNamespace,
        std::string("delete service ") + kMetricsService + " -n " + kNamespace,
        std::string("delete service ") + kWebhookService + " -n " + kNamespace,
        std::string("delete validatingwebhookconfiguration ") + kWebhookConfig,
        "delete clusterrole caphv-manager-role caphv-metrics-reader caphv-proxy-role",
        "delete clusterrolebinding caphv-manager-rolebinding caphv-proxy-rolebinding",
    };
    for (const auto& c : commands) {
      std::string out;
      EXPECT_EQ(Kubectl(c, &out), 0) << "kubectl " << c << "\n" << out;
    }
    for (const auto& crd : kCaphvCrds) EXPECT_TRUE(Get("crd " + crd).is_object()) << crd;
    ApplyCaphv();
    Json deploy = Get(std::string("deployment ") + kDeployment + " -n " + kNamespace);
    ASSERT_TRUE(deploy.is_object());
    EXPECT_EQ(Labels(deploy, "/spec/selector/matchLabels"), kGoSelector);
    for (const char* what :
         {"service caphv-webhook-service -n caphv-system",
          "service caphv-controller-manager-metrics-service -n caphv-system",
          "validatingwebhookconfiguration caphv-validating-webhook-configuration",
          "clusterrole caphv-manager-role", "clusterrole caphv-metrics-reader",
          "clusterrole caphv-proxy-role", "clusterrolebinding caphv-manager-rolebinding",
          "clusterrolebinding caphv-proxy-rolebinding"}) {
      EXPECT_TRUE(Get(what).is_object()) << what;
    }
  }

  static std::string GoDeploymentUid() {
    Json deploy = Get(std::string("deployment ") + kDeployment + " -n " + kNamespace);
    EXPECT_TRUE(deploy.is_object());
    if (!deploy.is_object()) return "";
    // It is the Go provider's: its selector, its image.
    EXPECT_EQ(Labels(deploy, "/spec/selector/matchLabels"), kGoSelector);
    return deploy["metadata"].value("uid", "");
  }

  static inline std::string kubeconfig_;
  static inline fs::path dir_;
  static inline std::string looked_at_;
  static inline fs::path go_file_;
  static inline std::vector<Json> go_docs_;
  static inline std::vector<Json> our_docs_;
  static inline std::vector<std::string> installed_cert_manager_crds_;
  static inline bool ready_ = false;
  std::set<std::string> crds_before_;
};

TEST_F(GoInstallTest, KubectlApplyOverAGoInstallTakesItOver) {
  std::string out;
  ASSERT_EQ(Kubectl("apply -f " + go_file_.string(), &out), 0) << out;
  const std::string uid = GoDeploymentUid();
  ApplyCaphv();
  CheckInstall(uid);
  RunTroubleshootingCommands();
  RunMigrationCommands();
}

TEST_F(GoInstallTest, KubectlApplyOverAGoInstallWithoutLastAppliedAnnotation) {
  CreateGoInstallWithoutAnnotation();
  if (HasFatalFailure()) return;
  const std::string uid = GoDeploymentUid();
  ApplyCaphv();
  CheckInstall(uid);
}

}  // namespace
}  // namespace caphv::testing
