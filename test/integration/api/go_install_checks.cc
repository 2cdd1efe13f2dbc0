// File: test/integration/api/go_install_checks.cc
//
// GoInstallTest's checks (go_install_support.h): the install as it must be
// once CAPHV's manifests are applied over the Go provider's, and the
// operations guide's troubleshooting and migration commands run against it.
//
// Thread safety: test-thread only.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "go_install_support.h"
#include "options.h"
#include "webhooks/admission.h"

namespace caphv::testing::go_install {

void GoInstallTest::CheckInstall(const std::string& go_deployment_uid) {
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
  EXPECT_TRUE(options->leader_election_namespace.empty());              // the pod's: POD_NAMESPACE
  std::map<std::string, int> ports;
  for (const auto& p : container["ports"]) ports[p.value("name", "")] = p.value("containerPort", 0);
  EXPECT_EQ(ports["webhook-server"], options->webhook_port);
  EXPECT_EQ(ports["healthz"], PortOf(options->health_probe_bind_address));
  EXPECT_EQ(options->metrics_bind_address.rfind("127.", 0), std::string::npos)
      << "metrics on loopback cannot be reached through the metrics Service";
  EXPECT_TRUE(options->metrics_secure) << "metrics reachable from the network need a token";
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
  // does not serve; ours have exactly the manager's webhooks, each in a
  // configuration of its kind.
  for (const auto& [kind, hooks] :
       {std::pair{"validatingwebhookconfigurations", &webhooks::ValidatingWebhooks()},
        std::pair{"mutatingwebhookconfigurations", &webhooks::MutatingWebhooks()}}) {
    std::set<std::string> served;
    for (const auto& h : *hooks) served.insert(h.path);
    Json list = Get(kind);
    ASSERT_TRUE(list.is_object()) << kind;
    for (const auto& item : list["items"]) {
      for (const auto& hook : item.value("webhooks", Json::array())) {
        const Json::json_pointer svc("/clientConfig/service");
        if (!hook.contains(svc) || hook[svc].value("namespace", "") != kNamespace) continue;
        const std::string where = std::string(kind) + "/" + item["metadata"].value("name", "") +
                                  " " + hook.value("name", "");
        EXPECT_EQ(hook[svc].value("name", ""), kWebhookService) << where;
        EXPECT_EQ(hook[svc].value("port", 443), 443) << where;
        EXPECT_TRUE(served.contains(hook[svc].value("path", ""))) << where;
      }
    }
  }
  for (const auto& [config_name, hooks] :
       {std::pair{std::string("validatingwebhookconfiguration ") + kWebhookConfig,
                  &webhooks::ValidatingWebhooks()},
        std::pair{std::string("mutatingwebhookconfiguration ") + kMutatingWebhookConfig,
                  &webhooks::MutatingWebhooks()}}) {
    Json config = Get(config_name);
    ASSERT_TRUE(config.is_object()) << config_name;
    std::map<std::string, std::string> got;
    for (const auto& hook : config["webhooks"]) {
      got[hook.value("name", "")] =
          hook.value(Json::json_pointer("/clientConfig/service/path"), "");
    }
    std::map<std::string, std::string> expected;
    for (const auto& h : *hooks) expected[h.name] = h.path;
    EXPECT_EQ(got, expected) << config_name;
    EXPECT_EQ(Labels(config, "/metadata/annotations")["cert-manager.io/inject-ca-from"],
              std::string(kNamespace) + "/" + kCertificate)
        << config_name;
  }
  for (const auto& crd : kCaphvCrds) {
    Json live = Get("crd " + crd);
    ASSERT_TRUE(live.is_object()) << crd;
    EXPECT_EQ(live.value(Json::json_pointer("/spec/conversion/strategy"), ""), "None")
        << crd << " still converts through a webhook the manager does not serve";
    EXPECT_FALSE(live.contains(Json::json_pointer("/spec/conversion/webhook"))) << crd;
  }

  // The proxy role lets the manager review its metrics clients' tokens, and
  // nothing else; its binding gives it to the manager's ServiceAccount.
  Json proxy = Get("clusterrole caphv-proxy-role");
  ASSERT_TRUE(proxy.is_object());
  std::set<std::string> granted;
  for (const auto& rule : proxy.value("rules", Json::array())) {
    for (const auto& group : rule.value("apiGroups", Json::array())) {
      for (const auto& resource : rule.value("resources", Json::array())) {
        for (const auto& verb : rule.value("verbs", Json::array())) {
          granted.insert(verb.get<std::string>() + " " + resource.get<std::string>() + "." +
                         group.get<std::string>());
        }
      }
    }
    EXPECT_FALSE(rule.contains("nonResourceURLs")) << rule.dump();
  }
  EXPECT_EQ(granted, (std::set<std::string>{"create tokenreviews.authentication.k8s.io",
                                            "create subjectaccessreviews.authorization.k8s.io"}));
  Json binding = Get("clusterrolebinding caphv-proxy-rolebinding");
  ASSERT_TRUE(binding.is_object());
  EXPECT_EQ(binding["roleRef"].value("name", ""), "caphv-proxy-role");
  const std::string service_account = pod.value("serviceAccountName", "");
  bool bound = false;
  for (const auto& s : binding.value("subjects", Json::array())) {
    bound |= s.value("kind", "") == "ServiceAccount" && s.value("name", "") == service_account &&
             s.value("namespace", "") == kNamespace;
  }
  EXPECT_TRUE(bound) << binding["subjects"].dump();
}

void GoInstallTest::RunTroubleshootingCommands() {
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
      Kubectl(std::string("get deploy ") + kDeployment + " -n " + kNamespace + " -o yaml", &out), 0)
      << out;
  out.clear();
  EXPECT_EQ(Kubectl(std::string("get lease -n ") + kNamespace, &out), 0) << out;
  out.clear();
  EXPECT_EQ(Kubectl(std::string("get service ") + kWebhookService + " -n " + kNamespace, &out), 0)
      << out;
  out.clear();
  EXPECT_EQ(
      Kubectl(std::string("rollout restart deploy/") + kDeployment + " -n " + kNamespace, &out), 0)
      << out;
}

void GoInstallTest::RunMigrationCommands() {
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

}  // namespace caphv::testing::go_install
