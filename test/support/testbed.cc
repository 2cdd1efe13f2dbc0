#include "support/testbed.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

namespace caphv::testing {

namespace {
std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}
}  // namespace

Testbed& Testbed::Get() {
  static Testbed* bed = [] {
    std::string dir = Env("CAPHV_TESTBED");
    if (dir.empty()) {
      std::fprintf(stderr,
                   "CAPHV_TESTBED is not set: run integration tests through ctest, or start a bed "
                   "with hack/testbed up --dir DIR and export CAPHV_TESTBED=DIR\n");
      std::abort();
    }
    return new Testbed(dir);
  }();
  return *bed;
}

std::string Testbed::EnvValue(std::string_view key) const {
  std::ifstream in(dir_ + "/env");
  std::string line, prefix = std::string(key) + "=", value;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) value = line.substr(prefix.size());  // the last one wins
  }
  if (value == "''") value.clear();
  return value;
}

std::string Testbed::KubeconfigPath(std::string_view cluster) const {
  return dir_ + "/" + std::string(cluster) + ".kubeconfig";
}

kube::RestConfig Testbed::Config(std::string_view cluster) const {
  auto cfg = kube::LoadKubeconfigFile(KubeconfigPath(cluster));
  if (!cfg.ok()) {
    ADD_FAILURE() << "test bed kubeconfig: " << cfg.status().ToString();
    return {};
  }
  return *cfg;
}

std::shared_ptr<kube::Client> Testbed::Client(std::string_view cluster) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<kube::Client>, std::less<>> clients;
  std::lock_guard lock(mu);
  if (auto it = clients.find(cluster); it != clients.end()) return it->second;
  auto c = kube::Client::New(Config(cluster));
  if (!c.ok()) {
    ADD_FAILURE() << "client for " << cluster << ": " << c.status().ToString();
    return nullptr;
  }
  clients.emplace(std::string(cluster), *c);
  return *c;
}

ScopedNamespace::ScopedNamespace(std::shared_ptr<kube::Client> client, std::string_view prefix)
    : client_(std::move(client)), name_(UniqueName(prefix)) {
  kube::Object ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name_}}}};
  auto r = client_->Create(kube::resources::kNamespaces, "", ns);
  if (!r.ok()) ADD_FAILURE() << "creating namespace " << name_ << ": " << r.status().ToString();
}

ScopedNamespace::~ScopedNamespace() {
  client_->Delete(kube::resources::kNamespaces, "", name_).IgnoreError();
}

std::string UniqueName(std::string_view prefix) {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::lock_guard lock(mu);
  std::string s(prefix);
  s += '-';
  for (int i = 0; i < 6; ++i) s += kAlphabet[rng() % 36];
  return s;
}

bool Eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
                std::chrono::milliseconds poll) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(poll);
  }
}

int RunCommand(const std::string& command, std::string* output) {
  std::string cmd = command + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) {
    if (output != nullptr) output->append(buf.data(), n);
  }
  int rc = pclose(p);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int ApplyCrds(const std::string& kubeconfig, std::string* output) {
  const std::string kubectl = "kubectl --kubeconfig '" + kubeconfig + "' ";
  const std::string crds = SourcePath("config/crd/bases");
  if (int rc = RunCommand(kubectl + "apply --server-side --force-conflicts -f " + crds, output)) {
    return rc;
  }
  return RunCommand(kubectl + "wait --for condition=established --timeout=60s -f " + crds, output);
}

std::string BuildPath(std::string_view relative) {
  std::string base = Env("CAPHV_BUILD_DIR");
  if (base.empty()) base = "build";
  return base + "/" + std::string(relative);
}

std::string SourcePath(std::string_view relative) {
  std::string base = Env("CAPHV_SOURCE_DIR");
  if (base.empty()) {
    // <src>/test/support/testbed.cc, as the compiler was given it (relative
    // to the build directory under ccache's base_dir).
    base = std::filesystem::path(__FILE__)
               .lexically_normal()
               .parent_path()
               .parent_path()
               .parent_path()
               .string();
    if (base.empty()) base = ".";
  }
  return base + "/" + std::string(relative);
}

std::string ThirdPartyDir() {
  std::string dir = Env("CAPHV_THIRD_PARTY");
  return dir.empty() ? SourcePath("../shared/third_party") : dir;
}

std::string GoProviderArchive(std::string_view version) {
  return ThirdPartyDir() + "/cluster-api-provider-harvester-" + std::string(version) + ".tar.gz";
}

std::optional<std::string> ReadGoProviderFile(std::string_view version, std::string_view member) {
  const std::string path =
      "cluster-api-provider-harvester-" + std::string(version) + "/" + std::string(member);
  std::string out;
  if (RunCommand("tar -xzOf '" + GoProviderArchive(version) + "' '" + path + "' 2>/dev/null",
                 &out) != 0) {
    return std::nullopt;
  }
  return out;
}

std::string UnusedPoolPrefix(kube::Client& harvester, const std::string& first_two_octets) {
  const kube::GroupVersionResource pools{"loadbalancer.harvesterhci.io", "v1beta1", "ippools",
                                         false};
  std::set<std::string> used;
  if (auto list = harvester.List(pools, ""); list.ok()) {
    for (const auto& p : list->items) {
      for (const auto& r : p["spec"].value("ranges", kube::Object::array())) {
        const std::string subnet = r.value("subnet", "");
        used.insert(subnet.substr(0, subnet.rfind('.') + 1));
      }
    }
  }
  static std::mt19937 rng{std::random_device{}()};
  std::string prefix;
  do {
    prefix = first_two_octets + "." + std::to_string(1 + rng() % 250) + ".";
  } while (used.count(prefix) != 0);
  return prefix;
}

int FreePort() {
  // The kernel may hand the same ephemeral port out twice in a row once it is closed; a
  // fixture asking for several ports at once must get distinct ones.
  static std::mutex mu;
  static std::set<int> given;
  std::lock_guard<std::mutex> lock(mu);
  for (int attempt = 0; attempt < 100; ++attempt) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    int port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
    ::close(fd);
    if (port == 0) return 0;
    if (given.insert(port).second) return port;
  }
  return 0;
}

}  // namespace caphv::testing
