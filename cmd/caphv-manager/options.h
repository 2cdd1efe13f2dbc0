// File: cmd/caphv-manager/options.h
//
// Command-line options of caphv-manager and their validation, as a pure
// function of argv (no environment, no files), so it is unit-tested.
//
// Accepted forms: `--flag=value`, `--flag value`, `--bool`, `--bool=false`,
// Go's single-dash `-flag`, `-v N`, `-vN`, `-v=N` and `--v=N`. Every flag of
// the Go provider's manager is accepted with its default but the metrics
// address (see the flag table in the help text):
//   --metrics-bind-address :8443 (Go's is :8080; "0" disables; HTTPS with
//   TokenReview + SubjectAccessReview unless --metrics-secure=false, which is
//   only accepted with a loopback address), --health-probe-bind-address
//   :9440 ("0" disables; the manifests pass :8081), --leader-elect false,
//   --enable-webhooks false and the --zap-* logging flags (logging_flags.h);
// kubebuilder's --metrics-secure true, --metrics-cert-path (a directory;
// empty: a self-signed certificate made at start; alias --metrics-cert-dir),
// --metrics-cert-name tls.crt, --metrics-cert-key tls.key;
// and CAPHV's own: lease 15s / 10s / 2s, --webhook-port 9443,
//   --webhook-cert-dir <TMPDIR>/k8s-webhook-server/serving-certs,
//   --concurrency 10, --sync-period 10m, --cache-sync-timeout 2m (controller-
//   runtime's CacheSyncTimeout), -v / --log-format (klog output).
//
// Thread safety: ParseOptions and ParseDuration are stateless.

#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "kube/status.h"
#include "logging_flags.h"

namespace caphv::manager {

// The Go provider's leader election ID, so that a C++ and a Go manager never
// lead at the same time during a migration.
inline constexpr std::string_view kDefaultLeaderElectionId = "1e1658d6.cluster.x-k8s.io";

struct Options {
  std::string kubeconfig;
  std::string metrics_bind_address = ":8443";
  // HTTPS, and every request authenticated (TokenReview) and authorised
  // (SubjectAccessReview); false: plain HTTP without authentication, only on
  // a loopback address.
  bool metrics_secure = true;
  std::string metrics_cert_path;  // directory; empty: self-signed, in memory
  std::string metrics_cert_name = "tls.crt";
  std::string metrics_cert_key = "tls.key";
  std::string health_probe_bind_address = ":9440";

  bool leader_elect = false;
  std::string leader_election_id = std::string(kDefaultLeaderElectionId);
  std::string leader_election_namespace;  // empty: the pod's namespace
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};

  bool enable_webhooks = false;
  int webhook_port = 9443;
  std::string webhook_cert_dir;  // defaulted from TMPDIR by ParseOptions
  std::string webhook_cert_name = "tls.crt";
  std::string webhook_key_name = "tls.key";

  int concurrency = 10;
  std::chrono::milliseconds sync_period{10 * 60 * 1000};
  std::chrono::milliseconds cache_sync_timeout{2 * 60 * 1000};
  std::string watch_namespace;  // --namespace; empty = all namespaces
  std::string watch_filter;     // value of the cluster.x-k8s.io/watch-filter label

  int verbosity = 0;
  std::string log_format = "text";  // "text" or "json"
  ZapFlags zap;                     // the Go provider's --zap-* flags
  LogSettings log;                  // what the flags above resolve to

  // Set when the user asked for --help / --version: print and exit 0.
  bool show_help = false;
  bool show_version = false;
  std::string help_text;
};

// Parses and validates argv. `tmpdir` stands for $TMPDIR (empty = "/tmp") in
// the default webhook certificate directory. Errors are kInvalidArgument with
// a one-line message naming the flag.
kube::StatusOr<Options> ParseOptions(int argc, const char* const* argv,
                                     std::string_view tmpdir = {});

// Go-style durations: "1h2m3s", "500ms", "1.5s", "0"; units ns, us, ms, s, m, h.
kube::StatusOr<std::chrono::milliseconds> ParseDuration(std::string_view text);

// The inverse, for logs: "15s", "10m0s", "1h0m0s", "500ms".
std::string FormatDuration(std::chrono::milliseconds d);

}  // namespace caphv::manager
