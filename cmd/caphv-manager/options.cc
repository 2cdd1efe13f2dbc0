// File: cmd/caphv-manager/options.cc
//
// Flag definitions (CLI11 2.1) and validation.

#include "options.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <vector>

#include "kube/http_server.h"

namespace caphv::manager {
namespace {

kube::Status Bad(std::string message) {
  return kube::Status(kube::StatusCode::kInvalidArgument, std::move(message));
}

// CLI11 2.1 rejects "-v=4" and single-dash long flags ("-leader-elect");
// Go's flag package accepts both.
std::string Normalise(std::string_view arg) {
  if (arg.size() > 3 && arg.substr(0, 3) == "-v=") return "--v=" + std::string(arg.substr(3));
  if (arg.size() > 2 && arg[0] == '-' && arg[1] >= 'a' && arg[1] <= 'z' &&
      !(arg[1] == 'v' && arg[2] >= '0' && arg[2] <= '9')) {
    return "-" + std::string(arg);
  }
  return std::string(arg);
}

// A bind address: "0" (disabled) or [host]:port.
kube::Status CheckBindAddress(std::string_view flag, const std::string& value) {
  if (value == "0") return {};
  auto parsed = kube::ParseBindAddress(value);
  if (!parsed.ok()) {
    return Bad("invalid " + std::string(flag) + " \"" + value + "\": " + parsed.status().message());
  }
  return {};
}

// A Kubernetes label value (what --watch-filter matches).
bool IsLabelValue(std::string_view v) {
  if (v.size() > 63) return false;
  if (v.empty()) return true;
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(v.front()) || !alnum(v.back())) return false;
  for (char c : v) {
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// A DNS-1123 label (namespace names).
bool IsDns1123Label(std::string_view v) {
  if (v.empty() || v.size() > 63) return false;
  auto lower_alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_alnum(v.front()) || !lower_alnum(v.back())) return false;
  for (char c : v) {
    if (!lower_alnum(c) && c != '-') return false;
  }
  return true;
}

kube::Status Validate(const Options& o) {
  CAPHV_RETURN_IF_ERROR(CheckBindAddress("--metrics-bind-address", o.metrics_bind_address));
  if (!o.metrics_secure && o.metrics_bind_address != "0" &&
      !kube::IsLoopbackBindAddress(o.metrics_bind_address)) {
    return Bad(
        "--metrics-secure=false serves /metrics without authentication, so only on a "
        "loopback address: --metrics-bind-address \"" +
        o.metrics_bind_address + "\" is not one (use 127.0.0.1:<port>)");
  }
  if (!o.metrics_secure && !o.metrics_cert_path.empty()) {
    return Bad("--metrics-cert-path needs --metrics-secure (plain HTTP has no certificate)");
  }
  if (o.metrics_cert_name.empty() || o.metrics_cert_key.empty()) {
    return Bad("--metrics-cert-name and --metrics-cert-key must not be empty");
  }
  CAPHV_RETURN_IF_ERROR(
      CheckBindAddress("--health-probe-bind-address", o.health_probe_bind_address));
  if (o.webhook_port < 1 || o.webhook_port > 65535) {
    return Bad("invalid --webhook-port " + std::to_string(o.webhook_port) +
               ": must be between 1 and 65535");
  }
  if (o.enable_webhooks && o.webhook_cert_dir.empty()) {
    return Bad("--webhook-cert-dir must not be empty when webhooks are enabled");
  }
  if (o.webhook_cert_name.empty() || o.webhook_key_name.empty()) {
    return Bad("--webhook-cert-name and --webhook-key-name must not be empty");
  }
  if (o.leader_election_id.empty()) return Bad("--leader-election-id must not be empty");
  if (o.lease_duration.count() <= 0 || o.renew_deadline.count() <= 0 ||
      o.retry_period.count() <= 0) {
    return Bad("leader election durations must be greater than zero");
  }
  if (o.lease_duration <= o.renew_deadline) {
    return Bad("--leader-elect-lease-duration (" + FormatDuration(o.lease_duration) +
               ") must be greater than --leader-elect-renew-deadline (" +
               FormatDuration(o.renew_deadline) + ")");
  }
  if (o.renew_deadline.count() * 10 <= o.retry_period.count() * 12) {
    return Bad("--leader-elect-renew-deadline (" + FormatDuration(o.renew_deadline) +
               ") must be greater than 1.2 x --leader-elect-retry-period (" +
               FormatDuration(o.retry_period) + ")");
  }
  if (o.lease_duration.count() % 1000 != 0) {
    return Bad("--leader-elect-lease-duration must be a whole number of seconds");
  }
  if (o.concurrency < 1) {
    return Bad("invalid --concurrency " + std::to_string(o.concurrency) + ": must be at least 1");
  }
  if (o.sync_period.count() <= 0) return Bad("--sync-period must be greater than zero");
  if (o.cache_sync_timeout.count() <= 0) {
    return Bad("--cache-sync-timeout must be greater than zero");
  }
  if (!o.watch_namespace.empty() && !IsDns1123Label(o.watch_namespace)) {
    return Bad("invalid --namespace \"" + o.watch_namespace + "\": not a valid namespace name");
  }
  if (!o.leader_election_namespace.empty() && !IsDns1123Label(o.leader_election_namespace)) {
    return Bad("invalid --leader-election-namespace \"" + o.leader_election_namespace + "\"");
  }
  if (!IsLabelValue(o.watch_filter)) {
    return Bad("invalid --watch-filter \"" + o.watch_filter + "\": not a valid label value");
  }
  return {};
}

}  // namespace

kube::StatusOr<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  const std::string original(text);
  auto bad = [&] { return Bad("invalid duration \"" + original + "\""); };
  if (text.empty()) return bad();
  bool negative = false;
  if (text.front() == '-' || text.front() == '+') {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (text.empty()) return bad();
  if (text == "0") return std::chrono::milliseconds(0);
  double total_ns = 0;
  while (!text.empty()) {
    size_t i = 0, dots = 0;
    bool digits = false;
    while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) {
      digits |= text[i] != '.';
      dots += text[i] == '.';
      ++i;
    }
    if (!digits || dots > 1) return bad();
    double number = std::strtod(std::string(text.substr(0, i)).c_str(), nullptr);
    text.remove_prefix(i);
    size_t j = 0;
    while (j < text.size() && !((text[j] >= '0' && text[j] <= '9') || text[j] == '.')) ++j;
    std::string_view unit = text.substr(0, j);
    text.remove_prefix(j);
    double scale = 0;
    if (unit == "ns") {
      scale = 1;
    } else if (unit == "us" || unit == "\u00b5s") {
      scale = 1e3;
    } else if (unit == "ms") {
      scale = 1e6;
    } else if (unit == "s") {
      scale = 1e9;
    } else if (unit == "m") {
      scale = 60e9;
    } else if (unit == "h") {
      scale = 3600e9;
    } else {
      return bad();  // missing or unknown unit
    }
    total_ns += number * scale;
  }
  auto ms = static_cast<int64_t>(std::llround(total_ns / 1e6));
  return std::chrono::milliseconds(negative ? -ms : ms);
}

std::string FormatDuration(std::chrono::milliseconds d) {
  int64_t ms = d.count();
  if (ms == 0) return "0s";
  std::string sign = ms < 0 ? "-" : "";
  if (ms < 0) ms = -ms;
  if (ms < 1000) return sign + std::to_string(ms) + "ms";
  int64_t h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60, rest = ms % 1000;
  std::string secs = std::to_string(s);
  if (rest != 0) {
    char frac[8];
    std::snprintf(frac, sizeof frac, ".%03lld", static_cast<long long>(rest));
    std::string f(frac);
    while (f.back() == '0') f.pop_back();
    secs += f;
  }
  if (h > 0) return sign + std::to_string(h) + "h" + std::to_string(m) + "m" + secs + "s";
  if (m > 0) return sign + std::to_string(m) + "m" + secs + "s";
  return sign + secs + "s";
}

kube::StatusOr<Options> ParseOptions(int argc, const char* const* argv, std::string_view tmpdir) {
  Options o;
  std::string lease_duration = "15s", renew_deadline = "10s", retry_period = "2s",
              sync_period = "10m", cache_sync_timeout = "2m";
  o.webhook_cert_dir =
      std::string(tmpdir.empty() ? "/tmp" : tmpdir) + "/k8s-webhook-server/serving-certs";

  CLI::App app{"caphv-manager: the Cluster API infrastructure provider for Harvester",
               "caphv-manager"};
  app.set_help_flag("-h,--help", "Print this help and exit");
  app.add_flag("--version", o.show_version, "Print the version and exit");
  app.add_option("--kubeconfig", o.kubeconfig,
                 "Path to a kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  app.add_option("--metrics-bind-address", o.metrics_bind_address,
                 "Address the /metrics endpoint binds to; \"0\" disables it")
      ->capture_default_str();
  app.add_flag("--metrics-secure", o.metrics_secure,
               "Serve /metrics over HTTPS to clients whose bearer token the apiserver "
               "authenticates and authorises (get on /metrics); default true; false: plain HTTP "
               "without authentication, on a loopback address only")
      ->capture_default_str();
  app.add_option("--metrics-cert-path,--metrics-cert-dir", o.metrics_cert_path,
                 "Directory with the metrics serving certificate and key (default: a "
                 "self-signed certificate generated at start)");
  app.add_option("--metrics-cert-name", o.metrics_cert_name, "Metrics certificate file name")
      ->capture_default_str();
  app.add_option("--metrics-cert-key", o.metrics_cert_key, "Metrics key file name")
      ->capture_default_str();
  app.add_option("--health-probe-bind-address", o.health_probe_bind_address,
                 "Address the /healthz and /readyz endpoints bind to; \"0\" disables them")
      ->capture_default_str();
  app.add_flag("--leader-elect", o.leader_elect,
               "Elect a leader (a Lease) so only one replica reconciles");
  app.add_option("--leader-election-id", o.leader_election_id, "Name of the leader-election Lease")
      ->capture_default_str();
  app.add_option("--leader-election-namespace", o.leader_election_namespace,
                 "Namespace of the Lease (default: the pod's namespace)");
  app.add_option("--leader-elect-lease-duration", lease_duration,
                 "How long non-leaders wait before forcing a takeover")
      ->capture_default_str();
  app.add_option("--leader-elect-renew-deadline", renew_deadline,
                 "How long the leader retries renewing before giving up")
      ->capture_default_str();
  app.add_option("--leader-elect-retry-period", retry_period,
                 "Interval between leader-election attempts")
      ->capture_default_str();
  app.add_flag("--enable-webhooks", o.enable_webhooks, "Serve the validating admission webhooks");
  app.add_option("--webhook-port", o.webhook_port, "Port of the webhook server")
      ->capture_default_str();
  app.add_option("--webhook-cert-dir", o.webhook_cert_dir,
                 "Directory with the webhook serving certificate and key")
      ->capture_default_str();
  app.add_option("--webhook-cert-name", o.webhook_cert_name, "Certificate file name")
      ->capture_default_str();
  app.add_option("--webhook-key-name", o.webhook_key_name, "Key file name")->capture_default_str();
  app.add_option("--concurrency", o.concurrency, "Reconciles running at once, per kind")
      ->capture_default_str();
  app.add_option("--sync-period", sync_period, "Minimum interval between full resyncs")
      ->capture_default_str();
  app.add_option("--cache-sync-timeout", cache_sync_timeout,
                 "How long the caches may take to sync before the manager gives up and exits")
      ->capture_default_str();
  app.add_option("--namespace", o.watch_namespace, "Namespace to watch (default: all namespaces)");
  app.add_option("--watch-filter", o.watch_filter,
                 "Only reconcile objects labelled cluster.x-k8s.io/watch-filter=<value>");
  CLI::Option* v =
      app.add_option("-v,--v", o.verbosity,
                     "klog output at this verbosity (0 = steady-state information only)")
          ->capture_default_str();
  CLI::Option* log_format =
      app.add_option("--log-format", o.log_format, "klog output format: text or json")
          ->capture_default_str();
  // The Go provider's logging flags (controller-runtime's zap options).
  std::vector<CLI::Option*> zap = {
      app.add_flag("--zap-devel", o.zap.devel,
                   "Development mode (console encoder, debug level); false: production mode "
                   "(JSON encoder, info level)")
          ->capture_default_str(),
      app.add_option("--zap-encoder", o.zap.encoder, "Log encoding: json or console"),
      app.add_option("--zap-log-level", o.zap.level,
                     "Log level: debug, info, error, or an integer > 0 (that verbosity)"),
      app.add_option("--zap-stacktrace-level", o.zap.stacktrace_level,
                     "Accepted for compatibility (info, error or panic); no stack traces are "
                     "printed"),
      app.add_option("--zap-time-encoding", o.zap.time_encoding,
                     "Time encoding: epoch, millis, nano, iso8601, rfc3339 (default) or "
                     "rfc3339nano"),
  };

  std::vector<std::string> args;
  args.reserve(argc > 0 ? argc : 1);
  args.emplace_back(argc > 0 ? argv[0] : "caphv-manager");
  for (int i = 1; i < argc; ++i) {
    std::string a = Normalise(argv[i]);
    // "--flag=" sets the empty value in Go; CLI11 would take the next argument as the
    // value instead, so the empty value is passed as an argument of its own.
    if (a.size() > 3 && a.starts_with("--") && a.back() == '=' && a.find('=') == a.size() - 1) {
      a.pop_back();
      args.push_back(std::move(a));
      args.emplace_back();
      continue;
    }
    args.push_back(std::move(a));
  }
  std::vector<const char*> cargs;
  for (const auto& a : args) cargs.push_back(a.c_str());

  try {
    app.parse(static_cast<int>(cargs.size()), cargs.data());
  } catch (const CLI::CallForHelp&) {
    o.show_help = true;
    o.help_text = app.help();
    return o;
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    for (char& c : message) {
      if (c == '\n') c = ' ';
    }
    return Bad(message);
  }
  if (o.show_version) return o;

  struct {
    const char* flag;
    const std::string& text;
    std::chrono::milliseconds& out;
  } durations[] = {{"--leader-elect-lease-duration", lease_duration, o.lease_duration},
                   {"--leader-elect-renew-deadline", renew_deadline, o.renew_deadline},
                   {"--leader-elect-retry-period", retry_period, o.retry_period},
                   {"--sync-period", sync_period, o.sync_period},
                   {"--cache-sync-timeout", cache_sync_timeout, o.cache_sync_timeout}};
  for (auto& d : durations) {
    auto parsed = ParseDuration(d.text);
    if (!parsed.ok()) return Bad(std::string(d.flag) + ": " + parsed.status().message());
    d.out = *parsed;
  }
  bool zap_given = false;
  for (const CLI::Option* z : zap) zap_given |= z->count() > 0;
  auto log = ResolveLogging(o.zap, zap_given, o.verbosity, o.log_format,
                            v->count() > 0 || log_format->count() > 0);
  if (!log.ok()) return log.status();
  o.log = *log;
  CAPHV_RETURN_IF_ERROR(Validate(o));
  return o;
}

}  // namespace caphv::manager
