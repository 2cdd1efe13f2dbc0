#include "kube/config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "kube/base64.h"

namespace caphv::kube {
namespace {

namespace fs = std::filesystem;

std::string Kubeconfig(const std::string& cluster_extra, const std::string& user) {
  return "apiVersion: v1\nkind: Config\ncurrent-context: main\n"
         "clusters:\n- name: c1\n  cluster:\n    server: https://127.0.0.1:6443/\n" +
         cluster_extra +
         "- name: c2\n  cluster:\n    server: https://10.0.0.2:6443\n"
         "contexts:\n- name: main\n  context:\n    cluster: c1\n    user: u1\n    namespace: "
         "team-a\n"
         "- name: other\n  context:\n    cluster: c2\n    user: u1\n"
         "users:\n- name: u1\n  user:\n" +
         user;
}

TEST(KubeconfigTest, ReadsCurrentContextWithInlineData) {
  std::string ca = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
  auto cfg =
      LoadKubeconfigString(Kubeconfig("    certificate-authority-data: " + Base64Encode(ca) + "\n",
                                      "    token: abc123\n"),
                           "/nowhere");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://127.0.0.1:6443");  // trailing slash dropped
  EXPECT_EQ(cfg->ca_pem, ca);
  EXPECT_EQ(cfg->default_namespace, "team-a");
  EXPECT_FALSE(cfg->insecure_skip_tls_verify);
  auto token = cfg->BearerToken();
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(*token, "abc123");
}

TEST(KubeconfigTest, NamedContextAndDefaultNamespace) {
  auto cfg = LoadKubeconfigString(Kubeconfig("", "    token: t\n"), "", "other");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://10.0.0.2:6443");
  EXPECT_EQ(cfg->default_namespace, "default");
}

TEST(KubeconfigTest, ResolvesFilesRelativeToTheKubeconfig) {
  fs::path dir = fs::temp_directory_path() / ("caphv-kc-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "ca.crt") << "CAFILE";
  std::ofstream(dir / "client.crt") << "CERT";
  std::ofstream(dir / "client.key") << "KEY";
  std::ofstream(dir / "token") << "from-file\n";
  auto cfg = LoadKubeconfigString(
      Kubeconfig("    certificate-authority: ca.crt\n",
                 "    client-certificate: client.crt\n    client-key: client.key\n"
                 "    tokenFile: token\n"),
      dir.string());
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->ca_pem, "CAFILE");
  EXPECT_EQ(cfg->client_cert_pem, "CERT");
  EXPECT_EQ(cfg->client_key_pem, "KEY");
  auto token = cfg->BearerToken();
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(*token, "from-file");
  fs::remove_all(dir);
}

TEST(KubeconfigTest, InsecureOnlyWhenTheKubeconfigSaysSo) {
  auto cfg = LoadKubeconfigString(
      Kubeconfig("    insecure-skip-tls-verify: true\n", "    token: t\n"), "");
  ASSERT_TRUE(cfg.ok());
  EXPECT_TRUE(cfg->insecure_skip_tls_verify);
}

// A kubeconfig from a Secret could name the manager's own ServiceAccount
// token as its tokenFile and a server of the tenant's: every file reference
// and plugin is refused, naming the field, and nothing is read.
TEST(KubeconfigTest, AnInlineKubeconfigNeverReadsFilesNorRunsPlugins) {
  EXPECT_TRUE(LoadInlineKubeconfig(Kubeconfig("", "    token: t\n")).ok());
  const std::string kTokenPath = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  const std::vector<std::pair<std::string, std::string>> refused = {
      {Kubeconfig("    certificate-authority: /etc/ssl/certs/ca.pem\n", "    token: t\n"),
       "certificate-authority"},
      {Kubeconfig("", "    tokenFile: " + kTokenPath + "\n"), "tokenFile"},
      {Kubeconfig("", "    client-certificate: /x.crt\n    client-key-data: eA==\n"),
       "client-certificate"},
      {Kubeconfig("", "    client-certificate-data: eA==\n    client-key: /x.key\n"), "client-key"},
      {Kubeconfig("", "    exec:\n      command: /bin/sh\n"), "exec"},
      {Kubeconfig("", "    auth-provider:\n      name: oidc\n"), "auth-provider"},
  };
  for (const auto& [kubeconfig, field] : refused) {
    auto cfg = LoadInlineKubeconfig(kubeconfig);
    ASSERT_FALSE(cfg.ok()) << field;
    EXPECT_NE(cfg.status().message().find("`" + field + "`"), std::string::npos)
        << cfg.status().message();
  }
}

TEST(KubeconfigTest, SkipVerifyWithACaIsRefusedAsByClientGo) {
  auto cfg = LoadKubeconfigString(
      Kubeconfig("    insecure-skip-tls-verify: true\n    certificate-authority-data: " +
                     Base64Encode("CA") + "\n",
                 "    token: t\n"),
      "");
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().message().find("with the insecure flag is not allowed"), std::string::npos)
      << cfg.status().message();
}

TEST(KubeconfigTest, ClearErrors) {
  EXPECT_FALSE(LoadKubeconfigString("{{{", "").ok());
  auto missing = LoadKubeconfigString(Kubeconfig("", "    token: t\n"), "", "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no context \"nope\""), std::string::npos)
      << missing.status().message();
  auto exec = LoadKubeconfigString(Kubeconfig("", "    exec:\n      command: foo\n"), "");
  ASSERT_FALSE(exec.ok());
  EXPECT_NE(exec.status().message().find("exec"), std::string::npos);
  auto bad_b64 = LoadKubeconfigString(
      Kubeconfig("    certificate-authority-data: '%%%'\n", "    token: t\n"), "");
  EXPECT_FALSE(bad_b64.ok());
}

// Found by fuzz/kubeconfig_fuzzer: entries of an unexpected shape are
// errors, never an exception out of the parser.
TEST(KubeconfigTest, EntriesWithoutTheirMapAreErrorsNotExceptions) {
  const std::string no_context_map =
      "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "
      "https://127.0.0.1:6443\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: "
      "x\n  cont:xt:\n    cluster: c\n    user: u\ncurrent-context: x\n";
  auto cfg = LoadInlineKubeconfig(no_context_map);
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().message().find("no context \"x\""), std::string::npos)
      << cfg.status().message();
  for (const char* odd : {"clusters: 5\ncurrent-context: x\n", "current-context: [x]\n",
                          "contexts:\n- 7\n- name: x\ncurrent-context: x\n"}) {
    EXPECT_FALSE(LoadInlineKubeconfig(odd).ok()) << odd;
  }
}

TEST(InClusterConfigTest, ReadsServiceAccountFilesAndRereadsRotatedToken) {
  fs::path root = fs::temp_directory_path() / ("caphv-sa-" + std::to_string(::getpid()));
  fs::path sa = root / "var/run/secrets/kubernetes.io/serviceaccount";
  fs::create_directories(sa);
  std::ofstream(sa / "ca.crt") << "CA";
  std::ofstream(sa / "token") << "t1";
  std::ofstream(sa / "namespace") << "caphv-system";
  ::setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto cfg = InClusterConfig(root.string());
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://10.0.0.1:443");
  EXPECT_EQ(cfg->ca_pem, "CA");
  EXPECT_EQ(cfg->default_namespace, "caphv-system");
  EXPECT_EQ(*cfg->BearerToken(), "t1");
  fs::remove_all(root);
}

TEST(Base64Test, RoundTripsAndRejectsGarbage) {
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    auto d = Base64Decode(Base64Encode(s));
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(*d, s);
  }
  EXPECT_EQ(*Base64Decode("aGVs\nbG8="), "hello");
  EXPECT_FALSE(Base64Decode("abc").has_value());
}

}  // namespace
}  // namespace caphv::kube
