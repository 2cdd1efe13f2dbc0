// End-to-end: caphv-manager run as the install deploys it, and its RBAC held
// to what it uses.
//
// The Deployment, ServiceAccount and RBAC come from `kubectl kustomize
// config/default` (what users apply). The RBAC objects (Namespace,
// ServiceAccount, ClusterRoles, Roles and their bindings) are applied to the
// bed's management cluster; the manager runs on this machine with the
// container's command and args, authenticated as the ServiceAccount
// caphv-system/caphv-controller-manager by a token from the TokenRequest API
// (`kubectl create token`), and provisions and then deletes a cluster (a
// control-plane Machine and a MachineDeployment of two workers, addresses
// from a pool, the load balancer on a pool, the cloud-provider
// configuration), and /metrics is scraped with the bed's admin token (the
// manager reviews it). Where a pod path or address cannot exist here, the test
// substitutes (SubstitutionOf, each printed):
//   --metrics-bind-address, --health-probe-bind-address  127.0.0.1:<free port>
//   --webhook-port                                        <free port>
//   --webhook-cert-dir                 a folder with the bed's serving certificate
//   the in-cluster ServiceAccount mount (token, CA)  $KUBECONFIG: the token's kubeconfig
//   POD_NAMESPACE (fieldRef metadata.namespace)      the Deployment's namespace
// Any other flag is passed as the Deployment has it (a flag the binary does
// not know makes it exit: the test fails saying so).
//
// From the management apiserver's audit log (ctest's bed records the
// requests of service accounts, CAPHV_TESTBED_AUDIT=serviceaccounts; on a bed
// without, the test restarts its management apiserver with it): no
// request of the manager was forbidden, and every (apiGroup, resource, verb)
// that config/rbac/role.yaml (ClusterRole caphv-manager-role) grants was used,
// but for the few in kNotExercised, each with the path that needs it.

#include <cstdint>
#include <cstdlib>
#include <tuple>

#include "api/yaml.h"
#include "e2e_fixture.h"

namespace caphv::e2e {
namespace {

constexpr char kSystemNamespace[] = "caphv-system";
constexpr char kDeployment[] = "caphv-controller-manager";
constexpr char kServiceAccount[] = "caphv-controller-manager";
constexpr char kUser[] = "system:serviceaccount:caphv-system:caphv-controller-manager";
constexpr char kManagerRole[] = "caphv-manager-role";
constexpr char kLeaderElectionRole[] = "caphv-leader-election-role";

// (apiGroup, resource[/subresource], verb); "" is the core group.
using Triple = std::tuple<std::string, std::string, std::string>;

std::string Lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += "\n  " + l;
  return out;
}

std::string ToString(const Triple& t) {
  return (std::get<0>(t).empty() ? "core" : std::get<0>(t)) + " " + std::get<1>(t) + " " +
         std::get<2>(t);
}

// Grants of caphv-manager-role this scenario does not reach, and why they stay
// (an entry the role does not grant fails the test: the list stays minimal).
struct NotExercised {
  Triple grant;
  const char* why;
};
const std::vector<NotExercised> kNotExercised = {
    {{"", "events", "patch"},
     "the event recorder patches an event that repeats (count + 1) instead of creating another; "
     "no event of this scenario repeats"},
};

// How a Deployment arg `--flag=value` that names a pod address or path is
// changed here, by the flag's ending: today --metrics-bind-address and
// --health-probe-bind-address, --webhook-port, --webhook-cert-dir.
enum class Substitution { kNone, kLoopbackAddress, kFreePort, kCertDir };
Substitution SubstitutionOf(const std::string& flag) {
  auto ends_with = [&](std::string_view suffix) {
    return flag.size() > suffix.size() &&
           flag.compare(flag.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with("-bind-address")) return Substitution::kLoopbackAddress;  // ":8080"
  if (ends_with("-port")) return Substitution::kFreePort;                 // "9443"
  if (ends_with("-cert-dir")) return Substitution::kCertDir;              // a Secret's mount
  return Substitution::kNone;
}

class AsDeployedTest : public E2ETest {
 protected:
  AsDeployedTest() { start_manager_ = false; }

  void TearDown() override {
    E2ETest::TearDown();
    // The install's cluster-scoped objects and namespace, as before the test
    // (the API tests install into the same names).
    std::string out;
    for (const auto& o : installed_) {
      const std::string kind = o.value("kind", "");
      if (kind == "ClusterRole" || kind == "ClusterRoleBinding") {
        caphv::testing::RunCommand(
            Kubectl() + "delete --ignore-not-found " + kind + " " + NameOf(o), &out);
      }
    }
    caphv::testing::RunCommand(
        Kubectl() + "delete namespace --ignore-not-found --wait --timeout=120s " + kSystemNamespace,
        &out);
  }

  std::string Kubectl() const {
    return "kubectl --kubeconfig '" + Testbed::Get().KubeconfigPath(caphv::testing::kMgmt) + "' ";
  }

  // The objects of `kubectl kustomize config/default`.
  std::vector<Object> RenderInstall() {
    std::string out;
    EXPECT_EQ(
        caphv::testing::RunCommand(
            "kubectl kustomize " + caphv::testing::SourcePath("config/default") + " 2>&1", &out),
        0)
        << out;
    auto docs = api::ParseYaml(out);
    EXPECT_TRUE(docs.ok()) << docs.status().ToString();
    return docs.ok() ? *docs : std::vector<Object>{};
  }

  // The manager's requests in the audit log from byte `from` on.
  std::vector<Object> AuditEvents(std::uintmax_t from) const {
    std::ifstream in(audit_log_);
    in.seekg(static_cast<std::streamoff>(from));
    std::vector<Object> out;
    for (std::string line; std::getline(in, line);) {
      auto e = Object::parse(line, nullptr, /*allow_exceptions=*/false);
      if (e.is_discarded() || Str(e, "/user/username") != kUser) continue;
      out.push_back(std::move(e));
    }
    return out;
  }

  std::filesystem::path audit_log_;
  std::vector<Object> installed_;
};

// The grants of a ClusterRole's rules, expanded; resource "*" stays "*".
std::set<Triple> GrantsOf(const Object& role) {
  std::set<Triple> out;
  for (const auto& rule : role.value("rules", Object::array())) {
    for (const auto& g : rule.value("apiGroups", Object::array())) {
      for (const auto& r : rule.value("resources", Object::array())) {
        for (const auto& v : rule.value("verbs", Object::array())) {
          out.insert({g.get<std::string>(), r.get<std::string>(), v.get<std::string>()});
        }
      }
    }
  }
  return out;
}

bool Covers(const Triple& grant, const Triple& used) {
  return std::get<0>(grant) == std::get<0>(used) && std::get<2>(grant) == std::get<2>(used) &&
         (std::get<1>(grant) == "*" || std::get<1>(grant) == std::get<1>(used));
}

TEST_F(AsDeployedTest, ProvisionsAndDeletesAsItsServiceAccount) {
  auto& bed = Testbed::Get();
  audit_log_ = std::filesystem::path(bed.dir()) / "logs" / "audit-mgmt.log";
  if (!std::filesystem::exists(audit_log_)) {
    // A bed started without an audit log (by hand): its management apiserver
    // restarted with one, as ctest's bed has from the start.
    std::string restart;
    const std::string cmd = "CAPHV_TESTBED_AUDIT=serviceaccounts " +
                            caphv::testing::SourcePath("hack/testbed") +
                            " restart --cluster mgmt --dir " + bed.dir() + " 2>&1";
    ASSERT_EQ(caphv::testing::RunCommand(cmd, &restart), 0) << cmd << "\n" << restart;
  }
  ASSERT_TRUE(std::filesystem::exists(audit_log_)) << audit_log_;

  // --- the install: the Deployment's container, the RBAC applied.
  const auto objects = RenderInstall();
  Object container, rbac = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", Object::array()}};
  Object role, leader_role;
  for (const auto& o : objects) {
    const std::string kind = o.value("kind", "");
    if (kind == "Deployment" && NameOf(o) == kDeployment) {
      container = o["spec"]["template"]["spec"]["containers"][0];
      EXPECT_EQ(Str(o, "/spec/template/spec/serviceAccountName"), kServiceAccount);
    }
    if (kind == "ClusterRole" && NameOf(o) == kManagerRole) role = o;
    if (kind == "Role" && NameOf(o) == kLeaderElectionRole) leader_role = o;
    if (kind == "Namespace" || kind == "ServiceAccount" || kind == "ClusterRole" ||
        kind == "ClusterRoleBinding" || kind == "Role" || kind == "RoleBinding") {
      rbac["items"].push_back(o);
      installed_.push_back(o);
    }
  }
  ASSERT_FALSE(container.is_null()) << "no Deployment " << kDeployment << " in config/default";
  ASSERT_FALSE(role.is_null()) << "no ClusterRole " << kManagerRole << " in config/default";
  ASSERT_FALSE(leader_role.is_null()) << "no Role " << kLeaderElectionRole << " in config/default";
  const std::filesystem::path dir = std::filesystem::path(bed.dir()) / ("as-deployed-" + ns());
  std::filesystem::create_directories(dir / "certs");
  std::ofstream(dir / "rbac.json") << rbac.dump();
  std::string out;
  ASSERT_EQ(caphv::testing::RunCommand(Kubectl() + "apply --server-side --force-conflicts -f '" +
                                           (dir / "rbac.json").string() + "' 2>&1",
                                       &out),
            0)
      << out;

  // --- the ServiceAccount's token and a kubeconfig with it.
  std::string token;
  ASSERT_EQ(caphv::testing::RunCommand(Kubectl() + "-n " + kSystemNamespace + " create token " +
                                           kServiceAccount + " --duration=1h",
                                       &token),
            0)
      << token;
  token.erase(token.find_last_not_of(" \n") + 1);
  const auto config = bed.Config(caphv::testing::kMgmt);
  std::ofstream(dir / "kubeconfig")
      << "apiVersion: v1\nkind: Config\nclusters:\n- name: mgmt\n  cluster:\n    server: "
      << config.server << "\n    certificate-authority-data: " << kube::Base64Encode(config.ca_pem)
      << "\nusers:\n- name: sa\n  user:\n    token: " << token
      << "\ncontexts:\n- name: sa\n  context: {cluster: mgmt, user: sa}\ncurrent-context: sa\n";
  for (const char* f : {"serving.crt", "serving.key"}) {
    std::filesystem::copy_file(
        std::filesystem::path(bed.dir()) / "pki" / f,
        dir / "certs" / (f == std::string("serving.crt") ? "tls.crt" : "tls.key"),
        std::filesystem::copy_options::overwrite_existing);
  }

  // --- the container's command and args, with the substitutions.
  std::vector<std::string> args;
  for (const auto& c : container.value("command", Object::array())) args.push_back(c);
  ASSERT_EQ(args, std::vector<std::string>{"/caphv-manager"});
  args = {caphv::testing::BuildPath("cmd/caphv-manager/caphv-manager")};
  int probe_port = 0;
  for (const auto& a : container.value("args", Object::array())) {
    const std::string arg = a.get<std::string>();
    const std::string flag = arg.substr(0, arg.find('='));
    const Substitution sub = SubstitutionOf(flag);
    if (sub == Substitution::kNone) {
      args.push_back(arg);
      continue;
    }
    ASSERT_NE(arg.find('='), std::string::npos) << "the test substitutes " << flag << "=VALUE only";
    std::string value;
    switch (sub) {
      case Substitution::kNone:
        break;
      case Substitution::kLoopbackAddress: {
        const int port = FreePort();
        if (flag == "--health-probe-bind-address") probe_port = port;
        if (flag == "--metrics-bind-address") metrics_port_ = port;
        value = "127.0.0.1:" + std::to_string(port);
        break;
      }
      case Substitution::kFreePort:
        value = std::to_string(FreePort());
        break;
      case Substitution::kCertDir:
        value = (dir / "certs").string();
        break;
    }
    std::cout << "substituted: " << arg << " -> " << flag << "=" << value << "\n";
    args.push_back(flag + "=" + value);
  }
  ASSERT_NE(probe_port, 0) << "the Deployment has no --health-probe-bind-address=...";
  std::map<std::string, std::string> env = {{"KUBECONFIG", (dir / "kubeconfig").string()}};
  for (const auto& e : container.value("env", Object::array())) {
    if (Str(e, "/valueFrom/fieldRef/fieldPath") == "metadata.namespace") {
      env[e.value("name", "")] = kSystemNamespace;
    } else if (e.contains("value")) {
      env[e.value("name", "")] = e.value("value", "");
    }
  }
  std::cout << "caphv-manager";
  for (size_t i = 1; i < args.size(); ++i) std::cout << " " << args[i];
  std::cout << "\n";

  // --- run it; provision, then delete.
  const std::uintmax_t audit_from = std::filesystem::file_size(audit_log_);
  manager_ = std::make_unique<ManagerProcess>(args, log_path_, env);
  ASSERT_TRUE(manager_->started());
  const bool started = Eventually(
      [&] {
        return !manager_->running() ||
               caphv::testing::RunCommand(
                   "curl -fs -m 2 http://127.0.0.1:" + std::to_string(probe_port) + "/readyz",
                   &out) == 0;
      },
      std::chrono::seconds(60), kPoll);
  ASSERT_TRUE(started && manager_->running())
      << "caphv-manager, run as deployed, not ready (an arg it does not know?):\n"
      << LastLines(ManagerLog(), 40);

  const Pool pool = CreatePool(8);
  Object cm = {{"apiVersion", "v1"},
               {"kind", "ConfigMap"},
               {"metadata", {{"name", "cloud-config-addon"}, {"namespace", ns()}}},
               {"data",
                {{"cloud-config.yaml",
                  "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: "
                  "harvester-cloud-provider\n  namespace: kube-system\n"}}}};
  ASSERT_TRUE(mgmt_->Create(kube::resources::kConfigMaps, ns(), cm).ok());
  Object spec = HarvesterClusterSpec();
  spec["loadBalancerConfig"] = {{"ipamType", "pool"}, {"ipPoolRef", "capi-pool"}};
  spec["vmNetworkConfig"] = VmNetworkConfig({pool});
  spec["updateCloudProviderConfig"] = {{"manifestsConfigMapNamespace", ns()},
                                       {"manifestsConfigMapName", "cloud-config-addon"},
                                       {"manifestsConfigMapKey", "cloud-config.yaml"},
                                       {"cloudConfigCredentialsSecretName", "cloud-config"},
                                       {"cloudConfigCredentialsSecretKey", "cloud-config"}};
  CreateCluster(spec);
  CreateMachine(cluster_ + "-cp-0", true);
  CreateMachineDeployment(cluster_ + "-md", 2);
  ASSERT_EQ(WaitForRunningMachines(3).size(), 3u);
  WaitForClusterReady();
  // /metrics as a scraper reads it (the bed's admin token): the manager checks the token with
  // a TokenReview and a SubjectAccessReview, as its ServiceAccount.
  std::string metrics;
  EXPECT_EQ(caphv::testing::RunCommand(
                "curl -fsSk -m 10 -H 'Authorization: Bearer " + config.token +
                    "' https://127.0.0.1:" + std::to_string(metrics_port_) + "/metrics",
                &metrics),
            0)
      << LastLines(metrics, 5);
  EXPECT_NE(metrics.find("caphv_"), std::string::npos) << LastLines(metrics, 5);
  DeleteClusterAndWait();
  EXPECT_EQ(manager_->Stop(SIGTERM), 0) << LastLines(ManagerLog(), 40);
  manager_.reset();
  // Watches are logged when they end: wait until the log stops growing.
  std::uintmax_t size = 0;
  Eventually(
      [&] {
        const auto now = std::filesystem::file_size(audit_log_);
        const bool settled = now == size;
        size = now;
        return settled;
      },
      std::chrono::seconds(15), std::chrono::seconds(1));

  // --- what the manager did, by the audit log.
  const auto events = AuditEvents(audit_from);
  ASSERT_FALSE(events.empty()) << "no request of " << kUser << " in " << audit_log_;
  std::set<Triple> used;
  std::vector<std::string> forbidden;
  for (const auto& e : events) {
    std::string resource = Str(e, "/objectRef/resource");
    if (resource.empty()) continue;  // a non-resource URL
    if (!Str(e, "/objectRef/subresource").empty())
      resource += "/" + Str(e, "/objectRef/subresource");
    const Triple t{Str(e, "/objectRef/apiGroup"), resource, e.value("verb", "")};
    used.insert(t);
    if (e.value("responseStatus", Object::object()).value("code", 0) == 403) {
      forbidden.push_back(ToString(t) + " " + Str(e, "/requestURI"));
    }
  }
  std::cout << events.size() << " requests of " << kUser << "; used:";
  for (const auto& t : used) std::cout << "\n  " << ToString(t);
  std::cout << "\n";
  EXPECT_TRUE(forbidden.empty()) << "forbidden requests of the manager:" << Lines(forbidden);

  // --- every grant of caphv-manager-role used, or justified.
  std::set<Triple> justified;
  for (const auto& n : kNotExercised) justified.insert(n.grant);
  std::vector<std::string> unused, stale;
  const auto grants = GrantsOf(role);
  for (const auto& g : grants) {
    const bool is_used =
        std::any_of(used.begin(), used.end(), [&](const Triple& u) { return Covers(g, u); });
    if (!is_used && justified.count(g) == 0) unused.push_back(ToString(g));
  }
  for (const auto& n : kNotExercised) {
    if (grants.count(n.grant) == 0) stale.push_back(ToString(n.grant) + " (not granted)");
    std::cout << "granted, not exercised here: " << ToString(n.grant) << ": " << n.why << "\n";
  }
  EXPECT_TRUE(unused.empty())
      << "config/rbac/role.yaml grants what the manager never used; remove it, or justify it "
         "in kNotExercised:"
      << Lines(unused);
  EXPECT_TRUE(stale.empty()) << "kNotExercised entries to drop:" << Lines(stale);

  // --- every grant of the leader-election Role used (the Deployment passes --leader-elect).
  std::vector<std::string> unused_leader;
  for (const auto& g : GrantsOf(leader_role)) {
    if (std::none_of(used.begin(), used.end(), [&](const Triple& u) { return Covers(g, u); })) {
      unused_leader.push_back(ToString(g));
    }
  }
  EXPECT_TRUE(unused_leader.empty())
      << "config/rbac/leader_election_role.yaml grants what the manager never used:"
      << Lines(unused_leader);
}

}  // namespace
}  // namespace caphv::e2e
