// Secure metrics as a user sees them, with a real Prometheus
// (/usr/bin/prometheus, installed by hack/setup.sh): caphv-manager runs as a
// ServiceAccount holding only the rules of config/rbac/role.yaml and
// config/rbac/proxy_role.yaml and serves /metrics over HTTPS on a loopback
// port (self-signed certificate). A ServiceAccount `prometheus` bound to
// caphv-metrics-reader (config/rbac/metrics_reader_role.yaml) scrapes it with
// a token from the TokenRequest API; a job without a token sees the target
// down with 401, one with the token of a ServiceAccount without the role
// with 403. Every caphv_* family the manager serves reaches Prometheus: those
// with samples as series, those without (labelled families before their
// first reconcile) through their HELP/TYPE metadata.
//
// Only 127.0.0.1 is used. Cluster-scoped objects get unique names and are
// deleted at the end; caphv-metrics-reader only if the test created it.

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "controllers/metrics.h"
#include "kube/base64.h"
#include "manager_process.h"
#include "support/testbed.h"

namespace caphv::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const kube::GroupVersionResource kServiceAccounts{"", "v1", "serviceaccounts", true};
const kube::GroupVersionResource kClusterRoles{"rbac.authorization.k8s.io", "v1", "clusterroles",
                                               false};
const kube::GroupVersionResource kClusterRoleBindings{"rbac.authorization.k8s.io", "v1",
                                                      "clusterrolebindings", false};

void WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// The objects of a manifest file, as kubectl reads them.
std::vector<Json> ManifestObjects(const std::string& kubeconfig, const std::string& file) {
  std::string out;
  if (RunCommand("kubectl --kubeconfig '" + kubeconfig + "' create --dry-run=client -o json -f '" +
                     SourcePath(file) + "'",
                 &out) != 0) {
    ADD_FAILURE() << file << ": " << out;
    return {};
  }
  // One JSON object per document, one after the other.
  std::vector<Json> objects;
  std::istringstream in(out);
  while ((in >> std::ws) && in.peek() != std::char_traits<char>::eof()) {
    Json j;
    try {
      in >> j;
    } catch (const Json::exception& e) {
      ADD_FAILURE() << file << ": " << e.what() << "\n" << out;
      break;
    }
    objects.push_back(std::move(j));
  }
  return objects;
}

Json ClusterRoleRules(const std::string& kubeconfig, const std::string& file) {
  Json rules = Json::array();
  for (const auto& o : ManifestObjects(kubeconfig, file)) {
    if (o.value("kind", "") != "ClusterRole") continue;
    for (const auto& r : o.value("rules", Json::array())) rules.push_back(r);
  }
  return rules;
}

// The names of the samples and of the # TYPE lines of a text exposition
// whose names start with `prefix`.
struct Exposition {
  std::map<std::string, std::string> types;  // family -> type
  std::set<std::string> samples;
};
Exposition ParseExposition(const std::string& text, const std::string& prefix) {
  Exposition e;
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    std::string line = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    at = nl == std::string::npos ? text.size() : nl + 1;
    if (line.rfind("# TYPE ", 0) == 0) {
      std::string rest = line.substr(7);
      size_t sp = rest.find(' ');
      if (rest.rfind(prefix, 0) == 0 && sp != std::string::npos) {
        e.types[rest.substr(0, sp)] = rest.substr(sp + 1);
      }
    } else if (line.rfind(prefix, 0) == 0) {
      e.samples.insert(line.substr(0, line.find_first_of("{ ")));
    }
  }
  return e;
}

class MetricsPrometheusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& bed = Testbed::Get();
    admin_kubeconfig_ = bed.KubeconfigPath(kMgmt);
    client_ = bed.Client(kMgmt);
    ns_ = std::make_unique<ScopedNamespace>(client_, "caphv-metrics");
    dir_ = fs::temp_directory_path() / UniqueName("caphv-metrics-test");
    fs::create_directories(dir_);
    std::string out;
    ASSERT_EQ(ApplyCrds(admin_kubeconfig_, &out), 0) << out;
  }

  void TearDown() override {
    if (prometheus_) prometheus_->Stop(SIGTERM, std::chrono::seconds(10));
    if (manager_) manager_->Stop(SIGTERM, std::chrono::seconds(10));
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
      client_->Delete(it->first, "", it->second).IgnoreError();
    }
    if (!HasFailure()) fs::remove_all(dir_);
  }

  void CreateClusterScoped(const kube::GroupVersionResource& gvr, const Json& object,
                           bool may_exist = false) {
    auto created = client_->Create(gvr, "", object);
    if (may_exist && created.status().code() == kube::StatusCode::kAlreadyExists) return;
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    created_.emplace_back(gvr, object["metadata"].value("name", ""));
  }

  void CreateServiceAccount(const std::string& name) {
    Json sa = {{"apiVersion", "v1"},
               {"kind", "ServiceAccount"},
               {"metadata", {{"name", name}, {"namespace", ns_->name()}}}};
    ASSERT_TRUE(client_->Create(kServiceAccounts, ns_->name(), sa).ok());
  }

  // A ClusterRole named `role` (unique) bound to ServiceAccount `account`.
  void Grant(const std::string& account, const std::string& role) {
    Json binding = {
        {"apiVersion", "rbac.authorization.k8s.io/v1"},
        {"kind", "ClusterRoleBinding"},
        {"metadata", {{"name", UniqueName(account)}}},
        {"roleRef",
         {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", role}}},
        {"subjects",
         {{{"kind", "ServiceAccount"}, {"name", account}, {"namespace", ns_->name()}}}}};
    CreateClusterScoped(kClusterRoleBindings, binding);
  }

  // A token of `account` from the TokenRequest API (serviceaccounts/token).
  std::string RequestToken(const std::string& account) {
    const kube::GroupVersionResource token_subresource{"", "v1",
                                                       "serviceaccounts/" + account + "/token"};
    Json request = {{"apiVersion", "authentication.k8s.io/v1"},
                    {"kind", "TokenRequest"},
                    {"spec", {{"expirationSeconds", 3600}}}};
    auto answer = client_->Create(token_subresource, ns_->name(), request);
    EXPECT_TRUE(answer.ok()) << answer.status().ToString();
    if (!answer.ok()) return "";
    return (*answer)["status"].value("token", "");
  }

  std::string KubeconfigFor(const std::string& token) {
    const kube::RestConfig admin = Testbed::Get().Config(kMgmt);
    const fs::path path = dir_ / "manager.kubeconfig";
    WriteFile(
        path,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: mgmt\n  cluster:\n    server: " +
            admin.server + "\n" +
            (admin.ca_pem.empty()
                 ? std::string("    insecure-skip-tls-verify: true\n")
                 : "    certificate-authority-data: " + kube::Base64Encode(admin.ca_pem) + "\n") +
            "users:\n- name: manager\n  user:\n    token: " + token +
            "\ncontexts:\n- name: manager\n  context:\n    cluster: mgmt\n    user: "
            "manager\ncurrent-context: manager\n");
    return path.string();
  }

  // GET https://127.0.0.1:<port>/metrics, with "Authorization: Bearer" from
  // `token` unless empty. The HTTP status (0 when unreachable) and body.
  int Scrape(const std::string& token, std::string* body) {
    std::string header;
    if (!token.empty()) {
      WriteFile(dir_ / "curl-header", "Authorization: Bearer " + token + "\n");
      header = "-H @'" + (dir_ / "curl-header").string() + "' ";
    }
    std::string out;
    int rc = RunCommand("curl -sk -m 5 -w '\\n%{http_code}' " + header +
                            "https://127.0.0.1:" + std::to_string(metrics_port_) + "/metrics",
                        &out);
    auto nl = out.rfind('\n');
    if (rc != 0 || nl == std::string::npos) return 0;
    *body = out.substr(0, nl);
    return std::atoi(out.c_str() + nl + 1);
  }

  Json PrometheusApi(const std::string& path_and_query) {
    std::string body;
    if (HttpGet("http://127.0.0.1:" + std::to_string(prometheus_port_) + path_and_query, &body) !=
        200) {
      return nullptr;
    }
    Json j = Json::parse(body, nullptr, false);
    return j.is_object() && j.value("status", "") == "success" ? j["data"] : Json(nullptr);
  }

  // job -> the target's {health, lastError}.
  std::map<std::string, Json> Targets() {
    std::map<std::string, Json> out;
    Json data = PrometheusApi("/api/v1/targets?state=active");
    if (!data.is_object()) return out;
    for (const auto& t : data.value("activeTargets", Json::array())) {
      out[t["labels"].value("job", "")] = t;
    }
    return out;
  }

  std::string admin_kubeconfig_;
  std::shared_ptr<kube::Client> client_;
  std::unique_ptr<ScopedNamespace> ns_;
  fs::path dir_;
  std::vector<std::pair<kube::GroupVersionResource, std::string>> created_;
  int metrics_port_ = 0, prometheus_port_ = 0;
  std::unique_ptr<ChildProcess> manager_, prometheus_;
};

TEST_F(MetricsPrometheusTest, PrometheusScrapesWithAReaderTokenOnly) {
  std::string prometheus_bin;
  ASSERT_EQ(RunCommand("command -v prometheus", &prometheus_bin), 0)
      << "prometheus is not installed (hack/setup.sh installs the Debian package)";
  prometheus_bin = Trimmed(prometheus_bin);

  // The manager's identity: the rules of the install's two ClusterRoles.
  Json rules = ClusterRoleRules(admin_kubeconfig_, "config/rbac/role.yaml");
  for (const auto& r : ClusterRoleRules(admin_kubeconfig_, "config/rbac/proxy_role.yaml")) {
    rules.push_back(r);
  }
  ASSERT_GT(rules.size(), 2u);
  const std::string manager_role = UniqueName("caphv-metrics-manager");
  CreateClusterScoped(kClusterRoles, {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                                      {"kind", "ClusterRole"},
                                      {"metadata", {{"name", manager_role}}},
                                      {"rules", rules}});
  // The scraper's: caphv-metrics-reader as the install defines it.
  for (const auto& o : ManifestObjects(admin_kubeconfig_, "config/rbac/metrics_reader_role.yaml")) {
    EXPECT_EQ(o["metadata"].value("name", ""), "caphv-metrics-reader");
    CreateClusterScoped(kClusterRoles, o, /*may_exist=*/true);
  }
  CreateServiceAccount("caphv-manager");
  CreateServiceAccount("prometheus");
  CreateServiceAccount("nobody");
  Grant("caphv-manager", manager_role);
  Grant("prometheus", "caphv-metrics-reader");
  const std::string manager_token = RequestToken("caphv-manager");
  const std::string reader_token = RequestToken("prometheus");
  const std::string nobody_token = RequestToken("nobody");
  ASSERT_FALSE(manager_token.empty() || reader_token.empty() || nobody_token.empty());

  metrics_port_ = FreePort();
  const int probe_port = FreePort();
  manager_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{
          BuildPath("cmd/caphv-manager/caphv-manager"),
          "--kubeconfig=" + KubeconfigFor(manager_token), "--namespace=" + ns_->name(),
          "--metrics-bind-address=127.0.0.1:" + std::to_string(metrics_port_),
          "--health-probe-bind-address=127.0.0.1:" + std::to_string(probe_port), "-v=2"},
      dir_ / "manager.log");
  ASSERT_TRUE(manager_->started());
  ASSERT_TRUE(Eventually(
      [&] {
        return HttpGet("http://127.0.0.1:" + std::to_string(probe_port) + "/readyz", nullptr) ==
               200;
      },
      std::chrono::seconds(30)))
      << manager_->Log();

  // What a client sees, before Prometheus.
  std::string body;
  EXPECT_EQ(Scrape("", &body), 401) << body;
  EXPECT_EQ(Scrape("not-a-token", &body), 401) << body;
  EXPECT_EQ(Scrape(nobody_token, &body), 403) << body;
  EXPECT_NE(body.find("system:serviceaccount:" + ns_->name() + ":nobody"), std::string::npos)
      << body;
  ASSERT_EQ(Scrape(reader_token, &body), 200) << body << manager_->Log();
  EXPECT_EQ(HttpGet("http://127.0.0.1:" + std::to_string(metrics_port_) + "/metrics", nullptr), 0)
      << "plain HTTP is not served";
  const Exposition served = ParseExposition(body, "caphv_");
  for (const auto& name : controllers::metrics::FamilyNames()) {
    EXPECT_TRUE(served.types.contains(name)) << name << " is not served";
  }
  ASSERT_FALSE(served.samples.empty()) << body;

  // Prometheus with three jobs: the reader's token, none, nobody's token.
  WriteFile(dir_ / "reader.token", reader_token);
  WriteFile(dir_ / "nobody.token", nobody_token);
  const std::string target = "127.0.0.1:" + std::to_string(metrics_port_);
  auto job = [&](const std::string& name, const std::string& token_file) {
    std::string j = "- job_name: " + name +
                    "\n  scheme: https\n  tls_config:\n    insecure_skip_verify: true\n";
    if (!token_file.empty()) {
      j += "  authorization:\n    credentials_file: " + (dir_ / token_file).string() + "\n";
    }
    return j + "  static_configs:\n  - targets: ['" + target + "']\n";
  };
  WriteFile(dir_ / "prometheus.yml",
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            "scrape_configs:\n" +
                job("caphv", "reader.token") + job("caphv-no-token", "") +
                job("caphv-forbidden", "nobody.token"));
  prometheus_port_ = FreePort();
  prometheus_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{
          prometheus_bin, "--config.file=" + (dir_ / "prometheus.yml").string(),
          "--storage.tsdb.path=" + (dir_ / "tsdb").string(),
          "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port_)},
      dir_ / "prometheus.log");
  ASSERT_TRUE(prometheus_->started());

  std::map<std::string, Json> targets;
  ASSERT_TRUE(Eventually(
      [&] {
        targets = Targets();
        if (targets.size() != 3) return false;
        for (const auto& [name, t] : targets) {
          if (t.value("health", "unknown") == "unknown") return false;
        }
        return true;
      },
      std::chrono::seconds(60), std::chrono::milliseconds(500)))
      << prometheus_->Log();
  EXPECT_EQ(targets["caphv"].value("health", ""), "up") << targets["caphv"].dump();
  EXPECT_EQ(targets["caphv"].value("lastError", "?"), "");
  EXPECT_EQ(targets["caphv-no-token"].value("health", ""), "down");
  EXPECT_NE(targets["caphv-no-token"].value("lastError", "").find("401"), std::string::npos)
      << targets["caphv-no-token"].dump();
  EXPECT_EQ(targets["caphv-forbidden"].value("health", ""), "down");
  EXPECT_NE(targets["caphv-forbidden"].value("lastError", "").find("403"), std::string::npos)
      << targets["caphv-forbidden"].dump();

  // Every caphv_* sample the manager serves is a series in Prometheus, and
  // every caphv_* family (with samples or not) is in its target metadata.
  std::set<std::string> missing_series, missing_metadata;
  Eventually(
      [&] {
        missing_series = served.samples;
        Json names = PrometheusApi("/api/v1/label/__name__/values");
        if (names.is_array()) {
          for (const auto& n : names) missing_series.erase(n.get<std::string>());
        }
        missing_metadata.clear();
        std::map<std::string, std::string> metadata;
        Json meta = PrometheusApi("/api/v1/targets/metadata?match_target=%7Bjob%3D%22caphv%22%7D");
        if (meta.is_array()) {
          for (const auto& m : meta) metadata[m.value("metric", "")] = m.value("type", "");
        }
        for (const auto& [name, type] : served.types) {
          if (metadata[name] != type) missing_metadata.insert(name + " (" + type + ")");
        }
        return missing_series.empty() && missing_metadata.empty();
      },
      std::chrono::seconds(30), std::chrono::milliseconds(500));
  EXPECT_TRUE(missing_series.empty()) << Json(missing_series).dump();
  EXPECT_TRUE(missing_metadata.empty()) << Json(missing_metadata).dump();
  size_t without_samples = 0;
  for (const auto& [name, type] : served.types) {
    bool sampled = false;
    for (const auto& s : served.samples) sampled |= s.rfind(name, 0) == 0;
    without_samples += sampled ? 0 : 1;
  }
  RecordProperty("caphv_families", static_cast<int>(served.types.size()));
  RecordProperty("caphv_families_without_samples", static_cast<int>(without_samples));

  // The refused jobs never reached the handler: the manager says why.
  const std::string log = manager_->Log();
  EXPECT_NE(log.find("Request refused"), std::string::npos) << log;
  EXPECT_EQ(log.find(reader_token), std::string::npos) << "a bearer token leaked into the log";
  EXPECT_EQ(log.find(nobody_token), std::string::npos) << "a bearer token leaked into the log";
}

}  // namespace
}  // namespace caphv::testing
