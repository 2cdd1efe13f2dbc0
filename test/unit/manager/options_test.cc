// Unit tests of caphv-manager's flag parsing: defaults, every accepted form,
// durations and the one-line errors of bad flags.

#include "options.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace caphv::manager {
namespace {

using std::chrono::milliseconds;

kube::StatusOr<Options> Parse(std::initializer_list<const char*> flags,
                              std::string_view tmpdir = {}) {
  std::vector<const char*> argv = {"caphv-manager"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return ParseOptions(static_cast<int>(argv.size()), argv.data(), tmpdir);
}

TEST(OptionsTest, Defaults) {
  auto o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->kubeconfig, "");
  EXPECT_EQ(o->metrics_bind_address, ":8443");
  EXPECT_TRUE(o->metrics_secure);
  EXPECT_EQ(o->metrics_cert_path, "");  // a self-signed certificate
  EXPECT_EQ(o->metrics_cert_name, "tls.crt");
  EXPECT_EQ(o->metrics_cert_key, "tls.key");
  EXPECT_EQ(o->health_probe_bind_address, ":9440");  // the Go manager's default
  EXPECT_FALSE(o->leader_elect);
  EXPECT_EQ(o->leader_election_id, "1e1658d6.cluster.x-k8s.io");
  EXPECT_EQ(o->lease_duration, milliseconds(15000));
  EXPECT_EQ(o->renew_deadline, milliseconds(10000));
  EXPECT_EQ(o->retry_period, milliseconds(2000));
  EXPECT_FALSE(o->enable_webhooks);
  EXPECT_EQ(o->webhook_port, 9443);
  EXPECT_EQ(o->webhook_cert_dir, "/tmp/k8s-webhook-server/serving-certs");
  EXPECT_EQ(o->webhook_cert_name, "tls.crt");
  EXPECT_EQ(o->webhook_key_name, "tls.key");
  EXPECT_EQ(o->concurrency, 10);
  EXPECT_EQ(o->sync_period, milliseconds(600000));
  EXPECT_EQ(o->cache_sync_timeout, milliseconds(120000));
  EXPECT_EQ(o->watch_namespace, "");
  EXPECT_EQ(o->watch_filter, "");
  EXPECT_EQ(o->verbosity, 0);
  EXPECT_EQ(o->log_format, "text");
  // The Go manager's logger: zap development mode (console, debug, rfc3339).
  EXPECT_TRUE(o->zap.devel);
  EXPECT_EQ(o->log,
            (LogSettings{1, kube::log::Format::kZapConsole, kube::log::TimeEncoding::kRfc3339}));
  EXPECT_FALSE(o->show_help);
  EXPECT_FALSE(o->show_version);
}

TEST(OptionsTest, TmpdirMovesTheDefaultCertDir) {
  auto o = Parse({}, "/var/tmp");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->webhook_cert_dir, "/var/tmp/k8s-webhook-server/serving-certs");
}

TEST(OptionsTest, EveryFlagInBothForms) {
  auto o = Parse({"--kubeconfig=/k",
                  "--metrics-bind-address",
                  "127.0.0.1:9000",
                  "--health-probe-bind-address=:9001",
                  "--leader-elect",
                  "--leader-election-id",
                  "my-id",
                  "--leader-election-namespace=caphv-system",
                  "--leader-elect-lease-duration=30s",
                  "--leader-elect-renew-deadline",
                  "20s",
                  "--leader-elect-retry-period=5s",
                  "--enable-webhooks",
                  "--webhook-port=10443",
                  "--webhook-cert-dir",
                  "/certs",
                  "--webhook-cert-name=c.pem",
                  "--webhook-key-name=k.pem",
                  "--concurrency",
                  "3",
                  "--sync-period=1h30m",
                  "--cache-sync-timeout",
                  "45s",
                  "--namespace",
                  "team-a",
                  "--watch-filter=blue",
                  "--log-format",
                  "json"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->kubeconfig, "/k");
  EXPECT_EQ(o->metrics_bind_address, "127.0.0.1:9000");
  EXPECT_EQ(o->health_probe_bind_address, ":9001");
  EXPECT_TRUE(o->leader_elect);
  EXPECT_EQ(o->leader_election_id, "my-id");
  EXPECT_EQ(o->leader_election_namespace, "caphv-system");
  EXPECT_EQ(o->lease_duration, milliseconds(30000));
  EXPECT_EQ(o->renew_deadline, milliseconds(20000));
  EXPECT_EQ(o->retry_period, milliseconds(5000));
  EXPECT_TRUE(o->enable_webhooks);
  EXPECT_EQ(o->webhook_port, 10443);
  EXPECT_EQ(o->webhook_cert_dir, "/certs");
  EXPECT_EQ(o->webhook_cert_name, "c.pem");
  EXPECT_EQ(o->webhook_key_name, "k.pem");
  EXPECT_EQ(o->concurrency, 3);
  EXPECT_EQ(o->sync_period, milliseconds(5400000));
  EXPECT_EQ(o->cache_sync_timeout, milliseconds(45000));
  EXPECT_EQ(o->watch_namespace, "team-a");
  EXPECT_EQ(o->watch_filter, "blue");
  EXPECT_EQ(o->log_format, "json");
}

TEST(OptionsTest, AnEmptyValueAfterTheEqualsSignIsTheEmptyValue) {
  // As Go's flag package reads it (clusterctl renders an unset variable so): the
  // next argument stays an argument of its own.
  auto o = Parse({"--watch-filter=", "--namespace", "team-a"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->watch_filter, "");
  EXPECT_EQ(o->watch_namespace, "team-a");
  auto single_dash = Parse({"-watch-filter=", "-leader-elect"});
  ASSERT_TRUE(single_dash.ok()) << single_dash.status().ToString();
  EXPECT_EQ(single_dash->watch_filter, "");
  EXPECT_TRUE(single_dash->leader_elect);
}

TEST(OptionsTest, BooleansTakeExplicitValues) {
  auto o = Parse({"--leader-elect=false", "--enable-webhooks=true"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_FALSE(o->leader_elect);
  EXPECT_TRUE(o->enable_webhooks);
  o = Parse({"--leader-elect=true", "--enable-webhooks=false"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->leader_elect);
  EXPECT_FALSE(o->enable_webhooks);
}

TEST(OptionsTest, VerbosityForms) {
  for (auto flags :
       {std::vector<const char*>{"-v=4"}, {"-v", "4"}, {"-v4"}, {"--v=4"}, {"--v", "4"}}) {
    std::vector<const char*> argv = {"caphv-manager"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto o = ParseOptions(static_cast<int>(argv.size()), argv.data());
    ASSERT_TRUE(o.ok()) << flags[0] << ": " << o.status().ToString();
    EXPECT_EQ(o->verbosity, 4) << flags[0];
  }
  auto o = Parse({"-v=10"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->verbosity, 10);
}

TEST(OptionsTest, TheGoManagerCommandLinesParse) {
  // The Deployment args of the Go provider's manifests and Helm chart, in
  // Go's flag syntax (single dash accepted too).
  for (auto flags : {std::vector<const char*>{"--health-probe-bind-address=:8081",
                                              "--metrics-bind-address=127.0.0.1:8080",
                                              "--leader-elect", "--enable-webhooks"},
                     {"-health-probe-bind-address=:8081", "-metrics-bind-address=127.0.0.1:8080",
                      "-leader-elect", "-enable-webhooks", "-zap-devel=false"}}) {
    std::vector<const char*> argv = {"caphv-manager"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto o = ParseOptions(static_cast<int>(argv.size()), argv.data());
    ASSERT_TRUE(o.ok()) << flags[0] << ": " << o.status().ToString();
    EXPECT_EQ(o->health_probe_bind_address, ":8081");
    EXPECT_EQ(o->metrics_bind_address, "127.0.0.1:8080");
    EXPECT_TRUE(o->leader_elect);
    EXPECT_TRUE(o->enable_webhooks);
  }
}

TEST(OptionsTest, ZapFlagsSetTheLogger) {
  using kube::log::Format;
  using kube::log::TimeEncoding;
  auto o = Parse({"--zap-devel=false"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->log, (LogSettings{0, Format::kZapJson, TimeEncoding::kRfc3339}));
  o = Parse({"--zap-encoder=json", "--zap-log-level=5", "--zap-stacktrace-level=panic",
             "--zap-time-encoding", "millis"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->log, (LogSettings{5, Format::kZapJson, TimeEncoding::kMillis}));
  o = Parse({"--zap-devel=false", "--zap-encoder=CONSOLE", "--zap-log-level=error"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->log, (LogSettings{-1, Format::kZapConsole, TimeEncoding::kRfc3339}));
  // The klog flags select klog output.
  o = Parse({"-v=3", "--log-format=json"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->log.verbosity, 3);
  EXPECT_EQ(o->log.format, Format::kJson);
  o = Parse({"-v=2"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->log.format, Format::kText);
  EXPECT_NE(Parse({"--help"})->help_text.find("--zap-time-encoding"), std::string::npos);
}

TEST(OptionsTest, HelpAndVersion) {
  auto o = Parse({"--help"});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->show_help);
  EXPECT_NE(o->help_text.find("--webhook-cert-dir"), std::string::npos);
  o = Parse({"--version"});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->show_version);
}

TEST(OptionsTest, BadFlagsGiveOneReadableLine) {
  const std::vector<std::pair<std::vector<const char*>, std::string>> cases = {
      {{"--no-such-flag"}, "no-such-flag"},
      {{"--webhook-port=0"}, "--webhook-port"},
      {{"--webhook-port=70000"}, "--webhook-port"},
      {{"--webhook-port=abc"}, "webhook-port"},
      {{"--concurrency=0"}, "--concurrency"},
      {{"--sync-period=10"}, "--sync-period"},
      {{"--sync-period=0"}, "--sync-period"},
      {{"--cache-sync-timeout=0"}, "--cache-sync-timeout"},
      {{"--cache-sync-timeout=soon"}, "--cache-sync-timeout"},
      {{"--leader-elect-lease-duration=10s"}, "--leader-elect-lease-duration"},
      {{"--leader-elect-renew-deadline=2s"}, "--leader-elect-renew-deadline"},
      {{"--leader-elect-retry-period=soon"}, "--leader-elect-retry-period"},
      {{"--log-format=xml"}, "--log-format"},
      {{"--metrics-bind-address=localhost"}, "--metrics-bind-address"},
      {{"--metrics-secure=false"}, "--metrics-secure=false"},
      {{"--metrics-secure=false", "--metrics-bind-address=:8080"}, "\":8080\" is not one"},
      {{"--metrics-secure=false", "--metrics-bind-address=10.0.0.1:8080"}, "loopback"},
      {{"--metrics-secure=false", "--metrics-bind-address=[::]:8080"}, "loopback"},
      {{"--metrics-secure=false", "--metrics-bind-address=127.0.0.1:8080",
        "--metrics-cert-path=/certs"},
       "--metrics-cert-path"},
      {{"--metrics-cert-name="}, "--metrics-cert-name"},
      {{"--metrics-secure=maybe"}, "metrics-secure"},
      {{"--health-probe-bind-address=:99999"}, "--health-probe-bind-address"},
      {{"--namespace=Not_A_Namespace"}, "--namespace"},
      {{"--watch-filter=a b"}, "--watch-filter"},
      {{"-v=-1"}, "-v"},
      {{"--zap-log-level=trace"}, "--zap-log-level"},
      {{"--zap-log-level=0"}, "--zap-log-level"},
      {{"--zap-encoder=xml"}, "--zap-encoder"},
      {{"--zap-time-encoding=unix"}, "--zap-time-encoding"},
      {{"--zap-stacktrace-level=debug"}, "--zap-stacktrace-level"},
      {{"--zap-devel=maybe"}, "zap-devel"},
      {{"-v=2", "--zap-log-level=debug"}, "cannot be combined"},
      {{"--enable-webhooks", "--webhook-cert-dir="}, "--webhook-cert-dir"},
      {{"stray"}, "stray"},
  };
  for (const auto& [flags, needle] : cases) {
    std::vector<const char*> argv = {"caphv-manager"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto o = ParseOptions(static_cast<int>(argv.size()), argv.data());
    ASSERT_FALSE(o.ok()) << flags[0];
    const std::string& msg = o.status().message();
    EXPECT_EQ(o.status().code(), kube::StatusCode::kInvalidArgument);
    EXPECT_NE(msg.find(needle), std::string::npos) << flags[0] << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(OptionsTest, MetricsAndProbesCanBeDisabled) {
  auto o = Parse({"--metrics-bind-address=0", "--health-probe-bind-address=0"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->metrics_bind_address, "0");
}

TEST(OptionsTest, PlainMetricsOnlyOnLoopback) {
  for (const char* address :
       {"127.0.0.1:8080", "127.0.0.2:9000", "localhost:8080", "[::1]:8080", "0"}) {
    std::string flag = std::string("--metrics-bind-address=") + address;
    auto o = Parse({"--metrics-secure=false", flag.c_str()});
    ASSERT_TRUE(o.ok()) << address << ": " << o.status().ToString();
    EXPECT_FALSE(o->metrics_secure);
    EXPECT_EQ(o->metrics_bind_address, address);
  }
  // The Go provider's Deployment flag: served securely on that address.
  auto o = Parse({"--metrics-bind-address=127.0.0.1:8080"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->metrics_secure);
}

TEST(OptionsTest, MetricsCertificateFlags) {
  auto o = Parse({"--metrics-cert-path=/certs", "--metrics-cert-name=c.pem",
                  "--metrics-cert-key=k.pem", "--metrics-secure=true"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->metrics_cert_path, "/certs");
  EXPECT_EQ(o->metrics_cert_name, "c.pem");
  EXPECT_EQ(o->metrics_cert_key, "k.pem");
  EXPECT_TRUE(o->metrics_secure);
  o = Parse({"--metrics-cert-dir", "/other"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->metrics_cert_path, "/other");
}

TEST(DurationTest, GoSyntax) {
  EXPECT_EQ(*ParseDuration("0"), milliseconds(0));
  EXPECT_EQ(*ParseDuration("500ms"), milliseconds(500));
  EXPECT_EQ(*ParseDuration("1.5s"), milliseconds(1500));
  EXPECT_EQ(*ParseDuration("2m"), milliseconds(120000));
  EXPECT_EQ(*ParseDuration("1h2m3s"), milliseconds(3723000));
  EXPECT_EQ(*ParseDuration("-3s"), milliseconds(-3000));
  EXPECT_EQ(*ParseDuration("1500us"), milliseconds(2));
  for (const char* bad : {"", "s", "10", "1x", "1h2", "ms", "-", "1..5s"}) {
    auto d = ParseDuration(bad);
    EXPECT_FALSE(d.ok()) << bad;
  }
}

TEST(DurationTest, Format) {
  EXPECT_EQ(FormatDuration(milliseconds(0)), "0s");
  EXPECT_EQ(FormatDuration(milliseconds(500)), "500ms");
  EXPECT_EQ(FormatDuration(milliseconds(15000)), "15s");
  EXPECT_EQ(FormatDuration(milliseconds(1500)), "1.5s");
  EXPECT_EQ(FormatDuration(milliseconds(600000)), "10m0s");
  EXPECT_EQ(FormatDuration(milliseconds(3723000)), "1h2m3s");
}

}  // namespace
}  // namespace caphv::manager
