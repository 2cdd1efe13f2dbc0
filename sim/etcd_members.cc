// File: sim/etcd_members.cc

#include "sim/etcd_members.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kube/self_signed.h"
#include "kube/transport.h"

namespace caphv::sim {

using kube::Object;
using kube::Status;
using kube::StatusCode;

namespace {

namespace fs = std::filesystem;

// A free loopback port (bound and released: the bed's own way to pick one).
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = 0;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
  auto* sa = reinterpret_cast<sockaddr*>(&a);
  if (::bind(fd, sa, sizeof(a)) == 0 && ::getsockname(fd, sa, &len) == 0) port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

std::string Loopback(const char* scheme, int port) {
  return std::string(scheme) + "://127.0.0.1:" + std::to_string(port);
}

// Directory names from cluster keys ("<ns>/<id>").
std::string Safe(std::string s) {
  for (char& c : s) {
    if (c == '/') c = '_';
  }
  return s;
}

Status WriteFile(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << data;
  if (!f) return Status(StatusCode::kInternal, "cannot write " + path);
  return {};
}

std::string IdOf(const Object& m) {
  const Object id = m.value("ID", Object(""));
  return id.is_string() ? id.get<std::string>() : id.dump();
}

}  // namespace

std::vector<EtcdMemberStatus> ParseEtcdMembers(const Object& response) {
  std::vector<EtcdMemberStatus> out;
  for (const auto& m : response.value("members", Object::array())) {
    out.push_back(
        {.id = IdOf(m), .name = m.value("name", ""), .learner = m.value("isLearner", false)});
  }
  return out;
}

std::string InitialCluster(const Object& response, const std::string& self_peer,
                           const std::string& self_name) {
  std::string out;
  for (const auto& m : response.value("members", Object::array())) {
    const Object urls = m.value("peerURLs", Object::array());
    if (urls.empty()) continue;
    const std::string peer = urls.front().get<std::string>();
    std::string name = m.value("name", "");
    if (peer == self_peer) name = self_name;
    if (name.empty()) continue;  // added, never started: not part of the cluster yet
    if (!out.empty()) out += ",";
    out += name + "=" + peer;
  }
  return out;
}

EtcdMembers::EtcdMembers(EtcdMembersOptions options) : opt_(std::move(options)) {}

EtcdMembers::~EtcdMembers() {
  std::lock_guard lock(mu_);
  for (auto& [key, c] : clusters_) {
    for (auto& [name, p] : c.members) Stop(p);
  }
}

std::string EtcdMembers::ClusterDir(const std::string& cluster) const {
  return opt_.root + "/" + Safe(cluster);
}

std::string EtcdMembers::MemberDir(const std::string& cluster, const std::string& name) const {
  return ClusterDir(cluster) + "/" + name;
}

bool EtcdMembers::Alive(Proc& p) {
  if (p.pid <= 0) return false;
  int st = 0;
  if (::waitpid(p.pid, &st, WNOHANG) == 0) return true;
  p.pid = 0;  // exited (and reaped)
  return false;
}

void EtcdMembers::Stop(Proc& p) {
  if (p.pid <= 0) return;
  ::kill(p.pid, SIGKILL);
  int st = 0;
  ::waitpid(p.pid, &st, 0);
  p.pid = 0;
}

int EtcdMembers::LiveHttpPort(Cluster& c, const std::string& except) {
  for (auto& [name, p] : c.members) {
    if (name != except && Alive(p)) return p.http_port;
  }
  return 0;
}

kube::StatusOr<Object> EtcdMembers::Call(int http_port, const std::string& path,
                                         const Object& body) {
  kube::RestConfig rc;
  rc.server = Loopback("http", http_port);
  rc.connect_timeout = std::chrono::seconds(2);
  kube::Transport t(rc);
  auto r = t.Do("POST", path, body.dump(), "application/json", std::chrono::seconds(10));
  if (!r.ok()) return r.status();
  Object out = Object::parse(r->body, nullptr, false);
  if (r->status != 200) {
    const std::string msg =
        out.is_object() ? out.value("message", out.value("error", r->body)) : r->body;
    const StatusCode code = r->status >= 500 && r->status != 501 ? StatusCode::kUnavailable
                                                                 : StatusCode::kInvalidArgument;
    return Status(code, "etcd " + path + ": " + msg);
  }
  if (out.is_discarded()) return Status(StatusCode::kInternal, "etcd " + path + ": not JSON");
  return out;
}

Status EtcdMembers::Start(const std::string& cluster, const std::string& name, Proc& p,
                          const std::string& initial_cluster, bool existing) {
  const std::string dir = MemberDir(cluster, name);
  std::error_code ec;
  fs::create_directories(dir, ec);
  const std::string ca = ClusterDir(cluster) + "/server-ca.crt";
  const std::string crt = dir + "/serving.crt", key = dir + "/serving.key";
  if (!fs::exists(crt)) {
    // Signed by the cluster's CA: etcd's own gateway (the http listener)
    // dials the TLS listener with this certificate as its client's.
    kube::PemCertificate issuer;
    {
      std::ifstream c(ca), k(ClusterDir(cluster) + "/server-ca.key");
      issuer.cert_pem.assign(std::istreambuf_iterator<char>(c), {});
      issuer.key_pem.assign(std::istreambuf_iterator<char>(k), {});
    }
    auto pem = kube::GenerateSignedCertificate({name, "127.0.0.1", "localhost"}, issuer);
    if (!pem.ok()) return pem.status();
    CAPHV_RETURN_IF_ERROR(WriteFile(crt, pem->cert_pem));
    CAPHV_RETURN_IF_ERROR(WriteFile(key, pem->key_pem));
  }
  if (p.client_port == 0) {
    p.client_port = FreePort();
    p.http_port = FreePort();
    p.peer_port = FreePort();
  }
  const std::string peer = Loopback("http", p.peer_port);
  std::vector<std::string> args = {
      opt_.binary,
      "--name=" + name,
      "--data-dir=" + dir + "/data",
      "--listen-client-urls=" + Loopback("https", p.client_port) + "," +
          Loopback("http", p.http_port),
      "--advertise-client-urls=" + Loopback("https", p.client_port),
      "--listen-peer-urls=" + peer,
      "--initial-advertise-peer-urls=" + peer,
      "--initial-cluster=" + (initial_cluster.empty() ? name + "=" + peer : initial_cluster),
      std::string("--initial-cluster-state=") + (existing ? "existing" : "new"),
      "--initial-cluster-token=" + Safe(cluster),
      "--client-cert-auth=true",
      "--trusted-ca-file=" + ca,
      "--cert-file=" + crt,
      "--key-file=" + key,
      "--unsafe-no-fsync=true",
      "--snapshot-count=10000",
      "--heartbeat-interval=100",
      "--election-timeout=1000",
      "--logger=zap",
      "--log-level=warn",
  };
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log = dir + "/etcd.log";
  const pid_t pid = ::fork();
  if (pid < 0) return Status(StatusCode::kInternal, "fork etcd: " + std::string(strerror(errno)));
  if (pid == 0) {
    // The child: only async-signal-safe calls until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
    }
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  p.pid = pid;
  return {};
}

kube::StatusOr<EtcdEndpoint> EtcdMembers::Ensure(const std::string& cluster,
                                                 const std::string& name, const std::string& ca_pem,
                                                 const std::string& ca_key_pem) {
  if (!enabled()) return Status(StatusCode::kInvalidArgument, "no etcd binary");
  std::lock_guard lock(mu_);
  const std::string ca = ClusterDir(cluster) + "/server-ca.crt";
  std::error_code ec;
  if (!fs::exists(ca)) {
    if (ca_pem.empty() || ca_key_pem.empty()) {
      return Status(StatusCode::kUnavailable,
                    "no etcd CA known for " + cluster + " (the first server carries it)");
    }
    fs::create_directories(ClusterDir(cluster), ec);
    CAPHV_RETURN_IF_ERROR(WriteFile(ClusterDir(cluster) + "/server-ca.key", ca_key_pem));
    CAPHV_RETURN_IF_ERROR(WriteFile(ca, ca_pem));
  }
  Cluster& c = clusters_[cluster];
  if (c.removed.contains(name)) {
    return Status(StatusCode::kConflict, "etcd member " + name + " was removed");
  }
  Proc& p = c.members[name];
  if (Alive(p)) {
    if (!p.voter) {
      const int port = LiveHttpPort(c, name);
      if (port == 0) return Status(StatusCode::kUnavailable, "learner " + name + " alone");
      if (p.id.empty()) {
        auto list = Call(port, "/v3/cluster/member/list", Object::object());
        if (!list.ok()) return list.status();
        for (const auto& m : ParseEtcdMembers(*list)) {
          if (m.name == name) p.id = m.id;
        }
        if (p.id.empty()) return Status(StatusCode::kUnavailable, "learner " + name + " not up");
      }
      auto promoted = Call(port, "/v3/cluster/member/promote", {{"ID", p.id}});
      if (!promoted.ok()) {
        return Status(StatusCode::kUnavailable,
                      "learner " + name + " not promoted yet: " + promoted.status().message());
      }
      p.voter = true;
    }
    return EtcdEndpoint{p.client_port, p.http_port, p.voter};
  }
  const bool has_data = fs::exists(MemberDir(cluster, name) + "/data/member");
  const int port = LiveHttpPort(c, name);
  if (port == 0) {
    bool others = false;
    for (const auto& [n, m] : c.members) others = others || (n != name && m.client_port != 0);
    if (has_data) {
      CAPHV_RETURN_IF_ERROR(Start(cluster, name, p, "", true));
      p.voter = true;  // a restarted member keeps its role
      return EtcdEndpoint{p.client_port, p.http_port, p.voter};
    }
    if (others) return Status(StatusCode::kUnavailable, "no live etcd member of " + cluster);
    CAPHV_RETURN_IF_ERROR(Start(cluster, name, p, "", false));
    p.voter = true;
    return EtcdEndpoint{p.client_port, p.http_port, p.voter};
  }
  if (has_data) {
    CAPHV_RETURN_IF_ERROR(Start(cluster, name, p, "", true));
    return EtcdEndpoint{p.client_port, p.http_port, p.voter};
  }
  // Join: added as a learner, started with the membership it was given.
  if (p.client_port == 0) {
    p.client_port = FreePort();
    p.http_port = FreePort();
    p.peer_port = FreePort();
  }
  const std::string peer = Loopback("http", p.peer_port);
  auto list = Call(port, "/v3/cluster/member/list", Object::object());
  if (!list.ok()) return list.status();
  Object membership = *list;
  bool added = false;
  for (const auto& m : membership.value("members", Object::array())) {
    const Object urls = m.value("peerURLs", Object::array());
    if (!urls.empty() && urls.front() == peer) added = true;
  }
  if (!added) {
    auto add = Call(port, "/v3/cluster/member/add",
                    {{"peerURLs", Object::array({peer})}, {"isLearner", true}});
    if (!add.ok()) return add.status();
    membership = *add;
  }
  p.voter = false;
  p.id.clear();
  CAPHV_RETURN_IF_ERROR(Start(cluster, name, p, InitialCluster(membership, peer, name), true));
  return EtcdEndpoint{p.client_port, p.http_port, p.voter};
}

Status EtcdMembers::Remove(const std::string& cluster, const std::string& name) {
  std::lock_guard lock(mu_);
  Cluster& c = clusters_[cluster];
  int port = LiveHttpPort(c, name);
  if (port == 0) {
    auto self = c.members.find(name);
    if (self != c.members.end() && Alive(self->second)) port = self->second.http_port;
  }
  if (port == 0) return Status(StatusCode::kUnavailable, "no live etcd member of " + cluster);
  auto list = Call(port, "/v3/cluster/member/list", Object::object());
  if (!list.ok()) return list.status();
  const auto members = ParseEtcdMembers(*list);
  const EtcdMemberStatus* target = nullptr;
  int voters = 0;
  for (const auto& m : members) {
    if (!m.learner) ++voters;
    if (m.name == name) target = &m;
  }
  if (target != nullptr) {
    if (!target->learner && voters <= 1) {
      return Status(StatusCode::kConflict,
                    "etcd member " + name + " is the last voting member; not removed");
    }
    auto removed = Call(port, "/v3/cluster/member/remove", {{"ID", target->id}});
    if (!removed.ok()) return removed.status();
  }
  c.removed.insert(name);
  if (auto it = c.members.find(name); it != c.members.end()) {
    Stop(it->second);
    c.members.erase(it);
  }
  std::error_code ec;
  fs::remove_all(MemberDir(cluster, name), ec);
  return {};
}

void EtcdMembers::Kill(const std::string& cluster, const std::string& name) {
  std::lock_guard lock(mu_);
  auto c = clusters_.find(cluster);
  if (c == clusters_.end()) return;
  if (auto it = c->second.members.find(name); it != c->second.members.end()) Stop(it->second);
}

void EtcdMembers::Discard(const std::string& cluster, const std::string& name) {
  std::lock_guard lock(mu_);
  auto c = clusters_.find(cluster);
  if (c != clusters_.end()) {
    if (auto it = c->second.members.find(name); it != c->second.members.end()) {
      Stop(it->second);
      c->second.members.erase(it);
    }
  }
  std::error_code ec;
  fs::remove_all(MemberDir(cluster, name), ec);
  // The cluster's last VM gone: its CA goes too (a new cluster of the same
  // name brings its own).
  bool empty = true;
  for (const auto& e : fs::directory_iterator(ClusterDir(cluster), ec))
    empty = empty && !e.is_directory();
  if (!ec && empty && (c == clusters_.end() || c->second.members.empty())) {
    fs::remove_all(ClusterDir(cluster), ec);
    if (c != clusters_.end()) clusters_.erase(c);
  }
}

kube::StatusOr<std::vector<EtcdMemberStatus>> EtcdMembers::List(const std::string& cluster) {
  std::lock_guard lock(mu_);
  const int port = LiveHttpPort(clusters_[cluster], "");
  if (port == 0) return Status(StatusCode::kUnavailable, "no live etcd member of " + cluster);
  auto list = Call(port, "/v3/cluster/member/list", Object::object());
  if (!list.ok()) return list.status();
  return ParseEtcdMembers(*list);
}

}  // namespace caphv::sim
