// File: test/integration/api/manager_process.h
//
// Helpers of the API integration tests: a caphv-manager child process (stdout
// and stderr to a log file), free loopback ports, a test CA with a serving
// certificate for 127.0.0.1, and plain HTTP GETs.
//
// Thread safety: test-thread only.

#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/testbed.h"

extern char** environ;

namespace caphv::testing {

// A port that was free a moment ago on 127.0.0.1.
inline int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

inline std::string ReadWholeFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes ca.crt, tls.crt and tls.key (a certificate for IP 127.0.0.1 signed by
// ca.crt) into `dir`. Returns false (with the openssl output) on failure.
inline bool MakeServingCerts(const std::filesystem::path& dir, std::string* output) {
  std::filesystem::create_directories(dir);
  const std::string d = dir.string();
  const std::string cmd =
      "( cd '" + d +
      "' && openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=caphv-test-ca "
      "-keyout ca.key -out ca.crt && "
      "openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout tls.key -out tls.csr && "
      "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\nextendedKeyUsage=serverAuth\\n' > "
      "ext.cnf && "
      "openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 "
      "-extfile ext.cnf -out tls.crt )";
  return RunCommand(cmd, output) == 0;
}

// GET `url` with curl: returns the HTTP status (0 when unreachable) and body.
inline int HttpGet(const std::string& url, std::string* body) {
  std::string out;
  int rc = RunCommand("curl -s -m 5 -w '\\n%{http_code}' '" + url + "'", &out);
  if (rc != 0 && rc != 22) return 0;
  auto nl = out.rfind('\n');
  if (nl == std::string::npos) return 0;
  if (body != nullptr) *body = out.substr(0, nl);
  return std::atoi(out.c_str() + nl + 1);
}

// A caphv-manager (or any binary) child process.
class ChildProcess {
 public:
  ChildProcess(std::vector<std::string> args, std::filesystem::path log_path)
      : log_path_(std::move(log_path)) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) pid_ = -1;
  }
  ~ChildProcess() { Kill(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !exit_code_; }

  void Signal(int sig) const {
    if (running()) ::kill(pid_, sig);
  }

  // Waits up to `timeout` for the process to exit; its exit code (128+signal
  // when killed), or nullopt if it still runs.
  std::optional<int> Wait(std::chrono::milliseconds timeout) {
    if (exit_code_ || pid_ <= 0) return exit_code_;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    do {
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return exit_code_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < deadline);
    return std::nullopt;
  }

  void Kill() {
    if (running()) {
      ::kill(pid_, SIGKILL);
      Wait(std::chrono::seconds(5));
    }
  }

  std::string Log() const { return ReadWholeFile(log_path_); }
  const std::filesystem::path& log_path() const { return log_path_; }

 private:
  std::filesystem::path log_path_;
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

}  // namespace caphv::testing
