// File: kube/config.h
//
// RestConfig: where an apiserver is and how to authenticate to it, loaded
// from a kubeconfig (file or string) or from the in-cluster service account.
// TLS verification is always on unless the kubeconfig itself says
// `insecure-skip-tls-verify: true`.

#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "kube/status.h"

namespace caphv::kube {

// Reads a bearer token from a file, re-reading it at most once a minute so
// rotated service-account tokens are picked up. Thread-safe.
class TokenFile {
 public:
  explicit TokenFile(std::string path) : path_(std::move(path)) {}
  StatusOr<std::string> Token();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::mutex mu_;
  std::string token_;
  std::chrono::steady_clock::time_point read_at_{};
};

struct RestConfig {
  std::string server;                     // https://127.0.0.1:6443 (no trailing slash)
  std::string ca_pem;                     // CA bundle in PEM; empty = system roots
  std::string client_cert_pem;            // client certificate in PEM
  std::string client_key_pem;             // client key in PEM
  std::string token;                      // static bearer token
  std::shared_ptr<TokenFile> token_file;  // bearer token re-read from a file
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // overrides SNI / verification name
  std::string default_namespace = "default";
  std::string user_agent = "caphv";
  double qps = 0;  // client-side rate limit; 0 = none (rely on APF)
  int burst = 0;
  // TCP connect plus TLS handshake, for every request and watch.
  std::chrono::milliseconds connect_timeout{10000};
  // Whole request/response of a non-watch call (a watch ends on its own
  // idle timeout instead).
  std::chrono::milliseconds request_timeout{60000};
  // A pooled connection idle this long is closed (client-go's transport:
  // IdleConnTimeout 90 s).
  std::chrono::milliseconds idle_connection_timeout{90000};

  // The bearer token to send, if any (token file first, then token).
  StatusOr<std::string> BearerToken() const;
};

// Parses kubeconfig YAML. Relative file paths resolve against `base_dir`.
// `context` empty = current-context.
StatusOr<RestConfig> LoadKubeconfigString(const std::string& yaml, const std::string& base_dir,
                                          const std::string& context = {});

// A kubeconfig that arrives as data (a Secret a tenant may write: the
// identity of a HarvesterCluster, a workload cluster's kubeconfig): inline
// certificates, keys and tokens only. A file reference (`certificate-authority`,
// `client-certificate`, `client-key`, `tokenFile`) or a plugin (`exec`,
// `auth-provider`) is refused, naming the field, and nothing is read: such a
// kubeconfig could make the manager send its own ServiceAccount token, or
// any file it can read, to a server of the tenant's choosing.
StatusOr<RestConfig> LoadInlineKubeconfig(const std::string& yaml);

// Reads a kubeconfig file (the first of a colon-separated list that exists).
StatusOr<RestConfig> LoadKubeconfigFile(const std::string& path, const std::string& context = {});

// The in-cluster service-account config; `root` replaces "/" for tests.
StatusOr<RestConfig> InClusterConfig(const std::string& root = "/");

// controller-runtime's precedence: `flag_path`, $KUBECONFIG, in-cluster,
// $HOME/.kube/config.
StatusOr<RestConfig> LoadDefaultConfig(const std::string& flag_path,
                                       const std::string& context = {});

}  // namespace caphv::kube
