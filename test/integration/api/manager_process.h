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

#include "support/process.h"
#include "support/testbed.h"

extern char** environ;

namespace caphv::testing {

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

}  // namespace caphv::testing
