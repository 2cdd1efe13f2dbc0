// File: test/support/testbed.h
//
// Access to the running test bed started by `hack/testbed up --dir DIR`
// (ctest's `testbed` fixture exports DIR as $CAPHV_TESTBED). Integration
// tests talk to its real apiservers through the project's own client.

#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kube/client.h"

namespace caphv::testing {

// The three logical clusters of the bed.
inline constexpr std::string_view kMgmt = "mgmt";
inline constexpr std::string_view kHarvester = "harvester";
inline constexpr std::string_view kWorkload = "workload";

class Testbed {
 public:
  // The bed named by $CAPHV_TESTBED; aborts the test binary if unset.
  static Testbed& Get();

  const std::string& dir() const { return dir_; }
  std::string KubeconfigPath(std::string_view cluster) const;
  kube::RestConfig Config(std::string_view cluster) const;
  // A client per cluster, created on first use and shared.
  std::shared_ptr<kube::Client> Client(std::string_view cluster);
  // The value of KEY in DIR/env (the bed's ports, pids, WITH_* flags), read
  // afresh on each call; "" when the key is absent. Values are taken as
  // written (ports, flags and paths without spaces need no unquoting).
  std::string EnvValue(std::string_view key) const;

 private:
  explicit Testbed(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

// A fresh namespace with a unique name, deleted (without waiting) when the
// object goes out of scope.
class ScopedNamespace {
 public:
  ScopedNamespace(std::shared_ptr<kube::Client> client, std::string_view prefix);
  ~ScopedNamespace();
  ScopedNamespace(const ScopedNamespace&) = delete;
  ScopedNamespace& operator=(const ScopedNamespace&) = delete;
  const std::string& name() const { return name_; }

 private:
  std::shared_ptr<kube::Client> client_;
  std::string name_;
};

// "prefix-<random suffix>", a valid DNS-1123 label.
std::string UniqueName(std::string_view prefix);

// Polls `condition` every `poll` until it returns true or `timeout` passes.
bool Eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = std::chrono::seconds(30),
                std::chrono::milliseconds poll = std::chrono::milliseconds(100));

// A TCP port on 127.0.0.1 that was free a moment ago, never one this process got before.
int FreePort();

// "<first_two_octets>.<n>." (e.g. "172.21.7."): a /24 whose prefix no IPPool
// range of `harvester` uses, n random in 1..250, so tests' pools never overlap
// (Harvester refuses overlapping pools).
std::string UnusedPoolPrefix(kube::Client& harvester, const std::string& first_two_octets);

// Runs a shell command; returns its exit code and, if given, its stdout+stderr.
int RunCommand(const std::string& command, std::string* output = nullptr);

// Applies CAPHV's CRDs (config/crd/bases, server-side, idempotent: suites
// share a bed) with `kubeconfig` and waits until they are established;
// returns the first failing kubectl's exit code (0 when both succeeded) and,
// if given, its output.
int ApplyCrds(const std::string& kubeconfig, std::string* output = nullptr);

// Path of a built executable: $CAPHV_BUILD_DIR/<relative>.
std::string BuildPath(std::string_view relative);
// Path inside the source tree: $CAPHV_SOURCE_DIR/<relative>, else found
// from this file's compile-time path.
std::string SourcePath(std::string_view relative);
// Where the third-party release archives are: $CAPHV_THIRD_PARTY, else
// ../shared/third_party next to the source tree.
std::string ThirdPartyDir();
// The Go provider's release archive of `version` ("v0.2.9"):
// ThirdPartyDir()/cluster-api-provider-harvester-<version>.tar.gz.
std::string GoProviderArchive(std::string_view version);
// The file `member` (a path inside the release, e.g. "test/e2e/run-e2e.sh")
// of that archive; nullopt when the archive or the file cannot be read.
std::optional<std::string> ReadGoProviderFile(std::string_view version, std::string_view member);

}  // namespace caphv::testing
